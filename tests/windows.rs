//! Sale windows: DEDUCT answers -5 before START and -6 from END on, and a
//! purchase the master accepted inside the window stays accepted wherever it
//! is replayed, whatever the clock says there.

mod common;

use common::{info_field, ok, server_now_ms, snapshot, wait_until, Server};
use std::time::Duration;

/// 2100-01-01, in Unix milliseconds: a START that has not come yet.
const FUTURE_MS: &str = "4102444800000";

#[test]
fn a_sale_that_has_not_started_refuses_and_records_nothing() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(
        &mut con,
        &["SECKILL.INIT", "sku:1", "10", "START", FUTURE_MS],
    );
    let reply: i64 = ok(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "alice", "1", "ID", "r1"],
    );
    assert_eq!(reply, -5);
    assert_eq!(info_field(&mut con, "sku:1", "sold"), 0);
    assert_eq!(info_field(&mut con, "sku:1", "requests"), 0);
    assert_eq!(info_field(&mut con, "sku:1", "start"), 4102444800000);
    // The id was not used: once the window opens it buys.
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.WINDOW", "sku:1", "0", "0"]),
        1
    );
    let reply: i64 = ok(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "alice", "1", "ID", "r1"],
    );
    assert_eq!(reply, 9);
}

#[test]
fn a_sale_that_has_ended_refuses_but_answers_replays() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "10"]);
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "alice", "1", "ID", "r1"],
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.WINDOW", "sku:1", "0", "1"]),
        1
    );
    assert_eq!(info_field(&mut con, "sku:1", "end"), 1);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "bob", "1"]),
        -6
    );
    let replay: i64 = ok(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "alice", "1", "ID", "r1"],
    );
    assert_eq!(
        replay, 9,
        "a retry of a purchase made in time keeps its answer"
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.WINDOW", "nope", "0", "1"]),
        -3
    );
}

#[test]
fn the_window_survives_reload_and_copy() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.INIT",
            "sku:1",
            "10",
            "START",
            "1000",
            "END",
            FUTURE_MS,
        ],
    );
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "alice", "1"]);
    let before = snapshot(&mut con, "sku:1");
    ok::<String>(&mut con, &["DEBUG", "RELOAD"]);
    assert_eq!(snapshot(&mut con, "sku:1"), before);
    ok::<i64>(&mut con, &["COPY", "sku:1", "sku:2"]);
    assert_eq!(info_field(&mut con, "sku:2", "start"), 1000);
    assert_eq!(info_field(&mut con, "sku:2", "end"), 4102444800000);
}

#[test]
fn an_aof_replay_after_the_window_closed_keeps_every_purchase() {
    let mut server = Server::start_with(&["--appendonly", "yes"]);
    let mut con = server.client();
    let end = server_now_ms(&mut con) + 1_500;
    let end_arg = end.to_string();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "10", "END", &end_arg]);
    for user in ["alice", "bob", "carol"] {
        let reply: i64 = ok(&mut con, &["SECKILL.DEDUCT", "sku:1", user, "1"]);
        assert!(reply >= 0, "{user} could not buy inside the window");
    }
    let before = snapshot(&mut con, "sku:1");
    wait_until("the window to close", Duration::from_secs(10), || {
        server_now_ms(&mut con) > end
    });
    server.restart();
    let mut con = server.client();
    assert_eq!(
        snapshot(&mut con, "sku:1"),
        before,
        "replaying the AOF after END must not refuse what the master accepted"
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "dave", "1"]),
        -6
    );
}
