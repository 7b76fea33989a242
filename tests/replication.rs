//! A replica holds exactly what its master holds, and only successful
//! writes travel to it. Also: with the module loaded, MOVE and a
//! cross-database COPY of a plain key replicate as without it, and a
//! WINDOW or STREAM that changes nothing replicates nothing.

mod common;

use common::{client_db, command_calls, error, fill_mixed, ok, snapshot, Server};
use redis::{Connection, Value};

/// Blocks until the replica acknowledged every write so far.
fn wait_for_replica(master: &mut Connection) {
    let acked: i64 = ok(master, &["WAIT", "1", "10000"]);
    assert_eq!(acked, 1, "the replica did not acknowledge");
}

#[test]
fn replica_holds_identical_items_after_a_mixed_workload() {
    let master = Server::start();
    let mut con = master.client();
    // State from before the replica attaches arrives by full sync (RDB).
    fill_mixed(&mut con, "sku:synced", 1_500);
    let replica = Server::start_replica_of(&master);
    let mut replica_con = replica.client();

    // State written afterwards arrives as the replication stream.
    fill_mixed(&mut con, "sku:streamed", 200);
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:ttl", "10", "EX", "1000"]);
    ok::<i64>(
        &mut con,
        &["SECKILL.INIT", "sku:u", "UNLIMITED", "LIMIT", "2"],
    );
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "sku:u", "alice", "2", "ID", "u1"],
    );
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:synced", "1", "REPLACE"]);
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:synced", "bob", "1"]);
    wait_for_replica(&mut con);

    for key in ["sku:synced", "sku:streamed", "sku:ttl", "sku:u"] {
        assert_eq!(
            snapshot(&mut replica_con, key),
            snapshot(&mut con, key),
            "{key} differs on the replica"
        );
    }
    // A relative expiry reaches the replica as the master's deadline.
    let master_deadline: i64 = ok(&mut con, &["PEXPIRETIME", "sku:ttl"]);
    assert_eq!(
        ok::<i64>(&mut replica_con, &["PEXPIRETIME", "sku:ttl"]),
        master_deadline
    );
    assert_eq!(
        error(&mut replica_con, &["SECKILL.DEDUCT", "sku:ttl", "eve", "1"]),
        "READONLY You can't write against a read only replica."
    );
}

/// Refusals and no-ops are not replicated. Repeats of a request id are, as
/// they came (they change nothing there either), so that a `WAIT` after a
/// retry covers the first call.
#[test]
fn rejected_and_no_op_calls_are_not_replicated_and_repeats_fence_with_a_ping() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    let mut replica_con = replica.client();

    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "2", "LIMIT", "1"]);
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "2"]); // exists: no-op
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:u", "UNLIMITED"]);
    let replies: Vec<i64> = [
        ("a", "r1"),
        ("a", "r2"),
        ("b", "r3"),
        ("c", "r4"),
        ("b", "r3"),
    ]
    .iter()
    .map(|(user, id)| ok(&mut con, &["SECKILL.DEDUCT", "sku:1", user, "1", "ID", id]))
    .collect();
    // Bought, over the limit, bought, sold out, replay: two purchases.
    assert_eq!(replies, [1, -2, 0, -1, 0]);
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", "nope", "a", "1"]); // no such item
    let _ = error(&mut con, &["SECKILL.DEDUCT", "sku:1", "a", "0"]); // bad input
    ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", "r3"]);
    ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", "r3"]); // already refunded
    ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", "unknown"]);
    ok::<i64>(&mut con, &["SECKILL.ADD", "sku:u", "5"]); // unlimited: no-op
    ok::<i64>(&mut con, &["SECKILL.ADD", "nope", "5"]);
    ok::<i64>(&mut con, &["SECKILL.ADD", "sku:1", "5"]);
    wait_for_replica(&mut con);

    assert_eq!(command_calls(&mut replica_con, "seckill.init"), 2);
    // Two purchases; the replay of r3 went as a PING.
    assert_eq!(command_calls(&mut replica_con, "seckill.deduct"), 2);
    // The refund; its two repeats (refunded already, unknown id) went as
    // PINGs too, so the replica saw at least three.
    assert_eq!(command_calls(&mut replica_con, "seckill.refund"), 1);
    assert!(command_calls(&mut replica_con, "ping") >= 3);
    assert_eq!(command_calls(&mut replica_con, "seckill.add"), 1);
    assert_eq!(
        snapshot(&mut replica_con, "sku:1"),
        snapshot(&mut con, "sku:1")
    );
}

/// `WAIT` counts the writes of its own connection. A retry on a new
/// connection (the first was lost) that finds its request id, a hold
/// confirmed or released already, a transfer taken, received or settled
/// already, an item created or a window or stream set already, still makes
/// that `WAIT` wait for the replicas to hold the first call: with the
/// replica held back, it answers 0, not 1. (Redis 7.0 moves a connection's
/// offset after any command; Redis 8 and Valkey 9 only after one that
/// propagated something, which is what this guards.)
#[test]
fn wait_after_a_repeat_on_another_connection_waits_for_the_first_call() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut first = master.client();
    ok::<i64>(&mut first, &["SECKILL.INIT", "sku:1", "10"]);
    let hold = [
        "SECKILL.DEDUCT",
        "sku:1",
        "ann",
        "1",
        "ID",
        "h1",
        "HOLD",
        "60",
    ];
    ok::<i64>(&mut first, &hold);
    ok::<i64>(&mut first, &["SECKILL.INIT", "sku:2", "0"]);
    let released_hold = [
        "SECKILL.DEDUCT",
        "sku:1",
        "cat",
        "1",
        "ID",
        "h2",
        "HOLD",
        "60",
    ];
    ok::<i64>(&mut first, &released_hold);
    wait_for_replica(&mut first);

    // The replica stops applying its master's stream for a while.
    let mut on_replica = replica.client();
    ok::<String>(&mut on_replica, &["CLIENT", "PAUSE", "5000", "ALL"]);
    let purchase = ["SECKILL.DEDUCT", "sku:1", "bob", "1", "ID", "r1"];
    // A move of 2 units from sku:1 to sku:2, as the rebalancer makes one.
    let take = ["SECKILL.TAKE", "sku:1", "2", "ID", "t1", "TO", "sku:2"];
    let receive = ["SECKILL.ADD", "sku:2", "2", "ID", "t1"];
    let settle = ["SECKILL.SETTLE", "sku:1", "t1"];
    let release = ["SECKILL.RELEASE", "sku:1", "h2"];
    ok::<i64>(&mut first, &purchase);
    ok::<i64>(&mut first, &["SECKILL.CONFIRM", "sku:1", "h1"]);
    ok::<i64>(&mut first, &["SECKILL.REFUND", "sku:1", "r1"]);
    assert_eq!(ok::<i64>(&mut first, &take), 2);
    assert_eq!(ok::<i64>(&mut first, &receive), 2);
    assert_eq!(ok::<i64>(&mut first, &settle), 1);
    assert_eq!(ok::<i64>(&mut first, &release), 1);
    // Set-up calls an operator retries: a new item, a sale closed, a stream.
    let create = ["SECKILL.INIT", "{s3}", "5"];
    let close = ["SECKILL.WINDOW", "{s3}", "0", "1"];
    let stream = ["SECKILL.STREAM", "{s3}", "{s3}:orders"];
    assert_eq!(ok::<i64>(&mut first, &create), 1);
    assert_eq!(ok::<i64>(&mut first, &close), 1);
    assert_eq!(ok::<i64>(&mut first, &stream), 1);

    for repeat in [
        &purchase[..],
        &["SECKILL.CONFIRM", "sku:1", "h1"],
        &["SECKILL.REFUND", "sku:1", "r1"],
        &take,
        &receive,
        &settle,
        &release,
        &create,
        &close,
        &stream,
    ] {
        // Each on a connection of its own: a fence moves its connection's
        // offset past every write so far, which would cover the next.
        let mut retry = master.client();
        ok::<i64>(&mut retry, repeat);
        let acknowledged: i64 = ok(&mut retry, &["WAIT", "1", "100"]);
        assert_eq!(
            acknowledged, 0,
            "WAIT after {repeat:?} counted a replica that lacks it"
        );
    }
    wait_for_replica(&mut first);
    for key in ["sku:1", "sku:2", "{s3}"] {
        assert_eq!(
            snapshot(&mut replica.client(), key),
            snapshot(&mut first, key),
            "{key} differs on the replica"
        );
    }
}

/// Loading the module must not change how other commands replicate: a
/// MOVE and a cross-database COPY of a plain key reach the replica in the
/// right database (on Valkey 8.1 a listener to generic keyspace events
/// broke this).
#[test]
fn move_and_copy_across_databases_replicate_as_without_the_module() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    ok::<String>(&mut con, &["SET", "plain", "1"]);
    ok::<String>(&mut con, &["SET", "copied", "2"]);
    assert_eq!(ok::<i64>(&mut con, &["MOVE", "plain", "1"]), 1);
    assert_eq!(
        ok::<i64>(&mut con, &["COPY", "copied", "copied", "DB", "2"]),
        1
    );
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "10000"]), 1);
    let mut replica_db1 = client_db(&replica, 1);
    let mut replica_db2 = client_db(&replica, 2);
    assert_eq!(
        ok::<Option<String>>(&mut replica_db1, &["GET", "plain"]).as_deref(),
        Some("1")
    );
    assert_eq!(
        ok::<Option<String>>(&mut replica_db2, &["GET", "copied"]).as_deref(),
        Some("2")
    );
    let mut replica_con = replica.client();
    assert_eq!(
        ok::<Option<String>>(&mut replica_con, &["GET", "copied"]).as_deref(),
        Some("2")
    );
    assert_eq!(ok::<i64>(&mut replica_con, &["EXISTS", "plain"]), 0);
}

/// WINDOW and STREAM that set what is there already change nothing: not
/// replicated (only a PING, see the test above), no event, and a WATCH on
/// the item survives.
#[test]
fn window_and_stream_that_change_nothing_replicate_nothing_and_keep_watch() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "{n}", "10"]);
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "5000"]), 1);
    let mut replica_con = replica.client();
    let calls_before = (
        command_calls(&mut replica_con, "seckill.window"),
        command_calls(&mut replica_con, "seckill.stream"),
    );
    let mut watcher = server_client_watching(&master, "{n}");
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.WINDOW", "{n}", "0", "0"]), 1);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.STREAM", "{n}"]), 1);
    let exec: Option<Vec<Value>> = redis::pipe()
        .atomic()
        .cmd("PING")
        .query(&mut watcher)
        .expect("EXEC");
    assert!(exec.is_some(), "a no-op aborted the WATCH");
    ok::<i64>(&mut con, &["SECKILL.ADD", "{n}", "1"]);
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "5000"]), 1);
    assert_eq!(command_calls(&mut replica_con, "seckill.add"), 1);
    assert_eq!(
        (
            command_calls(&mut replica_con, "seckill.window"),
            command_calls(&mut replica_con, "seckill.stream"),
        ),
        calls_before,
        "a no-op was replicated"
    );
}

fn server_client_watching(server: &Server, key: &str) -> Connection {
    let mut con = server.client();
    ok::<String>(&mut con, &["WATCH", key]);
    con
}

/// A hold whose deadline passed and that the sweep has not released yet is
/// lapsed for every read and write of the master: CONFIRM answers -4 and
/// REFUND 0. The replica must not see those calls as confirming or
/// refunding it (it judges what its master sends without a clock); once
/// the sweep releases the hold, both hold the same item. A replica that
/// confirmed it would, after a failover, keep as sold a unit its master
/// had put back on sale.
#[test]
fn a_late_confirm_or_refund_changes_the_replica_no_more_than_the_master() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "seckill.sweep-interval-ms", "60000"],
    );
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:late", "5"]);
    let deadline = common::server_now_ms(&mut con) + 100;
    for id in ["h1", "h2"] {
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.DEDUCT",
                "sku:late",
                id,
                "1",
                "ID",
                id,
                "HOLDUNTIL",
                &deadline.to_string(),
            ],
        );
    }
    while common::server_now_ms(&mut con) <= deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:late", "h1"]),
        -4
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:late", "h2"]),
        0
    );
    wait_for_replica(&mut con);
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "seckill.sweep-interval-ms", "10"],
    );
    let patience = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while common::info_field(&mut con, "sku:late", "holds") > 0 {
        assert!(
            std::time::Instant::now() < patience,
            "the sweep did not run"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    wait_for_replica(&mut con);
    let mut replica_con = replica.client();
    assert_eq!(common::info_field(&mut con, "sku:late", "stock"), 5);
    assert_eq!(
        snapshot(&mut replica_con, "sku:late"),
        snapshot(&mut con, "sku:late")
    );
}

/// RELEASE naming a hold that lapsed here and waits for the sweep, and
/// one still pending: this server releases the pending one alone (the
/// lapsed one counts as released already), and so does its replica.
#[test]
fn a_release_of_a_lapsed_and_a_pending_hold_releases_the_same_on_the_replica() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "seckill.sweep-interval-ms", "60000"],
    );
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:rel", "5", "LIMIT", "2"]);
    let soon = (common::server_now_ms(&mut con) + 100).to_string();
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "sku:rel",
            "u",
            "1",
            "ID",
            "h1",
            "HOLDUNTIL",
            &soon,
        ],
    );
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "sku:rel",
            "u",
            "1",
            "ID",
            "h2",
            "HOLD",
            "600",
        ],
    );
    let deadline: i64 = soon.parse().unwrap();
    while common::server_now_ms(&mut con) <= deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.RELEASE", "sku:rel", "h1", "h2"]),
        1
    );
    wait_for_replica(&mut con);
    assert_eq!(
        snapshot(&mut replica.client(), "sku:rel"),
        snapshot(&mut con, "sku:rel")
    );
}
