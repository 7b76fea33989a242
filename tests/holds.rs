//! Reservations that lapse on their own: a hold takes units out of stock
//! until CONFIRM, REFUND or its deadline; the master releases lapsed holds
//! and replicates the release, so replicas and AOF replays end identical.

mod common;

use common::{info_field, ok, snapshot, wait_until, Server};
use redis::{Connection, Value};
use std::time::Duration;

const PATIENCE: Duration = Duration::from_secs(10);

fn server_now_ms(con: &mut Connection) -> i64 {
    let time: Vec<i64> = ok(con, &["TIME"]);
    time[0] * 1000 + time[1] / 1000
}

/// DEDUCT key user 1 ID id HOLDUNTIL now+ms; returns the deadline.
fn hold_for(con: &mut Connection, key: &str, user: &str, id: &str, ms: i64) -> (i64, i64) {
    let deadline = server_now_ms(con) + ms;
    let reply: i64 = ok(
        con,
        &[
            "SECKILL.DEDUCT",
            key,
            user,
            "1",
            "ID",
            id,
            "HOLDUNTIL",
            &deadline.to_string(),
        ],
    );
    (reply, deadline)
}

/// Turns item events on and subscribes `listener` to those of database 0.
fn events<'a>(server: &Server, listener: &'a mut Connection) -> redis::PubSub<'a> {
    ok::<String>(
        &mut server.client(),
        &["CONFIG", "SET", "notify-keyspace-events", "Ed"],
    );
    let mut pubsub = listener.as_pubsub();
    pubsub
        .psubscribe("__keyevent@0__:seckill.*")
        .expect("psubscribe");
    pubsub.set_read_timeout(Some(PATIENCE)).expect("timeout");
    pubsub
}

fn next_event(pubsub: &mut redis::PubSub) -> String {
    let message = pubsub.get_message().expect("an event in time");
    message
        .get_channel_name()
        .trim_start_matches("__keyevent@0__:")
        .to_owned()
}

#[test]
fn a_lapsed_hold_frees_stock_and_quota_even_if_nobody_writes() {
    let server = Server::start();
    let mut listener = server.client();
    let mut pubsub = events(&server, &mut listener);
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "1", "LIMIT", "1"]);
    let (reply, _) = hold_for(&mut con, "sku:1", "alice", "h1", 300);
    assert_eq!(reply, 0);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "bob", "1"]),
        -1
    );
    assert_eq!(info_field(&mut con, "sku:1", "held"), 1);

    // Nothing writes to the item: the module's own sweep releases the hold.
    assert_eq!(next_event(&mut pubsub), "seckill.init");
    assert_eq!(next_event(&mut pubsub), "seckill.deduct");
    assert_eq!(next_event(&mut pubsub), "seckill.expire");
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:1"]), 1);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.BOUGHT", "sku:1", "alice"]),
        0
    );
    assert_eq!(info_field(&mut con, "sku:1", "held"), 0);
    assert_eq!(info_field(&mut con, "sku:1", "expired"), 1);
    let retry: i64 = ok(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "alice", "1", "ID", "h1"],
    );
    assert_eq!(retry, -4, "a retried DEDUCT of a lapsed hold");
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:1", "h1"]), -4);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "bob", "1"]),
        0
    );
}

#[test]
fn reads_report_a_lapsed_hold_as_released_before_anything_writes() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "3"]);
    let (_, deadline) = hold_for(&mut con, "sku:1", "alice", "h1", 200);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:1"]), 2);
    wait_until("the deadline", PATIENCE, || {
        server_now_ms(&mut con) > deadline
    });
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:1"]), 3);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.BOUGHT", "sku:1", "alice"]),
        0
    );
    assert_eq!(info_field(&mut con, "sku:1", "holds"), 0);
    assert_eq!(
        ok::<Vec<Value>>(&mut con, &["SECKILL.HOLDS", "sku:1"]),
        vec![]
    );
}

#[test]
fn a_confirmed_hold_stays_sold() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "5"]);
    let (_, deadline) = hold_for(&mut con, "sku:1", "alice", "h1", 400);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:1", "h1"]), 1);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:1", "h1"]), 0);
    wait_until("the deadline", PATIENCE, || {
        server_now_ms(&mut con) > deadline + 300
    });
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:1"]), 4);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.BOUGHT", "sku:1", "alice"]),
        1
    );
    assert_eq!(info_field(&mut con, "sku:1", "expired"), 0);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:1", "unknown"]),
        -4
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.CONFIRM", "nope", "h1"]), -3);
}

#[test]
fn a_confirm_after_the_deadline_is_refused() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "5"]);
    let (_, deadline) = hold_for(&mut con, "sku:1", "alice", "h1", 200);
    wait_until("the deadline", PATIENCE, || {
        server_now_ms(&mut con) > deadline
    });
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:1", "h1"]), -4);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:1"]), 5);
}

#[test]
fn refund_releases_a_hold_or_rolls_back_a_confirmed_purchase() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "5"]);
    hold_for(&mut con, "sku:1", "alice", "h1", 60_000);
    hold_for(&mut con, "sku:1", "bob", "h2", 60_000);
    ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:1", "h2"]);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", "h1"]), 1);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", "h2"]), 1);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", "h1"]), 0);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:1"]), 5);
    assert_eq!(info_field(&mut con, "sku:1", "held"), 0);
    assert_eq!(info_field(&mut con, "sku:1", "refunded"), 2);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:1", "h1"]), -4);
}

#[test]
fn holds_lists_pending_holds_earliest_first() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "5"]);
    let (_, late) = hold_for(&mut con, "sku:1", "alice", "h1", 90_000);
    let (_, early) = hold_for(&mut con, "sku:1", "bob", "h2", 60_000);
    hold_for(&mut con, "sku:1", "carol", "h3", 70_000);
    ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:1", "h3"]);
    let all: Vec<(String, String, i64, i64)> = ok(&mut con, &["SECKILL.HOLDS", "sku:1"]);
    assert_eq!(
        all,
        vec![
            ("h2".to_owned(), "bob".to_owned(), 1, early),
            ("h1".to_owned(), "alice".to_owned(), 1, late),
        ]
    );
    let alices: Vec<(String, String, i64, i64)> =
        ok(&mut con, &["SECKILL.HOLDS", "sku:1", "alice"]);
    assert_eq!(alices, vec![("h1".to_owned(), "alice".to_owned(), 1, late)]);
    assert_eq!(
        ok::<Value>(&mut con, &["SECKILL.HOLDS", "nope"]),
        Value::Nil
    );
    assert_eq!(info_field(&mut con, "sku:1", "holds"), 2);
    assert_eq!(info_field(&mut con, "sku:1", "held"), 2);
}

#[test]
fn hold_seconds_reach_the_replica_as_the_masters_deadline() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut replica_con = replica.client();
    let mut con = master.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "5"]);
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "sku:1",
            "alice",
            "1",
            "ID",
            "h1",
            "HOLD",
            "600",
        ],
    );
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "10000"]), 1);
    let on_master: Value = ok(&mut con, &["SECKILL.HOLDS", "sku:1"]);
    let on_replica: Value = ok(&mut replica_con, &["SECKILL.HOLDS", "sku:1"]);
    assert_eq!(on_master, on_replica);
    assert_eq!(
        snapshot(&mut replica_con, "sku:1"),
        snapshot(&mut con, "sku:1")
    );
}

#[test]
fn replica_and_aof_hold_the_identical_item_after_holds_lapse_on_the_master() {
    let mut master = Server::start_with(&["--appendonly", "yes"]);
    let replica = Server::start_replica_of(&master);
    let mut replica_con = replica.client();
    let mut con = master.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "20", "LIMIT", "2"]);
    // One deadline for every hold, so that one sweep releases them all.
    let deadline = (server_now_ms(&mut con) + 400).to_string();
    for n in 0..12 {
        let (user, id) = (format!("user:{n}"), format!("h{n}"));
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.DEDUCT",
                "sku:1",
                &user,
                "1",
                "ID",
                &id,
                "HOLDUNTIL",
                &deadline,
            ],
        );
    }
    for n in (0..12).step_by(3) {
        ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:1", &format!("h{n}")]);
    }
    ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", "h1"]);
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "walk-in", "1"]);
    let mut listener = master.client();
    let mut pubsub = events(&master, &mut listener);
    assert_eq!(next_event(&mut pubsub), "seckill.expire");
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "10000"]), 1);

    let on_master = snapshot(&mut con, "sku:1");
    assert_eq!(info_field(&mut con, "sku:1", "expired"), 7);
    assert_eq!(info_field(&mut con, "sku:1", "holds"), 0);
    assert_eq!(
        snapshot(&mut replica_con, "sku:1"),
        on_master,
        "replica differs"
    );
    assert!(common::command_calls(&mut replica_con, "seckill.release") >= 1);
    master.restart();
    let mut con = master.client();
    assert_eq!(snapshot(&mut con, "sku:1"), on_master, "AOF replay differs");
}

#[test]
fn holds_fire_their_keyspace_events() {
    let server = Server::start();
    let mut listener = server.client();
    let mut pubsub = events(&server, &mut listener);
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "5"]);
    hold_for(&mut con, "sku:1", "alice", "h1", 60_000);
    ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:1", "h1"]);
    hold_for(&mut con, "sku:1", "bob", "h2", 60_000);
    ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", "h2"]);
    hold_for(&mut con, "sku:1", "carol", "h3", 200);
    let seen: Vec<String> = (0..7).map(|_| next_event(&mut pubsub)).collect();
    assert_eq!(
        seen,
        [
            "seckill.init",
            "seckill.deduct",
            "seckill.confirm",
            "seckill.deduct",
            "seckill.refund",
            "seckill.deduct",
            "seckill.expire"
        ]
    );
}

#[test]
fn pending_holds_survive_a_restart_and_still_lapse_on_their_own() {
    let mut server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "5"]);
    hold_for(&mut con, "sku:1", "alice", "h1", 3_000);
    hold_for(&mut con, "sku:1", "bob", "h2", 60_000);
    let holds: Value = ok(&mut con, &["SECKILL.HOLDS", "sku:1"]);
    ok::<String>(&mut con, &["SAVE"]);
    server.restart();
    let mut con = server.client();
    assert_eq!(ok::<Value>(&mut con, &["SECKILL.HOLDS", "sku:1"]), holds);
    // The restarted server learns of the hold from the file alone.
    let mut listener = server.client();
    let mut pubsub = events(&server, &mut listener);
    assert_eq!(next_event(&mut pubsub), "seckill.expire");
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:1"]), 4);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:1", "h2"]), 1);
}

/// An item with a pending hold, a confirmed one, a refunded one and a
/// lapsed one.
fn item_with_every_kind_of_hold(con: &mut Connection) {
    ok::<i64>(con, &["SECKILL.INIT", "sku:1", "10", "LIMIT", "3"]);
    hold_for(con, "sku:1", "alice", "pending", 600_000);
    hold_for(con, "sku:1", "bob", "confirmed", 600_000);
    ok::<i64>(con, &["SECKILL.CONFIRM", "sku:1", "confirmed"]);
    hold_for(con, "sku:1", "carol", "refunded", 600_000);
    ok::<i64>(con, &["SECKILL.REFUND", "sku:1", "refunded"]);
    ok::<i64>(
        con,
        &[
            "SECKILL.DEDUCT",
            "sku:1",
            "dave",
            "1",
            "ID",
            "lapsed",
            "HOLDUNTIL",
            "1",
        ],
    );
    // A write releases the lapsed hold for good before anything is saved.
    ok::<i64>(con, &["SECKILL.ADD", "sku:1", "1"]);
}

#[test]
fn holds_survive_aof_rewrite_and_dump_restore() {
    let mut server = Server::start_with(&["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]);
    let mut con = server.client();
    item_with_every_kind_of_hold(&mut con);
    let before = snapshot(&mut con, "sku:1");
    let holds: Value = ok(&mut con, &["SECKILL.HOLDS", "sku:1"]);
    assert_eq!(info_field(&mut con, "sku:1", "expired"), 1);

    common::dump_and_restore(&mut con, "sku:1", "sku:copy");
    assert_eq!(snapshot(&mut con, "sku:copy").1, before.1);
    assert_eq!(ok::<Value>(&mut con, &["SECKILL.HOLDS", "sku:copy"]), holds);

    common::rewrite_aof(&mut con);
    server.restart();
    let mut con = server.client();
    assert_eq!(snapshot(&mut con, "sku:1"), before);
    assert_eq!(ok::<Value>(&mut con, &["SECKILL.HOLDS", "sku:1"]), holds);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:1", "pending"]),
        1
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:1", "lapsed"]),
        -4
    );
}

#[test]
fn holds_with_the_same_deadline_are_listed_by_request_id_on_master_and_replica() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:ties", "10"]);
    let deadline = (server_now_ms(&mut con) + 600_000).to_string();
    for id in ["h9", "h3", "h7", "h1"] {
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.DEDUCT",
                "sku:ties",
                id,
                "1",
                "ID",
                id,
                "HOLDUNTIL",
                &deadline,
            ],
        );
    }
    let ids = |con: &mut Connection| -> Vec<String> {
        let holds: Vec<(String, String, i64, i64)> = ok(con, &["SECKILL.HOLDS", "sku:ties"]);
        holds.into_iter().map(|(id, ..)| id).collect()
    };
    assert_eq!(ids(&mut con), ["h1", "h3", "h7", "h9"]);
    // A replica rebuilt from an RDB stores the records in another order.
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "5000"]), 1);
    let mut on_replica = replica.client();
    ok::<String>(&mut on_replica, &["DEBUG", "RELOAD"]);
    assert_eq!(ids(&mut on_replica), ["h1", "h3", "h7", "h9"]);
}
