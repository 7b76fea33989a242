//! A replica that loads its full sync straight from the socket (diskless
//! load, `swapdb`) ends with the master's items exactly: the loader reads
//! the same chunks from a socket as from a file, and a replica may only
//! load from one when the module handles read errors itself.

mod common;

use common::*;
use redis::Connection;

/// Everything a client sees of an item: INFO, Redis's digest of it, its
/// pending holds and its order stream.
fn everything(con: &mut Connection, key: &str, stream: &str) -> impl PartialEq + std::fmt::Debug {
    let mut holds: Vec<(String, String, i64, i64)> = ok(con, &["SECKILL.HOLDS", key]);
    // Holds with the same deadline come in storage order, which a reload
    // may change.
    holds.sort();
    let events: redis::Value = ok(con, &["XRANGE", stream, "-", "+"]);
    (snapshot(con, key), holds, events)
}

/// Builds on the master an item with buyers, pending and confirmed holds,
/// a refund and an order stream, and a large item spanning many chunks.
fn fill_master(con: &mut Connection) {
    ok::<i64>(
        con,
        &[
            "SECKILL.INIT",
            "{d}item",
            "100",
            "LIMIT",
            "5",
            "STREAM",
            "{d}item:orders",
        ],
    );
    for n in 0..30 {
        let (user, id) = (format!("user:{n}"), format!("order:{n}"));
        let mut args = vec!["SECKILL.DEDUCT", "{d}item", &user, "2", "ID", &id];
        if n % 3 == 0 {
            args.extend_from_slice(&["HOLD", "600"]);
        }
        assert!(ok::<i64>(con, &args) >= 0);
    }
    ok::<i64>(con, &["SECKILL.DEDUCT", "{d}item", "user:1", "1"]);
    assert_eq!(
        ok::<i64>(con, &["SECKILL.CONFIRM", "{d}item", "order:3"]),
        1
    );
    assert_eq!(ok::<i64>(con, &["SECKILL.REFUND", "{d}item", "order:4"]), 2);
    assert_eq!(ok::<i64>(con, &["SECKILL.REFUND", "{d}item", "order:6"]), 2);
    fill_mixed(con, "{d}big", 2_500);
}

/// Starts a master holding `fill_master`'s items and a replica with
/// `load` as its `repl-diskless-load`; checks that the replica parsed the
/// master's stream straight from the socket and holds identical items, and
/// that writes after the sync still reach it.
fn replica_loads_from_the_socket(load: &str) -> (Server, Server) {
    let master = Server::start_with(&["--repl-diskless-sync", "yes"]);
    let mut on_master = master.client();
    fill_master(&mut on_master);
    let item = everything(&mut on_master, "{d}item", "{d}item:orders");
    let big = snapshot(&mut on_master, "{d}big");
    assert!(info_field(&mut on_master, "{d}item", "holds") >= 8);

    let replica = Server::start_replica_of_with(&master, &["--repl-diskless-load", load]);
    let mut on_replica = replica.client();
    assert_eq!(
        everything(&mut on_replica, "{d}item", "{d}item:orders"),
        item
    );
    assert_eq!(snapshot(&mut on_replica, "{d}big"), big);

    // The master streamed its snapshot without writing a file, and the
    // replica parsed it from the socket (Redis logs MASTER, Valkey PRIMARY) rather than saving it first
    // ("to disk", then "Loading DB in memory" from that file).
    assert!(
        master.log().contains("target: replicas sockets"),
        "{}",
        master.log()
    );
    let replica_log = replica.log();
    assert!(
        replica_log.contains("receiving streamed RDB from")
            && replica_log.contains("with EOF to parser"),
        "{replica_log}"
    );
    assert!(
        replica_log.contains("REPLICA sync: Finished with success"),
        "{replica_log}"
    );
    assert!(
        !replica_log.contains("Skipping diskless-load"),
        "{replica_log}"
    );

    // Writes after the sync reach the replica as commands, on the loaded
    // item.
    ok::<i64>(
        &mut on_master,
        &["SECKILL.DEDUCT", "{d}item", "late", "1", "ID", "late-1"],
    );
    assert_eq!(
        ok::<i64>(&mut on_master, &["SECKILL.CONFIRM", "{d}item", "order:0"]),
        1
    );
    let acknowledged: i64 = ok(&mut on_master, &["WAIT", "1", "5000"]);
    assert_eq!(acknowledged, 1, "the replica acknowledged the writes");
    assert_eq!(
        everything(&mut on_replica, "{d}item", "{d}item:orders"),
        everything(&mut on_master, "{d}item", "{d}item:orders")
    );
    (master, replica)
}

#[test]
fn a_replica_loading_from_the_socket_into_an_empty_db_holds_the_identical_item() {
    replica_loads_from_the_socket("on-empty-db");
}

/// With `swapdb`, Redis 7.0 loads asynchronously, keeping the old data
/// readable meanwhile; it only does so for modules that declare they can
/// (`REDISMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD`), and otherwise falls back
/// to a temporary file.
#[test]
fn a_swapdb_replica_loading_from_the_socket_holds_the_identical_item() {
    let (master, replica) = replica_loads_from_the_socket("swapdb");
    let mut on_master = master.client();
    let mut on_replica = replica.client();

    // A replica that holds data of its own gets a second full sync: it was
    // promoted and wrote, so its history left the master's. swapdb keeps
    // the old data until the new is loaded, then drops it.
    ok::<String>(&mut on_replica, &["REPLICAOF", "NO", "ONE"]);
    ok::<i64>(
        &mut on_replica,
        &["SECKILL.DEDUCT", "{d}item", "stray", "1", "ID", "stray-1"],
    );
    ok::<i64>(&mut on_replica, &["SECKILL.INIT", "{d}stray", "5"]);
    let port = master.port.to_string();
    ok::<String>(&mut on_replica, &["REPLICAOF", "127.0.0.1", &port]);
    wait_until(
        "a second full sync",
        std::time::Duration::from_secs(20),
        || {
            replica.log().matches("Finished with success").count() == 2
                && server_info(&mut on_replica, "replication", "master_link_status").as_deref()
                    == Some("up")
        },
    );
    assert_eq!(
        replica.log().matches("with EOF to parser").count(),
        2,
        "{}",
        replica.log()
    );
    assert_eq!(ok::<i64>(&mut on_replica, &["EXISTS", "{d}stray"]), 0);
    assert_eq!(
        everything(&mut on_replica, "{d}item", "{d}item:orders"),
        everything(&mut on_master, "{d}item", "{d}item:orders")
    );
    assert_eq!(
        snapshot(&mut on_replica, "{d}big"),
        snapshot(&mut on_master, "{d}big")
    );
}
