//! seckill-rebalancer: keeps every part of a split item able to sell while
//! any part has stock, by moving units from parts with spare stock to
//! parts running low.
//!
//! ```text
//! seckill-rebalancer --redis redis://127.0.0.1:7000 --cluster \
//!     --item sku:1:part:0,sku:1:part:1,sku:1:part:2 [--item ...] \
//!     [--low 10] [--interval-ms 100] [--lease-ms 2000] [--name host-1]
//! ```
//!
//! Each round, for each item:
//! 1. it finishes every transfer a part gave out and did not settle
//!    (`SECKILL.TRANSFERS`): `ADD destination units ID transfer_id` (a
//!    replay if it had arrived), then `SETTLE` at the source. So a mover
//!    killed anywhere, even with SIGKILL, is finished by the next round of
//!    any mover, from what the parts themselves hold;
//! 2. it reads each part's stock and makes the moves `plan::moves` picks:
//!    `TAKE` (up to the units asked, once per transfer id), `ADD ... ID`
//!    with the units taken, `SETTLE`.
//!
//! Two movers are safe: transfer ids are derived from the donor's state
//! (`plan::transfer_id`), and each id moves its units at most once. A lease
//! per item (`SET ... NX PX`) makes the second one idle rather than
//! duplicate the work; safety does not rest on it.

mod plan;

use plan::{moves, transfer_id, Watermarks};
use redis::ConnectionLike;
use seckill_client::{SeckillCommands, SettleOutcome};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::sleep;
use std::time::Duration;

struct Config {
    redis: String,
    cluster: bool,
    items: Vec<Vec<String>>,
    marks: Watermarks,
    interval: Duration,
    lease: Duration,
    name: String,
}

const USAGE: &str = "usage: seckill-rebalancer --redis URL [--cluster] --item PART,PART[,...] \
[--item ...] [--low UNITS] [--interval-ms MS] [--lease-ms MS] [--name NAME]";

impl Config {
    fn from_args() -> Result<Config, String> {
        let mut config = Config {
            redis: String::new(),
            cluster: false,
            items: Vec::new(),
            marks: Watermarks { low: 10 },
            interval: Duration::from_millis(100),
            lease: Duration::from_millis(2_000),
            name: format!("rebalancer-{}", std::process::id()),
        };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            if flag == "--cluster" {
                config.cluster = true;
                continue;
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let number = |value: &str| -> Result<u64, String> {
                value
                    .parse()
                    .map_err(|_| format!("{flag} takes a number, not {value:?}"))
            };
            match flag.as_str() {
                "--redis" => config.redis = value,
                "--item" => {
                    let parts: Vec<String> = value.split(',').map(str::to_owned).collect();
                    if parts.len() < 2 || parts.iter().any(String::is_empty) {
                        return Err(format!("--item needs two part keys or more: {value:?}"));
                    }
                    config.items.push(parts);
                }
                "--low" => config.marks.low = number(&value)? as i64,
                "--interval-ms" => config.interval = Duration::from_millis(number(&value)?.max(1)),
                "--lease-ms" => config.lease = Duration::from_millis(number(&value)?.max(100)),
                "--name" => config.name = value,
                _ => return Err(format!("unknown option {flag}")),
            }
        }
        if config.redis.is_empty() || config.items.is_empty() {
            return Err("--redis and at least one --item are required".into());
        }
        Ok(config)
    }
}

fn main() {
    let config = match Config::from_args() {
        Ok(config) => config,
        Err(problem) => {
            eprintln!("configuration error: {problem}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        if let Err(err) = signal_hook::flag::register(signal, Arc::clone(&stop)) {
            eprintln!("configuration error: cannot handle signal {signal}: {err}");
            std::process::exit(2);
        }
    }
    eprintln!(
        "seckill-rebalancer {}: {} item(s), low watermark {}",
        config.name,
        config.items.len(),
        config.marks.low
    );
    let mut outage = false;
    while !stop.load(Ordering::Relaxed) {
        match run(&config, &stop) {
            Ok(()) => break,
            Err(err) => {
                if !outage {
                    eprintln!("seckill-rebalancer: Redis unavailable, retrying: {err}");
                    outage = true;
                }
                sleep(Duration::from_millis(200));
            }
        }
    }
}

/// Connects and runs rounds until stopped; returns an error to reconnect.
fn run(config: &Config, stop: &AtomicBool) -> Result<(), String> {
    if config.cluster {
        let client = redis::cluster::ClusterClient::new(vec![config.redis.as_str()])
            .map_err(|err| err.to_string())?;
        let mut con = client.get_connection().map_err(|err| err.to_string())?;
        rounds(&mut con, config, stop)
    } else {
        let client = redis::Client::open(config.redis.as_str()).map_err(|err| err.to_string())?;
        let mut con = client.get_connection().map_err(|err| err.to_string())?;
        rounds(&mut con, config, stop)
    }
}

fn rounds<C: ConnectionLike>(
    con: &mut C,
    config: &Config,
    stop: &AtomicBool,
) -> Result<(), String> {
    while !stop.load(Ordering::Relaxed) {
        for parts in &config.items {
            if holds_lease(con, config, parts).map_err(|err| err.to_string())? {
                balance(con, config.marks, parts).map_err(|err| err.to_string())?;
            }
        }
        sleep(config.interval);
    }
    Ok(())
}

/// Takes or renews this mover's lease on the item of `parts`.
fn holds_lease<C: ConnectionLike>(
    con: &mut C,
    config: &Config,
    parts: &[String],
) -> redis::RedisResult<bool> {
    let key = format!("seckill-rebalancer:lease:{}", parts.join(","));
    let lease_ms = config.lease.as_millis() as u64;
    let taken: Option<String> = redis::cmd("SET")
        .arg(&key)
        .arg(&config.name)
        .arg("NX")
        .arg("PX")
        .arg(lease_ms)
        .query(con)?;
    if taken.is_some() {
        return Ok(true);
    }
    let holder: Option<String> = redis::cmd("GET").arg(&key).query(con)?;
    if holder.as_deref() == Some(config.name.as_str()) {
        let _: i64 = redis::cmd("PEXPIRE").arg(&key).arg(lease_ms).query(con)?;
        return Ok(true);
    }
    Ok(false)
}

/// One round for one item: finish open transfers, then make the moves
/// the parts' stock calls for.
fn balance<C: ConnectionLike>(
    con: &mut C,
    marks: Watermarks,
    parts: &[String],
) -> seckill_client::Result<()> {
    for source in parts {
        finish_open_transfers(con, source)?;
    }
    let mut stocks = Vec::with_capacity(parts.len());
    let mut moved_out = Vec::with_capacity(parts.len());
    for part in parts {
        let info = con.seckill_info(part)?;
        stocks.push(
            info.as_ref()
                .filter(|info| !info.unlimited)
                .map(|info| info.stock),
        );
        moved_out.push(info.map_or(0, |info| info.moved_out));
    }
    for planned in moves(&stocks, marks) {
        let (from, to) = (&parts[planned.from], &parts[planned.to]);
        let donor_stock = stocks[planned.from].unwrap_or(0);
        let id = transfer_id(from, to, donor_stock, moved_out[planned.from]);
        let taken = match con.seckill_take(from, planned.units, &id, Some(to)) {
            Ok(Some(taken)) => taken,
            Ok(None) => continue,
            // The same id with another quantity: another mover read the
            // same state and moved already; its transfer is finished by
            // the recovery of the next round.
            Err(err) if err.kind().is_some() => continue,
            Err(err) => return Err(err),
        };
        if taken > 0 {
            deliver(con, from, to, &id, taken)?;
        }
        // The next move from this donor derives a fresh id.
        moved_out[planned.from] += taken;
        stocks[planned.from] = Some(donor_stock - taken);
    }
    Ok(())
}

/// Adds `units` to `to` once under `id`, then closes the transfer at
/// `from`. A destination with no item keeps the transfer open (listed by
/// TRANSFERS) until it exists again.
fn deliver<C: ConnectionLike>(
    con: &mut C,
    from: &str,
    to: &str,
    id: &str,
    units: i64,
) -> seckill_client::Result<()> {
    if con.seckill_add_transfer(to, units, id)?.is_none() {
        eprintln!("seckill-rebalancer: {to} has no item; transfer {id} from {from} stays open");
        return Ok(());
    }
    match con.seckill_settle(from, id)? {
        SettleOutcome::Settled | SettleOutcome::AlreadySettled => {}
        other => eprintln!("seckill-rebalancer: SETTLE {from} {id}: {other:?}"),
    }
    Ok(())
}

fn finish_open_transfers<C: ConnectionLike>(
    con: &mut C,
    source: &str,
) -> seckill_client::Result<()> {
    for open in con.seckill_transfers(source)?.unwrap_or_default() {
        let Some(to) = open.destination else {
            eprintln!(
                "seckill-rebalancer: transfer {} of {source} names no destination; left open",
                open.transfer_id
            );
            continue;
        };
        deliver(con, source, &to, &open.transfer_id, open.units)?;
    }
    Ok(())
}
