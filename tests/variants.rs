//! Items with variants on a real server: a drop of sizes under one limit,
//! raced for by many clients; holds, lapses, refunds and confirmations per
//! variant on a master, its replica, its AOF and a reload; every refusal
//! changing nothing.

mod common;

use common::{error, info_field, ok, rewrite_aof, snapshot, Server};
use redis::{Connection, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::thread;

const SIZES: [(&str, i64); 3] = [("42", 300), ("43", 450), ("44", 250)];
const USERS: usize = 20_000;
const CLIENTS: usize = 8;

fn wait_for_replica(master: &mut Connection) {
    let acked: i64 = ok(master, &["WAIT", "1", "10000"]);
    assert_eq!(acked, 1, "the replica did not acknowledge");
}

/// The entries of `stream` as field maps.
fn entries(con: &mut Connection, stream: &str) -> Vec<BTreeMap<String, String>> {
    let reply: Vec<(String, Vec<String>)> = ok(con, &["XRANGE", stream, "-", "+"]);
    reply
        .into_iter()
        .map(|(_, fields)| {
            fields
                .chunks(2)
                .map(|pair| (pair[0].clone(), pair[1].clone()))
                .collect()
        })
        .collect()
}

#[test]
fn a_drop_of_three_sizes_sells_every_pair_once_under_one_limit() {
    let server = Server::start();
    let mut con = server.client();
    let mut init = vec!["SECKILL.INIT", "{drop:7}", "VARIANTS", "3"];
    let stocks: Vec<String> = SIZES.iter().map(|(_, stock)| stock.to_string()).collect();
    for ((size, _), stock) in SIZES.iter().zip(&stocks) {
        init.extend([*size, stock.as_str()]);
    }
    init.extend(["LIMIT", "1", "STREAM", "{drop:7}:orders"]);
    assert_eq!(ok::<i64>(&mut con, &init), 1);
    let url = server.url();
    // Each client clicks for its share of the users, each user twice on
    // random sizes (a retry of the same click, and a second size).
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let url = url.clone();
            thread::spawn(move || {
                let mut con = redis::Client::open(url)
                    .and_then(|c| c.get_connection())
                    .expect("connect");
                let mut bought: Vec<(String, String, String)> = Vec::new();
                let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ client as u64;
                let mut random = move |n: usize| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    (seed % n as u64) as usize
                };
                for user in (client..USERS).step_by(CLIENTS) {
                    let name = format!("user:{user}");
                    for click in 0..2 {
                        let size = SIZES[random(SIZES.len())].0;
                        let id = format!("order:{user}:{click}");
                        let mut pipe = redis::pipe();
                        for _ in 0..2 {
                            pipe.cmd("SECKILL.DEDUCT")
                                .arg("{drop:7}")
                                .arg(&name)
                                .arg(1)
                                .arg("ID")
                                .arg(&id)
                                .arg("VARIANT")
                                .arg(size);
                        }
                        let replies: Vec<i64> = pipe.query(&mut con).expect("deduct");
                        assert_eq!(replies[0], replies[1], "a retry answers alike");
                        assert!(replies[0] >= -2, "unexpected reply {}", replies[0]);
                        if replies[0] >= 0 {
                            bought.push((name.clone(), id, size.to_owned()));
                        }
                    }
                }
                bought
            })
        })
        .collect();
    let bought: Vec<(String, String, String)> = clients
        .into_iter()
        .flat_map(|client| client.join().expect("client"))
        .collect();
    let total: i64 = SIZES.iter().map(|(_, stock)| stock).sum();
    assert_eq!(bought.len() as i64, total, "every pair of every size sold");
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "{drop:7}"]), 0);
    for (size, stock) in SIZES {
        assert_eq!(
            ok::<i64>(&mut con, &["SECKILL.GET", "{drop:7}", "VARIANT", size]),
            0
        );
        let sold = bought.iter().filter(|(_, _, s)| s == size).count() as i64;
        assert_eq!(sold, stock, "size {size}");
    }
    // Nobody holds more than one pair, whatever the sizes clicked.
    let buyers: BTreeSet<&str> = bought.iter().map(|(user, _, _)| user.as_str()).collect();
    assert_eq!(buyers.len(), bought.len(), "one pair a buyer");
    for (user, _, _) in bought.iter().step_by(97) {
        assert_eq!(
            ok::<i64>(&mut con, &["SECKILL.BOUGHT", "{drop:7}", user]),
            1
        );
    }
    // Every acknowledged purchase is in the order stream once, with its
    // size.
    let events = entries(&mut con, "{drop:7}:orders");
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for event in &events {
        assert_eq!(event["event"], "purchase");
        let earlier = seen.insert(event["request"].clone(), event["variant"].clone());
        assert!(
            earlier.is_none(),
            "{} twice in the stream",
            event["request"]
        );
    }
    let acknowledged: BTreeMap<String, String> = bought
        .iter()
        .map(|(_, id, size)| (id.clone(), size.clone()))
        .collect();
    assert_eq!(seen, acknowledged);
    assert_eq!(info_field(&mut con, "{drop:7}", "sold"), total);
    assert_eq!(info_field(&mut con, "{drop:7}", "variants"), 3);
}

#[test]
fn holds_lapse_refund_and_confirm_per_variant_alike_on_a_replica_the_aof_and_a_reload() {
    let master = Server::start_with(&["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]);
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.INIT",
            "{tee}",
            "VARIANTS",
            "2",
            "red",
            "3",
            "blue",
            "3",
            "LIMIT",
            "2",
            "VARIANTLIMIT",
            "blue",
            "1",
            "STREAM",
            "{tee}:orders",
        ],
    );
    let now = common::server_now_ms(&mut con);
    let soon = (now + 300).to_string();
    // ann holds a red and a blue: her limit is used up...
    for (id, variant) in [("a1", "red"), ("a2", "blue")] {
        let reply: i64 = ok(
            &mut con,
            &[
                "SECKILL.DEDUCT",
                "{tee}",
                "ann",
                "1",
                "ID",
                id,
                "HOLDUNTIL",
                &soon,
                "VARIANT",
                variant,
            ],
        );
        assert!(reply >= 0);
    }
    assert_eq!(
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.DEDUCT",
                "{tee}",
                "ann",
                "1",
                "ID",
                "a3",
                "VARIANT",
                "red"
            ]
        ),
        -2
    );
    // ... blue has its own limit of 1 ...
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "{tee}",
            "bob",
            "1",
            "ID",
            "b1",
            "VARIANT",
            "blue",
            "HOLD",
            "600",
        ],
    );
    assert_eq!(
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.DEDUCT",
                "{tee}",
                "bob",
                "1",
                "ID",
                "b2",
                "VARIANT",
                "blue"
            ]
        ),
        -2
    );
    assert_eq!(
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.DEDUCT",
                "{tee}",
                "cat",
                "1",
                "ID",
                "c1",
                "VARIANT",
                "blue"
            ]
        ),
        0
    );
    // ... confirmed and refunded by request id alone, wherever it is.
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.CONFIRM", "{tee}", "b1"]), 1);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.REFUND", "{tee}", "b1", "DETAIL"]),
        1
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.REFUND", "{tee}", "b1", "DETAIL"]),
        -7
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.CONFIRM", "{tee}", "nope", "DETAIL"]),
        -9
    );
    // ann's holds lapse: the sweep gives them back, and her limit.
    let expired_variants = |con: &mut Connection| {
        entries(con, "{tee}:orders")
            .into_iter()
            .filter(|event| event["event"] == "expire")
            .map(|event| event["variant"].clone())
            .collect::<BTreeSet<_>>()
    };
    common::wait_until("the sweep to release the holds", common::PATIENCE, || {
        expired_variants(&mut con).len() == 2
    });
    assert_eq!(
        expired_variants(&mut con),
        BTreeSet::from(["blue".to_owned(), "red".to_owned()])
    );
    assert_eq!(info_field(&mut con, "{tee}", "expired"), 2);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.CONFIRM", "{tee}", "a1", "DETAIL"]),
        -8
    );
    assert_eq!(
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.DEDUCT",
                "{tee}",
                "ann",
                "2",
                "ID",
                "a4",
                "VARIANT",
                "red"
            ]
        ),
        1
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "{tee}"]), 3);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.BOUGHT", "{tee}", "ann"]), 2);
    assert_eq!(
        ok::<i64>(
            &mut con,
            &["SECKILL.BOUGHT", "{tee}", "ann", "VARIANT", "blue"]
        ),
        0
    );
    let status: Vec<Value> = ok(&mut con, &["SECKILL.STATUS", "{tee}", "a2"]);
    let status: Vec<String> = status
        .into_iter()
        .map(|value| redis::from_redis_value(value).unwrap_or_default())
        .collect();
    assert_eq!(status[1], "lapsed");
    assert_eq!(status[9], "blue");
    let on_master = snapshot(&mut con, "{tee}");
    wait_for_replica(&mut con);
    assert_eq!(snapshot(&mut replica.client(), "{tee}"), on_master);
    rewrite_aof(&mut con);
    ok::<String>(&mut con, &["DEBUG", "LOADAOF"]);
    assert_eq!(snapshot(&mut con, "{tee}"), on_master);
    ok::<String>(&mut con, &["DEBUG", "RELOAD"]);
    assert_eq!(snapshot(&mut con, "{tee}"), on_master);
    // A copy through DUMP and RESTORE is the same sale, its order stream
    // not vouched for until a caller allowed to write it writes to it.
    common::dump_and_restore(&mut con, "{tee}", "{tee}:copy");
    let unvouched = |fields: Vec<(String, i64)>| {
        fields
            .into_iter()
            .filter(|(field, _)| field != "stream_confirmed")
            .collect::<Vec<_>>()
    };
    assert_eq!(
        unvouched(snapshot(&mut con, "{tee}:copy").0),
        unvouched(on_master.0.clone())
    );
    assert_eq!(info_field(&mut con, "{tee}:copy", "stream_confirmed"), 0);
}

/// `VARIANTS` as (name, stock) pairs.
fn variants(con: &mut Connection, key: &str) -> Option<Vec<(String, i64)>> {
    let reply: Option<Vec<(String, i64)>> = ok(con, &["SECKILL.VARIANTS", key]);
    reply
}

#[test]
fn variants_names_each_size_with_its_stock_in_init_order() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.INIT",
            "{v}",
            "VARIANTS",
            "3",
            "9",
            "3",
            "10",
            "2",
            "8",
            "UNLIMITED",
            "LIMIT",
            "5",
        ],
    );
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "{v}", "a", "1", "VARIANT", "10"],
    );
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "{v}",
            "b",
            "2",
            "ID",
            "r1",
            "VARIANT",
            "9",
            "HOLD",
            "600",
        ],
    );
    let listed = variants(&mut con, "{v}").expect("an item");
    let names: Vec<&str> = listed.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["9", "10", "8"], "the order INIT named them in");
    for (name, stock) in &listed {
        let single: i64 = ok(&mut con, &["SECKILL.GET", "{v}", "VARIANT", name]);
        assert_eq!(*stock, single, "variant {name}");
    }
    assert_eq!(listed[0].1, 1);
    assert_eq!(listed[1].1, 1);
    // A refunded hold's units are back in the stock VARIANTS reports.
    ok::<i64>(&mut con, &["SECKILL.REFUND", "{v}", "r1"]);
    assert_eq!(
        variants(&mut con, "{v}").expect("an item")[0],
        ("9".into(), 3)
    );
    ok::<i64>(&mut con, &["SECKILL.INIT", "{v}:plain", "5"]);
    assert_eq!(variants(&mut con, "{v}:plain"), Some(vec![]));
    assert_eq!(variants(&mut con, "{v}:none"), None);
    ok::<String>(&mut con, &["SET", "{v}:string", "x"]);
    assert_eq!(
        error(&mut con, &["SECKILL.VARIANTS", "{v}:string"]),
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    assert_eq!(
        error(&mut con, &["SECKILL.VARIANTS", "{v}", "extra"]),
        "ERR wrong number of arguments for 'seckill.variants' command"
    );
}

#[test]
fn refusals_name_their_cause_and_change_nothing() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.INIT",
            "{d}",
            "VARIANTS",
            "2",
            "s",
            "1",
            "m",
            "1",
            "LIMIT",
            "1",
        ],
    );
    ok::<i64>(&mut con, &["SECKILL.INIT", "{d}:plain", "5"]);
    let before = snapshot(&mut con, "{d}");
    for (args, wording) in [
        (
            vec!["SECKILL.DEDUCT", "{d}", "ann", "1"],
            "ERR the item sells variants: name one with VARIANT",
        ),
        (
            vec!["SECKILL.DEDUCT", "{d}", "ann", "1", "VARIANT", "xl"],
            "ERR no such variant",
        ),
        (
            vec!["SECKILL.DEDUCT", "{d}:plain", "ann", "1", "VARIANT", "s"],
            "ERR the item has no variants",
        ),
        (
            vec!["SECKILL.DEDUCT", "{d}", "ann", "0", "VARIANT", "s"],
            "ERR value is out of range, must be positive",
        ),
        (
            vec!["SECKILL.ADD", "{d}", "5"],
            "ERR the item sells variants: name one with VARIANT",
        ),
        (
            vec!["SECKILL.SCAN", "{d}", "0"],
            "ERR the item sells variants: name one with VARIANT",
        ),
        (
            vec!["SECKILL.TAKE", "{d}", "1", "ID", "t1"],
            "ERR the item sells variants: name one with VARIANT",
        ),
        (
            vec![
                "SECKILL.MDEDUCT",
                "2",
                "{d}",
                "1",
                "{d}:plain",
                "1",
                "ann",
                "o1",
            ],
            "ERR the item sells variants: name one with VARIANT",
        ),
        (vec!["SECKILL.MDEDUCT", "2", "{d}", "1", "{d}:plain", "1", "ann", "o1", "VARIANT", "1", "s", "VARIANT", "2", "s"], "ERR the item has no variants"),
        (vec!["SECKILL.MDEDUCT", "2", "{d}", "1", "{d}:plain", "1", "ann", "o1", "VARIANT", "1", "xl"], "ERR no such variant"),
        (vec!["SECKILL.MDEDUCT", "2", "{d}", "1", "{d}:plain", "1", "ann", "o1", "VARIANT", "0", "s"], "ERR VARIANT takes a line number from 1 to numlines, each line once, and a variant name"),
        (vec!["SECKILL.MDEDUCT", "2", "{d}", "1", "{d}:plain", "1", "ann", "o1", "VARIANT", "3", "s"], "ERR VARIANT takes a line number from 1 to numlines, each line once, and a variant name"),
        (vec!["SECKILL.MDEDUCT", "2", "{d}", "1", "{d}:plain", "1", "ann", "o1", "VARIANT", "1", "s", "VARIANT", "1", "m"], "ERR VARIANT takes a line number from 1 to numlines, each line once, and a variant name"),
        (vec!["SECKILL.MDEDUCT", "2", "{d}", "1", "{d}:plain", "1", "ann", "o1", "VARIANT", "one", "s"], "ERR VARIANT takes a line number from 1 to numlines, each line once, and a variant name"),
        (vec!["SECKILL.MDEDUCT", "2", "{d}", "1", "{d}:plain", "1", "ann", "o1", "VARIANT", "1"], "ERR syntax error"),
        (
            vec!["SECKILL.MCONFIRM", "2", "{d}", "{d}:plain", "o1", "EXTRA"],
            "ERR syntax error",
        ),
        (
            vec!["SECKILL.INIT", "{d}:x", "VARIANTS", "2", "s", "1", "s", "2"],
            "ERR VARIANTS takes 1 to 64 name stock pairs, names of 1 to 64 bytes each named once",
        ),
        (
            vec!["SECKILL.INIT", "{d}:x", "VARIANTS", "0"],
            "ERR VARIANTS takes 1 to 64 name stock pairs, names of 1 to 64 bytes each named once",
        ),
        (
            vec!["SECKILL.INIT", "{d}:x", "VARIANTS", "65"],
            "ERR VARIANTS takes 1 to 64 name stock pairs, names of 1 to 64 bytes each named once",
        ),
        (
            vec!["SECKILL.INIT", "{d}:x", "VARIANTS", "2", "s", "1"],
            "ERR syntax error",
        ),
        (
            vec!["SECKILL.INIT", "{d}:x", "VARIANTS", "1", "s", "-1"],
            "ERR stock must be a non-negative integer",
        ),
        (
            vec![
                "SECKILL.INIT",
                "{d}:x",
                "VARIANTS",
                "1",
                "s",
                "1",
                "VARIANTLIMIT",
                "m",
                "1",
            ],
            "ERR no such variant",
        ),
        (
            vec!["SECKILL.INIT", "{d}:x", "5", "VARIANTLIMIT", "m", "1"],
            "ERR syntax error",
        ),
        // One variant's cap given twice: which was meant is not known.
        (
            vec![
                "SECKILL.INIT",
                "{d}:x",
                "VARIANTS",
                "1",
                "s",
                "5",
                "VARIANTLIMIT",
                "s",
                "1",
                "VARIANTLIMIT",
                "s",
                "3",
            ],
            "ERR syntax error",
        ),
        (vec!["SECKILL.GET", "{d}", "VARIANT"], "ERR syntax error"),
    ] {
        let got = error(&mut con, &args);
        assert!(got.starts_with(wording), "{args:?}: {got}");
    }
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "{d}",
            "ann",
            "1",
            "ID",
            "r1",
            "VARIANT",
            "s",
        ],
    );
    // One request id, one purchase of one variant.
    assert!(error(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            "{d}",
            "ann",
            "1",
            "ID",
            "r1",
            "VARIANT",
            "m"
        ]
    )
    .starts_with("ERR request id was already used"));
    let exists: i64 = ok(&mut con, &["EXISTS", "{d}:x"]);
    assert_eq!(exists, 0);
    assert_ne!(snapshot(&mut con, "{d}"), before);
    assert_eq!(info_field(&mut con, "{d}", "sold"), 1);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.GET", "{d}", "VARIANT", "m"]),
        1
    );
}

/// A write vouching for a restored item's order stream vouches for every
/// variant's, on the master as on its replica (which receives the vouching
/// as `SECKILL.STREAM` for the whole item).
#[test]
fn a_restored_item_s_stream_is_vouched_for_whole_on_master_and_replica() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.INIT",
            "{r}",
            "VARIANTS",
            "2",
            "a",
            "5",
            "b",
            "5",
            "STREAM",
            "{r}:orders",
        ],
    );
    common::dump_and_restore(&mut con, "{r}", "{r}:copy");
    ok::<i64>(&mut con, &["SECKILL.STREAM", "{r}:copy", "{r}:orders"]);
    ok::<i64>(&mut con, &["DEL", "{r}:copy"]);
    let payload: Vec<u8> = ok(&mut con, &["DUMP", "{r}"]);
    ok::<i64>(&mut con, &["DEL", "{r}"]);
    let restored: String = redis::cmd("RESTORE")
        .arg("{r}")
        .arg(0)
        .arg(&payload)
        .query(&mut con)
        .expect("RESTORE");
    assert_eq!(restored, "OK");
    assert_eq!(info_field(&mut con, "{r}", "stream_confirmed"), 0);
    ok::<i64>(
        &mut con,
        &["SECKILL.DEDUCT", "{r}", "ann", "1", "VARIANT", "a"],
    );
    for variant in ["a", "b"] {
        assert_eq!(
            variant_field(&mut con, "{r}", variant, "stream_confirmed"),
            1
        );
    }
    assert_eq!(info_field(&mut con, "{r}", "stream_confirmed"), 1);
    let on_master = snapshot(&mut con, "{r}");
    wait_for_replica(&mut con);
    assert_eq!(snapshot(&mut replica.client(), "{r}"), on_master);
}

/// One integer field of `SECKILL.INFO key VARIANT variant`.
fn variant_field(con: &mut Connection, key: &str, variant: &str, field: &str) -> i64 {
    let fields: Vec<Value> = ok(con, &["SECKILL.INFO", key, "VARIANT", variant]);
    fields
        .chunks(2)
        .find(|pair| pair[0] == Value::BulkString(field.as_bytes().to_vec()))
        .and_then(|pair| redis::from_redis_value(pair[1].clone()).ok())
        .unwrap_or_else(|| panic!("no {field} in INFO {key} VARIANT {variant}"))
}

/// The reply of an MDEDUCT, MCONFIRM or MREFUND: one figure per line.
fn lines(con: &mut Connection, args: &[&str]) -> Vec<Option<i64>> {
    ok(con, args)
}

/// An order of a size and a plain item in one step: each variant line is
/// judged under the limit across the drop's variants, a refused line takes
/// nothing, the whole order is confirmed or refunded in the variant it
/// bought, holds lapse per variant, and the replica, the AOF and the order
/// stream agree with the master.
#[test]
fn an_order_buys_variants_under_the_limit_across_them_all_or_nothing() {
    let master = Server::start_with(&["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]);
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    for args in [
        vec![
            "SECKILL.INIT",
            "{c}drop",
            "VARIANTS",
            "2",
            "s",
            "3",
            "m",
            "1",
            "LIMIT",
            "1",
            "STREAM",
            "{c}orders",
        ],
        vec!["SECKILL.INIT", "{c}case", "5", "STREAM", "{c}orders"],
    ] {
        ok::<i64>(&mut con, &args);
    }
    let order = |user: &str, request: &str, size: &str, rest: &[&str]| -> Vec<String> {
        let mut args = [
            "SECKILL.MDEDUCT",
            "2",
            "{c}drop",
            "1",
            "{c}case",
            "1",
            user,
            request,
            "VARIANT",
            "1",
            size,
        ]
        .map(String::from)
        .to_vec();
        args.extend(rest.iter().map(|arg| arg.to_string()));
        args
    };
    let send = |con: &mut Connection, args: Vec<String>| -> Vec<Option<i64>> {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        lines(con, &args)
    };
    // ann buys the only medium and a case.
    assert_eq!(
        send(&mut con, order("ann", "o1", "m", &[])),
        [Some(0), Some(4)]
    );
    // Her retry replays; a small under her limit of one pair takes nothing.
    assert_eq!(
        send(&mut con, order("ann", "o1", "m", &[])),
        [Some(0), Some(4)]
    );
    assert_eq!(
        send(&mut con, order("ann", "o2", "s", &[])),
        [Some(-2), None]
    );
    assert_eq!(info_field(&mut con, "{c}case", "sold"), 1);
    // The request id names a medium: naming a small with it is refused.
    let mismatch = {
        let args = order("ann", "o1", "s", &[]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        error(&mut con, &args)
    };
    assert!(
        mismatch.starts_with("ERR request id was already used"),
        "{mismatch}"
    );
    // bob's held order is confirmed whole, in the variant it took.
    assert_eq!(
        send(&mut con, order("bob", "o3", "s", &["HOLD", "600"])),
        [Some(2), Some(3)]
    );
    let status: Vec<Value> = ok(&mut con, &["SECKILL.STATUS", "{c}drop", "o3"]);
    let status: Vec<String> = status
        .into_iter()
        .map(|value| redis::from_redis_value(value).unwrap_or_default())
        .collect();
    assert_eq!((status[1].as_str(), status[9].as_str()), ("held", "s"));
    assert_eq!(
        lines(
            &mut con,
            &["SECKILL.MCONFIRM", "2", "{c}drop", "{c}case", "o3"]
        ),
        [Some(1), Some(1)]
    );
    assert_eq!(
        lines(
            &mut con,
            &["SECKILL.MCONFIRM", "2", "{c}drop", "{c}case", "o3"]
        ),
        [Some(0), Some(0)]
    );
    // cat's order is refunded whole: her small goes back to its variant.
    assert_eq!(
        send(&mut con, order("cat", "o4", "s", &["HOLD", "600"])),
        [Some(1), Some(2)]
    );
    assert_eq!(
        lines(
            &mut con,
            &["SECKILL.MREFUND", "2", "{c}drop", "{c}case", "o4", "DETAIL"]
        ),
        [Some(1), Some(1)]
    );
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.GET", "{c}drop", "VARIANT", "s"]),
        2
    );
    // dan's hold lapses: the pair is his to buy again, in another size.
    let now = common::server_now_ms(&mut con);
    let soon = (now + 200).to_string();
    assert_eq!(
        send(&mut con, order("dan", "o5", "s", &["HOLDUNTIL", &soon])),
        [Some(1), Some(2)]
    );
    assert_eq!(
        send(&mut con, order("dan", "o6", "s", &[])),
        [Some(-2), None]
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        send(&mut con, order("dan", "o6", "s", &[])),
        [Some(1), Some(2)]
    );
    // The stream names the variant of each drop line once.
    let events = entries(&mut con, "{c}orders");
    let bought: Vec<(&str, &str)> = events
        .iter()
        .filter(|event| event.get("item").map(String::as_str) == Some("{c}drop"))
        .filter(|event| matches!(event["event"].as_str(), "purchase" | "hold"))
        .map(|event| {
            (
                event["request"].as_str(),
                event.get("variant").map_or("", String::as_str),
            )
        })
        .collect();
    assert_eq!(
        bought,
        [
            ("o1", "m"),
            ("o3", "s"),
            ("o4", "s"),
            ("o5", "s"),
            ("o6", "s")
        ]
    );
    let on_master = (snapshot(&mut con, "{c}drop"), snapshot(&mut con, "{c}case"));
    wait_for_replica(&mut con);
    let mut on_replica = replica.client();
    assert_eq!(
        (
            snapshot(&mut on_replica, "{c}drop"),
            snapshot(&mut on_replica, "{c}case")
        ),
        on_master
    );
    rewrite_aof(&mut con);
    ok::<String>(&mut con, &["DEBUG", "LOADAOF"]);
    assert_eq!(
        (snapshot(&mut con, "{c}drop"), snapshot(&mut con, "{c}case")),
        on_master
    );
}

/// RELEASE naming holds in several variants releases each in its own,
/// and the replica releases the same ones.
#[test]
fn release_lets_holds_of_several_variants_go_alike_on_the_replica() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    ok::<i64>(
        &mut con,
        &["SECKILL.INIT", "{r}", "VARIANTS", "2", "a", "5", "b", "5"],
    );
    for (user, id, variant) in [("ann", "h1", "a"), ("bob", "h2", "b"), ("cat", "h3", "a")] {
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.DEDUCT",
                "{r}",
                user,
                "1",
                "ID",
                id,
                "HOLD",
                "600",
                "VARIANT",
                variant,
            ],
        );
    }
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.RELEASE", "{r}", "h2", "nope", "h1"]),
        2
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.RELEASE", "{r}", "h2"]), 0);
    for (variant, stock) in [("a", 4), ("b", 5)] {
        assert_eq!(
            ok::<i64>(&mut con, &["SECKILL.GET", "{r}", "VARIANT", variant]),
            stock
        );
    }
    let status: Vec<Value> = ok(&mut con, &["SECKILL.STATUS", "{r}", "h3"]);
    assert_eq!(
        redis::from_redis_value::<String>(status[1].clone()).unwrap(),
        "held"
    );
    let on_master = snapshot(&mut con, "{r}");
    wait_for_replica(&mut con);
    assert_eq!(snapshot(&mut replica.client(), "{r}"), on_master);
}

/// A RELEASE of holds in several variants whose order stream has no room
/// for every event is refused before any variant's hold is released.
#[test]
fn a_release_across_variants_refused_for_the_stream_releases_nothing() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.INIT",
            "{d}",
            "VARIANTS",
            "2",
            "a",
            "5",
            "b",
            "5",
            "STREAM",
            "{d}:o",
        ],
    );
    for (user, id, variant) in [("u1", "r1", "a"), ("u2", "r2", "b")] {
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.DEDUCT",
                "{d}",
                user,
                "1",
                "ID",
                id,
                "HOLD",
                "900",
                "VARIANT",
                variant,
            ],
        );
    }
    ok::<String>(
        &mut con,
        &[
            "XSETID",
            "{d}:o",
            "18446744073709551615-18446744073709551614",
        ],
    );
    let before = snapshot(&mut con, "{d}");
    let refused = error(&mut con, &["SECKILL.RELEASE", "{d}", "r1", "r2"]);
    assert!(refused.contains("nothing was changed"), "{refused}");
    assert_eq!(snapshot(&mut con, "{d}"), before);
    assert_eq!(ok::<i64>(&mut con, &["XLEN", "{d}:o"]), 2);
}

/// Stock moves between the parts of a split drop size by size: TAKE,
/// ADD ... ID and SETTLE name the variant, a transfer id names one
/// transfer of one variant, and the replica, the AOF and a reload agree.
#[test]
fn transfers_move_stock_variant_by_variant_alike_on_a_replica_and_the_aof() {
    let master = Server::start_with(&["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]);
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    for part in ["{p}:0", "{p}:1"] {
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.INIT",
                part,
                "VARIANTS",
                "2",
                "s",
                "5",
                "m",
                "5",
                "LIMIT",
                "1",
            ],
        );
    }
    let take = [
        "SECKILL.TAKE",
        "{p}:0",
        "3",
        "ID",
        "t1",
        "TO",
        "{p}:1",
        "VARIANT",
        "s",
    ];
    assert_eq!(ok::<i64>(&mut con, &take), 3);
    // A retry takes nothing more.
    assert_eq!(ok::<i64>(&mut con, &take), 3);
    let stock = |con: &mut Connection, part: &str, variant: &str| -> i64 {
        ok(con, &["SECKILL.GET", part, "VARIANT", variant])
    };
    assert_eq!(stock(&mut con, "{p}:0", "s"), 2);
    assert_eq!(stock(&mut con, "{p}:0", "m"), 5);
    let open: Vec<Vec<Value>> = ok(&mut con, &["SECKILL.TRANSFERS", "{p}:0"]);
    let open: Vec<Vec<String>> = open
        .into_iter()
        .map(|entry| {
            entry
                .into_iter()
                .map(|value| redis::from_redis_value(value).unwrap_or_default())
                .collect()
        })
        .collect();
    assert_eq!(open, vec![vec!["t1", "3", "{p}:1", "s"]]);
    // One transfer id, one transfer of one variant; a variant must be
    // named; every refusal changes nothing.
    let before = (snapshot(&mut con, "{p}:0"), snapshot(&mut con, "{p}:1"));
    for (args, wording) in [
        (
            vec!["SECKILL.TAKE", "{p}:0", "1", "ID", "t1", "VARIANT", "m"],
            "ERR transfer id was already used for another variant",
        ),
        (
            vec!["SECKILL.TAKE", "{p}:0", "1", "ID", "t2"],
            "ERR the item sells variants: name one with VARIANT",
        ),
        (
            vec!["SECKILL.TAKE", "{p}:0", "1", "ID", "t2", "VARIANT", "xl"],
            "ERR no such variant",
        ),
        (
            vec![
                "SECKILL.TAKE",
                "{p}:0",
                "1",
                "ID",
                "t2",
                "VARIANT",
                "s",
                "VARIANT",
                "m",
            ],
            "ERR syntax error",
        ),
        (
            vec!["SECKILL.SETTLE", "{p}:0", "t1", "VARIANT", "m"],
            "ERR transfer id was already used for another variant",
        ),
        (
            vec!["SECKILL.SETTLE", "{p}:0", "t1", "VARIANT"],
            "ERR syntax error",
        ),
        (
            vec!["SECKILL.ADD", "{p}:1", "3", "ID", "t1"],
            "ERR the item sells variants: name one with VARIANT",
        ),
        (
            vec![
                "SECKILL.ADD",
                "{p}:1",
                "3",
                "ID",
                "t1",
                "VARIANT",
                "s",
                "EXTRA",
            ],
            "ERR syntax error",
        ),
    ] {
        let got = error(&mut con, &args);
        assert!(got.starts_with(wording), "{args:?}: {got}");
    }
    assert_eq!(
        (snapshot(&mut con, "{p}:0"), snapshot(&mut con, "{p}:1")),
        before
    );
    let arrive = ["SECKILL.ADD", "{p}:1", "3", "ID", "t1", "VARIANT", "s"];
    assert_eq!(ok::<i64>(&mut con, &arrive), 8);
    assert_eq!(ok::<i64>(&mut con, &arrive), 8);
    assert!(error(
        &mut con,
        &["SECKILL.ADD", "{p}:1", "3", "ID", "t1", "VARIANT", "m"]
    )
    .starts_with("ERR transfer id was already used for another variant"));
    assert_eq!(stock(&mut con, "{p}:1", "s"), 8);
    assert_eq!(stock(&mut con, "{p}:1", "m"), 5);
    // The units that arrived sell under the part's limit across sizes.
    assert!(
        ok::<i64>(
            &mut con,
            &["SECKILL.DEDUCT", "{p}:1", "ann", "1", "VARIANT", "s"]
        ) >= 0
    );
    assert_eq!(
        ok::<i64>(
            &mut con,
            &["SECKILL.DEDUCT", "{p}:1", "ann", "1", "VARIANT", "m"]
        ),
        -2
    );
    let settle = ["SECKILL.SETTLE", "{p}:0", "t1", "VARIANT", "s"];
    assert_eq!(ok::<i64>(&mut con, &settle), 1);
    assert_eq!(ok::<i64>(&mut con, &settle), 0);
    let open: Vec<Value> = ok(&mut con, &["SECKILL.TRANSFERS", "{p}:0"]);
    assert!(open.is_empty());
    assert_eq!(info_field(&mut con, "{p}:0", "moved_out"), 3);
    assert_eq!(info_field(&mut con, "{p}:1", "moved_in"), 3);
    let on_master = (snapshot(&mut con, "{p}:0"), snapshot(&mut con, "{p}:1"));
    wait_for_replica(&mut con);
    let mut on_replica = replica.client();
    assert_eq!(
        (
            snapshot(&mut on_replica, "{p}:0"),
            snapshot(&mut on_replica, "{p}:1")
        ),
        on_master
    );
    rewrite_aof(&mut con);
    ok::<String>(&mut con, &["DEBUG", "LOADAOF"]);
    assert_eq!(
        (snapshot(&mut con, "{p}:0"), snapshot(&mut con, "{p}:1")),
        on_master
    );
    ok::<String>(&mut con, &["DEBUG", "RELOAD"]);
    assert_eq!(
        (snapshot(&mut con, "{p}:0"), snapshot(&mut con, "{p}:1")),
        on_master
    );
}

#[test]
fn an_import_fills_one_variant_under_the_limit_across_them_alike_on_a_replica_and_the_aof() {
    let master = Server::start_with(&["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]);
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    let drop = "{im}";
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.INIT",
            drop,
            "VARIANTS",
            "2",
            "42",
            "3",
            "43",
            "3",
            "LIMIT",
            "1",
            "STREAM",
            "{im}:orders",
        ],
    );
    let import = |con: &mut Connection, args: &[&str]| -> i64 {
        let mut call = vec!["SECKILL.IMPORT", drop];
        call.extend_from_slice(args);
        ok(con, &call)
    };
    assert_eq!(
        import(
            &mut con,
            &[
                "VARIANT",
                "42",
                "REQUEST",
                "o-1",
                "ann",
                "1",
                "purchased",
                "0",
                "2",
                "REQUEST",
                "o-2",
                "bob",
                "1",
                "held",
                "4102444800000",
                "1",
            ],
        ),
        2
    );
    assert_eq!(import(&mut con, &["VARIANT", "43", "BUYER", "cy", "1"]), 1);
    let before = snapshot(&mut con, drop);
    for (args, wording) in [
        // Over the limit across sizes: ann holds a 42 already.
        (
            vec![
                "VARIANT",
                "43",
                "REQUEST",
                "o-3",
                "ann",
                "1",
                "purchased",
                "0",
                "2",
            ],
            "ERR the records put a user above the item's LIMIT",
        ),
        // A request id another size recorded.
        (
            vec![
                "VARIANT",
                "43",
                "REQUEST",
                "o-1",
                "dee",
                "1",
                "purchased",
                "0",
                "2",
            ],
            "ERR a request id to import is in the item already",
        ),
        (
            vec!["REQUEST", "o-4", "dee", "1", "purchased", "0", "2"],
            "ERR the item sells variants: name one with VARIANT",
        ),
        (
            vec!["VARIANT", "44", "BUYER", "dee", "1"],
            "ERR no such variant",
        ),
        (vec!["VARIANT", "43"], "ERR wrong number of arguments"),
        (
            vec!["VARIANT", "43", "VARIANT", "42", "BUYER", "dee", "1"],
            "ERR syntax error",
        ),
    ] {
        let mut call = vec!["SECKILL.IMPORT", drop];
        call.extend_from_slice(&args);
        let got = error(&mut con, &call);
        assert!(got.starts_with(wording), "{args:?}: {got}");
    }
    assert_eq!(
        snapshot(&mut con, drop),
        before,
        "a refused import changes nothing"
    );
    // The records act as the sales they stand for: a retry gets its reply,
    // the hold is one, and the limit across sizes holds.
    assert_eq!(
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.DEDUCT",
                drop,
                "ann",
                "1",
                "ID",
                "o-1",
                "VARIANT",
                "42"
            ]
        ),
        2
    );
    assert_eq!(
        ok::<i64>(
            &mut con,
            &["SECKILL.DEDUCT", drop, "cy", "1", "VARIANT", "42"]
        ),
        -2
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.CONFIRM", drop, "o-2"]), 1);
    let variants: Vec<(String, i64)> = ok(&mut con, &["SECKILL.VARIANTS", drop]);
    assert_eq!(variants, [("42".to_owned(), 1), ("43".to_owned(), 2)]);
    let on_master = snapshot(&mut con, drop);
    wait_for_replica(&mut con);
    assert_eq!(snapshot(&mut replica.client(), drop), on_master);
    rewrite_aof(&mut con);
    ok::<String>(&mut con, &["DEBUG", "LOADAOF"]);
    assert_eq!(snapshot(&mut con, drop), on_master);
    ok::<String>(&mut con, &["DEBUG", "RELOAD"]);
    assert_eq!(snapshot(&mut con, drop), on_master);
}
