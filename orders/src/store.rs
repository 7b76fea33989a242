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

/// An error with the chain of its causes: a PostgreSQL error shows as
/// "db error" alone, its cause says what went wrong.
pub fn describe(error: &dyn std::error::Error) -> String {
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
/// Each is safe to run again (`IF NOT EXISTS`), and each comes with a
/// query telling whether the table has it: a table dropped by hand and
/// created again by a consumer that knows fewer versions is brought back
/// up even though `seckill_orders_schema` records them.
///
/// A consumer never names a column a later version added, and names every
/// column it writes, so consumers of an earlier version keep working on a
/// table migrated further (a later column is left NULL by their inserts
/// and untouched by their updates).
const MIGRATIONS: [(&str, &str); 3] = [
    (
        "CREATE TABLE IF NOT EXISTS seckill_orders (
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
)",
        "SELECT to_regclass('seckill_orders') IS NOT NULL",
    ),
    // 2: a hold's deadline (the entry's `until`), NULL for orders without
    // one. Adding a nullable column without a default rewrites no row.
    (
        "ALTER TABLE seckill_orders ADD COLUMN IF NOT EXISTS hold_until_ms bigint",
        "SELECT EXISTS (SELECT 1 FROM pg_attribute
    WHERE attrelid = to_regclass('seckill_orders')
        AND attname = 'hold_until_ms' AND NOT attisdropped)",
    ),
    // 3: the variant (a drop's size) of an order on an item with
    // variants, the entry's `variant`; NULL on items without.
    (
        "ALTER TABLE seckill_orders ADD COLUMN IF NOT EXISTS variant text",
        "SELECT EXISTS (SELECT 1 FROM pg_attribute
    WHERE attrelid = to_regclass('seckill_orders')
        AND attname = 'variant' AND NOT attisdropped)",
    ),
];

/// The advisory lock key that serialises schema changes ("seckill" in hex).
const SCHEMA_LOCK: i64 = 0x0073_6563_6b69_6c6c;

/// Parameters per row of the upsert.
const COLUMNS_PER_ROW: usize = 12;
/// Rows per upsert statement (PostgreSQL takes at most 65,535 parameters).
const ROWS_PER_STATEMENT: usize = 1_000;

/// The row's entry is older than the one being written.
const NEWER: &str =
    "(o.last_entry_ms, o.last_entry_seq) < (EXCLUDED.last_entry_ms, EXCLUDED.last_entry_seq)";

/// Inserts each order, or moves it on, but only from an older stream
/// entry: a redelivered entry, or one claimed out of order, changes
/// nothing, except that a hold's deadline missing from the row is filled
/// in from whichever entry brings it (a hold entry applied after its
/// order's confirmation, say); once set, it never changes. So is the
/// variant (every entry of an order names the same one). `rows` distinct
/// orders, as `$1..$12`, `$13..$24`, ...
fn upsert_of(rows: usize) -> String {
    let mut statement = String::from(
        "INSERT INTO seckill_orders AS o
    (item, order_id, user_id, qty, status, stock_after,
     created_at_ms, updated_at_ms, last_entry_ms, last_entry_seq, hold_until_ms, variant)
    VALUES ",
    );
    for row in 0..rows {
        if row > 0 {
            statement.push_str(", ");
        }
        let params: Vec<String> = (1..=COLUMNS_PER_ROW)
            .map(|column| format!("${}", row * COLUMNS_PER_ROW + column))
            .collect();
        statement.push('(');
        statement.push_str(&params.join(", "));
        statement.push(')');
    }
    statement.push_str("\n    ON CONFLICT (item, order_id) DO UPDATE SET");
    for column in [
        "status",
        "stock_after",
        "updated_at_ms",
        "last_entry_ms",
        "last_entry_seq",
    ] {
        statement.push_str(&format!(
            "\n        {column} = CASE WHEN {NEWER} THEN EXCLUDED.{column} ELSE o.{column} END,"
        ));
    }
    statement.push_str(&format!(
        "
        hold_until_ms = COALESCE(o.hold_until_ms, EXCLUDED.hold_until_ms),
        variant = COALESCE(o.variant, EXCLUDED.variant)
    WHERE {NEWER}
        OR (o.hold_until_ms IS NULL AND EXCLUDED.hold_until_ms IS NOT NULL)
        OR (o.variant IS NULL AND EXCLUDED.variant IS NOT NULL)"
    ));
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
        // Per order: its newest entry, the time of its first one (an
        // order created within this batch keeps when it was created), and
        // a hold's deadline from whichever of its entries has one (its
        // hold's, when the newest is its confirmation, say).
        let mut orders: HashMap<(&str, &str), (&OrderEvent, i64, Option<i64>)> =
            HashMap::with_capacity(events.len());
        for event in events {
            let (newest, created, until) = orders
                .entry((event.item.as_str(), event.order_id.as_str()))
                .or_insert((event, event.at_ms, None));
            if event.entry > newest.entry {
                *newest = event;
            }
            *created = (*created).min(event.at_ms);
            *until = until.or(event.hold_until_ms);
        }
        let mut rows: Vec<(&OrderEvent, i64, Option<i64>)> = orders.into_values().collect();
        rows.sort_by_key(|(event, _, _)| event.entry);
        let mut transaction = self.client.transaction()?;
        for chunk in rows.chunks(ROWS_PER_STATEMENT) {
            let statement = upsert_of(chunk.len());
            let statuses: Vec<&str> = chunk
                .iter()
                .map(|(event, _, _)| event.status.as_str())
                .collect();
            let mut params: Vec<&(dyn postgres::types::ToSql + Sync)> =
                Vec::with_capacity(chunk.len() * COLUMNS_PER_ROW);
            for ((event, created, until), status) in chunk.iter().zip(&statuses) {
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
                    until,
                    &event.variant,
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
        for (version, (migration, applied)) in (1..).zip(MIGRATIONS) {
            // A version recorded is applied again if the table lacks it: a
            // table dropped by hand is built again from the first version.
            let present: bool = client.query_one(applied, &[])?.get(0);
            if version > recorded || !present {
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
