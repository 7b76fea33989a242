//! SECKILL.SCAN: an item's buyers and request ids, a bounded page a call,
//! every record seen once over a full scan while the sale goes on.

mod common;

use common::{ok, server_now_ms, Server};
use redis::{Connection, Value};
use std::collections::{BTreeMap, BTreeSet};

/// A record as SCAN replies it, as strings and integers.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Record {
    Buyer {
        user: String,
        units: i64,
    },
    Request {
        id: String,
        user: String,
        qty: i64,
        status: String,
        deadline: i64,
    },
}

fn text(value: &Value) -> String {
    match value {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(text) => text.clone(),
        other => panic!("not a string: {other:?}"),
    }
}

fn integer(value: &Value) -> i64 {
    match value {
        Value::Int(number) => *number,
        other => panic!("not an integer: {other:?}"),
    }
}

fn record(value: &Value) -> Record {
    let Value::Array(fields) = value else {
        panic!("not a record: {value:?}");
    };
    match (text(&fields[0]).as_str(), fields.len()) {
        ("buyer", 3) => Record::Buyer {
            user: text(&fields[1]),
            units: integer(&fields[2]),
        },
        ("request", 6) => Record::Request {
            id: text(&fields[1]),
            user: text(&fields[2]),
            qty: integer(&fields[3]),
            status: text(&fields[4]),
            deadline: integer(&fields[5]),
        },
        other => panic!("unknown record {other:?}: {value:?}"),
    }
}

/// One SCAN call: the next cursor and the records.
fn scan_page(con: &mut Connection, key: &str, cursor: &str, count: usize) -> (String, Vec<Record>) {
    let reply: Value = ok(
        con,
        &["SECKILL.SCAN", key, cursor, "COUNT", &count.to_string()],
    );
    let Value::Array(parts) = reply else {
        panic!("not an array: {reply:?}");
    };
    let Value::Array(records) = &parts[1] else {
        panic!("no records: {parts:?}");
    };
    assert!(
        records.len() <= count,
        "{} records for COUNT {count}",
        records.len()
    );
    (text(&parts[0]), records.iter().map(record).collect())
}

fn scan_all(con: &mut Connection, key: &str, count: usize) -> Vec<Record> {
    let (mut cursor, mut all) = ("0".to_owned(), Vec::new());
    loop {
        let (next, records) = scan_page(con, key, &cursor, count);
        all.extend(records);
        if next == "0" {
            return all;
        }
        cursor = next;
    }
}

#[test]
fn a_scan_lists_every_buyer_and_request_with_its_status() {
    let server = Server::start_with(&["--seckill.sweep-interval-ms", "60000"]);
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "100", "LIMIT", "5"]);
    let now = server_now_ms(&mut con);
    let (far, past) = (now + 600_000, 1);
    let calls: &[&[&str]] = &[
        &["SECKILL.DEDUCT", "sku:1", "walk-in", "2"],
        &["SECKILL.DEDUCT", "sku:1", "ann", "1", "ID", "paid"],
        &[
            "SECKILL.DEDUCT",
            "sku:1",
            "bob",
            "2",
            "ID",
            "held",
            "HOLDUNTIL",
            &far.to_string(),
        ],
        &[
            "SECKILL.DEDUCT",
            "sku:1",
            "bob",
            "1",
            "ID",
            "kept",
            "HOLDUNTIL",
            &far.to_string(),
        ],
        &["SECKILL.CONFIRM", "sku:1", "kept"],
        &["SECKILL.DEDUCT", "sku:1", "cyd", "3", "ID", "gone"],
        &["SECKILL.REFUND", "sku:1", "gone"],
        &[
            "SECKILL.DEDUCT",
            "sku:1",
            "dee",
            "1",
            "ID",
            "late",
            "HOLDUNTIL",
            &past.to_string(),
        ],
    ];
    for call in calls {
        assert!(ok::<i64>(&mut con, call) >= 0, "{call:?}");
    }
    let request = |id: &str, user: &str, qty, status: &str, deadline| Record::Request {
        id: id.into(),
        user: user.into(),
        qty,
        status: status.into(),
        deadline,
    };
    let buyer = |user: &str, units| Record::Buyer {
        user: user.into(),
        units,
    };
    let expected: BTreeSet<Record> = [
        buyer("walk-in", 2),
        buyer("ann", 1),
        buyer("bob", 3),
        buyer("cyd", 0),
        // Her hold lapsed, and the sweep is held off: reads count it as
        // given back already.
        buyer("dee", 0),
        request("paid", "ann", 1, "purchased", 0),
        request("held", "bob", 2, "held", far),
        request("kept", "bob", 1, "confirmed", far),
        request("gone", "cyd", 3, "refunded", 0),
        request("late", "dee", 1, "lapsed", past),
    ]
    .into_iter()
    .collect();
    for count in [1, 3, 100] {
        let all = scan_all(&mut con, "sku:1", count);
        assert_eq!(all.len(), expected.len(), "COUNT {count}: {all:?}");
        assert_eq!(all.into_iter().collect::<BTreeSet<_>>(), expected);
    }
    // Units as BOUGHT reports them.
    for (user, units) in [("bob", 3), ("dee", 0), ("cyd", 0)] {
        assert_eq!(
            ok::<i64>(&mut con, &["SECKILL.BOUGHT", "sku:1", user]),
            units
        );
    }
    // The default COUNT is 10, as SCAN's.
    let (cursor, records) = {
        let reply: Value = ok(&mut con, &["SECKILL.SCAN", "sku:1", "0"]);
        let Value::Array(parts) = reply else { panic!() };
        let Value::Array(records) = &parts[1] else {
            panic!()
        };
        (text(&parts[0]), records.len())
    };
    assert_eq!((cursor.as_str(), records), ("0", 10));
}

#[test]
fn scan_answers_like_hscan_for_a_missing_key_and_refuses_bad_input() {
    let server = Server::start();
    let mut con = server.client();
    let reply: Value = ok(&mut con, &["SECKILL.SCAN", "nope", "0"]);
    assert_eq!(
        reply,
        Value::Array(vec![
            Value::BulkString(b"0".to_vec()),
            Value::Array(Vec::new())
        ])
    );
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "10"]);
    for n in 0..5 {
        ok::<i64>(
            &mut con,
            &["SECKILL.DEDUCT", "sku:1", &format!("u{n}"), "1"],
        );
    }
    let (cursor, _) = scan_page(&mut con, "sku:1", "0", 2);
    ok::<String>(&mut con, &["SET", "plain", "1"]);
    let refusals: &[(&[&str], &str)] = &[
        (&["SECKILL.SCAN", "sku:1", "12345"], "ERR invalid cursor"),
        (&["SECKILL.SCAN", "sku:1", "-1"], "ERR invalid cursor"),
        (&["SECKILL.SCAN", "sku:1", "abc"], "ERR invalid cursor"),
        (
            &[
                "SECKILL.SCAN",
                "sku:1",
                &(cursor.parse::<u64>().unwrap() + 1).to_string(),
            ],
            "ERR invalid cursor",
        ),
        (
            &["SECKILL.SCAN", "sku:1", "0", "COUNT", "0"],
            "ERR syntax error",
        ),
        (
            &["SECKILL.SCAN", "sku:1", "0", "COUNT", "x"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["SECKILL.SCAN", "sku:1", "0", "MATCH", "*"],
            "ERR syntax error",
        ),
        (&["SECKILL.SCAN", "plain", "0"], "WRONGTYPE"),
        (&["SECKILL.SCAN", "sku:1"], "ERR wrong number of arguments"),
    ];
    for (call, expected) in refusals {
        let error = redis::cmd(call[0])
            .arg(&call[1..])
            .query::<Value>(&mut con)
            .expect_err("refused");
        let line = format!(
            "{} {}",
            error.code().unwrap_or(""),
            error.detail().unwrap_or("")
        );
        assert!(line.starts_with(expected), "{call:?}: {line}");
    }
    // The scan goes on after the refusals, from the cursor it gave.
    let (_, records) = scan_page(&mut con, "sku:1", &cursor, 100);
    assert_eq!(records.len(), 3);
}

/// The cursor's fingerprint is public (FNV-1a of a record's first bytes),
/// so a client can name a buyer whose name reads, from its second byte
/// on, as a record of its own, and compute the cursor of that position.
/// Read from there, SCAN would report a made-up buyer of 1,000 units.
#[test]
fn a_cursor_forged_inside_a_buyer_name_is_refused() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:1", "10", "LIMIT", "2"]);
    // A length byte of 3 announces a 4-byte id, then 8 bytes of units.
    let mut name = b"Z\x03evil".to_vec();
    name.extend_from_slice(&1_000i64.to_le_bytes());
    let bought: i64 = redis::cmd("SECKILL.DEDUCT")
        .arg("sku:1")
        .arg(&name)
        .arg(1)
        .query(&mut con)
        .unwrap();
    assert_eq!(bought, 9);
    let mut hash: u32 = 0x811c_9dc5;
    for byte in b"\x03evil" {
        hash = (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193);
    }
    // The item's first record starts at 0: its length byte, then "Z".
    let forged = u64::from(hash >> 1 | 1) << 32 | 2;
    let error = redis::cmd("SECKILL.SCAN")
        .arg("sku:1")
        .arg(forged.to_string())
        .arg("COUNT")
        .arg(1)
        .query::<Value>(&mut con)
        .expect_err("a forged cursor is refused");
    assert_eq!(error.detail(), Some("invalid cursor"), "{error:?}");
    let (_, records) = scan_page(&mut con, "sku:1", "0", 10);
    assert_eq!(records.len(), 1);
}

#[test]
fn a_full_scan_of_a_million_records_sees_each_while_buyers_keep_buying() {
    let server = Server::start();
    let mut con = server.client();
    let mut buyer_con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "big", "10000000"]);
    // 500,000 buyers, each with a request id: a million records.
    let buyers = 500_000;
    for start in (0..buyers).step_by(10_000) {
        let mut pipe = redis::pipe();
        for n in start..start + 10_000 {
            pipe.cmd("SECKILL.DEDUCT")
                .arg("big")
                .arg(format!("user:{n}"))
                .arg(1)
                .arg("ID")
                .arg(format!("order:{n}"))
                .ignore();
        }
        let () = pipe.query(&mut con).unwrap();
    }
    let (mut cursor, mut seen, mut calls, mut added) = ("0".to_owned(), BTreeMap::new(), 0, 0);
    loop {
        let (next, records) = scan_page(&mut con, "big", &cursor, 1_000);
        for record in records {
            let name = match record {
                Record::Buyer { user, .. } => user,
                Record::Request { id, .. } => id,
            };
            *seen.entry(name).or_insert(0) += 1;
        }
        calls += 1;
        // Buyers keep buying between the pages: new buyers and more units
        // for those already seen.
        if calls % 10 == 0 {
            let n = buyers + added;
            ok::<i64>(
                &mut buyer_con,
                &[
                    "SECKILL.DEDUCT",
                    "big",
                    &format!("user:{n}"),
                    "1",
                    "ID",
                    &format!("order:{n}"),
                ],
            );
            ok::<i64>(
                &mut buyer_con,
                &["SECKILL.DEDUCT", "big", &format!("user:{added}"), "1"],
            );
            added += 1;
        }
        if next == "0" {
            break;
        }
        cursor = next;
    }
    for n in 0..buyers {
        for name in [format!("user:{n}"), format!("order:{n}")] {
            assert_eq!(
                seen.get(&name),
                Some(&1),
                "{name} seen {:?} times",
                seen.get(&name)
            );
        }
    }
    // Records written during the scan are seen too, at the end.
    assert_eq!(seen.len(), 2 * (buyers + added));
    assert!(
        calls >= 1_000,
        "{calls} calls for a million records at COUNT 1000"
    );
}
