//! Every row of the command reference, against a real redis-server.

mod common;

use common::{error, info, info_field, ok, run, Server};
use redis::Value;

const UNLIMITED: i64 = i64::MAX;

#[test]
fn init_creates_an_item_once() {
    let server = Server::start();
    let mut con = server.client();
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "10", "LIMIT", "2"]),
        1
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "99"]), 0);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:1"]), 10);
    assert_eq!(info_field(&mut con, "sku:1", "limit"), 2);
    assert_eq!(ok::<String>(&mut con, &["TYPE", "sku:1"]), "seckill--");
}

#[test]
fn init_replace_starts_the_item_over_and_drops_its_ttl() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "10", "EX", "100"]);
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "alice", "3"]);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "5", "REPLACE"]),
        1
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:1"]), 5);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.BOUGHT", "sku:1", "alice"]),
        0
    );
    assert_eq!(ok::<i64>(&mut con, &["TTL", "sku:1"]), -1);
}

#[test]
fn init_without_replace_leaves_an_existing_ttl_alone() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "10", "EX", "100"]);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "10", "EX", "5000"]),
        0
    );
    let ttl: i64 = ok(&mut con, &["TTL", "sku:1"]);
    assert!((1..=100).contains(&ttl), "ttl {ttl}");
}

#[test]
fn init_sets_every_kind_of_expiry() {
    let server = Server::start();
    let mut con = server.client();
    let now_ms: i64 = {
        let time: Vec<i64> = ok(&mut con, &["TIME"]);
        time[0] * 1000 + time[1] / 1000
    };
    ok::<i64>(&mut con, &["SECKILL.INIT", "ex", "1", "EX", "100"]);
    ok::<i64>(&mut con, &["SECKILL.INIT", "px", "1", "PX", "100000"]);
    let exat = (now_ms / 1000 + 100).to_string();
    ok::<i64>(&mut con, &["SECKILL.INIT", "exat", "1", "EXAT", &exat]);
    let pxat = (now_ms + 100_000).to_string();
    ok::<i64>(&mut con, &["SECKILL.INIT", "pxat", "1", "pxat", &pxat]);
    for key in ["ex", "px", "exat", "pxat"] {
        let ttl: i64 = ok(&mut con, &["TTL", key]);
        assert!((95..=100).contains(&ttl), "{key} ttl {ttl}");
    }
    assert_eq!(ok::<String>(&mut con, &["PEXPIRETIME", "pxat"]), pxat);
}

#[test]
fn add_restocks_and_reports_a_missing_item() {
    let server = Server::start();
    let mut con = server.client();
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.ADD", "sku:1", "5"]), -3);
    assert_eq!(ok::<i64>(&mut con, &["EXISTS", "sku:1"]), 0);
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "1"]);
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "alice", "1"]);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.ADD", "sku:1", "5"]), 5);
    assert_eq!(info_field(&mut con, "sku:1", "added"), 5);
}

#[test]
fn deduct_replies_remaining_stock_or_a_reason() {
    let server = Server::start();
    let mut con = server.client();
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "alice", "1"]),
        -3
    );
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "3", "LIMIT", "2"]);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "alice", "2"]),
        1
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "alice", "1"]),
        -2
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "bob", "2"]),
        -1
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "bob", "1"]),
        0
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "carol", "1"]),
        -1
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.BOUGHT", "sku:1", "alice"]),
        2
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.BOUGHT", "sku:1", "bob"]), 1);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.BOUGHT", "sku:1", "carol"]),
        0
    );
    assert_eq!(info_field(&mut con, "sku:1", "sold"), 3);
    assert_eq!(info_field(&mut con, "sku:1", "buyers"), 2);
}

#[test]
fn deduct_with_an_id_never_buys_twice() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "10"]);
    let first: i64 = ok(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "alice", "2", "ID", "order-1"],
    );
    assert_eq!(first, 8);
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "bob", "1"]);
    let retry: i64 = ok(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "alice", "2", "id", "order-1"],
    );
    assert_eq!(retry, first, "a retry gets the original reply");
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:1"]), 7);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.BOUGHT", "sku:1", "alice"]),
        2
    );
    assert_eq!(info_field(&mut con, "sku:1", "requests"), 1);
}

#[test]
fn a_request_id_is_bound_to_its_user_and_quantity() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "10"]);
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "alice", "2", "ID", "order-1"],
    );
    let expected = "ERR request id was already used by another user or for another quantity";
    assert_eq!(
        error(
            &mut con,
            &["SECKILL.DEDUCT", "sku:1", "bob", "2", "ID", "order-1"]
        ),
        expected
    );
    assert_eq!(
        error(
            &mut con,
            &["SECKILL.DEDUCT", "sku:1", "alice", "1", "ID", "order-1"]
        ),
        expected
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:1"]), 8);
}

#[test]
fn refund_gives_units_back_once() {
    let server = Server::start();
    let mut con = server.client();
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", "order-1"]),
        -3
    );
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "2", "LIMIT", "2"]);
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "alice", "2", "ID", "order-1"],
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", "order-1"]),
        2
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", "order-1"]),
        0
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", "unknown"]),
        0
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:1"]), 2);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.BOUGHT", "sku:1", "alice"]),
        0
    );
    assert_eq!(info_field(&mut con, "sku:1", "refunded"), 2);
    // The refunded id may not buy again; a new id may, quota restored.
    let again: i64 = ok(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "alice", "2", "ID", "order-1"],
    );
    assert_eq!(again, -4);
    let fresh: i64 = ok(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "alice", "2", "ID", "order-2"],
    );
    assert_eq!(fresh, 0);
}

#[test]
fn reads_of_a_missing_item_reply_nil() {
    let server = Server::start();
    let mut con = server.client();
    assert_eq!(ok::<Value>(&mut con, &["SECKILL.GET", "nope"]), Value::Nil);
    assert_eq!(
        ok::<Value>(&mut con, &["SECKILL.BOUGHT", "nope", "alice"]),
        Value::Nil
    );
    assert_eq!(ok::<Value>(&mut con, &["SECKILL.INFO", "nope"]), Value::Nil);
}

#[test]
fn unlimited_item_reports_the_largest_stock_everywhere() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(
        &mut con,
        &["SECKILL.INIT", "sku:u", "unlimited", "LIMIT", "1"],
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:u"]), UNLIMITED);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:u", "alice", "1"]),
        UNLIMITED
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:u", "alice", "1"]),
        -2
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.ADD", "sku:u", "10"]),
        UNLIMITED
    );
    assert_eq!(info_field(&mut con, "sku:u", "stock"), UNLIMITED);
    assert_eq!(info_field(&mut con, "sku:u", "unlimited"), 1);
}

#[test]
fn info_lists_every_field_in_order_under_resp2_and_resp3() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "10", "LIMIT", "3"]);
    ok::<i64>(&mut con, &["SECKILL.ADD", "sku:1", "5"]);
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "alice", "2", "ID", "r1"],
    );
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "bob", "1", "ID", "r2"],
    );
    ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", "r2"]);
    let expected: Vec<(String, i64)> = [
        ("stock", 13),
        ("unlimited", 0),
        ("limit", 3),
        ("initial", 10),
        ("added", 5),
        ("sold", 3),
        ("refunded", 1),
        ("held", 0),
        ("holds", 0),
        ("expired", 0),
        ("buyers", 1),
        ("requests", 2),
        ("start", 0),
        ("end", 0),
        ("stream_maxlen", 0),
        ("moved_out", 0),
        ("moved_in", 0),
        ("stream_confirmed", 0),
        ("variants", 0),
    ]
    .into_iter()
    .map(|(field, value)| (field.to_owned(), value))
    .collect();
    assert!(matches!(
        ok::<Value>(&mut con, &["SECKILL.INFO", "sku:1"]),
        Value::Array(_)
    ));
    assert_eq!(info(&mut con, "sku:1"), expected);

    let mut resp3 = server.client_resp3();
    assert!(matches!(
        ok::<Value>(&mut resp3, &["SECKILL.INFO", "sku:1"]),
        Value::Map(_)
    ));
    assert_eq!(info(&mut resp3, "sku:1"), expected);
}

#[test]
fn the_item_keeps_its_ttl_across_writes() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "10", "EX", "1000"]);
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "alice", "1", "ID", "r1"],
    );
    ok::<i64>(&mut con, &["SECKILL.ADD", "sku:1", "1"]);
    ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", "r1"]);
    let ttl: i64 = ok(&mut con, &["TTL", "sku:1"]);
    assert!((990..=1000).contains(&ttl), "ttl {ttl}");
    ok::<i64>(&mut con, &["EXPIRE", "sku:1", "50"]);
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "bob", "1"]);
    let ttl: i64 = ok(&mut con, &["TTL", "sku:1"]);
    assert!((40..=50).contains(&ttl), "ttl {ttl}");
}

#[test]
fn an_expired_item_is_no_such_item() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "10", "PX", "1"]);
    common::wait_until(
        "the item to expire",
        std::time::Duration::from_secs(5),
        || run::<i64>(&mut server.client(), &["EXISTS", "sku:1"]) == Ok(0),
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "alice", "1"]),
        -3
    );
}

/// Runs MULTI / SECKILL.GET sku:1 / EXEC on a connection that WATCHes
/// sku:1: nil when the watched key changed in between.
fn exec_after_watch(watcher: &mut redis::Connection) -> Value {
    redis::pipe()
        .atomic()
        .cmd("SECKILL.GET")
        .arg("sku:1")
        .query(watcher)
        .expect("EXEC")
}

#[test]
fn a_sold_out_deduct_does_not_break_a_watch_but_a_purchase_does() {
    let server = Server::start();
    let mut watcher = server.client();
    let mut buyer = server.client();
    ok::<i64>(&mut watcher, &["SECKILL.INIT", "sku:1", "1"]);
    ok::<i64>(&mut buyer, &["SECKILL.DEDUCT", "sku:1", "alice", "1"]);

    ok::<String>(&mut watcher, &["WATCH", "sku:1"]);
    assert_eq!(
        ok::<i64>(&mut buyer, &["SECKILL.DEDUCT", "sku:1", "bob", "1"]),
        -1
    );
    let exec = exec_after_watch(&mut watcher);
    assert_ne!(
        exec,
        Value::Nil,
        "a rejected DEDUCT must not touch WATCHers"
    );

    ok::<String>(&mut watcher, &["WATCH", "sku:1"]);
    ok::<i64>(&mut buyer, &["SECKILL.ADD", "sku:1", "1"]);
    let exec = exec_after_watch(&mut watcher);
    assert_eq!(
        exec,
        Value::Nil,
        "a successful write must abort the transaction"
    );
}

#[test]
fn init_of_an_existing_item_does_not_break_a_watch() {
    let server = Server::start();
    let mut watcher = server.client();
    let mut initialiser = server.client();
    ok::<i64>(&mut watcher, &["SECKILL.INIT", "sku:1", "5"]);
    ok::<String>(&mut watcher, &["WATCH", "sku:1"]);
    assert_eq!(
        ok::<i64>(&mut initialiser, &["SECKILL.INIT", "sku:1", "5"]),
        0
    );
    let exec = exec_after_watch(&mut watcher);
    assert_ne!(
        exec,
        Value::Nil,
        "an INIT that changed nothing aborted EXEC"
    );
}

#[test]
fn successful_writes_fire_keyspace_events_and_rejected_ones_do_not() {
    let server = Server::start();
    let mut con = server.client();
    ok::<String>(&mut con, &["CONFIG", "SET", "notify-keyspace-events", "Ed"]);
    let mut listener = server.client();
    let mut pubsub = listener.as_pubsub();
    pubsub
        .psubscribe("__keyevent@0__:seckill.*")
        .expect("psubscribe");
    pubsub
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .expect("timeout");

    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "1"]);
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "alice", "1", "ID", "r1"],
    );
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:1", "bob", "1"]); // sold out
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "sku:1", "alice", "1", "ID", "r1"],
    ); // replay
    ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", "r1"]);
    ok::<i64>(&mut con, &["SECKILL.REFUND", "sku:1", "r1"]); // already refunded
    ok::<i64>(&mut con, &["SECKILL.ADD", "sku:1", "1"]);

    let mut events = Vec::new();
    for _ in 0..4 {
        let message = pubsub.get_message().expect("event");
        let key: String = message.get_payload().expect("payload");
        events.push((message.get_channel_name().to_owned(), key));
    }
    let expected: Vec<(String, String)> = ["init", "deduct", "refund", "add"]
        .iter()
        .map(|event| {
            (
                format!("__keyevent@0__:seckill.{event}"),
                "sku:1".to_owned(),
            )
        })
        .collect();
    assert_eq!(events, expected);
}

#[test]
fn command_metadata_names_the_key_and_the_flags() {
    let server = Server::start();
    let mut con = server.client();
    let writes = [
        "seckill.init",
        "seckill.add",
        "seckill.deduct",
        "seckill.confirm",
        "seckill.refund",
        "seckill.window",
        "seckill.stream",
    ];
    let reads = [
        "seckill.get",
        "seckill.bought",
        "seckill.info",
        "seckill.variants",
    ];
    // Commands without the fast flag still name their key.
    for name in ["seckill.release", "seckill.holds", "seckill.loadchunk"] {
        let reply: Vec<Value> = ok(&mut con, &["COMMAND", "INFO", name]);
        let Some(Value::Array(entry)) = reply.first() else {
            panic!("COMMAND INFO {name}: {reply:?}");
        };
        let positions: Vec<i64> = entry[3..6]
            .iter()
            .map(|value| redis::from_redis_value(value.clone()).expect("key position"))
            .collect();
        assert_eq!(positions, [1, 1, 1], "{name} key positions");
    }
    for name in writes.iter().chain(reads.iter()) {
        let reply: Vec<Value> = ok(&mut con, &["COMMAND", "INFO", name]);
        let Some(Value::Array(entry)) = reply.first() else {
            panic!("COMMAND INFO {name}: {reply:?}");
        };
        let flags: Vec<String> = redis::from_redis_value(entry[2].clone()).expect("flags");
        let positions: Vec<i64> = entry[3..6]
            .iter()
            .map(|value| redis::from_redis_value(value.clone()).expect("key position"))
            .collect();
        // SECKILL.STREAM also declares the stream it names, second.
        let declared = if *name == "seckill.stream" {
            [1, 2, 1]
        } else {
            [1, 1, 1]
        };
        assert_eq!(positions, declared, "{name} key positions");
        // Settling a sale already made must work at maxmemory.
        let settles = ["seckill.confirm", "seckill.refund"].contains(name);
        let expected: &[&str] = match (writes.contains(name), settles) {
            (true, false) => &["write", "denyoom", "fast"],
            (true, true) => &["write", "fast"],
            (false, _) => &["readonly", "fast"],
        };
        for flag in expected {
            assert!(
                flags.iter().any(|f| f == flag),
                "{name} lacks {flag}: {flags:?}"
            );
        }
        assert_eq!(
            flags.iter().any(|f| f == "denyoom"),
            writes.contains(name) && !settles,
            "{name} flags: {flags:?}"
        );
    }
    let keys: Vec<String> = ok(
        &mut con,
        &[
            "COMMAND",
            "GETKEYS",
            "SECKILL.DEDUCT",
            "sku:{7}",
            "alice",
            "1",
            "ID",
            "r1",
        ],
    );
    assert_eq!(keys, ["sku:{7}"]);
}
