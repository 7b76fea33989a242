//! The cheapest a module command can be: `FLOOR.TOUCH key` opens the key
//! for reading, closes it and replies -1 if it exists, -3 if not: the
//! replies of a sold-out SECKILL.DEDUCT and of one on a missing item, so
//! that both pay the same for writing them. `make bench` measures
//! SECKILL.DEDUCT's sold-out path, which does that and reads the item's
//! stock, against it.
//!
//! Registered on the C API directly, with a handler that reads the
//! argument vector in place, as seckill's commands do: the crate's
//! `commands:` handlers copy the arguments into a `Vec` first, which would
//! make the floor dearer than the command measured against it.

use redis_module::{raw, redis_module, Context, RedisString, Status};
use std::os::raw::c_int;

extern "C" fn touch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    if argc != 2 {
        // SAFETY: Redis calls the handler with its live context.
        return unsafe { raw::RedisModule_WrongArity.map_or(0, |wrong| wrong(ctx)) };
    }
    // SAFETY: `argv` holds `argc` (2) strings Redis keeps alive for the call.
    let name = unsafe { *argv.add(1) };
    let key = raw::open_key(ctx, name, raw::KeyMode::READ);
    // SAFETY: a key opened above, in this context.
    let exists = unsafe {
        let kind = raw::RedisModule_KeyType.map_or(0, |key_type| key_type(key));
        raw::RedisModule_CloseKey.inspect(|close| close(key));
        kind != raw::REDISMODULE_KEYTYPE_EMPTY as c_int
    };
    raw::reply_with_long_long(ctx, if exists { -1 } else { -3 });
    raw::REDISMODULE_OK as c_int
}

fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    // SAFETY: the API table is filled in before `init` runs.
    let Some(create) = (unsafe { raw::RedisModule_CreateCommand }) else {
        return Status::Err;
    };
    // SAFETY: a static name, flags and a handler of the right type.
    let created = unsafe {
        create(
            ctx.ctx,
            c"floor.touch".as_ptr(),
            Some(touch),
            c"readonly fast".as_ptr(),
            1,
            1,
            1,
        )
    };
    if created == raw::REDISMODULE_OK as c_int {
        Status::Ok
    } else {
        Status::Err
    }
}

redis_module! {
    name: "floor",
    version: 1,
    allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
    data_types: [],
    init: init,
    commands: [],
}
