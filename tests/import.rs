//! SECKILL.IMPORT: records loaded into an item, as a rebuild from the order
//! database does; judged whole against the item's bookkeeping, replicated
//! and saved like every write.

mod common;

use common::{dump, info_field, ok, server_now_ms, snapshot, wait_until, Server};
use redis::Value;
use std::time::Duration;

fn import(con: &mut redis::Connection, key: &str, records: &[&[&str]]) -> redis::RedisResult<i64> {
    let mut cmd = redis::cmd("SECKILL.IMPORT");
    cmd.arg(key);
    for record in records {
        cmd.arg(*record);
    }
    cmd.query(con)
}

#[test]
fn imported_records_answer_as_the_sales_that_made_them() {
    let mut master = Server::start_with(&["--appendonly", "yes"]);
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.INIT",
            "{sku:1}",
            "20",
            "LIMIT",
            "3",
            "STREAM",
            "{sku:1}:orders",
        ],
    );
    let far = (server_now_ms(&mut con) + 600_000).to_string();
    let soon = (server_now_ms(&mut con) + 300).to_string();
    let records: &[&[&str]] = &[
        &["BUYER", "walk-in", "2"],
        &["REQUEST", "o1", "ann", "1", "purchased", "0", "17"],
        &["REQUEST", "o2", "bob", "2", "held", &far, "15"],
        &["REQUEST", "o3", "bob", "1", "confirmed", &far, "14"],
        &["REQUEST", "o4", "cyd", "3", "refunded", "0", "11"],
        &["REQUEST", "o5", "dee", "1", "lapsed", "1", "10"],
        &["REQUEST", "o6", "eve", "1", "held", &soon, "9"],
    ];
    assert_eq!(import(&mut con, "{sku:1}", records).unwrap(), 7);
    // Held: walk-in 2, ann 1, bob 3, eve 1 (until her hold lapses).
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "{sku:1}"]), 13);
    for (field, value) in [
        ("sold", 11),
        ("refunded", 3),
        ("expired", 1),
        ("held", 3),
        ("holds", 2),
    ] {
        assert_eq!(info_field(&mut con, "{sku:1}", field), value, "{field}");
    }
    // A retry under an imported id gets the reply the first call got; a
    // refunded or lapsed id answers -4.
    assert_eq!(
        ok::<i64>(
            &mut con,
            &["SECKILL.DEDUCT", "{sku:1}", "ann", "1", "ID", "o1"]
        ),
        17
    );
    assert_eq!(
        ok::<i64>(
            &mut con,
            &["SECKILL.DEDUCT", "{sku:1}", "cyd", "3", "ID", "o4"]
        ),
        -4
    );
    assert_eq!(
        ok::<i64>(
            &mut con,
            &["SECKILL.DEDUCT", "{sku:1}", "dee", "1", "ID", "o5"]
        ),
        -4
    );
    // Limits carry over: bob holds 3 of 3.
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.DEDUCT", "{sku:1}", "bob", "1"]),
        -2
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.CONFIRM", "{sku:1}", "o2"]),
        1
    );
    // No order event for what was imported; eve's hold lapses on its own,
    // with its event.
    wait_until(
        "the sweep releases eve's hold",
        Duration::from_secs(10),
        || ok::<i64>(&mut con, &["XLEN", "{sku:1}:orders"]) == 2,
    );
    assert_eq!(info_field(&mut con, "{sku:1}", "expired"), 2);
    let entries: Vec<Value> = ok(&mut con, &["XRANGE", "{sku:1}:orders", "-", "+"]);
    let kinds: Vec<String> = entries
        .iter()
        .map(|entry| format!("{entry:?}"))
        .map(|text| {
            if text.contains("\"expire\"") {
                "expire".into()
            } else {
                text
            }
        })
        .collect();
    assert!(kinds.contains(&"expire".to_owned()), "{kinds:?}");
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "10000"]), 1);
    let on_master = snapshot(&mut con, "{sku:1}");
    assert_eq!(
        snapshot(&mut replica.client(), "{sku:1}"),
        on_master,
        "replica differs"
    );
    master.restart();
    let mut con = master.client();
    assert_eq!(
        snapshot(&mut con, "{sku:1}"),
        on_master,
        "AOF replay differs"
    );
    ok::<String>(&mut con, &["DEBUG", "RELOAD"]);
    assert_eq!(
        snapshot(&mut con, "{sku:1}"),
        on_master,
        "RDB reload differs"
    );
}

#[test]
fn a_refused_import_imports_nothing() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "5", "LIMIT", "2"]);
    assert_eq!(
        import(
            &mut con,
            "sku:1",
            &[&["REQUEST", "o1", "ann", "1", "purchased", "0", "4"]]
        )
        .unwrap(),
        1
    );
    let before = dump(&mut con, "sku:1");
    let refusals: &[(&[&[&str]], &str)] = &[
        (
            &[
                &["BUYER", "bob", "1"],
                &["REQUEST", "o1", "bob", "1", "purchased", "0", "3"],
            ],
            "a request id to import is in the item already",
        ),
        (
            &[
                &["REQUEST", "o2", "bob", "1", "purchased", "0", "3"],
                &["REQUEST", "o2", "bob", "1", "purchased", "0", "3"],
            ],
            "a request id to import is in the item already",
        ),
        (
            &[
                &["BUYER", "bob", "2"],
                &["BUYER", "cyd", "2"],
                &["BUYER", "dee", "1"],
            ],
            "the supply is smaller",
        ),
        (&[&["BUYER", "ann", "2"]], "the records put a user above"),
        (
            &[&["REQUEST", "o3", "bob", "1", "paid", "0", "3"]],
            "status must be",
        ),
        (
            &[&["REQUEST", "o3", "bob", "1", "held", "0", "3"]],
            "bad record to import: a held or confirmed record needs a deadline",
        ),
        (
            &[&["REQUEST", "o3", "bob", "1", "purchased", "0", "-1"]],
            "bad record to import: request reply is not a stock the item had",
        ),
        (
            &[&["REQUEST", "o3", "bob", "1", "purchased", "0", "6"]],
            "bad record to import: request reply is not a stock the item had",
        ),
        (
            &[&["BUYER", "bob", "0"]],
            "value is out of range, must be positive",
        ),
        (&[&["BUYER", "bob"]], "syntax error"),
        (&[&["SELLER", "bob", "1"]], "syntax error"),
    ];
    for (records, expected) in refusals {
        let error = import(&mut con, "sku:1", records).expect_err("refused");
        assert!(error.to_string().contains(expected), "{records:?}: {error}");
        assert_eq!(
            dump(&mut con, "sku:1"),
            before,
            "{records:?} changed the item"
        );
    }
    assert_eq!(
        import(&mut con, "nope", &[&["BUYER", "bob", "1"]]).unwrap(),
        -3
    );
}
