//! The order stream: every purchase, hold, confirmation, refund and lapse is
//! appended to the item's stream in the same atomic step, exactly once, and
//! replicas and AOF replays hold the very same entries.

mod common;

use common::{error, ok, server_info, wait_until, Server};
use redis::{Connection, Value};
use std::collections::HashMap;
use std::time::Duration;

const ITEM: &str = "{sku:1}";
const STREAM: &str = "{sku:1}:orders";

type Entry = (String, HashMap<String, String>);

fn entries(con: &mut Connection) -> Vec<Entry> {
    let reply: Vec<(String, Vec<(String, String)>)> = ok(con, &["XRANGE", STREAM, "-", "+"]);
    reply
        .into_iter()
        .map(|(id, fields)| (id, fields.into_iter().collect()))
        .collect()
}

fn kinds(con: &mut Connection) -> Vec<String> {
    entries(con)
        .into_iter()
        .map(|(_, fields)| fields["event"].clone())
        .collect()
}

fn init_with_stream(con: &mut Connection, extra: &[&str]) {
    let mut args = vec!["SECKILL.INIT", ITEM, "10", "LIMIT", "2", "STREAM", STREAM];
    args.extend_from_slice(extra);
    assert_eq!(ok::<i64>(con, &args), 1);
}

#[test]
fn every_event_kind_is_written_once_with_its_fields() {
    let server = Server::start();
    let mut con = server.client();
    init_with_stream(&mut con, &[]);
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", ITEM, "alice", "1", "ID", "r1"],
    );
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            ITEM,
            "bob",
            "2",
            "ID",
            "r2",
            "HOLDUNTIL",
            "4102444800000",
        ],
    );
    ok::<i64>(&mut con, &["SECKILL.CONFIRM", ITEM, "r2"]);
    ok::<i64>(&mut con, &["SECKILL.REFUND", ITEM, "r1"]);
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            ITEM,
            "carol",
            "1",
            "ID",
            "r3",
            "HOLDUNTIL",
            "1",
        ],
    );
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", ITEM, "dave", "1"]);
    assert_eq!(
        kinds(&mut con),
        ["purchase", "hold", "confirm", "refund", "hold", "expire", "purchase"]
    );
    let all = entries(&mut con);
    let time: Vec<i64> = ok(&mut con, &["TIME"]);
    let now_ms = time[0] * 1000 + time[1] / 1000;
    let expect = |index: usize, user: &str, qty: &str, request: &str, stock: &str| {
        let fields = &all[index].1;
        assert_eq!(fields["item"], ITEM);
        assert_eq!(fields["user"], user, "entry {index}");
        assert_eq!(fields["qty"], qty, "entry {index}");
        assert_eq!(fields["request"], request, "entry {index}");
        assert_eq!(fields["stock"], stock, "entry {index}");
        let at: i64 = fields["at"].parse().expect("at is Unix ms");
        assert!(
            (now_ms - 60_000..=now_ms).contains(&at),
            "entry {index} at {at}"
        );
    };
    expect(0, "alice", "1", "r1", "9");
    expect(1, "bob", "2", "r2", "7");
    expect(2, "bob", "2", "r2", "7");
    expect(3, "alice", "1", "r1", "8");
    expect(4, "carol", "1", "r3", "7");
    expect(5, "carol", "1", "r3", "8");
    expect(6, "dave", "1", "", "7");
}

#[test]
fn rejected_and_replayed_calls_write_nothing() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(
        &mut con,
        &["SECKILL.INIT", ITEM, "1", "LIMIT", "1", "STREAM", STREAM],
    );
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", ITEM, "alice", "1", "ID", "r1"],
    );
    let before = entries(&mut con);
    assert_eq!(before.len(), 1);
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", ITEM, "alice", "1", "ID", "r1"],
    ); // replay
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", ITEM, "bob", "1"]); // sold out
    ok::<i64>(&mut con, &["SECKILL.CONFIRM", ITEM, "r1"]); // already final
    ok::<i64>(&mut con, &["SECKILL.REFUND", ITEM, "unknown"]);
    let _ = error(&mut con, &["SECKILL.DEDUCT", ITEM, "bob", "0"]);
    ok::<i64>(&mut con, &["SECKILL.ADD", ITEM, "1"]);
    assert_eq!(entries(&mut con), before);
}

#[test]
fn maxlen_trims_the_stream_exactly() {
    let server = Server::start();
    let mut con = server.client();
    init_with_stream(&mut con, &["MAXLEN", "3"]);
    for n in 0..5 {
        ok::<i64>(
            &mut con,
            &["SECKILL.DEDUCT", ITEM, &format!("user:{n}"), "1"],
        );
    }
    let users: Vec<String> = entries(&mut con)
        .into_iter()
        .map(|(_, fields)| fields["user"].clone())
        .collect();
    assert_eq!(users, ["user:2", "user:3", "user:4"]);
}

#[test]
fn the_stream_must_share_the_items_slot_and_be_a_stream() {
    let server = Server::start();
    let mut con = server.client();
    let slot_error = "ERR the order stream must hash to the item's slot: give both keys the same \
                      hash tag, e.g. {sku:1} and {sku:1}:orders";
    assert_eq!(
        error(
            &mut con,
            &["SECKILL.INIT", "sku:1", "10", "STREAM", "orders"]
        ),
        slot_error
    );
    assert_eq!(
        error(&mut con, &["SECKILL.INIT", ITEM, "10", "STREAM", ITEM]),
        "ERR the order stream cannot be the item's own key"
    );
    assert_eq!(
        error(&mut con, &["SECKILL.INIT", ITEM, "10", "MAXLEN", "5"]),
        "ERR syntax error"
    );
    assert_eq!(
        error(
            &mut con,
            &["SECKILL.INIT", ITEM, "10", "STREAM", STREAM, "MAXLEN", "-1"]
        ),
        "ERR MAXLEN must be a non-negative integer"
    );
    assert_eq!(ok::<i64>(&mut con, &["EXISTS", ITEM]), 0);

    // Set, inspect and clear on a live item.
    ok::<i64>(&mut con, &["SECKILL.INIT", ITEM, "10"]);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.STREAM", ITEM, STREAM, "MAXLEN", "100"]),
        1
    );
    let info: HashMap<String, Value> = ok(&mut con, &["SECKILL.INFO", ITEM]);
    assert_eq!(
        info["stream"],
        Value::BulkString(STREAM.as_bytes().to_vec())
    );
    assert_eq!(info["stream_maxlen"], Value::Int(100));
    assert_eq!(
        error(&mut con, &["SECKILL.STREAM", ITEM, "elsewhere"]),
        slot_error
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.STREAM", "nope"]), -3);

    // A stream key holding something else refuses the sale, changing nothing.
    ok::<String>(&mut con, &["SET", STREAM, "not a stream"]);
    let wrongtype = "WRONGTYPE the item's order stream key holds the wrong kind of value";
    assert_eq!(
        error(&mut con, &["SECKILL.DEDUCT", ITEM, "alice", "1"]),
        wrongtype
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", ITEM]), 10);

    assert_eq!(ok::<i64>(&mut con, &["SECKILL.STREAM", ITEM]), 1);
    let info: HashMap<String, Value> = ok(&mut con, &["SECKILL.INFO", ITEM]);
    assert_eq!(info["stream"], Value::Nil);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", ITEM, "alice", "1"]),
        9
    );
}

#[test]
fn a_blocked_reader_wakes_up_for_a_purchase() {
    let server = Server::start();
    let mut con = server.client();
    init_with_stream(&mut con, &[]);
    let url = server.url();
    let reader = std::thread::spawn(move || {
        let mut con = redis::Client::open(url)
            .and_then(|client| client.get_connection())
            .expect("connect");
        let reply: Value = redis::cmd("XREAD")
            .arg("BLOCK")
            .arg(10_000)
            .arg("STREAMS")
            .arg(STREAM)
            .arg("$")
            .query(&mut con)
            .expect("XREAD");
        reply
    });
    wait_until("the reader to block", Duration::from_secs(10), || {
        server_info(&mut server.client(), "clients", "blocked_clients").as_deref() == Some("1")
    });
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", ITEM, "alice", "1"]);
    let reply = reader.join().expect("reader");
    assert_ne!(reply, Value::Nil, "the blocked reader was not woken");
}

#[test]
fn replica_and_aof_hold_the_same_stream() {
    let mut master = Server::start_with(&["--appendonly", "yes"]);
    let replica = Server::start_replica_of(&master);
    let mut replica_con = replica.client();
    let mut con = master.client();
    init_with_stream(&mut con, &["MAXLEN", "50"]);
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", ITEM, "alice", "1", "ID", "r1"],
    );
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            ITEM,
            "bob",
            "1",
            "ID",
            "r2",
            "HOLD",
            "600",
        ],
    );
    ok::<i64>(&mut con, &["SECKILL.CONFIRM", ITEM, "r2"]);
    let time: Vec<i64> = ok(&mut con, &["TIME"]);
    let soon = (time[0] * 1000 + time[1] / 1000 + 300).to_string();
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            ITEM,
            "carol",
            "1",
            "ID",
            "r3",
            "HOLDUNTIL",
            &soon,
        ],
    );
    ok::<i64>(&mut con, &["SECKILL.REFUND", ITEM, "r1"]);
    // The sweep lets carol's hold lapse with nobody writing.
    wait_until("the lapse to be written", Duration::from_secs(10), || {
        kinds(&mut master.client()).last().map(String::as_str) == Some("expire")
    });
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "10000"]), 1);
    let on_master = entries(&mut con);
    assert_eq!(on_master.len(), 6);
    assert_eq!(entries(&mut replica_con), on_master, "replica differs");
    master.restart();
    assert_eq!(
        entries(&mut master.client()),
        on_master,
        "AOF replay differs"
    );
}

#[test]
fn a_rejected_sale_leaves_a_watch_on_the_stream_alone() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", ITEM, "0", "STREAM", STREAM]);
    ok::<String>(&mut con, &["XADD", STREAM, "*", "event", "opened"]);
    let mut watcher = server.client();
    ok::<String>(&mut watcher, &["WATCH", STREAM]);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", ITEM, "alice", "1"]),
        -1
    );
    let exec: Value = redis::pipe()
        .atomic()
        .cmd("XLEN")
        .arg(STREAM)
        .query(&mut watcher)
        .expect("EXEC");
    assert_ne!(exec, Value::Nil, "a sold-out DEDUCT touched the stream");
}
