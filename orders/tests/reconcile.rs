//! `seckill-orders reconcile` against a real redis-server and PostgreSQL:
//! a sale drained by the consumer agrees with its table (exit 0); then each
//! kind of drift, made by hand one at a time, is listed exactly (exit 1);
//! and orders the consumer has not committed yet are left out, not drift.

use postgres::{Client, NoTls};
use seckill_harness::postgres::Postgres;
use seckill_harness::{ok, wait_until, Server};
use serde_json::{json, Value as Json};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const ITEM: &str = "{sku:rec}";
const STREAM: &str = "{sku:rec}:orders";

fn start_consumer(server: &Server, pg: &Postgres) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(server.dir().join("consumer.log"))
        .expect("log file");
    Command::new(env!("CARGO_BIN_EXE_seckill-orders"))
        .args(["--redis-url", &server.url()])
        .args(["--postgres-url", &pg.url()])
        .args(["--stream", STREAM])
        .args(["--consumer", "c1"])
        .args(["--claim-idle-ms", "300"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start seckill-orders")
}

fn stop(mut consumer: Child) {
    consumer.kill().expect("stop the consumer");
    consumer.wait().expect("reap the consumer");
}

/// Runs `reconcile` with `args`: its exit status and output.
fn reconcile(server: &Server, pg: &Postgres, args: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_seckill-orders"))
        .arg("reconcile")
        .args(["--redis-url", &server.url()])
        .args(["--postgres-url", &pg.url()])
        .args(args)
        .env_remove("SECKILL_STREAMS")
        .output()
        .expect("run seckill-orders reconcile");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    (
        output.status.code().unwrap_or(-1),
        format!("{stdout}{}", if stderr.is_empty() { "" } else { &stderr }),
    )
}

/// `reconcile --item ITEM --json`: exit status and the item's report.
fn check(server: &Server, pg: &Postgres) -> (i32, Json) {
    let (code, out) = reconcile(server, pg, &["--item", ITEM, "--json"]);
    let document: Json = serde_json::from_str(&out).unwrap_or_else(|_| panic!("not JSON: {out}"));
    assert_eq!(document["agree"], json!(code == 0), "{out}");
    (code, document["items"][0].clone())
}

fn sql(pg: &Postgres, statement: &str) {
    let mut client = Client::connect(&pg.url(), NoTls).expect("connect to PostgreSQL");
    client.batch_execute(statement).expect(statement);
}

fn statuses(pg: &Postgres) -> Vec<(String, String)> {
    let mut client = Client::connect(&pg.url(), NoTls).expect("connect to PostgreSQL");
    client
        .query(
            "SELECT order_id, status FROM seckill_orders WHERE item = $1 ORDER BY order_id",
            &[&ITEM],
        )
        .map(|rows| rows.iter().map(|row| (row.get(0), row.get(1))).collect())
        .unwrap_or_default()
}

fn undelivered(con: &mut redis::Connection) -> i64 {
    let groups: Vec<std::collections::HashMap<String, redis::Value>> =
        ok(con, &["XINFO", "GROUPS", STREAM]);
    match groups.first().and_then(|group| group.get("lag")) {
        Some(redis::Value::Int(lag)) => *lag,
        _ => -1,
    }
}

fn left_out(report: &Json) -> (i64, Vec<String>) {
    let ids = report["left_out"]["order_ids"]
        .as_array()
        .expect("order_ids")
        .iter()
        .map(|id| id.as_str().expect("id").to_owned())
        .collect();
    (report["left_out"]["orders"].as_i64().expect("orders"), ids)
}

#[test]
fn reconcile_finds_every_kind_of_drift_and_leaves_out_what_is_not_committed() {
    let pg = Postgres::start().expect("PostgreSQL is not installed: run `make deps`");
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(
        &mut con,
        &["SECKILL.INIT", ITEM, "100", "LIMIT", "10", "STREAM", STREAM],
    );
    let consumer = start_consumer(&server, &pg);

    // An exact sale: purchases, holds confirmed, refunded and lapsed, a
    // refunded purchase and purchases without a request id.
    let time: Vec<i64> = ok(&mut con, &["TIME"]);
    let soon = (time[0] * 1000 + time[1] / 1000 + 300).to_string();
    for (user, qty, id, hold) in [
        ("ann", "1", "p1", None),
        ("bob", "2", "p2", None),
        ("cy", "1", "p3", None),
        ("dee", "3", "h1", Some("600")),
        ("eve", "1", "h2", Some("600")),
        ("fay", "2", "h3", None),
        ("gus", "1", "h4", Some("600")),
    ] {
        let mut args = vec!["SECKILL.DEDUCT", ITEM, user, qty, "ID", id];
        match (hold, id) {
            (Some(seconds), _) => args.extend_from_slice(&["HOLD", seconds]),
            (None, "h3") => args.extend_from_slice(&["HOLDUNTIL", &soon]),
            _ => {}
        }
        assert!(ok::<i64>(&mut con, &args) >= 0, "{args:?}");
    }
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.CONFIRM", ITEM, "h1"]), 1);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.REFUND", ITEM, "h2"]), 1);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.REFUND", ITEM, "p2"]), 2);
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", ITEM, "ann", "2"]);
    ok::<i64>(&mut con, &["SECKILL.DEDUCT", ITEM, "hal", "1"]);
    // h3 lapses (the timer releases it and writes its expire entry); h4
    // stays held.
    wait_until(
        "the table to hold the whole sale",
        Duration::from_secs(30),
        || {
            let rows = statuses(&pg);
            rows.len() == 9
                && rows.contains(&("h3".into(), "expired".into()))
                && rows.contains(&("h2".into(), "refunded".into()))
                && rows.contains(&("p2".into(), "refunded".into()))
                && undelivered(&mut server.client()) == 0
        },
    );
    wait_until("nothing pending", Duration::from_secs(10), || {
        let summary: Vec<redis::Value> = ok(
            &mut server.client(),
            &["XPENDING", STREAM, "seckill-orders"],
        );
        matches!(summary.first(), Some(redis::Value::Int(0)))
    });

    let (code, report) = check(&server, &pg);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["differences"], json!([]));
    assert_eq!(left_out(&report), (0, vec![]));
    assert_eq!(report["compared"], json!(7));
    // 1+2+1+3+1+2+1 with ids, 2+1 without.
    let totals = json!({"sold": 14, "held": 1, "refunded": 3, "lapsed": 2});
    assert_eq!(report["totals"]["table"], totals);
    assert_eq!(report["totals"]["module"], totals);
    assert_eq!(report["totals"]["info"], totals);
    // The same as a table, for people.
    let (code, text) = reconcile(&server, &pg, &["--item", ITEM]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("agrees with the table"), "{text}");
    assert!(text.contains("Redis and the table agree"), "{text}");
    // --stream finds the item by its stream.
    let (code, out) = reconcile(&server, &pg, &["--stream", STREAM, "--json"]);
    assert_eq!(code, 0, "{out}");
    let document: Json = serde_json::from_str(&out).expect("JSON");
    assert_eq!(document["items"].as_array().map(Vec::len), Some(1), "{out}");
    assert_eq!(document["items"][0]["item"], json!(ITEM));
    // Usage errors.
    assert_eq!(reconcile(&server, &pg, &[]).0, 2);
    assert_eq!(reconcile(&server, &pg, &["--item"]).0, 2);
    assert_eq!(
        reconcile(&server, &pg, &["--item", ITEM, "--bogus", "x"]).0,
        2
    );

    // Drift 1: a row deleted.
    sql(
        &pg,
        "CREATE TABLE saved AS SELECT * FROM seckill_orders WHERE order_id = 'p1';
         DELETE FROM seckill_orders WHERE order_id = 'p1'",
    );
    let (code, report) = check(&server, &pg);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        report["differences"],
        json!([{"order_id": "p1", "kind": "record_without_row", "fields": [],
                "table": null, "module": {"user": "ann", "qty": 1, "status": "purchased"}}])
    );
    sql(
        &pg,
        "INSERT INTO seckill_orders SELECT * FROM saved; DROP TABLE saved",
    );
    assert_eq!(check(&server, &pg).0, 0);

    // Drift 2: a row's status changed.
    sql(
        &pg,
        "UPDATE seckill_orders SET status = 'refunded' WHERE order_id = 'h1'",
    );
    let (code, report) = check(&server, &pg);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        report["differences"],
        json!([{"order_id": "h1", "kind": "mismatch", "fields": ["status"],
                "table": {"user": "dee", "qty": 3, "status": "refunded"},
                "module": {"user": "dee", "qty": 3, "status": "confirmed"}}])
    );
    sql(
        &pg,
        "UPDATE seckill_orders SET status = 'confirmed' WHERE order_id = 'h1'",
    );

    // Drift 3: a row with no record, and another user and quantity.
    sql(
        &pg,
        "INSERT INTO seckill_orders (item, order_id, user_id, qty, status, stock_after,
             created_at_ms, updated_at_ms, last_entry_ms, last_entry_seq)
         VALUES ('{sku:rec}', 'forged', 'zed', 5, 'purchased', 0, 0, 0, 0, 0);
         UPDATE seckill_orders SET user_id = 'mallory', qty = 9 WHERE order_id = 'p3'",
    );
    let (code, report) = check(&server, &pg);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        report["differences"],
        json!([
            {"order_id": "forged", "kind": "row_without_record", "fields": [],
             "table": {"user": "zed", "qty": 5, "status": "purchased"}, "module": null},
            {"order_id": "p3", "kind": "mismatch", "fields": ["user", "qty"],
             "table": {"user": "mallory", "qty": 9, "status": "purchased"},
             "module": {"user": "cy", "qty": 1, "status": "purchased"}},
        ])
    );
    sql(
        &pg,
        "DELETE FROM seckill_orders WHERE order_id = 'forged';
         UPDATE seckill_orders SET user_id = 'cy', qty = 1 WHERE order_id = 'p3'",
    );

    // Drift 4: a purchase without a request id lost from the table.
    sql(
        &pg,
        "CREATE TABLE saved AS SELECT * FROM seckill_orders WHERE user_id = 'hal';
         DELETE FROM seckill_orders WHERE user_id = 'hal'",
    );
    let (code, report) = check(&server, &pg);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        report["differences"],
        json!([{"order_id": null, "kind": "anonymous_units", "user": "hal",
                "table": 0, "module": 1}])
    );
    sql(
        &pg,
        "INSERT INTO seckill_orders SELECT * FROM saved; DROP TABLE saved",
    );
    assert_eq!(check(&server, &pg).0, 0);

    // With the consumer stopped, a refund made in Redis is not drift while
    // its entry waits, undelivered, for the consumer: it is left out.
    stop(consumer);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.REFUND", ITEM, "p1"]), 1);
    let (code, report) = check(&server, &pg);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(left_out(&report), (1, vec!["p1".to_owned()]));
    assert_eq!(report["left_out"]["undelivered_entries"], json!(1));
    // Drift 5: the refund's entry is deleted before the consumer sees it
    // (as a trim that outran the consumer would): the table will never
    // learn of it, so it is real drift now and no longer left out.
    let last: Vec<(String, Vec<(String, String)>)> =
        ok(&mut con, &["XREVRANGE", STREAM, "+", "-", "COUNT", "1"]);
    ok::<i64>(&mut con, &["XDEL", STREAM, &last[0].0]);
    let (code, report) = check(&server, &pg);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(left_out(&report), (0, vec![]));
    assert_eq!(
        report["differences"],
        json!([{"order_id": "p1", "kind": "mismatch", "fields": ["status"],
                "table": {"user": "ann", "qty": 1, "status": "purchased"},
                "module": {"user": "ann", "qty": 1, "status": "refunded"}}])
    );
    assert_eq!(report["totals"]["table"]["refunded"], json!(3));
    assert_eq!(report["totals"]["module"]["refunded"], json!(4));
    let (code, text) = reconcile(&server, &pg, &["--item", ITEM]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("1 difference"), "{text}");
    // Repaired by hand.
    sql(
        &pg,
        "UPDATE seckill_orders SET status = 'refunded' WHERE order_id = 'p1'",
    );
    assert_eq!(check(&server, &pg).0, 0);

    // A sale made while the consumer is stopped is left out, not drift,
    // while its entry is undelivered; another read by a consumer that never
    // acknowledges it is left out while pending.
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", ITEM, "ivy", "1", "ID", "late-1"],
    );
    let (code, report) = check(&server, &pg);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(left_out(&report), (1, vec!["late-1".to_owned()]));
    assert_eq!(report["left_out"]["undelivered_entries"], json!(1));
    ok::<redis::Value>(
        &mut con,
        &[
            "XREADGROUP",
            "GROUP",
            "seckill-orders",
            "ghost",
            "COUNT",
            "10",
            "STREAMS",
            STREAM,
            ">",
        ],
    );
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", ITEM, "jo", "1", "ID", "late-2"],
    );
    let (code, report) = check(&server, &pg);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        left_out(&report),
        (2, vec!["late-1".to_owned(), "late-2".to_owned()])
    );
    assert_eq!(report["left_out"]["pending_entries"], json!(1));
    assert_eq!(report["left_out"]["undelivered_entries"], json!(1));

    // Once the consumer drained them (claiming the pending one), nothing is
    // left out and everything agrees.
    let consumer = start_consumer(&server, &pg);
    wait_until("the late sales to be rows", Duration::from_secs(30), || {
        statuses(&pg).len() == 11
    });
    wait_until(
        "reconcile to agree with nothing left out",
        Duration::from_secs(30),
        || {
            let (code, report) = check(&server, &pg);
            code == 0 && left_out(&report).0 == 0
        },
    );

    // A hold that just lapsed is still held in the table until the module
    // releases it and writes its expire entry: left out, not drift, for
    // --lapse-grace-ms. The timer that releases it waits while clients are
    // paused for writes; reconcile only reads.
    let time: Vec<i64> = ok(&mut con, &["TIME"]);
    let deadline = (time[0] * 1000 + time[1] / 1000 + 300).to_string();
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            ITEM,
            "kim",
            "1",
            "ID",
            "lapse-1",
            "HOLDUNTIL",
            &deadline,
        ],
    );
    wait_until("the hold to be a row", Duration::from_secs(30), || {
        statuses(&pg).contains(&("lapse-1".into(), "held".into()))
    });
    ok::<String>(&mut con, &["CLIENT", "PAUSE", "20000", "WRITE"]);
    std::thread::sleep(Duration::from_millis(500));
    let (code, report) = check(&server, &pg);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(left_out(&report), (1, vec!["lapse-1".to_owned()]));
    assert_eq!(report["left_out"]["lapses_unreleased"], json!(1));
    // Past the grace, it is drift.
    let (code, out) = reconcile(
        &server,
        &pg,
        &["--item", ITEM, "--json", "--lapse-grace-ms", "0"],
    );
    assert_eq!(code, 1, "{out}");
    let document: Json = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        document["items"][0]["differences"],
        json!([{"order_id": "lapse-1", "kind": "mismatch", "fields": ["status"],
                "table": {"user": "kim", "qty": 1, "status": "held"},
                "module": {"user": "kim", "qty": 1, "status": "expired"}}])
    );
    ok::<String>(&mut con, &["CLIENT", "UNPAUSE"]);
    wait_until("the lapse to be a row", Duration::from_secs(30), || {
        statuses(&pg).contains(&("lapse-1".into(), "expired".into()))
    });
    wait_until("reconcile to agree again", Duration::from_secs(30), || {
        let (code, report) = check(&server, &pg);
        code == 0 && left_out(&report).0 == 0
    });
    stop(consumer);
}

/// The timer and its service in the repository, as systemd reads them:
/// checked with `systemd-analyze verify` where the machine has it.
#[test]
fn the_reconcile_timer_and_service_verify() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let service = std::fs::read_to_string(dir.join("seckill-orders-reconcile.service"))
        .expect("orders/seckill-orders-reconcile.service");
    let timer = std::fs::read_to_string(dir.join("seckill-orders-reconcile.timer"))
        .expect("orders/seckill-orders-reconcile.timer");
    for required in [
        "[Service]",
        "Type=oneshot",
        "\nEnvironmentFile=",
        "reconcile",
    ] {
        assert!(service.contains(required), "the service has no {required}");
    }
    for required in ["[Timer]", "OnUnitActiveSec=", "[Install]"] {
        assert!(timer.contains(required), "the timer has no {required}");
    }
    // The URLs, passwords and all, come from the environment file.
    assert!(!service.contains("-url"), "{service}");
    let analyze = Command::new("systemd-analyze")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !analyze.is_ok_and(|status| status.success()) {
        eprintln!("systemd-analyze is not installed: only the units' sections were checked");
        return;
    }
    // verify wants the binary the service names to exist: copies of the
    // units point at the one cargo built.
    let copies = tempfile::tempdir().expect("temp dir");
    let binary = env!("CARGO_BIN_EXE_seckill-orders");
    let local = service.replace("/usr/local/bin/seckill-orders", binary);
    std::fs::write(
        copies.path().join("seckill-orders-reconcile.service"),
        local,
    )
    .expect("write the service");
    let timer_copy = copies.path().join("seckill-orders-reconcile.timer");
    std::fs::write(&timer_copy, &timer).expect("write the timer");
    let output = Command::new("systemd-analyze")
        .arg("verify")
        .arg(copies.path().join("seckill-orders-reconcile.service"))
        .arg(&timer_copy)
        .output()
        .expect("run systemd-analyze");
    let complaints = String::from_utf8_lossy(&output.stderr);
    // Outside a booted systemd only complaints about these units count.
    let about_units: Vec<&str> = complaints
        .lines()
        .filter(|line| line.contains("seckill-orders-reconcile"))
        .collect();
    assert!(about_units.is_empty(), "{complaints}");
}

#[test]
fn a_drop_is_reconciled_size_by_size() {
    const DROP: &str = "{sku:rec}:drop";
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
            "2",
            "STREAM",
            STREAM,
        ],
    );
    let consumer = start_consumer(&server, &pg);
    for args in [
        &["ann", "1", "ID", "d1", "VARIANT", "42"][..],
        &["bob", "1", "ID", "d2", "VARIANT", "43", "HOLD", "600"],
        &["cy", "1", "VARIANT", "43"],
        &["cy", "1", "VARIANT", "42"],
    ] {
        let mut call = vec!["SECKILL.DEDUCT", DROP];
        call.extend_from_slice(args);
        assert!(ok::<i64>(&mut con, &call) >= 0, "{call:?}");
    }
    let rows = |pg: &Postgres| -> i64 {
        let mut client = Client::connect(&pg.url(), NoTls).expect("connect to PostgreSQL");
        client
            .query_one(
                "SELECT count(*) FROM seckill_orders WHERE item = $1",
                &[&DROP],
            )
            .map(|row| row.get(0))
            .unwrap_or(0)
    };
    wait_until(
        "the table to hold the drop",
        Duration::from_secs(30),
        || rows(&pg) == 4 && undelivered(&mut con) == 0,
    );
    stop(consumer);
    let report = |server: &Server, pg: &Postgres| -> (i32, Json) {
        let (code, out) = reconcile(server, pg, &["--item", DROP, "--json"]);
        let document: Json =
            serde_json::from_str(&out).unwrap_or_else(|_| panic!("not JSON: {out}"));
        (code, document["items"][0].clone())
    };
    let (code, agreed) = report(&server, &pg);
    assert_eq!(code, 0, "{agreed}");
    assert_eq!(agreed["differences"], json!([]), "{agreed}");

    // The size of an order, and of units bought without an id, is compared.
    sql(
        &pg,
        "UPDATE seckill_orders SET variant = '43' WHERE order_id = 'd1'",
    );
    sql(
        &pg,
        "UPDATE seckill_orders SET variant = '42' \
         WHERE item = '{sku:rec}:drop' AND user_id = 'cy' AND variant = '43'",
    );
    let (code, drifted) = report(&server, &pg);
    assert_eq!(code, 1, "{drifted}");
    let differences = drifted["differences"].as_array().expect("differences");
    let mismatch = differences
        .iter()
        .find(|difference| difference["order_id"] == json!("d1"))
        .expect("d1 differs");
    assert_eq!(mismatch["fields"], json!(["variant"]), "{drifted}");
    assert_eq!(mismatch["module"]["variant"], json!("42"));
    assert_eq!(mismatch["table"]["variant"], json!("43"));
    let anonymous: Vec<(&str, i64, i64)> = differences
        .iter()
        .filter(|difference| difference["kind"] == json!("anonymous_units"))
        .map(|difference| {
            (
                difference["variant"].as_str().unwrap_or_default(),
                difference["table"].as_i64().unwrap_or(-1),
                difference["module"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    assert_eq!(anonymous, [("42", 2, 1), ("43", 0, 1)], "{drifted}");
    let (_, text) = reconcile(&server, &pg, &["--item", DROP]);
    assert!(text.contains("(no id) cy (43)"), "{text}");
}
