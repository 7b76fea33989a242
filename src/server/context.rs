//! What the server tells of a context and of itself: context flags, the
//! clock, the selected database.

use super::{Arg, OwnedString};
use redis_module::{raw, Context};
use std::os::raw::c_int;

/// The `REDISMODULE_CTX_FLAGS_*` of a context, `None` if the server cannot
/// tell them.
///
/// # Safety
/// `ctx` must be a live context of the server (NULL is allowed).
pub(super) unsafe fn raw_flags(ctx: *mut raw::RedisModuleCtx) -> Option<u32> {
    let flags = redis_api!(RedisModule_GetContextFlags)?;
    // SAFETY: as the caller promises.
    Some(unsafe { flags(ctx) } as u32)
}

/// The `REDISMODULE_CTX_FLAGS_*` of `ctx`: the server's role (master,
/// replica), whether it loads, runs a cluster, replays its master's stream.
/// `None` if the server cannot tell them.
pub fn flags(ctx: &Context) -> Option<u32> {
    // SAFETY: the context is valid for the duration of the call.
    unsafe { raw_flags(ctx.get_raw()) }
}

/// Now, on the server's clock, in Unix milliseconds.
pub fn now_ms() -> i64 {
    // SAFETY: RedisModule_Milliseconds takes no arguments.
    redis_api!(RedisModule_Milliseconds).map_or(0, |f| unsafe { f() })
}

/// True while clients are paused (`CLIENT PAUSE`, `FAILOVER`, a cluster
/// manual failover): nothing may be replicated then.
pub fn avoid_replica_traffic() -> bool {
    // SAFETY: takes no arguments.
    redis_api!(RedisModule_AvoidReplicaTraffic).is_some_and(|f| unsafe { f() } != 0)
}

/// The database the context has selected.
pub fn selected_db(ctx: &Context) -> c_int {
    // SAFETY: the context is valid for the duration of the call.
    redis_api!(RedisModule_GetSelectedDb).map_or(0, |f| unsafe { f(ctx.get_raw()) })
}

/// Selects database `db` in `ctx`; false if the server refused.
pub fn select_db(ctx: &Context, db: c_int) -> bool {
    redis_api!(RedisModule_SelectDb).is_some_and(|select_db| {
        // SAFETY: the context is valid for the call; the server checks `db`.
        unsafe { select_db(ctx.get_raw(), db) == raw::REDISMODULE_OK as c_int }
    })
}

/// Runs `visit` on the key `key` of database `db`, selected in `ctx`: for
/// contexts that outlive any one command (timers, server events), which
/// reach keys by a name they kept.
pub fn in_db(ctx: &Context, db: c_int, key: &[u8], visit: impl FnOnce(&Arg)) {
    let has_all = redis_api!(RedisModule_SelectDb).is_some()
        && redis_api!(RedisModule_CreateString).is_some()
        && redis_api!(RedisModule_FreeString).is_some();
    if !has_all {
        return;
    }
    // A timer or event context may select any database.
    select_db(ctx, db);
    if let Some(name) = OwnedString::new(ctx, key) {
        visit(name.as_arg());
    }
}
