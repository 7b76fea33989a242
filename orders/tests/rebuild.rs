//! `seckill-orders rebuild` against a real redis-server and PostgreSQL: a
//! sale drained into the table, the item deleted and built again from the
//! rows (same counters, every request id and buyer answering as before,
//! then sold out to the last unit); a rebuild killed with SIGKILL at random
//! points and run again (the same item every time, never visible half
//! built); and the refusals.

use postgres::{Client, NoTls};
use seckill_harness::postgres::Postgres;
use seckill_harness::{ok, wait_until, Server};
use std::collections::{BTreeMap, HashMap};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const BINARY: &str = env!("CARGO_BIN_EXE_seckill-orders");

/// A consumer process, stopped when dropped (a failed test included).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_consumer(server: &Server, pg: &Postgres, stream: &str, name: &str) -> Running {
    let log = std::fs::File::create(server.dir().join(format!("{name}.log"))).expect("log file");
    let child = Command::new(BINARY)
        .args(["--redis-url", &server.url()])
        .args(["--postgres-url", &pg.url()])
        .args(["--stream", stream])
        .args(["--consumer", name])
        .args(["--claim-idle-ms", "500"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start seckill-orders");
    Running(child)
}

fn rebuild_command(server: &Server, pg: &Postgres, args: &[&str]) -> Command {
    let mut command = Command::new(BINARY);
    command
        .arg("rebuild")
        .args(args)
        .env("SECKILL_REDIS_URL", server.url())
        .env("SECKILL_POSTGRES_URL", pg.url())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn rebuild(server: &Server, pg: &Postgres, args: &[&str]) -> Output {
    rebuild_command(server, pg, args)
        .output()
        .expect("run seckill-orders rebuild")
}

fn text(output: &Output) -> String {
    format!(
        "status {}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn server_now_ms(con: &mut redis::Connection) -> i64 {
    let time: Vec<i64> = ok(con, &["TIME"]);
    time[0] * 1000 + time[1] / 1000
}

fn info(con: &mut redis::Connection, item: &str) -> BTreeMap<String, redis::Value> {
    let pairs: Vec<(String, redis::Value)> = ok(con, &["SECKILL.INFO", item]);
    pairs.into_iter().collect()
}

fn number(info: &BTreeMap<String, redis::Value>, field: &str) -> i64 {
    match info.get(field) {
        Some(redis::Value::Int(value)) => *value,
        other => panic!("{field}: {other:?}"),
    }
}

/// Every record of a full SECKILL.SCAN, in its order.
fn scan(con: &mut redis::Connection, item: &str) -> Vec<Vec<redis::Value>> {
    let mut records = Vec::new();
    let mut cursor = "0".to_owned();
    loop {
        let (next, page): (String, Vec<Vec<redis::Value>>) =
            ok(con, &["SECKILL.SCAN", item, &cursor, "COUNT", "1000"]);
        records.extend(page);
        if next == "0" {
            return records;
        }
        cursor = next;
    }
}

/// What one order must end as in the table.
#[derive(Clone, Debug, PartialEq)]
struct Order {
    user: String,
    qty: i64,
    status: String,
    reply: i64,
}

type Orders = HashMap<String, Order>;

fn rows(pg: &Postgres, item: &str) -> Vec<(String, String, i64, String)> {
    let mut client = Client::connect(&pg.url(), NoTls).expect("connect to PostgreSQL");
    client
        .query(
            "SELECT order_id, user_id, qty, status FROM seckill_orders WHERE item = $1",
            &[&item],
        )
        .unwrap_or_default()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3)))
        .collect()
}

/// Units the table counts as held now: purchased, confirmed, held.
fn live_units(pg: &Postgres, item: &str) -> (i64, HashMap<String, i64>) {
    let mut per_user = HashMap::new();
    let mut total = 0;
    for (_, user, qty, status) in rows(pg, item) {
        if matches!(status.as_str(), "purchased" | "confirmed" | "held") {
            total += qty;
            *per_user.entry(user).or_insert(0) += qty;
        }
    }
    (total, per_user)
}

fn drained(con: &mut redis::Connection, stream: &str) -> bool {
    let groups: Vec<HashMap<String, redis::Value>> = ok(con, &["XINFO", "GROUPS", stream]);
    groups.iter().all(|group| {
        matches!(group.get("pending"), Some(redis::Value::Int(0)))
            && matches!(group.get("lag"), Some(redis::Value::Int(0)))
    })
}

/// One shopper's click `index` on the sale of the first test.
fn click(
    con: &mut redis::Connection,
    item: &str,
    index: usize,
    orders: &Mutex<Orders>,
    plain: &Mutex<Vec<(String, i64)>>,
) {
    let user = format!("user:{}", index % 600);
    let id = format!("order:{index:05}");
    let qty = 1 + (index % 2) as i64;
    let qty_arg = qty.to_string();
    let soon = (server_now_ms(con) + 300).to_string();
    let mut args = vec!["SECKILL.DEDUCT", item, &user, &qty_arg];
    match index % 7 {
        6 => {}
        _ => args.extend_from_slice(&["ID", &id]),
    }
    match index % 7 {
        2 | 3 | 5 => args.extend_from_slice(&["HOLD", "600"]),
        4 => args.extend_from_slice(&["HOLDUNTIL", &soon]),
        _ => {}
    }
    let reply: i64 = ok(con, &args);
    if reply < 0 {
        return;
    }
    let status = match index % 7 {
        2 => {
            assert_eq!(ok::<i64>(con, &["SECKILL.CONFIRM", item, &id]), 1);
            "confirmed"
        }
        3 => {
            assert_eq!(ok::<i64>(con, &["SECKILL.REFUND", item, &id]), qty);
            "refunded"
        }
        4 => "expired",
        5 => "held",
        6 => {
            plain.lock().expect("plain").push((user, qty));
            return;
        }
        _ => {
            if index.is_multiple_of(11) {
                assert_eq!(ok::<i64>(con, &["SECKILL.REFUND", item, &id]), qty);
                "refunded"
            } else {
                "purchased"
            }
        }
    };
    orders.lock().expect("orders").insert(
        id,
        Order {
            user,
            qty,
            status: status.to_owned(),
            reply,
        },
    );
}

#[test]
fn a_deleted_item_is_rebuilt_from_its_rows_and_sells_out_exactly() {
    const ITEM: &str = "{sku:rb}";
    const STREAM: &str = "{sku:rb}:orders";
    const SUPPLY: i64 = 2_000;
    let pg = Postgres::start().expect("PostgreSQL is not installed: run `make deps`");
    let server = Server::start();
    let mut con = server.client();
    let supply = SUPPLY.to_string();
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.INIT",
            ITEM,
            &supply,
            "LIMIT",
            "3",
            "STREAM",
            STREAM,
        ],
    );
    let consumer = start_consumer(&server, &pg, STREAM, "first");

    let orders = Arc::new(Mutex::new(Orders::new()));
    let plain = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..4)
        .map(|client| {
            let (url, orders, plain) = (server.url(), Arc::clone(&orders), Arc::clone(&plain));
            thread::spawn(move || {
                let mut con = redis::Client::open(url)
                    .and_then(|c| c.get_connection())
                    .expect("connect");
                for index in (0..1_100).filter(|i| i % 4 == client) {
                    click(&mut con, ITEM, index, &orders, &plain);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("client thread");
    }
    let orders = orders.lock().expect("orders").clone();
    let plain = plain.lock().expect("plain").clone();
    assert!(orders.len() > 500, "only {} orders", orders.len());
    assert!(!plain.is_empty());
    for status in ["purchased", "confirmed", "refunded", "expired", "held"] {
        assert!(
            orders.values().any(|order| order.status == status),
            "{status}"
        );
    }

    // Drained: every order with an id as it ended, every plain purchase.
    wait_until(
        "the table to hold the sale",
        Duration::from_secs(60),
        || {
            let rows = rows(&pg, ITEM);
            let by_id: Orders = rows
                .iter()
                .filter(|(id, ..)| !id.starts_with("entry:"))
                .map(|(id, user, qty, status)| {
                    let reply = orders.get(id).map_or(-100, |order| order.reply);
                    (
                        id.clone(),
                        Order {
                            user: user.clone(),
                            qty: *qty,
                            status: status.clone(),
                            reply,
                        },
                    )
                })
                .collect();
            by_id == orders && rows.len() == orders.len() + plain.len()
        },
    );
    wait_until("the stream to be drained", Duration::from_secs(30), || {
        drained(&mut con, STREAM)
    });

    let before = info(&mut con, ITEM);
    let users: Vec<String> = (0..600).map(|user| format!("user:{user}")).collect();
    let bought: Vec<i64> = users
        .iter()
        .map(|user| ok(&mut con, &["SECKILL.BOUGHT", ITEM, user]))
        .collect();
    ok::<i64>(&mut con, &["DEL", ITEM]);

    let output = rebuild(
        &server,
        &pg,
        &[
            "--item", ITEM, "--supply", &supply, "--limit", "3", "--stream", STREAM,
        ],
    );
    assert!(output.status.success(), "{}", text(&output));
    let summary = String::from_utf8_lossy(&output.stdout);
    assert!(
        summary.starts_with(&format!("rebuilt {ITEM}: ")) && summary.contains("records imported"),
        "{summary}"
    );

    // The counters the rows know are all of them here: no ADD, no TAKE.
    let after = info(&mut con, ITEM);
    assert_eq!(after, before);
    let bought_after: Vec<i64> = users
        .iter()
        .map(|user| ok(&mut con, &["SECKILL.BOUGHT", ITEM, user]))
        .collect();
    assert_eq!(bought_after, bought);
    for (id, order) in &orders {
        let qty = order.qty.to_string();
        let reply: i64 = ok(
            &mut con,
            &["SECKILL.DEDUCT", ITEM, &order.user, &qty, "ID", id],
        );
        let expected = match order.status.as_str() {
            "refunded" | "expired" => -4,
            _ => order.reply,
        };
        assert_eq!(reply, expected, "{id}: {order:?}");
    }
    assert_eq!(info(&mut con, ITEM), before, "replays changed nothing");

    // Sold out to the last unit by concurrent buyers, old and new.
    let attempts = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..4usize)
        .map(|client| {
            let (url, attempts) = (server.url(), Arc::clone(&attempts));
            thread::spawn(move || {
                let mut con = redis::Client::open(url)
                    .and_then(|c| c.get_connection())
                    .expect("connect");
                let mut index = client;
                loop {
                    if ok::<i64>(&mut con, &["SECKILL.GET", ITEM]) == 0 {
                        return;
                    }
                    attempts.fetch_add(1, Ordering::Relaxed);
                    let user = match index % 3 {
                        0 => format!("user:{}", index % 600),
                        _ => format!("late:{}", index % 700),
                    };
                    let qty = (1 + index % 3).to_string();
                    let id = format!("late-order:{index}");
                    let mut args = vec!["SECKILL.DEDUCT", ITEM, &user, &qty];
                    if index.is_multiple_of(2) {
                        args.extend_from_slice(&["ID", &id]);
                    }
                    let _: i64 = ok(&mut con, &args);
                    index += 4;
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("buyer thread");
    }
    assert!(attempts.load(Ordering::Relaxed) > 0);
    let sold_out = info(&mut con, ITEM);
    assert_eq!(number(&sold_out, "stock"), 0);
    assert_eq!(
        number(&sold_out, "sold") - number(&sold_out, "refunded") - number(&sold_out, "expired"),
        SUPPLY
    );

    wait_until("the table to be exact", Duration::from_secs(60), || {
        drained(&mut con, STREAM) && live_units(&pg, ITEM).0 == SUPPLY
    });
    let (_, per_user) = live_units(&pg, ITEM);
    for (user, units) in &per_user {
        assert!(*units <= 3, "{user} holds {units}");
        let bought: i64 = ok(&mut con, &["SECKILL.BOUGHT", ITEM, user]);
        assert_eq!(bought, *units, "{user}");
    }
    drop(consumer);
}

/// Creates the orders table as the consumer does, and fills it with
/// `orders` rows of `item`: every status, and purchases without an id.
fn fill_table(server: &Server, pg: &Postgres, item: &str, orders: usize) {
    let consumer = start_consumer(server, pg, "{schema}:orders", "schema");
    // The consumer creates the table, then brings it to its schema in a
    // step of its own: its newest column is there once both are done.
    wait_until("the table to be created", Duration::from_secs(30), || {
        pg.sql(
            "SELECT count(*) FROM information_schema.columns \
             WHERE table_name = 'seckill_orders' AND column_name = 'hold_until_ms'",
        )
        .trim()
            == "1"
    });
    drop(consumer);
    // Holds run until 2100; a lapsed hold's deadline is long past.
    pg.sql(&format!(
        "INSERT INTO seckill_orders (item, order_id, user_id, qty, status, stock_after, \
         created_at_ms, updated_at_ms, last_entry_ms, last_entry_seq, hold_until_ms) \
         SELECT '{item}', \
                CASE WHEN i % 6 = 5 THEN 'entry:' || i || '-0' ELSE 'order:' || i END, \
                'user:' || (i % 30000), 1 + i % 2, \
                (ARRAY['purchased','held','confirmed','refunded','expired','purchased'])[1 + i % 6], \
                1000, i, i, i, 0, \
                CASE WHEN i % 6 IN (1, 2) THEN 4102444800000 \
                     WHEN i % 6 = 4 THEN 1000 ELSE NULL END \
         FROM generate_series(1, {orders}) AS i"
    ));
}

/// A small deterministic pseudo-random sequence.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound.max(1)
    }
}

#[test]
fn a_rebuild_killed_anywhere_and_run_again_ends_with_the_same_item() {
    const ITEM: &str = "sku:killed";
    let pg = Postgres::start().expect("PostgreSQL is not installed: run `make deps`");
    let server = Server::start();
    let mut con = server.client();
    fill_table(&server, &pg, ITEM, 60_000);
    let args = ["--item", ITEM, "--supply", "100000", "--limit", "4"];

    // The reference: one run to completion, timed.
    let began = Instant::now();
    let output = rebuild(&server, &pg, &args);
    let took = began.elapsed();
    assert!(output.status.success(), "{}", text(&output));
    let reference = (info(&mut con, ITEM), scan(&mut con, ITEM));
    assert_eq!(number(&reference.0, "requests"), 50_000);
    ok::<i64>(&mut con, &["DEL", ITEM]);

    let mut random = Lcg(u64::from(std::process::id()));
    let (mut killed_midway, mut finished_before_kill, mut left_partial) = (0, 0, 0);
    for round in 0..10 {
        // A poller: the item's key is missing or complete, never partial.
        let done = Arc::new(AtomicBool::new(false));
        let poller = {
            let (url, done, expected) = (server.url(), Arc::clone(&done), reference.0.clone());
            thread::spawn(move || {
                let mut con = redis::Client::open(url)
                    .and_then(|c| c.get_connection())
                    .expect("connect");
                let mut seen = 0;
                while !done.load(Ordering::Relaxed) {
                    let exists: i64 = ok(&mut con, &["EXISTS", ITEM]);
                    if exists == 1 {
                        assert_eq!(info(&mut con, ITEM), expected, "a partial item");
                        seen += 1;
                    }
                }
                seen
            })
        };
        let mut child = rebuild_command(&server, &pg, &args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start rebuild");
        if round % 2 == 0 {
            // Anywhere: from the start to about its end.
            thread::sleep(Duration::from_millis(
                random.below(took.as_millis() as u64 + 20),
            ));
        } else {
            // Once it is building under the temporary key (or done).
            let began = Instant::now();
            while began.elapsed() < took * 3 + Duration::from_secs(1) {
                let building: Vec<String> = ok(&mut con, &["KEYS", "*:rebuild:*"]);
                if !building.is_empty() || ok::<i64>(&mut con, &["EXISTS", ITEM]) == 1 {
                    break;
                }
                thread::sleep(Duration::from_millis(1));
            }
            thread::sleep(Duration::from_millis(
                random.below(took.as_millis() as u64 / 4 + 1),
            ));
        }
        child.kill().expect("SIGKILL the rebuild");
        let status = child.wait().expect("reap the rebuild");
        let complete = ok::<i64>(&mut con, &["EXISTS", ITEM]) == 1;
        if complete {
            // It finished before the kill: the item is whole already.
            finished_before_kill += 1;
            assert!(status.success() || status.code().is_none(), "{status}");
        } else {
            killed_midway += 1;
            // Killed after it began building: a partial temporary key.
            let left: Vec<String> = ok(&mut con, &["KEYS", "*:rebuild:*"]);
            left_partial += usize::from(!left.is_empty());
            let output = rebuild(&server, &pg, &args);
            assert!(output.status.success(), "round {round}: {}", text(&output));
        }
        done.store(true, Ordering::Relaxed);
        poller.join().expect("poller");
        assert_eq!(info(&mut con, ITEM), reference.0, "round {round}");
        assert_eq!(scan(&mut con, ITEM), reference.1, "round {round}");
        ok::<i64>(&mut con, &["DEL", ITEM]);
    }
    assert!(killed_midway > 0, "never killed midway in {took:?}");
    eprintln!("a whole run takes {took:?}");
    eprintln!(
        "{killed_midway} killed midway ({left_partial} leaving a partial temporary key), \
         {finished_before_kill} finished first"
    );
    // No temporary key is left behind.
    let keys: Vec<String> = ok(&mut con, &["KEYS", "*"]);
    assert!(keys.iter().all(|key| key == "{schema}:orders"), "{keys:?}");
}

#[test]
fn an_existing_item_or_a_supply_too_small_is_refused() {
    const ITEM: &str = "{sku:refused}";
    let pg = Postgres::start().expect("PostgreSQL is not installed: run `make deps`");
    let server = Server::start();
    let mut con = server.client();
    fill_table(&server, &pg, ITEM, 600);

    // An item that exists is left as it is.
    ok::<i64>(&mut con, &["SECKILL.INIT", ITEM, "7"]);
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", ITEM, "ann", "2", "ID", "x"]);
    let dump: Vec<u8> = ok(&mut con, &["DUMP", ITEM]);
    let output = rebuild(&server, &pg, &["--item", ITEM, "--supply", "5000"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("exists"), "{}", text(&output));
    assert_eq!(ok::<Vec<u8>>(&mut con, &["DUMP", ITEM]), dump);

    // With --replace it is built again from the rows.
    let output = rebuild(
        &server,
        &pg,
        &["--item", ITEM, "--supply", "5000", "--replace"],
    );
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(number(&info(&mut con, ITEM), "requests"), 500);

    // A supply below the units the rows hold: nothing is created.
    ok::<i64>(&mut con, &["DEL", ITEM]);
    let output = rebuild(&server, &pg, &["--item", ITEM, "--supply", "100"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("more than the supply 100"),
        "{}",
        text(&output)
    );
    let keys: Vec<String> = ok(&mut con, &["KEYS", "*"]);
    assert!(keys.iter().all(|key| key == "{schema}:orders"), "{keys:?}");

    // A reply above the supply, which SECKILL.IMPORT would refuse.
    let output = rebuild(&server, &pg, &["--item", ITEM, "--supply", "800"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("stock_after"), "{}", text(&output));
    let keys: Vec<String> = ok(&mut con, &["KEYS", "*"]);
    assert!(keys.iter().all(|key| key == "{schema}:orders"), "{keys:?}");

    // Holds that lapse once rebuilt (one with no deadline in the table:
    // lapsing now) write their expire events on the item's stream, under
    // the item's own name.
    const LAPSING: &str = "lapsing";
    const LAPSING_STREAM: &str = "lapsing-orders{lapsing}";
    pg.sql(&format!(
        "INSERT INTO seckill_orders (item, order_id, user_id, qty, status, stock_after, \
         created_at_ms, updated_at_ms, last_entry_ms, last_entry_seq, hold_until_ms) VALUES \
         ('{LAPSING}', 'h1', 'ann', 2, 'held', 8, 1, 1, 1, 0, NULL), \
         ('{LAPSING}', 'h2', 'bob', 1, 'held', 7, 1, 1, 1, 0, 1000), \
         ('{LAPSING}', 'h3', 'cy', 1, 'held', 6, 1, 1, 1, 0, 4102444800000)"
    ));
    let output = rebuild(
        &server,
        &pg,
        &[
            "--item",
            LAPSING,
            "--supply",
            "10",
            "--stream",
            LAPSING_STREAM,
            "--maxlen",
            "100",
        ],
    );
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("lapsing now"), "{}", text(&output));
    type Entries = Vec<(String, HashMap<String, String>)>;
    wait_until("the lapsed holds' events", Duration::from_secs(10), || {
        ok::<Entries>(&mut con, &["XRANGE", LAPSING_STREAM, "-", "+"]).len() == 2
    });
    let entries: Entries = ok(&mut con, &["XRANGE", LAPSING_STREAM, "-", "+"]);
    let mut lapsed: Vec<(&str, &str, &str)> = entries
        .iter()
        .map(|(_, fields)| {
            (
                fields["event"].as_str(),
                fields["item"].as_str(),
                fields["request"].as_str(),
            )
        })
        .collect();
    lapsed.sort();
    assert_eq!(
        lapsed,
        [("expire", LAPSING, "h1"), ("expire", LAPSING, "h2")]
    );
    let lapsing = info(&mut con, LAPSING);
    assert_eq!(
        (
            number(&lapsing, "held"),
            number(&lapsing, "expired"),
            number(&lapsing, "stock"),
            number(&lapsing, "stream_maxlen"),
        ),
        (1, 3, 9, 100)
    );

    // Usage errors: exit 2.
    let output = rebuild(&server, &pg, &["--item", ITEM]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let output = rebuild(
        &server,
        &pg,
        &["--item", ITEM, "--supply", "5000", "--stream", "other"],
    );
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
}

/// `SECKILL.INFO key VARIANT name` as a map.
fn variant_info(
    con: &mut redis::Connection,
    item: &str,
    variant: &str,
) -> BTreeMap<String, redis::Value> {
    let pairs: Vec<(String, redis::Value)> = ok(con, &["SECKILL.INFO", item, "VARIANT", variant]);
    pairs.into_iter().collect()
}

#[test]
fn a_deleted_drop_is_rebuilt_size_by_size_and_answers_as_before() {
    const DROP: &str = "{drop:rb}";
    const ORDERS: &str = "{drop:rb}:orders";
    const SIZES: [(&str, i64); 3] = [("42", 40), ("43", 30), ("44", 20)];
    let pg = Postgres::start().expect("PostgreSQL is not installed: run `make deps`");
    let server = Server::start();
    let mut con = server.client();
    let mut init = vec!["SECKILL.INIT", DROP, "VARIANTS", "3"];
    let stocks: Vec<String> = SIZES.iter().map(|(_, stock)| stock.to_string()).collect();
    for ((name, _), stock) in SIZES.iter().zip(&stocks) {
        init.extend([*name, stock.as_str()]);
    }
    init.extend(["LIMIT", "2", "VARIANTLIMIT", "44", "1", "STREAM", ORDERS]);
    ok::<i64>(&mut con, &init);
    let consumer = start_consumer(&server, &pg, ORDERS, "drop");
    // Purchases, holds confirmed, refunded and left pending, a purchase
    // without a request id, on random sizes.
    let far = (server_now_ms(&mut con) + 3_600_000).to_string();
    let mut replies = HashMap::new();
    let mut accepted = 0;
    for index in 0..150usize {
        let (size, _) = SIZES[index % 3];
        let user = format!("user:{}", index % 70);
        let id = format!("order:{index}");
        let mut args = vec!["SECKILL.DEDUCT", DROP, &user, "1", "VARIANT", size];
        if index % 10 != 9 {
            args.extend(["ID", &id]);
            if index % 4 == 1 {
                args.extend(["HOLDUNTIL", &far]);
            }
        }
        let reply: i64 = ok(&mut con, &args);
        if reply >= 0 {
            accepted += 1;
        }
        if reply < 0 || index % 10 == 9 {
            continue;
        }
        match index % 8 {
            1 => assert_eq!(ok::<i64>(&mut con, &["SECKILL.CONFIRM", DROP, &id]), 1),
            2 => assert_eq!(ok::<i64>(&mut con, &["SECKILL.REFUND", DROP, &id]), 1),
            _ => {}
        }
        replies.insert(id, (user, size, reply));
    }
    wait_until(
        "the table to have every order",
        Duration::from_secs(60),
        || drained(&mut con, ORDERS) && rows(&pg, DROP).len() == accepted,
    );
    let sizes_before: Vec<(String, i64)> = ok(&mut con, &["SECKILL.VARIANTS", DROP]);
    let before: Vec<_> = SIZES
        .iter()
        .map(|(size, _)| variant_info(&mut con, DROP, size))
        .collect();
    let whole = info(&mut con, DROP);
    ok::<i64>(&mut con, &["DEL", DROP]);

    let mut args = vec!["--item", DROP, "--limit", "2", "--stream", ORDERS];
    let supplies: Vec<String> = SIZES
        .iter()
        .map(|(size, stock)| format!("{size}:{stock}"))
        .collect();
    for supply in &supplies {
        args.extend(["--variant", supply.as_str()]);
    }
    args.extend(["--variant-limit", "44:1"]);
    let output = rebuild(&server, &pg, &args);
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(
        ok::<Vec<(String, i64)>>(&mut con, &["SECKILL.VARIANTS", DROP]),
        sizes_before
    );
    for ((size, _), before) in SIZES.iter().zip(&before) {
        assert_eq!(&variant_info(&mut con, DROP, size), before, "size {size}");
    }
    assert_eq!(info(&mut con, DROP), whole);
    // Every request id answers on its size as it did; on another size it is
    // refused, as a request id names one purchase of one size.
    for (id, (user, size, reply)) in &replies {
        let again: i64 = ok(
            &mut con,
            &["SECKILL.DEDUCT", DROP, user, "1", "ID", id, "VARIANT", size],
        );
        assert!(again == *reply || again == -4, "{id}: {again} for {reply}");
        let other = SIZES
            .iter()
            .map(|(s, _)| *s)
            .find(|s| s != size)
            .unwrap_or("42");
        let refused = redis::cmd("SECKILL.DEDUCT")
            .arg(&[DROP, user, "1", "ID", id, "VARIANT", other])
            .query::<i64>(&mut con);
        assert!(refused.is_err(), "{id} on {other}: {refused:?}");
    }
    assert_eq!(info(&mut con, DROP), whole, "replays changed nothing");

    // Rebuilt without --variant, or with a size missing, it is refused.
    ok::<i64>(&mut con, &["DEL", DROP]);
    let output = rebuild(&server, &pg, &["--item", DROP, "--supply", "90"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("is of variant"), "{}", text(&output));
    let output = rebuild(
        &server,
        &pg,
        &["--item", DROP, "--variant", "42:40", "--variant", "43:30"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("which no --variant names"),
        "{}",
        text(&output)
    );
    assert_eq!(ok::<i64>(&mut con, &["EXISTS", DROP]), 0);
    drop(consumer);
}
