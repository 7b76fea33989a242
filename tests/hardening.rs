//! Regression tests for faults found by review: many holds lapsing at once,
//! items that move to another key or database while they hold, paid orders
//! under maxmemory, SECKILL.LOADCHUNK from a client, an order stream that
//! cannot take another entry, an erroring call that changed the item
//! anyway, and an order stream key the caller may not write or that holds
//! another type.
//!
//! Where a test depends on the module's timer not running between two
//! commands, it sends them in one pipeline after `DEBUG SLEEP`: the server
//! runs every command of a pipeline it read at once before it looks at its
//! timers again.

mod common;

use common::{
    command_calls, error, info_field, ok, rewrite_aof, run, snapshot, used_memory, wait_until,
    Server,
};
use redis::{Connection, Value};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const PATIENCE: Duration = Duration::from_secs(10);

fn server_now_ms(con: &mut Connection) -> i64 {
    let time: Vec<i64> = ok(con, &["TIME"]);
    time[0] * 1000 + time[1] / 1000
}

fn time_ms(value: &Value) -> i64 {
    let time: Vec<i64> = redis::from_redis_value(value.clone()).expect("a TIME reply");
    time[0] * 1000 + time[1] / 1000
}

/// A connection to database `db`.
fn client_db(server: &Server, db: i64) -> Connection {
    redis::Client::open(format!("{}{db}", server.url()))
        .and_then(|client| client.get_connection())
        .expect("cannot connect")
}

fn command(args: &[&str]) -> redis::Cmd {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd
}

/// Sends `commands` in one round trip; error replies come back as
/// `Value::ServerError` in their place.
fn pipeline(con: &mut Connection, commands: &[Vec<String>]) -> Vec<Value> {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for args in commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        pipe.add_command(command(&args));
    }
    pipe.query(con).expect("the pipeline's replies")
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|arg| arg.to_string()).collect()
}

/// "CODE detail" of an error reply; panics on anything else.
fn error_line(value: &Value, what: &str) -> String {
    match value {
        Value::ServerError(err) => match err.details() {
            Some(detail) => format!("{} {detail}", err.code()),
            None => err.code().to_owned(),
        },
        other => panic!("{what}: expected an error reply, got {other:?}"),
    }
}

fn dump(con: &mut Connection, key: &str) -> Value {
    ok(con, &["DUMP", key])
}

/// Holds `count` requests `h0..` of one unit each, by users `u0..` (or all
/// by `one_user`), all with the same absolute deadline; pipelined.
fn place_holds(
    con: &mut Connection,
    key: &str,
    count: usize,
    one_user: Option<&str>,
    deadline: i64,
) {
    let deadline = deadline.to_string();
    for batch in (0..count).collect::<Vec<_>>().chunks(1_000) {
        let mut pipe = redis::pipe();
        for n in batch {
            let user = one_user.map_or_else(|| format!("u{n}"), str::to_owned);
            pipe.cmd("SECKILL.DEDUCT")
                .arg(key)
                .arg(user)
                .arg(1)
                .arg("ID")
                .arg(format!("h{n}"))
                .arg("HOLDUNTIL")
                .arg(&deadline);
        }
        let replies: Vec<i64> = pipe.query(con).expect("holds");
        assert!(
            replies.iter().all(|reply| *reply >= 0),
            "a hold was refused"
        );
    }
}

/// Sends `after` in one pipeline with `DEBUG SLEEP` until past `deadline`
/// in front: no timer can run between the sleep and these commands.
/// Returns the replies to `after` only.
fn right_after_deadline(con: &mut Connection, deadline: i64, after: &[Vec<String>]) -> Vec<Value> {
    let now = server_now_ms(con);
    assert!(
        now < deadline - 100,
        "the machine is too slow for this test: the deadline {deadline} is already near ({now})"
    );
    let sleep = format!("{:.3}", ((deadline - now) as f64 + 500.0) / 1000.0);
    let mut commands = vec![
        strings(&["TIME"]),
        strings(&["DEBUG", "SLEEP", &sleep]),
        strings(&["TIME"]),
    ];
    commands.extend_from_slice(after);
    let mut replies = pipeline(con, &commands);
    let before = time_ms(&replies[0]);
    let woke = time_ms(&replies[2]);
    assert!(before < deadline, "the pipeline started after the deadline");
    assert!(woke > deadline, "DEBUG SLEEP did not pass the deadline");
    replies.drain(..3);
    replies
}

// --- Finding 3: many holds lapsing at once ---------------------------------

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

// --- Finding 4: items renamed, moved, copied or swapped while they hold ----

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

/// On Valkey the module does not listen to generic keyspace events (they
/// make Valkey 8.1 replicate MOVE into the wrong database), so the timer
/// cannot follow a renamed or moved item there; README says so.
fn follows_renames() -> bool {
    let valkey = common::server_binary().contains("valkey");
    if valkey {
        eprintln!("skipped on Valkey: the timer does not follow renamed or moved items there");
    }
    !valkey
}

#[test]
fn holds_of_a_renamed_item_lapse_by_the_timer() {
    if !follows_renames() {
        return;
    }
    holds_lapse_where_the_item_went(
        &[&["RENAME", "{k}", "{k}new"]],
        &[(0, "{k}new")],
        &[(0, "{k}:o", HOLDS_PER_ITEM)],
    );
}

#[test]
fn holds_of_an_item_moved_to_another_db_lapse_by_the_timer() {
    if !follows_renames() {
        return;
    }
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

// --- Finding 5: paid orders at maxmemory -----------------------------------

/// Past maxmemory (noeviction), new sales are refused with OOM, but the
/// payment of an order already held (CONFIRM), its cancellation (REFUND)
/// and its release (RELEASE) still go through: they only settle units
/// already taken, and refusing them would strand paid orders.
#[test]
fn paid_orders_settle_past_maxmemory_while_new_sales_get_oom() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:5", "100", "LIMIT", "5"]);
    for (user, id) in [
        ("alice", "paid"),
        ("bob", "cancelled"),
        ("carol", "abandoned"),
    ] {
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.DEDUCT",
                "sku:5",
                user,
                "1",
                "ID",
                id,
                "HOLDUNTIL",
                "4102444800000",
            ],
        );
    }
    let filler = "x".repeat(1 << 20);
    for n in 0..8 {
        ok::<String>(&mut con, &["SET", &format!("filler:{n}"), &filler]);
    }
    let used = used_memory(&mut con);
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
    );
    ok::<String>(
        &mut con,
        &[
            "CONFIG",
            "SET",
            "maxmemory",
            &(used - (4 << 20)).to_string(),
        ],
    );
    let set = error(&mut con, &["SET", "one:more", "x"]);
    assert!(
        set.starts_with("OOM"),
        "the server is not out of memory: SET got {set}"
    );

    let mut problems = Vec::new();
    for args in [
        &["SECKILL.DEDUCT", "sku:5", "dave", "1"][..],
        &["SECKILL.INIT", "sku:new", "10"][..],
        &["SECKILL.ADD", "sku:5", "1"][..],
    ] {
        match run::<Value>(&mut con, args) {
            Err(err) if err.code() == Some("OOM") => {}
            other => problems.push(format!("{args:?} should get OOM, got {other:?}")),
        }
    }
    for (args, expected) in [
        (&["SECKILL.CONFIRM", "sku:5", "paid"][..], 1),
        (&["SECKILL.REFUND", "sku:5", "cancelled"][..], 1),
        (&["SECKILL.RELEASE", "sku:5", "abandoned"][..], 1),
    ] {
        match run::<Value>(&mut con, args) {
            Ok(Value::Int(reply)) if reply == expected => {}
            other => problems.push(format!(
                "{args:?} should reply {expected} past maxmemory, got {other:?}"
            )),
        }
    }
    for name in ["seckill.confirm", "seckill.refund", "seckill.release"] {
        let reply: Vec<Value> = ok(&mut con, &["COMMAND", "INFO", name]);
        let Some(Value::Array(entry)) = reply.first() else {
            panic!("COMMAND INFO {name}: {reply:?}");
        };
        let flags: Vec<String> = redis::from_redis_value(entry[2].clone()).expect("flags");
        if flags.iter().any(|flag| flag == "denyoom") {
            problems.push(format!("COMMAND INFO {name} lists denyoom: {flags:?}"));
        }
    }
    ok::<String>(&mut con, &["CONFIG", "SET", "maxmemory", "0"]);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:5"]), 99);
    assert_eq!(info_field(&mut con, "sku:5", "holds"), 0);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:5", "paid"]),
        0
    );
}

// --- Finding 6: SECKILL.LOADCHUNK from a client ----------------------------

const HELD: u8 = 2;

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

/// A request chunk of one pending hold.
fn hold_chunk(id: &[u8], user: &[u8], qty: i64, deadline: i64) -> Vec<u8> {
    let mut chunk = vec![b'Q'];
    chunk.extend_from_slice(&1u32.to_le_bytes());
    chunk.push(id.len() as u8);
    chunk.extend_from_slice(id);
    chunk.push(user.len() as u8);
    chunk.extend_from_slice(user);
    chunk.extend_from_slice(&qty.to_le_bytes());
    chunk.extend_from_slice(&0i64.to_le_bytes()); // reply
    chunk.push(HELD);
    chunk.extend_from_slice(&deadline.to_le_bytes());
    chunk
}

fn load_chunk(con: &mut Connection, key: &str, chunk: &[u8]) -> redis::RedisResult<Value> {
    redis::cmd("SECKILL.LOADCHUNK")
        .arg(key)
        .arg(chunk)
        .query(con)
}

fn refusal_line(result: redis::RedisResult<Value>, what: &str) -> String {
    match result {
        Ok(value) => panic!("{what} was accepted: {value:?}"),
        Err(err) => match (err.code(), err.detail()) {
            (Some(code), Some(detail)) => format!("{code} {detail}"),
            (Some(code), None) => code.to_owned(),
            _ => err.to_string(),
        },
    }
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

#[test]
fn an_acl_user_with_the_write_category_cannot_loadchunk() {
    let server = Server::start();
    let mut admin = server.client();
    ok::<i64>(&mut admin, &["SECKILL.INIT", "sku:6", "5"]);
    let before = dump(&mut admin, "sku:6");
    ok::<String>(
        &mut admin,
        &["ACL", "SETUSER", "u", "on", ">p", "+@write", "~*"],
    );
    let mut con = server.client();
    ok::<String>(&mut con, &["AUTH", "u", "p"]);
    let forged = hold_chunk(b"forged", b"mallory", 1_000_000, 1);
    let refused = refusal_line(load_chunk(&mut con, "sku:6", &forged), "LOADCHUNK by u");
    assert!(
        refused.starts_with("NOPERM") || refused.starts_with("ERR"),
        "LOADCHUNK by an @write user: {refused}"
    );
    assert_eq!(dump(&mut admin, "sku:6"), before);
    assert_eq!(ok::<i64>(&mut admin, &["SECKILL.GET", "sku:6"]), 5);
}

// --- Finding 7: an order stream that cannot take another entry ------------

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

// --- Finding 8: an erroring call on an item with a lapsed hold ------------

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

// --- Finding 9: the order stream key's type and the caller's rights ------

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

fn is_permission_refusal(line: &str) -> bool {
    line.starts_with("NOPERM")
        || (line.starts_with("ERR") && line.to_lowercase().contains("permission"))
}

/// A user allowed the item's key only may not name an order stream it
/// cannot write: the module would write it on the user's behalf.
#[test]
fn a_user_without_access_to_the_stream_key_cannot_declare_it() {
    let server = Server::start();
    let mut admin = server.client();
    ok::<String>(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "u",
            "on",
            ">p",
            "+@all",
            "~{k}",
            "-@dangerous",
        ],
    );
    let mut con = server.client();
    ok::<String>(&mut con, &["AUTH", "u", "p"]);
    // The rules as meant: the item yes, the stream no.
    let xadd = error(&mut con, &["XADD", "{k}:o", "*", "f", "v"]);
    assert!(xadd.starts_with("NOPERM"), "XADD by u: {xadd}");

    let refused = error(&mut con, &["SECKILL.INIT", "{k}", "10", "STREAM", "{k}:o"]);
    assert!(
        is_permission_refusal(&refused),
        "INIT naming a stream u may not write: {refused}"
    );
    assert_eq!(ok::<i64>(&mut admin, &["EXISTS", "{k}"]), 0);

    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.INIT", "{k}", "10"]),
        1,
        "INIT without a stream"
    );
    let before = dump(&mut admin, "{k}");
    let refused = error(&mut con, &["SECKILL.STREAM", "{k}", "{k}:o"]);
    assert!(
        is_permission_refusal(&refused),
        "STREAM naming a stream u may not write: {refused}"
    );
    assert_eq!(dump(&mut admin, "{k}"), before);
    assert_eq!(ok::<i64>(&mut admin, &["EXISTS", "{k}:o"]), 0);
}

// --- Found by attacking the fixes ------------------------------------------

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

/// A write whose events do not all fit in the stream's last IDs is refused
/// before it appends any: the stream's last ID and its count of entries
/// ever added stay as they were.
#[test]
fn a_write_with_two_events_and_one_id_left_leaves_the_stream_untouched() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "{z}", "10", "STREAM", "{z}:o"]);
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

/// A lapse whose `expire` event the stream cannot take is not made without
/// it: the hold stays pending underneath (reads count it as released
/// anyway) and the timer retries, releasing it once the stream can take
/// the event again.
#[test]
fn the_timer_keeps_a_lapsed_hold_whose_event_cannot_be_written_and_retries() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "{t}", "10", "STREAM", "{t}:o"]);
    let deadline = server_now_ms(&mut con) + 300;
    place_holds(&mut con, "{t}", 1, None, deadline);
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
    // A fresh stream takes the event: the retry releases the hold.
    ok::<i64>(&mut con, &["DEL", "{t}:o"]);
    wait_until("the retried release", PATIENCE, || {
        ok::<i64>(&mut con, &["XLEN", "{t}:o"]) == 1
    });
    let released: Vec<String> = ok(&mut con, &["DEBUG", "DIGEST-VALUE", "{t}"]);
    assert_ne!(released, before);
}

/// A server whose eviction policy may evict items says so in its log when
/// the module loads, and again when CONFIG SET moves it to such a policy:
/// any `allkeys-*`, and `volatile-*`, which evicts the items with a TTL.
#[test]
fn an_eviction_policy_that_can_evict_items_logs_a_warning_at_load_and_when_set() {
    let server = Server::start_with(&["--maxmemory-policy", "allkeys-lru"]);
    assert!(
        server
            .log()
            .contains("maxmemory-policy is allkeys-lru: at maxmemory sale items can be evicted"),
        "{}",
        server.log()
    );
    let volatile = Server::start_with(&["--maxmemory-policy", "volatile-lru"]);
    assert!(
        volatile.log().contains(
            "maxmemory-policy is volatile-lru: at maxmemory sale items created with a TTL"
        ),
        "{}",
        volatile.log()
    );
    let quiet = Server::start_with(&["--maxmemory-policy", "noeviction"]);
    assert!(!quiet.log().contains("can be evicted"), "{}", quiet.log());

    let mut con = quiet.client();
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "maxmemory-policy", "volatile-ttl"],
    );
    ok::<String>(&mut con, &["CONFIG", "SET", "maxmemory", "0"]);
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
    );
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
    );
    let log = quiet.log();
    let warnings: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("can be evicted"))
        .collect();
    assert_eq!(warnings.len(), 2, "{log}");
    assert!(warnings[0].contains("is volatile-ttl"), "{log}");
    assert!(warnings[1].contains("is allkeys-lfu"), "{log}");
}

/// A rename or move noted for the timer, then SWAPDB before its next step
/// (in one transaction, or one replication batch): the timer still finds
/// the item, in the database it was swapped to.
#[test]
fn a_moved_item_swapped_before_the_next_timer_step_is_still_swept() {
    if !follows_renames() {
        return;
    }
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

/// WINDOW and STREAM that set what is there already change nothing: no
/// replication, no event, and a WATCH on the item survives.
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
