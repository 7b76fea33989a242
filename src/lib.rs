//! seckill: flash-sale inventory as native Redis commands.
//!
//! Layout: `sale_item` holds the sale rules and knows nothing of Redis;
//! `commands` parses, replies, replicates and notifies; `persistence` is the
//! module data type and its callbacks; `item_key` reaches an item at a key.

/// A Redis module API function, or `None` if this server lacks it. The
/// pointers are written once, by RedisModule_Init when the module loads.
macro_rules! redis_api {
    ($name:ident) => {
        // SAFETY: written before any command runs, never written after.
        unsafe { redis_module::raw::$name }
    };
}

mod commands;
mod item_key;
mod persistence;
pub mod sale_item;

use persistence::SALE_ITEM_TYPE;
use redis_module::redis_module;

// Unit tests run without Redis, whose allocator is only there inside the
// server.
#[cfg(not(test))]
macro_rules! allocator {
    () => {
        redis_module::alloc::RedisAlloc
    };
}
#[cfg(test)]
macro_rules! allocator {
    () => {
        std::alloc::System
    };
}

redis_module! {
    name: "seckill",
    version: 1,
    allocator: (allocator!(), allocator!()),
    data_types: [SALE_ITEM_TYPE],
    commands: [
        ["seckill.init", commands::init, "write deny-oom fast", 1, 1, 1, ""],
        ["seckill.add", commands::add, "write deny-oom fast", 1, 1, 1, ""],
        ["seckill.deduct", commands::deduct, "write deny-oom fast", 1, 1, 1, ""],
        ["seckill.refund", commands::refund, "write deny-oom fast", 1, 1, 1, ""],
        ["seckill.get", commands::get, "readonly fast", 1, 1, 1, ""],
        ["seckill.bought", commands::bought, "readonly fast", 1, 1, 1, ""],
        ["seckill.info", commands::info, "readonly fast", 1, 1, 1, ""],
        ["seckill.loadchunk", commands::load_chunk, "write deny-oom", 1, 1, 1, ""],
    ],
}
