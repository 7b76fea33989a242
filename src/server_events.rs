//! The server events the module follows: keys moved between names and
//! databases (for the sweep's registry), loading (for items cut short),
//! and configuration changes (for the eviction warning).

use crate::{call, commands, sweeper};
use redis_module::{raw, Context};
use std::ffi::CStr;
use std::os::raw::c_int;

/// True on Valkey, which names itself in `INFO server`.
pub fn is_valkey(ctx: &Context) -> bool {
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
pub fn subscribe(ctx: &Context) {
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
        let config = raw::RedisModuleEvent {
            id: raw::REDISMODULE_EVENT_CONFIG,
            dataver: 1,
        };
        // SAFETY: callbacks with the RedisModuleEventCallback signature.
        unsafe {
            subscribe(ctx.ctx, swap_db, Some(sweeper::on_swap_db));
            subscribe(ctx.ctx, loading, Some(commands::on_loading_event));
            subscribe(ctx.ctx, config, Some(on_config_change));
        }
    }
}

/// An evicted item loses its ledger: its limits and request ids reset when
/// the application creates it again, and its pending holds vanish with no
/// `expire` event. Says so when the server could evict one: under any
/// `allkeys-*` policy, and under `volatile-*` for items with a TTL.
pub fn warn_if_items_can_be_evicted(ctx: &Context) {
    let Some(policy) = call::field(
        ctx,
        "CONFIG",
        &[b"GET", b"maxmemory-policy"],
        "maxmemory-policy",
    ) else {
        return;
    };
    let which = if policy.starts_with("allkeys-") {
        "sale items"
    } else if policy.starts_with("volatile-") {
        "sale items created with a TTL (EX, PX, EXAT, PXAT)"
    } else {
        return;
    };
    ctx.log_warning(&format!(
        "seckill: maxmemory-policy is {policy}: at maxmemory {which} can be evicted; an \
         evicted item loses its buyers, request ids and pending holds (no expire event is \
         written for them); run noeviction, or a volatile-* policy with items created \
         without a TTL"
    ));
}

/// CONFIG SET, as a server event: warns again when the eviction policy
/// changes to one that can evict items.
extern "C" fn on_config_change(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut std::os::raw::c_void,
) {
    if subevent != raw::REDISMODULE_SUBEVENT_CONFIG_CHANGE || data.is_null() {
        return;
    }
    // SAFETY: Redis passes a RedisModuleConfigChange for this event, with
    // `num_changes` NUL-terminated names that live for the callback.
    let change = unsafe { &*data.cast::<raw::RedisModuleConfigChange>() };
    let mut names = (0..change.num_changes as usize).map(|index| {
        // SAFETY: `index` is below `num_changes` (see above).
        unsafe { CStr::from_ptr(*change.config_names.add(index)) }
    });
    if names.any(|name| name.to_bytes() == b"maxmemory-policy") {
        warn_if_items_can_be_evicted(&Context::new(ctx));
    }
}
