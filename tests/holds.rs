//! Reservations that lapse on their own: a hold takes units out of stock
//! until CONFIRM, REFUND or its deadline; the master releases lapsed holds
//! and replicates the release, so replicas and AOF replays end identical.
//! Also: thousands of holds lapsing at once, holds lapsing while clients
//! are paused, an erroring call on an item whose hold just lapsed, and
//! holds of an item renamed, moved, copied or swapped to another database,
//! which lapse where the item went.
//!
//! Where a test depends on the module's timer not running between two
//! commands, it sends them in one pipeline after `DEBUG SLEEP`: the server
//! runs every command of a pipeline it read at once before it looks at its
//! timers again.

mod common;

use common::{
    client_db, command_calls, dump, error_line, info_field, ok, place_holds, right_after_deadline,
    server_now_ms, snapshot, strings, wait_until, Server, PATIENCE,
};
use redis::{Connection, Value};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

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

/// Holds placed in the millisecond of the item's replicated moment reach
/// replicas and the AOF as the client sent them (`HOLD seconds`); the
/// others carry their deadline and moment. Either way every server ends
/// with the master's deadlines.
#[test]
fn holds_sent_as_the_client_sent_them_keep_the_masters_deadlines() {
    let mut master = Server::start_with(&["--appendonly", "yes"]);
    let replica = Server::start_replica_of(&master);
    let mut replica_con = replica.client();
    let mut con = master.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "1000000"]);
    let aof = master.dir().join("appendonlydir");
    let relative_holds_in_aof = || -> usize {
        let mut found = 0;
        for file in std::fs::read_dir(&aof)
            .expect("the AOF directory")
            .flatten()
        {
            let bytes = std::fs::read(file.path()).unwrap_or_default();
            found += bytes
                .windows(11)
                .filter(|w| w == b"$4\r\nHOLD\r\n$")
                .count();
        }
        found
    };
    // Pipelined holds share milliseconds; until some did, place more.
    let mut placed = 0;
    for _ in 0..50 {
        let mut pipe = redis::pipe();
        for _ in 0..500 {
            let (user, id) = (format!("user:{}", placed % 97), format!("h{placed}"));
            pipe.cmd("SECKILL.DEDUCT")
                .arg("sku:1")
                .arg(user)
                .arg(1)
                .arg("ID")
                .arg(id)
                .arg("HOLD")
                .arg(600 + placed % 3);
            placed += 1;
        }
        let replies: Vec<i64> = pipe.query(&mut con).unwrap();
        assert!(replies.iter().all(|reply| *reply >= 0), "{replies:?}");
        if relative_holds_in_aof() > 0 {
            break;
        }
    }
    assert!(
        relative_holds_in_aof() > 0,
        "no hold was sent as the client sent it"
    );
    assert!(
        relative_holds_in_aof() < placed,
        "every hold was sent as the client sent it"
    );
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "10000"]), 1);
    let on_master = snapshot(&mut con, "sku:1");
    let holds: Value = ok(&mut con, &["SECKILL.HOLDS", "sku:1"]);
    assert_eq!(
        snapshot(&mut replica_con, "sku:1"),
        on_master,
        "replica differs"
    );
    assert_eq!(
        ok::<Value>(&mut replica_con, &["SECKILL.HOLDS", "sku:1"]),
        holds
    );
    master.restart();
    let mut con = master.client();
    assert_eq!(snapshot(&mut con, "sku:1"), on_master, "AOF replay differs");
    assert_eq!(ok::<Value>(&mut con, &["SECKILL.HOLDS", "sku:1"]), holds);
    // A DUMP carries the replicated moment too.
    let payload: Vec<u8> = ok(&mut con, &["DUMP", "sku:1"]);
    let mut restore = redis::cmd("RESTORE");
    restore.arg("sku:2").arg(0).arg(payload);
    let _: () = restore.query(&mut con).unwrap();
    assert_eq!(
        snapshot(&mut con, "sku:2"),
        on_master,
        "a restored copy differs"
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

/// A buyer whose hold lapsed buys again before the sweep releases it: its
/// quota counts the lapsed hold as given back while its record still keeps
/// it, so replicas and the AOF must judge the purchase at the master's
/// moment, with an ID or without.
#[test]
fn buyers_of_lapsed_holds_buy_again_alike_on_master_replica_and_aof() {
    // The sweep held off, here and after the restart, so that the lapsed
    // holds are still there when their buyers come back.
    let mut master = Server::start_with(&[
        "--appendonly",
        "yes",
        "--seckill.sweep-interval-ms",
        "60000",
    ]);
    let replica = Server::start_replica_of(&master);
    let mut replica_con = replica.client();
    let mut con = master.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "20", "LIMIT", "1"]);
    let deadline = server_now_ms(&mut con) + 300;
    for n in 0..4 {
        let user = format!("user:{n}");
        let id = format!("h{n}");
        let until = deadline.to_string();
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
                &until,
            ],
        );
    }
    common::wait_until("the holds lapse", Duration::from_secs(10), || {
        server_now_ms(&mut con) > deadline
    });
    for n in 0..2 {
        let user = format!("user:{n}");
        assert!(ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", &user, "1"]) >= 0);
    }
    for n in 2..4 {
        let (user, id) = (format!("user:{n}"), format!("again{n}"));
        assert!(
            ok::<i64>(
                &mut con,
                &["SECKILL.DEDUCT", "sku:1", &user, "1", "ID", &id]
            ) >= 0
        );
    }
    // The limit still holds: a second unit each is refused.
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "user:0", "1"]),
        -2
    );
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "10000"]), 1);
    let on_master = snapshot(&mut con, "sku:1");
    assert_eq!(info_field(&mut con, "sku:1", "stock"), 16);
    assert_eq!(
        snapshot(&mut replica_con, "sku:1"),
        on_master,
        "replica differs"
    );
    master.restart();
    let mut con = master.client();
    assert_eq!(snapshot(&mut con, "sku:1"), on_master, "AOF replay differs");
}

/// While lapsed holds wait for the sweep, purchases judged in the
/// millisecond of the item's replicated moment reach replicas and the AOF
/// as they came, and the others with the moment (AT): either way every
/// server records the master's replies, and the buyers of lapsed holds buy
/// again alike everywhere.
#[test]
fn purchases_during_a_backlog_sent_as_they_came_keep_the_masters_replies() {
    let mut master = Server::start_with(&[
        "--appendonly",
        "yes",
        "--seckill.sweep-interval-ms",
        "60000",
    ]);
    let replica = Server::start_replica_of(&master);
    let mut replica_con = replica.client();
    let mut con = master.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "100000", "LIMIT", "1"]);
    let deadline = server_now_ms(&mut con) + 300;
    place_holds(&mut con, "sku:1", 500, None, deadline);
    common::wait_until("the holds lapse", Duration::from_secs(10), || {
        server_now_ms(&mut con) > deadline
    });
    let aof = master.dir().join("appendonlydir");
    let moments_in_aof = || -> usize {
        let mut found = 0;
        for file in std::fs::read_dir(&aof)
            .expect("the AOF directory")
            .flatten()
        {
            let bytes = std::fs::read(file.path()).unwrap_or_default();
            found += bytes.windows(9).filter(|w| w == b"$2\r\nAT\r\n$").count();
        }
        found
    };
    let before = moments_in_aof();
    // Buyers of the lapsed holds (their limit counts the lapsed unit as
    // given back) and new buyers, with and without ids, pipelined so that
    // calls share milliseconds.
    let mut pipe = redis::pipe();
    let users: Vec<String> = (0..500).map(|n| format!("u{n}")).collect();
    for (n, user) in users.iter().enumerate() {
        pipe.cmd("SECKILL.DEDUCT").arg("sku:1").arg(user).arg(1);
        if n % 2 == 0 {
            pipe.arg("ID").arg(format!("again:{n}"));
        }
        pipe.cmd("SECKILL.DEDUCT")
            .arg("sku:1")
            .arg(format!("new:{n}"))
            .arg(1)
            .arg("ID")
            .arg(format!("new:{n}"));
    }
    let replies: Vec<i64> = pipe.query(&mut con).unwrap();
    assert!(replies.iter().all(|reply| *reply >= 0), "{replies:?}");
    let sent_with_moment = moments_in_aof() - before;
    assert!(sent_with_moment >= 1, "no purchase carried its moment");
    assert!(
        sent_with_moment < replies.len(),
        "every purchase carried its moment: none went as it came"
    );
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "10000"]), 1);
    let on_master = snapshot(&mut con, "sku:1");
    assert_eq!(
        snapshot(&mut replica_con, "sku:1"),
        on_master,
        "replica differs"
    );
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
    // Let lapse now, rather than wait for a deadline and the sweep: no
    // sweep after a restart then changes the item under the test.
    hold_for(con, "sku:1", "dave", "lapsed", 600_000);
    assert_eq!(ok::<i64>(con, &["SECKILL.RELEASE", "sku:1", "lapsed"]), 1);
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

/// 5,000 holds lapse at the same moment; the very next write must see all
/// of them released, not just the first step's worth.
#[test]
fn a_write_after_thousands_of_lapses_sees_all_the_stock_back() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:3", "5000"]);
    let deadline = server_now_ms(&mut con) + 2_000;
    place_holds(&mut con, "sku:3", 5_000, Some("buyer"), deadline);
    assert_eq!(info_field(&mut con, "sku:3", "holds"), 5_000);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:3"]), 0);

    let replies = right_after_deadline(
        &mut con,
        deadline,
        &[
            strings(&["SECKILL.GET", "sku:3"]),
            strings(&["SECKILL.DEDUCT", "sku:3", "bigbuyer", "3000"]),
        ],
    );
    assert_eq!(replies[0], Value::Int(5_000), "GET right after the lapse");
    assert_eq!(
        replies[1],
        Value::Int(2_000),
        "DEDUCT of 3,000 units right after 5,000 holds lapsed (GET said 5,000 were there)"
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:3"]), 2_000);
    assert_eq!(info_field(&mut con, "sku:3", "expired"), 5_000);
}

/// 5,000 users each hold their one allowed unit; after the lapse the last
/// of them holds nothing and may buy again at once.
#[test]
fn a_user_whose_hold_lapsed_among_thousands_may_buy_again_at_once() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:3", "5000", "LIMIT", "1"]);
    let deadline = server_now_ms(&mut con) + 2_000;
    place_holds(&mut con, "sku:3", 5_000, None, deadline);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.BOUGHT", "sku:3", "u4999"]),
        1
    );

    let replies = right_after_deadline(
        &mut con,
        deadline,
        &[
            strings(&["SECKILL.BOUGHT", "sku:3", "u4999"]),
            strings(&["SECKILL.DEDUCT", "sku:3", "u4999", "1"]),
        ],
    );
    assert_eq!(
        replies[0],
        Value::Int(0),
        "BOUGHT u4999 right after the lapse"
    );
    assert_eq!(
        replies[1],
        Value::Int(4_999),
        "DEDUCT by u4999 right after its hold lapsed (BOUGHT said it holds 0 of its LIMIT 1)"
    );
}

/// The item has a hold whose deadline just passed and that nothing has
/// released yet. A DEDUCT that errors must change nothing: not even
/// release that hold (which a later write or the timer will do). The WATCH
/// and the transaction are on the calling connection, in the same pipeline:
/// a watcher elsewhere would see the timer's legitimate release right after.
/// A client's own write to a key it watches aborts its EXEC just the same.
#[test]
fn an_erroring_call_leaves_an_item_with_a_lapsed_hold_untouched() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:8", "10", "LIMIT", "3"]);
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "sku:8", "alice", "1", "ID", "paid"],
    );
    let deadline = server_now_ms(&mut con) + 1_000;
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "sku:8",
            "bob",
            "1",
            "ID",
            "held",
            "HOLDUNTIL",
            &deadline.to_string(),
        ],
    );
    ok::<String>(&mut con, &["CONFIG", "SET", "notify-keyspace-events", "Ed"]);
    let mut listener = server.client();
    let mut pubsub = listener.as_pubsub();
    pubsub
        .psubscribe("__keyevent@0__:seckill.*")
        .expect("psubscribe");
    pubsub.set_read_timeout(Some(PATIENCE)).expect("timeout");

    let replies = right_after_deadline(
        &mut con,
        deadline,
        &[
            strings(&["WATCH", "sku:8"]),
            strings(&["DUMP", "sku:8"]),
            // The request id reused for another quantity: an error.
            strings(&["SECKILL.DEDUCT", "sku:8", "alice", "2", "ID", "paid"]),
            strings(&["DUMP", "sku:8"]),
            // A marker: its event must be the first one seen.
            strings(&["SECKILL.INIT", "marker:8", "1"]),
            strings(&["MULTI"]),
            strings(&["PING"]),
            strings(&["EXEC"]),
        ],
    );
    let line = error_line(&replies[2], "DEDUCT reusing a request id");
    assert!(
        line.starts_with("ERR request id was already used"),
        "unexpected error: {line}"
    );
    let first = pubsub.get_message().expect("an event in time");
    let first = (
        first
            .get_channel_name()
            .trim_start_matches("__keyevent@0__:")
            .to_owned(),
        first.get_payload::<String>().unwrap_or_default(),
    );
    let mut problems = Vec::new();
    if replies[1] != replies[3] {
        problems.push("the erroring DEDUCT changed the item (DUMP differs)".to_owned());
    }
    if first != ("seckill.init".to_owned(), "marker:8".to_owned()) {
        problems.push(format!(
            "the erroring DEDUCT fired an event: the first one seen is {first:?}"
        ));
    }
    if replies[7] == Value::Nil {
        problems.push("the erroring DEDUCT aborted a transaction WATCHing the item".to_owned());
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The hold does lapse, all the same.
    wait_until("the hold to be released", PATIENCE, || {
        info_field(&mut con, "sku:8", "expired") == 1
    });
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:8", "bob", "3"]),
        6
    );
}

/// A hold lapsing while clients are paused (CLIENT PAUSE, FAILOVER) is
/// released once the pause ends: replicating during a pause would make
/// Redis abort.
#[test]
fn a_hold_lapsing_during_client_pause_waits_for_the_pause_to_end() {
    let server = Server::start_with(&["--appendonly", "yes"]);
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "{p}", "10", "STREAM", "{p}:o"]);
    let deadline = server_now_ms(&mut con) + 300;
    place_holds(&mut con, "{p}", 1, None, deadline);
    ok::<String>(&mut con, &["CLIENT", "PAUSE", "1500", "WRITE"]);
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(ok::<String>(&mut con, &["PING"]), "PONG");
    assert_eq!(
        ok::<i64>(&mut con, &["XLEN", "{p}:o"]),
        1,
        "nothing released while paused"
    );
    ok::<String>(&mut con, &["CLIENT", "UNPAUSE"]);
    wait_until("the release after the pause", PATIENCE, || {
        ok::<i64>(&mut con, &["XLEN", "{p}:o"]) == 2
    });
    assert!(server.is_running());
}

/// Waits until `seckill.expire` fired for every (db, key) of `expected`,
/// or the deadline passes; returns what was seen.
fn expire_events(
    pubsub: &mut redis::PubSub,
    expected: &[(i64, &str)],
    until: Instant,
) -> BTreeSet<(i64, String)> {
    let mut seen = BTreeSet::new();
    while Instant::now() < until {
        let all_seen = expected
            .iter()
            .all(|(db, key)| seen.contains(&(*db, key.to_string())));
        if all_seen {
            break;
        }
        let left = until.saturating_duration_since(Instant::now());
        pubsub
            .set_read_timeout(Some(left.max(Duration::from_millis(10))))
            .expect("timeout");
        let Ok(message) = pubsub.get_message() else {
            break;
        };
        let channel = message.get_channel_name().to_owned();
        let db = channel
            .strip_prefix("__keyevent@")
            .and_then(|rest| rest.split("__").next())
            .and_then(|db| db.parse::<i64>().ok())
            .unwrap_or(-1);
        let key: String = message.get_payload().unwrap_or_default();
        seen.insert((db, key));
    }
    seen
}

fn expire_entries(con: &mut Connection, stream: &str) -> usize {
    let reply: Vec<(String, Vec<(String, String)>)> = ok(con, &["XRANGE", stream, "-", "+"]);
    reply
        .iter()
        .filter(|(_, fields)| fields.iter().any(|(f, v)| f == "event" && v == "expire"))
        .count()
}

const HOLDS_PER_ITEM: usize = 3;

/// An item `{k}` with an order stream `{k}:o` and three holds lapsing in
/// about 1.5 s goes through `op` before the deadline; nobody writes to it
/// after. Within a few seconds of the deadline the module's timer must
/// release the holds of the item where it now is: each `(db, key)` of
/// `expected` gets a `seckill.expire` event, changes on disk (DUMP), the
/// replica applies SECKILL.RELEASE, and each `(db, stream, entries)` of
/// `streams` holds that many `expire` entries.
fn holds_lapse_where_the_item_went(
    ops: &[&[&str]],
    expected: &[(i64, &str)],
    streams: &[(i64, &str, usize)],
) {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    ok::<String>(&mut con, &["CONFIG", "SET", "notify-keyspace-events", "Ed"]);
    let mut listener = master.client();
    let mut pubsub = listener.as_pubsub();
    pubsub
        .psubscribe("__keyevent@*__:seckill.expire")
        .expect("psubscribe");

    ok::<i64>(&mut con, &["SECKILL.INIT", "{k}", "10", "STREAM", "{k}:o"]);
    let deadline = server_now_ms(&mut con) + 1_500;
    place_holds(&mut con, "{k}", HOLDS_PER_ITEM, None, deadline);
    for op in ops {
        ok::<Value>(&mut con, op);
    }
    let mut before = Vec::new();
    for (db, key) in expected {
        let mut db_con = client_db(&master, *db);
        assert_eq!(
            info_field(&mut db_con, key, "holds"),
            HOLDS_PER_ITEM as i64,
            "db {db} {key} before the deadline"
        );
        before.push(dump(&mut db_con, key));
    }
    assert!(
        server_now_ms(&mut con) < deadline,
        "the machine is too slow for this test: {ops:?} ran after the deadline"
    );

    let until = Instant::now() + Duration::from_millis(1_500) + Duration::from_secs(6);
    let seen = expire_events(&mut pubsub, expected, until);
    let missing: Vec<_> = expected
        .iter()
        .filter(|(db, key)| !seen.contains(&(*db, key.to_string())))
        .collect();
    assert!(
        missing.is_empty(),
        "after {ops:?}, no seckill.expire for (db, key) {missing:?} within 6 s of the deadline; \
         events seen: {seen:?}"
    );
    for ((db, key), before) in expected.iter().zip(&before) {
        let mut db_con = client_db(&master, *db);
        assert_ne!(
            &dump(&mut db_con, key),
            before,
            "db {db} {key}: the holds were reported released but the item did not change"
        );
        assert_eq!(
            info_field(&mut db_con, key, "expired"),
            HOLDS_PER_ITEM as i64
        );
        assert_eq!(ok::<i64>(&mut db_con, &["SECKILL.GET", key]), 10);
    }
    for (db, stream, entries) in streams {
        let mut db_con = client_db(&master, *db);
        assert_eq!(
            expire_entries(&mut db_con, stream),
            *entries,
            "`expire` entries in db {db} {stream}"
        );
    }
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "10000"]), 1);
    let mut replica_con = replica.client();
    assert!(
        command_calls(&mut replica_con, "seckill.release") >= expected.len() as i64,
        "the replica was not sent SECKILL.RELEASE for every item"
    );
    for (db, key) in expected {
        assert_eq!(
            snapshot(&mut client_db(&replica, *db), key),
            snapshot(&mut client_db(&master, *db), key),
            "db {db} {key} differs on the replica"
        );
    }
}

#[test]
fn holds_of_a_renamed_item_lapse_by_the_timer() {
    holds_lapse_where_the_item_went(
        &[&["RENAME", "{k}", "{k}new"]],
        &[(0, "{k}new")],
        &[(0, "{k}:o", HOLDS_PER_ITEM)],
    );
}

#[test]
fn holds_of_an_item_moved_to_another_db_lapse_by_the_timer() {
    holds_lapse_where_the_item_went(&[&["MOVE", "{k}", "1"]], &[(1, "{k}")], &[]);
}

#[test]
fn holds_of_an_item_and_of_its_copy_both_lapse_by_the_timer() {
    // A copy's stream is unconfirmed until someone allowed to write it
    // names it again: the sweep cannot vouch for it.
    holds_lapse_where_the_item_went(
        &[
            &["COPY", "{k}", "{k}copy"],
            &["SECKILL.STREAM", "{k}copy", "{k}:o"],
        ],
        &[(0, "{k}"), (0, "{k}copy")],
        &[(0, "{k}:o", 2 * HOLDS_PER_ITEM)],
    );
}

#[test]
fn holds_of_an_item_in_a_swapped_db_lapse_by_the_timer() {
    holds_lapse_where_the_item_went(
        &[&["SWAPDB", "0", "1"]],
        &[(1, "{k}")],
        &[(1, "{k}:o", HOLDS_PER_ITEM)],
    );
}

/// A rename or move noted for the timer, then SWAPDB before its next step
/// (in one transaction, or one replication batch): the timer still finds
/// the item, in the database it was swapped to.
#[test]
fn a_moved_item_swapped_before_the_next_timer_step_is_still_swept() {
    let server = Server::start();
    let mut con = server.client();
    ok::<String>(&mut con, &["CONFIG", "SET", "notify-keyspace-events", "Ed"]);
    let mut listener = server.client();
    let mut pubsub = listener.as_pubsub();
    pubsub
        .psubscribe("__keyevent@*__:seckill.expire")
        .expect("psubscribe");
    ok::<i64>(&mut con, &["SECKILL.INIT", "k", "100"]);
    let deadline = server_now_ms(&mut con) + 1_000;
    place_holds(&mut con, "k", 1, None, deadline);
    let _: Vec<Value> = redis::pipe()
        .atomic()
        .cmd("MOVE")
        .arg("k")
        .arg(1)
        .cmd("SWAPDB")
        .arg(0)
        .arg(1)
        .query(&mut con)
        .expect("MOVE then SWAPDB");
    let until = Instant::now() + Duration::from_millis(1_000) + Duration::from_secs(6);
    let seen = expire_events(&mut pubsub, &[(0, "k")], until);
    assert!(
        seen.contains(&(0, "k".to_owned())),
        "no seckill.expire for db 0 k: {seen:?}"
    );
}
