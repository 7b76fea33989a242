//! seckill-orders: reads seckill order streams through a consumer group and
//! writes one PostgreSQL row per order. An entry is acknowledged only once
//! its transaction committed.
//!
//! It is meant to be left running: lost connections to Redis or
//! PostgreSQL are re-established with capped exponential backoff, and no
//! new entry is read while PostgreSQL is away. A row the database refuses
//! is found within its batch and the rest committed; it goes to a
//! dead-letter stream with the database's reasons once delivered too
//! often. At start it re-reads its own pending entries, then takes over
//! those other consumers left idle. It exits non-zero only when its
//! configuration is wrong.

mod event;
mod metrics;
mod rebuild;
mod reconcile;
mod store;

use event::OrderEvent;
use metrics::Metrics;
use redis::{Connection, Value};
use seckill_client::endpoint::{Endpoint, EndpointSettings, SentinelCredentials, Setting};
use seckill_client::mask_password;
use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::{StoreError, StoreWorker};

const USAGE: &str = "usage: seckill-orders --postgres-url URL --stream KEY [--stream KEY ...]
       [--redis-url URL | --sentinel HOST:PORT[,...] --master-name NAME]
       [--group NAME] [--consumer NAME]
       [--claim-idle-ms MS] [--claim-page N] [--max-deliveries N]
       [--metrics-addr HOST:PORT] [--wait-replicas N] [--wait-timeout-ms MS]
       seckill-orders reconcile --help  (compares items with the table)

Every flag can come from the environment instead:
  SECKILL_POSTGRES_URL, SECKILL_STREAMS (comma-separated), SECKILL_REDIS_URL,
  SECKILL_SENTINELS, SECKILL_MASTER_NAME, SECKILL_GROUP, SECKILL_CONSUMER, SECKILL_CLAIM_IDLE_MS, SECKILL_CLAIM_PAGE,
  SECKILL_MAX_DELIVERIES, SECKILL_METRICS_ADDR, SECKILL_WAIT_REPLICAS,
  SECKILL_WAIT_TIMEOUT_MS; a flag given wins.
Keep URLs with passwords in the environment (or a systemd EnvironmentFile=
of mode 0600): every user of the host can read a process's flags. A URL is
only ever shown without its password.
With --sentinel, the master is the one the sentinels name for --master-name,
asked again on every reconnection and after READONLY. Their passwords come
from the environment only: SECKILL_SENTINEL_PASSWORD (and _USERNAME) for the
sentinels, SECKILL_REDIS_PASSWORD (and _USERNAME) for the master.
Without either, Redis is redis://127.0.0.1:6379/.
With --metrics-addr, Prometheus metrics are served at /metrics.
The consumer name defaults to this host's name, so a restarted consumer
finds its own pending entries. Dead letters go to <stream>:dead.
With --wait-replicas N (default 0: no wait), a page of entries becomes rows
only once N replicas hold all of it (Redis WAIT, --wait-timeout-ms each,
default 1000); until then it stays pending and is tried again.
Exit status: 0 when stopped by SIGINT or SIGTERM, 2 for a configuration
error; lost connections are retried, never fatal.";

/// Refused entries tracked at most (see `Consumer::refuse`).
const MAX_TRACKED_REFUSALS: usize = 100_000;
/// The most entries counted for the lag gauge when the server gives none.
const MAX_COUNTED_LAG: i64 = 10_000;
/// Entries read or claimed per call.
const PAGE: usize = 500;
/// How long a silent network may keep a request waiting before the
/// connection counts as lost.
const NETWORK_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the sentinels are asked whether the master moved while its
/// connection still works.
const MASTER_CHECK_EVERY: Duration = Duration::from_secs(2);
/// Longest wait between two reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

struct Config {
    /// Where the master is: a URL, or the sentinels' answer.
    redis: Endpoint,
    postgres: postgres::Config,
    streams: Vec<String>,
    group: String,
    consumer: String,
    claim_idle_ms: u64,
    claim_page: usize,
    max_deliveries: u64,
    metrics_addr: Option<String>,
    /// Replicas that must hold a page before it becomes rows (0: none).
    wait_replicas: u64,
    wait_timeout_ms: u64,
}

/// This host's name: a consumer name that survives restarts.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "seckill-orders".to_owned())
}

impl Config {
    fn from_args() -> Result<Config, String> {
        let env = |name: &str| std::env::var(name).ok();
        let number = |flag: &str, value: &str| {
            value
                .parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {value:?}"))
        };
        let mut redis = redis_settings_from_env();
        let mut postgres_from = "SECKILL_POSTGRES_URL";
        let mut postgres_url = env("SECKILL_POSTGRES_URL").unwrap_or_default();
        let mut streams: Vec<String> = env("SECKILL_STREAMS")
            .map(|streams| streams.split(',').map(str::to_owned).collect())
            .unwrap_or_default();
        let mut group = env("SECKILL_GROUP").unwrap_or_else(|| "seckill-orders".into());
        let mut consumer = env("SECKILL_CONSUMER").unwrap_or_else(host_name);
        let mut claim_idle_ms = match env("SECKILL_CLAIM_IDLE_MS") {
            Some(value) => number("SECKILL_CLAIM_IDLE_MS", &value)?,
            None => 5_000,
        };
        let mut claim_page = match env("SECKILL_CLAIM_PAGE") {
            Some(value) => number("SECKILL_CLAIM_PAGE", &value)?,
            None => PAGE as u64,
        };
        let mut max_deliveries = match env("SECKILL_MAX_DELIVERIES") {
            Some(value) => number("SECKILL_MAX_DELIVERIES", &value)?,
            None => 3,
        };
        let mut metrics_addr = env("SECKILL_METRICS_ADDR").filter(|addr| !addr.is_empty());
        let mut wait_replicas = match env("SECKILL_WAIT_REPLICAS") {
            Some(value) => number("SECKILL_WAIT_REPLICAS", &value)?,
            None => 0,
        };
        let mut wait_timeout_ms = match env("SECKILL_WAIT_TIMEOUT_MS") {
            Some(value) => number("SECKILL_WAIT_TIMEOUT_MS", &value)?,
            None => 1_000,
        };
        let mut streams_from_flags = false;
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            if flag == "--help" || flag == "-h" {
                return Err(String::new());
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--redis-url" => redis.url = Some(Setting::new(flag, value)),
                "--sentinel" => redis.sentinels = Some(Setting::new(flag, value)),
                "--master-name" => redis.master_name = Some(Setting::new(flag, value)),
                "--postgres-url" => {
                    postgres_from = "--postgres-url";
                    postgres_url = value;
                }
                "--stream" => {
                    // Flags replace SECKILL_STREAMS rather than add to it.
                    if !streams_from_flags {
                        streams_from_flags = true;
                        streams.clear();
                    }
                    streams.push(value);
                }
                "--group" => group = value,
                "--consumer" => consumer = value,
                "--claim-idle-ms" => claim_idle_ms = number(&flag, &value)?,
                "--claim-page" => claim_page = number(&flag, &value)?,
                "--max-deliveries" => max_deliveries = number(&flag, &value)?,
                "--metrics-addr" => metrics_addr = Some(value),
                "--wait-replicas" => wait_replicas = number(&flag, &value)?,
                "--wait-timeout-ms" => wait_timeout_ms = number(&flag, &value)?,
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        streams.retain(|stream| !stream.is_empty());
        if postgres_url.is_empty() || streams.is_empty() {
            return Err("a PostgreSQL URL and at least one stream are required".into());
        }
        // A URL is only ever shown without its password, even one that
        // does not parse.
        let redis = Endpoint::from_settings(&redis, Some("redis://127.0.0.1:6379/"))?;
        let postgres = postgres_config(&postgres_url, postgres_from)?;
        Ok(Config {
            redis,
            postgres,
            streams,
            group,
            consumer,
            claim_idle_ms,
            claim_page: usize::try_from(claim_page.max(1)).unwrap_or(PAGE),
            max_deliveries: max_deliveries.max(1),
            metrics_addr,
            wait_replicas,
            // WAIT 0 would wait forever; the connection's read timeout
            // allows for the longest wait.
            wait_timeout_ms: wait_timeout_ms.clamp(1, 60_000),
        })
    }
}

/// Where Redis is as the environment says (`SECKILL_REDIS_URL`,
/// `SECKILL_SENTINELS`, `SECKILL_MASTER_NAME`, and the passwords, which
/// come from the environment only); flags given replace these settings.
fn redis_settings_from_env() -> EndpointSettings {
    let setting = |name: &str| {
        std::env::var(name)
            .ok()
            .filter(|value| !value.is_empty())
            .map(|value| Setting::new(name, value))
    };
    EndpointSettings {
        url: setting("SECKILL_REDIS_URL"),
        sentinels: setting("SECKILL_SENTINELS"),
        master_name: setting("SECKILL_MASTER_NAME"),
        credentials: SentinelCredentials::from_environment(),
    }
}

/// A PostgreSQL connection string (given by `from`, a flag or a
/// variable), with the network timeouts every connection has; an error
/// shows no password.
fn postgres_config(url: &str, from: &str) -> Result<postgres::Config, String> {
    let mut postgres = url
        .parse::<postgres::Config>()
        .map_err(|err| format!("{from} {}: {err}", mask_password(url)))?;
    // A host that vanishes (a crash, a network cut) must fail the
    // connection rather than leave a write waiting forever; settings
    // given in the URL win.
    if postgres.get_connect_timeout().is_none() {
        postgres.connect_timeout(NETWORK_TIMEOUT);
    }
    if postgres.get_tcp_user_timeout().is_none() {
        postgres.tcp_user_timeout(NETWORK_TIMEOUT);
    }
    postgres.keepalives(true);
    if postgres.get_application_name().is_none() {
        // How operators (and pg_stat_activity) tell its sessions apart.
        postgres.application_name("seckill-orders");
    }
    Ok(postgres)
}

fn log(message: &str) {
    eprintln!("seckill-orders: {message}");
}

/// An entry's fields, as read.
enum Fields {
    /// Deleted from the stream while pending (XDEL, trimming).
    Deleted,
    Text(HashMap<String, String>),
    /// Not all UTF-8: kept as bytes, to be dead-lettered as they are.
    Bytes(Vec<(Vec<u8>, Vec<u8>)>),
}

type Entry = (String, Fields);

fn fields(value: Option<&Value>) -> Fields {
    let Some(Value::Array(items)) = value else {
        return Fields::Deleted;
    };
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = items
        .chunks(2)
        .filter_map(|pair| match pair {
            [field, value] => Some((
                redis::from_redis_value(field.clone()).ok()?,
                redis::from_redis_value(value.clone()).ok()?,
            )),
            _ => None,
        })
        .collect();
    let text: Option<HashMap<String, String>> = pairs
        .iter()
        .map(|(field, value)| {
            Some((
                String::from_utf8(field.clone()).ok()?,
                String::from_utf8(value.clone()).ok()?,
            ))
        })
        .collect();
    match text {
        Some(text) => Fields::Text(text),
        None => Fields::Bytes(pairs),
    }
}

/// Reads `[[id, [field, value, ...] | nil], ...]`.
fn entries(value: &Value) -> Vec<Entry> {
    let Value::Array(items) = value else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| {
            let Value::Array(parts) = item else {
                return None;
            };
            let id: String = redis::from_redis_value(parts.first()?.clone()).ok()?;
            Some((id, fields(parts.get(1))))
        })
        .collect()
}

/// Reads an XREADGROUP reply: `[[stream, entries], ...]` (or a map under
/// RESP3), nil when nothing came.
fn stream_entries(value: Value) -> Vec<(String, Vec<Entry>)> {
    let pairs: Vec<(Value, Value)> = match value {
        Value::Array(streams) => streams
            .into_iter()
            .filter_map(|stream| match stream {
                Value::Array(mut parts) if parts.len() == 2 => {
                    let entries = parts.pop()?;
                    Some((parts.pop()?, entries))
                }
                _ => None,
            })
            .collect(),
        Value::Map(pairs) => pairs,
        _ => Vec::new(),
    };
    pairs
        .into_iter()
        .filter_map(|(name, list)| {
            let name: String = redis::from_redis_value(name).ok()?;
            Some((name, entries(&list)))
        })
        .collect()
}

/// A connection that is re-established with capped exponential backoff.
/// An outage is logged once when it starts and once when it ends, with
/// its cause; it ends only when the link has worked again (`healthy`), so
/// a server that accepts connections but fails every request keeps the
/// backoff growing instead of being hammered.
struct Link<T> {
    what: &'static str,
    live: Option<T>,
    down_since: Option<Instant>,
    attempts: u32,
    next_attempt: Instant,
    reconnects: u64,
}

impl<T> Link<T> {
    fn new(what: &'static str) -> Link<T> {
        Link {
            what,
            live: None,
            down_since: None,
            attempts: 0,
            next_attempt: Instant::now(),
            reconnects: 0,
        }
    }

    /// The connection, connecting when due; `None` while it is down.
    fn get(&mut self, connect: impl FnOnce() -> Result<T, String>) -> Option<&mut T> {
        if self.live.is_none() && Instant::now() >= self.next_attempt {
            match connect() {
                Ok(connection) => self.live = Some(connection),
                Err(cause) => self.failed(&cause),
            }
        }
        self.live.as_mut()
    }

    /// Drops the connection after `cause`; it is retried later.
    fn lost(&mut self, cause: &str) {
        self.live = None;
        self.failed(cause);
    }

    /// Counts a failure of the link, connected or not: backs off, and logs
    /// if this starts an outage.
    fn failed(&mut self, cause: &str) {
        if self.down_since.is_none() {
            self.down_since = Some(Instant::now());
            log(&format!(
                "{}: {cause}; retrying until it is back",
                self.what
            ));
        }
        let backoff = FIRST_BACKOFF
            .saturating_mul(1 << self.attempts.min(8))
            .min(MAX_BACKOFF);
        self.attempts = self.attempts.saturating_add(1);
        self.next_attempt = Instant::now() + backoff;
    }

    /// The link did its work: an outage, if any, is over.
    fn healthy(&mut self) {
        if let Some(since) = self.down_since.take() {
            self.reconnects += 1;
            log(&format!(
                "{}: back after {:.1} s ({} attempts)",
                self.what,
                since.elapsed().as_secs_f64(),
                self.attempts
            ));
        }
        self.attempts = 0;
    }

    /// True while backing off after a failure: nothing is tried before
    /// `next_attempt`.
    fn backing_off(&self) -> bool {
        self.down_since.is_some() && Instant::now() < self.next_attempt
    }
}

/// Why a step stopped early.
enum Stop {
    /// Redis failed; the connection is dropped.
    Redis(String),
    /// PostgreSQL is unavailable; the connection is dropped.
    Store,
}

/// A connection to Redis, and the address it went to.
struct Session {
    connection: Connection,
    address: String,
}

struct Consumer {
    config: Config,
    redis: Link<Session>,
    /// The master's address the sentinels gave last, for the log.
    master_at: Option<String>,
    /// When the sentinels were last asked whether the master moved.
    master_checked: Instant,
    store: Link<StoreWorker>,
    /// Own pending entries re-read since the last (re)connection.
    caught_up: bool,
    /// Times each (stream, entry) was refused, until written or buried.
    refusals: HashMap<(String, String), u64>,
    /// Why the last dead letter could not be written, said once.
    dead_letter_refused: Option<String>,
    /// Set by SIGINT or SIGTERM: waits for PostgreSQL give up at once.
    stop: Arc<AtomicBool>,
    metrics: Arc<Metrics>,
    /// With --wait-replicas: since when a page has been held back because
    /// too few replicas hold it; `None` while none is.
    holding: Option<Instant>,
    /// Whether the current pass over pending entries held a page back.
    page_held: bool,
}

/// Text fields as the byte pairs a dead letter carries.
fn text_pairs(fields: &HashMap<String, String>) -> Vec<(Vec<u8>, Vec<u8>)> {
    fields
        .iter()
        .map(|(field, value)| (field.clone().into_bytes(), value.clone().into_bytes()))
        .collect()
}

impl Consumer {
    fn redis(&mut self) -> Result<&mut Connection, Stop> {
        if self.redis.backing_off() {
            return Err(Stop::Redis(String::new()));
        }
        let endpoint = &self.config.redis;
        let read_timeout = NETWORK_TIMEOUT + Duration::from_millis(self.config.wait_timeout_ms);
        let mut named = None;
        let session = self.redis.get(|| {
            // With sentinels, asked anew on every (re)connection.
            let client = endpoint.master()?;
            let url = client.get_connection_info().addr().to_string();
            named = Some(url.clone());
            let connection = client
                .get_connection_with_timeout(NETWORK_TIMEOUT)
                .map_err(|err| format!("cannot connect to {url}: {err}"))?;
            // Reads block at most half a second (XREADGROUP BLOCK 500),
            // WAIT at most --wait-timeout-ms: a reply later than that
            // and NETWORK_TIMEOUT means the server or the path is gone.
            connection
                .set_read_timeout(Some(read_timeout))
                .and_then(|()| connection.set_write_timeout(Some(NETWORK_TIMEOUT)))
                .map_err(|err| format!("cannot set timeouts on {url}: {err}"))?;
            Ok(Session {
                connection,
                address: url,
            })
        });
        if let Some(named) = named {
            if endpoint.follows_sentinels() && self.master_at.as_ref() != Some(&named) {
                log(&format!("the sentinels name {named} as the master"));
                self.master_at = Some(named);
            }
        }
        session
            .map(|session| &mut session.connection)
            .ok_or_else(|| Stop::Redis(String::new()))
    }

    /// With sentinels, every few seconds: whether they name another master
    /// than the one connected to. A connection that keeps working is no
    /// sign that its server is still the master: one cut off from the
    /// sentinels (and promoted past) answers its clients as before, and
    /// what it sells then is lost when it rejoins.
    fn check_master(&mut self) {
        if !self.config.redis.follows_sentinels()
            || self.master_checked.elapsed() < MASTER_CHECK_EVERY
        {
            return;
        }
        self.master_checked = Instant::now();
        let Some(session) = self.redis.live.as_ref() else {
            return;
        };
        let connected = session.address.clone();
        // A failed lookup says nothing about the connection: kept.
        if let Ok(master) = self.config.redis.master() {
            let named = master.get_connection_info().addr().to_string();
            if named != connected {
                self.redis.lost(&format!(
                    "the sentinels name {named} as the master, not {connected}"
                ));
                self.caught_up = false;
            }
        }
    }

    fn store(&mut self) -> Result<&mut StoreWorker, Stop> {
        if self.store.backing_off() {
            return Err(Stop::Store);
        }
        let (config, stop) = (&self.config.postgres, &self.stop);
        self.store
            .get(|| {
                StoreWorker::connect(config, stop).map_err(|err| match err {
                    // The link's log line says PostgreSQL is unavailable.
                    StoreError::Unavailable(cause) => cause,
                    refused => refused.to_string(),
                })
            })
            .ok_or(Stop::Store)
    }

    fn query<T: redis::FromRedisValue>(&mut self, cmd: &redis::Cmd) -> Result<T, Stop> {
        self.query_counting(cmd, true)
    }

    /// Runs `cmd`. A lost connection is always dropped and retried; any
    /// other error counts against the link only if `counts`: a refused
    /// dead letter is about its key, not about Redis.
    fn query_counting<T: redis::FromRedisValue>(
        &mut self,
        cmd: &redis::Cmd,
        counts: bool,
    ) -> Result<T, Stop> {
        let redis = self.redis()?;
        cmd.query(redis).map_err(|err| {
            // The link's log line names Redis already.
            let cause = err.to_string();
            if self.stop.load(Ordering::Relaxed) {
                // SIGTERM interrupted the call: no outage, just the end.
                return Stop::Redis(cause);
            }
            // A replica (READONLY): the master moved, or this one was
            // demoted; NOREPLICAS: it may be a master cut off from the
            // others. Reconnecting asks the sentinels where it is now.
            let demoted = matches!(err.code(), Some("READONLY" | "NOREPLICAS"));
            if demoted
                || err.is_io_error()
                || err.is_connection_dropped()
                || err.is_unrecoverable_error()
            {
                self.redis.lost(&cause);
                self.caught_up = false;
            } else if counts && !matches!(err.code(), Some("BUSYGROUP" | "NOGROUP")) {
                // NOPERM, WRONGTYPE...: the server
                // answers but cannot do the work. Said once, retried with
                // backoff until it can.
                self.redis.failed(&cause);
            }
            Stop::Redis(cause)
        })
    }

    fn ensure_groups(&mut self) -> Result<(), Stop> {
        for stream in self.config.streams.clone() {
            let mut create = redis::cmd("XGROUP");
            create
                .arg("CREATE")
                .arg(&stream)
                .arg(&self.config.group)
                .arg("0")
                .arg("MKSTREAM");
            match self.query::<String>(&create) {
                Ok(_) => log(&format!("created group {} on {stream}", self.config.group)),
                Err(Stop::Redis(cause)) if cause.contains("BUSYGROUP") => {}
                Err(stop) => return Err(stop),
            }
        }
        Ok(())
    }

    /// Writes what the entries say, acknowledging each entry once its
    /// row committed. Entries that cannot be read, and rows the database
    /// refuses, stay pending until delivered `--max-deliveries` times,
    /// then go to the dead-letter stream.
    fn handle(&mut self, stream: &str, entries: Vec<Entry>) -> Result<(), Stop> {
        self.metrics.read.inc_by(entries.len() as u64);
        // The last entry still in the stream stands for the page (one
        // deleted while pending cannot be claimed; it only gets acked).
        let last = entries
            .iter()
            .rev()
            .find(|(_, fields)| !matches!(fields, Fields::Deleted))
            .map(|(id, _)| id.clone());
        let replicated = match last {
            Some(last) => self.replicated(stream, &last)?,
            None => true,
        };
        if !replicated {
            // Left pending, untouched: tried again from this consumer's
            // pending entries (see `step`). Should the master be lost
            // before a replica gets them, they are gone, as the sales are.
            return Ok(());
        }
        let mut events = Vec::new();
        let mut deleted = Vec::new();
        for (id, fields) in entries {
            match fields {
                Fields::Deleted => deleted.push(id),
                Fields::Text(fields) => match OrderEvent::parse(&id, &fields) {
                    Ok(event) => events.push((id, fields, event)),
                    Err(reason) => {
                        let raw = text_pairs(&fields);
                        self.refuse(stream, &id, &raw, &reason, None)?;
                    }
                },
                Fields::Bytes(raw) => {
                    self.refuse(stream, &id, &raw, "fields are not UTF-8 text", None)?;
                }
            }
        }
        if !deleted.is_empty() {
            // Nothing left to write: acknowledged, and said.
            log(&format!(
                "{stream}: {} pending entries were deleted from the stream; acknowledged",
                deleted.len()
            ));
            self.ack(stream, &deleted)?;
        }
        self.write(stream, &events)
    }

    /// Commits `events`; when the database refuses one of them, splits the
    /// batch to find it, commits the rest, and refuses that one alone.
    fn write(
        &mut self,
        stream: &str,
        events: &[(String, HashMap<String, String>, OrderEvent)],
    ) -> Result<(), Stop> {
        if events.is_empty() {
            return Ok(());
        }
        let rows: Vec<OrderEvent> = events.iter().map(|(.., event)| event.clone()).collect();
        let stop = Arc::clone(&self.stop);
        let store = self.store()?;
        match store.apply(&rows, &stop) {
            Ok(()) => {
                let ids: Vec<String> = events.iter().map(|(id, ..)| id.clone()).collect();
                self.ack(stream, &ids)?;
                if !self.refusals.is_empty() {
                    for id in &ids {
                        self.refusals.remove(&(stream.to_owned(), id.clone()));
                    }
                }
                self.metrics.written.inc_by(ids.len() as u64);
                Ok(())
            }
            Err(StoreError::Refused { .. }) if events.len() > 1 => {
                let (first, second) = events.split_at(events.len() / 2);
                self.write(stream, first)?;
                self.write(stream, second)
            }
            Err(refused @ StoreError::Refused { .. }) => {
                let (id, fields, _) = &events[0];
                let raw = text_pairs(fields);
                self.refuse(stream, id, &raw, &refused.to_string(), Some(&refused))
            }
            Err(StoreError::Unavailable(cause)) => {
                self.store.lost(&cause);
                self.caught_up = false;
                Err(Stop::Store)
            }
        }
    }

    fn ack(&mut self, stream: &str, ids: &[String]) -> Result<(), Stop> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut ack = redis::cmd("XACK");
        ack.arg(stream).arg(&self.config.group).arg(ids);
        self.query::<i64>(&ack).map(|_| ())
    }

    /// An entry that cannot be written: left pending to be tried again,
    /// or, refused `--max-deliveries` times, copied to the dead-letter
    /// stream and acknowledged. Refusals are counted here, not by Redis's
    /// delivery counter, which re-reads after an outage would inflate.
    fn refuse(
        &mut self,
        stream: &str,
        id: &str,
        fields: &[(Vec<u8>, Vec<u8>)],
        reason: &str,
        refused: Option<&StoreError>,
    ) -> Result<(), Stop> {
        if self.refusals.len() > MAX_TRACKED_REFUSALS {
            // Entries acknowledged elsewhere never leave the map: start over
            // rather than grow without bound.
            self.refusals.clear();
        }
        let key = (stream.to_owned(), id.to_owned());
        let count = self.refusals.entry(key.clone()).or_default();
        *count += 1;
        let count = *count;
        if count < self.config.max_deliveries {
            log(&format!(
                "{stream} {id}: {reason}; left pending (attempt {count} of {})",
                self.config.max_deliveries
            ));
            return Ok(());
        }
        let (sqlstate, constraint) = match refused {
            Some(StoreError::Refused {
                sqlstate,
                constraint,
                ..
            }) => (sqlstate.as_str(), constraint.as_str()),
            _ => ("", ""),
        };
        let mut add = redis::cmd("XADD");
        add.arg(format!("{stream}:dead"))
            .arg("*")
            .arg("stream")
            .arg(stream)
            .arg("id")
            .arg(id)
            .arg("error")
            .arg(reason)
            .arg("sqlstate")
            .arg(sqlstate)
            .arg("constraint")
            .arg(constraint);
        for (field, value) in fields {
            add.arg(field).arg(value);
        }
        // Acknowledged only once the dead letter is written: a stream that
        // refuses it (wrong type, no rights) leaves the entry pending, and
        // the rest of the batch goes on.
        if let Err(Stop::Redis(cause)) = self.query_counting::<Value>(&add, false) {
            if self.redis.live.is_none() {
                return Err(Stop::Redis(cause));
            }
            if self.dead_letter_refused.as_deref() != Some(cause.as_str()) {
                log(&format!(
                    "{stream} {id}: cannot write the dead letter ({cause}); left pending"
                ));
                self.dead_letter_refused = Some(cause);
            }
            return Ok(());
        }
        self.dead_letter_refused = None;
        let mut ack = redis::cmd("XACK");
        ack.arg(stream).arg(&self.config.group).arg(id);
        self.query::<i64>(&ack)?;
        self.refusals.remove(&key);
        self.metrics.dead.inc();
        log(&format!("{stream} {id}: sent to {stream}:dead ({reason})"));
        Ok(())
    }

    /// With `--wait-replicas N`: true once N replicas hold every entry of
    /// the page of `stream` read just now, whose last entry is `last`
    /// (entries reach the replicas in order, so the last one stands for
    /// all); false, counted and timed, when `--wait-timeout-ms` passed first.
    ///
    /// `WAIT` waits for the replication offset of this connection's last
    /// write. After an `XREADGROUP ... BLOCK` woken by an `XADD` that offset
    /// is older than the entry (the read was served inside the `XADD`'s
    /// call), and `WAIT` answers at once even when no replica got the
    /// entry (Redis 7.0.15, 8.0.2, Valkey 9.1). So a fencing write goes first, on the same
    /// connection and in the stream's slot: `XCLAIM stream group me 0 last
    /// JUSTID` claims for this consumer the entry it already holds (JUSTID:
    /// the delivery count is left alone) and is always propagated, so its
    /// offset lies after every entry of the page; it also covers pages
    /// re-read from this consumer's pending entries after a reconnection,
    /// where the connection has written nothing yet. Tried on the real
    /// servers, with the replica paused: on Redis 7.0.15 a re-read without
    /// BLOCK and `XACK stream group 0-0` made the WAIT honest too (7.0
    /// moves a client's offset after any command), but on Redis 8.0.2 and
    /// Valkey 9.1 neither did (an XACK of nothing, a re-read of pending
    /// entries or a `>` read that finds nothing propagates nothing); only
    /// the XCLAIM did, on all three. Cost on 7.0.15, server time per call:
    /// this XCLAIM 9 us, XACK of nothing 0.5 us, a re-read of a 500-entry
    /// page 1.8 ms; each is one round trip, nothing next to the WAIT and
    /// the commit it guards.
    fn replicated(&mut self, stream: &str, last: &str) -> Result<bool, Stop> {
        let wanted = self.config.wait_replicas;
        if wanted == 0 {
            return Ok(true);
        }
        let mut fence = redis::cmd("XCLAIM");
        fence
            .arg(stream)
            .arg(&self.config.group)
            .arg(&self.config.consumer)
            .arg(0)
            .arg(last)
            .arg("JUSTID");
        self.query::<Value>(&fence)?;
        let mut wait = redis::cmd("WAIT");
        wait.arg(wanted).arg(self.config.wait_timeout_ms);
        let replicas: u64 = self.query(&wait)?;
        if replicas >= wanted {
            if let Some(since) = self.holding.take() {
                log(&format!(
                    "{wanted} replicas hold the entries again, after {:.1} s",
                    since.elapsed().as_secs_f64()
                ));
            }
            self.metrics.replication_wait.set(0.0);
            return Ok(true);
        }
        self.metrics.held_back.inc();
        self.page_held = true;
        let since = *self.holding.get_or_insert_with(|| {
            log(&format!(
                "{stream} up to {last}: {replicas} of {wanted} replicas hold it; \
                 left pending until they do"
            ));
            Instant::now()
        });
        self.metrics
            .replication_wait
            .set(since.elapsed().as_secs_f64());
        Ok(false)
    }

    /// Entries read for `start` (`>` for new ones, an ID for this
    /// consumer's own pending ones after it).
    fn read(&mut self, start: &str, block: bool) -> Result<Vec<(String, Vec<Entry>)>, Stop> {
        let mut read = redis::cmd("XREADGROUP");
        read.arg("GROUP")
            .arg(&self.config.group)
            .arg(&self.config.consumer)
            .arg("COUNT")
            .arg(PAGE);
        if block {
            read.arg("BLOCK").arg(500);
        }
        read.arg("STREAMS").arg(&self.config.streams);
        for _ in &self.config.streams {
            read.arg(start);
        }
        match self.query::<Value>(&read) {
            Ok(reply) => Ok(stream_entries(reply)),
            Err(Stop::Redis(cause)) if cause.contains("NOGROUP") => {
                // The stream was deleted and created again: its group too.
                self.ensure_groups()?;
                Ok(Vec::new())
            }
            Err(stop) => Err(stop),
        }
    }

    /// Re-reads this consumer's own pending entries, at full speed, one
    /// page after another, for each stream.
    fn catch_up(&mut self) -> Result<(), Stop> {
        self.page_held = false;
        for stream in self.config.streams.clone() {
            let mut after = "0-0".to_owned();
            loop {
                let mut read = redis::cmd("XREADGROUP");
                read.arg("GROUP")
                    .arg(&self.config.group)
                    .arg(&self.config.consumer)
                    .arg("COUNT")
                    .arg(PAGE)
                    .arg("STREAMS")
                    .arg(&stream)
                    .arg(&after);
                let reply: Value = self.query(&read)?;
                let Some((_, entries)) = stream_entries(reply).into_iter().next() else {
                    break;
                };
                let Some((last, _)) = entries.last() else {
                    break;
                };
                let next = last.clone();
                if next == after {
                    break;
                }
                after = next;
                self.handle(&stream, entries)?;
                if self.page_held {
                    // What follows is not replicated either.
                    return Ok(());
                }
            }
        }
        // Nothing pending is held back (any more). A page held before and
        // no longer pending was lost with a master in a failover, or
        // deleted: there is nothing left to wait for.
        if let Some(since) = self.holding.take() {
            log(&format!(
                "the entries held back for the replicas are no longer pending \
                 (lost in a failover, or deleted) after {:.1} s; reading new ones again",
                since.elapsed().as_secs_f64()
            ));
            self.metrics.replication_wait.set(0.0);
        }
        Ok(())
    }

    /// Takes over entries left pending longer than the claim idle time, by
    /// any consumer (this one too), following the XAUTOCLAIM cursor to the
    /// end, a page at a time.
    fn claim_idle(&mut self) -> Result<(), Stop> {
        self.page_held = false;
        for stream in self.config.streams.clone() {
            let mut cursor = "0-0".to_owned();
            loop {
                let mut claim = redis::cmd("XAUTOCLAIM");
                claim
                    .arg(&stream)
                    .arg(&self.config.group)
                    .arg(&self.config.consumer)
                    .arg(self.config.claim_idle_ms)
                    .arg(&cursor)
                    .arg("COUNT")
                    .arg(self.config.claim_page);
                let reply: Value = self.query(&claim)?;
                let Value::Array(parts) = reply else {
                    break;
                };
                let next: String = parts
                    .first()
                    .and_then(|next| redis::from_redis_value(next.clone()).ok())
                    .unwrap_or_else(|| "0-0".to_owned());
                let claimed = parts.get(1).map(entries).unwrap_or_default();
                if !claimed.is_empty() {
                    log(&format!("{stream}: claimed {} idle entries", claimed.len()));
                    self.handle(&stream, claimed)?;
                    if self.page_held {
                        return Ok(());
                    }
                }
                if next == "0-0" {
                    break;
                }
                cursor = next;
            }
        }
        Ok(())
    }

    /// Refreshes the gauges: entries pending for this consumer, and the
    /// group's lag behind each stream.
    fn measure(&mut self) -> Result<(), Stop> {
        for stream in self.config.streams.clone() {
            let mut summary = redis::cmd("XPENDING");
            summary.arg(&stream).arg(&self.config.group);
            let summary: Value = self.query(&summary)?;
            let mine = match &summary {
                Value::Array(parts) => parts
                    .get(3)
                    .and_then(|consumers| {
                        redis::from_redis_value::<Vec<(String, i64)>>(consumers.clone()).ok()
                    })
                    .unwrap_or_default()
                    .into_iter()
                    .find(|(name, _)| *name == self.config.consumer)
                    .map_or(0, |(_, count)| count),
                _ => 0,
            };
            self.metrics.pending.with_label_values(&[&stream]).set(mine);
            let mut groups = redis::cmd("XINFO");
            groups.arg("GROUPS").arg(&stream);
            let groups: Vec<HashMap<String, Value>> = self.query(&groups)?;
            let Some(group) = groups.iter().find(|group| {
                group
                    .get("name")
                    .and_then(|name| redis::from_redis_value::<String>(name.clone()).ok())
                    .is_some_and(|name| name == self.config.group)
            }) else {
                continue;
            };
            let lag = match group
                .get("lag")
                .and_then(|lag| redis::from_redis_value::<i64>(lag.clone()).ok())
            {
                Some(lag) => lag,
                None => {
                    // Nil when the server cannot tell (a promoted replica,
                    // entries deleted in between): counted from the stream.
                    let last: Option<String> = group
                        .get("last-delivered-id")
                        .and_then(|id| redis::from_redis_value(id.clone()).ok());
                    let Some(last) = last else {
                        continue;
                    };
                    self.count_after(&stream, &last)?
                }
            };
            self.metrics.lag.with_label_values(&[&stream]).set(lag);
        }
        if let Some(since) = self.holding {
            self.metrics
                .replication_wait
                .set(since.elapsed().as_secs_f64());
        }
        Ok(())
    }

    /// Entries of `stream` after `last`, counted with `XRANGE` a page at a
    /// time, up to `MAX_COUNTED_LAG` (a lag that large is an alert either
    /// way; counting further would cost more than it tells).
    fn count_after(&mut self, stream: &str, last: &str) -> Result<i64, Stop> {
        let mut after = last.to_owned();
        let mut count = 0;
        while count < MAX_COUNTED_LAG {
            let mut range = redis::cmd("XRANGE");
            range
                .arg(stream)
                .arg(format!("({after}"))
                .arg("+")
                .arg("COUNT")
                .arg(PAGE);
            let ids: Vec<Value> = self.query(&range)?;
            let Some(Value::Array(parts)) = ids.last() else {
                break;
            };
            let Some(id) = parts
                .first()
                .and_then(|id| redis::from_redis_value::<String>(id.clone()).ok())
            else {
                break;
            };
            count += ids.len() as i64;
            if ids.len() < PAGE {
                break;
            }
            after = id;
        }
        Ok(count.min(MAX_COUNTED_LAG))
    }

    /// One round: (re)connect what is down, catch up after a
    /// (re)connection, then read new entries. Nothing new is read while
    /// PostgreSQL is away: entries are only taken when they can be written.
    fn step(&mut self, claim_due: bool) -> Result<(), Stop> {
        self.check_master();
        self.redis()?;
        self.store()?;
        if !self.caught_up {
            self.ensure_groups()?;
            self.catch_up()?;
            if self.holding.is_some() {
                return Ok(());
            }
            self.claim_idle()?;
            self.caught_up = true;
        } else if self.holding.is_some() {
            // Pages held back for the replicas are this consumer's pending
            // entries: they go first, and nothing new is read before them.
            self.catch_up()?;
            if self.holding.is_some() {
                return Ok(());
            }
        } else if claim_due {
            self.claim_idle()?;
        }
        if self.holding.is_some() {
            return Ok(());
        }
        for (stream, entries) in self.read(">", true)? {
            self.handle(&stream, entries)?;
        }
        Ok(())
    }
}

/// Sleeps `duration`, or less if asked to stop.
fn nap(duration: Duration, stop: &AtomicBool) {
    let until = Instant::now() + duration;
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20).min(until - Instant::now()));
    }
}

fn run(config: Config, metrics: Arc<Metrics>, stop: Arc<AtomicBool>) {
    let mut consumer = Consumer {
        config,
        redis: Link::new("Redis"),
        master_at: None,
        master_checked: Instant::now(),
        store: Link::new("PostgreSQL"),
        caught_up: false,
        refusals: HashMap::new(),
        dead_letter_refused: None,
        stop: Arc::clone(&stop),
        metrics,
        holding: None,
        page_held: false,
    };
    log(&format!(
        "consuming {} on {} as {} in group {}",
        consumer.config.streams.join(", "),
        consumer.config.redis.shown(),
        consumer.config.consumer,
        consumer.config.group
    ));
    let claim_every = Duration::from_millis(consumer.config.claim_idle_ms.clamp(100, 5_000));
    let mut last_claim = Instant::now();
    let mut last_measure = Instant::now();
    let mut last_report = Instant::now();
    let mut reported = (0, 0);
    let mut reconnects = (0, 0);
    while !stop.load(Ordering::Relaxed) {
        let claim_due = last_claim.elapsed() >= claim_every;
        if claim_due {
            last_claim = Instant::now();
        }
        let stepped = consumer.step(claim_due);
        if stepped.is_ok() {
            consumer.redis.healthy();
            consumer.store.healthy();
        }
        // The gauges are refreshed even while PostgreSQL is away: a lag
        // that grows then is what an alert is for.
        if last_measure.elapsed() >= Duration::from_secs(1) && consumer.measure().is_ok() {
            last_measure = Instant::now();
        }
        if stepped.is_err() {
            // The link that failed logged it and set when to retry.
            let wait = [
                consumer
                    .redis
                    .backing_off()
                    .then_some(consumer.redis.next_attempt),
                consumer
                    .store
                    .backing_off()
                    .then_some(consumer.store.next_attempt),
            ]
            .into_iter()
            .flatten()
            .map(|at| at.saturating_duration_since(Instant::now()))
            .max()
            .unwrap_or(FIRST_BACKOFF)
            .max(Duration::from_millis(10));
            nap(wait, &stop);
        }
        let now_reconnects = (consumer.redis.reconnects, consumer.store.reconnects);
        let metrics = &consumer.metrics.reconnects;
        metrics
            .with_label_values(&["redis"])
            .inc_by(now_reconnects.0 - reconnects.0);
        metrics
            .with_label_values(&["postgres"])
            .inc_by(now_reconnects.1 - reconnects.1);
        reconnects = now_reconnects;
        let outages = [
            ("redis", consumer.redis.down_since),
            ("postgres", consumer.store.down_since),
        ];
        for (link, down_since) in outages {
            let seconds = down_since.map_or(0.0, |since| since.elapsed().as_secs_f64());
            consumer
                .metrics
                .outage
                .with_label_values(&[link])
                .set(seconds);
        }
        let counts = (consumer.metrics.written.get(), consumer.metrics.dead.get());
        if last_report.elapsed() >= Duration::from_secs(5) && counts != reported {
            log(&format!(
                "{} orders written, {} dead letters",
                counts.0, counts.1
            ));
            reported = counts;
            last_report = Instant::now();
        }
    }
    log(&format!(
        "stopping: {} orders written, {} dead letters, {} Redis and {} PostgreSQL reconnects",
        consumer.metrics.written.get(),
        consumer.metrics.dead.get(),
        consumer.redis.reconnects,
        consumer.store.reconnects
    ));
}

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("rebuild") {
        return rebuild::main(std::env::args().skip(2).collect());
    }
    if std::env::args().nth(1).as_deref() == Some("reconcile") {
        return reconcile::main(std::env::args().skip(2).collect());
    }
    let config = match Config::from_args() {
        Ok(config) => config,
        Err(problem) => {
            if !problem.is_empty() {
                log(&format!("configuration error: {problem}"));
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let metrics = Arc::new(Metrics::new());
    if let Some(addr) = &config.metrics_addr {
        if let Err(err) = metrics.serve(addr) {
            log(&format!("configuration error: --metrics-addr {err}"));
            return ExitCode::from(2);
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(err) = signal_hook::flag::register(signal, Arc::clone(&stop)) {
            log(&format!("cannot handle signal {signal}: {err}"));
        }
    }
    run(config, metrics, stop);
    ExitCode::SUCCESS
}
