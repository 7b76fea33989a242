//! A whole flash sale with the consumer running against a real PostgreSQL:
//! the consumer is killed with SIGKILL halfway and started again, a poison
//! entry is thrown in, and in the end the orders table equals what the
//! module sold, exactly.

use postgres::{Client, NoTls};
use seckill_harness::postgres::Postgres;
use seckill_harness::{ok, wait_until, Server};
use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

const ITEM: &str = "{sku:e2e}";
const STREAM: &str = "{sku:e2e}:orders";
const STOCK: i64 = 2_000;
const ATTEMPTS: usize = 3_000;
const CLIENTS: usize = 4;

fn start_consumer(server: &Server, pg: &Postgres, name: &str) -> Child {
    let log = std::fs::File::create(server.dir().join(format!("{name}.log"))).expect("log file");
    Command::new(env!("CARGO_BIN_EXE_seckill-orders"))
        .args(["--redis-url", &server.url()])
        .args(["--postgres-url", &pg.url()])
        .args(["--stream", STREAM])
        .args(["--consumer", name])
        .args(["--claim-idle-ms", "500"])
        .args(["--max-deliveries", "2"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start seckill-orders")
}

fn server_now_ms(con: &mut redis::Connection) -> i64 {
    let time: Vec<i64> = ok(con, &["TIME"]);
    time[0] * 1000 + time[1] / 1000
}

/// (user, qty, status) for every order the module accepted.
type Expected = HashMap<String, (String, i64, String)>;

/// One shopper's click `index`: a purchase, a hold confirmed or refunded
/// later, or a hold left to lapse. Records what the order must end as.
fn click(con: &mut redis::Connection, index: usize, expected: &Mutex<Expected>) {
    let user = format!("user:{}", index % 900);
    let id = format!("order:{index}");
    let qty = 1 + (index % 2) as i64;
    let qty_arg = qty.to_string();
    let mut args = vec!["SECKILL.DEDUCT", ITEM, &user, &qty_arg, "ID", &id];
    let soon = (server_now_ms(con) + 300).to_string();
    match index % 5 {
        2 | 3 => args.extend_from_slice(&["HOLD", "600"]),
        4 => args.extend_from_slice(&["HOLDUNTIL", &soon]),
        _ => {}
    }
    let reply: i64 = ok(con, &args);
    if reply < 0 {
        return;
    }
    let status = match index % 5 {
        2 => {
            assert_eq!(ok::<i64>(con, &["SECKILL.CONFIRM", ITEM, &id]), 1);
            "confirmed"
        }
        3 => {
            assert_eq!(ok::<i64>(con, &["SECKILL.REFUND", ITEM, &id]), qty);
            "refunded"
        }
        4 => "expired",
        _ => "purchased",
    };
    expected
        .lock()
        .expect("expected orders")
        .insert(id, (user, qty, status.to_owned()));
}

fn orders_in(pg: &Postgres) -> Expected {
    let mut client = Client::connect(&pg.url(), NoTls).expect("connect to PostgreSQL");
    let rows = client
        .query(
            "SELECT order_id, user_id, qty, status FROM seckill_orders WHERE item = $1",
            &[&ITEM],
        )
        .unwrap_or_default();
    rows.iter()
        .map(|row| {
            let (id, user, qty, status): (String, String, i64, String) =
                (row.get(0), row.get(1), row.get(2), row.get(3));
            (id, (user, qty, status))
        })
        .collect()
}

#[test]
fn every_sale_becomes_exactly_one_order_row_through_a_consumer_crash() {
    let pg = Postgres::start().expect("PostgreSQL is not installed: run `make deps`");
    let server = Server::start_with(&["--appendonly", "yes"]);
    let mut con = server.client();
    let stock = STOCK.to_string();
    ok::<i64>(
        &mut con,
        &["SECKILL.INIT", ITEM, &stock, "LIMIT", "3", "STREAM", STREAM],
    );
    let mut consumer = start_consumer(&server, &pg, "first");

    let expected = Arc::new(Mutex::new(Expected::new()));
    let run_clicks = |range: std::ops::Range<usize>| {
        let workers: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let (url, expected) = (server.url(), Arc::clone(&expected));
                let indexes: Vec<usize> = range.clone().filter(|i| i % CLIENTS == client).collect();
                thread::spawn(move || {
                    let mut con = redis::Client::open(url)
                        .and_then(|c| c.get_connection())
                        .expect("connect");
                    for index in indexes {
                        click(&mut con, index, &expected);
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().expect("client thread");
        }
    };

    run_clicks(0..ATTEMPTS / 2);
    // The consumer dies without a chance to clean up, and a new one starts.
    consumer.kill().expect("SIGKILL the consumer");
    consumer.wait().expect("reap the consumer");
    let mut consumer = start_consumer(&server, &pg, "second");
    run_clicks(ATTEMPTS / 2..ATTEMPTS);

    // A poison entry: not something the module writes.
    ok::<String>(
        &mut con,
        &["XADD", STREAM, "*", "event", "purchase", "item", ITEM],
    );

    let expected = expected.lock().expect("expected orders").clone();
    assert!(expected.len() > 1_000, "only {} orders", expected.len());
    wait_until(
        "the orders table to match the sale",
        Duration::from_secs(90),
        || orders_in(&pg) == expected,
    );
    wait_until(
        "the poison entry to be dead-lettered",
        Duration::from_secs(30),
        || ok::<i64>(&mut server.client(), &["XLEN", &format!("{STREAM}:dead")]) == 1,
    );
    let dead: Vec<(String, HashMap<String, String>)> =
        ok(&mut con, &["XRANGE", &format!("{STREAM}:dead"), "-", "+"]);
    assert!(dead[0].1["error"].contains("no field"), "{:?}", dead[0].1);
    assert_eq!(dead[0].1["stream"], STREAM);

    // The module agrees: nothing held any more, and what the table counts as
    // sold for good is what the item counts.
    let info: HashMap<String, redis::Value> = ok(&mut con, &["SECKILL.INFO", ITEM]);
    let number = |field: &str| match info[field] {
        redis::Value::Int(value) => value,
        _ => panic!("{field}"),
    };
    assert_eq!(number("held"), 0);
    let kept: i64 = expected
        .values()
        .filter(|(_, _, status)| status == "purchased" || status == "confirmed")
        .map(|(_, qty, _)| qty)
        .sum();
    assert_eq!(
        kept,
        number("sold") - number("refunded") - number("expired")
    );

    // SIGTERM stops the consumer cleanly.
    let pid = consumer.id().to_string();
    Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill -TERM");
    let status = consumer.wait().expect("reap the consumer");
    assert!(status.success(), "the consumer exited with {status}");
    let log = std::fs::read_to_string(server.dir().join("second.log")).unwrap_or_default();
    assert!(log.contains("stopping:"), "{log}");
}

/// (order id) → (user, variant, status) of a drop's rows.
fn sized_orders_in(pg: &Postgres, item: &str) -> HashMap<String, (String, Option<String>, String)> {
    let mut client = Client::connect(&pg.url(), NoTls).expect("connect to PostgreSQL");
    let rows = client
        .query(
            "SELECT order_id, user_id, variant, status FROM seckill_orders WHERE item = $1",
            &[&item],
        )
        .unwrap_or_default();
    rows.iter()
        .map(|row| (row.get(0), (row.get(1), row.get(2), row.get(3))))
        .collect()
}

#[test]
fn each_order_of_a_drop_keeps_its_size() {
    const DROP: &str = "{sku:e2e}:drop";
    let pg = Postgres::start().expect("PostgreSQL is not installed: run `make deps`");
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.INIT",
            DROP,
            "VARIANTS",
            "2",
            "42",
            "5",
            "43",
            "5",
            "LIMIT",
            "1",
            "STREAM",
            STREAM,
        ],
    );
    // The consumer reads the stream it is given; the drop writes there.
    let mut consumer = start_consumer(&server, &pg, "sizes");
    let mut expected = HashMap::new();
    for (n, size) in ["42", "43", "43", "42"].into_iter().enumerate() {
        let (user, id) = (format!("user:{n}"), format!("order:{n}"));
        let hold = n % 2 == 1;
        let mut args = vec![
            "SECKILL.DEDUCT",
            DROP,
            &user,
            "1",
            "ID",
            &id,
            "VARIANT",
            size,
        ];
        if hold {
            args.extend(["HOLD", "600"]);
        }
        assert!(ok::<i64>(&mut con, &args) >= 0);
        let status = if hold { "held" } else { "purchased" };
        expected.insert(id, (user, Some(size.to_owned()), status.to_owned()));
    }
    // A confirmation and a refund name no size: the row keeps the one its
    // purchase named.
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.CONFIRM", DROP, "order:1"]),
        1
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.REFUND", DROP, "order:2"]), 1);
    if let Some(row) = expected.get_mut("order:1") {
        row.2 = "confirmed".to_owned();
    }
    if let Some(row) = expected.get_mut("order:2") {
        row.2 = "refunded".to_owned();
    }
    wait_until(
        "every order of the drop with its size",
        Duration::from_secs(30),
        || sized_orders_in(&pg, DROP) == expected,
    );
    consumer.kill().expect("stop the consumer");
    consumer.wait().expect("reap the consumer");
}
