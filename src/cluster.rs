//! What a module command needs to know of Redis Cluster that the module
//! API does not tell: whether a slot is moving between nodes.

use crate::hash_slot::key_slot;
use redis_module::{raw, Context};

/// True if this node runs in cluster mode and the slot of `key` is being
/// migrated away or imported here (`CLUSTER SETSLOT ... MIGRATING` or
/// `IMPORTING`), as `CLUSTER NODES` shows it on this node's own line.
/// Costs a `CLUSTER NODES` call: only for the rare key found missing.
pub fn slot_is_moving(ctx: &Context, key: &[u8]) -> bool {
    if !in_cluster(ctx) {
        return false;
    }
    let Some(nodes) = crate::call::string(ctx, "CLUSTER", &[b"NODES"]) else {
        return false;
    };
    let slot = key_slot(key).to_string();
    let migrating = format!("[{slot}->-");
    let importing = format!("[{slot}-<-");
    nodes
        .lines()
        .filter(|line| {
            line.split(' ')
                .nth(2)
                .is_some_and(|flags| flags.contains("myself"))
        })
        .any(|line| line.contains(&migrating) || line.contains(&importing))
}

/// True if this server runs in cluster mode.
pub fn in_cluster(ctx: &Context) -> bool {
    crate::server::context::flags(ctx)
        .is_some_and(|flags| flags & raw::REDISMODULE_CTX_FLAGS_CLUSTER != 0)
}
