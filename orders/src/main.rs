//! seckill-orders: reads seckill order streams through a consumer group and
//! writes one PostgreSQL row per order. An entry is acknowledged only once
//! its transaction committed; entries a crashed consumer left pending are
//! claimed after a while; an entry that keeps failing goes to a dead-letter
//! stream with its error, and is acknowledged there.

mod event;
mod store;

use event::OrderEvent;
use redis::{Connection, Value};
use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::Store;

const USAGE: &str = "usage: seckill-orders --postgres-url URL --stream KEY [--stream KEY ...]
       [--redis-url URL] [--group NAME] [--consumer NAME]
       [--claim-idle-ms MS] [--max-deliveries N]

Every flag can come from the environment instead:
  SECKILL_POSTGRES_URL, SECKILL_STREAMS (comma-separated), SECKILL_REDIS_URL,
  SECKILL_GROUP, SECKILL_CONSUMER, SECKILL_CLAIM_IDLE_MS, SECKILL_MAX_DELIVERIES.
Dead letters go to <stream>:dead.";

struct Config {
    redis_url: String,
    postgres_url: String,
    streams: Vec<String>,
    group: String,
    consumer: String,
    claim_idle_ms: u64,
    max_deliveries: u64,
}

impl Config {
    fn from_args() -> Result<Config, String> {
        let env = |name: &str| std::env::var(name).ok();
        let mut config = Config {
            redis_url: env("SECKILL_REDIS_URL").unwrap_or_else(|| "redis://127.0.0.1:6379/".into()),
            postgres_url: env("SECKILL_POSTGRES_URL").unwrap_or_default(),
            streams: env("SECKILL_STREAMS")
                .map(|streams| streams.split(',').map(str::to_owned).collect())
                .unwrap_or_default(),
            group: env("SECKILL_GROUP").unwrap_or_else(|| "seckill-orders".into()),
            consumer: env("SECKILL_CONSUMER")
                .unwrap_or_else(|| format!("consumer-{}", std::process::id())),
            claim_idle_ms: env("SECKILL_CLAIM_IDLE_MS")
                .and_then(|ms| ms.parse().ok())
                .unwrap_or(5_000),
            max_deliveries: env("SECKILL_MAX_DELIVERIES")
                .and_then(|n| n.parse().ok())
                .unwrap_or(3),
        };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            if flag == "--help" || flag == "-h" {
                return Err(String::new());
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let number = || {
                value
                    .parse::<u64>()
                    .map_err(|_| format!("{flag}: not a number"))
            };
            match flag.as_str() {
                "--redis-url" => config.redis_url = value,
                "--postgres-url" => config.postgres_url = value,
                "--stream" => config.streams.push(value),
                "--group" => config.group = value,
                "--consumer" => config.consumer = value,
                "--claim-idle-ms" => config.claim_idle_ms = number()?,
                "--max-deliveries" => config.max_deliveries = number()?.max(1),
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        config.streams.retain(|stream| !stream.is_empty());
        if config.postgres_url.is_empty() || config.streams.is_empty() {
            return Err("a PostgreSQL URL and at least one stream are required".into());
        }
        Ok(config)
    }
}

fn log(message: &str) {
    eprintln!("seckill-orders: {message}");
}

type Entry = (String, HashMap<String, String>);

struct Consumer {
    config: Config,
    redis: Connection,
    store: Store,
    written: u64,
    dead: u64,
}

impl Consumer {
    fn ensure_groups(&mut self) -> redis::RedisResult<()> {
        for stream in &self.config.streams {
            let created: redis::RedisResult<String> = redis::cmd("XGROUP")
                .arg("CREATE")
                .arg(stream)
                .arg(&self.config.group)
                .arg("0")
                .arg("MKSTREAM")
                .query(&mut self.redis);
            match created {
                Ok(_) => log(&format!("created group {} on {stream}", self.config.group)),
                Err(err) if err.code() == Some("BUSYGROUP") => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    /// Writes the entries that parse in one transaction, then acknowledges
    /// them; those that do not parse stay pending until claimed again.
    fn handle(&mut self, stream: &str, entries: Vec<Entry>) -> Result<(), String> {
        let mut events = Vec::new();
        let mut ids = Vec::new();
        for (id, fields) in &entries {
            match OrderEvent::parse(id, fields) {
                Ok(event) => {
                    events.push(event);
                    ids.push(id.clone());
                }
                Err(reason) => log(&format!("{stream} {id}: {reason}; left pending")),
            }
        }
        if events.is_empty() {
            return Ok(());
        }
        self.store
            .apply(&events)
            .map_err(|err| format!("PostgreSQL: {err}"))?;
        redis::cmd("XACK")
            .arg(stream)
            .arg(&self.config.group)
            .arg(&ids)
            .query::<i64>(&mut self.redis)
            .map_err(|err| format!("XACK: {err}"))?;
        self.written += events.len() as u64;
        Ok(())
    }

    /// New entries for this consumer, blocking up to half a second.
    fn read_new(&mut self) -> redis::RedisResult<Vec<(String, Vec<Entry>)>> {
        let mut read = redis::cmd("XREADGROUP");
        read.arg("GROUP")
            .arg(&self.config.group)
            .arg(&self.config.consumer)
            .arg("COUNT")
            .arg(500)
            .arg("BLOCK")
            .arg(500)
            .arg("STREAMS")
            .arg(&self.config.streams);
        for _ in &self.config.streams {
            read.arg(">");
        }
        let reply: Option<Vec<(String, Vec<Entry>)>> = read.query(&mut self.redis)?;
        Ok(reply.unwrap_or_default())
    }

    /// Takes over entries another consumer (or this one) left pending for
    /// longer than the claim idle time; sends those delivered too often to
    /// the dead-letter stream.
    fn reclaim(&mut self, stream: &str) -> Result<(), String> {
        let reply: Value = redis::cmd("XAUTOCLAIM")
            .arg(stream)
            .arg(&self.config.group)
            .arg(&self.config.consumer)
            .arg(self.config.claim_idle_ms)
            .arg("0-0")
            .arg("COUNT")
            .arg(500)
            .query(&mut self.redis)
            .map_err(|err| format!("XAUTOCLAIM: {err}"))?;
        let Value::Array(parts) = reply else {
            return Ok(());
        };
        let Some(claimed) = parts.get(1) else {
            return Ok(());
        };
        let claimed: Vec<Entry> = redis::from_redis_value(claimed.clone()).unwrap_or_default();
        if claimed.is_empty() {
            return Ok(());
        }
        log(&format!(
            "{stream}: claimed {} pending entries",
            claimed.len()
        ));
        let mut retry = Vec::new();
        for (id, fields) in claimed {
            // Only an entry that cannot be read is poison: a valid order
            // waits for PostgreSQL however long it is away.
            let unreadable = OrderEvent::parse(&id, &fields).is_err();
            if unreadable && self.deliveries(stream, &id) > self.config.max_deliveries {
                self.bury(stream, &id, &fields)?;
            } else {
                retry.push((id, fields));
            }
        }
        self.handle(stream, retry)
    }

    fn deliveries(&mut self, stream: &str, id: &str) -> u64 {
        let pending: Vec<(String, String, u64, u64)> = redis::cmd("XPENDING")
            .arg(stream)
            .arg(&self.config.group)
            .arg(id)
            .arg(id)
            .arg(1)
            .query(&mut self.redis)
            .unwrap_or_default();
        pending
            .first()
            .map_or(0, |(_, _, _, deliveries)| *deliveries)
    }

    /// Copies a poison entry, with why it failed, to `<stream>:dead` and
    /// acknowledges it, so that it stops coming back.
    fn bury(
        &mut self,
        stream: &str,
        id: &str,
        fields: &HashMap<String, String>,
    ) -> Result<(), String> {
        let reason = OrderEvent::parse(id, fields)
            .err()
            .unwrap_or_else(|| format!("failed {} deliveries", self.config.max_deliveries));
        let mut add = redis::cmd("XADD");
        add.arg(format!("{stream}:dead"))
            .arg("*")
            .arg("stream")
            .arg(stream)
            .arg("id")
            .arg(id)
            .arg("error")
            .arg(&reason);
        for (field, value) in fields {
            add.arg(field).arg(value);
        }
        let mut pipe = redis::pipe();
        pipe.atomic()
            .add_command(add)
            .cmd("XACK")
            .arg(stream)
            .arg(&self.config.group)
            .arg(id);
        pipe.query::<()>(&mut self.redis)
            .map_err(|err| format!("dead letter: {err}"))?;
        self.dead += 1;
        log(&format!("{stream} {id}: sent to {stream}:dead ({reason})"));
        Ok(())
    }
}

fn run(config: Config, stop: &AtomicBool) -> Result<(), String> {
    let redis = redis::Client::open(config.redis_url.as_str())
        .and_then(|client| client.get_connection())
        .map_err(|err| format!("Redis at {}: {err}", config.redis_url))?;
    let store = Store::connect(&config.postgres_url).map_err(|err| format!("PostgreSQL: {err}"))?;
    let mut consumer = Consumer {
        config,
        redis,
        store,
        written: 0,
        dead: 0,
    };
    consumer
        .ensure_groups()
        .map_err(|err| format!("XGROUP: {err}"))?;
    log(&format!(
        "consuming {} as {} in group {}",
        consumer.config.streams.join(", "),
        consumer.config.consumer,
        consumer.config.group
    ));
    let claim_every = Duration::from_millis(consumer.config.claim_idle_ms.clamp(100, 5_000));
    let mut last_claim = Instant::now();
    let mut last_report = Instant::now();
    let mut reported = 0;
    while !stop.load(Ordering::Relaxed) {
        for (stream, entries) in consumer
            .read_new()
            .map_err(|err| format!("XREADGROUP: {err}"))?
        {
            if let Err(err) = consumer.handle(&stream, entries) {
                // Not acknowledged: the entries come back through a claim.
                log(&format!("{stream}: {err}; will retry"));
            }
        }
        if last_claim.elapsed() >= claim_every {
            for stream in consumer.config.streams.clone() {
                if let Err(err) = consumer.reclaim(&stream) {
                    log(&format!("{stream}: {err}; will retry"));
                }
            }
            last_claim = Instant::now();
        }
        if last_report.elapsed() >= Duration::from_secs(5) && consumer.written != reported {
            log(&format!(
                "{} orders written, {} dead letters",
                consumer.written, consumer.dead
            ));
            reported = consumer.written;
            last_report = Instant::now();
        }
    }
    log(&format!(
        "stopping: {} orders written, {} dead letters",
        consumer.written, consumer.dead
    ));
    Ok(())
}

fn main() -> ExitCode {
    let config = match Config::from_args() {
        Ok(config) => config,
        Err(problem) => {
            if !problem.is_empty() {
                log(&problem);
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(err) = signal_hook::flag::register(signal, Arc::clone(&stop)) {
            log(&format!("cannot handle signal {signal}: {err}"));
        }
    }
    match run(config, &stop) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            log(&err);
            ExitCode::FAILURE
        }
    }
}
