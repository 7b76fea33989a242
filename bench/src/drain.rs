//! Section (h): how fast seckill-orders turns a backlog of order-stream
//! entries into rows, with one consumer and with two, against PostgreSQL's
//! own `COPY` of the same rows.

use crate::report::{Drain, DrainRun};
use postgres::{Client, NoTls};
use redis::Connection;
use seckill_harness::postgres::Postgres;
use seckill_harness::{ok, Server};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The item and its order stream, in one hash slot through the tag.
const ITEM: &str = "{drain}";
const STREAM: &str = "{drain}:orders";
/// How often the row count is read while consumers drain.
pub const DRAIN_POLL: Duration = Duration::from_millis(50);
/// How long a drain may take before the run gives up on it.
const DRAIN_GIVE_UP: Duration = Duration::from_secs(300);
/// How long after the last row the group may still show pending entries
/// (each batch is acknowledged just after its commit).
const ACK_GRACE: Duration = Duration::from_secs(5);
/// The consumer's columns, in its table's order.
const COLUMNS: &str = "item, order_id, user_id, qty, status, stock_after, created_at_ms, \
                       updated_at_ms, last_entry_ms, last_entry_seq";

/// The seckill-orders binary beside this one, built first with the same
/// profile (a no-op when it is up to date), so that the run never measures
/// a stale consumer. `Err` says why it cannot be had.
pub fn consumer_binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|err| format!("no path to the bench: {err}"))?;
    let dir = exe
        .parent()
        .ok_or_else(|| "the bench's binary has no directory".to_owned())?;
    let binary = dir.join("seckill-orders");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut build = Command::new(cargo);
    build
        .args(["build", "--quiet", "-p", "seckill-orders"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    if !cfg!(debug_assertions) {
        build.arg("--release");
    }
    println!("  building seckill-orders (cargo build -p seckill-orders)");
    let built = build.status();
    if binary.exists() {
        if !built.as_ref().is_ok_and(|status| status.success()) {
            println!(
                "  could not rebuild it ({}); using {}",
                built.map_or_else(|err| err.to_string(), |status| status.to_string()),
                binary.display()
            );
        }
        Ok(binary)
    } else {
        Err(format!(
            "no seckill-orders binary at {} (`cargo build --release -p seckill-orders`)",
            binary.display()
        ))
    }
}

/// Consumer processes, killed when dropped, even if the run panics.
struct Consumers {
    children: Vec<(Child, PathBuf)>,
}

impl Consumers {
    fn start(
        binary: &Path,
        server: &Server,
        pg: &Postgres,
        group: &str,
        count: usize,
        logs: &Path,
    ) -> Consumers {
        let mut children = Vec::new();
        for n in 1..=count {
            let name = format!("c{n}");
            let log_path = logs.join(format!("{group}-{name}.log"));
            let log = File::create(&log_path).expect("consumer log");
            let child = Command::new(binary)
                .args(["--redis-url", &server.url()])
                .args(["--postgres-url", &pg.url()])
                .args(["--stream", STREAM])
                .args(["--group", group])
                .args(["--consumer", &name])
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("start seckill-orders");
            children.push((child, log_path));
        }
        Consumers { children }
    }

    /// The log of the first consumer that has exited, if any.
    fn exited(&mut self) -> Option<String> {
        self.children.iter_mut().find_map(|(child, log)| {
            let status = child.try_wait().ok()??;
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(5).collect();
            Some(format!(
                "a consumer exited ({status}): {}",
                tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
            ))
        })
    }
}

impl Drop for Consumers {
    fn drop(&mut self) {
        for (child, _) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Rows in the consumer's table; 0 while it does not exist yet.
fn rows(client: &mut Client) -> i64 {
    client
        .query_one("SELECT count(*) FROM seckill_orders", &[])
        .map_or(0, |row| row.get(0))
}

/// Entries the group holds delivered but not acknowledged.
fn pending(con: &mut Connection, group: &str) -> i64 {
    let summary: redis::Value = ok(con, &["XPENDING", STREAM, group]);
    match summary {
        redis::Value::Array(parts) => parts
            .first()
            .and_then(|count| redis::from_redis_value(count.clone()).ok())
            .unwrap_or(-1),
        _ => -1,
    }
}

/// The consumer's table and schema version gone, so that it starts afresh.
fn fresh_table(client: &mut Client) {
    client
        .batch_execute("DROP TABLE IF EXISTS seckill_orders, seckill_orders_schema")
        .expect("drop the orders table");
}

/// `count` consumers in a new group `group` drain the whole stream: from
/// the first process's start until `SELECT count(*)` reaches the backlog.
#[allow(clippy::too_many_arguments)]
fn consumer_run(
    binary: &Path,
    server: &Server,
    con: &mut Connection,
    pg: &Postgres,
    client: &mut Client,
    group: &str,
    count: usize,
    entries: usize,
    logs: &Path,
    problems: &mut Vec<String>,
) -> DrainRun {
    fresh_table(client);
    let _: redis::Value = ok(con, &["XGROUP", "DESTROY", STREAM, group]);
    let target = entries as i64;
    let started = Instant::now();
    let mut consumers = Consumers::start(binary, server, pg, group, count, logs);
    let mut seconds = None;
    let seen = loop {
        let seen = rows(client);
        if seen >= target {
            seconds = Some(started.elapsed().as_secs_f64());
            break seen;
        }
        if let Some(exit) = consumers.exited() {
            problems.push(format!("{count} consumer(s): {exit}"));
            break seen;
        }
        if started.elapsed() > DRAIN_GIVE_UP {
            problems.push(format!(
                "{count} consumer(s): {seen} of {entries} rows after {} s",
                DRAIN_GIVE_UP.as_secs()
            ));
            break seen;
        }
        std::thread::sleep(DRAIN_POLL);
    };
    if seconds.is_some() {
        let settle = Instant::now();
        let mut left = pending(con, group);
        while left != 0 && settle.elapsed() < ACK_GRACE {
            std::thread::sleep(DRAIN_POLL);
            left = pending(con, group);
        }
        if left != 0 {
            problems.push(format!(
                "{count} consumer(s): {left} entries still pending {} s after the last row",
                ACK_GRACE.as_secs()
            ));
        }
    }
    drop(consumers);
    let purchased: i64 = client
        .query_one(
            "SELECT count(*) FILTER (WHERE status = 'purchased' AND qty = 1) FROM seckill_orders",
            &[],
        )
        .map_or(-1, |row| row.get(0));
    if seconds.is_some() && (seen != target || purchased != target) {
        problems.push(format!(
            "{count} consumer(s): {seen} rows, {purchased} purchases of 1 unit, for {entries} entries"
        ));
    }
    DrainRun {
        what: format!("{count}"),
        rows: seen,
        seconds,
    }
}

/// PostgreSQL's own `COPY` of the rows the consumers wrote, into a fresh
/// table of the same shape (columns, constraints, primary key); only the
/// COPY is timed.
fn copy_run(client: &mut Client, entries: usize, problems: &mut Vec<String>) -> DrainRun {
    let mut data = Vec::new();
    client
        .copy_out(&format!("COPY seckill_orders ({COLUMNS}) TO STDOUT"))
        .expect("COPY the rows out")
        .read_to_end(&mut data)
        .expect("read the rows");
    client
        .batch_execute(
            "DROP TABLE IF EXISTS drain_copy; \
             CREATE TABLE drain_copy (LIKE seckill_orders INCLUDING ALL); \
             DROP TABLE seckill_orders, seckill_orders_schema; \
             ALTER TABLE drain_copy RENAME TO seckill_orders",
        )
        .expect("a fresh table");
    let started = Instant::now();
    let mut writer = client
        .copy_in(&format!("COPY seckill_orders ({COLUMNS}) FROM STDIN"))
        .expect("COPY in");
    writer.write_all(&data).expect("COPY data");
    let copied = writer.finish().expect("COPY");
    let seconds = started.elapsed().as_secs_f64();
    let copied = copied as i64;
    if copied != entries as i64 {
        problems.push(format!("COPY wrote {copied} rows for {entries} entries"));
    }
    DrainRun {
        what: "`COPY` (ceiling)".to_owned(),
        rows: copied,
        seconds: Some(seconds),
    }
}

/// `synchronous_commit` as a new session sees it.
fn synchronous_commit(pg: &Postgres) -> String {
    pg.sql("SHOW synchronous_commit").trim().to_owned()
}

/// Section (h): one backlog of `entries` purchases, drained by one
/// consumer, then by two in a new group, then copied by `COPY`; commits
/// durable throughout, the cluster's setting restored afterwards.
pub fn drain(
    server: &Server,
    con: &mut Connection,
    pg: &Postgres,
    binary: &Path,
    entries: usize,
) -> Drain {
    let mut problems = Vec::new();
    ok::<String>(con, &["FLUSHALL"]);
    ok::<i64>(
        con,
        &["SECKILL.INIT", ITEM, &entries.to_string(), "STREAM", STREAM],
    );
    println!("  backlog: {entries} purchases into {STREAM}");
    for batch in (0..entries).collect::<Vec<_>>().chunks(1000) {
        let mut pipe = redis::pipe();
        for n in batch {
            pipe.cmd("SECKILL.DEDUCT")
                .arg(ITEM)
                .arg(format!("u{n}"))
                .arg(1)
                .arg("ID")
                .arg(format!("o{n}"))
                .ignore();
        }
        pipe.query::<()>(con).expect("purchases");
    }
    let backlog: usize = ok(con, &["XLEN", STREAM]);
    if backlog != entries {
        problems.push(format!("{backlog} stream entries for {entries} purchases"));
    }

    // Durable commits, PostgreSQL's default, whatever earlier sections left.
    let found = synchronous_commit(pg);
    pg.set_durable_commits(true);
    let reloaded = Instant::now();
    while synchronous_commit(pg) != "on" && reloaded.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let durable = synchronous_commit(pg) == "on";
    if !durable {
        problems.push("synchronous_commit did not turn on".to_owned());
    }

    let logs = tempfile::Builder::new()
        .prefix("seckill-bench-drain-")
        .tempdir()
        .expect("log dir");
    let mut client = Client::connect(&pg.url(), NoTls).expect("connect to PostgreSQL");
    let mut runs = Vec::new();
    for (group, count) in [("drain-1", 1), ("drain-2", 2)] {
        println!("  {count} consumer(s), group {group}");
        let run = consumer_run(
            binary,
            server,
            con,
            pg,
            &mut client,
            group,
            count,
            entries,
            logs.path(),
            &mut problems,
        );
        if let Some(seconds) = run.seconds {
            println!(
                "    {} rows in {seconds:.2} s: {:.0} rows/s",
                run.rows,
                run.rows as f64 / seconds
            );
        }
        runs.push(run);
    }
    println!("  COPY of the same rows into a fresh table");
    let copy = if runs.iter().any(|run| run.rows == entries as i64) {
        let copy = copy_run(&mut client, entries, &mut problems);
        if let Some(seconds) = copy.seconds {
            println!(
                "    {} rows in {seconds:.3} s: {:.0} rows/s",
                copy.rows,
                copy.rows as f64 / seconds
            );
        }
        Some(copy)
    } else {
        problems.push("no consumer wrote every row, so there was nothing to COPY".to_owned());
        None
    };
    let _ = client.batch_execute("DROP TABLE IF EXISTS seckill_orders, seckill_orders_schema");
    drop(client);

    // Back to what the bench had set.
    pg.set_durable_commits(found != "off");
    ok::<String>(con, &["FLUSHALL"]);
    Drain {
        entries,
        runs,
        copy,
        durable,
        found,
        poll: DRAIN_POLL,
        problems,
    }
}
