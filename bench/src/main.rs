//! `make bench`: SECKILL.DEDUCT against every alternative a user would pick,
//! on the same machine in the same run, written to BENCHMARKS.md and a chart.

mod backlog;
mod big_items;
mod contenders;
mod drain;
mod instructions;
mod load;
mod postgres;
mod report;
mod split;

use contenders::Scripts;
use contenders::{
    load_scripts, single_commands, watch_deduct, DECRBY, FLOOR, FUNCTION, GET, HINCRBY,
    LUA_SECKILL, LUA_STOCK_SERVICE, MODULE, MODULE_HOLD, MODULE_ID, MODULE_ORDER, MODULE_VARIANT,
    POSTGRES, POSTGRES_DURABLE, WATCH,
};
use load::{closed_loop, median, redis_benchmark_on, Throughput};
use redis::Connection;
use report::{
    FlashSaleRow, Lapse, Measurement, Memory, PathReport, Report, Round, LAPSE_PING_BOUND,
};
use seckill_harness::postgres::Postgres;
use seckill_harness::{command_stat, ok, server_info, total_command_usec, Server};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Sizes of one run; `SECKILL_BENCH_QUICK=1` shrinks them for a smoke run.
struct Plan {
    clients: usize,
    plain_requests: usize,
    pipelined_requests: usize,
    watch_calls: usize,
    keyspace: usize,
    repeats: usize,
    pg_seconds: u64,
    sale_stock: i64,
    sale_users: usize,
    sale_reclicks: usize,
    memory_buyers: usize,
    growth_calls: usize,
    big_item_buyers: usize,
    lapsing_holds: usize,
    lapsing_items: usize,
    drain_entries: usize,
    /// Lapsed holds of one item in section (k), the first with none.
    backlogs: Vec<usize>,
    backlog_calls: usize,
    /// Bursts of each contender a target compares with its reference, in
    /// turns (see `alternate`), and the `-P 16` requests of one.
    bursts: usize,
    burst_requests: usize,
}

impl Plan {
    fn from_env() -> Plan {
        let quick = std::env::var("SECKILL_BENCH_QUICK").is_ok_and(|v| v == "1");
        let scale = if quick { 10 } else { 1 };
        Plan {
            clients: 50,
            plain_requests: 120_000 / scale,
            pipelined_requests: 600_000 / scale,
            watch_calls: 20_000 / scale,
            keyspace: 100_000,
            repeats: if quick { 1 } else { 5 },
            pg_seconds: if quick { 2 } else { 5 },
            sale_stock: 1_000,
            sale_users: 100_000,
            sale_reclicks: 20_000,
            memory_buyers: 100_000,
            // About 10 million distinct users out of a billion.
            growth_calls: 10_050_000 / scale,
            big_item_buyers: 1_000_000 / scale,
            lapsing_holds: 200_000,
            lapsing_items: 1_000,
            drain_entries: 100_000 / scale,
            backlogs: vec![0, 200_000 / scale, 600_000 / scale],
            backlog_calls: 20_000,
            bursts: if quick { 3 } else { 21 },
            burst_requests: 100_000 / scale,
        }
    }
}

fn median_throughput(runs: &[Throughput]) -> Throughput {
    Throughput {
        ops_per_sec: median(runs.iter().map(|t| t.ops_per_sec).collect()),
        p50_ms: median(runs.iter().map(|t| t.p50_ms).collect()),
        p99_ms: median(runs.iter().map(|t| t.p99_ms).collect()),
        max_ms: median(runs.iter().map(|t| t.max_ms).collect()),
    }
}

/// One integer field of SECKILL.INFO, or -1 if it has none.
pub(crate) fn info_field(con: &mut Connection, key: &str, field: &str) -> i64 {
    let info: std::collections::HashMap<String, redis::Value> = ok(con, &["SECKILL.INFO", key]);
    match info.get(field) {
        Some(redis::Value::Int(value)) => *value,
        _ => -1,
    }
}

/// A deterministic stream of pseudo-random numbers (splitmix64), so that
/// every contender sees the same users in the same order.
struct Sequence(u64);

impl Sequence {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

fn pseudo_user(index: usize, keyspace: usize) -> String {
    let mut sequence = Sequence(index as u64);
    format!("user:{}", sequence.next() % keyspace as u64)
}

/// Success path or sold-out path: every single-command contender through
/// redis-benchmark, with and without pipelining, plus WATCH and PostgreSQL.
fn deduct_path(
    server: &Server,
    con: &mut Connection,
    plan: &Plan,
    postgres: Option<&Postgres>,
    sold_out: bool,
) -> PathReport {
    let scripts = load_scripts(con);
    let (prefix, stock, reference) = if sold_out {
        ("soldout", 0, GET)
    } else {
        ("success", 1_000_000_000_000_000, DECRBY)
    };
    let commands: Vec<_> = single_commands(con, &scripts, prefix, stock, plan.keyspace)
        .into_iter()
        // A write's floors on the sold-out path, a read's on the success
        // path, tell nothing.
        .filter(|command| {
            if sold_out {
                command.name != DECRBY && command.name != HINCRBY
            } else {
                command.name != FLOOR
            }
        })
        .collect();
    // The server's main thread on CPU 0 and the load on CPU 1: sharing
    // both, the load generator preempts a call now and then, and one
    // preemption of a few milliseconds in ten thousand calls moves a mean
    // of a microsecond by a third.
    let pid = server_info(con, "server", "process_id").unwrap_or_default();
    let pinned = big_items::pin(&pid, "0");
    let load_cpu = pinned.then_some(1);
    // Round by round, every contender once per round: on a shared machine
    // whose speed drifts over minutes, two contenders a ratio compares are
    // measured seconds apart, and each ratio is judged round by round.
    let mut runs: Vec<(Vec<Throughput>, Vec<Throughput>, Vec<f64>)> =
        commands.iter().map(|_| Default::default()).collect();
    for round in 0..plan.repeats {
        for (command, (plain, pipelined, usec)) in commands.iter().zip(&mut runs) {
            ok::<String>(con, &["CONFIG", "RESETSTAT"]);
            plain.push(redis_benchmark_on(
                load_cpu,
                server.port,
                plan.clients,
                plan.plain_requests,
                1,
                command.keyspace,
                &command.args,
            ));
            pipelined.push(redis_benchmark_on(
                load_cpu,
                server.port,
                plan.clients,
                plan.pipelined_requests,
                16,
                command.keyspace,
                &command.args,
            ));
            usec.push(command_stat(con, command.stat, "usec_per_call").unwrap_or(f64::NAN));
            println!(
                "  round {}/{}: {:<48} {:>6.3} µs/call, {:>8.0} ops/s at -P 16",
                round + 1,
                plan.repeats,
                command.name,
                usec.last().copied().unwrap_or(f64::NAN),
                pipelined.last().map_or(f64::NAN, |run| run.ops_per_sec),
            );
        }
    }
    let pairs = target_pairs(sold_out)
        .iter()
        .filter_map(|(contender, reference)| {
            let find = |name: &str| commands.iter().find(|command| command.name == name);
            let pair = alternate(
                server,
                con,
                plan,
                load_cpu,
                find(contender)?,
                find(reference)?,
            );
            println!(
                "  {} / {}: {:.2}x µs/call ({:.2}-{:.2}), {:.2}x ops/s at -P 16, {} bursts each",
                pair.contender,
                pair.reference,
                pair.usec.median,
                pair.usec.low,
                pair.usec.high,
                pair.pipelined.median,
                plan.bursts,
            );
            Some(pair)
        })
        .collect();
    if pinned {
        big_items::unpin(&pid);
    }
    let mut rows: Vec<Measurement> = commands
        .iter()
        .zip(runs)
        .map(|(command, (plain, pipelined, usec))| Measurement {
            contender: command.name,
            rounds: usec
                .iter()
                .zip(&pipelined)
                .map(|(usec, pipelined)| Round {
                    usec_per_call: *usec,
                    pipelined_ops: pipelined.ops_per_sec,
                })
                .collect(),
            usec_per_call: Some(median(usec)),
            plain: Some(median_throughput(&plain)),
            pipelined: Some(median_throughput(&pipelined)),
        })
        .collect();

    println!(
        "  {WATCH:<28} {} calls from {} clients",
        plan.watch_calls, plan.clients
    );
    let watch_stock = stock.to_string();
    ok::<String>(
        con,
        &["SET", &format!("{prefix}:watch:stock"), &watch_stock],
    );
    ok::<String>(con, &["CONFIG", "RESETSTAT"]);
    let keyspace = plan.keyspace;
    let watch_prefix = prefix.to_owned();
    let run = closed_loop(
        &server.url(),
        plan.clients,
        plan.watch_calls,
        1,
        move |con, calls| {
            calls
                .map(|i| watch_deduct(con, &watch_prefix, &pseudo_user(i, keyspace), 1_000_000_000))
                .collect()
        },
    );
    rows.push(Measurement {
        contender: WATCH,
        usec_per_call: Some(total_command_usec(con) / plan.watch_calls as f64),
        plain: Some(run.throughput()),
        pipelined: None,
        rounds: Vec::new(),
    });

    if let Some(pg) = postgres {
        println!(
            "  {POSTGRES:<28} {} s from {} clients",
            plan.pg_seconds, plan.clients
        );
        pg.sql(&format!(
            "DROP TABLE IF EXISTS stock; CREATE TABLE stock (id int PRIMARY KEY, count bigint); \
             INSERT INTO stock VALUES (1, {stock});"
        ));
        pg.set_durable_commits(false);
        let tps = postgres::pgbench(
            pg,
            "UPDATE stock SET count = count - 1 WHERE id = 1 AND count > 0;\n",
            plan.clients,
            plan.pg_seconds,
            None,
        );
        rows.push(Measurement {
            contender: POSTGRES,
            usec_per_call: None,
            plain: Some(tps),
            pipelined: None,
            rounds: Vec::new(),
        });
    }
    ok::<String>(con, &["FLUSHALL"]);
    PathReport {
        reference,
        rows,
        pairs,
    }
}

/// The contenders each target of a path compares, contender first.
fn target_pairs(sold_out: bool) -> &'static [(&'static str, &'static str)] {
    if sold_out {
        &[(MODULE, FLOOR)]
    } else {
        &[
            (MODULE, HINCRBY),
            (MODULE, LUA_SECKILL),
            (MODULE_HOLD, MODULE_ID),
            (MODULE_VARIANT, MODULE_ID),
            (MODULE_ORDER, MODULE_ID),
        ]
    }
}

/// One short burst of `command` at `-P 16`: its server µs/call and its
/// throughput.
fn burst(
    server: &Server,
    con: &mut Connection,
    plan: &Plan,
    load_cpu: Option<usize>,
    command: &contenders::Command,
) -> (f64, f64) {
    ok::<String>(con, &["CONFIG", "RESETSTAT"]);
    let run = redis_benchmark_on(
        load_cpu,
        server.port,
        plan.clients,
        plan.burst_requests,
        16,
        command.keyspace,
        &command.args,
    );
    let usec = command_stat(con, command.stat, "usec_per_call").unwrap_or(f64::NAN);
    (usec, run.ops_per_sec)
}

/// `contender` against `reference` in alternating bursts, the reference
/// first and last (see [`report::Pair`]).
fn alternate(
    server: &Server,
    con: &mut Connection,
    plan: &Plan,
    load_cpu: Option<usize>,
    contender: &contenders::Command,
    reference: &contenders::Command,
) -> report::Pair {
    let mut before = burst(server, con, plan, load_cpu, reference);
    let mut usec = Vec::with_capacity(plan.bursts);
    let mut pipelined = Vec::with_capacity(plan.bursts);
    for _ in 0..plan.bursts {
        let (contender_usec, contender_ops) = burst(server, con, plan, load_cpu, contender);
        let after = burst(server, con, plan, load_cpu, reference);
        usec.push(contender_usec / ((before.0 + after.0) / 2.0));
        pipelined.push(contender_ops / ((before.1 + after.1) / 2.0));
        before = after;
    }
    let nothing = report::RoundRatio {
        median: f64::NAN,
        low: f64::NAN,
        high: f64::NAN,
    };
    report::Pair {
        contender: contender.name,
        reference: reference.name,
        usec: report::RoundRatio::of(usec).unwrap_or(nothing),
        pipelined: report::RoundRatio::of(pipelined).unwrap_or(nothing),
    }
}

/// Who clicks in the flash sale: every user once, and some twice, shuffled.
fn sale_attempts(plan: &Plan) -> Vec<String> {
    let mut attempts: Vec<String> = (0..plan.sale_users)
        .chain(0..plan.sale_reclicks)
        .map(|n| format!("user:{n}"))
        .collect();
    let mut sequence = Sequence(7);
    for i in (1..attempts.len()).rev() {
        let j = (sequence.next() % (i as u64 + 1)) as usize;
        attempts.swap(i, j);
    }
    attempts
}

/// One click of `user` (attempt `index`) as a single command, for the
/// contenders that are one.
fn sale_command(contender: &str, scripts: &Scripts, user: &str, index: usize) -> redis::Cmd {
    let mut command;
    match contender {
        MODULE => {
            command = redis::cmd("SECKILL.DEDUCT");
            command
                .arg("sale:item")
                .arg(user)
                .arg(1)
                .arg("ID")
                .arg(format!("req:{index}"));
        }
        LUA_SECKILL => {
            command = redis::cmd("EVALSHA");
            command
                .arg(&scripts.seckill_lua)
                .arg(2)
                .arg("sale:stock")
                .arg("sale:bought")
                .arg(user)
                .arg(1);
        }
        LUA_STOCK_SERVICE => {
            command = redis::cmd("EVALSHA");
            command
                .arg(&scripts.stock_service)
                .arg(1)
                .arg("sale:stock")
                .arg(1);
        }
        _ => {
            command = redis::cmd("FCALL");
            command
                .arg("seckill_deduct")
                .arg(2)
                .arg("sale:stock")
                .arg("sale:bought")
                .arg(user)
                .arg(1);
        }
    }
    command
}

/// Whether a contender's reply means a unit was sold: seckill.lua, the
/// function and WATCH answer 1, the module and StockService the stock left.
fn is_sale(contender: &str, reply: i64) -> bool {
    match contender {
        MODULE | LUA_STOCK_SERVICE => reply >= 0,
        _ => reply == 1,
    }
}

struct SaleRun {
    throughput: Throughput,
    sold: i64,
    sold_out_after: Option<Duration>,
    problems: Vec<String>,
}

/// Runs the whole sale once for `contender`, `batch` clicks per round trip,
/// and checks the outcome.
fn run_sale(
    server: &Server,
    con: &mut Connection,
    plan: &Plan,
    scripts: &Arc<Scripts>,
    attempts: &Arc<Vec<String>>,
    contender: &'static str,
    batch: usize,
) -> SaleRun {
    let stock = plan.sale_stock;
    ok::<String>(con, &["FLUSHALL"]);
    let stock_arg = stock.to_string();
    match contender {
        MODULE => {
            ok::<i64>(
                con,
                &["SECKILL.INIT", "sale:item", &stock_arg, "LIMIT", "1"],
            );
        }
        WATCH => {
            ok::<String>(con, &["SET", "sale:watch:stock", &stock_arg]);
        }
        _ => {
            ok::<String>(con, &["SET", "sale:stock", &stock_arg]);
        }
    }
    let (users, scripts) = (Arc::clone(attempts), Arc::clone(scripts));
    let run = closed_loop(
        &server.url(),
        plan.clients,
        attempts.len(),
        batch,
        move |con, clicks| {
            if contender == WATCH {
                return clicks
                    .map(|i| (i, is_sale(WATCH, watch_deduct(con, "sale", &users[i], 1))))
                    .collect();
            }
            let replies: Vec<i64> = if clicks.len() == 1 {
                let i = clicks.start;
                vec![sale_command(contender, &scripts, &users[i], i)
                    .query(con)
                    .expect("sale click")]
            } else {
                let mut pipe = redis::pipe();
                for i in clicks.clone() {
                    pipe.add_command(sale_command(contender, &scripts, &users[i], i));
                }
                pipe.query(con).expect("sale round trip")
            };
            clicks
                .zip(replies)
                .map(|(i, reply)| (i, is_sale(contender, reply)))
                .collect()
        },
    );
    let sales: Vec<_> = run.results.iter().filter(|((_, sale), _)| *sale).collect();
    let buyers: HashSet<&str> = sales
        .iter()
        .map(|((i, _), _)| attempts[*i].as_str())
        .collect();
    let left: i64 = match contender {
        MODULE => ok(con, &["SECKILL.GET", "sale:item"]),
        WATCH => ok(con, &["GET", "sale:watch:stock"]),
        _ => ok(con, &["GET", "sale:stock"]),
    };
    let sold = sales.len() as i64;
    let mut problems = Vec::new();
    if sold != stock || left != 0 {
        problems.push(format!("sold {sold} of {stock}, {left} left"));
    }
    if contender != LUA_STOCK_SERVICE && buyers.len() != sales.len() {
        problems.push(format!("{} users bought twice", sales.len() - buyers.len()));
    }
    if contender == MODULE {
        let recorded = info_field(con, "sale:item", "sold");
        if recorded != stock {
            problems.push(format!("INFO says {recorded} sold"));
        }
    }
    SaleRun {
        throughput: run.throughput(),
        sold,
        sold_out_after: sales.iter().map(|(_, at)| *at).max(),
        problems,
    }
}

/// The flash sale: a small stock, many distinct users with limit 1, all
/// clients racing until every user has clicked; once one click per round
/// trip, once with 16 in flight per client, as an app server multiplexing
/// its users over a few connections would.
fn flash_sale(
    server: &Server,
    con: &mut Connection,
    plan: &Plan,
    postgres: Option<&Postgres>,
) -> Vec<FlashSaleRow> {
    let scripts = Arc::new(load_scripts(con));
    let attempts = Arc::new(sale_attempts(plan));
    let mut rows = Vec::new();
    for contender in [MODULE, LUA_SECKILL, LUA_STOCK_SERVICE, FUNCTION, WATCH] {
        println!(
            "  {contender:<28} {} units, {} clicks from {} clients",
            plan.sale_stock,
            attempts.len(),
            plan.clients
        );
        let plain = run_sale(server, con, plan, &scripts, &attempts, contender, 1);
        let pipelined = (contender != WATCH)
            .then(|| run_sale(server, con, plan, &scripts, &attempts, contender, 16));
        let mut problems = plain.problems;
        if let Some(run) = &pipelined {
            problems.extend(run.problems.iter().map(|p| format!("{p} (pipelined)")));
        }
        rows.push(FlashSaleRow {
            contender,
            sold: plain.sold,
            sold_out_after: plain.sold_out_after,
            throughput: plain.throughput,
            pipelined: pipelined.map(|run| run.throughput),
            limit_enforced: contender != LUA_STOCK_SERVICE,
            problems,
        });
    }
    if let Some(pg) = postgres {
        for (contender, durable) in [(POSTGRES_DURABLE, true), (POSTGRES, false)] {
            rows.push(postgres_flash_sale(
                pg,
                plan,
                contender,
                durable,
                attempts.len(),
            ));
        }
    }
    ok::<String>(con, &["FLUSHALL"]);
    rows
}

/// The articles' SQL baseline under the same sale: one hot row, and each sale recorded
/// with its time so that the sell-out moment can be read back.
fn postgres_flash_sale(
    pg: &Postgres,
    plan: &Plan,
    contender: &'static str,
    durable: bool,
    clicks: usize,
) -> FlashSaleRow {
    let stock = plan.sale_stock;
    let per_client = clicks / plan.clients;
    println!(
        "  {contender:<28} {stock} units, {} clicks from {} clients",
        per_client * plan.clients,
        plan.clients
    );
    pg.set_durable_commits(durable);
    pg.sql(&format!(
        "DROP TABLE IF EXISTS stock; DROP TABLE IF EXISTS sold; \
         CREATE TABLE stock (id int PRIMARY KEY, count bigint); \
         CREATE TABLE sold (user_id int, at timestamptz); \
         INSERT INTO stock VALUES (1, {stock});"
    ));
    let started = pg.sql("SELECT extract(epoch from clock_timestamp())");
    let script = format!(
        "\\set uid random(1, {})\n\
         WITH taken AS (UPDATE stock SET count = count - 1 WHERE id = 1 AND count > 0 RETURNING id) \
         INSERT INTO sold SELECT :uid, clock_timestamp() FROM taken;\n",
        plan.sale_users
    );
    let throughput = postgres::pgbench(pg, &script, plan.clients, 0, Some(per_client));
    let sold: i64 = pg
        .sql("SELECT count(*) FROM sold")
        .trim()
        .parse()
        .unwrap_or(-1);
    let left: i64 = pg
        .sql("SELECT count FROM stock")
        .trim()
        .parse()
        .unwrap_or(-1);
    let last_sale: f64 = pg
        .sql("SELECT extract(epoch from max(at)) FROM sold")
        .trim()
        .parse()
        .unwrap_or(f64::NAN);
    let started: f64 = started.trim().parse().unwrap_or(f64::NAN);
    let mut problems = Vec::new();
    if sold != stock || left != 0 {
        problems.push(format!("sold {sold} of {stock}, {left} left"));
    }
    FlashSaleRow {
        contender,
        sold,
        sold_out_after: Duration::try_from_secs_f64(last_sale - started).ok(),
        throughput,
        pipelined: None,
        limit_enforced: false,
        problems,
    }
}

fn used_memory(con: &mut Connection) -> f64 {
    server_info(con, "memory", "used_memory")
        .and_then(|bytes| bytes.parse().ok())
        .unwrap_or(f64::NAN)
}

/// Bytes per buyer record (user + request id) after `memory_buyers`
/// purchases: the module's item against the key-per-user layout (one string key per
/// user plus a set of request ids).
fn memory(con: &mut Connection, plan: &Plan) -> Memory {
    let mut measure = |setup: &dyn Fn(&mut Connection),
                       add: &dyn Fn(&mut redis::Pipeline, usize)| {
        ok::<String>(con, &["FLUSHALL"]);
        setup(con);
        let before = used_memory(con);
        for batch in (0..plan.memory_buyers).collect::<Vec<_>>().chunks(1000) {
            let mut pipe = redis::pipe();
            for n in batch {
                add(&mut pipe, *n);
            }
            pipe.query::<()>(con).expect("memory batch");
        }
        (used_memory(con) - before) / plan.memory_buyers as f64
    };
    println!(
        "  module item and key-per-user layout, {} buyers each",
        plan.memory_buyers
    );
    let module = measure(
        &|con| {
            ok::<i64>(con, &["SECKILL.INIT", "sku:1001", "1000000000"]);
        },
        &|pipe, n| {
            pipe.cmd("SECKILL.DEDUCT")
                .arg("sku:1001")
                .arg(format!("user:{n}"))
                .arg(1)
                .arg("ID")
                .arg(format!("order:{n}"))
                .ignore();
        },
    );
    let key_per_user = measure(&|_| {}, &|pipe, n| {
        pipe.cmd("INCR")
            .arg(format!("sku:1001:bought:user:{n}"))
            .ignore()
            .cmd("SADD")
            .arg("sku:1001:requests")
            .arg(format!("order:{n}"))
            .ignore();
    });
    ok::<String>(con, &["FLUSHALL"]);
    Memory {
        buyers: plan.memory_buyers,
        module_bytes: module,
        key_per_user_bytes: key_per_user,
    }
}

/// The order stream every lapsing item writes to: it shares the items' hash
/// slot through the `{lapse}` tag, as the module requires.
const LAPSE_STREAM: &str = "{lapse}:orders";
/// Runs of section (f), of which the one with the median longest PING is
/// reported.
const LAPSE_RUNS: usize = 3;
/// How long after the loading starts the holds fall due.
const LAPSE_DEADLINE_IN: Duration = Duration::from_millis(3_000);
/// How long before the deadline the PING client starts.
const LAPSE_PING_LEAD: Duration = Duration::from_millis(200);
/// How often the main thread reads the stream's length.
const LAPSE_POLL: Duration = Duration::from_millis(20);
/// How long after the deadline the sweep may take before the run gives up.
const LAPSE_GIVE_UP: Duration = Duration::from_secs(30);

/// A stream entry ID's milliseconds (`1700000000000-3` gives 1700000000000).
fn entry_ms(id: &str) -> Option<i64> {
    id.split('-').next()?.parse().ok()
}

/// Signed milliseconds from `deadline` to `at`.
fn ms_after(at: Instant, deadline: Instant) -> f64 {
    match at.checked_duration_since(deadline) {
        Some(after) => after.as_secs_f64() * 1000.0,
        None => -(deadline.duration_since(at).as_secs_f64() * 1000.0),
    }
}

/// What the PING client saw while holds lapsed.
struct Pings {
    longest: Duration,
    longest_sent: Instant,
    /// The longest of those sent before the deadline, with no sweep running
    /// yet: the machine's own noise, for reference.
    longest_before: Duration,
    count: usize,
    /// Those that took `LAPSE_PING_BOUND` or longer.
    slow: usize,
}

/// Sends PING one at a time, from `LAPSE_PING_LEAD` before `deadline`
/// until `stop`, and keeps the longest round trips.
fn ping_loop(url: &str, deadline: Instant, stop: &AtomicBool) -> Pings {
    let mut con = redis::Client::open(url)
        .and_then(|client| client.get_connection())
        .expect("connect");
    let start_at = deadline.checked_sub(LAPSE_PING_LEAD).unwrap_or(deadline);
    std::thread::sleep(start_at.saturating_duration_since(Instant::now()));
    let mut pings = Pings {
        longest: Duration::ZERO,
        longest_sent: start_at,
        longest_before: Duration::ZERO,
        count: 0,
        slow: 0,
    };
    while !stop.load(Ordering::Relaxed) {
        let sent = Instant::now();
        let _: String = ok(&mut con, &["PING"]);
        let took = sent.elapsed();
        if took > pings.longest {
            (pings.longest, pings.longest_sent) = (took, sent);
        }
        if sent < deadline {
            pings.longest_before = pings.longest_before.max(took);
        }
        pings.count += 1;
        pings.slow += usize::from(took >= LAPSE_PING_BOUND);
    }
    pings
}

/// `lapsing_holds` holds spread evenly over `lapsing_items` items, all due
/// at the same moment and released by the module's sweep with nobody
/// writing to the items: how long until the last one is released, and the
/// longest PING meanwhile.
///
/// Reads report a lapsed hold as released before the sweep gets to it, so
/// they cannot tell when the sweep is done. Every item therefore writes to
/// one order stream, which gets a `hold` entry per hold and an `expire`
/// entry per release: the sweep is done when it holds two entries per hold.
fn lapse(server: &Server, con: &mut Connection, plan: &Plan) -> Lapse {
    let (holds, items) = (plan.lapsing_holds, plan.lapsing_items);
    let item = |i: usize| format!("{{lapse}}:{i}");
    ok::<String>(con, &["FLUSHALL"]);
    let mut pipe = redis::pipe();
    for i in 0..items {
        pipe.cmd("SECKILL.INIT")
            .arg(item(i))
            .arg(1_000_000)
            .arg("STREAM")
            .arg(LAPSE_STREAM)
            .ignore();
    }
    pipe.query::<()>(con).expect("lapsing items");

    let time: Vec<i64> = ok(con, &["TIME"]);
    let local_deadline = Instant::now() + LAPSE_DEADLINE_IN;
    let deadline_ms = time[0] * 1000 + time[1] / 1000 + LAPSE_DEADLINE_IN.as_millis() as i64;
    let deadline = deadline_ms.to_string();
    println!(
        "  {holds} holds over {items} items, due {} s from now",
        LAPSE_DEADLINE_IN.as_secs()
    );
    for batch in (0..holds).collect::<Vec<_>>().chunks(1000) {
        let mut pipe = redis::pipe();
        for n in batch {
            pipe.cmd("SECKILL.DEDUCT")
                .arg(item(n % items))
                .arg(format!("user:{n}"))
                .arg(1)
                .arg("ID")
                .arg(format!("hold:{n}"))
                .arg("HOLDUNTIL")
                .arg(&deadline)
                .ignore();
        }
        pipe.query::<()>(con).expect("holds");
    }
    let mut problems = Vec::new();
    let loaded = Instant::now();
    println!(
        "  taken in {:.0} ms; PING from {} ms before the deadline",
        ms_after(loaded, local_deadline) + LAPSE_DEADLINE_IN.as_secs_f64() * 1000.0,
        LAPSE_PING_LEAD.as_millis()
    );
    // The PING client's time before the deadline must be quiet, and no hold
    // may lapse before all are taken.
    if loaded + LAPSE_PING_LEAD > local_deadline {
        let after = ms_after(loaded, local_deadline);
        problems.push(if after < 0.0 {
            format!(
                "taking the holds ended only {:.0} ms before the deadline",
                -after
            )
        } else {
            format!("taking the holds ended {after:.0} ms after the deadline")
        });
    }
    let taken: usize = ok(con, &["XLEN", LAPSE_STREAM]);
    if taken != holds {
        problems.push(format!("{taken} `hold` entries for {holds} holds"));
    }

    // One client sending PING one at a time, from a little before the
    // deadline until the main thread sees every hold released.
    let stop = Arc::new(AtomicBool::new(false));
    let pinger = {
        let (stop, url) = (Arc::clone(&stop), server.url());
        std::thread::spawn(move || ping_loop(&url, local_deadline, &stop))
    };

    std::thread::sleep(local_deadline.saturating_duration_since(Instant::now()));
    let entries = 2 * holds;
    let mut seen = None;
    let mut length: usize;
    loop {
        length = ok(con, &["XLEN", LAPSE_STREAM]);
        let now = Instant::now();
        if length >= entries {
            seen = Some(now);
            break;
        }
        if now > local_deadline + LAPSE_GIVE_UP {
            break;
        }
        std::thread::sleep(LAPSE_POLL);
    }
    stop.store(true, Ordering::Relaxed);
    let pings = pinger.join().expect("PING client");
    let released = length.saturating_sub(taken);
    if seen.is_none() {
        problems.push(format!(
            "{released} of {holds} released {} s after the deadline",
            LAPSE_GIVE_UP.as_secs()
        ));
    } else if length != entries {
        problems.push(format!("{length} stream entries for {holds} holds"));
    }

    // The last release's own time, on the server's clock: the ID of the
    // last entry, which is an `expire` one.
    let last: Vec<(String, Vec<String>)> =
        ok(con, &["XREVRANGE", LAPSE_STREAM, "+", "-", "COUNT", "1"]);
    let last_release_ms = last.first().and_then(|(id, fields)| {
        let is_release = fields
            .windows(2)
            .any(|pair| pair[0] == "event" && pair[1] == "expire");
        is_release.then(|| entry_ms(id)).flatten()
    });
    if seen.is_some() && last_release_ms.is_none() {
        problems.push("the stream's last entry is not an `expire` one".to_owned());
    }
    let released_after = seen
        .and(last_release_ms)
        .map(|ms| Duration::from_millis(u64::try_from(ms - deadline_ms).unwrap_or(0)));
    ok::<String>(con, &["FLUSHALL"]);
    Lapse {
        holds,
        items,
        released_after,
        seen_after: seen.map(|at| at.saturating_duration_since(local_deadline)),
        released,
        longest_ping: pings.longest,
        longest_ping_at_ms: ms_after(pings.longest_sent, local_deadline),
        longest_ping_before: pings.longest_before,
        pings: pings.count,
        slow_pings: pings.slow,
        ping_lead: LAPSE_PING_LEAD,
        poll: LAPSE_POLL,
        problems,
        runs: 1,
    }
}

/// `SECKILL_BENCH_ONLY=lapse` runs section (f) alone,
/// `SECKILL_BENCH_ONLY=instructions` section (g) and
/// `SECKILL_BENCH_ONLY=drain` section (h), `SECKILL_BENCH_ONLY=big`
/// sections (e) and (i), `SECKILL_BENCH_ONLY=split` section (j) and
/// `SECKILL_BENCH_ONLY=backlog` section (k), `SECKILL_BENCH_ONLY=paths`
/// sections (a) and (b) without WATCH and PostgreSQL, and prints their
/// figures instead
/// of rewriting BENCHMARKS.md and the chart. No other section can run
/// alone; any other value is refused.
fn only_section() -> Option<String> {
    let section = std::env::var("SECKILL_BENCH_ONLY").ok()?;
    if ![
        "lapse",
        "instructions",
        "drain",
        "big",
        "split",
        "backlog",
        "paths",
    ]
    .contains(&section.as_str())
    {
        eprintln!(
            "SECKILL_BENCH_ONLY={section}: only `lapse`, `instructions`, `drain`, `big`, `split`, `backlog` or `paths` can run alone"
        );
        std::process::exit(2);
    }
    Some(section)
}

/// Section (h), or why it cannot run: it needs PostgreSQL and the
/// seckill-orders binary.
fn order_drain(
    server: &Server,
    con: &mut Connection,
    plan: &Plan,
    postgres: Option<&Postgres>,
) -> Result<report::Drain, String> {
    let Some(pg) = postgres else {
        println!("  PostgreSQL not installed: skipped (make bench installs it)");
        return Err("PostgreSQL is not installed (`make bench` installs it)".to_owned());
    };
    let binary = drain::consumer_binary().inspect_err(|reason| println!("  skipped: {reason}"))?;
    Ok(drain::drain(server, con, pg, &binary, plan.drain_entries))
}

fn start_postgres() -> Option<Postgres> {
    println!("starting a throw-away PostgreSQL cluster");
    let postgres = Postgres::start();
    if postgres.is_none() {
        println!("  PostgreSQL not installed: its rows are skipped (make bench installs it)");
    }
    postgres
}

fn main() {
    let plan = Plan::from_env();
    let only = only_section();
    let started = Instant::now();
    // The floor module beside seckill's (`make bench` builds it), when
    // there: the sold-out path's reference.
    let floor = contenders::floor_module();
    let mut args = vec!["--appendonly", "no"];
    if let Some(floor) = floor.as_deref() {
        args.extend(["--loadmodule", floor]);
    } else {
        println!("the floor module is not built: its rows are skipped (make bench builds it)");
    }
    let server = Server::start_with(&args);
    let mut con = server.client();
    let version = server_info(&mut con, "server", "redis_version").unwrap_or_default();
    println!(
        "seckill bench: redis-server {version} on port {}",
        server.port
    );
    if only.as_deref() == Some("drain") {
        println!("(h) order drain, alone (BENCHMARKS.md is left as it is)");
        let postgres = start_postgres();
        match order_drain(&server, &mut con, &plan, postgres.as_ref()) {
            Ok(drain) => println!("\n{}", drain.markdown()),
            Err(reason) => println!("\n(h) not measured: {reason}"),
        }
        return;
    }
    if only.as_deref() == Some("big") {
        println!("(e) and (i), alone (BENCHMARKS.md is left as it is)");
        big_items::growth(&server, &mut con, plan.clients, plan.growth_calls);
        big_items::big_items(&mut con, plan.big_item_buyers);
        return;
    }
    if only.as_deref() == Some("split") {
        println!("(j) one item split over 3 shards, alone (BENCHMARKS.md is left as it is)");
        let split = split::measure(plan.clients, plan.pipelined_requests, plan.repeats);
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
        println!("{}", split.markdown(cores));
        return;
    }
    if only.as_deref() == Some("backlog") {
        println!("(k) a backlog of lapsed holds, alone (BENCHMARKS.md is left as it is)");
        let backlog = backlog::measure(&plan.backlogs, plan.backlog_calls);
        println!("\n{}", backlog.markdown());
        return;
    }
    if only.as_deref() == Some("instructions") {
        println!("(g) instructions per call, alone (BENCHMARKS.md is left as it is)");
        for count in instructions::measure() {
            println!(
                "  {:<8} {:<28} {:>8.0}",
                count.path, count.contender, count.instructions
            );
        }
        return;
    }
    if only.as_deref() == Some("paths") {
        println!("(a) and (b), alone (BENCHMARKS.md is left as it is)");
        for sold_out in [false, true] {
            deduct_path(&server, &mut con, &plan, None, sold_out);
        }
        return;
    }
    if only.is_some() {
        println!("(f) holds lapsing, alone (BENCHMARKS.md is left as it is)");
        let lapse = lapse(&server, &mut con, &plan);
        println!("\n{}", lapse.markdown());
        return;
    }

    let postgres = start_postgres();

    println!("(a) success path");
    let success = deduct_path(&server, &mut con, &plan, postgres.as_ref(), false);
    println!("(b) sold-out path");
    let sold_out = deduct_path(&server, &mut con, &plan, postgres.as_ref(), true);
    println!("(c) flash sale");
    let flash = flash_sale(&server, &mut con, &plan, postgres.as_ref());
    println!("(d) memory");
    let memory = memory(&mut con, &plan);
    println!("(e) growth: one item to millions of buyers");
    let growth = big_items::growth(&server, &mut con, plan.clients, plan.growth_calls);
    println!("(f) holds lapsing, {LAPSE_RUNS} runs");
    // In a server of its own: in the one that just grew an item to
    // millions of buyers (e), likely left with its allocator's state of
    // that gigabyte after the FLUSHALL, the sweep measured 2.5 s in two
    // full runs where it took 1.5 to 1.9 s alone.
    let lapse_server = Server::start_with(&["--appendonly", "no"]);
    let mut lapse_con = lapse_server.client();
    // The run with the median longest PING: one PING in tens of thousands
    // delayed by the machine's scheduler made a run's figure alone.
    let mut runs: Vec<Lapse> = (0..LAPSE_RUNS)
        .map(|_| lapse(&lapse_server, &mut lapse_con, &plan))
        .collect();
    drop(lapse_con);
    drop(lapse_server);
    runs.sort_by_key(|run| run.longest_ping);
    // A problem of any run (holds not all released) is reported with it.
    let problems: Vec<String> = runs.iter().flat_map(|run| run.problems.clone()).collect();
    let mut lapse = runs.swap_remove(LAPSE_RUNS / 2);
    lapse.problems = problems;
    lapse.runs = LAPSE_RUNS;
    println!("(g) instructions per call (callgrind)");
    let instructions = instructions::measure();
    println!("(h) order drain: seckill-orders against COPY");
    let drain = order_drain(&server, &mut con, &plan, postgres.as_ref());
    println!("(i) big items against a hash and a set");
    let big = big_items::big_items(&mut con, plan.big_item_buyers);
    println!("(j) one item split over 3 shards");
    let split = split::measure(plan.clients, plan.pipelined_requests, plan.repeats);
    println!("(k) a backlog of lapsed holds");
    let backlog = backlog::measure(&plan.backlogs, plan.backlog_calls);

    let report = Report {
        redis_version: version,
        postgres_version: postgres
            .as_ref()
            .map(|pg| pg.sql("SHOW server_version").trim().to_owned()),
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
        clients: plan.clients,
        plain_requests: plan.plain_requests,
        pipelined_requests: plan.pipelined_requests,
        repeats: plan.repeats,
        success,
        sold_out,
        flash,
        memory,
        instructions,
        growth,
        big,
        lapse,
        drain,
        split,
        backlog,
    };
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    report.write(root);
    println!(
        "wrote BENCHMARKS.md and docs/benchmarks.svg in {:.0} s",
        started.elapsed().as_secs_f64()
    );
}
