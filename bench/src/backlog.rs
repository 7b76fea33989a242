//! Section (k): calls on an item while a backlog of its lapsed holds waits
//! for the sweep. Reads and writes judge a lapsed hold as released; this
//! shows what that costs them as the backlog grows.

use redis::Connection;
use seckill_harness::{command_stat, ok, Server};
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

/// Rounds of the calls on each backlog, of which the median is kept. With
/// three, the row without a backlog once came out at 1.14 µs for a
/// `DEDUCT` that took 1.52 to 1.68 µs in other runs, and moved every
/// ratio of its column.
const ROUNDS: usize = 5;

/// The target: each call with the largest backlog against itself with none.
pub const BOUND: f64 = 1.5;

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
}

impl Backlog {
    /// The call `index` of `CALLS` with the largest backlog over none.
    pub fn ratio(&self, index: usize) -> Option<f64> {
        let none = self.rows.first()?.usec.get(index).copied().flatten()?;
        let most = self.rows.last()?.usec.get(index).copied().flatten()?;
        (none > 0.0).then_some(most / none)
    }

    pub fn largest(&self) -> usize {
        self.rows.last().map_or(0, |row| row.lapsed)
    }

    pub fn markdown(&self) -> String {
        let mut out = format!(
            "## (k) A backlog of lapsed holds\n\n\
             One item of {} holds, one per buyer, of which this many lapsed and are not \
             released yet (the sweep held off with `seckill.sweep-interval-ms 60000`); \
             the others are pending. Server µs per call from `INFO commandstats`, {} calls \
             each, pipelined, the median of {} rounds. The buyers who purchase again hold one of the lapsed holds \
             (a pending one in the first row); their purchase leaves it to the sweep; since \
             its quota and its reply count the lapsed units as given back, it reaches \
             replicas with the moment it was judged at (`AT`) unless that is the item's \
             replicated moment (the same millisecond as its last such call). `CONFIRM` confirms holds \
             still pending; `HOLDS key user` lists a user's 10 pending holds.\n\n\
             | lapsed holds |",
            self.holds, self.calls, ROUNDS
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
        out
    }
}

fn server_ms(con: &mut Connection) -> i64 {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query(con).expect("TIME");
    secs * 1000 + micros / 1000
}

fn pipelined(con: &mut Connection, calls: impl Iterator<Item = redis::Cmd>) {
    let mut pipe = redis::pipe();
    let mut queued = 0;
    for call in calls {
        pipe.add_command(call).ignore();
        queued += 1;
        if queued == 10_000 {
            let _: redis::RedisResult<()> = pipe.query(con);
            pipe = redis::pipe();
            queued = 0;
        }
    }
    // Replies such as -4 are fine: only the cost is measured.
    let _: redis::RedisResult<()> = pipe.query(con);
}

fn deduct(user: &str, id: &str, hold: Option<(&str, i64)>) -> redis::Cmd {
    let mut call = redis::cmd("SECKILL.DEDUCT");
    call.arg("backlog").arg(user).arg(1).arg("ID").arg(id);
    if let Some((option, value)) = hold {
        call.arg(option).arg(value);
    }
    call
}

/// One item of `holds` holds, one per buyer, of which the first `lapsed`
/// lapse before the calls and the others stay pending: every row measures
/// an item of the same size, and only the backlog differs.
fn measure_one(con: &mut Connection, lapsed: usize, holds: usize, calls: usize) -> Row {
    ok::<String>(con, &["FLUSHALL"]);
    ok::<i64>(con, &["SECKILL.INIT", "backlog", "1000000000"]);
    // Far enough ahead for every hold to be placed before it passes.
    let due = server_ms(con) + 2_000 + holds as i64 / 25;
    let later = due + 3_600_000;
    pipelined(
        con,
        (0..holds).map(|n| {
            let until = if n < lapsed { due } else { later };
            deduct(
                &format!("u{n}"),
                &format!("h{n}"),
                Some(("HOLDUNTIL", until)),
            )
        }),
    );
    // A pending hold for each CONFIRM of every round.
    pipelined(
        con,
        (0..calls * ROUNDS)
            .map(|n| deduct(&format!("c{n}"), &format!("c{n}"), Some(("HOLD", 3_600)))),
    );
    pipelined(
        con,
        (0..10).map(|n| deduct("watcher", &format!("w{n}"), Some(("HOLD", 3_600)))),
    );
    let wait = Instant::now();
    while server_ms(con) <= due && wait.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let command = |name: &str, args: &[&str]| {
        let mut call = redis::cmd(name);
        for arg in args {
            call.arg(*arg);
        }
        call
    };
    let rounds: Vec<Vec<Option<f64>>> = (0..ROUNDS)
        .map(|round| {
            ok::<String>(con, &["CONFIG", "RESETSTAT"]);
            pipelined(
                con,
                (0..calls).map(|_| command("SECKILL.GET", &["backlog"])),
            );
            pipelined(
                con,
                (0..calls).map(|_| command("SECKILL.INFO", &["backlog"])),
            );
            pipelined(
                con,
                (0..calls).map(|n| deduct(&format!("u{n}"), &format!("d{round}-{n}"), None)),
            );
            pipelined(
                con,
                (0..calls).map(|n| {
                    let hold = format!("c{}", round * calls + n);
                    command("SECKILL.CONFIRM", &["backlog", &hold])
                }),
            );
            pipelined(
                con,
                (0..calls).map(|_| command("SECKILL.HOLDS", &["backlog", "watcher"])),
            );
            CALLS
                .iter()
                .map(|(_, stat)| command_stat(con, stat, "usec_per_call"))
                .collect()
        })
        .collect();
    // The median round of each call: one round on a shared machine can be
    // slowed by whatever else ran then.
    let usec = (0..CALLS.len())
        .map(|index| {
            let mut figures: Vec<f64> = rounds.iter().filter_map(|round| round[index]).collect();
            figures.sort_by(f64::total_cmp);
            figures.get(figures.len() / 2).copied()
        })
        .collect();
    Row { lapsed, usec }
}

/// Measures with each backlog in `backlogs`, the first of which should be 0.
pub fn measure(server: &Server, backlogs: &[usize], calls: usize) -> Backlog {
    let mut con = server.client();
    let interval: Vec<String> = ok(&mut con, &["CONFIG", "GET", "seckill.sweep-interval-ms"]);
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "seckill.sweep-interval-ms", "60000"],
    );
    let holds = backlogs.iter().copied().max().unwrap_or(0).max(calls);
    let rows = backlogs
        .iter()
        .map(|&lapsed| {
            println!("  {lapsed} of {holds} holds lapsed");
            measure_one(&mut con, lapsed, holds, calls)
        })
        .collect();
    ok::<String>(&mut con, &["FLUSHALL"]);
    if let Some(interval) = interval.get(1) {
        ok::<String>(
            &mut con,
            &["CONFIG", "SET", "seckill.sweep-interval-ms", interval],
        );
    }
    Backlog { rows, holds, calls }
}
