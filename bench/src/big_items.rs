//! Sections (e) and (i): one item with millions of buyers against Redis's
//! own types holding the same ids (a hash of the buyers, a set of the
//! request ids), in the same run on the same server.
//!
//! Every time here is server-side: `usec` from `INFO commandstats` for one
//! call, the longest entry of `SLOWLOG` under load, or the wall time of an
//! AOF rewrite child.

use crate::load::{median, redis_benchmark_on, Throughput};
use redis::Connection;
use seckill_harness::{command_stat, ok, server_info, used_memory_less_clients, Server};
use std::time::{Duration, Instant};

/// One operation timed on the item and on the native pair.
pub struct BigRow {
    pub operation: String,
    pub seckill_ms: f64,
    pub native_ms: f64,
}

/// `MEMORY USAGE` against what `used_memory` grew by while the item was
/// built, at one size.
pub struct MemoryRow {
    pub buyers: usize,
    pub memory_usage: f64,
    pub used_memory_growth: f64,
}

pub struct BigItems {
    pub buyers: usize,
    pub rows: Vec<BigRow>,
    pub memory: Vec<MemoryRow>,
    /// Bytes per key by `used_memory` growth over many keys: an item with
    /// no buyers, and `HSET h stock 100 limit 1 sold 0 refunded 0`.
    pub empty_item: f64,
    pub small_hash: f64,
}

pub struct Growth {
    pub buyers: i64,
    pub calls: usize,
    pub seckill: Throughput,
    pub native: Throughput,
    /// Longest single call, server-side (SLOWLOG), in ms.
    pub seckill_longest_ms: f64,
    pub native_longest_ms: f64,
    /// Calls that took over 1 ms, server-side.
    pub seckill_over_1ms: usize,
    pub native_over_1ms: usize,
    /// The server and the load generator each had a core of their own.
    pub pinned: bool,
}

const PIPELINE: usize = 10_000;

fn used_memory(con: &mut Connection) -> f64 {
    used_memory_less_clients(con).unwrap_or(f64::NAN)
}

/// Server-side milliseconds of one call of `args`, from INFO commandstats.
fn timed(con: &mut Connection, args: &[&[u8]]) -> f64 {
    ok::<String>(con, &["CONFIG", "RESETSTAT"]);
    let mut cmd = redis::cmd(std::str::from_utf8(args[0]).unwrap_or("PING"));
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query::<redis::Value>(con).expect("timed call");
    let name = String::from_utf8_lossy(args[0]).to_lowercase();
    command_stat(con, &name, "usec").unwrap_or(f64::NAN) / 1000.0
}

/// Medians of 5 rounds of `seckill` then `native`, taken in turn, so that
/// a slow spell of the machine weighs on both alike.
fn paired(
    con: &mut Connection,
    seckill: impl Fn(&mut Connection) -> f64,
    native: impl Fn(&mut Connection) -> f64,
) -> (f64, f64) {
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        ours.push(seckill(con));
        theirs.push(native(con));
    }
    (median(ours), median(theirs))
}

fn fill_item(con: &mut Connection, key: &str, buyers: usize) {
    ok::<i64>(con, &["SECKILL.INIT", key, "100000000000"]);
    for first in (0..buyers).step_by(PIPELINE) {
        let mut pipe = redis::pipe();
        for n in first..(first + PIPELINE).min(buyers) {
            pipe.cmd("SECKILL.DEDUCT")
                .arg(key)
                .arg(format!("user:{n}"))
                .arg(1)
                .arg("ID")
                .arg(format!("order:{n}"))
                .ignore();
        }
        pipe.query::<()>(con).expect("fill item");
    }
}

fn fill_native(con: &mut Connection, hash: &str, set: &str, buyers: usize) {
    for first in (0..buyers).step_by(PIPELINE) {
        let mut pipe = redis::pipe();
        for n in first..(first + PIPELINE).min(buyers) {
            pipe.cmd("HSET")
                .arg(hash)
                .arg(format!("user:{n}"))
                .arg(1)
                .ignore()
                .cmd("SADD")
                .arg(set)
                .arg(format!("order:{n}"))
                .ignore();
        }
        pipe.query::<()>(con).expect("fill native");
    }
}

fn dump(con: &mut Connection, key: &str) -> Vec<u8> {
    redis::cmd("DUMP").arg(key).query(con).expect("dump")
}

/// Wall time of a `BGREWRITEAOF` child, polled every 5 ms.
fn aof_rewrite_ms(con: &mut Connection) -> f64 {
    let in_progress = |con: &mut Connection| {
        server_info(con, "persistence", "aof_rewrite_in_progress").as_deref() == Some("1")
            || server_info(con, "persistence", "aof_rewrite_scheduled").as_deref() == Some("1")
    };
    while in_progress(con) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let started = Instant::now();
    ok::<String>(con, &["BGREWRITEAOF"]);
    while in_progress(con) {
        std::thread::sleep(Duration::from_millis(5));
    }
    started.elapsed().as_secs_f64() * 1000.0
}

/// Bytes per key over `count` keys made by `make`.
fn per_key(con: &mut Connection, count: usize, make: impl Fn(&mut redis::Pipeline, usize)) -> f64 {
    ok::<String>(con, &["FLUSHALL", "SYNC"]);
    let before = used_memory(con);
    let mut pipe = redis::pipe();
    for n in 0..count {
        make(&mut pipe, n);
    }
    pipe.query::<()>(con).expect("keys");
    (used_memory(con) - before) / count as f64
}

/// Table (i).
pub fn big_items(con: &mut Connection, buyers: usize) -> BigItems {
    println!("  one item of {buyers} buyers and request ids against a hash + a set");
    // Redis allocates a latency histogram for each command the first time
    // it runs: not the item's memory.
    ok::<String>(con, &["CONFIG", "SET", "latency-tracking", "no"]);
    let mut memory = Vec::new();
    for size in [1_000, 100_000] {
        ok::<String>(con, &["FLUSHALL", "SYNC"]);
        let before = used_memory(con);
        fill_item(con, "big", size);
        memory.push(MemoryRow {
            buyers: size,
            memory_usage: ok::<i64>(con, &["MEMORY", "USAGE", "big"]) as f64,
            used_memory_growth: used_memory(con) - before,
        });
    }
    ok::<String>(con, &["FLUSHALL", "SYNC"]);
    let before = used_memory(con);
    fill_item(con, "big", buyers);
    memory.push(MemoryRow {
        buyers,
        memory_usage: ok::<i64>(con, &["MEMORY", "USAGE", "big"]) as f64,
        used_memory_growth: used_memory(con) - before,
    });
    fill_native(con, "h", "s", buyers);

    let mut rows = Vec::new();
    let mut row = |operation: &str, seckill_ms: f64, native_ms: f64| {
        println!("    {operation:<28} {seckill_ms:>9.1} ms  {native_ms:>9.1} ms");
        rows.push(BigRow {
            operation: operation.to_owned(),
            seckill_ms,
            native_ms,
        });
    };
    let (seckill, native) = paired(
        con,
        |con| timed(con, &[b"DUMP", b"big"]),
        |con| timed(con, &[b"DUMP", b"h"]) + timed(con, &[b"DUMP", b"s"]),
    );
    row("`DUMP`", seckill, native);

    let payloads = [dump(con, "big"), dump(con, "h"), dump(con, "s")];
    let restore = |con: &mut Connection, key: &str, payload: &[u8]| {
        let ms = timed(con, &[b"RESTORE", key.as_bytes(), b"0", payload]);
        // Freed in the foreground: a lazy free on the other core would
        // overlap the next contender's RESTORE.
        ok::<i64>(con, &["DEL", key]);
        ms
    };
    let (seckill, native) = paired(
        con,
        |con| restore(con, "big:copy", &payloads[0]),
        |con| restore(con, "h:copy", &payloads[1]) + restore(con, "s:copy", &payloads[2]),
    );
    row(
        "`RESTORE` (what `MIGRATE` makes the target do)",
        seckill,
        native,
    );

    let (seckill, native) = paired(
        con,
        |con| timed(con, &[b"DEBUG", b"DIGEST-VALUE", b"big"]),
        |con| {
            timed(con, &[b"DEBUG", b"DIGEST-VALUE", b"h"])
                + timed(con, &[b"DEBUG", b"DIGEST-VALUE", b"s"])
        },
    );
    row("`DEBUG DIGEST-VALUE`", seckill, native);

    // A full scan, page by page: the longest call is what a reconcile job
    // costs the server at worst (against HSCAN of the hash of buyers). The
    // median of three scans' longest calls, taking turns: one scan's
    // longest is often a moment the load generator took the server's core
    // (3.4 ms in one run, 0.4 ms in the next, alike for HSCAN).
    for count in [100, 1_000] {
        let (mut seckill, mut native) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            seckill.push(longest_scan_call(con, "SECKILL.SCAN", "big", count));
            native.push(longest_scan_call(con, "HSCAN", "h", count));
        }
        let median = |mut calls: Vec<f64>| {
            calls.sort_by(f64::total_cmp);
            calls[calls.len() / 2]
        };
        let (seckill, native) = (median(seckill), median(native));
        row(
            &format!("longest call of a full `SECKILL.SCAN`, `COUNT {count}` (`HSCAN`)"),
            seckill,
            native,
        );
    }

    // Each contender alone in the database for the whole-dataset figures,
    // taking turns round by round as the other figures do: a rewrite ends
    // with an fsync, whose time drifts with what the disk is doing.
    ok::<String>(con, &["FLUSHALL", "SYNC"]);
    ok::<String>(con, &["CONFIG", "SET", "aof-use-rdb-preamble", "no"]);
    let alone = |con: &mut Connection, keys: &[(&str, &[u8])]| {
        ok::<String>(con, &["FLUSHALL", "SYNC"]);
        for (key, payload) in keys {
            redis::cmd("RESTORE")
                .arg(*key)
                .arg(0)
                .arg(*payload)
                .query::<()>(con)
                .expect("restore for a whole-dataset figure");
        }
        let reload = timed(con, &[b"DEBUG", b"RELOAD"]);
        ok::<String>(con, &["CONFIG", "SET", "appendonly", "yes"]);
        let rewrite = aof_rewrite_ms(con);
        ok::<String>(con, &["CONFIG", "SET", "appendonly", "no"]);
        (reload, rewrite)
    };
    let item_alone = [("big", payloads[0].as_slice())];
    let native_alone = [("h", payloads[1].as_slice()), ("s", payloads[2].as_slice())];
    let (mut seckill_reloads, mut native_reloads) = (Vec::new(), Vec::new());
    let (mut seckill_rewrites, mut native_rewrites) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let (reload, rewrite) = alone(con, &item_alone);
        seckill_reloads.push(reload);
        seckill_rewrites.push(rewrite);
        let (reload, rewrite) = alone(con, &native_alone);
        native_reloads.push(reload);
        native_rewrites.push(rewrite);
    }
    ok::<String>(con, &["CONFIG", "SET", "aof-use-rdb-preamble", "yes"]);
    let (seckill_reload, native_reload) = (median(seckill_reloads), median(native_reloads));
    let (seckill_rewrite, native_rewrite) = (median(seckill_rewrites), median(native_rewrites));
    row(
        "`DEBUG RELOAD` (save + load)",
        seckill_reload,
        native_reload,
    );
    row(
        "AOF rewrite without RDB preamble (child's wall time)",
        seckill_rewrite,
        native_rewrite,
    );
    ok::<String>(con, &["FLUSHALL", "SYNC"]);

    let keys = 10_000;
    let empty_item = per_key(con, keys, |pipe, n| {
        pipe.cmd("SECKILL.INIT")
            .arg(format!("item:{n}"))
            .arg(100)
            .arg("LIMIT")
            .arg(1)
            .ignore();
    });
    let small_hash = per_key(con, keys, |pipe, n| {
        pipe.cmd("HSET")
            .arg(format!("item:{n}"))
            .arg(&["stock", "100", "limit", "1", "sold", "0", "refunded", "0"])
            .ignore();
    });
    ok::<String>(con, &["FLUSHALL", "SYNC"]);
    ok::<String>(con, &["CONFIG", "SET", "latency-tracking", "yes"]);
    BigItems {
        buyers,
        rows,
        memory,
        empty_item,
        small_hash,
    }
}

/// The longest call, server-side (SLOWLOG) in ms, of a scan of `key` from
/// cursor 0 to the end with `command key cursor COUNT count`.
fn longest_scan_call(con: &mut Connection, command: &str, key: &str, count: usize) -> f64 {
    let threshold: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("slowlog-log-slower-than")
        .query(con)
        .expect("config get");
    ok::<String>(con, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    let mut cursor = "0".to_owned();
    let mut longest: f64 = 0.0;
    loop {
        ok::<String>(con, &["SLOWLOG", "RESET"]);
        let (next, _): (String, redis::Value) = redis::cmd(command)
            .arg(key)
            .arg(&cursor)
            .arg("COUNT")
            .arg(count)
            .query(con)
            .expect("scan call");
        longest = longest.max(scan_call_logged(con, command));
        if next == "0" {
            break;
        }
        cursor = next;
    }
    let old = threshold.get(1).map_or("10000", String::as_str);
    ok::<String>(con, &["CONFIG", "SET", "slowlog-log-slower-than", old]);
    longest
}

/// Milliseconds of the `command` call SLOWLOG kept last.
fn scan_call_logged(con: &mut Connection, command: &str) -> f64 {
    let entries: Vec<redis::Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(10)
        .query(con)
        .expect("slowlog");
    entries
        .iter()
        .filter_map(|entry| match entry {
            redis::Value::Array(fields) => {
                let named = matches!(fields.get(3), Some(redis::Value::Array(args))
                    if matches!(args.first(), Some(redis::Value::BulkString(name))
                        if name.eq_ignore_ascii_case(command.as_bytes())));
                match (named, fields.get(2)) {
                    (true, Some(redis::Value::Int(usec))) => Some(*usec as f64 / 1000.0),
                    _ => None,
                }
            }
            _ => None,
        })
        .fold(0.0, f64::max)
}

/// The longest call in SLOWLOG (entries over 100 µs are kept), in ms, and
/// how many calls took over 1 ms.
fn longest_logged(con: &mut Connection) -> (f64, usize) {
    let entries: Vec<redis::Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query(con)
        .expect("slowlog");
    let durations: Vec<f64> = entries
        .iter()
        .filter_map(|entry| match entry {
            redis::Value::Array(fields) => match fields.get(2) {
                Some(redis::Value::Int(usec)) => Some(*usec as f64 / 1000.0),
                _ => None,
            },
            _ => None,
        })
        .collect();
    (
        durations.iter().copied().fold(0.0, f64::max),
        durations.iter().filter(|ms| **ms > 1.0).count(),
    )
}

/// Pins the main thread of process `pid` (the one that runs commands) to
/// `cpus` (a `taskset` list); false if that could not be done. Its
/// background threads (lazy free, the allocator's purging) stay free to
/// run on the other core.
pub(crate) fn pin(pid: &str, cpus: &str) -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2)
        && std::process::Command::new("taskset")
            .args(["-p", "-c", cpus, pid])
            .output()
            .is_ok_and(|output| output.status.success())
}

/// Lets the main thread of process `pid` run on every CPU again.
pub(crate) fn unpin(pid: &str) {
    let all = std::thread::available_parallelism().map_or(2, |n| n.get());
    pin(pid, &format!("0-{}", all - 1));
}

/// Section (e): one item growing to `calls` buyers under `-P 16` load,
/// then a native hash growing the same way.
pub fn growth(server: &Server, con: &mut Connection, clients: usize, calls: usize) -> Growth {
    println!("  {calls} calls over users out of a billion, -P 16, each contender in turn");
    // The server on CPU 0 and the load on CPU 1: sharing both cores, either
    // one preempts the other now and then, and the longest call would
    // measure the scheduler rather than the command.
    let pid = server_info(con, "server", "process_id").unwrap_or_default();
    let pinned = pin(&pid, "0");
    let load_cpu = pinned.then_some(1);
    let run = |con: &mut Connection, args: &[&str]| {
        ok::<String>(con, &["CONFIG", "SET", "slowlog-log-slower-than", "100"]);
        ok::<String>(con, &["CONFIG", "SET", "slowlog-max-len", "1000000"]);
        ok::<String>(con, &["SLOWLOG", "RESET"]);
        let args: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
        let throughput = redis_benchmark_on(
            load_cpu,
            server.port,
            clients,
            calls,
            16,
            1_000_000_000,
            &args,
        );
        let longest = longest_logged(con);
        ok::<String>(con, &["SLOWLOG", "RESET"]);
        ok::<String>(con, &["CONFIG", "SET", "slowlog-log-slower-than", "10000"]);
        ok::<String>(con, &["CONFIG", "SET", "slowlog-max-len", "128"]);
        (throughput, longest)
    };
    ok::<String>(con, &["FLUSHALL", "SYNC"]);
    ok::<i64>(con, &["SECKILL.INIT", "grow", "100000000000000"]);
    let (seckill, (seckill_longest_ms, seckill_over_1ms)) =
        run(con, &["SECKILL.DEDUCT", "grow", "user:__rand_int__", "1"]);
    let buyers = crate::info_field(con, "grow", "buyers");
    ok::<String>(con, &["FLUSHALL", "ASYNC"]);
    let (native, (native_longest_ms, native_over_1ms)) =
        run(con, &["HSET", "grow", "user:__rand_int__", "1"]);
    ok::<String>(con, &["FLUSHALL", "ASYNC"]);
    if pinned {
        unpin(&pid);
    }
    println!(
        "    longest call: seckill {seckill_longest_ms:.2} ms ({seckill_over_1ms} over 1 ms), HSET {native_longest_ms:.2} ms ({native_over_1ms} over 1 ms)"
    );
    Growth {
        buyers,
        calls,
        seckill,
        native,
        seckill_longest_ms,
        native_longest_ms,
        seckill_over_1ms,
        native_over_1ms,
        pinned,
    }
}
