//! The orders table upgraded in place, from schema version 1 to the latest
//! (2: the hold's deadline, `hold_until_ms`; 3: an order's `variant`), with
//! consumers of both versions
//! about: a table the previous consumer made and filled keeps every row
//! when the new consumer migrates it, new hold rows carry the deadline
//! `SECKILL.HOLDS` reports, entries without `until` (an older module) give
//! NULL, and the previous consumer's own SQL (its migration and its upsert,
//! replayed verbatim) still works on the migrated table and leaves the
//! deadline alone. With `SECKILL_ORDERS_PREVIOUS` naming a build of the
//! previous consumer, that binary itself is also run against the migrated
//! table, between two runs of the new one.

use postgres::{Client, NoTls};

/// The schema version this consumer brings a table to: 2 added the hold's
/// deadline, 3 the variant of an order on an item with variants.
const LATEST: i32 = 3;
use seckill_harness::postgres::Postgres;
use seckill_harness::{ok, Server};
use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

const GROUP: &str = "seckill-orders";
const DRAIN_DEADLINE: Duration = Duration::from_secs(60);

/// Environment variables the consumer reads its flags from: cleared, so
/// that only the flags a test passes count.
const CONSUMER_ENV: [&str; 10] = [
    "SECKILL_WAIT_REPLICAS",
    "SECKILL_WAIT_TIMEOUT_MS",
    "SECKILL_REDIS_URL",
    "SECKILL_POSTGRES_URL",
    "SECKILL_STREAMS",
    "SECKILL_GROUP",
    "SECKILL_CONSUMER",
    "SECKILL_CLAIM_IDLE_MS",
    "SECKILL_MAX_DELIVERIES",
    "SECKILL_CLAIM_PAGE",
];

/// Version 1 of the schema, as the previous consumer created it
/// (its only migration), verbatim.
const V1_TABLE: &str = "CREATE TABLE IF NOT EXISTS seckill_orders (
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
)";

/// The previous consumer's upsert of one row, verbatim.
const V1_UPSERT: &str = "INSERT INTO seckill_orders AS o
    (item, order_id, user_id, qty, status, stock_after,
     created_at_ms, updated_at_ms, last_entry_ms, last_entry_seq)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
    ON CONFLICT (item, order_id) DO UPDATE SET
        status = EXCLUDED.status,
        stock_after = EXCLUDED.stock_after,
        updated_at_ms = EXCLUDED.updated_at_ms,
        last_entry_ms = EXCLUDED.last_entry_ms,
        last_entry_seq = EXCLUDED.last_entry_seq
    WHERE (o.last_entry_ms, o.last_entry_seq)
        < (EXCLUDED.last_entry_ms, EXCLUDED.last_entry_seq)";

/// The previous consumer's schema step at every connection, statement for
/// statement: under the advisory lock, version 1 when the table is missing
/// or no version is recorded.
fn v1_migrate(client: &mut Client) -> Result<(), postgres::Error> {
    const SCHEMA_LOCK: i64 = 0x0073_6563_6b69_6c6c;
    client.batch_execute("SET lock_timeout = '10s'")?;
    client.execute("SELECT pg_advisory_lock($1)", &[&SCHEMA_LOCK])?;
    let mut result = (|| {
        client.batch_execute(
            "CREATE TABLE IF NOT EXISTS seckill_orders_schema (version integer NOT NULL)",
        )?;
        let recorded: i32 = client
            .query_opt("SELECT max(version) FROM seckill_orders_schema", &[])?
            .and_then(|row| row.get::<_, Option<i32>>(0))
            .unwrap_or(0);
        let table_exists: bool = client
            .query_one("SELECT to_regclass('seckill_orders') IS NOT NULL", &[])?
            .get(0);
        let current = if table_exists { recorded } else { 0 };
        if current < 1 {
            let mut transaction = client.transaction()?;
            transaction.batch_execute(V1_TABLE)?;
            if recorded < 1 {
                transaction.execute(
                    "INSERT INTO seckill_orders_schema (version) VALUES (1)",
                    &[],
                )?;
            }
            transaction.commit()?;
        }
        Ok(())
    })();
    result = result.and(
        client
            .execute("SELECT pg_advisory_unlock($1)", &[&SCHEMA_LOCK])
            .map(drop),
    );
    result.and(client.batch_execute("RESET lock_timeout"))
}

/// A row as the previous consumer writes it.
struct V1Row<'a> {
    item: &'a str,
    order_id: &'a str,
    user: &'a str,
    qty: i64,
    status: &'a str,
    stock: i64,
    at_ms: i64,
    entry: (i64, i64),
}

fn v1_upsert(client: &mut Client, row: &V1Row) -> u64 {
    client
        .execute(
            V1_UPSERT,
            &[
                &row.item,
                &row.order_id,
                &row.user,
                &row.qty,
                &row.status,
                &row.stock,
                &row.at_ms,
                &row.at_ms,
                &row.entry.0,
                &row.entry.1,
            ],
        )
        .expect("the previous consumer's upsert")
}

/// PostgreSQL, or the test returns early when it is not installed.
macro_rules! postgres_or_skip {
    () => {
        match Postgres::start() {
            Some(pg) => pg,
            None => {
                eprintln!("skipped: PostgreSQL is not installed (run `make deps`)");
                return;
            }
        }
    };
}

struct Consumer {
    child: Child,
    log: std::path::PathBuf,
}

impl Consumer {
    fn start(
        binary: &Path,
        dir: &Path,
        redis_url: &str,
        pg: &Postgres,
        stream: &str,
        name: &str,
    ) -> Consumer {
        let log = dir.join(format!("consumer-{name}.log"));
        let file = fs::File::create(&log).expect("create the consumer's log");
        let mut command = Command::new(binary);
        for var in CONSUMER_ENV {
            command.env_remove(var);
        }
        let child = command
            .args(["--redis-url", redis_url])
            .args(["--postgres-url", &pg.url()])
            .args(["--stream", stream])
            .args(["--group", GROUP])
            .args(["--consumer", name])
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("clone the log file"))
            .stderr(file)
            .spawn()
            .expect("start seckill-orders");
        Consumer { child, log }
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- consumer log ---\n{}", self.log());
        }
    }
}

fn new_consumer() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_seckill-orders"))
}

fn connect(pg: &Postgres) -> Client {
    Client::connect(&pg.url(), NoTls).expect("connect to PostgreSQL")
}

fn server_now_ms(con: &mut redis::Connection) -> i64 {
    let time: Vec<i64> = ok(con, &["TIME"]);
    time[0] * 1000 + time[1] / 1000
}

/// Every column of every row of `item` but the deadline, by order id.
fn rows_of(db: &mut Client, item: &str) -> HashMap<String, String> {
    db.query(
        "SELECT order_id, concat_ws('|', user_id, qty, status, stock_after, created_at_ms,
             updated_at_ms, last_entry_ms, last_entry_seq)
         FROM seckill_orders WHERE item = $1",
        &[&item],
    )
    .expect("read the rows")
    .iter()
    .map(|row| (row.get(0), row.get(1)))
    .collect()
}

/// `hold_until_ms` of every row of `item`, by order id.
fn deadlines_of(db: &mut Client, item: &str) -> HashMap<String, Option<i64>> {
    db.query(
        "SELECT order_id, hold_until_ms FROM seckill_orders WHERE item = $1",
        &[&item],
    )
    .expect("read the deadlines")
    .iter()
    .map(|row| (row.get(0), row.get(1)))
    .collect()
}

fn schema_version(db: &mut Client) -> i32 {
    db.query_one("SELECT max(version) FROM seckill_orders_schema", &[])
        .expect("read the schema version")
        .get(0)
}

/// Waits until the statuses of `item`'s rows are `expected`.
fn wait_for_statuses(
    pg: &Postgres,
    item: &str,
    expected: &HashMap<String, String>,
    consumer: &mut Consumer,
) {
    let until = Instant::now() + DRAIN_DEADLINE;
    loop {
        if let Ok(Some(status)) = consumer.child.try_wait() {
            panic!(
                "the consumer exited ({status}); its log:\n{}",
                consumer.log()
            );
        }
        let statuses: HashMap<String, String> = connect(pg)
            .query(
                "SELECT order_id, status FROM seckill_orders WHERE item = $1",
                &[&item],
            )
            .map(|rows| rows.iter().map(|row| (row.get(0), row.get(1))).collect())
            .unwrap_or_default();
        if &statuses == expected {
            return;
        }
        if Instant::now() >= until {
            panic!("the rows of {item} are {statuses:?}, not {expected:?}");
        }
        sleep(Duration::from_millis(150));
    }
}

/// A sale on the module, with what each order must end as and the
/// deadline `SECKILL.HOLDS` reported for each hold.
struct Sale {
    item: String,
    stream: String,
    statuses: HashMap<String, String>,
    deadlines: HashMap<String, i64>,
}

impl Sale {
    fn open(con: &mut redis::Connection, tag: &str) -> Sale {
        let item = format!("{{sku:{tag}}}");
        let stream = format!("{item}:orders");
        ok::<i64>(con, &["SECKILL.INIT", &item, "100000", "STREAM", &stream]);
        Sale {
            item,
            stream,
            statuses: HashMap::new(),
            deadlines: HashMap::new(),
        }
    }

    fn purchase(&mut self, con: &mut redis::Connection, id: &str) {
        let user = format!("user:{id}");
        assert!(ok::<i64>(con, &["SECKILL.DEDUCT", &self.item, &user, "1", "ID", id]) >= 0);
        self.statuses.insert(id.to_owned(), "purchased".to_owned());
    }

    /// A hold `hold` (`["HOLD", "600"]`, `["HOLDUNTIL", ms]`), and the
    /// deadline `SECKILL.HOLDS` reports for it.
    fn hold(&mut self, con: &mut redis::Connection, id: &str, hold: &[&str]) -> i64 {
        let user = format!("user:{id}");
        let mut args = vec!["SECKILL.DEDUCT", &self.item, &user, "1", "ID", id];
        args.extend_from_slice(hold);
        assert!(ok::<i64>(con, &args) >= 0);
        let holds: Vec<(String, String, i64, i64)> = ok(con, &["SECKILL.HOLDS", &self.item, &user]);
        let [(ref request, _, _, deadline)] = holds[..] else {
            panic!("one hold of {user}: {holds:?}");
        };
        assert_eq!(request, id);
        self.statuses.insert(id.to_owned(), "held".to_owned());
        self.deadlines.insert(id.to_owned(), deadline);
        deadline
    }

    fn confirm(&mut self, con: &mut redis::Connection, id: &str) {
        assert_eq!(ok::<i64>(con, &["SECKILL.CONFIRM", &self.item, id]), 1);
        self.statuses.insert(id.to_owned(), "confirmed".to_owned());
    }

    fn refund(&mut self, con: &mut redis::Connection, id: &str) {
        assert_eq!(ok::<i64>(con, &["SECKILL.REFUND", &self.item, id]), 1);
        self.statuses.insert(id.to_owned(), "refunded".to_owned());
    }

    /// Orders of every kind: purchases, holds confirmed, refunded, left
    /// to lapse in `lapse_ms` or left held, with relative and absolute
    /// deadlines.
    fn clicks(&mut self, con: &mut redis::Connection, prefix: &str, count: usize, lapse_ms: i64) {
        for index in 0..count {
            let id = format!("{prefix}-{index}");
            match index % 6 {
                0 => self.purchase(con, &id),
                1 => {
                    self.hold(con, &id, &["HOLD", "600"]);
                    self.confirm(con, &id);
                }
                2 => {
                    let until = (server_now_ms(con) + 600_000).to_string();
                    let deadline = self.hold(con, &id, &["HOLDUNTIL", &until]);
                    assert_eq!(deadline.to_string(), until);
                    self.refund(con, &id);
                }
                3 => {
                    let until = (server_now_ms(con) + lapse_ms).to_string();
                    self.hold(con, &id, &["HOLDUNTIL", &until]);
                    self.statuses.insert(id, "expired".to_owned());
                }
                4 => {
                    self.hold(con, &id, &["HOLD", "600"]);
                }
                _ => {
                    self.hold(con, &id, &["HOLDUNTIL", "4102444800000"]);
                }
            }
        }
    }

    /// The deadline each order's row must have: its hold's, NULL if none.
    fn expected_deadlines(&self) -> HashMap<String, Option<i64>> {
        self.statuses
            .keys()
            .map(|id| (id.clone(), self.deadlines.get(id).copied()))
            .collect()
    }
}

#[test]
fn a_table_of_the_previous_version_is_upgraded_in_place() {
    let pg = postgres_or_skip!();
    let mut db = connect(&pg);
    // The table as the previous consumer made it, with 300 orders it wrote
    // for an earlier sale, in every status.
    v1_migrate(&mut db).expect("the previous schema");
    let statuses = ["purchased", "held", "confirmed", "refunded", "expired"];
    for index in 0..300i64 {
        let order_id = format!("earlier-{index}");
        let user = format!("user:{}", index % 70);
        v1_upsert(
            &mut db,
            &V1Row {
                item: "{sku:earlier}",
                order_id: &order_id,
                user: &user,
                qty: 1 + index % 2,
                status: statuses[index as usize % statuses.len()],
                stock: 1000 - index,
                at_ms: 1_700_000_000_000 + index,
                entry: (1_700_000_000_000 + index, 0),
            },
        );
    }
    let before = rows_of(&mut db, "{sku:earlier}");
    assert_eq!(before.len(), 300);
    assert_eq!(schema_version(&mut db), 1);

    // The sale goes on under the new module, before the new consumer runs:
    // its first batch holds each order's hold and what followed it.
    let server = Server::start();
    let mut con = server.client();
    let mut sale = Sale::open(&mut con, "upgrade");
    sale.clicks(&mut con, "order", 120, 1_500);
    // A hold and its confirmation from an older module: no `until`.
    for (event, stock) in [("hold", "99999"), ("confirm", "99999")] {
        let at = server_now_ms(&mut con).to_string();
        ok::<String>(
            &mut con,
            &[
                "XADD",
                &sale.stream,
                "*",
                "event",
                event,
                "item",
                &sale.item,
                "user",
                "old",
                "qty",
                "1",
                "request",
                "old-module",
                "at",
                &at,
                "stock",
                stock,
            ],
        );
    }
    sale.statuses
        .insert("old-module".to_owned(), "confirmed".to_owned());

    let mut consumer = Consumer::start(
        new_consumer(),
        server.dir(),
        &server.url(),
        &pg,
        &sale.stream,
        "new",
    );
    wait_for_statuses(&pg, &sale.item, &sale.statuses, &mut consumer);

    assert_eq!(schema_version(&mut db), LATEST);
    assert_eq!(
        rows_of(&mut db, "{sku:earlier}"),
        before,
        "every row of the previous version is still there, unchanged"
    );
    assert!(
        deadlines_of(&mut db, "{sku:earlier}")
            .values()
            .all(Option::is_none),
        "rows from before the migration have no deadline"
    );
    let deadlines = deadlines_of(&mut db, &sale.item);
    assert_eq!(deadlines, sale.expected_deadlines());
    assert_eq!(
        deadlines
            .values()
            .filter(|deadline| deadline.is_some())
            .count(),
        100,
        "every hold row has its deadline, whatever it became"
    );
}

#[test]
fn the_previous_consumer_keeps_working_on_the_migrated_table() {
    let pg = postgres_or_skip!();
    let server = Server::start();
    let mut con = server.client();
    let mut db = connect(&pg);

    // The new consumer makes the table (the latest version) and writes holds.
    let mut sale = Sale::open(&mut con, "replay");
    sale.clicks(&mut con, "order", 12, 1_000);
    let mut consumer = Consumer::start(
        new_consumer(),
        server.dir(),
        &server.url(),
        &pg,
        &sale.stream,
        "new",
    );
    wait_for_statuses(&pg, &sale.item, &sale.statuses, &mut consumer);
    drop(consumer);
    assert_eq!(schema_version(&mut db), LATEST);
    let deadlines = deadlines_of(&mut db, &sale.item);
    assert_eq!(deadlines, sale.expected_deadlines());

    // The previous consumer's SQL, replayed: its schema step at connection
    // changes nothing (the table is newer than it knows)...
    let mut previous = connect(&pg);
    v1_migrate(&mut previous).expect("the previous schema step on a migrated table");
    assert_eq!(schema_version(&mut db), LATEST);
    assert_eq!(deadlines_of(&mut db, &sale.item), deadlines);
    // ... it moves a held order on, and the row keeps its deadline ...
    let held = "order-4";
    let deadline = deadlines[held].expect("order-4 is a hold");
    let updated = v1_upsert(
        &mut previous,
        &V1Row {
            item: &sale.item,
            order_id: held,
            user: "user:order-4",
            qty: 1,
            status: "confirmed",
            stock: 5,
            at_ms: i64::MAX - 1,
            entry: (i64::MAX - 1, 0),
        },
    );
    assert_eq!(updated, 1);
    // ... an older entry changes nothing ...
    let stale = v1_upsert(
        &mut previous,
        &V1Row {
            item: &sale.item,
            order_id: held,
            user: "user:order-4",
            qty: 1,
            status: "refunded",
            stock: 5,
            at_ms: 1,
            entry: (1, 0),
        },
    );
    assert_eq!(stale, 0);
    // ... and a hold it writes has no deadline.
    let inserted = v1_upsert(
        &mut previous,
        &V1Row {
            item: &sale.item,
            order_id: "by-previous",
            user: "someone",
            qty: 1,
            status: "held",
            stock: 4,
            at_ms: 1,
            entry: (1, 0),
        },
    );
    assert_eq!(inserted, 1);
    let row = db
        .query_one(
            "SELECT status, hold_until_ms FROM seckill_orders WHERE item = $1 AND order_id = $2",
            &[&sale.item, &held],
        )
        .expect("the updated row");
    assert_eq!(row.get::<_, String>(0), "confirmed");
    assert_eq!(row.get::<_, Option<i64>>(1), Some(deadline));
    let after = deadlines_of(&mut db, &sale.item);
    assert_eq!(after["by-previous"], None);
    assert_eq!(after.len(), deadlines.len() + 1);

    previous_binary_on_the_migrated_table(&pg, &server, &mut con);
}

/// The previous consumer's build itself, when `SECKILL_ORDERS_PREVIOUS`
/// names it: it takes over the group from the new consumer on a migrated
/// table, then the new one takes over again.
fn previous_binary_on_the_migrated_table(
    pg: &Postgres,
    server: &Server,
    con: &mut redis::Connection,
) {
    let previous = std::env::var_os("SECKILL_ORDERS_PREVIOUS").filter(|path| !path.is_empty());
    let Some(previous) = previous else {
        eprintln!("the previous consumer's binary not run: set SECKILL_ORDERS_PREVIOUS to it");
        return;
    };
    let previous = Path::new(&previous);
    let mut db = connect(pg);
    let mut sale = Sale::open(con, "mixed");
    sale.clicks(con, "first", 30, 1_000);
    let mut new = Consumer::start(
        new_consumer(),
        server.dir(),
        &server.url(),
        pg,
        &sale.stream,
        "new",
    );
    wait_for_statuses(pg, &sale.item, &sale.statuses, &mut new);
    drop(new);
    assert_eq!(deadlines_of(&mut db, &sale.item), sale.expected_deadlines());

    // The previous consumer on the migrated table: it moves the new
    // consumer's hold rows on and writes holds of its own, without
    // deadlines, since it knows no `until`.
    let mut old = Consumer::start(
        previous,
        server.dir(),
        &server.url(),
        pg,
        &sale.stream,
        "previous",
    );
    let held: Vec<String> = sale
        .statuses
        .iter()
        .filter(|(_, status)| *status == "held")
        .map(|(id, _)| id.clone())
        .collect();
    assert_eq!(held.len(), 10);
    for id in &held[..5] {
        sale.confirm(con, id);
    }
    for id in &held[5..7] {
        sale.refund(con, id);
    }
    let before = sale.deadlines.clone();
    sale.clicks(con, "second", 30, 1_000);
    wait_for_statuses(pg, &sale.item, &sale.statuses, &mut old);
    assert!(!old.log().contains("refused"), "{}", old.log());
    drop(old);
    let mut expected: HashMap<String, Option<i64>> = sale.expected_deadlines();
    for (id, deadline) in expected.iter_mut() {
        if !before.contains_key(id) {
            *deadline = None;
        }
    }
    assert_eq!(deadlines_of(&mut db, &sale.item), expected);

    // The new consumer again: its holds have their deadlines.
    let mut new = Consumer::start(
        new_consumer(),
        server.dir(),
        &server.url(),
        pg,
        &sale.stream,
        "new",
    );
    sale.clicks(con, "third", 30, 1_000);
    wait_for_statuses(pg, &sale.item, &sale.statuses, &mut new);
    for (id, deadline) in sale.expected_deadlines() {
        if id.starts_with("third-") {
            expected.insert(id, deadline);
        }
    }
    assert_eq!(deadlines_of(&mut db, &sale.item), expected);
}

/// The upgrade as it happens in a rolling deploy: the previous consumer
/// made the table (version 1) and keeps running while the new one starts,
/// migrates the table under it, and shares the group with it. Every order
/// ends with its status, whichever consumer wrote it; a hold row has the
/// deadline `SECKILL.HOLDS` reported, or none if the previous consumer wrote
/// it. Needs `SECKILL_ORDERS_PREVIOUS` (`make test` builds it).
#[test]
fn the_table_is_upgraded_while_the_previous_consumer_runs() {
    let pg = postgres_or_skip!();
    let previous = std::env::var_os("SECKILL_ORDERS_PREVIOUS").filter(|path| !path.is_empty());
    let Some(previous) = previous else {
        eprintln!("skipped: set SECKILL_ORDERS_PREVIOUS to a build of the previous consumer");
        return;
    };
    let server = Server::start();
    let mut con = server.client();
    let mut db = connect(&pg);

    let mut sale = Sale::open(&mut con, "rolling");
    sale.clicks(&mut con, "before", 30, 1_000);
    let mut old = Consumer::start(
        Path::new(&previous),
        server.dir(),
        &server.url(),
        &pg,
        &sale.stream,
        "previous",
    );
    wait_for_statuses(&pg, &sale.item, &sale.statuses, &mut old);
    assert_eq!(schema_version(&mut db), 1);

    // The new consumer starts beside it and migrates the table.
    let mut new = Consumer::start(
        new_consumer(),
        server.dir(),
        &server.url(),
        &pg,
        &sale.stream,
        "new",
    );
    // The clicks come once the new consumer reads the group: clicked
    // before, the previous one, reading already, could take them all.
    seckill_harness::wait_until(
        "the new consumer to read the group",
        Duration::from_secs(30),
        || {
            let consumers: Vec<Vec<redis::Value>> = ok(
                &mut con,
                &["XINFO", "CONSUMERS", &sale.stream, "seckill-orders"],
            );
            consumers.iter().any(|fields| {
                fields.iter().any(|field| {
                    redis::from_redis_value::<String>(field.clone()).as_deref() == Ok("new")
                })
            })
        },
    );
    for round in 0..4 {
        sale.clicks(&mut con, &format!("during-{round}"), 30, 1_000);
    }
    let held: Vec<String> = sale
        .statuses
        .iter()
        .filter(|(id, status)| id.starts_with("before-") && *status == "held")
        .map(|(id, _)| id.clone())
        .collect();
    for id in &held[..2] {
        sale.confirm(&mut con, id);
    }
    wait_for_statuses(&pg, &sale.item, &sale.statuses, &mut new);
    assert_eq!(schema_version(&mut db), LATEST);
    assert!(
        old.child.try_wait().expect("wait").is_none(),
        "{}",
        old.log()
    );
    for consumer in [&old, &new] {
        assert!(!consumer.log().contains("refused"), "{}", consumer.log());
    }
    let deadlines = deadlines_of(&mut db, &sale.item);
    assert_eq!(deadlines.len(), sale.statuses.len());
    for (id, deadline) in &deadlines {
        if let Some(deadline) = deadline {
            assert_eq!(Some(deadline), sale.deadlines.get(id), "{id}");
        }
    }
    // Both consumers took entries once the new one had started.
    let written_by_new = deadlines
        .iter()
        .filter(|(id, deadline)| id.starts_with("during-") && deadline.is_some())
        .count();
    assert!(written_by_new > 0, "{deadlines:?}");
}
