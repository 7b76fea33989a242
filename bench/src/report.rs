//! Writes BENCHMARKS.md and docs/benchmarks.svg from one run's figures.
//! Every figure sits next to its ratio against GET or DECRBY from the same
//! run, so that readers on other machines can compare ratios.

use crate::big_items::{BigItems, Growth};
use crate::contenders::{
    BASELINE, DECRBY, FLOOR, FUNCTION, GET, HINCRBY, LUA_SECKILL, MODULE, MODULE_HOLD, MODULE_ID,
    MODULE_ORDER, MODULE_VARIANT, POSTGRES, POSTGRES_DURABLE,
};
use crate::instructions::Count;
use crate::load::Throughput;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::time::Duration;

pub struct Measurement {
    pub contender: &'static str,
    pub usec_per_call: Option<f64>,
    pub plain: Option<Throughput>,
    pub pipelined: Option<Throughput>,
    /// Each round's figures, in round order. Every contender of a path runs
    /// once per round, one after another, so that a ratio taken within a
    /// round compares two contenders measured a few seconds apart.
    pub rounds: Vec<Round>,
}

/// One contender's figures in one round.
#[derive(Clone, Copy)]
pub struct Round {
    pub usec_per_call: f64,
    pub pipelined_ops: f64,
}

/// A ratio between two contenders taken round by round: the median, and
/// the lowest and highest of the rounds.
#[derive(Clone, Copy)]
pub struct RoundRatio {
    pub median: f64,
    pub low: f64,
    pub high: f64,
}

impl RoundRatio {
    /// The median and range of `ratios`, leaving out any that is not a
    /// number; None if none is.
    pub fn of(ratios: impl IntoIterator<Item = f64>) -> Option<RoundRatio> {
        let mut ratios: Vec<f64> = ratios.into_iter().filter(|r| r.is_finite()).collect();
        if ratios.is_empty() {
            return None;
        }
        ratios.sort_by(f64::total_cmp);
        Some(RoundRatio {
            median: crate::load::median(ratios.clone()),
            low: ratios[0],
            high: ratios[ratios.len() - 1],
        })
    }
}

pub struct PathReport {
    /// GET for the sold-out path, DECRBY for the success path.
    pub reference: &'static str,
    pub rows: Vec<Measurement>,
    /// The pairs of contenders a target compares, measured in short
    /// alternating bursts.
    pub pairs: Vec<Pair>,
}

/// Two contenders measured in turns, reference first and last: each burst
/// of the contender is compared with the mean of the reference's bursts
/// just before and just after it, so that neither a drift of the machine's
/// speed nor a slow stretch of a few seconds lands on one side alone.
pub struct Pair {
    pub contender: &'static str,
    pub reference: &'static str,
    /// Server µs/call, contender over reference.
    pub usec: RoundRatio,
    /// `-P 16` throughput, contender over reference.
    pub pipelined: RoundRatio,
}

impl PathReport {
    fn row(&self, contender: &str) -> Option<&Measurement> {
        self.rows.iter().find(|row| row.contender == contender)
    }

    fn reference_row(&self) -> Option<&Measurement> {
        self.row(self.reference)
    }

    /// `contender` over `reference` in each round, by `figure`.
    fn round_ratio(
        &self,
        contender: &str,
        reference: &str,
        figure: fn(&Round) -> f64,
    ) -> Option<RoundRatio> {
        let (rows, references) = (self.row(contender)?, self.row(reference)?);
        RoundRatio::of(
            rows.rounds
                .iter()
                .zip(&references.rounds)
                .map(|(round, reference)| figure(round) / figure(reference)),
        )
    }

    fn pair(&self, contender: &str, reference: &str) -> Option<&Pair> {
        self.pairs
            .iter()
            .find(|pair| pair.contender == contender && pair.reference == reference)
    }

    /// Server µs/call of `contender` over `reference`: from their
    /// alternating bursts if measured so, else round by round.
    fn usec_ratio(&self, contender: &str, reference: &str) -> Option<RoundRatio> {
        match self.pair(contender, reference) {
            Some(pair) => Some(pair.usec),
            None => self.round_ratio(contender, reference, |round| round.usec_per_call),
        }
    }

    /// `-P 16` throughput of `contender` over `reference`, as
    /// [`PathReport::usec_ratio`].
    fn pipelined_ratio(&self, contender: &str, reference: &str) -> Option<RoundRatio> {
        match self.pair(contender, reference) {
            Some(pair) => Some(pair.pipelined),
            None => self.round_ratio(contender, reference, |round| round.pipelined_ops),
        }
    }
}

pub struct FlashSaleRow {
    pub contender: &'static str,
    pub sold: i64,
    pub sold_out_after: Option<Duration>,
    /// Clicks answered one round trip at a time.
    pub throughput: Throughput,
    /// Clicks with 16 in flight per client; `None` where a contender cannot
    /// pipeline (WATCH/MULTI/EXEC, PostgreSQL).
    pub pipelined: Option<Throughput>,
    pub limit_enforced: bool,
    pub problems: Vec<String>,
}

pub struct Memory {
    pub buyers: usize,
    pub module_bytes: f64,
    pub key_per_user_bytes: f64,
}

pub struct Lapse {
    pub holds: usize,
    pub items: usize,
    /// From the common deadline to the last release, on the server's clock
    /// (the ID of the last `expire` entry); `None` unless all were released.
    pub released_after: Option<Duration>,
    /// From the deadline to when the main thread's poll of XLEN saw them all.
    pub seen_after: Option<Duration>,
    /// `expire` entries in the order stream: its length less one `hold`
    /// entry per hold.
    pub released: usize,
    /// The longest PING round trip meanwhile.
    pub longest_ping: Duration,
    /// When that PING was sent, in ms after the deadline (negative before).
    pub longest_ping_at_ms: f64,
    /// The longest PING sent before the deadline, with no sweep running.
    pub longest_ping_before: Duration,
    pub pings: usize,
    /// PINGs that took `LAPSE_PING_BOUND` or longer.
    pub slow_pings: usize,
    /// How long before the deadline the PING client started.
    pub ping_lead: Duration,
    /// How often the main thread read the stream's length.
    pub poll: Duration,
    pub problems: Vec<String>,
    /// Runs made, of which this one is reported.
    pub runs: usize,
}

/// The issue's targets for lapsing holds: no client waits 5 ms or more,
/// and every hold is released within 2 s of its deadline.
pub const LAPSE_PING_BOUND: Duration = Duration::from_millis(5);
const LAPSE_RELEASE_BOUND: Duration = Duration::from_secs(2);

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "**missed**"
    }
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

impl Lapse {
    fn ping_met(&self) -> bool {
        self.longest_ping < LAPSE_PING_BOUND
    }

    fn release_met(&self) -> bool {
        self.released == self.holds
            && self
                .released_after
                .is_some_and(|after| after <= LAPSE_RELEASE_BOUND)
    }

    /// Section (f) of BENCHMARKS.md; `SECKILL_BENCH_ONLY=lapse` prints it.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let released_after = self
            .released_after
            .map_or_else(|| "not all".to_owned(), |d| format!("{:.0} ms", millis(d)));
        let _ = write!(
            out,
            "## (f) Holds lapsing\n\n{} holds spread over {} items ({} each, `DEDUCT ... \
             HOLDUNTIL`), all due at the same moment, released by the module's sweep with \
             nobody writing to the items. The sweep works in timer steps of about 1 ms and \
             lets clients in between them. Reads report a lapsed hold as released before the \
             sweep gets to it, so they cannot tell when it is done; instead every item writes \
             to one order stream (`SECKILL.INIT ... STREAM {{lapse}}:orders`), which gets a \
             `hold` entry per hold and an `expire` entry per release, and the sweep is done \
             when the stream holds two entries per hold. Meanwhile one client sends `PING`, \
             one at a time, from {:.0} ms before the deadline until the last release is seen. \
             The cost of taking a hold is the `... HOLD` row of table (a). The runs use a \
             server started for them: in the server that grew an item to millions of buyers \
             for table (e), the same releases took 2.5 s in two full runs, against 1.5 to \
             1.9 s alone. Of {} runs, the one with the median longest \
             PING is shown.\n\n\
             | holds | items | all released after the deadline | units back in stock | longest PING meanwhile |\n\
             |--:|--:|--:|--:|--:|\n\
             | {} | {} | {} | {} | {:.1} ms |\n\n",
            self.holds,
            self.items,
            self.holds / self.items.max(1),
            millis(self.ping_lead),
            self.runs,
            self.holds,
            self.items,
            released_after,
            self.released,
            millis(self.longest_ping),
        );
        out.push_str(
            "\"All released after the deadline\" is the ID of the last `expire` entry, on the \
             server's clock, less the deadline. \"Units back in stock\" counts the `expire` \
             entries: the stream's length less one `hold` entry per hold.",
        );
        if let Some(seen) = self.seen_after {
            let _ = write!(
                out,
                " The main thread, reading `XLEN` every {:.0} ms, saw the last release {:.0} ms \
                 after the deadline.",
                millis(self.poll),
                millis(seen)
            );
        }
        let _ = writeln!(
            out,
            " The longest of {} PINGs was sent {:.0} ms {} the deadline; {} took {} ms or \
             longer. In the {:.0} ms before the deadline, with no sweep running yet, the longest \
             took {:.1} ms.\n",
            self.pings,
            self.longest_ping_at_ms.abs(),
            if self.longest_ping_at_ms < 0.0 {
                "before"
            } else {
                "after"
            },
            self.slow_pings,
            LAPSE_PING_BOUND.as_millis(),
            millis(self.ping_lead),
            millis(self.longest_ping_before),
        );
        let _ = write!(
            out,
            "| target | measured | bound | |\n|---|--:|--:|---|\n\
             | longest PING while the holds lapse | {:.1} ms | < {} ms | {} |\n\
             | every hold released, after the deadline | {} ({} of {}) | ≤ {} s | {} |\n",
            millis(self.longest_ping),
            LAPSE_PING_BOUND.as_millis(),
            verdict(self.ping_met()),
            released_after,
            self.released,
            self.holds,
            LAPSE_RELEASE_BOUND.as_secs(),
            verdict(self.release_met()),
        );
        if !self.problems.is_empty() {
            let _ = writeln!(out, "\n**Problems:** {}.", self.problems.join("; "));
        }
        out
    }
}

/// One way of turning the drain backlog into rows.
pub struct DrainRun {
    /// The first column: the number of consumers, or the `COPY` row's name.
    pub what: String,
    /// Rows in the table when the run ended.
    pub rows: i64,
    /// `None` when the table never reached the backlog.
    pub seconds: Option<f64>,
}

impl DrainRun {
    pub fn rate(&self) -> Option<f64> {
        let seconds = self.seconds?;
        (seconds > 0.0).then(|| self.rows as f64 / seconds)
    }
}

/// The one-consumer drain on a master with one replica attached, without
/// and with `--wait-replicas 1`.
pub struct ReplicaDrain {
    /// Rounds each row is the median of.
    pub rounds: usize,
    pub without: DrainRun,
    pub waiting: DrainRun,
    /// The median over the rounds of the waiting run's rate over the
    /// other run's in the same round; `None` if no round had both.
    pub ratio: Option<f64>,
    /// Pages the waiting consumer left pending because `WAIT` timed out,
    /// over all its rounds.
    pub held_back: f64,
    /// `WAIT`s the master answered over all the waiting rounds: one per
    /// page, and one more per page held back.
    pub waits: i64,
    /// The waiting consumer's `--wait-timeout-ms`.
    pub wait_timeout_ms: u64,
}

pub struct Drain {
    /// Purchases in the backlog: one stream entry, and one row, each.
    pub entries: usize,
    /// One consumer, then two.
    pub runs: Vec<DrainRun>,
    /// The cost of `--wait-replicas`, measured on a master of its own.
    pub replica: ReplicaDrain,
    /// PostgreSQL's own `COPY` of the same rows; `None` if no consumer
    /// wrote them all.
    pub copy: Option<DrainRun>,
    /// Whether `synchronous_commit` was on for the runs.
    pub durable: bool,
    /// `synchronous_commit` as the section found it, and left it.
    pub found: String,
    /// How often the row count was read.
    pub poll: Duration,
    pub problems: Vec<String>,
}

impl Drain {
    /// Section (h) of BENCHMARKS.md; `SECKILL_BENCH_ONLY=drain` prints it.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            "## (h) Order drain\n\nHow fast `seckill-orders` turns a backlog into rows. Before \
             any consumer starts, one item (`SECKILL.INIT {{drain}} {n} STREAM {{drain}}:orders`) \
             sells its {n} units one at a time (`SECKILL.DEDUCT {{drain}} u<i> 1 ID o<i>`, \
             pipelined), leaving {n} `purchase` entries in its stream. Each consumer row starts \
             from a fresh table (`seckill_orders` and its schema version dropped) and a new \
             consumer group reading from the stream's start; the time runs from starting the \
             release build of `seckill-orders` (two processes, each with its own `--consumer`, \
             for the second row), connecting and creating the table included, until `SELECT \
             count(*) FROM seckill_orders`, read every {poll:.0} ms from another session, \
             reaches {n}. A consumer writes each page of entries it reads in one transaction, \
             one multi-row upsert (the newest entry of each order), and acknowledges them after the commit. The ceiling \
             is PostgreSQL's own `COPY seckill_orders (...) FROM STDIN` of the same {n} rows, \
             from one client into a fresh table of the same shape (primary key included), \
             timing only the `COPY`. ",
            n = self.entries,
            poll = millis(self.poll),
        );
        if self.durable {
            out.push_str(
                "Commits are durable throughout (`synchronous_commit=on`, PostgreSQL's \
                 default), so each consumer transaction waits for its WAL to reach the disk",
            );
        } else {
            out.push_str("**Commits could not be made durable** (`synchronous_commit` stayed off)");
        }
        if self.found == "off" {
            out.push_str(
                "; the sections before it leave PostgreSQL at memory speed \
                 (`synchronous_commit=off`), so this one turns it on and sets it back to off \
                 afterwards.",
            );
        } else {
            out.push('.');
        }
        let replica = &self.replica;
        let _ = write!(
            out,
            "\n\nThe two rows \"master with a replica\" measure what `--wait-replicas 1` costs: \
             the same backlog on another server, with one replica attached \
             (`--replicaof`, fully synced) before any consumer starts, drained by one \
             consumer without the wait (`--wait-replicas 0`) and with it (`--wait-replicas 1 \
             --wait-timeout-ms {timeout}`). With the wait, before committing each page of \
             entries it reads, the consumer sends a fencing `XCLAIM ... JUSTID` of the page's last \
             entry and `WAIT 1 {timeout}` on the connection that read it, and commits the page \
             only once the replica holds it: two more round trips to Redis, and a wait for the \
             replica's acknowledgement, per page. Before each run the bench waits until the \
             replica's replication offset equals its master's. Each of the two rows is the \
             median of {rounds} rounds that take the two in turn, which one goes first \
             alternating; \"× without wait\" is the median over the rounds of the waiting \
             run's rate over the other run's in the same round, so that a drift in the shared \
             machine's load from one round to the next cancels out. The \
             waiting consumer sent {waits} `WAIT`s over its {rounds} rounds; {held} {held_pages} \
             held back by one that timed out.",
            timeout = replica.wait_timeout_ms,
            rounds = replica.rounds,
            waits = replica.waits,
            held = if replica.held_back == 0.0 {
                "no".to_owned()
            } else {
                format!("{:.0}", replica.held_back)
            },
            held_pages = if replica.held_back == 1.0 {
                "page was"
            } else {
                "pages were"
            },
        );
        out.push_str(
            "\n\n| consumers | rows | seconds | rows/s | × COPY | × without wait |\n\
             |---|--:|--:|--:|--:|--:|\n",
        );
        let copy_rate = self.copy.as_ref().and_then(DrainRun::rate);
        // "× without wait" belongs to the two rows on the master with a
        // replica only: the others' cell stays empty ("–" would say a
        // figure is missing).
        let rows = self
            .runs
            .iter()
            .map(|run| (run, None))
            .chain([
                (&replica.without, Some(replica.without.rate().map(|_| 1.0))),
                (&replica.waiting, Some(replica.ratio)),
            ])
            .chain(self.copy.iter().map(|run| (run, None)));
        for (run, against_without) in rows {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                run.what,
                run.rows,
                show(run.seconds, 2),
                show(run.rate(), 0),
                show_ratio(ratio(run.rate(), copy_rate)),
                against_without.map_or_else(String::new, show_ratio),
            );
        }
        if !self.problems.is_empty() {
            let _ = writeln!(out, "\n**Problems:** {}.", self.problems.join("; "));
        }
        out
    }
}

pub struct Report {
    pub redis_version: String,
    pub postgres_version: Option<String>,
    pub cores: usize,
    pub clients: usize,
    pub plain_requests: usize,
    pub pipelined_requests: usize,
    pub repeats: usize,
    pub success: PathReport,
    pub sold_out: PathReport,
    pub flash: Vec<FlashSaleRow>,
    pub memory: Memory,
    pub instructions: Vec<Count>,
    pub growth: Growth,
    pub big: BigItems,
    pub lapse: Lapse,
    /// Section (h), or why it was not measured.
    pub drain: Result<Drain, String>,
    pub split: crate::split::SplitScaling,
    pub backlog: crate::backlog::Backlog,
}

fn ratio(value: Option<f64>, reference: Option<f64>) -> Option<f64> {
    match (value, reference) {
        (Some(value), Some(reference)) if reference > 0.0 => Some(value / reference),
        _ => None,
    }
}

fn show(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{v:.digits$}"))
}

fn show_ratio(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}×"))
}

fn thousands(ops: Option<f64>) -> String {
    ops.map_or_else(|| "–".to_owned(), |ops| format!("{:.0}k", ops / 1000.0))
}

/// One target of the issue: a ratio, the bound it must stay within, and
/// whether it must be at least or at most that.
struct Target {
    what: String,
    value: Option<f64>,
    bound: f64,
    at_least: bool,
    /// How the value and bound read: "×" for a ratio, " ms", "%".
    unit: &'static str,
    /// The lowest and highest round of a ratio taken round by round.
    spread: Option<(f64, f64)>,
}

impl Target {
    fn met(&self) -> Option<bool> {
        let value = self.value?;
        Some(if self.at_least {
            value >= self.bound
        } else {
            value <= self.bound
        })
    }
}

impl Report {
    fn targets(&self) -> Vec<Target> {
        let (a, b) = (&self.success, &self.sold_out);
        let target = |what: &str, value, bound, at_least| Target {
            what: what.to_owned(),
            value,
            bound,
            at_least,
            unit: "×",
            spread: None,
        };
        // A ratio of two contenders of one path: the median of the rounds'.
        let by_round = |what: &str, ratio: Option<RoundRatio>, bound, at_least| Target {
            value: ratio.map(|ratio| ratio.median),
            spread: ratio.map(|ratio| (ratio.low, ratio.high)),
            ..target(what, None, bound, at_least)
        };
        let flash = |contender: &str| {
            self.flash
                .iter()
                .find(|row| row.contender == contender)
                .map(|row| row.throughput.ops_per_sec)
        };
        let flash_piped = |contender: &str| {
            self.flash
                .iter()
                .find(|row| row.contender == contender)
                .and_then(|row| Some(row.pipelined?.ops_per_sec))
        };
        let instructions = |contender: &str, path: &str| {
            self.instructions
                .iter()
                .find(|count| count.contender == contender && count.path == path)
                .map(|count| count.instructions)
        };
        let mut targets = vec![
            by_round(
                "server µs/call, success path: DEDUCT / HINCRBY on a field per buyer",
                a.usec_ratio(MODULE, HINCRBY),
                1.1,
                false,
            ),
            by_round(
                "server µs/call, success path: DEDUCT / seckill.lua",
                a.usec_ratio(MODULE, LUA_SECKILL),
                0.125,
                false,
            ),
            by_round(
                "server µs/call, sold-out path: DEDUCT / a module command that opens its key",
                b.usec_ratio(MODULE, FLOOR),
                1.2,
                false,
            ),
            by_round(
                "server µs/call, hold path: DEDUCT ... HOLD / DEDUCT ... ID",
                a.usec_ratio(MODULE_HOLD, MODULE_ID),
                1.3,
                false,
            ),
            by_round(
                "server µs/call, a variant purchase: DEDUCT ... ID ... VARIANT / DEDUCT ... ID",
                a.usec_ratio(MODULE_VARIANT, MODULE_ID),
                1.1,
                false,
            ),
            by_round(
                "server µs/call, an order of 3 items: MDEDUCT / DEDUCT ... ID",
                a.usec_ratio(MODULE_ORDER, MODULE_ID),
                3.0,
                false,
            ),
            by_round(
                "-P 16 throughput, hold path: DEDUCT ... HOLD / DEDUCT ... ID",
                a.pipelined_ratio(MODULE_HOLD, MODULE_ID),
                0.75,
                true,
            ),
            target(
                "same, in instructions (callgrind), hold path: DEDUCT ... HOLD / DEDUCT ... ID",
                ratio(
                    instructions(MODULE_HOLD, "success"),
                    instructions(MODULE_ID, "success"),
                ),
                1.3,
                false,
            ),
            target(
                "same, in instructions (callgrind), a variant purchase: ... VARIANT / DEDUCT ... ID",
                ratio(
                    instructions(MODULE_VARIANT, "success"),
                    instructions(MODULE_ID, "success"),
                ),
                1.1,
                false,
            ),
            target(
                "same, in instructions (callgrind), an order of 3 items: MDEDUCT / DEDUCT ... ID",
                ratio(
                    instructions(MODULE_ORDER, "success"),
                    instructions(MODULE_ID, "success"),
                ),
                3.0,
                false,
            ),
            target(
                "same, in instructions (callgrind), success path: DEDUCT / HINCRBY",
                ratio(
                    instructions(MODULE, "success"),
                    instructions(HINCRBY, "success"),
                ),
                1.1,
                false,
            ),
            target(
                "same, in instructions (callgrind), success path: DEDUCT / seckill.lua",
                ratio(
                    instructions(MODULE, "success"),
                    instructions(LUA_SECKILL, "success"),
                ),
                0.125,
                false,
            ),
            target(
                "instructions (callgrind), success path: DEDUCT / the baseline commit's DEDUCT",
                ratio(
                    instructions(MODULE, "success"),
                    instructions(BASELINE, "success"),
                ),
                1.03,
                false,
            ),
            target(
                "instructions (callgrind), sold-out path: DEDUCT / the baseline commit's DEDUCT",
                ratio(
                    instructions(MODULE, "sold out"),
                    instructions(BASELINE, "sold out"),
                ),
                1.03,
                false,
            ),
            target(
                "same, in instructions (callgrind), sold-out path: DEDUCT / module floor",
                ratio(
                    instructions(MODULE, "sold out"),
                    instructions(FLOOR, "sold out"),
                ),
                1.2,
                false,
            ),
            by_round(
                "-P 16 throughput, success path: DEDUCT / seckill.lua",
                a.pipelined_ratio(MODULE, LUA_SECKILL),
                3.0,
                true,
            ),
            by_round(
                "-P 16 throughput, success path: DEDUCT / HINCRBY on a field per buyer",
                a.pipelined_ratio(MODULE, HINCRBY),
                0.9,
                true,
            ),
            by_round(
                "-P 16 throughput, sold-out path: DEDUCT / a module command that opens its key",
                b.pipelined_ratio(MODULE, FLOOR),
                0.83,
                true,
            ),
            target(
                "memory per buyer record: module / key-per-user layout",
                ratio(
                    Some(self.memory.module_bytes),
                    Some(self.memory.key_per_user_bytes),
                ),
                0.5,
                false,
            ),
            target(
                "longest call while one item grows to 10M buyers: DEDUCT / HSET",
                ratio(
                    Some(self.growth.seckill_longest_ms),
                    Some(self.growth.native_longest_ms),
                ),
                2.0,
                false,
            ),
            Target {
                unit: " ms",
                ..target(
                    "longest call while one item grows to 10M buyers",
                    Some(self.growth.seckill_longest_ms),
                    2.0,
                    false,
                )
            },
        ];
        for row in &self.big.rows {
            // A scan call is bounded by the longest-call bound, as any call.
            if row.operation.contains("SCAN") {
                targets.push(Target {
                    unit: " ms",
                    ..target(
                        &format!(
                            "big item, {}",
                            row.operation.split(" (").next().unwrap_or(&row.operation)
                        ),
                        Some(row.seckill_ms),
                        2.0,
                        false,
                    )
                });
                continue;
            }
            let bound = if row.operation.contains("DIGEST") {
                2.0
            } else {
                1.0
            };
            targets.push(target(
                &format!(
                    "big item, {}: seckill / hash + set",
                    row.operation.split(" (").next().unwrap_or(&row.operation)
                ),
                ratio(Some(row.seckill_ms), Some(row.native_ms)),
                bound,
                false,
            ));
        }
        for (index, (call, _)) in crate::backlog::CALLS.iter().enumerate() {
            targets.push(target(
                &format!(
                    "server µs/call with up to {} lapsed holds waiting, worst row: {call} / none",
                    self.backlog.largest()
                ),
                self.backlog.ratio(index),
                crate::backlog::BOUND,
                false,
            ));
        }
        targets.push(target(
            "item with no buyers: bytes / small hash",
            ratio(Some(self.big.empty_item), Some(self.big.small_hash)),
            1.5,
            false,
        ));
        for row in &self.big.memory {
            targets.push(Target {
                unit: "%",
                ..target(
                    &format!(
                        "MEMORY USAGE off the growth of used_memory, {} buyers",
                        row.buyers
                    ),
                    Some((row.memory_usage / row.used_memory_growth - 1.0).abs() * 100.0),
                    10.0,
                    false,
                )
            });
        }
        targets.extend([
            target(
                "flash sale, 1 click per round trip: DEDUCT / PostgreSQL, durable",
                ratio(flash(MODULE), flash(POSTGRES_DURABLE)),
                20.0,
                true,
            ),
            target(
                "flash sale, 1 click per round trip: DEDUCT / PostgreSQL, memory speed",
                ratio(flash(MODULE), flash(POSTGRES)),
                20.0,
                true,
            ),
            target(
                "flash sale, 16 clicks in flight: DEDUCT / PostgreSQL, durable",
                ratio(flash_piped(MODULE), flash(POSTGRES_DURABLE)),
                20.0,
                true,
            ),
            target(
                "flash sale, 16 clicks in flight: DEDUCT / PostgreSQL, memory speed",
                ratio(flash_piped(MODULE), flash(POSTGRES)),
                20.0,
                true,
            ),
        ]);
        targets
    }

    fn growth_markdown(&self) -> String {
        let g = &self.growth;
        let mut out = format!(
            "\n## (e) Growth\n\nOne item growing to {} buyers under `-P 16` load ({} calls, users \
             out of a billion, so nearly every call adds a buyer), then a native hash growing \
             the same way (`HSET grow user:N 1`). An index that doubled in one step would stop \
             the server for as long as it takes to move every entry; the longest single call \
             (server-side, from `SLOWLOG` with every call over 100 µs kept) is the figure to \
             watch{}. Clients also wait behind whole pipelines, so the longest wait they saw \
             is longer.\n\n\
             | contender | calls/s | p50 / p99 ms (client) | longest wait, client | longest call, server | × HSET | calls over 1 ms |\n\
             |---|--:|--:|--:|--:|--:|--:|\n",
            g.buyers,
            g.calls,
            if g.pinned {
                " (the server ran on one core and redis-benchmark on the other, so that \
                 neither preempts the other: on a shared core the longest call measures \
                 the scheduler)"
            } else {
                ""
            },
        );
        for (name, run, longest, over, reference) in [
            (
                "`SECKILL.DEDUCT`",
                &g.seckill,
                g.seckill_longest_ms,
                g.seckill_over_1ms,
                g.native_longest_ms,
            ),
            (
                "`HSET` growing a hash",
                &g.native,
                g.native_longest_ms,
                g.native_over_1ms,
                g.native_longest_ms,
            ),
        ] {
            let _ = writeln!(
                out,
                "| {name} | {} | {:.2} / {:.2} | {:.1} ms | {:.2} ms | {} | {over} |",
                thousands(Some(run.ops_per_sec)),
                run.p50_ms,
                run.p99_ms,
                run.max_ms,
                longest,
                show_ratio(ratio(Some(longest), Some(reference))),
            );
        }
        out
    }

    fn big_items_markdown(&self) -> String {
        let big = &self.big;
        let mut out = format!(
            "\n## (i) Big items\n\nOne item of {} buyers, each with a request id (`DEDUCT item \
             user:N 1 ID order:N`), against Redis's own types holding the same ids: a hash \
             of the buyers (`HSET h user:N 1`) plus a set of the request ids (`SADD s order:N`), \
             on the same server in the same run. Times are server-side (`usec` of `INFO \
             commandstats`; each figure the median of 5 rounds taking each contender in \
             turn), except the AOF rewrite, timed from `BGREWRITEAOF` to the child's end. \
             `DEBUG RELOAD` and the rewrite run with each contender alone in the database, \
             restored from its `DUMP` at the start of each round. The scan rows are the longest \
             single call (`SLOWLOG`) of a scan of the whole item from cursor 0, page by page, \
             the median of three scans, against `HSCAN` of the hash. 1 million buyers is enough for stable ratios: every \
             operation here is linear in the item's size.\n\n\
             | operation | seckill item | hash + set | × hash + set |\n|---|--:|--:|--:|\n",
            big.buyers
        );
        for row in &big.rows {
            let prec = if row.seckill_ms < 10.0 { 2 } else { 0 };
            let _ = writeln!(
                out,
                "| {} | {:.prec$} ms | {:.prec$} ms | {} |",
                row.operation,
                row.seckill_ms,
                row.native_ms,
                show_ratio(ratio(Some(row.seckill_ms), Some(row.native_ms))),
            );
        }
        let _ = write!(
            out,
            "\nMemory: `MEMORY USAGE` of the item against how much `used_memory` grew while \
             it was built (each size on an empty server).\n\n\
             | buyers | `MEMORY USAGE` | `used_memory` growth | ratio |\n|--:|--:|--:|--:|\n"
        );
        for row in &big.memory {
            let _ = writeln!(
                out,
                "| {} | {:.0} | {:.0} | {:.2} |",
                row.buyers,
                row.memory_usage,
                row.used_memory_growth,
                row.memory_usage / row.used_memory_growth,
            );
        }
        let _ = writeln!(
            out,
            "\nAn item nobody has bought from costs {:.0} bytes of `used_memory` per key \
             (10,000 of them), against {:.0} for `HSET item stock 100 limit 1 sold 0 \
             refunded 0`: {}.",
            big.empty_item,
            big.small_hash,
            show_ratio(ratio(Some(big.empty_item), Some(big.small_hash))),
        );
        out
    }

    fn path_table(out: &mut String, path: &PathReport) {
        let reference = path.reference_row();
        let reference_usec = reference.and_then(|row| row.usec_per_call);
        let reference_plain = reference.and_then(|row| row.plain.map(|t| t.ops_per_sec));
        let reference_piped = reference.and_then(|row| row.pipelined.map(|t| t.ops_per_sec));
        let name = path.reference.split(' ').next().unwrap_or(path.reference);
        let _ = writeln!(
            out,
            "| contender | server µs/call | × {name} | ops/s, no pipeline | × {name} | p50 / p99 ms | ops/s, -P 16 | × {name} | p50 / p99 ms |"
        );
        out.push_str("|---|--:|--:|--:|--:|--:|--:|--:|--:|\n");
        for row in &path.rows {
            let plain = row.plain.map(|t| t.ops_per_sec);
            let piped = row.pipelined.map(|t| t.ops_per_sec);
            let latency = |t: Option<Throughput>| {
                t.map_or_else(
                    || "–".to_owned(),
                    |t| format!("{:.2} / {:.2}", t.p50_ms, t.p99_ms),
                )
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                row.contender,
                show(row.usec_per_call, 2),
                show_ratio(ratio(row.usec_per_call, reference_usec)),
                thousands(plain),
                show_ratio(ratio(plain, reference_plain)),
                latency(row.plain),
                thousands(piped),
                show_ratio(ratio(piped, reference_piped)),
                latency(row.pipelined),
            );
        }
    }

    fn markdown(&self, notes: &str) -> String {
        let mut out = String::new();
        out.push_str("# Benchmarks\n\n");
        out.push_str(
            "Written by `make bench`; every figure comes from one run on one machine. \
             Absolute numbers depend on the machine, so each sits next to its ratio \
             against `DECRBY` (the cheapest write) or `GET` (the cheapest read) \
             measured in the same run.\n\n",
        );
        let _ = writeln!(
            out,
            "Machine: {} cores, shared by the server and the load generator. \
             redis-server {}{}. Load: {} clients; {} requests without pipelining and {} \
             with `-P 16` per run (redis-benchmark), median of {} rounds; in each round every \
             contender of a path runs once, one after another, and a target comparing two \
             of them is the median of its per-round ratios, with the lowest and highest \
             round in brackets, so that a drift of the machine's speed over minutes \
             moves both sides of a ratio alike. Redis runs with \
             persistence off. PostgreSQL runs with Debian's defaults; its rows marked \
             \"memory speed\" set `synchronous_commit=off`, so that commits do not wait \
             for the disk either.\n",
            self.cores,
            self.redis_version,
            self.postgres_version
                .as_deref()
                .map_or_else(String::new, |v| format!(", PostgreSQL {v}")),
            self.clients,
            self.plain_requests,
            self.pipelined_requests,
            self.repeats,
        );
        out.push_str("![Benchmark chart](docs/benchmarks.svg)\n\n");

        out.push_str(
            "## Targets\n\nEach path is judged against its floor, measured in the same run: the \
             success path against `HINCRBY` on a hash of a field per buyer (the native write \
             that finds its user), the sold-out path against a module command that only opens \
             its key and replies what a sold-out `DEDUCT` replies, `-1` (`bench/floor`; a \
             negative integer is written out digit by digit, where 0 and 1 are shared \
             replies, so a floor replying those would leave that cost on the module's side \
             alone). The first targets compared with `DECRBY` and \
             `GET`, which neither look up a user nor pass through a module's dispatch, so they \
             measured what no module can avoid; they are gone. ",
        );
        let baseline = std::env::var("SECKILL_BASELINE_COMMIT").unwrap_or_default();
        if baseline.is_empty() {
            out.push_str(
                "No baseline module was built, so nothing is compared with an earlier commit.",
            );
        } else {
            let _ = write!(
                out,
                "The baseline rows count the same calls against the module built at commit \
                 `{baseline}` (`make bench BASELINE=<commit>`; the previous commit by default)."
            );
        }
        out.push_str("\n\n| target | measured | bound | |\n|---|--:|--:|---|\n");
        for target in self.targets() {
            let verdict = match target.met() {
                Some(true) => "met",
                Some(false) => "**missed**",
                None => "not measured",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} {}{} | {} |",
                target.what,
                target.value.map_or_else(
                    || "–".to_owned(),
                    |v| match target.spread {
                        Some((low, high)) => format!("{v:.2}{} ({low:.2}–{high:.2})", target.unit),
                        None => format!("{v:.2}{}", target.unit),
                    }
                ),
                if target.at_least { "≥" } else { "≤" },
                target.bound,
                if target.unit == "×" { "" } else { target.unit },
                verdict
            );
        }

        out.push_str(
            "\n## (a) Success path\n\nStock that never runs out, a random user out of \
             100,000 per call (as many as the flash sale below), a limit that is never \
             reached. The `... ID` row records a random request id per call, out of two \
             billion (for one user, since redis-benchmark draws the user and the id \
             independently and a reused id is an error). Server µs/call is \
             `usec_per_call` from `INFO commandstats` (for WATCH/MULTI/EXEC, all its \
             commands per purchase).\n\n",
        );
        Self::path_table(&mut out, &self.success);
        out.push_str(
            "\n## (b) Sold-out path\n\nStock 0: what almost every request of a real \
             sale sees.\n\n",
        );
        Self::path_table(&mut out, &self.sold_out);

        let stock = self.flash.first().map_or(0, |row| row.sold);
        let postgres_ops = self
            .flash
            .iter()
            .find(|row| row.contender == POSTGRES)
            .map(|row| row.throughput.ops_per_sec);
        // The stricter comparison: PostgreSQL without waiting for the disk.
        let _ = write!(
            out,
            "\n## (c) Flash sale\n\n{stock} units, limit 1 per user, 100,000 distinct users \
             clicking once and 20,000 of them twice, in a shuffled order, from {} clients \
             racing until every click is answered: once one click per round trip, once \
             with 16 clicks in flight per client (pipelined, as an app server multiplexing \
             many users over a few connections sends them). \"Sold out after\" is when the \
             last unit went, one click per round trip. Ratios are against PostgreSQL at \
             memory speed, the faster of its two rows. The check counts the units sold and \
             the users who bought twice, in both runs.\n\n",
            self.clients
        );
        out.push_str(
            "| contender | sold | sold out after | clicks/s | × PostgreSQL | p50 / p99 ms \
             | clicks/s, 16 in flight | × PostgreSQL | check |\n\
             |---|--:|--:|--:|--:|--:|--:|--:|---|\n",
        );
        for row in &self.flash {
            let check = if !row.problems.is_empty() {
                format!("**{}**", row.problems.join("; "))
            } else if row.limit_enforced {
                "exact, nobody above the limit".to_owned()
            } else {
                "exact stock; no per-user limit in this algorithm".to_owned()
            };
            let piped = row.pipelined.map(|t| t.ops_per_sec);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {:.2} / {:.2} | {} | {} | {} |",
                row.contender,
                row.sold,
                row.sold_out_after.map_or_else(
                    || "–".to_owned(),
                    |d| format!("{:.0} ms", d.as_secs_f64() * 1000.0)
                ),
                thousands(Some(row.throughput.ops_per_sec)),
                show_ratio(ratio(Some(row.throughput.ops_per_sec), postgres_ops)),
                row.throughput.p50_ms,
                row.throughput.p99_ms,
                thousands(piped),
                show_ratio(ratio(piped, postgres_ops)),
                check
            );
        }

        let _ = write!(
            out,
            "\n## (d) Memory\n\n`INFO memory` growth per buyer record after {} purchases, \
             each with its own user id (`user:N`) and request id (`order:N`).\n\n\
             | layout | bytes per buyer record | × key-per-user layout |\n|---|--:|--:|\n\
             | seckill item (`DEDUCT ... ID`) | {:.0} | {} |\n\
             | key-per-user layout: one `INCR` key per user + `SADD` of the request id | {:.0} | 1.00× |\n",
            self.memory.buyers,
            self.memory.module_bytes,
            show_ratio(ratio(
                Some(self.memory.module_bytes),
                Some(self.memory.key_per_user_bytes)
            )),
            self.memory.key_per_user_bytes,
        );
        out.push_str(&self.growth_markdown());
        out.push('\n');
        out.push_str(&self.lapse.markdown());
        if !self.instructions.is_empty() {
            out.push_str(
                "\n## (g) Instructions per call\n\nInstructions executed inside Redis's \
                 `call()` per command, counted by `valgrind --tool=callgrind` on a separate \
                 server, 20,000 calls each, users out of 100,000 who all bought before. \
                 These counts repeat to within about 2% from run to run (hash seeds differ), \
                 unlike wall-clock figures on a shared machine, but they do not see cache misses: \
                 the difference between the two views is memory latency.\n\n\
                 | path | contender | instructions/call | × reference |\n|---|---|--:|--:|\n",
            );
            for count in &self.instructions {
                let reference = if count.path == "success" { DECRBY } else { GET };
                let reference = self
                    .instructions
                    .iter()
                    .find(|other| other.contender == reference)
                    .map(|other| other.instructions);
                let _ = writeln!(
                    out,
                    "| {} | {} | {:.0} | {} |",
                    count.path,
                    count.contender,
                    count.instructions,
                    show_ratio(ratio(Some(count.instructions), reference))
                );
            }
        }
        out.push('\n');
        match &self.drain {
            Ok(drain) => out.push_str(&drain.markdown()),
            Err(reason) => {
                let _ = writeln!(out, "## (h) Order drain\n\nNot measured: {reason}.");
            }
        }
        out.push_str(&self.big_items_markdown());
        out.push_str(&self.split.markdown(self.cores));
        out.push('\n');
        out.push_str(&self.backlog.markdown());
        out.push('\n');
        out.push_str(notes.trim_end());
        out.push('\n');
        out
    }

    fn chart(&self) -> String {
        let success: Vec<(&str, f64)> = self
            .success
            .rows
            .iter()
            .filter_map(|row| Some((row.contender, row.pipelined?.ops_per_sec / 1000.0)))
            .collect();
        let sold_out: Vec<(&str, f64)> = self
            .sold_out
            .rows
            .iter()
            .filter_map(|row| Some((row.contender, row.pipelined?.ops_per_sec / 1000.0)))
            .collect();
        let cost: Vec<(&str, f64)> = self
            .success
            .rows
            .iter()
            .filter_map(|row| Some((row.contender, row.usec_per_call?)))
            .collect();
        let flash: Vec<(&str, f64)> = self
            .flash
            .iter()
            .map(|row| (row.contender, row.throughput.ops_per_sec / 1000.0))
            .collect();
        let panels = [
            (
                "Success path, -P 16: thousand deductions per second",
                success,
            ),
            ("Sold-out path, -P 16: thousand calls per second", sold_out),
            ("Success path: server µs per call (lower is better)", cost),
            (
                "Flash sale, no pipelining: thousand clicks per second",
                flash,
            ),
        ];
        svg(&panels)
    }

    pub fn write(&self, root: &str) {
        let root = Path::new(root);
        let notes = fs::read_to_string(root.join("bench/NOTES.md")).unwrap_or_default();
        fs::write(root.join("BENCHMARKS.md"), self.markdown(&notes)).expect("write BENCHMARKS.md");
        fs::create_dir_all(root.join("docs")).expect("docs dir");
        fs::write(root.join("docs/benchmarks.svg"), self.chart()).expect("write chart");
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Horizontal bar panels, one under the other; this module's bars are
/// drawn in a colour of their own.
fn svg(panels: &[(&str, Vec<(&str, f64)>)]) -> String {
    const WIDTH: f64 = 820.0;
    const LABEL: f64 = 250.0;
    const BAR: f64 = 18.0;
    const GAP: f64 = 6.0;
    let mut out = String::new();
    let mut y = 10.0;
    let mut body = String::new();
    for (title, bars) in panels {
        let _ = writeln!(
            body,
            r#"<text x="10" y="{:.0}" font-weight="bold">{}</text>"#,
            y + 14.0,
            escape(title)
        );
        y += 24.0;
        let max = bars.iter().map(|(_, v)| *v).fold(0.0, f64::max).max(1e-9);
        for (label, value) in bars {
            let width = (WIDTH - LABEL - 90.0) * value / max;
            let colour = if *label == MODULE || *label == MODULE_ID {
                "#d9480f"
            } else if *label == GET || *label == DECRBY {
                "#868e96"
            } else if *label == FUNCTION || *label == LUA_SECKILL {
                "#1c7ed6"
            } else {
                "#4dabf7"
            };
            let _ = writeln!(
                body,
                r#"<text x="{:.0}" y="{:.0}" text-anchor="end">{}</text><rect x="{LABEL:.0}" y="{:.0}" width="{width:.1}" height="{BAR:.0}" fill="{colour}"/><text x="{:.1}" y="{:.0}">{value:.2}</text>"#,
                LABEL - 8.0,
                y + 13.0,
                escape(label),
                y,
                LABEL + width + 6.0,
                y + 13.0,
            );
            y += BAR + GAP;
        }
        y += 14.0;
    }
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH:.0}" height="{y:.0}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/>"#
    );
    out.push_str(&body);
    out.push_str("</svg>\n");
    out
}
