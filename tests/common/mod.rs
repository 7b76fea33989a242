//! Helpers shared by the integration tests: the server harness itself lives
//! in the `seckill-harness` crate, which the benchmark uses too.

#![allow(dead_code)]

pub use seckill_harness::*;

use redis::{Connection, Value};
use std::time::Duration;

/// SECKILL.INFO as (field, value) pairs, in reply order.
pub fn info(con: &mut Connection, key: &str) -> Vec<(String, i64)> {
    let value: Value = ok(con, &["SECKILL.INFO", key]);
    let items = match value {
        Value::Array(items) => items,
        Value::Map(pairs) => pairs.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        Value::Nil => return Vec::new(),
        other => panic!("unexpected INFO reply {other:?}"),
    };
    // Integer fields only: the order stream's name is left out.
    items
        .chunks(2)
        .filter_map(|pair| {
            let field: String = redis::from_redis_value(pair[0].clone()).ok()?;
            match pair[1] {
                Value::Int(value) => Some((field, value)),
                _ => None,
            }
        })
        .collect()
}

pub fn info_field(con: &mut Connection, key: &str, field: &str) -> i64 {
    info(con, key)
        .into_iter()
        .find(|(name, _)| name == field)
        .map(|(_, value)| value)
        .unwrap_or_else(|| panic!("INFO {key} has no field {field}"))
}

/// Everything observable about an item: its INFO and Redis's digest of it.
pub fn snapshot(con: &mut Connection, key: &str) -> (Vec<(String, i64)>, String) {
    let digests: Vec<String> = ok(con, &["DEBUG", "DIGEST-VALUE", key]);
    (info(con, key), digests.concat())
}

/// Builds an item with every kind of state: buyers with and without request
/// ids, a refund, a restock, a request id that was replayed. `buyers` above
/// 1024 makes the item span several chunks on disk.
pub fn fill_mixed(con: &mut Connection, key: &str, buyers: usize) {
    let stock = (buyers * 2).to_string();
    ok::<i64>(con, &["SECKILL.INIT", key, &stock, "LIMIT", "3"]);
    for n in 0..buyers {
        let user = format!("user:{n}");
        let id = format!("order:{n}");
        let reply: i64 = ok(con, &["SECKILL.DEDUCT", key, &user, "1", "ID", &id]);
        assert!(reply >= 0, "deduct {n} got {reply}");
    }
    ok::<i64>(con, &["SECKILL.DEDUCT", key, "user:0", "2"]);
    ok::<i64>(con, &["SECKILL.DEDUCT", key, "user:0", "1"]); // over the limit
    ok::<i64>(
        con,
        &["SECKILL.DEDUCT", key, "user:1", "1", "ID", "order:1"],
    ); // replay
    ok::<i64>(con, &["SECKILL.REFUND", key, "order:1"]);
    ok::<i64>(con, &["SECKILL.ADD", key, "7"]);
}

/// Rewrites the AOF in the background and waits until it finished well.
pub fn rewrite_aof(con: &mut Connection) {
    ok::<String>(con, &["BGREWRITEAOF"]);
    wait_until(
        "the AOF rewrite",
        std::time::Duration::from_secs(30),
        || {
            server_info(con, "persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
                && server_info(con, "persistence", "aof_rewrite_scheduled").as_deref() == Some("0")
        },
    );
    assert_eq!(
        server_info(con, "persistence", "aof_last_bgrewrite_status").as_deref(),
        Some("ok")
    );
}

/// Copies `from` to `to` through DUMP and RESTORE; returns the payload.
pub fn dump_and_restore(con: &mut Connection, from: &str, to: &str) -> Vec<u8> {
    let payload: Vec<u8> = ok(con, &["DUMP", from]);
    let restored: String = redis::cmd("RESTORE")
        .arg(to)
        .arg(0)
        .arg(&payload)
        .query(con)
        .expect("RESTORE");
    assert_eq!(restored, "OK");
    payload
}

/// How long a test waits for the module's timer to do its work.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// The server's clock, in milliseconds.
pub fn server_now_ms(con: &mut Connection) -> i64 {
    let time: Vec<i64> = ok(con, &["TIME"]);
    time[0] * 1000 + time[1] / 1000
}

/// A TIME reply, in milliseconds.
fn time_ms(value: &Value) -> i64 {
    let time: Vec<i64> = redis::from_redis_value(value.clone()).expect("a TIME reply");
    time[0] * 1000 + time[1] / 1000
}

/// A connection to database `db`.
pub fn client_db(server: &Server, db: i64) -> Connection {
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
pub fn pipeline(con: &mut Connection, commands: &[Vec<String>]) -> Vec<Value> {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for args in commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        pipe.add_command(command(&args));
    }
    pipe.query(con).expect("the pipeline's replies")
}

/// The arguments of one command, owned, for `pipeline`.
pub fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|arg| arg.to_string()).collect()
}

/// "CODE detail" of an error reply; panics on anything else.
pub fn error_line(value: &Value, what: &str) -> String {
    match value {
        Value::ServerError(err) => match err.details() {
            Some(detail) => format!("{} {detail}", err.code()),
            None => err.code().to_owned(),
        },
        other => panic!("{what}: expected an error reply, got {other:?}"),
    }
}

/// DUMP of `key`, as the reply it is.
pub fn dump(con: &mut Connection, key: &str) -> Value {
    ok(con, &["DUMP", key])
}

/// Holds `count` requests `h0..` of one unit each, by users `u0..` (or all
/// by `one_user`), all with the same absolute deadline; pipelined.
pub fn place_holds(
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
/// in front: no timer can run between the sleep and these commands, since
/// the server runs every command of a pipeline it read at once before it
/// looks at its timers again. Returns the replies to `after` only.
pub fn right_after_deadline(
    con: &mut Connection,
    deadline: i64,
    after: &[Vec<String>],
) -> Vec<Value> {
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

/// The state byte of a pending hold in a request chunk.
const HELD: u8 = 2;

/// A request chunk of one pending hold.
pub fn hold_chunk(id: &[u8], user: &[u8], qty: i64, deadline: i64) -> Vec<u8> {
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

/// SECKILL.LOADCHUNK `key` `chunk`, sent as a client would.
pub fn load_chunk(con: &mut Connection, key: &str, chunk: &[u8]) -> redis::RedisResult<Value> {
    redis::cmd("SECKILL.LOADCHUNK")
        .arg(key)
        .arg(chunk)
        .query(con)
}

/// "CODE detail" of a refused call; panics if it was accepted.
pub fn refusal_line(result: redis::RedisResult<Value>, what: &str) -> String {
    match result {
        Ok(value) => panic!("{what} was accepted: {value:?}"),
        Err(err) => match (err.code(), err.detail()) {
            (Some(code), Some(detail)) => format!("{code} {detail}"),
            (Some(code), None) => code.to_owned(),
            _ => err.to_string(),
        },
    }
}
