//! Section (k): calls on an item while a backlog of its lapsed holds waits
//! for the sweep. Reads and writes judge a lapsed hold as released; this
//! shows what that costs them as the backlog grows.
//!
//! Every row is an item of its own in one server started for this table,
//! and the rounds visit the items in turn, in a rotating order: whatever
//! else the machine does slows every row alike, not only the one measured
//! at that moment.

use redis::Connection;
use seckill_harness::{command_stat, ok, server_info, Server};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// The calls measured: (what the table calls it, the command's
/// commandstats name).
pub const CALLS: [(&str, &str); 5] = [
    ("GET", "seckill.get"),
    ("INFO", "seckill.info"),
    ("DEDUCT ... ID, buyer with a lapsed hold", "seckill.deduct"),
    ("CONFIRM", "seckill.confirm"),
    ("HOLDS key user", "seckill.holds"),
];

/// Rounds of the calls on each item, of which the median is kept.
const ROUNDS: usize = 5;

/// The target: each call with the largest backlog against itself with none.
pub const BOUND: f64 = 1.5;

/// How far ahead of the server's clock a lapsing hold's deadline is set
/// when its batch is sent: each batch of holds is placed well before it.
const LEAD_MS: i64 = 1_500;

/// Calls sent in one pipeline.
const BATCH: usize = 10_000;

pub struct Row {
    pub lapsed: usize,
    /// Server µs per call, in the order of `CALLS`.
    pub usec: Vec<Option<f64>>,
}

pub struct Backlog {
    pub rows: Vec<Row>,
    /// Holds of the item in every row.
    pub holds: usize,
    pub calls: usize,
    /// Why the figures may not show what they claim (the sweep ran while
    /// they were taken), if so.
    pub problems: Vec<String>,
}

impl Backlog {
    /// The call `index` of `CALLS`: its worst figure with a backlog over
    /// its figure with none. None when the sweep spoiled the figures.
    pub fn ratio(&self, index: usize) -> Option<f64> {
        if !self.problems.is_empty() {
            return None;
        }
        let figure = |row: &Row| row.usec.get(index).copied().flatten();
        let none = figure(self.rows.first()?).filter(|none| *none > 0.0)?;
        self.rows[1..]
            .iter()
            .map(|row| figure(row).map(|usec| usec / none))
            .try_fold(None, |worst: Option<f64>, ratio| {
                ratio.map(|ratio| Some(worst.map_or(ratio, |worst| worst.max(ratio))))
            })?
    }

    pub fn largest(&self) -> usize {
        self.rows.last().map_or(0, |row| row.lapsed)
    }

    pub fn markdown(&self) -> String {
        let mut out = format!(
            "## (k) A backlog of lapsed holds\n\n\
             One item per row, each of {} holds, one per buyer, of which this many lapsed \
             and are not released yet (the sweep held off with `seckill.sweep-interval-ms \
             60000`); the others are pending. The lapsed holds fell due over the seconds \
             it took to place them, {LEAD_MS} ms after each batch of {BATCH}. All the items \
             are in one server started for this table, and each of {ROUNDS} rounds calls \
             every item in turn, in a rotating order; the median round is shown. Server µs \
             per call from `INFO commandstats`, {} calls each, pipelined. The buyers who \
             purchase again hold one of the lapsed holds (a pending one in the first row); \
             their purchase leaves it to the sweep; since its quota and its reply count the \
             lapsed units as given back, it reaches replicas with the moment it was judged \
             at (`AT`) unless that is the item's replicated moment (the same millisecond as \
             its last such call). `CONFIRM` confirms holds still pending; `HOLDS key user` \
             lists a user's 10 pending holds.\n\n\
             | lapsed holds |",
            self.holds, self.calls
        );
        for (name, _) in CALLS {
            let _ = write!(out, " {name} |");
        }
        out.push_str("\n|--:|");
        out.push_str(&"--:|".repeat(CALLS.len()));
        out.push('\n');
        let none = self.rows.first();
        for row in &self.rows {
            let _ = write!(out, "| {} |", row.lapsed);
            for (index, usec) in row.usec.iter().enumerate() {
                let base = none.and_then(|none| none.usec[index]);
                match (usec, base) {
                    (Some(usec), Some(base)) if row.lapsed > 0 && base > 0.0 => {
                        let _ = write!(out, " {usec:.2} ({:.2}×) |", usec / base);
                    }
                    (Some(usec), _) => {
                        let _ = write!(out, " {usec:.2} |");
                    }
                    (None, _) => out.push_str(" – |"),
                }
            }
            out.push('\n');
        }
        for problem in &self.problems {
            let _ = writeln!(out, "\n**Not as described:** {problem}");
        }
        out
    }
}

fn server_ms(con: &mut Connection) -> i64 {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query(con).expect("TIME");
    secs * 1000 + micros / 1000
}

fn sweep_runs(con: &mut Connection) -> Option<String> {
    server_info(con, "seckill", "seckill_sweep_runs")
}

/// Sends `calls` in pipelines of `BATCH`; `before_batch` runs before each
/// batch is built and its result is handed to every call of it.
fn pipelined_with<T: Copy>(
    con: &mut Connection,
    count: usize,
    mut before_batch: impl FnMut(&mut Connection) -> T,
    call: impl Fn(usize, T) -> redis::Cmd,
) {
    for start in (0..count).step_by(BATCH) {
        let context = before_batch(con);
        let mut pipe = redis::pipe();
        for n in start..(start + BATCH).min(count) {
            pipe.add_command(call(n, context)).ignore();
        }
        // Replies such as -4 are fine: only the cost is measured.
        let _: redis::RedisResult<()> = pipe.query(con);
    }
}

fn pipelined(con: &mut Connection, count: usize, call: impl Fn(usize) -> redis::Cmd) {
    pipelined_with(con, count, |_| (), |n, ()| call(n));
}

fn command(name: &str, args: &[&str]) -> redis::Cmd {
    let mut call = redis::cmd(name);
    for arg in args {
        call.arg(*arg);
    }
    call
}

fn deduct(key: &str, user: &str, id: &str, hold: Option<(&str, i64)>) -> redis::Cmd {
    let mut call = redis::cmd("SECKILL.DEDUCT");
    call.arg(key).arg(user).arg(1).arg("ID").arg(id);
    if let Some((option, value)) = hold {
        call.arg(option).arg(value);
    }
    call
}

fn key_of(lapsed: usize) -> String {
    format!("backlog:{lapsed}")
}

/// One item of `holds` holds, one per buyer, of which the first `lapsed`
/// lapse `LEAD_MS` after their batch is sent and the others stay pending:
/// every row measures an item of the same size, and only the backlog
/// differs. Returns the last deadline set.
fn fill(con: &mut Connection, lapsed: usize, holds: usize, calls: usize) -> i64 {
    let key = key_of(lapsed);
    ok::<i64>(con, &["SECKILL.INIT", &key, "1000000000"]);
    let mut last_due = 0;
    pipelined_with(
        con,
        lapsed,
        |con| {
            last_due = server_ms(con) + LEAD_MS;
            last_due
        },
        |n, due| {
            deduct(
                &key,
                &format!("u{n}"),
                &format!("h{n}"),
                Some(("HOLDUNTIL", due)),
            )
        },
    );
    pipelined(con, holds - lapsed, |n| {
        let n = n + lapsed;
        deduct(
            &key,
            &format!("u{n}"),
            &format!("h{n}"),
            Some(("HOLD", 3_600)),
        )
    });
    // A pending hold for each CONFIRM of every round.
    pipelined(con, calls * ROUNDS, |n| {
        deduct(
            &key,
            &format!("c{n}"),
            &format!("c{n}"),
            Some(("HOLD", 3_600)),
        )
    });
    pipelined(con, 10, |n| {
        deduct(&key, "watcher", &format!("w{n}"), Some(("HOLD", 3_600)))
    });
    last_due
}

/// One round of the calls on the item of `lapsed`: server µs per call, in
/// the order of `CALLS`.
fn round_on(con: &mut Connection, lapsed: usize, round: usize, calls: usize) -> Vec<Option<f64>> {
    let key = key_of(lapsed);
    ok::<String>(con, &["CONFIG", "RESETSTAT"]);
    pipelined(con, calls, |_| command("SECKILL.GET", &[&key]));
    pipelined(con, calls, |_| command("SECKILL.INFO", &[&key]));
    pipelined(con, calls, |n| {
        deduct(&key, &format!("u{n}"), &format!("d{round}-{n}"), None)
    });
    pipelined(con, calls, |n| {
        let hold = format!("c{}", round * calls + n);
        command("SECKILL.CONFIRM", &[&key, &hold])
    });
    pipelined(con, calls, |_| command("SECKILL.HOLDS", &[&key, "watcher"]));
    CALLS
        .iter()
        .map(|(_, stat)| command_stat(con, stat, "usec_per_call"))
        .collect()
}

/// Measures with each backlog in `backlogs`, the first of which should be
/// 0, in a server of its own.
pub fn measure(backlogs: &[usize], calls: usize) -> Backlog {
    let server = Server::start_with(&["--appendonly", "no"]);
    let mut con = server.client();
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "seckill.sweep-interval-ms", "60000"],
    );
    // The tick already due at the old interval finds nothing to release;
    // the next one is a minute away, after the rounds.
    std::thread::sleep(Duration::from_millis(300));
    let sweeps_before = sweep_runs(&mut con);
    let holds = backlogs.iter().copied().max().unwrap_or(0).max(calls);
    let mut last_due = 0;
    for &lapsed in backlogs {
        println!("  an item of {holds} holds, {lapsed} of them lapsing");
        last_due = last_due.max(fill(&mut con, lapsed, holds, calls));
    }
    let wait = Instant::now();
    while server_ms(&mut con) <= last_due && wait.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut rounds: Vec<Vec<Vec<Option<f64>>>> = vec![Vec::new(); backlogs.len()];
    for round in 0..ROUNDS {
        for turn in 0..backlogs.len() {
            let index = (turn + round) % backlogs.len();
            rounds[index].push(round_on(&mut con, backlogs[index], round, calls));
        }
    }
    let mut problems = Vec::new();
    let sweeps_after = sweep_runs(&mut con);
    if sweeps_after != sweeps_before {
        problems.push(format!(
            "the sweep released holds while the rounds ran (seckill_sweep_runs {} before, {} after)",
            sweeps_before.as_deref().unwrap_or("?"),
            sweeps_after.as_deref().unwrap_or("?"),
        ));
    }
    let rows = backlogs
        .iter()
        .zip(&rounds)
        .map(|(&lapsed, rounds)| Row {
            lapsed,
            usec: median_per_call(rounds),
        })
        .collect();
    Backlog {
        rows,
        holds,
        calls,
        problems,
    }
}

/// The median round of each call: one round on a shared machine can be
/// slowed by whatever else ran then.
fn median_per_call(rounds: &[Vec<Option<f64>>]) -> Vec<Option<f64>> {
    (0..CALLS.len())
        .map(|index| {
            let mut figures: Vec<f64> = rounds.iter().filter_map(|round| round[index]).collect();
            figures.sort_by(f64::total_cmp);
            figures.get(figures.len() / 2).copied()
        })
        .collect()
}
