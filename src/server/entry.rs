//! The C entry points Redis calls for the module's commands, and what a
//! command tells the server when it only asks where its keys are.

use super::Arg;
use crate::stats::CommandId;
use redis_module::{raw, Context};
use std::os::raw::c_int;

/// A command's C entry point, as Redis calls it.
pub type CommandFn =
    extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// A command's C entry point, and the id its calls are counted under.
#[derive(Clone, Copy)]
pub struct EntryPoint {
    pub id: CommandId,
    pub call: CommandFn,
}

/// The C entry point Redis calls for one command: hands the handler the
/// arguments in place and sends its reply.
macro_rules! entry_point {
    ($handler:path, $id:ident) => {{
        extern "C" fn call(
            ctx: *mut redis_module::raw::RedisModuleCtx,
            argv: *mut *mut redis_module::raw::RedisModuleString,
            argc: std::os::raw::c_int,
        ) -> std::os::raw::c_int {
            $crate::stats::CALLS[$crate::stats::CommandId::$id as usize].bump();
            let context = redis_module::Context::new(ctx);
            // SAFETY: Redis passes `argc` strings that live for this call.
            let args = unsafe { $crate::server::arg::from_argv(argv, argc) };
            $crate::server::entry::send(&context, $handler(&context, args))
        }
        $crate::server::EntryPoint {
            id: $crate::stats::CommandId::$id,
            call,
        }
    }};
    // A command flagged `getkeys-api`: the server may call it only to learn
    // which arguments are keys (ACL checks, cluster routing), with no client
    // to reply to and nothing to count.
    ($handler:path, $id:ident, keys: $keys:path) => {{
        extern "C" fn call(
            ctx: *mut redis_module::raw::RedisModuleCtx,
            argv: *mut *mut redis_module::raw::RedisModuleString,
            argc: std::os::raw::c_int,
        ) -> std::os::raw::c_int {
            let context = redis_module::Context::new(ctx);
            // SAFETY: Redis passes `argc` strings that live for this call.
            let args = unsafe { $crate::server::arg::from_argv(argv, argc) };
            if context.is_keys_position_request() {
                $keys(&context, args);
                return redis_module::raw::REDISMODULE_OK as std::os::raw::c_int;
            }
            $crate::stats::CALLS[$crate::stats::CommandId::$id as usize].bump();
            $crate::server::entry::send(&context, $handler(&context, args))
        }
        $crate::server::EntryPoint {
            id: $crate::stats::CommandId::$id,
            call,
        }
    }};
}
pub(crate) use entry_point;

/// Sends a handler's reply. An integer, the reply of nearly every call on
/// a sale's hot path (a purchase, a sold-out answer), goes to the server
/// at once; anything else through the crate's reply.
pub fn send(context: &Context, result: redis_module::RedisResult) -> c_int {
    // Not dropped on the integer path, which owns nothing: dropping a
    // reply is a call into its drop glue.
    let result = std::mem::ManuallyDrop::new(result);
    if let Ok(redis_module::RedisValue::Integer(figure)) = *result {
        return raw::reply_with_long_long(context.ctx, figure) as c_int;
    }
    context.reply(std::mem::ManuallyDrop::into_inner(result)) as c_int
}

/// Tells a server that asks where the command's keys are (a keys-position
/// request) that `args[position]` is one, with `REDISMODULE_CMD_KEY_*`
/// `flags`. `args` are the command's own, as its entry point passed them;
/// nothing for a position past them, or for the command's name.
pub fn declare_key(ctx: &Context, args: &[Arg], position: usize, flags: u32) {
    let Some(key_at) = redis_api!(RedisModule_KeyAtPosWithFlags) else {
        return;
    };
    let Ok(at) = c_int::try_from(position) else {
        return;
    };
    if position == 0 || position >= args.len() {
        return;
    }
    // SAFETY: the server ignores this outside a keys-position request, and
    // the index is one of the command's arguments.
    unsafe { key_at(ctx.get_raw(), at, flags as c_int) };
}
