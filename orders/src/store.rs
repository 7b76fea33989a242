//! The orders table in PostgreSQL: one row per order, written so that a
//! redelivered or reordered entry never moves an order backwards.

use crate::event::OrderEvent;
use postgres::error::SqlState;
use postgres::{Client, NoTls};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub struct Store {
    client: Client,
}

/// Why a write failed.
#[derive(Debug)]
pub enum StoreError {
    /// The database refused the data itself (SQLSTATE class 22 data
    /// exception, 23 integrity constraint violation): the same row will
    /// fail again, whoever sends it. Class 42 (syntax or access rule) is
    /// not in it: for this one fixed statement it means a missing table or
    /// column, a changed key or missing rights, which every row meets
    /// alike; that is the database being unusable, not a poison row.
    Refused {
        sqlstate: String,
        constraint: String,
        message: String,
    },
    /// The connection or the server failed: the rows are fine, try later.
    Unavailable(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Refused {
                sqlstate,
                constraint,
                message,
            } if constraint.is_empty() => write!(f, "refused ({sqlstate}): {message}"),
            StoreError::Refused {
                sqlstate,
                constraint,
                message,
            } => write!(f, "refused ({sqlstate}, {constraint}): {message}"),
            StoreError::Unavailable(cause) => write!(f, "unavailable: {cause}"),
        }
    }
}

impl From<postgres::Error> for StoreError {
    fn from(error: postgres::Error) -> Self {
        let refused = error
            .code()
            .map(SqlState::code)
            .is_some_and(|code| code.starts_with("22") || code.starts_with("23"));
        match error.as_db_error() {
            Some(db) if refused => StoreError::Refused {
                sqlstate: db.code().code().to_owned(),
                constraint: db.constraint().unwrap_or_default().to_owned(),
                message: db.message().to_owned(),
            },
            // The error's own text, with its source (an I/O error, a
            // closed connection), never a bare "db error".
            Some(db) => StoreError::Unavailable(format!(
                "{} ({}): {}",
                db.severity(),
                db.code().code(),
                db.message()
            )),
            None => StoreError::Unavailable(describe(&error)),
        }
    }
}

/// An error with the chain of its causes.
fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Schema versions, applied in order, each once, under an advisory lock so
/// that consumers starting together never race to create the same table.
const MIGRATIONS: [&str; 1] = ["CREATE TABLE IF NOT EXISTS seckill_orders (
    item text NOT NULL,
    order_id text NOT NULL,
    user_id text NOT NULL,
    qty bigint NOT NULL,
    status text NOT NULL,
    stock_after bigint NOT NULL,
    created_at_ms bigint NOT NULL,
    updated_at_ms bigint NOT NULL,
    last_entry_ms bigint NOT NULL,
    last_entry_seq bigint NOT NULL,
    PRIMARY KEY (item, order_id)
)"];

/// The advisory lock key that serialises schema changes ("seckill" in hex).
const SCHEMA_LOCK: i64 = 0x0073_6563_6b69_6c6c;

/// Parameters per row of the upsert.
const COLUMNS_PER_ROW: usize = 10;
/// Rows per upsert statement (PostgreSQL takes at most 65,535 parameters).
const ROWS_PER_STATEMENT: usize = 1_000;

/// Inserts each order, or moves it on, but only from an older stream
/// entry: a redelivered entry, or one claimed out of order, changes
/// nothing. `rows` distinct orders, as `$1..$10`, `$11..$20`, ...
fn upsert_of(rows: usize) -> String {
    let mut statement = String::from(
        "INSERT INTO seckill_orders AS o
    (item, order_id, user_id, qty, status, stock_after,
     created_at_ms, updated_at_ms, last_entry_ms, last_entry_seq)
    VALUES ",
    );
    for row in 0..rows {
        let p = |column: usize| row * COLUMNS_PER_ROW + column;
        if row > 0 {
            statement.push_str(", ");
        }
        statement.push_str(&format!(
            "(${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${})",
            p(1),
            p(2),
            p(3),
            p(4),
            p(5),
            p(6),
            p(7),
            p(8),
            p(9),
            p(10)
        ));
    }
    statement.push_str(
        "
    ON CONFLICT (item, order_id) DO UPDATE SET
        status = EXCLUDED.status,
        stock_after = EXCLUDED.stock_after,
        updated_at_ms = EXCLUDED.updated_at_ms,
        last_entry_ms = EXCLUDED.last_entry_ms,
        last_entry_seq = EXCLUDED.last_entry_seq
    WHERE (o.last_entry_ms, o.last_entry_seq)
        < (EXCLUDED.last_entry_ms, EXCLUDED.last_entry_seq)",
    );
    statement
}

impl Store {
    /// Connects and brings the schema to the current version.
    pub fn connect(config: &postgres::Config) -> Result<Store, StoreError> {
        let mut client = config.connect(NoTls)?;
        migrate(&mut client)?;
        Ok(Store { client })
    }

    /// Applies `events` in one transaction: all of them, or none. Within
    /// a batch only the newest entry of each order counts (the upsert
    /// would let it win anyway), so the rows go in one statement per
    /// `ROWS_PER_STATEMENT` rather than one round trip per row.
    pub fn apply(&mut self, events: &[OrderEvent]) -> Result<(), StoreError> {
        // Per order: its newest entry, and the time of its first one (an
        // order created within this batch keeps when it was created).
        let mut orders: HashMap<(&str, &str), (&OrderEvent, i64)> =
            HashMap::with_capacity(events.len());
        for event in events {
            let (newest, created) = orders
                .entry((event.item.as_str(), event.order_id.as_str()))
                .or_insert((event, event.at_ms));
            if event.entry > newest.entry {
                *newest = event;
            }
            *created = (*created).min(event.at_ms);
        }
        let mut rows: Vec<(&OrderEvent, i64)> = orders.into_values().collect();
        rows.sort_by_key(|(event, _)| event.entry);
        let mut transaction = self.client.transaction()?;
        for chunk in rows.chunks(ROWS_PER_STATEMENT) {
            let statement = upsert_of(chunk.len());
            let statuses: Vec<&str> = chunk
                .iter()
                .map(|(event, _)| event.status.as_str())
                .collect();
            let mut params: Vec<&(dyn postgres::types::ToSql + Sync)> =
                Vec::with_capacity(chunk.len() * COLUMNS_PER_ROW);
            for ((event, created), status) in chunk.iter().zip(&statuses) {
                params.extend_from_slice(&[
                    &event.item,
                    &event.order_id,
                    &event.user,
                    &event.qty,
                    status,
                    &event.stock,
                    created,
                    &event.at_ms,
                    &event.entry.ms,
                    &event.entry.seq,
                ]);
            }
            transaction.execute(statement.as_str(), &params)?;
        }
        Ok(transaction.commit()?)
    }
}

fn migrate(client: &mut Client) -> Result<(), postgres::Error> {
    // A peer that hangs holding the lock fails this connection attempt,
    // which is retried, rather than blocking it for good.
    client.batch_execute("SET lock_timeout = '10s'")?;
    client.execute("SELECT pg_advisory_lock($1)", &[&SCHEMA_LOCK])?;
    let result = (|| {
        client.batch_execute(
            "CREATE TABLE IF NOT EXISTS seckill_orders_schema (version integer NOT NULL)",
        )?;
        let recorded: i32 = client
            .query_opt("SELECT max(version) FROM seckill_orders_schema", &[])?
            .and_then(|row| row.get::<_, Option<i32>>(0))
            .unwrap_or(0);
        // A table dropped by hand is built again from the first version.
        let table_exists: bool = client
            .query_one("SELECT to_regclass('seckill_orders') IS NOT NULL", &[])?
            .get(0);
        let current = if table_exists { recorded } else { 0 };
        for (version, migration) in (1..).zip(MIGRATIONS) {
            if version > current {
                let mut transaction = client.transaction()?;
                transaction.batch_execute(migration)?;
                if version > recorded {
                    transaction.execute(
                        "INSERT INTO seckill_orders_schema (version) VALUES ($1)",
                        &[&version],
                    )?;
                }
                transaction.commit()?;
            }
        }
        Ok(())
    })();
    client.execute("SELECT pg_advisory_unlock($1)", &[&SCHEMA_LOCK])?;
    client.batch_execute("RESET lock_timeout")?;
    result
}

/// How long a write (or a connection) may take before PostgreSQL counts
/// as unavailable. A server process that is stopped but still holds its
/// connections keeps TCP acknowledging, so no socket timeout ever fires:
/// only a deadline on the reply does.
pub const REPLY_DEADLINE: Duration = Duration::from_secs(10);

type Job = (Vec<OrderEvent>, mpsc::Sender<Result<(), StoreError>>);

/// A `Store` on a thread of its own, so that a write that never gets its
/// reply can be given up on: the consumer moves on to a new connection,
/// and the stuck thread ends whenever its call returns.
pub struct StoreWorker {
    jobs: mpsc::Sender<Job>,
}

impl StoreWorker {
    /// Connects on a new thread, waiting at most `REPLY_DEADLINE`, or less
    /// if `stop` is set.
    pub fn connect(
        config: &postgres::Config,
        stop: &AtomicBool,
    ) -> Result<StoreWorker, StoreError> {
        let (jobs, next_job) = mpsc::channel::<Job>();
        let (connected, on_connect) = mpsc::channel();
        let config = config.clone();
        std::thread::spawn(move || {
            let mut store = match Store::connect(&config) {
                Ok(store) => {
                    let _ = connected.send(Ok(()));
                    store
                }
                Err(err) => {
                    let _ = connected.send(Err(err));
                    return;
                }
            };
            while let Ok((events, reply)) = next_job.recv() {
                if reply.send(store.apply(&events)).is_err() {
                    // Given up on: this connection may be stuck; end it.
                    return;
                }
            }
        });
        wait(&on_connect, stop)?;
        Ok(StoreWorker { jobs })
    }

    /// `Store::apply` on the worker, waiting at most `REPLY_DEADLINE`.
    pub fn apply(&self, events: &[OrderEvent], stop: &AtomicBool) -> Result<(), StoreError> {
        let (reply, on_reply) = mpsc::channel();
        self.jobs
            .send((events.to_vec(), reply))
            .map_err(|_| StoreError::Unavailable("the connection's thread ended".into()))?;
        wait(&on_reply, stop)
    }
}

/// The worker's answer, within the deadline, unless asked to stop.
fn wait(
    answer: &mpsc::Receiver<Result<(), StoreError>>,
    stop: &AtomicBool,
) -> Result<(), StoreError> {
    let deadline = Instant::now() + REPLY_DEADLINE;
    loop {
        match answer.recv_timeout(Duration::from_millis(50)) {
            Ok(result) => return result,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(StoreError::Unavailable(
                    "the connection's thread ended".into(),
                ))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if stop.load(Ordering::Relaxed) {
                    return Err(StoreError::Unavailable("stopping".into()));
                }
                if Instant::now() >= deadline {
                    return Err(StoreError::Unavailable(format!(
                        "no reply within {} s",
                        REPLY_DEADLINE.as_secs()
                    )));
                }
            }
        }
    }
}
