//! SECKILL.SCAN through the Rust client, against a real server with the
//! module: one page at a time, and the iterator that follows the cursor
//! to its end, on sync and async connections, RESP2 and RESP3.

use std::collections::HashSet;

use redis::Connection;
use seckill_client::command;
use seckill_client::{
    AsyncSeckillCommands, BuyerRecord, ConfirmOutcome, Deduct, ErrorKind, Init, RequestRecord,
    RequestStatus, ScanPage, ScanRecord, SeckillCommands,
};
use seckill_harness::{ok, Server};

const FAR_FUTURE_MS: i64 = 4_102_444_800_000; // 2100-01-01

fn connect(server: &Server, resp3: bool) -> Connection {
    let url = format!(
        "redis://127.0.0.1:{}/{}",
        server.port,
        if resp3 { "?protocol=resp3" } else { "" }
    );
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

fn now_ms(con: &mut Connection) -> i64 {
    let time: Vec<i64> = ok(con, &["TIME"]);
    time[0] * 1000 + time[1] / 1000
}

fn buyer(user: &str, units: i64) -> ScanRecord {
    ScanRecord::Buyer(BuyerRecord {
        user: user.to_owned(),
        units,
    })
}

fn request(id: &str, user: &str, qty: i64, status: RequestStatus, deadline: i64) -> ScanRecord {
    ScanRecord::Request(RequestRecord {
        request_id: id.to_owned(),
        user: user.to_owned(),
        qty,
        status,
        deadline,
    })
}

/// An item with a request id of every status and a buyer without one; the
/// records SCAN lists for it, in the order they were written.
fn every_status(con: &mut Connection, key: &str) -> Vec<ScanRecord> {
    let past = now_ms(con) - 60_000;
    assert!(con.seckill_init(&Init::new(key, 100)).unwrap());
    let deduct = |con: &mut Connection, deduct: Deduct| {
        assert!(con.seckill_deduct(&deduct).unwrap().bought());
    };
    deduct(con, Deduct::new(key, "ann", 1).request_id("r-purchased"));
    deduct(
        con,
        Deduct::new(key, "bob", 2)
            .request_id("r-held")
            .hold_until(FAR_FUTURE_MS),
    );
    deduct(
        con,
        Deduct::new(key, "cy", 1)
            .request_id("r-confirmed")
            .hold_until(FAR_FUTURE_MS),
    );
    assert_eq!(
        con.seckill_confirm(key, "r-confirmed").unwrap(),
        ConfirmOutcome::Confirmed
    );
    deduct(con, Deduct::new(key, "dee", 3).request_id("r-refunded"));
    assert_eq!(
        con.seckill_refund(key, "r-refunded").unwrap().units,
        Some(3)
    );
    deduct(
        con,
        Deduct::new(key, "eve", 1)
            .request_id("r-lapsed")
            .hold_until(past),
    );
    deduct(con, Deduct::new(key, "fay", 2));
    vec![
        buyer("ann", 1),
        request("r-purchased", "ann", 1, RequestStatus::Purchased, 0),
        buyer("bob", 2),
        request("r-held", "bob", 2, RequestStatus::Held, FAR_FUTURE_MS),
        buyer("cy", 1),
        request(
            "r-confirmed",
            "cy",
            1,
            RequestStatus::Confirmed,
            FAR_FUTURE_MS,
        ),
        buyer("dee", 0),
        request("r-refunded", "dee", 3, RequestStatus::Refunded, 0),
        buyer("eve", 0),
        request("r-lapsed", "eve", 1, RequestStatus::Lapsed, past),
        buyer("fay", 2),
    ]
}

#[test]
fn a_full_scan_returns_every_record_once_with_its_fields() {
    let server = Server::start();
    for resp3 in [false, true] {
        let mut con = connect(&server, resp3);
        let key = format!("{{sku:every}}:{resp3}");
        let expected = every_status(&mut con, &key);
        for count in [None, Some(1), Some(3), Some(10_000)] {
            let records: Vec<ScanRecord> = con
                .seckill_scan_iter(&key, count)
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(records, expected, "COUNT {count:?}");
        }

        // Page by page: the default page is 10 records.
        let first = con.seckill_scan(&key, 0, None).unwrap();
        assert_ne!(first.cursor, 0);
        assert_eq!(first.records, expected[..10]);
        let last = con.seckill_scan(&key, first.cursor, None).unwrap();
        assert_eq!(
            last,
            ScanPage {
                cursor: 0,
                records: expected[10..].to_vec()
            }
        );

        // In a pipeline, each page decodes as a ScanPage.
        let (page, missing): (ScanPage, ScanPage) = redis::pipe()
            .add_command(command::scan(&key, 0, Some(100)))
            .add_command(command::scan("{sku:every}:missing", 0, None))
            .query(&mut con)
            .unwrap();
        assert_eq!((page.cursor, page.records), (0, expected.clone()));
        assert_eq!(missing, ScanPage::default());
        assert_eq!(RequestStatus::Lapsed.name(), "lapsed");
    }
}

#[test]
fn a_scan_sees_every_earlier_record_while_purchases_happen_between_pages() {
    let server = Server::start();
    let mut con = connect(&server, false);
    let mut buyers = connect(&server, true);
    let key = "{sku:busy}";
    con.seckill_init(&Init::new(key, 1_000_000)).unwrap();
    let mut pipe = redis::pipe();
    for n in 0..3000 {
        pipe.add_command(
            Deduct::new(key, format!("user-{n}"), 1)
                .request_id(format!("order-{n}"))
                .to_cmd(),
        )
        .ignore();
    }
    pipe.query::<()>(&mut con).unwrap();

    let mut seen = Vec::new();
    let mut later = 0;
    let mut cursor = 0;
    loop {
        let page = con.seckill_scan(key, cursor, Some(97)).unwrap();
        for record in page.records {
            seen.push(match record {
                ScanRecord::Buyer(b) => format!("buyer {}", b.user),
                ScanRecord::Request(r) => {
                    if let Some(n) = r.request_id.strip_prefix("order-") {
                        assert_eq!(r.user, format!("user-{n}"));
                        assert_eq!((r.qty, r.status), (1, RequestStatus::Purchased));
                    }
                    format!("request {}", r.request_id)
                }
            });
        }
        if page.cursor == 0 {
            break;
        }
        cursor = page.cursor;
        // Between pages: an earlier buyer buys more, a new one buys with an id.
        buyers
            .seckill_deduct(&Deduct::new(key, format!("user-{}", later % 3000), 1))
            .unwrap();
        buyers
            .seckill_deduct(
                &Deduct::new(key, format!("late-{later}"), 1).request_id(format!("late-{later}")),
            )
            .unwrap();
        later += 1;
    }
    assert!(later > 50, "{later} pages");
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "a record came twice");
    for n in 0..3000 {
        assert!(unique.contains(&format!("buyer user-{n}")), "user-{n}");
        assert!(unique.contains(&format!("request order-{n}")), "order-{n}");
    }

    // The iterator over the same item, with purchases going on from another
    // connection as it goes.
    let mut iter_seen = HashSet::new();
    for (i, record) in con.seckill_scan_iter(key, Some(500)).enumerate() {
        let name = match record.unwrap() {
            ScanRecord::Buyer(b) => format!("buyer {}", b.user),
            ScanRecord::Request(r) => format!("request {}", r.request_id),
        };
        assert!(iter_seen.insert(name), "a record came twice");
        if i % 500 == 0 {
            buyers
                .seckill_deduct(
                    &Deduct::new(key, format!("iter-{i}"), 1).request_id(format!("iter-{i}")),
                )
                .unwrap();
        }
    }
    assert!(unique.iter().all(|name| iter_seen.contains(*name)));
}

#[test]
fn a_missing_item_scans_as_nothing() {
    let server = Server::start();
    let mut con = connect(&server, true);
    assert_eq!(
        con.seckill_scan("{sku:none}", 0, None).unwrap(),
        ScanPage::default()
    );
    assert_eq!(con.seckill_scan_iter("{sku:none}", None).count(), 0);
}

#[test]
fn a_bad_cursor_is_an_invalid_argument() {
    let server = Server::start();
    let mut con = connect(&server, false);
    con.seckill_init(&Init::new("k", 10)).unwrap();
    con.seckill_deduct(&Deduct::new("k", "ann", 1)).unwrap();
    let err = con.seckill_scan("k", 12345, None).unwrap_err();
    assert_eq!(err.kind(), Some(ErrorKind::InvalidArgument));
    let seckill = err.seckill().unwrap();
    assert_eq!(
        (seckill.code.as_str(), seckill.message.as_str()),
        ("ERR", "invalid cursor")
    );
    assert!(!err.retryable());
}

#[test]
fn async_connections_scan_too() {
    let server = Server::start();
    let expected = every_status(&mut connect(&server, false), "{sku:async}");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client =
            redis::Client::open(format!("redis://127.0.0.1:{}/?protocol=resp3", server.port))
                .unwrap();
        let mut con = client.get_multiplexed_async_connection().await.unwrap();
        let mut records = Vec::new();
        let mut scan = con.seckill_scan_iter("{sku:async}", Some(2));
        while let Some(record) = scan.next_record().await {
            records.push(record.unwrap());
        }
        assert_eq!(records, expected);
        let page = con.seckill_scan("{sku:async}", 0, Some(4)).await.unwrap();
        assert_eq!(page.records, expected[..4]);
        assert_eq!(
            con.seckill_scan("{sku:none}", 0, None).await.unwrap(),
            ScanPage::default()
        );
        let err = con.seckill_scan("{sku:async}", 1, None).await.unwrap_err();
        assert_eq!(err.kind(), Some(ErrorKind::InvalidArgument));
    });
}
