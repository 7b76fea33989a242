//! Section (h): how fast seckill-orders turns a backlog of order-stream
//! entries into rows, with one consumer and with two, against PostgreSQL's
//! own `COPY` of the same rows; and what `--wait-replicas 1` costs one
//! consumer on a master with a replica.

use crate::load::median;
use crate::report::{Drain, DrainRun, ReplicaDrain};
use postgres::{Client, NoTls};
use redis::Connection;
use seckill_harness::metrics::{sample, scrape};
use seckill_harness::postgres::Postgres;
use seckill_harness::{command_calls, free_port, ok, server_info, Server};
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
/// Rounds of the pair of runs on the master with a replica: each run is
/// one noisy sample on shared cores, and the ratio is what the rows are for.
const REPLICA_ROUNDS: usize = 5;
/// `--wait-timeout-ms` of the run that waits: the consumer's default,
/// given explicitly so that the report can name it.
pub const WAIT_TIMEOUT_MS: u64 = 1000;
/// How long the replica may take to catch up with its master between runs.
const CATCH_UP: Duration = Duration::from_secs(10);
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
        flags: &[String],
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
                .args(flags)
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

/// One drain of the whole stream: who does it, and with which flags.
struct Spec<'a> {
    /// The row's first column.
    what: String,
    /// A new consumer group, so that the drain reads from the start.
    group: &'a str,
    /// Consumer processes.
    count: usize,
    /// The run's `--wait-replicas`, always given, so that a
    /// `SECKILL_WAIT_REPLICAS` in the bench's environment changes nothing.
    wait_replicas: u64,
}

/// What one drain took, and with `--wait-replicas`, how many pages the
/// consumer held back because `WAIT` timed out (from its metrics).
struct Drained {
    run: DrainRun,
    held_back: Option<f64>,
}

/// `spec.count` consumers in a new group drain the whole stream: from the
/// first process's start until `SELECT count(*)` reaches the backlog.
#[allow(clippy::too_many_arguments)]
fn consumer_run(
    binary: &Path,
    server: &Server,
    con: &mut Connection,
    pg: &Postgres,
    client: &mut Client,
    spec: &Spec,
    entries: usize,
    logs: &Path,
    problems: &mut Vec<String>,
) -> Drained {
    let Spec {
        group,
        count,
        wait_replicas,
        ..
    } = *spec;
    // Problems name the row they belong to: "2 consumer(s)" for a row
    // whose first column is only the count.
    let what = if spec.what.parse::<usize>().is_ok() {
        format!("{count} consumer(s)")
    } else {
        spec.what.clone()
    };
    fresh_table(client);
    let _: redis::Value = ok(con, &["XGROUP", "DESTROY", STREAM, group]);
    let mut flags = vec!["--wait-replicas".to_owned(), wait_replicas.to_string()];
    // The held-back count comes from the metrics, so only a run that waits
    // serves them, and only with one process (one port).
    let metrics_port = (wait_replicas > 0 && count == 1).then(free_port);
    if let Some(port) = metrics_port {
        flags.extend([
            "--wait-timeout-ms".to_owned(),
            WAIT_TIMEOUT_MS.to_string(),
            "--metrics-addr".to_owned(),
            format!("127.0.0.1:{port}"),
        ]);
    }
    let target = entries as i64;
    let started = Instant::now();
    let mut consumers = Consumers::start(binary, server, pg, group, count, logs, &flags);
    let mut seconds = None;
    let seen = loop {
        let seen = rows(client);
        if seen >= target {
            seconds = Some(started.elapsed().as_secs_f64());
            break seen;
        }
        if let Some(exit) = consumers.exited() {
            problems.push(format!("{what}: {exit}"));
            break seen;
        }
        if started.elapsed() > DRAIN_GIVE_UP {
            problems.push(format!(
                "{what}: {seen} of {entries} rows after {} s",
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
                "{what}: {left} entries still pending {} s after the last row",
                ACK_GRACE.as_secs()
            ));
        }
    }
    let held_back =
        metrics_port.and_then(|port| sample(&scrape(port), "seckill_orders_pages_held_back_total"));
    if metrics_port.is_some() && held_back.is_none() {
        problems.push(format!(
            "{what}: no seckill_orders_pages_held_back_total in its metrics"
        ));
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
            "{what}: {seen} rows, {purchased} purchases of 1 unit, for {entries} entries"
        ));
    }
    Drained {
        run: DrainRun {
            what: spec.what.clone(),
            rows: seen,
            seconds,
        },
        held_back,
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

/// The backlog: one item sells its `entries` units one at a time, each
/// purchase a `purchase` entry in its stream.
fn fill_backlog(con: &mut Connection, entries: usize, problems: &mut Vec<String>) {
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
}

/// Section (h): one backlog of `entries` purchases, drained by one
/// consumer, then by two in a new group, then copied by `COPY`, then the
/// one-consumer drain without and with `--wait-replicas 1` on another
/// master with a replica; commits durable throughout, the cluster's
/// setting restored afterwards.
pub fn drain(
    server: &Server,
    con: &mut Connection,
    pg: &Postgres,
    binary: &Path,
    entries: usize,
) -> Drain {
    let mut problems = Vec::new();
    ok::<String>(con, &["FLUSHALL"]);
    fill_backlog(con, entries, &mut problems);

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
        let spec = Spec {
            what: format!("{count}"),
            group,
            count,
            wait_replicas: 0,
        };
        let drained = consumer_run(
            binary,
            server,
            con,
            pg,
            &mut client,
            &spec,
            entries,
            logs.path(),
            &mut problems,
        );
        print_run(&drained.run);
        runs.push(drained.run);
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
    let replica = replica_runs(binary, pg, &mut client, entries, logs.path(), &mut problems);
    let _ = client.batch_execute("DROP TABLE IF EXISTS seckill_orders, seckill_orders_schema");
    drop(client);

    // Back to what the bench had set.
    pg.set_durable_commits(found != "off");
    ok::<String>(con, &["FLUSHALL"]);
    Drain {
        entries,
        runs,
        replica,
        copy,
        durable,
        found,
        poll: DRAIN_POLL,
        problems,
    }
}

fn print_run(run: &DrainRun) {
    if let Some(seconds) = run.seconds {
        println!(
            "    {} rows in {seconds:.2} s: {:.0} rows/s",
            run.rows,
            run.rows as f64 / seconds
        );
    }
}

/// A replication offset from INFO replication (`master_repl_offset`: on a
/// replica, how far it has applied its master's stream).
fn repl_offset(con: &mut Connection) -> Option<i64> {
    server_info(con, "replication", "master_repl_offset")?
        .parse()
        .ok()
}

/// Waits until the replica has applied everything its master wrote, so
/// that no run pays for replicating what an earlier one left (the backlog,
/// the previous group's acknowledgements); false after `CATCH_UP`.
fn caught_up(master: &mut Connection, replica: &mut Connection) -> bool {
    let started = Instant::now();
    while started.elapsed() < CATCH_UP {
        let (wanted, got) = (repl_offset(master), repl_offset(replica));
        if wanted.is_some() && wanted == got {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// The median of the runs that reached the backlog, as one row; `None`
/// seconds when none did.
fn median_run(what: String, runs: &[DrainRun]) -> DrainRun {
    let seconds: Vec<f64> = runs.iter().filter_map(|run| run.seconds).collect();
    DrainRun {
        what,
        rows: runs.iter().map(|run| run.rows).min().unwrap_or(0),
        seconds: (!seconds.is_empty()).then(|| median(seconds)),
    }
}

/// The one-consumer drain of the same backlog on a master of its own with
/// one replica attached, without and with `--wait-replicas 1`, in
/// `REPLICA_ROUNDS` rounds that take the two in turn (which goes first
/// alternates, so that a drift in the machine's load favours neither).
/// A master of its own, so that the replica and its replication backlog
/// touch no other section's server.
fn replica_runs(
    binary: &Path,
    pg: &Postgres,
    client: &mut Client,
    entries: usize,
    logs: &Path,
    problems: &mut Vec<String>,
) -> ReplicaDrain {
    let master = Server::start_with(&["--appendonly", "no"]);
    let mut con = master.client();
    fill_backlog(&mut con, entries, problems);
    println!("  a replica of that master (full sync)");
    let replica = Server::start_replica_of(&master);
    let mut replica_con = replica.client();
    let plain = Spec {
        what: "1, master with a replica".to_owned(),
        group: "drain-replica",
        count: 1,
        wait_replicas: 0,
    };
    let waiting = Spec {
        what: "1, master with a replica, `--wait-replicas 1`".to_owned(),
        group: "drain-wait",
        count: 1,
        wait_replicas: 1,
    };
    // WAIT's calls tell that the waiting runs did wait (a flag the
    // consumer ignored would look like a free wait).
    ok::<String>(&mut con, &["CONFIG", "RESETSTAT"]);
    let (mut plain_runs, mut waiting_runs) = (Vec::new(), Vec::new());
    let mut held_back = 0.0;
    for round in 0..REPLICA_ROUNDS {
        let order = if round % 2 == 0 {
            [&plain, &waiting]
        } else {
            [&waiting, &plain]
        };
        for spec in order {
            println!(
                "  round {}/{REPLICA_ROUNDS}: {}",
                round + 1,
                spec.what.replace('`', "")
            );
            if !caught_up(&mut con, &mut replica_con) {
                problems.push(format!(
                    "the replica had not caught up with its master after {} s",
                    CATCH_UP.as_secs()
                ));
            }
            let drained = consumer_run(
                binary, &master, &mut con, pg, client, spec, entries, logs, problems,
            );
            print_run(&drained.run);
            held_back += drained.held_back.unwrap_or(0.0);
            if spec.wait_replicas > 0 {
                waiting_runs.push(drained.run);
            } else {
                plain_runs.push(drained.run);
            }
        }
    }
    // Each round's two runs are neighbours in time, so their ratio is
    // taken round by round: a drift of the shared machine's load between
    // rounds then moves both sides of it.
    let ratios: Vec<f64> = plain_runs
        .iter()
        .zip(&waiting_runs)
        .filter_map(|(plain, waiting)| Some(waiting.rate()? / plain.rate()?))
        .collect();
    let waits = command_calls(&mut con, "wait");
    if waits == 0 {
        problems.push("the consumer with --wait-replicas 1 sent no WAIT".to_owned());
    }
    let link = server_info(&mut replica_con, "replication", "master_link_status");
    if link.as_deref() != Some("up") {
        problems.push(format!(
            "the replica's link to its master was {} after the runs",
            link.as_deref().unwrap_or("unknown")
        ));
    }
    ReplicaDrain {
        rounds: REPLICA_ROUNDS,
        without: median_run(plain.what, &plain_runs),
        waiting: median_run(waiting.what, &waiting_runs),
        ratio: (!ratios.is_empty()).then(|| median(ratios)),
        held_back,
        waits,
        wait_timeout_ms: WAIT_TIMEOUT_MS,
    }
}
