//! seckill-rebalancer: keeps every part of a split item able to sell while
//! any part has stock, by moving units from parts with spare stock to
//! parts running low.
//!
//! ```text
//! seckill-rebalancer --redis-url redis://127.0.0.1:7000 --cluster \
//!     --item sku:1:part:0,sku:1:part:1,sku:1:part:2 [--item ...] \
//!     [--low 10] [--interval-ms 100] [--lease-ms 2000] [--name host-1]
//! ```
//!
//! Every flag can come from the environment instead (`SECKILL_REDIS_URL`,
//! `SECKILL_ITEMS`, ...: see `USAGE`), so that no password needs to be in
//! its arguments; a flag given wins. A URL is only ever shown without its
//! password. Instead of a URL it can be given Redis Sentinel
//! (`--sentinel`, `--master-name`), asked for the master on every
//! connection, so it follows a failover without a restart.
//!
//! Each round, for each item:
//! 1. it finishes every transfer a part gave out to another part of the
//!    same item and did not settle (`SECKILL.TRANSFERS`): `ADD destination
//!    units ID transfer_id` (a replay if it had arrived), then `SETTLE` at
//!    the source. So a mover killed anywhere, even with SIGKILL, is
//!    finished by the next round of any mover, from what the parts
//!    themselves hold. A transfer to any other key is not its own to
//!    finish: it is reported and left open (see `foreign`);
//! 2. it reads each part's stock and makes the moves `plan::moves` picks:
//!    `TAKE` (up to the units asked, once per transfer id), `ADD ... ID`
//!    with the units taken, `SETTLE`. The parts of a drop with variants
//!    (`INIT ... VARIANTS`) are balanced size by size: `VARIANTS` names
//!    each part's sizes and their stock, and every move names its size
//!    (`VARIANT`).
//!
//! Two movers are safe: a `TAKE` takes units out of the stock, so no two
//! moves ever take the same units, and every transfer id (unique per move:
//! `plan::transfer_id`) moves its units at most once. A lease per item
//! (`SET ... NX PX`) makes the second mover idle rather than duplicate the
//! work; safety does not rest on it.
//!
//! With `--wait-replicas N`, the units of a `TAKE` are added elsewhere only
//! once N replicas of the source acknowledged it (`WAIT`): a failover that
//! lost the `TAKE` would otherwise leave its units in both parts.
//!
//! An item the module refuses to move (a part of another type, an
//! unlimited part, a destination that recorded all the transfers it may)
//! is logged once and skipped; the other items go on.

mod plan;

use plan::{columns, moves, transfer_id, Shelf, Watermarks};
use redis::cluster::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Connection, ConnectionLike};
use seckill_client::endpoint::{Endpoint, EndpointSettings, SentinelCredentials, Setting};
use seckill_client::{SeckillCommands, SettleOutcome};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How long a silent network may keep a request waiting before the
/// connection counts as lost.
const NETWORK_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the sentinels are asked whether the master moved while its
/// connection still works.
const MASTER_CHECK_EVERY: Duration = Duration::from_secs(2);

struct Config {
    redis: Endpoint,
    cluster: bool,
    items: Vec<Vec<String>>,
    marks: Watermarks,
    interval: Duration,
    lease: Duration,
    name: String,
    wait_replicas: u64,
    wait_timeout: Duration,
}

const USAGE: &str = "usage: seckill-rebalancer (--redis-url URL [--cluster]
                          | --sentinel HOST:PORT[,...] --master-name NAME)
       --item PART,PART[,...] [--item ...] [--low UNITS] [--interval-ms MS]
       [--lease-ms MS] [--name NAME] [--wait-replicas N] [--wait-timeout-ms MS]

Every flag can come from the environment instead, and a flag given wins:
  SECKILL_REDIS_URL, SECKILL_CLUSTER (1 or 0), SECKILL_SENTINELS,
  SECKILL_MASTER_NAME, SECKILL_ITEMS (items apart by spaces, the parts of an
  item by commas), SECKILL_LOW, SECKILL_INTERVAL_MS, SECKILL_LEASE_MS,
  SECKILL_NAME, SECKILL_WAIT_REPLICAS, SECKILL_WAIT_TIMEOUT_MS.
A URL with a password belongs in the environment: every user of the host
can read a process's flags. --redis is another name for --redis-url.
With --sentinel, the master is the one the sentinels name for --master-name,
asked again on every reconnection (a READONLY reply reconnects). Passwords
come from the environment only: SECKILL_SENTINEL_PASSWORD (and _USERNAME)
for the sentinels, SECKILL_REDIS_PASSWORD (and _USERNAME) for the master.
Exit status: 0 when stopped by SIGINT or SIGTERM, 2 for a configuration
error; a lost connection is logged when it starts and ends, and retried.";

/// Each setting's environment variable, by the flag it stands for.
const ENVIRONMENT: [(&str, &str); 11] = [
    ("--redis-url", "SECKILL_REDIS_URL"),
    ("--sentinel", "SECKILL_SENTINELS"),
    ("--master-name", "SECKILL_MASTER_NAME"),
    ("--cluster", "SECKILL_CLUSTER"),
    ("--item", "SECKILL_ITEMS"),
    ("--low", "SECKILL_LOW"),
    ("--interval-ms", "SECKILL_INTERVAL_MS"),
    ("--lease-ms", "SECKILL_LEASE_MS"),
    ("--name", "SECKILL_NAME"),
    ("--wait-replicas", "SECKILL_WAIT_REPLICAS"),
    ("--wait-timeout-ms", "SECKILL_WAIT_TIMEOUT_MS"),
];

/// The longest destination a TAKE records, as the module bounds it.
const MAX_PART_NAME: usize = 255;

impl Config {
    /// The settings from the environment, then from the flags, which
    /// override them (`--item` flags replace `SECKILL_ITEMS` as a whole).
    fn from_env_and_args() -> Result<Config, String> {
        let mut redis = EndpointSettings {
            credentials: SentinelCredentials::from_environment(),
            ..Default::default()
        };
        let mut config = Config {
            // A stand-in (no connection is made), replaced by the endpoint
            // the settings describe once all of them are read.
            redis: Endpoint::from_settings(
                &EndpointSettings::default(),
                Some("redis://127.0.0.1/"),
            )?,
            cluster: false,
            items: Vec::new(),
            marks: Watermarks { low: 10 },
            interval: Duration::from_millis(100),
            lease: Duration::from_millis(2_000),
            name: format!("rebalancer-{}", std::process::id()),
            wait_replicas: 0,
            wait_timeout: Duration::from_millis(1_000),
        };
        for (flag, variable) in ENVIRONMENT {
            let Some(value) = std::env::var(variable)
                .ok()
                .filter(|value| !value.is_empty())
            else {
                continue;
            };
            match flag {
                "--cluster" => {
                    config.cluster = match value.as_str() {
                        "1" | "true" | "yes" | "on" => true,
                        "0" | "false" | "no" | "off" => false,
                        _ => return Err(format!("{variable} is 1 or 0, not {value:?}")),
                    }
                }
                "--item" => {
                    for item in value.split_whitespace() {
                        config.set(flag, variable, item.to_owned())?;
                    }
                }
                _ if redis.set(flag, Setting::new(variable, &value)) => {}
                _ => config.set(flag, variable, value)?,
            }
        }
        let mut items_from_flags = false;
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            if flag == "--cluster" {
                config.cluster = true;
                continue;
            }
            if flag == "--help" || flag == "-h" {
                return Err(String::new());
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            if flag == "--item" && !items_from_flags {
                items_from_flags = true;
                config.items.clear();
            }
            if !redis.set(&flag, Setting::new(&flag, &value)) {
                config.set(&flag, &flag, value)?;
            }
        }
        if config.items.is_empty() {
            return Err("at least one item (--item, SECKILL_ITEMS) is required".into());
        }
        if config.cluster && redis.sentinels.is_some() {
            return Err("--cluster and --sentinel do not go together: \
                        a cluster's nodes are found from any of them, not from sentinels"
                .into());
        }
        // A URL that does not parse is a configuration error, shown
        // without its password.
        config.redis = Endpoint::from_settings(&redis, None)?;
        Ok(config)
    }

    /// Applies one setting, `flag` given as `name` (the flag itself, or its
    /// environment variable).
    fn set(&mut self, flag: &str, name: &str, value: String) -> Result<(), String> {
        let number = |value: &str| -> Result<u64, String> {
            value
                .parse()
                .map_err(|_| format!("{name} takes a number, not {value:?}"))
        };
        match flag {
            "--item" => {
                let parts: Vec<String> = value.split(',').map(str::to_owned).collect();
                if parts.len() < 2 || parts.iter().any(String::is_empty) {
                    return Err(format!("{name} needs two part keys or more: {value:?}"));
                }
                if parts.iter().any(|part| part.len() > MAX_PART_NAME) {
                    return Err(format!(
                        "{name}: part names are at most {MAX_PART_NAME} bytes (a TAKE's destination)"
                    ));
                }
                let distinct: HashSet<&String> = parts.iter().collect();
                if distinct.len() != parts.len() {
                    return Err(format!("{name} names a part twice: {value:?}"));
                }
                self.items.push(parts);
            }
            "--wait-replicas" => self.wait_replicas = number(&value)?,
            "--wait-timeout-ms" => {
                self.wait_timeout = Duration::from_millis(number(&value)?.max(1))
            }
            "--low" => self.marks.low = number(&value)? as i64,
            "--interval-ms" => self.interval = Duration::from_millis(number(&value)?.max(1)),
            "--lease-ms" => self.lease = Duration::from_millis(number(&value)?.max(100)),
            "--name" => self.name = value,
            _ => return Err(format!("unknown option {flag}")),
        }
        Ok(())
    }
}

fn main() {
    let config = match Config::from_env_and_args() {
        Ok(config) => config,
        Err(problem) if problem.is_empty() => {
            // --help
            println!("{USAGE}");
            return;
        }
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
        "seckill-rebalancer {}: {} item(s) on {}{}, low watermark {}",
        config.name,
        config.items.len(),
        config.redis.shown(),
        if config.cluster { " (cluster)" } else { "" },
        config.marks.low
    );
    let mut mover = Mover {
        config: &config,
        started_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_millis()),
        sequence: 0,
        reported: HashSet::new(),
        down_since: None,
        master_at: None,
    };
    while !stop.load(Ordering::Relaxed) {
        match run(&mut mover, &stop) {
            Ok(()) => break,
            Err(err) => {
                mover.lost(&err);
                sleep(Duration::from_millis(200));
            }
        }
    }
}

/// A connection that can ask the master of a key's slot how many replicas
/// acknowledged this connection's writes.
trait Acknowledged: ConnectionLike {
    fn wait_replicas(
        &mut self,
        key: &str,
        replicas: u64,
        timeout: Duration,
    ) -> redis::RedisResult<u64>;
}

fn wait_command(replicas: u64, timeout: Duration) -> redis::Cmd {
    let mut wait = redis::cmd("WAIT");
    wait.arg(replicas).arg(timeout.as_millis() as u64);
    wait
}

impl Acknowledged for Connection {
    fn wait_replicas(
        &mut self,
        _key: &str,
        replicas: u64,
        timeout: Duration,
    ) -> redis::RedisResult<u64> {
        wait_command(replicas, timeout).query(self)
    }
}

impl Acknowledged for ClusterConnection {
    fn wait_replicas(
        &mut self,
        key: &str,
        replicas: u64,
        timeout: Duration,
    ) -> redis::RedisResult<u64> {
        let master = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::with_key(
            key,
            SlotAddr::Master,
        )));
        let reply = self.route_command(&wait_command(replicas, timeout), master)?;
        redis::from_redis_value(reply).map_err(Into::into)
    }
}

/// One mover: its configuration, what makes its transfer ids unique, the
/// problems it reported already (each is logged once), and since when
/// Redis has been unavailable.
struct Mover<'a> {
    config: &'a Config,
    started_ms: u128,
    sequence: u64,
    reported: HashSet<String>,
    down_since: Option<Instant>,
    /// The master's address the sentinels gave last, for the log.
    master_at: Option<String>,
}

impl Mover<'_> {
    /// Redis failed: logged once per outage, when it starts.
    fn lost(&mut self, cause: &str) {
        if self.down_since.is_none() {
            self.down_since = Some(Instant::now());
            eprintln!(
                "seckill-rebalancer: Redis ({}) unavailable, retrying until it is back: {cause}",
                self.config.redis.shown()
            );
        }
    }

    /// A round went through: an outage, if any, is over.
    fn healthy(&mut self) {
        if let Some(since) = self.down_since.take() {
            eprintln!(
                "seckill-rebalancer: Redis ({}) back after {:.1} s",
                self.config.redis.shown(),
                since.elapsed().as_secs_f64()
            );
        }
    }

    fn report(&mut self, problem: String) {
        if self.reported.insert(problem.clone()) {
            eprintln!("seckill-rebalancer: {problem}");
        }
    }

    fn next_transfer_id(&mut self) -> String {
        self.sequence += 1;
        transfer_id(&self.config.name, self.started_ms, self.sequence)
    }
}

/// Connects and runs rounds until stopped; returns an error to reconnect.
fn run(mover: &mut Mover, stop: &AtomicBool) -> Result<(), String> {
    let config = mover.config;
    let read_timeout = NETWORK_TIMEOUT + config.wait_timeout;
    match config.redis.url() {
        Some(url) if config.cluster => {
            let client = redis::cluster::ClusterClient::builder(vec![url])
                .connection_timeout(NETWORK_TIMEOUT)
                .response_timeout(read_timeout)
                .build()
                .map_err(|err| err.to_string())?;
            let mut con = client.get_connection().map_err(|err| err.to_string())?;
            rounds(&mut con, mover, stop, None)
        }
        _ => {
            // With sentinels, asked anew on every (re)connection.
            let client = config.redis.master()?;
            let at = client.get_connection_info().addr().to_string();
            if config.redis.follows_sentinels() && mover.master_at.as_ref() != Some(&at) {
                eprintln!("seckill-rebalancer: the sentinels name {at} as the master");
                mover.master_at = Some(at.clone());
            }
            let mut con = client
                .get_connection_with_timeout(NETWORK_TIMEOUT)
                .map_err(|err| err.to_string())?;
            con.set_read_timeout(Some(read_timeout))
                .and_then(|()| con.set_write_timeout(Some(NETWORK_TIMEOUT)))
                .map_err(|err| err.to_string())?;
            rounds(&mut con, mover, stop, Some(&at))
        }
    }
}

/// Rounds on `con` until stopped or an error. `connected_to`: the master's
/// address, when the sentinels gave it; they are asked every few seconds
/// whether they name another one now, since a master cut off from them
/// (and promoted past) still answers this connection as before.
fn rounds<C: Acknowledged>(
    con: &mut C,
    mover: &mut Mover,
    stop: &AtomicBool,
    connected_to: Option<&str>,
) -> Result<(), String> {
    let config = mover.config;
    let mut checked = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if let Some(connected) = connected_to {
            if checked.elapsed() >= MASTER_CHECK_EVERY {
                checked = Instant::now();
                // A failed lookup says nothing about the connection.
                if let Ok(master) = config.redis.master() {
                    let named = master.get_connection_info().addr().to_string();
                    if named != connected {
                        return Err(format!(
                            "the sentinels name {named} as the master, not {connected}"
                        ));
                    }
                }
            }
        }
        for parts in &config.items {
            if holds_lease(con, config, parts).map_err(|err| err.to_string())? {
                match balance(con, mover, parts) {
                    Ok(()) => {}
                    // The module refused something about this item: the
                    // others go on.
                    Err(seckill_client::Error::Seckill(err)) => {
                        mover.report(format!("item {}: {err}", parts.join(",")));
                    }
                    Err(err) => return Err(err.to_string()),
                }
            }
        }
        mover.healthy();
        sleep(config.interval);
    }
    Ok(())
}

/// Takes or renews this mover's lease on the item of `parts`.
fn holds_lease<C: Acknowledged>(
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
/// the parts' stock calls for, stock by stock (each variant of a drop on
/// its own).
fn balance<C: Acknowledged>(
    con: &mut C,
    mover: &mut Mover,
    parts: &[String],
) -> seckill_client::Result<()> {
    // A part whose own transfers (to the other parts of the item) could not
    // all be finished gives nothing more this round: with --wait-replicas
    // and no replica to acknowledge, every round would otherwise take again
    // and leave the units in transfer. Transfers to anything else do not
    // hold it back (see `foreign`).
    let mut blocked = Vec::new();
    for (index, source) in parts.iter().enumerate() {
        if !finish_open_transfers(con, mover, parts, source)? {
            blocked.push(index);
        }
    }
    let mut shelves = Vec::with_capacity(parts.len());
    for part in parts {
        shelves.push(shelf(con, mover, part)?);
    }
    for (variant, stocks) in columns(&shelves) {
        let variant = variant.as_deref();
        for planned in moves(&stocks, mover.config.marks) {
            if blocked.contains(&planned.from) {
                continue;
            }
            let (from, to) = (&parts[planned.from], &parts[planned.to]);
            let id = mover.next_transfer_id();
            let taken = match variant {
                None => con.seckill_take(from, planned.units, &id, Some(to)),
                Some(name) => con.seckill_take_variant(from, planned.units, &id, Some(to), name),
            };
            let taken = match taken {
                Ok(Some(taken)) => taken,
                Ok(None) => continue,
                Err(seckill_client::Error::Seckill(err)) => {
                    mover.report(format!("TAKE from {from}{}: {err}", of_variant(variant)));
                    continue;
                }
                Err(err) => return Err(err),
            };
            if taken > 0 {
                // Left open, it is finished (or waited for) by a later round.
                deliver(
                    con,
                    mover,
                    Transfer {
                        from,
                        to,
                        id: &id,
                        units: taken,
                        variant,
                    },
                )?;
            }
        }
    }
    Ok(())
}

/// What `part` sells: one stock, or a drop's variants each with its own.
/// A part that is missing, of another type or unlimited neither gives nor
/// receives.
fn shelf<C: Acknowledged>(
    con: &mut C,
    mover: &mut Mover,
    part: &str,
) -> seckill_client::Result<Shelf> {
    let info = match con.seckill_info(part) {
        Ok(Some(info)) => info,
        Ok(None) => return Ok(Shelf::Absent),
        Err(seckill_client::Error::Seckill(err)) => {
            mover.report(format!("part {part} is skipped: {err}"));
            return Ok(Shelf::Absent);
        }
        Err(err) => return Err(err),
    };
    if info.variants == 0 {
        return Ok(Shelf::Own((!info.unlimited).then_some(info.stock)));
    }
    Ok(match con.seckill_variants(part)? {
        Some(variants) => Shelf::Variants(variants),
        // Deleted between the two reads.
        None => Shelf::Absent,
    })
}

/// " (variant NAME)", or nothing for an item's own stock: for the log.
fn of_variant(variant: Option<&str>) -> String {
    variant.map_or_else(String::new, |name| format!(" (variant {name})"))
}

/// One transfer between two parts of an item.
#[derive(Clone, Copy)]
struct Transfer<'a> {
    from: &'a str,
    to: &'a str,
    id: &'a str,
    units: i64,
    /// The variant moved, for a drop's parts; `None` for an item's own stock.
    variant: Option<&'a str>,
}

/// Adds the transfer's units to its destination once under its id, then
/// closes it at its source, once the source's TAKE is on enough replicas.
/// Anything that stops it leaves the transfer open, for a later round:
/// then false.
fn deliver<C: Acknowledged>(
    con: &mut C,
    mover: &mut Mover,
    transfer: Transfer,
) -> seckill_client::Result<bool> {
    let Transfer {
        from,
        to,
        id,
        units,
        variant,
    } = transfer;
    let config = mover.config;
    if config.wait_replicas > 0 {
        let acknowledged = con.wait_replicas(from, config.wait_replicas, config.wait_timeout)?;
        if acknowledged < config.wait_replicas {
            mover.report(format!(
                "transfer {id} from {from} waits for {} replica(s) of {from}",
                config.wait_replicas
            ));
            return Ok(false);
        }
    }
    let added = match variant {
        None => con.seckill_add_transfer(to, units, id),
        Some(name) => con.seckill_add_transfer_variant(to, units, id, name),
    };
    match added {
        Ok(Some(_)) => {}
        Ok(None) => {
            mover.report(format!(
                "{to} has no item; transfer {id} from {from} stays open"
            ));
            return Ok(false);
        }
        Err(seckill_client::Error::Seckill(err)) => {
            mover.report(format!(
                "transfer {id} from {from} to {to}{} stays open: {err}",
                of_variant(variant)
            ));
            return Ok(false);
        }
        Err(err) => return Err(err),
    }
    let settled = match variant {
        None => con.seckill_settle(from, id)?,
        Some(name) => con.seckill_settle_variant(from, id, name)?,
    };
    match settled {
        SettleOutcome::Settled | SettleOutcome::AlreadySettled => {}
        other => mover.report(format!("SETTLE {from} {id}: {other:?}")),
    }
    Ok(true)
}

/// Finishes the transfers `source` gave out to the other parts of its
/// item; true if none of those is left open. A transfer to anything else
/// is reported and left alone (see `foreign`).
fn finish_open_transfers<C: Acknowledged>(
    con: &mut C,
    mover: &mut Mover,
    parts: &[String],
    source: &str,
) -> seckill_client::Result<bool> {
    let open = match con.seckill_transfers(source) {
        Ok(open) => open.unwrap_or_default(),
        Err(seckill_client::Error::Seckill(err)) => {
            mover.report(format!("part {source} is skipped: {err}"));
            return Ok(false);
        }
        Err(err) => return Err(err),
    };
    let mut all_closed = true;
    for transfer in open {
        let id = &transfer.transfer_id;
        let to = match transfer.destination {
            Some(to) if parts.contains(&to) => to,
            destination => {
                foreign(mover, parts, source, id, transfer.units, destination);
                continue;
            }
        };
        let transfer = Transfer {
            from: source,
            to: &to,
            id,
            units: transfer.units,
            variant: transfer.variant.as_deref(),
        };
        all_closed &= deliver(con, mover, transfer)?;
    }
    Ok(all_closed)
}

/// A transfer of `source` that this rebalancer did not make: its
/// destination is not a part of the item, or it names none. `TO` is only
/// what the taker wrote: the module checks no right on it and never writes
/// it, so anyone allowed to `TAKE` from a part could name any key there,
/// and this rebalancer, which may write every key, would add the units to
/// a key the taker may not touch. Whether such units should go there is
/// for someone allowed to write the destination to decide, with
/// `SECKILL.ADD destination units ID transfer_id` and then `SETTLE`: it is
/// reported, once, and left open.
///
/// Nor does it keep the part from giving, unlike a transfer of this
/// rebalancer's own left open. Those hold a part back because a move still
/// waiting (for a replica, say) would otherwise be followed by a new one
/// every round, each taking more units into transfer; a foreign transfer
/// is never retried here, its units are out of the stock already and no
/// move counts on them, so the part's remaining stock moves as usual. Held
/// back, a single `TAKE ... TO` on a part by anyone allowed to take from
/// it would stop this rebalancer from ever moving that part's stock.
fn foreign(
    mover: &mut Mover,
    parts: &[String],
    source: &str,
    id: &str,
    units: i64,
    destination: Option<String>,
) {
    let item = parts.join(",");
    mover.report(match destination {
        Some(to) => format!(
            "transfer {id} of {units} unit(s) from {source} to {to} is left open: \
             {to} is not a part of item {item}, so this rebalancer does not complete it \
             (someone allowed to write {to} may)"
        ),
        None => format!(
            "transfer {id} of {units} unit(s) from {source} names no destination; left open"
        ),
    });
}
