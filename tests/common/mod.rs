//! Helpers shared by the integration tests: the server harness itself lives
//! in the `seckill-harness` crate, which the benchmark uses too.

#![allow(dead_code)]

pub use seckill_harness::*;

use redis::{Connection, Value};

/// SECKILL.INFO as (field, value) pairs, in reply order.
pub fn info(con: &mut Connection, key: &str) -> Vec<(String, i64)> {
    let value: Value = ok(con, &["SECKILL.INFO", key]);
    let items = match value {
        Value::Array(items) => items,
        Value::Map(pairs) => pairs.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        Value::Nil => return Vec::new(),
        other => panic!("unexpected INFO reply {other:?}"),
    };
    // Integer fields only: the order stream's name is left out.
    items
        .chunks(2)
        .filter_map(|pair| {
            let field: String = redis::from_redis_value(pair[0].clone()).ok()?;
            match pair[1] {
                Value::Int(value) => Some((field, value)),
                _ => None,
            }
        })
        .collect()
}

pub fn info_field(con: &mut Connection, key: &str, field: &str) -> i64 {
    info(con, key)
        .into_iter()
        .find(|(name, _)| name == field)
        .map(|(_, value)| value)
        .unwrap_or_else(|| panic!("INFO {key} has no field {field}"))
}

/// Everything observable about an item: its INFO and Redis's digest of it.
pub fn snapshot(con: &mut Connection, key: &str) -> (Vec<(String, i64)>, String) {
    let digests: Vec<String> = ok(con, &["DEBUG", "DIGEST-VALUE", key]);
    (info(con, key), digests.concat())
}

/// Builds an item with every kind of state: buyers with and without request
/// ids, a refund, a restock, a request id that was replayed. `buyers` above
/// 1024 makes the item span several chunks on disk.
pub fn fill_mixed(con: &mut Connection, key: &str, buyers: usize) {
    let stock = (buyers * 2).to_string();
    ok::<i64>(con, &["SECKILL.INIT", key, &stock, "LIMIT", "3"]);
    for n in 0..buyers {
        let user = format!("user:{n}");
        let id = format!("order:{n}");
        let reply: i64 = ok(con, &["SECKILL.DEDUCT", key, &user, "1", "ID", &id]);
        assert!(reply >= 0, "deduct {n} got {reply}");
    }
    ok::<i64>(con, &["SECKILL.DEDUCT", key, "user:0", "2"]);
    ok::<i64>(con, &["SECKILL.DEDUCT", key, "user:0", "1"]); // over the limit
    ok::<i64>(
        con,
        &["SECKILL.DEDUCT", key, "user:1", "1", "ID", "order:1"],
    ); // replay
    ok::<i64>(con, &["SECKILL.REFUND", key, "order:1"]);
    ok::<i64>(con, &["SECKILL.ADD", key, "7"]);
}

/// Rewrites the AOF in the background and waits until it finished well.
pub fn rewrite_aof(con: &mut Connection) {
    ok::<String>(con, &["BGREWRITEAOF"]);
    wait_until(
        "the AOF rewrite",
        std::time::Duration::from_secs(30),
        || {
            server_info(con, "persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
                && server_info(con, "persistence", "aof_rewrite_scheduled").as_deref() == Some("0")
        },
    );
    assert_eq!(
        server_info(con, "persistence", "aof_last_bgrewrite_status").as_deref(),
        Some("ok")
    );
}

/// Copies `from` to `to` through DUMP and RESTORE; returns the payload.
pub fn dump_and_restore(con: &mut Connection, from: &str, to: &str) -> Vec<u8> {
    let payload: Vec<u8> = ok(con, &["DUMP", from]);
    let restored: String = redis::cmd("RESTORE")
        .arg(to)
        .arg(0)
        .arg(&payload)
        .query(con)
        .expect("RESTORE");
    assert_eq!(restored, "OK");
    payload
}
