//! An item survives everything a Redis key survives. Also: SECKILL.LOADCHUNK,
//! which rebuilds items from the AOF, is refused from a client (forged
//! chunks and real ones alike) and changes nothing, while the same chunks
//! still load from the AOF.

mod common;

use common::{
    dump, error, fill_mixed, hold_chunk, load_chunk, ok, refusal_line, rewrite_aof, snapshot,
    Server,
};
use redis::Value;
use std::collections::HashMap;

const BIG: usize = 2_500;

/// What a client can see of the mixed item beyond INFO: replays and refunds
/// still answer as before.
fn assert_ledger_behaves(con: &mut redis::Connection, key: &str) {
    let replay: i64 = ok(
        con,
        &["SECKILL.DEDUCT", key, "user:2", "1", "ID", "order:2"],
    );
    let original_remaining = (BIG * 2 - 3) as i64;
    assert_eq!(
        replay, original_remaining,
        "a replay answers as the first call did"
    );
    let refunded: i64 = ok(
        con,
        &["SECKILL.DEDUCT", key, "user:1", "1", "ID", "order:1"],
    );
    assert_eq!(refunded, -4);
    assert_eq!(ok::<i64>(con, &["SECKILL.BOUGHT", key, "user:0"]), 3);
}

#[test]
fn save_and_restart_keeps_items() {
    let mut server = Server::start();
    let mut con = server.client();
    fill_mixed(&mut con, "sku:big", BIG);
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:u", "UNLIMITED"]);
    let before = [snapshot(&mut con, "sku:big"), snapshot(&mut con, "sku:u")];
    ok::<String>(&mut con, &["SAVE"]);
    server.restart();
    let mut con = server.client();
    let after = [snapshot(&mut con, "sku:big"), snapshot(&mut con, "sku:u")];
    assert_eq!(before, after);
    assert_ledger_behaves(&mut con, "sku:big");
}

#[test]
fn debug_reload_keeps_items() {
    let server = Server::start();
    let mut con = server.client();
    fill_mixed(&mut con, "sku:big", BIG);
    let before = snapshot(&mut con, "sku:big");
    ok::<String>(&mut con, &["DEBUG", "RELOAD"]);
    assert_eq!(snapshot(&mut con, "sku:big"), before);
    assert_ledger_behaves(&mut con, "sku:big");
}

#[test]
fn aof_restart_replays_every_write() {
    let mut server = Server::start_with(&["--appendonly", "yes"]);
    let mut con = server.client();
    fill_mixed(&mut con, "sku:big", BIG);
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:ttl", "5", "EX", "1000"]);
    let expire_at: i64 = ok(&mut con, &["PEXPIRETIME", "sku:ttl"]);
    let before = snapshot(&mut con, "sku:big");
    server.restart();
    let mut con = server.client();
    assert_eq!(snapshot(&mut con, "sku:big"), before);
    assert_eq!(ok::<i64>(&mut con, &["PEXPIRETIME", "sku:ttl"]), expire_at);
    assert_ledger_behaves(&mut con, "sku:big");
}

#[test]
fn aof_rewrite_as_commands_rebuilds_items_exactly() {
    let mut server = Server::start_with(&["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]);
    let mut con = server.client();
    fill_mixed(&mut con, "sku:big", BIG);
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:ttl", "5", "EX", "1000"]);
    let expire_at: i64 = ok(&mut con, &["PEXPIRETIME", "sku:ttl"]);
    common::rewrite_aof(&mut con);
    let base = std::fs::read_dir(server.dir().join("appendonlydir"))
        .expect("appendonlydir")
        .filter_map(Result::ok)
        .find(|entry| entry.file_name().to_string_lossy().ends_with(".base.aof"))
        .expect("a base AOF file");
    let base = std::fs::read(base.path()).expect("read base AOF");
    let commands = base
        .windows(17)
        .filter(|w| w == b"SECKILL.LOADCHUNK")
        .count();
    assert!(
        commands > 3,
        "expected the item in several chunks, found {commands}"
    );

    // Writes after the rewrite land in the incremental file on top of it.
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "sku:big", "late", "1", "ID", "late-1"],
    );
    let before = snapshot(&mut con, "sku:big");
    server.restart();
    let mut con = server.client();
    assert_eq!(snapshot(&mut con, "sku:big"), before);
    assert_eq!(ok::<i64>(&mut con, &["PEXPIRETIME", "sku:ttl"]), expire_at);
    assert_ledger_behaves(&mut con, "sku:big");
}

#[test]
fn aof_rewrite_with_rdb_preamble_rebuilds_items_exactly() {
    let mut server = Server::start_with(&["--appendonly", "yes"]);
    let mut con = server.client();
    fill_mixed(&mut con, "sku:big", BIG);
    common::rewrite_aof(&mut con);
    let before = snapshot(&mut con, "sku:big");
    server.restart();
    let mut con = server.client();
    assert_eq!(snapshot(&mut con, "sku:big"), before);
}

#[test]
fn dump_and_restore_carry_the_whole_item() {
    let server = Server::start();
    let mut con = server.client();
    fill_mixed(&mut con, "sku:big", BIG);
    let payload = common::dump_and_restore(&mut con, "sku:big", "sku:copy");
    assert_eq!(
        snapshot(&mut con, "sku:copy"),
        snapshot(&mut con, "sku:big")
    );
    assert_ledger_behaves(&mut con, "sku:copy");

    // A damaged payload is refused, not loaded.
    let mut damaged = payload.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0xff;
    let refused = redis::cmd("RESTORE")
        .arg("sku:bad")
        .arg(0)
        .arg(&damaged)
        .query::<String>(&mut con);
    assert!(refused.is_err());
    assert_eq!(ok::<i64>(&mut con, &["EXISTS", "sku:bad"]), 0);
}

#[test]
fn copy_is_deep_and_rename_moves_the_item() {
    let server = Server::start();
    let mut con = server.client();
    fill_mixed(&mut con, "sku:1", 50);
    let original = snapshot(&mut con, "sku:1");
    assert_eq!(ok::<i64>(&mut con, &["COPY", "sku:1", "sku:2"]), 1);
    assert_eq!(snapshot(&mut con, "sku:2"), original);
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:2", "someone", "1"]);
    assert_eq!(
        snapshot(&mut con, "sku:1"),
        original,
        "the copy shares nothing"
    );

    ok::<String>(&mut con, &["RENAME", "sku:1", "sku:3"]);
    assert_eq!(ok::<i64>(&mut con, &["EXISTS", "sku:1"]), 0);
    assert_eq!(snapshot(&mut con, "sku:3"), original);
}

#[test]
fn del_and_unlink_remove_items_of_any_size() {
    let server = Server::start();
    let mut con = server.client();
    fill_mixed(&mut con, "sku:small", 3);
    fill_mixed(&mut con, "sku:big", BIG);
    assert_eq!(ok::<i64>(&mut con, &["DEL", "sku:small"]), 1);
    assert_eq!(ok::<i64>(&mut con, &["UNLINK", "sku:big"]), 1);
    assert_eq!(ok::<i64>(&mut con, &["DBSIZE"]), 0);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:big", "a", "1"]),
        -3
    );
    assert_eq!(ok::<String>(&mut con, &["PING"]), "PONG");
}

#[test]
fn memory_usage_grows_with_the_ledger() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:empty", "10"]);
    fill_mixed(&mut con, "sku:big", BIG);
    let empty: i64 = ok(&mut con, &["MEMORY", "USAGE", "sku:empty"]);
    let big: i64 = ok(&mut con, &["MEMORY", "USAGE", "sku:big"]);
    assert!(empty > 0);
    // Each buyer stores at least its user id and request id.
    let id_bytes = (BIG * ("user:1000".len() + "order:1000".len())) as i64;
    assert!(big - empty > id_bytes, "{big} - {empty} <= {id_bytes}");
}

#[test]
fn digest_depends_on_content_not_on_history_order() {
    let server = Server::start();
    let mut con = server.client();
    for (key, users) in [("a", ["x", "y", "z"]), ("b", ["z", "x", "y"])] {
        ok::<i64>(&mut con, &["SECKILL.INIT", key, "UNLIMITED"]);
        for user in users {
            let id = format!("id-{user}");
            ok::<i64>(&mut con, &["SECKILL.DEDUCT", key, user, "1", "ID", &id]);
        }
    }
    assert_eq!(snapshot(&mut con, "a"), snapshot(&mut con, "b"));
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", "b", "w", "1"]);
    let (_, digest_a) = snapshot(&mut con, "a");
    let (_, digest_b) = snapshot(&mut con, "b");
    assert_ne!(digest_a, digest_b);
}

#[test]
fn acknowledged_writes_survive_a_crash_with_aof() {
    let mut server = Server::start_with(&["--appendonly", "yes"]);
    let mut con = server.client();
    fill_mixed(&mut con, "sku:1", 100);
    let before = snapshot(&mut con, "sku:1");
    server.crash_and_restart();
    let mut con = server.client();
    assert_eq!(snapshot(&mut con, "sku:1"), before);
    assert_eq!(
        error(&mut con, &["SECKILL.GET"]),
        "ERR wrong number of arguments for 'seckill.get' command"
    );
}

#[test]
fn an_rdb_written_by_the_first_release_still_loads() {
    // Saved by the module at encoding version 1, before sale windows:
    // INIT sku:v1 10 LIMIT 2; alice 2 (order-1), bob 1 (order-2), carol 1;
    // REFUND order-2; ADD 5; INIT sku:unlimited UNLIMITED.
    let rdb = include_bytes!("fixtures/encoding-v1.rdb");
    let server = Server::start_with_files(&[("dump.rdb", rdb)], &[]);
    let mut con = server.client();
    let expected: Vec<(String, i64)> = [
        ("stock", 12),
        ("unlimited", 0),
        ("limit", 2),
        ("initial", 10),
        ("added", 5),
        ("sold", 4),
        ("refunded", 1),
        ("held", 0),
        ("holds", 0),
        ("expired", 0),
        ("buyers", 2),
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
    assert_eq!(common::info(&mut con, "sku:v1"), expected);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.BOUGHT", "sku:v1", "alice"]),
        2
    );
    let replay: i64 = ok(
        &mut con,
        &["SECKILL.DEDUCT", "sku:v1", "alice", "2", "ID", "order-1"],
    );
    assert_eq!(replay, 8);
    let refunded: i64 = ok(
        &mut con,
        &["SECKILL.DEDUCT", "sku:v1", "bob", "1", "ID", "order-2"],
    );
    assert_eq!(refunded, -4);
    assert_eq!(
        common::info_field(&mut con, "sku:unlimited", "unlimited"),
        1
    );
}

/// What an item of a fixture file holds once loaded: its INFO fields, the
/// units some users hold, and replays of request ids with their replies.
struct Expected<'a> {
    key: &'a str,
    info: &'a [(&'a str, i64)],
    bought: &'a [(&'a str, i64)],
    /// (user, qty, request id, reply): the reply the first call got, or
    /// -4 for a refunded or lapsed request.
    replays: &'a [(&'a str, &'a str, &'a str, i64)],
}

fn assert_loaded(con: &mut redis::Connection, expected: &Expected) {
    let info: Vec<(String, i64)> = expected
        .info
        .iter()
        .map(|(field, value)| (field.to_string(), *value))
        .collect();
    assert_eq!(common::info(con, expected.key), info, "{}", expected.key);
    for (user, units) in expected.bought {
        let bought: i64 = ok(con, &["SECKILL.BOUGHT", expected.key, user]);
        assert_eq!(bought, *units, "{} {user}", expected.key);
    }
    for (user, qty, id, reply) in expected.replays {
        let replay: i64 = ok(con, &["SECKILL.DEDUCT", expected.key, user, qty, "ID", id]);
        assert_eq!(replay, *reply, "{} {id}", expected.key);
    }
}

/// The unlimited item every fixture from version 2 on holds: INIT
/// sku:unlimited UNLIMITED; dave 3 (order-3).
const UNLIMITED: Expected = Expected {
    key: "sku:unlimited",
    info: &[
        ("stock", i64::MAX),
        ("unlimited", 1),
        ("limit", 0),
        ("initial", 0),
        ("added", 0),
        ("sold", 3),
        ("refunded", 0),
        ("held", 0),
        ("holds", 0),
        ("expired", 0),
        ("buyers", 1),
        ("requests", 1),
        ("start", 0),
        ("end", 0),
        ("stream_maxlen", 0),
        ("moved_out", 0),
        ("moved_in", 0),
        ("stream_confirmed", 0),
        ("variants", 0),
    ],
    bought: &[("dave", 3)],
    replays: &[("dave", "3", "order-3", i64::MAX)],
};

/// INFO of the held item of the fixtures of versions 3 and 4 (see their
/// tests), with `stream_maxlen` for its stream setting.
fn held_item(stream_maxlen: i64) -> Vec<(&'static str, i64)> {
    vec![
        ("stock", 19),
        ("unlimited", 0),
        ("limit", 3),
        ("initial", 20),
        ("added", 5),
        ("sold", 10),
        ("refunded", 1),
        ("held", 2),
        ("holds", 1),
        ("expired", 3),
        ("buyers", 4),
        ("requests", 5),
        ("start", 1_000_000_000_000),
        ("end", 4_102_444_800_000),
        ("stream_maxlen", stream_maxlen),
        ("moved_out", 0),
        ("moved_in", 0),
        ("stream_confirmed", i64::from(stream_maxlen != 0)),
        ("variants", 0),
    ]
}

/// The held item of the fixtures of versions 3 and 4 under `key`: its
/// INFO, buyers and replays, then HOLDS and CONFIRM (hold-1 pending,
/// hold-2 confirmed before the save, hold-3 lapsed).
fn assert_held_item(con: &mut redis::Connection, key: &str, stream_maxlen: i64) {
    let info = held_item(stream_maxlen);
    assert_loaded(
        con,
        &Expected {
            key,
            info: &info,
            bought: HELD_BOUGHT,
            replays: HELD_REPLAYS,
        },
    );
    let holds: Vec<(String, String, i64, i64)> = ok(con, &["SECKILL.HOLDS", key]);
    assert_eq!(
        holds,
        [("hold-1".to_owned(), "dave".to_owned(), 2, 4_102_444_800_000)]
    );
    let confirmed: i64 = ok(con, &["SECKILL.CONFIRM", key, "hold-2"]);
    assert_eq!(confirmed, 0, "the confirmed hold is final");
    let lapsed: i64 = ok(con, &["SECKILL.CONFIRM", key, "hold-3"]);
    assert_eq!(lapsed, -4, "the lapsed hold stays lapsed");
}

const HELD_BOUGHT: &[(&str, i64)] = &[("alice", 2), ("dave", 2), ("erin", 1), ("frank", 0)];
const HELD_REPLAYS: &[(&str, &str, &str, i64)] =
    &[("alice", "2", "order-1", 18), ("bob", "1", "order-2", -4)];

#[test]
fn an_rdb_written_at_format_version_2_still_loads() {
    // Saved by the module at format and encoding version 2 (commit 9053413,
    // sale windows, before holds):
    // INIT sku:v2 10 LIMIT 2 START 1000000000000 END 4102444800000;
    // alice 2 (order-1), bob 1 (order-2), carol 1; REFUND order-2; ADD 5;
    // INIT sku:unlimited UNLIMITED; dave 3 (order-3) on it.
    let rdb = include_bytes!("fixtures/encoding-v2.rdb");
    let server = Server::start_with_files(&[("dump.rdb", rdb)], &[]);
    let mut con = server.client();
    assert_loaded(
        &mut con,
        &Expected {
            key: "sku:v2",
            info: &[
                ("stock", 12),
                ("unlimited", 0),
                ("limit", 2),
                ("initial", 10),
                ("added", 5),
                ("sold", 4),
                ("refunded", 1),
                ("held", 0),
                ("holds", 0),
                ("expired", 0),
                ("buyers", 2),
                ("requests", 2),
                ("start", 1_000_000_000_000),
                ("end", 4_102_444_800_000),
                ("stream_maxlen", 0),
                ("moved_out", 0),
                ("moved_in", 0),
                ("stream_confirmed", 0),
                ("variants", 0),
            ],
            bought: &[("alice", 2), ("carol", 1), ("bob", 0)],
            replays: &[("alice", "2", "order-1", 8), ("bob", "1", "order-2", -4)],
        },
    );
    assert_loaded(&mut con, &UNLIMITED);
}

#[test]
fn an_rdb_written_at_format_version_3_still_loads() {
    // Saved by the module at format and encoding version 3 (commit bc2d008,
    // holds and the 'Q' request chunk, before the order stream):
    // INIT sku:v3 20 LIMIT 3 START 1000000000000 END 4102444800000;
    // alice 2 (order-1), bob 1 (order-2), carol 1; REFUND order-2;
    // dave 2 (hold-1 HOLDUNTIL 4102444800000), erin 1 (hold-2 HOLDUNTIL
    // 4102444800000); CONFIRM hold-2; frank 3 (hold-3 HOLD 1), lapsed 2 s
    // later; ADD 5; INIT sku:unlimited UNLIMITED; dave 3 (order-3) on it.
    let rdb = include_bytes!("fixtures/encoding-v3.rdb");
    let server = Server::start_with_files(&[("dump.rdb", rdb)], &[]);
    let mut con = server.client();
    assert_held_item(&mut con, "sku:v3", 0);
    assert_loaded(&mut con, &UNLIMITED);
}

#[test]
fn an_rdb_written_at_format_version_4_still_loads() {
    // Saved by the module at format and encoding version 4 (commit 616aa1f,
    // the order stream):
    // INIT {sku:v4} 20 LIMIT 3 START 1000000000000 END 4102444800000
    // STREAM {sku:v4}:orders MAXLEN 100; alice 2 (order-1), bob 1 (order-2),
    // carol 1; REFUND order-2; dave 2 (hold-1 HOLDUNTIL 4102444800000),
    // erin 1 (hold-2 HOLDUNTIL 4102444800000); CONFIRM hold-2; frank 3
    // (hold-3 HOLD 1), lapsed 2 s later; ADD 5 (9 stream entries: 3
    // purchases, a refund, 3 holds, a confirm, an expire);
    // INIT sku:unlimited UNLIMITED; dave 3 (order-3) on it.
    let rdb = include_bytes!("fixtures/encoding-v4.rdb");
    let server = Server::start_with_files(&[("dump.rdb", rdb)], &[]);
    let mut con = server.client();
    assert_held_item(&mut con, "{sku:v4}", 100);
    let fields: HashMap<String, Value> = ok(&mut con, &["SECKILL.INFO", "{sku:v4}"]);
    assert_eq!(
        fields["stream"],
        Value::BulkString(b"{sku:v4}:orders".to_vec())
    );
    assert_loaded(&mut con, &UNLIMITED);

    // The stream came back with the item, and the kept setting still writes
    // to it: replays and refusals above appended nothing, a new sale does.
    assert_eq!(ok::<i64>(&mut con, &["XLEN", "{sku:v4}:orders"]), 9);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "{sku:v4}", "gina", "1"]),
        18
    );
    assert_eq!(ok::<i64>(&mut con, &["XLEN", "{sku:v4}:orders"]), 10);
}

#[test]
fn an_rdb_written_at_format_version_5_still_loads() {
    // Saved by the module at format and encoding version 5 (group chunks,
    // before stock transfers), the same sale as the version 4 fixture:
    // INIT {sku:v5} 20 LIMIT 3 START 1000000000000 END 4102444800000
    // STREAM {sku:v5}:orders MAXLEN 100; alice 2 (order-1), bob 1 (order-2),
    // carol 1; REFUND order-2; dave 2 (hold-1 HOLDUNTIL 4102444800000),
    // erin 1 (hold-2 HOLDUNTIL 4102444800000); CONFIRM hold-2; frank 3
    // (hold-3 HOLD 1), lapsed 2 s later; ADD 5; INIT sku:unlimited
    // UNLIMITED; dave 3 (order-3) on it.
    let rdb = include_bytes!("fixtures/encoding-v5.rdb");
    let server = Server::start_with_files(&[("dump.rdb", rdb)], &[]);
    let mut con = server.client();
    assert_held_item(&mut con, "{sku:v5}", 100);
    assert_loaded(&mut con, &UNLIMITED);
    assert_eq!(ok::<i64>(&mut con, &["XLEN", "{sku:v5}:orders"]), 9);
}

#[test]
fn an_rdb_written_at_format_version_6_still_loads_with_its_stream_confirmed() {
    // Saved by the module at format version 6 (stock transfers, before
    // unconfirmed order streams), the same sale as the version 5 fixture
    // under {sku:v6}. A file is the server's own: its stream is trusted.
    let rdb = include_bytes!("fixtures/encoding-v6.rdb");
    let server = Server::start_with_files(&[("dump.rdb", rdb)], &[]);
    let mut con = server.client();
    assert_held_item(&mut con, "{sku:v6}", 100);
    assert_loaded(&mut con, &UNLIMITED);
    assert_eq!(ok::<i64>(&mut con, &["XLEN", "{sku:v6}:orders"]), 9);
    ok::<String>(
        &mut con,
        &[
            "ACL",
            "SETUSER",
            "app",
            "on",
            ">p",
            "~{sku:v6}",
            "+seckill.deduct",
        ],
    );
    let mut app = server.client();
    ok::<String>(&mut app, &["AUTH", "app", "p"]);
    assert_eq!(
        ok::<i64>(&mut app, &["SECKILL.DEDUCT", "{sku:v6}", "gina", "1"]),
        18
    );
    assert_eq!(ok::<i64>(&mut con, &["XLEN", "{sku:v6}:orders"]), 10);
}

/// A version 4 header chunk: counters, no window, no stream.
fn header_chunk(stock: i64, buyers: u64, requests: u64) -> Vec<u8> {
    let mut chunk = vec![b'H', 4, 0];
    // stock limit initial added sold refunded start end expired
    for field in [stock, 0, stock, 0, 0, 0, 0, 0, 0] {
        chunk.extend_from_slice(&field.to_le_bytes());
    }
    chunk.push(0); // no order stream
    chunk.extend_from_slice(&buyers.to_le_bytes());
    chunk.extend_from_slice(&requests.to_le_bytes());
    chunk
}

/// LOADCHUNK rebuilds items from an AOF; a client sending it could forge
/// any state, e.g. a "hold" of a million units that lapses into stock.
#[test]
fn loadchunk_from_a_client_is_refused_and_changes_nothing() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:6", "5"]);
    let before = dump(&mut con, "sku:6");

    let forged = hold_chunk(b"forged", b"mallory", 1_000_000, 1);
    let refused = refusal_line(
        load_chunk(&mut con, "sku:6", &forged),
        "a forged request chunk",
    );
    assert!(
        refused.starts_with("ERR"),
        "forged request chunk: {refused}"
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:6"]), 5);
    assert_eq!(
        dump(&mut con, "sku:6"),
        before,
        "a refused LOADCHUNK changed the item"
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "sku:6", "mallory", "6"]),
        -1,
        "the forged hold's units went into stock"
    );

    let header = header_chunk(1_000_000, 0, 0);
    let refused = refusal_line(
        load_chunk(&mut con, "sku:6", &header),
        "a header chunk over an item",
    );
    assert!(refused.starts_with("ERR"), "header chunk: {refused}");
    assert_eq!(
        dump(&mut con, "sku:6"),
        before,
        "a refused header chunk replaced the item"
    );
    let refused = refusal_line(
        load_chunk(&mut con, "sku:new", &header),
        "a header chunk on a new key",
    );
    assert!(
        refused.starts_with("ERR"),
        "header chunk on a new key: {refused}"
    );
    assert_eq!(ok::<i64>(&mut con, &["EXISTS", "sku:new"]), 0);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:6"]), 5);
}

/// Splits a RESP stream of commands (an AOF without RDB preamble) into
/// argument vectors.
fn parse_aof(mut input: &[u8]) -> Vec<Vec<Vec<u8>>> {
    fn line<'a>(input: &mut &'a [u8]) -> &'a [u8] {
        let end = input.windows(2).position(|w| w == b"\r\n").expect("CRLF");
        let (head, rest) = input.split_at(end);
        *input = &rest[2..];
        head
    }
    let mut commands = Vec::new();
    while !input.is_empty() {
        let header = line(&mut input);
        assert_eq!(header[0], b'*', "not a RESP array in the AOF");
        let count: usize = std::str::from_utf8(&header[1..]).unwrap().parse().unwrap();
        let mut args = Vec::with_capacity(count);
        for _ in 0..count {
            let header = line(&mut input);
            assert_eq!(header[0], b'$');
            let len: usize = std::str::from_utf8(&header[1..]).unwrap().parse().unwrap();
            args.push(input[..len].to_vec());
            input = &input[len + 2..];
        }
        commands.push(args);
    }
    commands
}

#[test]
fn real_aof_chunks_sent_by_a_client_are_refused_but_still_load_from_the_aof() {
    let mut server = Server::start_with(&["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]);
    let mut con = server.client();
    common::fill_mixed(&mut con, "sku:aof", 1_500);
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "sku:aof",
            "holder",
            "1",
            "ID",
            "held",
            "HOLDUNTIL",
            "4102444800000",
        ],
    );
    rewrite_aof(&mut con);
    let base = std::fs::read_dir(server.dir().join("appendonlydir"))
        .expect("appendonlydir")
        .filter_map(Result::ok)
        .find(|entry| entry.file_name().to_string_lossy().ends_with(".base.aof"))
        .expect("a base AOF file");
    let chunks: Vec<Vec<u8>> = parse_aof(&std::fs::read(base.path()).expect("read base AOF"))
        .into_iter()
        .filter(|args| args[0].eq_ignore_ascii_case(b"SECKILL.LOADCHUNK"))
        .map(|mut args| args.remove(2))
        .collect();
    assert!(chunks.len() > 3, "expected the item in several chunks");
    let before = snapshot(&mut con, "sku:aof");

    for (n, chunk) in chunks.iter().enumerate() {
        let refused = refusal_line(
            load_chunk(&mut con, "sku:copy", chunk),
            &format!("chunk {n}"),
        );
        assert!(
            refused.starts_with("ERR"),
            "chunk {n} onto a new key: {refused}"
        );
    }
    assert_eq!(
        ok::<i64>(&mut con, &["EXISTS", "sku:copy"]),
        0,
        "a client built an item"
    );
    let refused = refusal_line(
        load_chunk(&mut con, "sku:aof", &chunks[0]),
        "the header again",
    );
    assert!(
        refused.starts_with("ERR"),
        "the header onto the item: {refused}"
    );
    assert_eq!(snapshot(&mut con, "sku:aof"), before);

    // The same chunks, replayed from the AOF at startup, rebuild the item.
    server.restart();
    let mut con = server.client();
    assert_eq!(
        snapshot(&mut con, "sku:aof"),
        before,
        "the AOF no longer rebuilds the item"
    );
}
