//! The server events the module follows: keys moved between names and
//! databases (for the sweep's registry), loading (for items cut short),
//! and configuration changes (for the eviction warning).

use crate::call;
use crate::server::events;
use redis_module::Context;

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
    if events::can_follow_keyspace_events()
        && !is_valkey(ctx)
        && !events::follow_keyspace_events(ctx)
    {
        ctx.log_warning("seckill: cannot follow renamed or moved items");
    }
    events::follow_server_events(ctx);
}

/// Tells the memory estimates which allocator the server runs (`INFO
/// memory`'s `mem_allocator`): jemalloc's size classes, or the C library's.
pub fn learn_allocator(ctx: &Context) {
    let info = call::string(ctx, "INFO", &[b"memory"]).unwrap_or_default();
    if let Some(allocator) = info
        .lines()
        .find_map(|line| line.strip_prefix("mem_allocator:"))
    {
        crate::sale_item::set_allocator_size_classes(allocator.starts_with("jemalloc"));
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
/// changes to one that can evict items. `names` are the parameters set.
pub fn on_config_change(ctx: &Context, names: &[&[u8]]) {
    if names.iter().any(|name| *name == b"maxmemory-policy") {
        warn_if_items_can_be_evicted(ctx);
    }
}
