//! seckill: flash-sale inventory as native Redis commands.
//!
//! Layout: `sale_item` holds the sale rules and knows nothing of Redis;
//! `commands` parses, replies, replicates and notifies; `persistence` is the
//! module data type and its callbacks; `item_key` reaches an item at a key;
//! `args` reads a command's arguments in place.

/// A Redis module API function, or `None` if this server lacks it. The
/// pointers are written once, by RedisModule_Init when the module loads.
macro_rules! redis_api {
    ($name:ident) => {
        // SAFETY: written before any command runs, never written after.
        unsafe { redis_module::raw::$name }
    };
}

#[cfg(not(test))]
mod allocator;
mod args;
mod call;
mod cluster;
mod commands;
pub mod hash_slot;
mod hold_registry;
mod item_key;
mod order_stream;
mod persistence;
pub mod sale_item;
mod sweeper;
mod write;

use persistence::SALE_ITEM_TYPE;
use redis_module::{raw, redis_module, Context, RedisString, Status};
use std::ffi::CStr;
use std::os::raw::c_int;

// Unit tests run without Redis, whose allocator is only there inside the
// server.
#[cfg(not(test))]
macro_rules! allocator {
    () => {
        crate::allocator::ModuleAlloc
    };
}
#[cfg(test)]
macro_rules! allocator {
    () => {
        std::alloc::System
    };
}

/// The C entry point Redis calls for one command: hands the handler the
/// arguments in place and sends its reply.
macro_rules! entry_point {
    ($handler:path) => {{
        extern "C" fn call(
            ctx: *mut raw::RedisModuleCtx,
            argv: *mut *mut raw::RedisModuleString,
            argc: c_int,
        ) -> c_int {
            let context = Context::new(ctx);
            // SAFETY: Redis passes `argc` strings that live for this call.
            let args = unsafe { args::from_argv(argv, argc) };
            context.reply($handler(&context, args)) as c_int
        }
        call as extern "C" fn(_, _, _) -> c_int
    }};
}

type EntryPoint =
    extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// Every command: name, entry point, flags. CONFIRM, REFUND and RELEASE
/// carry no `deny-oom`: they settle a sale already made (a payment, a
/// cancellation) and must work at `maxmemory`, or a paid hold would lapse
/// and be sold again. Each takes its item key as the
/// first argument (first key 1, last key 1, step 1), so cluster clients route
/// it and ACL key patterns apply with nothing else declared.
fn command_table() -> [(&'static CStr, EntryPoint, &'static CStr); 13] {
    [
        // SECKILL.INIT key stock [LIMIT n] [START ms] [END ms] [EX s|PX ms|EXAT s|PXAT ms] [REPLACE]
        (
            c"seckill.init",
            entry_point!(commands::init),
            c"write deny-oom fast",
        ),
        // SECKILL.ADD key qty
        (
            c"seckill.add",
            entry_point!(commands::add),
            c"write deny-oom fast",
        ),
        // SECKILL.DEDUCT key user qty [ID request_id] [HOLD s | HOLDUNTIL unix-ms]
        (
            c"seckill.deduct",
            entry_point!(commands::deduct),
            c"write deny-oom fast",
        ),
        // SECKILL.CONFIRM key request_id
        (
            c"seckill.confirm",
            entry_point!(commands::confirm),
            c"write fast",
        ),
        // SECKILL.RELEASE key request_id [request_id ...]
        (
            c"seckill.release",
            entry_point!(commands::release),
            c"write",
        ),
        // SECKILL.REFUND key request_id
        (
            c"seckill.refund",
            entry_point!(commands::refund),
            c"write fast",
        ),
        // SECKILL.WINDOW key start end
        (
            c"seckill.window",
            entry_point!(commands::window),
            c"write deny-oom fast",
        ),
        // SECKILL.STREAM key [stream_key [MAXLEN n]]
        (
            c"seckill.stream",
            entry_point!(commands::stream),
            c"write deny-oom fast",
        ),
        // SECKILL.GET key
        (
            c"seckill.get",
            entry_point!(commands::get),
            c"readonly fast",
        ),
        // SECKILL.BOUGHT key user
        (
            c"seckill.bought",
            entry_point!(commands::bought),
            c"readonly fast",
        ),
        // SECKILL.HOLDS key [user]
        (c"seckill.holds", entry_point!(commands::holds), c"readonly"),
        // SECKILL.INFO key
        (
            c"seckill.info",
            entry_point!(commands::info),
            c"readonly fast",
        ),
        // SECKILL.LOADCHUNK key payload (written by AOF rewrites)
        (
            c"seckill.loadchunk",
            entry_point!(commands::load_chunk),
            c"write deny-oom",
        ),
    ]
}

/// Puts a command in the ACL categories its flags imply (`@write` or
/// `@read`, and `@fast`), where the server has categories for module
/// commands (Redis 7.2 and later, Valkey). On 7.0 the API is missing and
/// module commands belong to no category: ACL rules must name them.
fn set_acl_categories(ctx: &Context, name: &CStr, flags: &CStr) {
    let (Some(get_command), Some(set_categories)) = (
        redis_api!(RedisModule_GetCommand),
        redis_api!(RedisModule_SetCommandACLCategories),
    ) else {
        return;
    };
    let flags = flags.to_bytes();
    let has = |flag: &[u8]| flags.split(|b| *b == b' ').any(|word| word == flag);
    let categories = match (has(b"write"), has(b"fast")) {
        (true, true) => c"write fast",
        (true, false) => c"write",
        (false, true) => c"read fast",
        (false, false) => c"read",
    };
    // SAFETY: the command was just created under this static name.
    unsafe {
        let command = get_command(ctx.ctx, name.as_ptr());
        if command.is_null()
            || set_categories(command, categories.as_ptr()) != raw::REDISMODULE_OK as c_int
        {
            ctx.log_warning(&format!("seckill: cannot set ACL categories of {name:?}"));
        }
    }
}

/// True on Valkey, which names itself in `INFO server`.
fn is_valkey(ctx: &Context) -> bool {
    call::string(ctx, "INFO", &[b"server"]).is_some_and(|info| info.contains("server_name:valkey"))
}

/// Keyspace and server events that move items between names and
/// databases, so that the sweep's registry follows them.
///
/// Not the keyspace events on Valkey: on Valkey 8.1, a module listening to
/// generic keyspace events makes `MOVE` and `COPY ... DB` replicate into
/// the target database instead of the source (the notification's database
/// leaks into the command's propagation), whatever the listener does, and
/// replicas diverge. There the sweep cannot follow a renamed or moved item:
/// its lapsed holds are released by its next write instead.
fn subscribe_to_events(ctx: &Context) {
    let keyspace = redis_api!(RedisModule_SubscribeToKeyspaceEvents).filter(|_| !is_valkey(ctx));
    if let Some(subscribe) = keyspace {
        // SAFETY: a callback with the RedisModuleNotificationFunc signature.
        let status = unsafe {
            subscribe(
                ctx.ctx,
                raw::REDISMODULE_NOTIFY_GENERIC as c_int,
                Some(sweeper::on_keyspace_event),
            )
        };
        if status != raw::REDISMODULE_OK as c_int {
            ctx.log_warning("seckill: cannot follow renamed or moved items");
        }
    }
    if let Some(subscribe) = redis_api!(RedisModule_SubscribeToServerEvent) {
        let swap_db = raw::RedisModuleEvent {
            id: raw::REDISMODULE_EVENT_SWAPDB,
            dataver: 1,
        };
        let loading = raw::RedisModuleEvent {
            id: raw::REDISMODULE_EVENT_LOADING,
            dataver: 1,
        };
        // SAFETY: callbacks with the RedisModuleEventCallback signature.
        unsafe {
            subscribe(ctx.ctx, swap_db, Some(sweeper::on_swap_db));
            subscribe(ctx.ctx, loading, Some(commands::on_loading_event));
        }
    }
}

/// An evicted item loses its ledger: its limits and request ids reset when
/// the application creates it again. Says so when the server could evict.
fn warn_if_items_can_be_evicted(ctx: &Context) {
    let Some(policy) = call::field(
        ctx,
        "CONFIG",
        &[b"GET", b"maxmemory-policy"],
        "maxmemory-policy",
    ) else {
        return;
    };
    if policy.starts_with("allkeys-") {
        ctx.log_warning(&format!(
            "seckill: maxmemory-policy is {policy}: at maxmemory sale items can be evicted, \
             and an evicted item loses its buyers and request ids; run noeviction, or a \
             volatile-* policy with items created without a TTL"
        ));
    }
}

fn register_commands(ctx: &Context, _args: &[RedisString]) -> Status {
    let Some(create_command) = redis_api!(RedisModule_CreateCommand) else {
        return Status::Err;
    };
    for (name, entry_point, flags) in command_table() {
        // SAFETY: static NUL-terminated strings and a matching entry point.
        let created = unsafe {
            create_command(
                ctx.ctx,
                name.as_ptr(),
                Some(entry_point),
                flags.as_ptr(),
                1,
                1,
                1,
            )
        };
        if created != raw::REDISMODULE_OK as c_int {
            ctx.log_warning(&format!("seckill: cannot create command {name:?}"));
            return Status::Err;
        }
        set_acl_categories(ctx, name, flags);
    }
    // Loaders report short reads instead of making Redis abort, which is
    // also what lets a replica load a full sync without a temporary file.
    // Items load safely into the temporary database of an async
    // (`repl-diskless-load swapdb`) load: they are owned by their key, and
    // the sweep's registry follows the key they end at.
    // Keys are signalled as modified by the write pipeline alone: closing a
    // key opened for writing (an order stream that refused an entry) must
    // not abort a WATCH when nothing changed.
    if let Some(set_options) = redis_api!(RedisModule_SetModuleOptions) {
        let options = raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS
            | raw::REDISMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD
            | raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED;
        // SAFETY: called from the module's init with its own context.
        unsafe { set_options(ctx.ctx, options as c_int) };
    }
    subscribe_to_events(ctx);
    warn_if_items_can_be_evicted(ctx);
    sweeper::start(ctx);
    Status::Ok
}

redis_module! {
    name: "seckill",
    version: 1,
    allocator: (allocator!(), allocator!()),
    data_types: [SALE_ITEM_TYPE],
    init: register_commands,
}
