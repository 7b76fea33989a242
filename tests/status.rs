//! SECKILL.STATUS: where one purchase stands, for a payment flow that must
//! tell a hold from a paid order, a refunded one and a lapsed one, on the
//! master and on its replicas alike.

mod common;

use common::{info_field, ok, server_now_ms, Server};
use redis::{Connection, Value};
use std::time::{Duration, Instant};

/// STATUS as (status, user, qty, deadline); None for no such item.
fn status(con: &mut Connection, key: &str, id: &str) -> Option<(String, Option<String>, i64, i64)> {
    let reply: Value = ok(con, &["SECKILL.STATUS", key, id]);
    let fields: Vec<Value> = match reply {
        Value::Nil => return None,
        Value::Array(fields) => fields,
        Value::Map(pairs) => pairs.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        other => panic!("STATUS replied {other:?}"),
    };
    let text = |value: &Value| match value {
        Value::BulkString(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(text) => Some(text.clone()),
        Value::Nil => None,
        other => panic!("not a string: {other:?}"),
    };
    let integer = |value: &Value| match value {
        Value::Int(n) => *n,
        other => panic!("not an integer: {other:?}"),
    };
    let names: Vec<String> = fields.iter().step_by(2).filter_map(text).collect();
    assert_eq!(names, ["status", "user", "qty", "deadline"]);
    Some((
        text(&fields[1]).expect("a status"),
        text(&fields[3]),
        integer(&fields[5]),
        integer(&fields[7]),
    ))
}

fn named(
    status: &str,
    user: &str,
    qty: i64,
    deadline: i64,
) -> Option<(String, Option<String>, i64, i64)> {
    Some((status.to_owned(), Some(user.to_owned()), qty, deadline))
}

#[test]
fn every_state_of_a_purchase_is_told_apart() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "10", "LIMIT", "5"]);
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "ann", "2", "ID", "plain"],
    );
    let far = "4102444800000";
    for id in ["held", "paid", "cancelled"] {
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.DEDUCT",
                "sku:1",
                "bob",
                "1",
                "ID",
                id,
                "HOLDUNTIL",
                far,
            ],
        );
    }
    ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:1", "paid"]);
    ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", "cancelled"]);

    assert_eq!(
        status(&mut con, "sku:1", "plain"),
        named("purchased", "ann", 2, 0)
    );
    let far: i64 = far.parse().unwrap();
    assert_eq!(
        status(&mut con, "sku:1", "held"),
        named("held", "bob", 1, far)
    );
    assert_eq!(
        status(&mut con, "sku:1", "paid"),
        named("confirmed", "bob", 1, far)
    );
    assert_eq!(
        status(&mut con, "sku:1", "cancelled"),
        named("refunded", "bob", 1, far)
    );
    assert_eq!(
        status(&mut con, "sku:1", "never"),
        Some(("unknown".to_owned(), None, 0, 0))
    );
    assert_eq!(status(&mut con, "sku:none", "plain"), None);

    // Under RESP3 the same fields come as a map.
    let mut resp3 = server.client_resp3();
    let reply: Value = ok(&mut resp3, &["SECKILL.STATUS", "sku:1", "held"]);
    assert!(
        matches!(reply, Value::Map(ref pairs) if pairs.len() == 4),
        "{reply:?}"
    );
    assert_eq!(
        status(&mut resp3, "sku:1", "held"),
        named("held", "bob", 1, far)
    );
}

#[test]
fn a_lapsed_hold_reads_lapsed_before_and_after_the_sweep_releases_it() {
    let server = Server::start();
    let mut con = server.client();
    // The sweep held off: the hold lapses, and waits to be released.
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "seckill.sweep-interval-ms", "60000"],
    );
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:2", "1"]);
    let deadline = server_now_ms(&mut con) + 100;
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "sku:2",
            "cat",
            "1",
            "ID",
            "h1",
            "HOLDUNTIL",
            &deadline.to_string(),
        ],
    );
    assert_eq!(
        status(&mut con, "sku:2", "h1"),
        named("held", "cat", 1, deadline)
    );
    while server_now_ms(&mut con) <= deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        status(&mut con, "sku:2", "h1"),
        named("lapsed", "cat", 1, deadline)
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:2"]), 1);
    // Released by the sweep: still lapsed, the unit back in stock.
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "seckill.sweep-interval-ms", "10"],
    );
    let patience = Instant::now() + Duration::from_secs(10);
    while info_field(&mut con, "sku:2", "expired") == 0 {
        assert!(
            Instant::now() < patience,
            "the sweep did not release the hold"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(ok::<Vec<Value>>(&mut con, &["SECKILL.HOLDS", "sku:2"]).is_empty());
    assert_eq!(
        status(&mut con, "sku:2", "h1"),
        named("lapsed", "cat", 1, deadline)
    );
}

#[test]
fn bad_calls_get_redis_errors() {
    let server = Server::start();
    let mut con = server.client();
    ok::<String>(&mut con, &["SET", "plain", "x"]);
    let error = |con: &mut Connection, args: &[&str]| -> String {
        let mut call = redis::cmd(args[0]);
        for arg in &args[1..] {
            call.arg(*arg);
        }
        match call.query::<Value>(con) {
            Err(err) => err.to_string(),
            Ok(value) => panic!("{args:?} replied {value:?}"),
        }
    };
    assert!(error(&mut con, &["SECKILL.STATUS", "plain", "r1"]).contains("WRONGTYPE"));
    assert!(error(&mut con, &["SECKILL.STATUS", "sku:1"]).contains("wrong number of arguments"));
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "1"]);
    assert!(error(&mut con, &["SECKILL.STATUS", "sku:1", ""]).contains("request id"));
}

#[test]
fn a_replica_tells_the_same_as_its_master() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:3", "5"]);
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "sku:3",
            "dan",
            "1",
            "ID",
            "o1",
            "HOLD",
            "600",
        ],
    );
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "sku:3", "eve", "1", "ID", "o2"],
    );
    let on_master = status(&mut con, "sku:3", "o1");
    let acked: i64 = ok(&mut con, &["WAIT", "1", "5000"]);
    assert_eq!(acked, 1);
    let mut on_replica = replica.client();
    assert_eq!(status(&mut on_replica, "sku:3", "o1"), on_master);
    assert_eq!(
        status(&mut on_replica, "sku:3", "o2"),
        named("purchased", "eve", 1, 0)
    );
}

#[test]
fn detail_tells_a_webhook_refunded_lapsed_and_unknown_apart() {
    let server = Server::start();
    let mut con = server.client();
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "seckill.sweep-interval-ms", "60000"],
    );
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:4", "10"]);
    let deadline = server_now_ms(&mut con) + 100;
    let until = deadline.to_string();
    for id in ["refunded", "lapsed", "paid"] {
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.DEDUCT",
                "sku:4",
                "fay",
                "1",
                "ID",
                id,
                "HOLDUNTIL",
                if id == "lapsed" {
                    &until
                } else {
                    "4102444800000"
                },
            ],
        );
    }
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:4", "refunded", "DETAIL"]),
        1
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:4", "paid", "DETAIL"]),
        1
    );
    while server_now_ms(&mut con) <= deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // Lapsed and not yet released by the sweep, then released: alike.
    for round in ["waiting for the sweep", "released"] {
        let codes = |con: &mut Connection, command: &str| -> Vec<i64> {
            ["refunded", "lapsed", "never"]
                .iter()
                .map(|id| ok(con, &[command, "sku:4", id, "DETAIL"]))
                .collect()
        };
        assert_eq!(codes(&mut con, "SECKILL.CONFIRM"), [-7, -8, -9], "{round}");
        assert_eq!(codes(&mut con, "SECKILL.REFUND"), [-7, -8, -9], "{round}");
        // Without DETAIL, the replies existing callers know.
        for id in ["refunded", "lapsed", "never"] {
            assert_eq!(ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:4", id]), -4);
            assert_eq!(ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:4", id]), 0);
        }
        ok::<i64>(&mut con, &["SECKILL.RELEASE", "sku:4", "lapsed"]);
    }
    // A final purchase is answered as before; a missing item too.
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:4", "paid", "DETAIL"]),
        0
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.CONFIRM", "none", "paid", "DETAIL"]),
        -3
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.REFUND", "none", "paid", "DETAIL"]),
        -3
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:4", "paid", "DETAIL"]),
        1
    );
    // Every unit is back: one refunded, one lapsed, the paid one refunded.
    assert_eq!(info_field(&mut con, "sku:4", "stock"), 10);
    let refused = redis::cmd("SECKILL.CONFIRM")
        .arg(&["sku:4", "paid", "DETAILS"])
        .query::<Value>(&mut con)
        .unwrap_err();
    assert_eq!(
        (refused.code(), refused.detail()),
        (Some("ERR"), Some("syntax error"))
    );
}

#[test]
fn withdeadline_replies_the_hold_s_deadline_with_the_stock() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:5", "3", "LIMIT", "2"]);
    let before = server_now_ms(&mut con);
    let held: (i64, Option<i64>) = ok(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "sku:5",
            "gus",
            "1",
            "ID",
            "h1",
            "HOLD",
            "600",
            "WITHDEADLINE",
        ],
    );
    let after = server_now_ms(&mut con);
    let deadline = held.1.expect("a hold has a deadline");
    assert_eq!(held.0, 2);
    assert!(
        (before + 600_000..=after + 600_000).contains(&deadline),
        "{deadline}"
    );
    assert_eq!(
        status(&mut con, "sku:5", "h1"),
        named("held", "gus", 1, deadline)
    );
    // A retry gets the same reply, deadline included; the keyword goes anywhere.
    let replay: (i64, Option<i64>) = ok(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "sku:5",
            "gus",
            "1",
            "WITHDEADLINE",
            "ID",
            "h1",
            "HOLD",
            "600",
        ],
    );
    assert_eq!(replay, (2, Some(deadline)));
    // A purchase without a hold, and a refusal: no deadline.
    let bought: (i64, Option<i64>) = ok(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "sku:5",
            "gus",
            "1",
            "ID",
            "b1",
            "WITHDEADLINE",
        ],
    );
    assert_eq!(bought, (1, None));
    let refused: (i64, Option<i64>) = ok(
        &mut con,
        &["SECKILL.DEDUCT", "sku:5", "gus", "1", "WITHDEADLINE"],
    );
    assert_eq!(refused, (-2, None));
    let missing: (i64, Option<i64>) = ok(
        &mut con,
        &["SECKILL.DEDUCT", "none", "gus", "1", "WITHDEADLINE"],
    );
    assert_eq!(missing, (-3, None));
    // Once confirmed, the hold no longer has a deadline to pay by.
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:5", "h1"]), 1);
    let paid: (i64, Option<i64>) = ok(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "sku:5",
            "gus",
            "1",
            "ID",
            "h1",
            "HOLD",
            "600",
            "WITHDEADLINE",
        ],
    );
    assert_eq!(paid, (2, None));
    for bad in [
        vec![
            "SECKILL.DEDUCT",
            "sku:5",
            "gus",
            "1",
            "WITHDEADLINE",
            "WITHDEADLINE",
        ],
        vec!["SECKILL.DEDUCT", "sku:5", "gus", "1", "WITHDEADLINE", "ID"],
    ] {
        let err = redis::cmd(bad[0])
            .arg(&bad[1..])
            .query::<Value>(&mut con)
            .unwrap_err();
        assert_eq!(
            (err.code(), err.detail()),
            (Some("ERR"), Some("syntax error")),
            "{bad:?}"
        );
    }
    // Under RESP3 too, and on a replica the call applies as on its master.
    let replica = Server::start_replica_of(&server);
    let mut resp3 = server.client_resp3();
    let reply: Value = ok(
        &mut resp3,
        &[
            "SECKILL.DEDUCT",
            "sku:5",
            "hal",
            "1",
            "ID",
            "h2",
            "HOLD",
            "60",
            "WITHDEADLINE",
        ],
    );
    assert!(
        matches!(reply, Value::Array(ref pair) if pair.len() == 2),
        "{reply:?}"
    );
    // WAIT on the connection that wrote: another's waits for its own
    // last write only, which the replica had before it.
    assert_eq!(ok::<i64>(&mut resp3, &["WAIT", "1", "5000"]), 1);
    let mut on_replica = replica.client();
    assert_eq!(
        status(&mut on_replica, "sku:5", "h2"),
        status(&mut con, "sku:5", "h2")
    );
}
