//! The consumer heals by itself and catches up fast: PostgreSQL or Redis
//! restarting under it mid-drain, a row PostgreSQL refuses, thousands of
//! entries a dead consumer left pending, consumers started together on a
//! fresh database, and a configuration it must refuse. Every test that runs
//! a sale ends the same way: the orders table equals what the module sold,
//! and nothing is left pending in the group.
//!
//! To catch the consumer mid-drain without racing it, a test holds a SHARE
//! lock on the table (reads go on, writes wait) while it adds more orders:
//! the consumer is then provably inside a transaction, with entries read but
//! not acknowledged, when the server under it goes away.

use postgres::{Client, NoTls};
use redis::Value;
use seckill_harness::postgres::Postgres;
use seckill_harness::{free_port, ok, Server};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

const GROUP: &str = "seckill-orders";
const DRAIN_DEADLINE: Duration = Duration::from_secs(60);
const STOCK: &str = "1000000";

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

// ---------------------------------------------------------------------------
// The consumer process.

struct Consumer {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Consumer {
    fn start(
        dir: &Path,
        redis_url: &str,
        postgres_url: &str,
        stream: &str,
        name: &str,
        extra: &[&str],
    ) -> Consumer {
        let log = dir.join(format!("consumer-{name}.log"));
        let file = fs::File::create(&log).expect("create the consumer's log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_seckill-orders"));
        for var in CONSUMER_ENV {
            command.env_remove(var);
        }
        let child = command
            .args(["--redis-url", redis_url])
            .args(["--postgres-url", postgres_url])
            .args(["--stream", stream])
            .args(["--consumer", name])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("clone the log file"))
            .stderr(file)
            .spawn()
            .expect("start seckill-orders");
        Consumer {
            name: name.to_owned(),
            child,
            log,
        }
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn log_lines(&self) -> usize {
        self.log().lines().count()
    }

    /// Fails the test at once if the consumer has exited.
    fn assert_running(&mut self, when: &str) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "consumer {} exited ({status}) {when}; its log:\n{}",
                self.name,
                self.log()
            );
        }
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- consumer {} log ---\n{}", self.name, self.log());
        }
    }
}

// ---------------------------------------------------------------------------
// A Redis server that comes back on the same port.

// ---------------------------------------------------------------------------
// The sale, and what the table must end as.

/// (user, qty, status) for every order the module accepted, by request id.
type Expected = HashMap<String, (String, i64, String)>;

struct Sale {
    item: String,
    stream: String,
    sold: Expected,
}

impl Sale {
    fn open(con: &mut redis::Connection, tag: &str) -> Sale {
        let item = format!("{{sku:{tag}}}");
        let stream = format!("{item}:orders");
        ok::<i64>(con, &["SECKILL.INIT", &item, STOCK, "STREAM", &stream]);
        Sale {
            item,
            stream,
            sold: Expected::new(),
        }
    }

    /// Shoppers' clicks: purchases, holds confirmed, refunded, left to
    /// lapse (in 300 ms) or left held.
    fn clicks(&mut self, con: &mut redis::Connection, range: std::ops::Range<usize>) {
        for index in range {
            self.click(con, index);
        }
    }

    fn click(&mut self, con: &mut redis::Connection, index: usize) {
        let user = format!("user:{}", index % 900);
        let id = format!("order:{index}");
        let qty = 1 + (index % 2) as i64;
        let qty_arg = qty.to_string();
        let soon;
        let mut args = vec!["SECKILL.DEDUCT", &self.item, &user, &qty_arg, "ID", &id];
        match index % 6 {
            2 | 3 | 5 => args.extend_from_slice(&["HOLD", "600"]),
            4 => {
                soon = (server_now_ms(con) + 300).to_string();
                args.extend_from_slice(&["HOLDUNTIL", &soon]);
            }
            _ => {}
        }
        let reply: i64 = ok(con, &args);
        if reply < 0 {
            return;
        }
        let status = match index % 6 {
            2 => {
                assert_eq!(ok::<i64>(con, &["SECKILL.CONFIRM", &self.item, &id]), 1);
                "confirmed"
            }
            3 => {
                assert_eq!(ok::<i64>(con, &["SECKILL.REFUND", &self.item, &id]), qty);
                "refunded"
            }
            4 => "expired",
            5 => "held",
            _ => "purchased",
        };
        self.sold.insert(id, (user, qty, status.to_owned()));
    }

    /// A plain purchase under request id `id`.
    fn purchase(&mut self, con: &mut redis::Connection, id: &str, user: &str) {
        let reply: i64 = ok(con, &["SECKILL.DEDUCT", &self.item, user, "1", "ID", id]);
        assert!(reply >= 0, "the purchase {id} was refused: {reply}");
        self.sold
            .insert(id.to_owned(), (user.to_owned(), 1, "purchased".to_owned()));
    }

    /// The module's counters agree with the orders recorded as sold.
    fn assert_module_agrees(&self, con: &mut redis::Connection) {
        let info: HashMap<String, Value> = ok(con, &["SECKILL.INFO", &self.item]);
        let number = |field: &str| match info.get(field) {
            Some(Value::Int(value)) => *value,
            other => panic!("SECKILL.INFO {field}: {other:?}"),
        };
        let units = |statuses: &[&str]| -> i64 {
            self.sold
                .values()
                .filter(|(_, _, status)| statuses.contains(&status.as_str()))
                .map(|(_, qty, _)| qty)
                .sum()
        };
        assert_eq!(number("held"), units(&["held"]), "units held");
        assert_eq!(
            number("sold") - number("refunded") - number("expired"),
            units(&["purchased", "confirmed", "held"]),
            "units sold for good or held"
        );
    }
}

fn server_now_ms(con: &mut redis::Connection) -> i64 {
    let time: Vec<i64> = ok(con, &["TIME"]);
    time[0] * 1000 + time[1] / 1000
}

fn redis_connection(url: &str) -> Result<redis::Connection, String> {
    redis::Client::open(url)
        .and_then(|client| client.get_connection_with_timeout(Duration::from_secs(2)))
        .map_err(|err| format!("Redis: {err}"))
}

/// A libpq connection string for database `db` of the cluster.
fn database_url(pg: &Postgres, db: &str) -> String {
    format!("host=127.0.0.1 port={} user=bench dbname={db}", pg.port())
}

/// The orders of `item` in the table.
fn orders_in(postgres_url: &str, item: &str) -> Result<Expected, String> {
    let mut client = Client::connect(postgres_url, NoTls).map_err(|err| err.to_string())?;
    let rows = client
        .query(
            "SELECT order_id, user_id, qty, status FROM seckill_orders WHERE item = $1",
            &[&item],
        )
        .map_err(|err| err.to_string())?;
    Ok(rows
        .iter()
        .map(|row| (row.get(0), (row.get(1), row.get(2), row.get(3))))
        .collect())
}

/// How the table differs from what was sold, or `None`.
fn difference(table: &Expected, sold: &Expected) -> Option<String> {
    if table == sold {
        return None;
    }
    let missing: Vec<&String> = sold.keys().filter(|id| !table.contains_key(*id)).collect();
    let extra: Vec<&String> = table.keys().filter(|id| !sold.contains_key(*id)).collect();
    let wrong: Vec<String> = sold
        .iter()
        .filter_map(|(id, want)| {
            let row = table.get(id)?;
            (row != want).then(|| format!("{id}: {row:?}, should be {want:?}"))
        })
        .collect();
    Some(format!(
        "{} rows for {} orders sold: {} missing {:?}, {} extra {:?}, {} wrong {:?}",
        table.len(),
        sold.len(),
        missing.len(),
        &missing[..missing.len().min(5)],
        extra.len(),
        &extra[..extra.len().min(5)],
        wrong.len(),
        &wrong[..wrong.len().min(5)],
    ))
}

/// `XPENDING stream group`: how many entries are delivered and not
/// acknowledged.
fn pending(redis_url: &str, stream: &str, group: &str) -> Result<i64, String> {
    let mut con = redis_connection(redis_url)?;
    let reply: Value = redis::cmd("XPENDING")
        .arg(stream)
        .arg(group)
        .query(&mut con)
        .map_err(|err| format!("XPENDING: {err}"))?;
    match reply {
        Value::Array(parts) => match parts.first() {
            Some(Value::Int(count)) => Ok(*count),
            other => Err(format!("XPENDING replied {other:?}")),
        },
        other => Err(format!("XPENDING replied {other:?}")),
    }
}

/// The group's last-delivered-id, from XINFO GROUPS.
fn last_delivered(redis_url: &str, stream: &str, group: &str) -> String {
    let mut con = redis_connection(redis_url).expect("connect to Redis");
    let groups: Vec<HashMap<String, Value>> = ok(&mut con, &["XINFO", "GROUPS", stream]);
    let text =
        |value: &Value| -> String { redis::from_redis_value(value.clone()).unwrap_or_default() };
    groups
        .iter()
        .find(|fields| fields.get("name").map(text).as_deref() == Some(group))
        .and_then(|fields| fields.get("last-delivered-id").map(text))
        .unwrap_or_else(|| panic!("no group {group} on {stream}"))
}

/// Waits until `check` passes, failing with its last complaint after
/// `deadline`.
fn eventually(what: &str, deadline: Duration, mut check: impl FnMut() -> Result<(), String>) {
    let until = Instant::now() + deadline;
    loop {
        match check() {
            Ok(()) => return,
            Err(why) if Instant::now() >= until => {
                panic!("timed out after {deadline:?} waiting for {what}: {why}")
            }
            Err(_) => sleep(Duration::from_millis(150)),
        }
    }
}

/// The end of every sale: the table equals `rows`, nothing is pending in
/// `group`, and the consumers are all still running.
fn assert_drained(
    redis_url: &str,
    postgres_url: &str,
    sale: &Sale,
    rows: &Expected,
    group: &str,
    consumers: &mut [&mut Consumer],
) {
    let mut check = || -> Result<(), String> {
        for consumer in consumers.iter_mut() {
            consumer.assert_running("before the drain completed");
        }
        let table = orders_in(postgres_url, &sale.item)?;
        if let Some(difference) = difference(&table, rows) {
            return Err(difference);
        }
        match pending(redis_url, &sale.stream, group)? {
            0 => Ok(()),
            count => Err(format!("{count} entries pending in {group}")),
        }
    };
    eventually(
        "the orders table to equal the sale, with nothing pending",
        DRAIN_DEADLINE,
        &mut check,
    );
    // Once nothing is pending, nothing moves any more.
    check().expect("the table or the group changed after the drain");
}

/// Opens a session holding a SHARE lock on the table: reads go on, the
/// consumer's writes wait until the session ends.
fn hold_table(postgres_url: &str) -> Client {
    let mut locker = Client::connect(postgres_url, NoTls).expect("connect to PostgreSQL");
    locker
        .batch_execute("BEGIN; LOCK TABLE seckill_orders IN SHARE MODE")
        .expect("lock the orders table");
    locker
}

/// Waits until some session waits for a lock: the consumer, inside a
/// transaction, with entries read and not acknowledged.
fn wait_for_a_blocked_writer(postgres_url: &str, consumer: &mut Consumer) {
    eventually(
        "the consumer to wait on the locked table",
        Duration::from_secs(30),
        || {
            consumer.assert_running("while the table was locked");
            let mut client = Client::connect(postgres_url, NoTls).map_err(|err| err.to_string())?;
            let row = client
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
                    &[],
                )
                .map_err(|err| err.to_string())?;
            match row.get::<_, i64>(0) {
                0 => Err("no session waits on a lock".into()),
                _ => Ok(()),
            }
        },
    );
}

/// The log says, somewhere, that the connection came back.
fn assert_logs_recovery(consumer: &Consumer) {
    let log = consumer.log().to_lowercase();
    assert!(
        ["reconnect", "back", "again", "restored", "recovered"]
            .iter()
            .any(|word| log.contains(word)),
        "the log never says the connection came back:\n{}",
        consumer.log()
    );
}

// ---------------------------------------------------------------------------
// The tests.

#[test]
fn a_postgres_restart_mid_drain_heals_by_itself() {
    let mut pg = postgres_or_skip!();
    let server = Server::start();
    let mut con = server.client();
    let mut sale = Sale::open(&mut con, "pg-restart");
    sale.clicks(&mut con, 0..1_000);
    let mut consumer = Consumer::start(
        server.dir(),
        &server.url(),
        &pg.url(),
        &sale.stream,
        "survivor",
        &[],
    );
    eventually("the first orders to land", DRAIN_DEADLINE, || {
        consumer.assert_running("during the first drain");
        difference(&orders_in(&pg.url(), &sale.item)?, &sale.sold).map_or(Ok(()), Err)
    });

    // A backlog of a few thousand entries, and the consumer caught inside
    // its first transaction on it.
    let locker = hold_table(&pg.url());
    sale.clicks(&mut con, 1_000..4_000);
    wait_for_a_blocked_writer(&pg.url(), &mut consumer);
    let written = orders_in(&pg.url(), &sale.item)
        .expect("read the table")
        .len();
    assert!(
        written > 0 && written < sale.sold.len(),
        "{written} of {} rows written",
        sale.sold.len()
    );

    let lines_before = consumer.log_lines();
    pg.stop();
    drop(locker);
    sleep(Duration::from_secs(1));
    // New orders keep coming while PostgreSQL is away; they are not read.
    let delivered = last_delivered(&server.url(), &sale.stream, GROUP);
    sale.clicks(&mut con, 4_000..4_300);
    sleep(Duration::from_secs(2));
    consumer.assert_running("while PostgreSQL was down");
    assert_eq!(
        last_delivered(&server.url(), &sale.stream, GROUP),
        delivered,
        "the consumer read new entries while PostgreSQL was down"
    );
    let outage_lines = consumer.log_lines() - lines_before;
    assert!(
        outage_lines < 5,
        "{outage_lines} log lines during one outage:\n{}",
        consumer.log()
    );
    pg.start_again();

    // Sales go on after the outage, too.
    sale.clicks(&mut con, 4_300..4_600);
    let rows = sale.sold.clone();
    assert_drained(
        &server.url(),
        &pg.url(),
        &sale,
        &rows,
        GROUP,
        &mut [&mut consumer],
    );
    sale.assert_module_agrees(&mut con);

    let log = consumer.log();
    let mentions = log
        .lines()
        .filter(|line| line.contains("PostgreSQL"))
        .count();
    assert!(
        mentions >= 1,
        "the log never mentions PostgreSQL going away:\n{log}"
    );
    assert!(
        mentions < 5,
        "the outage should be logged once, not at every attempt: \
         {mentions} lines mention PostgreSQL:\n{log}"
    );
    assert_logs_recovery(&consumer);
}

#[test]
fn a_redis_restart_heals_by_itself() {
    let pg = postgres_or_skip!();
    let mut server = Server::start_with(&["--appendonly", "yes"]);
    let url = server.url();
    let mut con = server.client();
    let mut sale = Sale::open(&mut con, "redis-restart");
    sale.clicks(&mut con, 0..1_000);
    let mut consumer =
        Consumer::start(server.dir(), &url, &pg.url(), &sale.stream, "survivor", &[]);
    eventually("the first orders to land", DRAIN_DEADLINE, || {
        consumer.assert_running("during the first drain");
        difference(&orders_in(&pg.url(), &sale.item)?, &sale.sold).map_or(Ok(()), Err)
    });

    // The consumer is caught inside a transaction; Redis goes away under
    // it, and the transaction commits while Redis is down, so that the
    // acknowledgement cannot be made.
    let mut locker = hold_table(&pg.url());
    sale.clicks(&mut con, 1_000..3_000);
    wait_for_a_blocked_writer(&pg.url(), &mut consumer);
    drop(con);
    let lines_before = consumer.log_lines();
    server.stop();
    locker.batch_execute("COMMIT").expect("release the table");
    sleep(Duration::from_secs(2));
    consumer.assert_running("while Redis was down");
    let outage_lines = consumer.log_lines() - lines_before;
    assert!(
        outage_lines < 5,
        "{outage_lines} log lines during one outage:\n{}",
        consumer.log()
    );
    server.start_again();
    assert_eq!(server.url(), url);

    let mut con = server.client();
    sale.clicks(&mut con, 3_000..3_300);
    let rows = sale.sold.clone();
    assert_drained(&url, &pg.url(), &sale, &rows, GROUP, &mut [&mut consumer]);
    sale.assert_module_agrees(&mut con);
    assert_logs_recovery(&consumer);
}

#[test]
fn a_poison_row_is_dead_lettered_with_its_sqlstate() {
    let pg = postgres_or_skip!();
    let server = Server::start();
    let mut con = server.client();

    // The consumer creates the table; a first one on another stream does,
    // and then PostgreSQL is told to refuse one order.
    {
        let mut warmup = Consumer::start(
            server.dir(),
            &server.url(),
            &pg.url(),
            "{sku:poison}:warmup",
            "warmup",
            &[],
        );
        eventually(
            "the consumer to create the table",
            Duration::from_secs(30),
            || {
                warmup.assert_running("before creating the table");
                match pg
                    .sql("SELECT to_regclass('seckill_orders') IS NOT NULL")
                    .trim()
                {
                    "t" => Ok(()),
                    _ => Err("no table seckill_orders".into()),
                }
            },
        );
    }
    pg.sql(
        "ALTER TABLE seckill_orders ADD CONSTRAINT no_poison \
         CHECK (order_id <> 'order:poison')",
    );

    // A backlog with the poison order in the middle, so that it shares a
    // batch with good ones.
    let mut sale = Sale::open(&mut con, "poison");
    sale.clicks(&mut con, 0..300);
    sale.purchase(&mut con, "order:poison", "user:poison");
    sale.clicks(&mut con, 300..600);
    let entries: Vec<(String, HashMap<String, String>)> =
        ok(&mut con, &["XRANGE", &sale.stream, "-", "+"]);
    let (poison_id, poison_fields) = entries
        .iter()
        .find(|(_, fields)| fields.get("request").map(String::as_str) == Some("order:poison"))
        .expect("the poison order's entry")
        .clone();

    let mut consumer = Consumer::start(
        server.dir(),
        &server.url(),
        &pg.url(),
        &sale.stream,
        "taster",
        &["--max-deliveries", "2", "--claim-idle-ms", "200"],
    );
    let mut rows = sale.sold.clone();
    rows.remove("order:poison");
    assert_drained(
        &server.url(),
        &pg.url(),
        &sale,
        &rows,
        GROUP,
        &mut [&mut consumer],
    );
    sale.assert_module_agrees(&mut con);

    let dead: Vec<(String, HashMap<String, String>)> = ok(
        &mut con,
        &["XRANGE", &format!("{}:dead", sale.stream), "-", "+"],
    );
    assert_eq!(dead.len(), 1, "dead letters: {dead:?}");
    let letter = &dead[0].1;
    let field = |name: &str| {
        letter
            .get(name)
            .unwrap_or_else(|| panic!("the dead letter has no field {name}: {letter:?}"))
            .as_str()
    };
    assert_eq!(field("stream"), sale.stream);
    assert_eq!(field("id"), poison_id);
    assert_eq!(field("sqlstate"), "23514");
    assert_eq!(field("constraint"), "no_poison");
    assert!(
        field("error").contains("no_poison"),
        "the error is not the database's message: {letter:?}"
    );
    for (name, value) in &poison_fields {
        assert_eq!(field(name), value, "original field {name}");
    }
}

#[test]
fn pending_entries_of_a_dead_consumer_are_all_reclaimed() {
    let pg = postgres_or_skip!();
    let server = Server::start();
    let mut con = server.client();
    let mut sale = Sale::open(&mut con, "reclaim");
    ok::<String>(
        &mut con,
        &["XGROUP", "CREATE", &sale.stream, GROUP, "0", "MKSTREAM"],
    );
    for index in 0..2_500 {
        sale.purchase(
            &mut con,
            &format!("order:{index}"),
            &format!("user:{}", index % 900),
        );
    }
    assert_eq!(ok::<i64>(&mut con, &["XLEN", &sale.stream]), 2_500);

    // A consumer reads everything and dies before acknowledging anything.
    let _: Value = ok(
        &mut con,
        &[
            "XREADGROUP",
            "GROUP",
            GROUP,
            "dead-one",
            "COUNT",
            "2500",
            "STREAMS",
            &sale.stream,
            ">",
        ],
    );
    assert_eq!(pending(&server.url(), &sale.stream, GROUP), Ok(2_500));

    let mut consumer = Consumer::start(
        server.dir(),
        &server.url(),
        &pg.url(),
        &sale.stream,
        "heir",
        &["--claim-idle-ms", "100", "--claim-page", "100"],
    );
    let rows = sale.sold.clone();
    assert_eq!(rows.len(), 2_500);
    assert_drained(
        &server.url(),
        &pg.url(),
        &sale,
        &rows,
        GROUP,
        &mut [&mut consumer],
    );
    sale.assert_module_agrees(&mut con);
}

#[test]
fn two_consumers_started_together_both_run() {
    let pg = postgres_or_skip!();
    let server = Server::start();
    let mut con = server.client();
    let mut sale = Sale::open(&mut con, "twins");
    sale.clicks(&mut con, 0..1_500);

    // Each fresh database (no table yet) gets a pair of consumers, in its
    // own group, started at the same instant: three tries at the race.
    let databases = ["fresh_a", "fresh_b", "fresh_c"];
    for db in databases {
        pg.sql(&format!("CREATE DATABASE {db}"));
    }
    let mut consumers: Vec<(String, String, Vec<Consumer>)> = Vec::new();
    for db in databases {
        let group = format!("twins-{db}");
        let url = database_url(&pg, db);
        let pair = ["a", "b"]
            .iter()
            .map(|side| {
                Consumer::start(
                    server.dir(),
                    &server.url(),
                    &url,
                    &sale.stream,
                    &format!("{db}-{side}"),
                    &["--group", &group],
                )
            })
            .collect();
        consumers.push((url, group, pair));
    }
    sale.clicks(&mut con, 1_500..2_000);

    let rows = sale.sold.clone();
    for (url, group, pair) in &mut consumers {
        let mut running: Vec<&mut Consumer> = pair.iter_mut().collect();
        assert_drained(&server.url(), url, &sale, &rows, group, &mut running);
    }
    for (_, _, pair) in &mut consumers {
        for consumer in pair {
            consumer.assert_running("after the drain");
        }
    }
    sale.assert_module_agrees(&mut con);
}

/// Runs the consumer with `args`; it must exit with code 2 and say why.
fn assert_refused(args: &[&str]) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_seckill-orders"));
    for var in CONSUMER_ENV {
        command.env_remove(var);
    }
    let mut child = command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start seckill-orders");
    let deadline = Instant::now() + Duration::from_secs(15);
    while matches!(child.try_wait(), Ok(None)) {
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().expect("reap the consumer");
            panic!(
                "{args:?}: still running after 15 s; a bad configuration must be refused \
                 before connecting anywhere\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("reap the consumer");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(2), "{args:?}: {said}");
    assert!(
        !said.trim().is_empty(),
        "{args:?}: exit 2 without a message"
    );
}

#[test]
fn a_bad_configuration_exits_with_code_2() {
    // Nothing listens on these: a consumer that tried them would wait.
    let redis_url = format!("redis://127.0.0.1:{}/", free_port());
    let postgres_url = format!(
        "host=127.0.0.1 port={} user=bench dbname=postgres",
        free_port()
    );
    let stream = "{sku:config}:orders";
    assert_refused(&["--redis-url", &redis_url, "--stream", stream]);
    assert_refused(&["--redis-url", &redis_url, "--postgres-url", &postgres_url]);
    assert_refused(&[
        "--redis-url",
        "not a url at all",
        "--postgres-url",
        &postgres_url,
        "--stream",
        stream,
    ]);
    assert_refused(&[
        "--redis-url",
        &redis_url,
        "--postgres-url",
        "host=127.0.0.1 port=not-a-port",
        "--stream",
        stream,
    ]);
    assert_refused(&[
        "--redis-url",
        &redis_url,
        "--postgres-url",
        &postgres_url,
        "--stream",
        stream,
        "--claim-page",
        "many",
    ]);
}

/// Dead letters of `stream`, each as its fields.
fn dead_letters(con: &mut redis::Connection, stream: &str) -> Vec<HashMap<String, Vec<u8>>> {
    let dead = format!("{stream}:dead");
    let entries: Vec<(String, HashMap<String, Vec<u8>>)> = ok(con, &["XRANGE", &dead, "-", "+"]);
    entries.into_iter().map(|(_, fields)| fields).collect()
}

/// An entry whose fields are not UTF-8 (the module takes any bytes as a
/// user id) is dead-lettered with its bytes, never acknowledged unseen.
#[test]
fn an_entry_that_is_not_utf8_is_dead_lettered_not_lost() {
    let pg = postgres_or_skip!();
    let server = Server::start();
    let mut con = server.client();
    let mut sale = Sale::open(&mut con, "latin1");
    sale.clicks(&mut con, 0..20);
    let user: &[u8] = b"caf\xe9";
    let reply: i64 = redis::cmd("SECKILL.DEDUCT")
        .arg(&sale.item)
        .arg(user)
        .arg(1)
        .arg("ID")
        .arg("order:latin1")
        .query(&mut con)
        .expect("a purchase by a non-UTF-8 user");
    assert!(reply >= 0);
    let mut consumer = Consumer::start(
        server.dir(),
        &server.url(),
        &pg.url(),
        &sale.stream,
        "reader",
        &["--max-deliveries", "1"],
    );
    let rows = sale.sold.clone();
    assert_drained(
        &server.url(),
        &pg.url(),
        &sale,
        &rows,
        GROUP,
        &mut [&mut consumer],
    );
    let dead = dead_letters(&mut con, &sale.stream);
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].get("user").map(Vec::as_slice), Some(user));
    assert_eq!(
        dead[0].get("request").map(Vec::as_slice),
        Some(b"order:latin1".as_slice())
    );
}

/// A dead-letter stream that cannot take the entry (here a key of another
/// type) leaves the entry pending rather than acknowledged and lost, and
/// the entry goes there once it can.
#[test]
fn a_dead_letter_that_cannot_be_written_leaves_the_entry_pending() {
    let pg = postgres_or_skip!();
    let server = Server::start();
    let mut con = server.client();
    let mut sale = Sale::open(&mut con, "nodead");
    let dead = format!("{}:dead", sale.stream);
    ok::<String>(&mut con, &["SET", &dead, "not a stream"]);
    ok::<String>(&mut con, &["XADD", &sale.stream, "*", "event", "garbage"]);
    sale.clicks(&mut con, 0..10);
    let mut consumer = Consumer::start(
        server.dir(),
        &server.url(),
        &pg.url(),
        &sale.stream,
        "buryer",
        &["--max-deliveries", "1", "--claim-idle-ms", "100"],
    );
    eventually("the good orders to land", DRAIN_DEADLINE, || {
        consumer.assert_running("while the dead letter is refused");
        let table = orders_in(&pg.url(), &sale.item)?;
        difference(&table, &sale.sold).map_or(Ok(()), Err)
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        pending(&server.url(), &sale.stream, GROUP).expect("XPENDING"),
        1,
        "the unreadable entry was acknowledged without a dead letter"
    );
    ok::<i64>(&mut con, &["DEL", &dead]);
    let rows = sale.sold.clone();
    assert_drained(
        &server.url(),
        &pg.url(),
        &sale,
        &rows,
        GROUP,
        &mut [&mut consumer],
    );
    assert_eq!(dead_letters(&mut con, &sale.stream).len(), 1);
}

/// The orders table dropped under a running consumer: it is built again,
/// every order lands, and the outage is logged once, not per attempt.
#[test]
fn a_dropped_table_is_built_again_without_a_reconnect_storm() {
    let pg = postgres_or_skip!();
    let server = Server::start();
    let mut con = server.client();
    let mut sale = Sale::open(&mut con, "dropped");
    sale.clicks(&mut con, 0..50);
    let mut consumer = Consumer::start(
        server.dir(),
        &server.url(),
        &pg.url(),
        &sale.stream,
        "rebuilder",
        &[],
    );
    let rows = sale.sold.clone();
    assert_drained(
        &server.url(),
        &pg.url(),
        &sale,
        &rows,
        GROUP,
        &mut [&mut consumer],
    );
    let lines_before = consumer.log_lines();
    pg.sql("DROP TABLE seckill_orders");
    sale.clicks(&mut con, 50..100);
    std::thread::sleep(Duration::from_secs(2));
    // The rows from before the drop are gone with the table; those since
    // must land in the table built again.
    let since: Expected = sale
        .sold
        .iter()
        .filter(|(id, _)| !rows.contains_key(*id))
        .map(|(id, row)| (id.clone(), row.clone()))
        .collect();
    assert_drained(
        &server.url(),
        &pg.url(),
        &sale,
        &since,
        GROUP,
        &mut [&mut consumer],
    );
    let new_lines = consumer.log_lines() - lines_before;
    assert!(
        new_lines <= 6,
        "{new_lines} log lines for one outage:\n{}",
        consumer.log()
    );
}

/// A Redis that answers but cannot do the work (the stream key holds a
/// string: WRONGTYPE) is logged with its cause, once, not retried silently.
#[test]
fn a_redis_error_that_persists_is_logged_with_its_cause() {
    let pg = postgres_or_skip!();
    let server = Server::start();
    let mut con = server.client();
    ok::<String>(&mut con, &["SET", "{sku:wrong}:orders", "a string"]);
    let mut consumer = Consumer::start(
        server.dir(),
        &server.url(),
        &pg.url(),
        "{sku:wrong}:orders",
        "puzzled",
        &[],
    );
    eventually("the cause in the log", Duration::from_secs(20), || {
        consumer.assert_running("while Redis refuses");
        if consumer.log().contains("WRONGTYPE") {
            Ok(())
        } else {
            Err(consumer.log())
        }
    });
    std::thread::sleep(Duration::from_secs(2));
    let mentions = consumer.log().matches("WRONGTYPE").count();
    assert_eq!(mentions, 1, "{}", consumer.log());
}

/// The PostgreSQL backends serving seckill-orders sessions.
fn consumer_backends(postgres_url: &str) -> Vec<i32> {
    let Ok(mut client) = Client::connect(postgres_url, NoTls) else {
        return Vec::new();
    };
    client
        .query(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'seckill-orders'",
            &[],
        )
        .map(|rows| rows.iter().map(|row| row.get(0)).collect())
        .unwrap_or_default()
}

fn signal(pids: &[i32], signal: &str) {
    for pid in pids {
        let _ = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status();
    }
}

/// A PostgreSQL backend that stops answering but keeps its connection (a
/// stopped process: TCP still acknowledges, no socket timeout fires): the
/// consumer gives up on it after its reply deadline, writes through a new
/// connection, and drains.
#[test]
fn a_hung_postgres_connection_is_given_up_on() {
    let pg = postgres_or_skip!();
    let server = Server::start();
    let mut con = server.client();
    let mut sale = Sale::open(&mut con, "hung");
    sale.clicks(&mut con, 0..20);
    let mut consumer = Consumer::start(
        server.dir(),
        &server.url(),
        &pg.url(),
        &sale.stream,
        "patient",
        &[],
    );
    let rows = sale.sold.clone();
    assert_drained(
        &server.url(),
        &pg.url(),
        &sale,
        &rows,
        GROUP,
        &mut [&mut consumer],
    );
    let hung = consumer_backends(&pg.url());
    assert!(
        !hung.is_empty(),
        "no seckill-orders session in pg_stat_activity"
    );
    signal(&hung, "-STOP");
    sale.clicks(&mut con, 20..60);
    let rows = sale.sold.clone();
    let drained = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        assert_drained(
            &server.url(),
            &pg.url(),
            &sale,
            &rows,
            GROUP,
            &mut [&mut consumer],
        );
    }));
    signal(&hung, "-CONT");
    if let Err(panic) = drained {
        std::panic::resume_unwind(panic);
    }
    assert!(
        consumer.log().contains("no reply within"),
        "{}",
        consumer.log()
    );
}
