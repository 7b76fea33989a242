//! What the server tells of a context and of itself: context flags and
//! whether replication should wait.

use redis_module::{raw, Context};

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

/// True while clients are paused (`CLIENT PAUSE`, `FAILOVER`, a cluster
/// manual failover): nothing may be replicated then.
pub fn avoid_replica_traffic() -> bool {
    // SAFETY: takes no arguments.
    redis_api!(RedisModule_AvoidReplicaTraffic).is_some_and(|f| unsafe { f() } != 0)
}
