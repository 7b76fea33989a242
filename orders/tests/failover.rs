//! A failover with `--wait-replicas`: sales the replica never got do not
//! become rows, so the sales made again on the promoted replica never add
//! up to more than the stock.

use postgres::{Client, NoTls};
use seckill_harness::metrics::{sample, scrape};
use seckill_harness::postgres::Postgres;
use seckill_harness::{free_port, ok, server_info, wait_until, Server};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const ITEM: &str = "{sku:1}";
const STREAM: &str = "{sku:1}:orders";
const STOCK: i64 = 100;
const DEADLINE: Duration = Duration::from_secs(30);

/// A consumer, killed when dropped.
struct Consumer(Child);

impl Drop for Consumer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_consumer(server: &Server, pg: &Postgres, args: &[&str]) -> Consumer {
    let log = std::fs::File::create(server.dir().join("consumer.log")).expect("log file");
    let child = Command::new(env!("CARGO_BIN_EXE_seckill-orders"))
        .args(["--redis-url", &server.url()])
        .args(["--postgres-url", &pg.url()])
        .args(["--stream", STREAM])
        .args(["--consumer", "orders-1"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start seckill-orders");
    Consumer(child)
}

/// (order id, user, qty, status) of every row of the item.
fn rows(pg: &Postgres) -> Vec<(String, String, i64, String)> {
    rows_of(pg, ITEM)
}

/// (order id, user, qty, status) of every row of `item`.
fn rows_of(pg: &Postgres, item: &str) -> Vec<(String, String, i64, String)> {
    let Ok(mut client) = Client::connect(&pg.url(), NoTls) else {
        return Vec::new();
    };
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

fn deduct(con: &mut redis::Connection, user: &str, id: &str) -> i64 {
    ok(con, &["SECKILL.DEDUCT", ITEM, user, "1", "ID", id])
}

#[test]
fn sales_the_replica_never_got_become_no_rows_and_the_promoted_replica_never_oversells() {
    let pg = Postgres::start().expect("PostgreSQL is not installed: run `make deps`");
    let mut master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    let stock = STOCK.to_string();
    ok::<i64>(
        &mut con,
        &["SECKILL.INIT", ITEM, &stock, "LIMIT", "1", "STREAM", STREAM],
    );
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "5000"]), 1);

    let metrics_port = free_port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let first = start_consumer(
        &master,
        &pg,
        &[
            "--wait-replicas",
            "1",
            "--wait-timeout-ms",
            "200",
            "--metrics-addr",
            &metrics_addr,
        ],
    );
    // A sale the replica holds becomes a row: the consumer works, and the
    // table exists before it is looked at.
    assert!(deduct(&mut con, "user:before", "before") >= 0);
    wait_until("the sale before the cut to become a row", DEADLINE, || {
        rows(&pg).len() == 1
    });

    // The replica holds everything so far, the consumer's XACK too: a WAIT
    // that answers at once from now on is one that did not wait.
    wait_until(
        "the sale before the cut to be acknowledged",
        DEADLINE,
        || {
            let summary: Vec<redis::Value> = ok(&mut con, &["XPENDING", STREAM, "seckill-orders"]);
            matches!(summary.first(), Some(redis::Value::Int(0)))
        },
    );
    ok::<String>(&mut con, &["SET", "{sku:1}:fence", "1"]);
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "5000"]), 1);

    // The replica stops applying its master's stream.
    let mut paused = replica.client();
    ok::<String>(&mut paused, &["CLIENT", "PAUSE", "600000", "WRITE"]);
    // The first of them wakes the consumer's XREADGROUP ... BLOCK: WAIT
    // right after such a read answers at once (the read is served within
    // the XADD's call), as if the replica held the entry.
    let mut watch = master.client();
    wait_until("the consumer to block in XREADGROUP", DEADLINE, || {
        let clients: String = ok(&mut watch, &["CLIENT", "LIST"]);
        clients.lines().any(|client| {
            client.contains(" cmd=xreadgroup")
                && client
                    .split(' ')
                    .any(|field| field.starts_with("flags=") && field.contains('b'))
        })
    });
    let mut lost = Vec::new();
    for index in 0..40 {
        let (user, id) = (format!("user:{index}"), format!("m:{index}"));
        assert!(deduct(&mut con, &user, &id) >= 0, "sale {id} on the master");
        lost.push(id);
    }
    let held_at_start = sample(
        &scrape(metrics_port),
        "seckill_orders_pages_held_back_total",
    );
    wait_until(
        "the consumer to say it waits for the replica",
        DEADLINE,
        || {
            let text = scrape(metrics_port);
            sample(&text, "seckill_orders_pages_held_back_total") > held_at_start
                && sample(&text, "seckill_orders_replication_wait_seconds")
                    .is_some_and(|seconds| seconds > 0.0)
        },
    );
    // Held back again since: the consumer went on trying, and still wrote
    // none of them.
    let held = sample(
        &scrape(metrics_port),
        "seckill_orders_pages_held_back_total",
    );
    wait_until("the consumer to try again", DEADLINE, || {
        sample(
            &scrape(metrics_port),
            "seckill_orders_pages_held_back_total",
        ) > held
    });
    assert_eq!(
        rows(&pg).len(),
        1,
        "no sale the replica lacks may become a row"
    );

    // The failover: the master dies before the replica got the 40 sales,
    // the replica is promoted, and only then does it run again.
    drop(first);
    master.kill();
    let mut promoted = replica.client();
    wait_until("the replica to see its master gone", DEADLINE, || {
        server_info(&mut promoted, "replication", "master_link_status").as_deref() == Some("down")
    });
    ok::<String>(&mut promoted, &["REPLICAOF", "NO", "ONE"]);
    ok::<String>(&mut promoted, &["CLIENT", "UNPAUSE"]);
    assert_eq!(
        ok::<i64>(&mut promoted, &["XLEN", STREAM]),
        1,
        "the promoted replica holds only the sale before the cut"
    );

    let second_metrics = free_port();
    let _second = start_consumer(
        &replica,
        &pg,
        &["--metrics-addr", &format!("127.0.0.1:{second_metrics}")],
    );
    let mut sold = vec!["before".to_owned()];
    for index in 0..300 {
        let (user, id) = (format!("user:{index}"), format!("r:{index}"));
        if deduct(&mut promoted, &user, &id) >= 0 {
            sold.push(id);
        }
    }
    assert_eq!(
        sold.len() as i64,
        STOCK,
        "the promoted replica sells its stock"
    );
    wait_until(
        "every sale on the promoted replica to be a row",
        DEADLINE,
        || rows(&pg).len() == sold.len(),
    );
    // The lag is known on the promoted replica too (counted from the
    // stream when XINFO GROUPS gives none).
    let lag = format!("seckill_orders_lag_entries{{stream=\"{STREAM}\"}}");
    wait_until("the lag on the promoted replica to be 0", DEADLINE, || {
        sample(&scrape(second_metrics), &lag) == Some(0.0)
    });
    let rows = rows(&pg);
    let purchased: i64 = rows
        .iter()
        .filter(|(.., status)| status == "purchased")
        .map(|(_, _, qty, _)| qty)
        .sum();
    assert!(purchased <= STOCK, "{purchased} units sold of {STOCK}");
    let mut per_user = std::collections::HashMap::<&str, i64>::new();
    for (_, user, qty, _) in &rows {
        *per_user.entry(user).or_default() += qty;
    }
    let above: Vec<_> = per_user.iter().filter(|(_, qty)| **qty > 1).collect();
    assert!(above.is_empty(), "users above the limit: {above:?}");
    let ids: std::collections::HashSet<&str> = rows.iter().map(|(id, ..)| id.as_str()).collect();
    for id in &sold {
        assert!(ids.contains(id.as_str()), "sale {id} has no row");
    }
    for id in &lost {
        assert!(!ids.contains(id.as_str()), "lost sale {id} became a row");
    }
}

#[test]
fn the_lag_is_counted_from_the_stream_when_the_server_gives_none() {
    const ITEM: &str = "{sku:lag}";
    const STREAM: &str = "{sku:lag}:orders";
    let pg = Postgres::start().expect("PostgreSQL is not installed: run `make deps`");
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", ITEM, "100", "STREAM", STREAM]);
    let port = free_port();
    let log = std::fs::File::create(server.dir().join("consumer.log")).expect("log file");
    // No replica ever holds anything: the consumer holds back its first
    // page and reads nothing new after it.
    let _consumer = Consumer(
        Command::new(env!("CARGO_BIN_EXE_seckill-orders"))
            .args(["--redis-url", &server.url()])
            .args(["--postgres-url", &pg.url()])
            .args(["--stream", STREAM])
            .args(["--wait-replicas", "1", "--wait-timeout-ms", "100"])
            .args(["--metrics-addr", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start seckill-orders"),
    );
    assert!(ok::<i64>(&mut con, &["SECKILL.DEDUCT", ITEM, "user:0", "1"]) >= 0);
    wait_until("the first page to be held back", DEADLINE, || {
        sample(&scrape(port), "seckill_orders_pages_held_back_total").is_some_and(|n| n >= 1.0)
    });
    for user in 1..=4 {
        let user = format!("user:{user}");
        assert!(ok::<i64>(&mut con, &["SECKILL.DEDUCT", ITEM, &user, "1"]) >= 0);
    }
    // A deleted entry after the group's last-delivered-id: XINFO GROUPS
    // can no longer tell the lag and gives nil.
    let unread: Vec<(String, Vec<(String, String)>)> = ok(&mut con, &["XRANGE", STREAM, "-", "+"]);
    ok::<i64>(&mut con, &["XDEL", STREAM, &unread[2].0]);
    let groups: Vec<std::collections::HashMap<String, redis::Value>> =
        ok(&mut con, &["XINFO", "GROUPS", STREAM]);
    assert_eq!(groups[0].get("lag"), Some(&redis::Value::Nil));
    let lag = format!("seckill_orders_lag_entries{{stream=\"{STREAM}\"}}");
    wait_until("the lag to count the 3 unread entries", DEADLINE, || {
        sample(&scrape(port), &lag) == Some(3.0)
    });
    assert!(
        rows_of(&pg, ITEM).is_empty(),
        "a held-back page became rows"
    );
}
