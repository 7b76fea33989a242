//! The order stream: every purchase, hold, confirmation, refund and lapse is
//! appended to the item's stream in the same atomic step, exactly once, and
//! replicas and AOF replays hold the very same entries.
//! Also: a stream that cannot take the event (a sale, a settlement or a
//! lapse needing more IDs than it has left) refuses the write or keeps the
//! hold and retries, changing nothing and leaving a WATCH on the stream
//! alone; one `expire` entry per lapsed hold, even when RELEASE names it;
//! and a stream key holding another type is refused.
//!
//! Where a test depends on the module's timer not running between two
//! commands, it sends them in one pipeline after `DEBUG SLEEP`: the server
//! runs every command of a pipeline it read at once before it looks at its
//! timers again.

mod common;

use common::{
    dump, error, error_line, info_field, ok, place_holds, right_after_deadline, run, server_info,
    server_now_ms, strings, wait_until, Server, PATIENCE,
};
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
    // The sweep releases the lapsed hold; writes leave others' to it.
    common::wait_until(
        "the sweep releases carol's hold",
        Duration::from_secs(10),
        || ok::<i64>(&mut con, &["XLEN", STREAM]) == 6,
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
    // A hold carries its deadline; no other kind has the field.
    let until: Vec<Option<&str>> = all
        .iter()
        .map(|(_, fields)| fields.get("until").map(String::as_str))
        .collect();
    assert_eq!(
        until,
        [
            None,
            Some("4102444800000"),
            None,
            None,
            Some("1"),
            None,
            None
        ]
    );
}

#[test]
fn a_relative_hold_carries_the_deadline_holds_reports() {
    let server = Server::start();
    let mut con = server.client();
    init_with_stream(&mut con, &[]);
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            ITEM,
            "alice",
            "1",
            "ID",
            "r1",
            "HOLD",
            "900",
        ],
    );
    let holds: Vec<(String, String, i64, i64)> = ok(&mut con, &["SECKILL.HOLDS", ITEM]);
    let [(_, _, _, deadline)] = holds[..] else {
        panic!("one hold: {holds:?}");
    };
    let all = entries(&mut con);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].1["event"], "hold");
    assert_eq!(all[0].1["until"], deadline.to_string());
    let at: i64 = all[0].1["at"].parse().expect("at is Unix ms");
    assert!(
        (at + 899_000..=at + 901_000).contains(&deadline),
        "at {at}, deadline {deadline}"
    );
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
    let slot_error = "ERR the order stream must hash to the item's slot: name it after the item \
                      in braces (sku:1 and {sku:1}:orders), or give both keys one hash tag \
                      ({sku:1} and {sku:1}:orders)";
    assert_eq!(
        error(
            &mut con,
            &["SECKILL.INIT", "sku:1", "10", "STREAM", "orders"]
        ),
        slot_error
    );
    // As the error says: an item with no hash tag takes its whole name in
    // braces, and a purchase writes there.
    let untagged: i64 = ok(
        &mut con,
        &["SECKILL.INIT", "sku:1", "10", "STREAM", "{sku:1}:orders"],
    );
    assert_eq!(untagged, 1);
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "ann", "1"]);
    assert_eq!(ok::<i64>(&mut con, &["XLEN", "{sku:1}:orders"]), 1);
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
    // Past the key, a malformed tail is a syntax error, as SET's is.
    for tail in [
        &[STREAM, "MAXLEN"][..],
        &[STREAM, "MAXLEN", "100", "MAXLEN"],
        &[STREAM, "COUNT", "100"],
    ] {
        let mut call = vec!["SECKILL.STREAM", ITEM];
        call.extend_from_slice(tail);
        assert_eq!(error(&mut con, &call), "ERR syntax error", "{call:?}");
    }
    assert_eq!(
        error(&mut con, &["SECKILL.STREAM"]),
        "ERR wrong number of arguments for 'seckill.stream' command"
    );

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

const LAST_ID: &str = "18446744073709551615-18446744073709551615";

/// Closes the order stream: its last ID is the largest there is, so no
/// entry can be appended after it.
fn exhaust(con: &mut Connection, stream: &str) {
    ok::<String>(con, &["XADD", stream, LAST_ID, "f", "v"]);
}

/// Each call must fail with an ERR error and leave the item, its stock
/// and its stream as they were: the order event is part of the sale.
fn assert_refused_without_change(
    con: &mut Connection,
    item: &str,
    stream: &str,
    calls: &[&[&str]],
) {
    let mut problems = Vec::new();
    for args in calls {
        let (item_before, len_before, stock_before) = (
            dump(con, item),
            ok::<i64>(con, &["XLEN", stream]),
            ok::<i64>(con, &["SECKILL.GET", item]),
        );
        match run::<Value>(con, args) {
            Err(err) if err.code() == Some("ERR") => {}
            other => problems.push(format!("{args:?} should fail with ERR, got {other:?}")),
        }
        if dump(con, item) != item_before {
            problems.push(format!("{args:?} changed the item"));
        }
        if ok::<i64>(con, &["SECKILL.GET", item]) != stock_before {
            problems.push(format!("{args:?} changed the stock"));
        }
        if ok::<i64>(con, &["XLEN", stream]) != len_before {
            problems.push(format!("{args:?} changed the stream's length"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_sale_whose_order_event_cannot_be_written_fails_and_changes_nothing() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "{s}", "10", "STREAM", "{s}:o"]);
    exhaust(&mut con, "{s}:o");
    assert_refused_without_change(
        &mut con,
        "{s}",
        "{s}:o",
        &[
            &["SECKILL.DEDUCT", "{s}", "u", "1"],
            &["SECKILL.DEDUCT", "{s}", "u", "1", "ID", "r1"],
            &[
                "SECKILL.DEDUCT",
                "{s}",
                "u",
                "1",
                "ID",
                "r2",
                "HOLDUNTIL",
                "4102444800000",
            ],
        ],
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "{s}"]), 10);
    assert_eq!(ok::<i64>(&mut con, &["XLEN", "{s}:o"]), 1);
}

#[test]
fn settling_a_hold_whose_order_event_cannot_be_written_fails_and_changes_nothing() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "{s}", "10", "STREAM", "{s}:o"]);
    for (user, id) in [
        ("alice", "to-confirm"),
        ("bob", "to-refund"),
        ("carol", "to-release"),
    ] {
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.DEDUCT",
                "{s}",
                user,
                "1",
                "ID",
                id,
                "HOLDUNTIL",
                "4102444800000",
            ],
        );
    }
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "{s}", "dave", "2", "ID", "bought"],
    );
    exhaust(&mut con, "{s}:o");
    assert_refused_without_change(
        &mut con,
        "{s}",
        "{s}:o",
        &[
            &["SECKILL.CONFIRM", "{s}", "to-confirm"],
            &["SECKILL.REFUND", "{s}", "to-refund"],
            &["SECKILL.RELEASE", "{s}", "to-release"],
            &["SECKILL.REFUND", "{s}", "bought"],
        ],
    );
    assert_eq!(info_field(&mut con, "{s}", "holds"), 3);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "{s}"]), 5);
}

/// A write whose events do not all fit in the stream's last IDs is refused
/// before it appends any: the stream's last ID and its count of entries
/// ever added stay as they were.
#[test]
fn a_write_with_two_events_and_one_id_left_leaves_the_stream_untouched() {
    let server = Server::start();
    let mut con = server.client();
    // One unit, taken by the hold: the sale must release it first.
    ok::<i64>(&mut con, &["SECKILL.INIT", "{z}", "1", "STREAM", "{z}:o"]);
    let deadline = server_now_ms(&mut con) + 1_000;
    place_holds(&mut con, "{z}", 1, None, deadline);
    ok::<String>(
        &mut con,
        &[
            "XADD",
            "{z}:o",
            "18446744073709551615-18446744073709551614",
            "f",
            "v",
        ],
    );
    let stream_before = dump(&mut con, "{z}:o");
    let item_before = dump(&mut con, "{z}");
    // The dumps go in the same pipeline: the timer may release the hold
    // (one entry, which fits) as soon as the pipeline is done.
    let replies = right_after_deadline(
        &mut con,
        deadline,
        &[
            strings(&["SECKILL.DEDUCT", "{z}", "buyer", "1", "ID", "b"]),
            strings(&["DUMP", "{z}:o"]),
            strings(&["DUMP", "{z}"]),
        ],
    );
    let refused = error_line(&replies[0], "a sale needing two entries");
    assert!(refused.starts_with("ERR"), "{refused}");
    assert_eq!(replies[1], stream_before);
    assert_eq!(replies[2], item_before);
}

/// A refused sale leaves a WATCH on its order stream alone.
#[test]
fn a_sale_refused_by_a_full_stream_leaves_a_watch_on_the_stream_alone() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "{w}", "10", "STREAM", "{w}:o"]);
    ok::<String>(
        &mut con,
        &[
            "XADD",
            "{w}:o",
            "18446744073709551615-18446744073709551615",
            "f",
            "v",
        ],
    );
    let mut watcher = server.client();
    ok::<String>(&mut watcher, &["WATCH", "{w}:o"]);
    let refused = error(&mut con, &["SECKILL.DEDUCT", "{w}", "u", "1"]);
    assert!(refused.starts_with("ERR"), "{refused}");
    let (exec,): (Value,) = redis::pipe()
        .atomic()
        .cmd("PING")
        .ignore()
        .query(&mut watcher)
        .map(|()| (Value::Okay,))
        .unwrap_or((Value::Nil,));
    assert_eq!(exec, Value::Okay, "EXEC was aborted");
}

#[test]
fn a_stream_key_holding_another_type_is_refused_when_declared() {
    let server = Server::start();
    let mut con = server.client();
    ok::<String>(&mut con, &["SET", "{k}:o", "not a stream"]);
    let refused = error(&mut con, &["SECKILL.INIT", "{k}", "10", "STREAM", "{k}:o"]);
    assert!(
        refused.starts_with("WRONGTYPE"),
        "INIT with a string as stream: {refused}"
    );
    assert_eq!(
        ok::<i64>(&mut con, &["EXISTS", "{k}"]),
        0,
        "INIT created the item anyway"
    );

    ok::<i64>(&mut con, &["SECKILL.INIT", "{k}", "10"]);
    let before = dump(&mut con, "{k}");
    let refused = error(&mut con, &["SECKILL.STREAM", "{k}", "{k}:o"]);
    assert!(
        refused.starts_with("WRONGTYPE"),
        "STREAM naming a string: {refused}"
    );
    assert_eq!(
        dump(&mut con, "{k}"),
        before,
        "STREAM changed the item anyway"
    );
    assert_eq!(ok::<String>(&mut con, &["GET", "{k}:o"]), "not a stream");
}

/// RELEASE of a hold that lapsed but is not released yet finds it released
/// already, as reads report it: one `expire` entry per hold, never two.
#[test]
fn releasing_a_lapsed_hold_by_id_writes_no_second_expire_event() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "{r}", "10", "STREAM", "{r}:o"]);
    let deadline = server_now_ms(&mut con) + 1_000;
    place_holds(&mut con, "{r}", 2, None, deadline);
    let replies = right_after_deadline(
        &mut con,
        deadline,
        &[strings(&["SECKILL.RELEASE", "{r}", "h0"])],
    );
    assert_eq!(
        replies[0],
        Value::Int(0),
        "a lapsed hold is released already"
    );
    wait_until("both releases", PATIENCE, || {
        ok::<i64>(&mut con, &["XLEN", "{r}:o"]) >= 4
    });
    std::thread::sleep(Duration::from_millis(300));
    let entries: Vec<(String, Vec<(String, String)>)> =
        ok(&mut con, &["XRANGE", "{r}:o", "-", "+"]);
    let expires: Vec<&String> = entries
        .iter()
        .flat_map(|(_, fields)| fields.iter())
        .filter(|(field, _)| field == "request")
        .map(|(_, value)| value)
        .collect();
    assert_eq!(expires, ["h0", "h1", "h0", "h1"], "{entries:?}");
}

/// A lapse whose `expire` event the stream cannot take is not made without
/// it: the hold stays pending underneath (reads count it as released
/// anyway) and the timer retries, releasing it once the stream can take
/// the event again. One hold's single event is appended without asking the
/// stream first; several lapsing together are checked for room before the
/// first is appended (and a stream found roomy is not asked again within
/// the sweep's step).
#[test]
fn the_timer_keeps_a_lapsed_hold_whose_event_cannot_be_written_and_retries() {
    for holds in [1, 5] {
        the_timer_keeps_lapsed_holds_whose_events_cannot_be_written(holds);
    }
}

fn the_timer_keeps_lapsed_holds_whose_events_cannot_be_written(holds: usize) {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "{t}", "10", "STREAM", "{t}:o"]);
    let deadline = server_now_ms(&mut con) + 300;
    place_holds(&mut con, "{t}", holds, None, deadline);
    ok::<String>(
        &mut con,
        &[
            "XADD",
            "{t}:o",
            "18446744073709551615-18446744073709551615",
            "f",
            "v",
        ],
    );
    let before: Vec<String> = ok(&mut con, &["DEBUG", "DIGEST-VALUE", "{t}"]);
    std::thread::sleep(Duration::from_millis(1_500));
    let after: Vec<String> = ok(&mut con, &["DEBUG", "DIGEST-VALUE", "{t}"]);
    assert_eq!(after, before, "the hold was released without its event");
    assert_eq!(
        info_field(&mut con, "{t}", "holds"),
        0,
        "reads see it lapsed"
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "{t}"]), 10);
    // A fresh stream takes the events: the retry releases the holds, each
    // with its event.
    ok::<i64>(&mut con, &["DEL", "{t}:o"]);
    wait_until("the retried release", PATIENCE, || {
        ok::<i64>(&mut con, &["XLEN", "{t}:o"]) == holds as i64
    });
    let released: Vec<String> = ok(&mut con, &["DEBUG", "DIGEST-VALUE", "{t}"]);
    assert_ne!(released, before);
}
