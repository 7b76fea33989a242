//! SECKILL.MDEDUCT, MCONFIRM and MREFUND: an order of several items taken
//! whole or not at all, confirmed whole, refunded whole, on the master, its
//! replicas and its AOF alike, in a cluster slot and under ACL.

mod common;

use common::cluster::Cluster;
use common::{error, info, ok, server_now_ms, snapshot, Server};
use redis::{Connection, Value};
use std::collections::BTreeMap;
use std::time::Duration;

const FAR: &str = "4102444800000";

/// An order's reply: each line's integer, or None for nil.
fn lines(reply: &Value) -> Vec<Option<i64>> {
    match reply {
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Int(figure) => Some(*figure),
                Value::Nil => None,
                other => panic!("a line replied {other:?}"),
            })
            .collect(),
        other => panic!("an order replied {other:?}"),
    }
}

fn order(con: &mut Connection, args: &[&str]) -> Vec<Option<i64>> {
    lines(&ok::<Value>(con, args))
}

/// Where `request` stands on `key`: STATUS's status field.
fn status(con: &mut Connection, key: &str, request: &str) -> String {
    let reply: Vec<Value> = ok(con, &["SECKILL.STATUS", key, request]);
    redis::from_redis_value(reply[1].clone()).unwrap()
}

fn stream_len(con: &mut Connection, stream: &str) -> i64 {
    ok(con, &["XLEN", stream])
}

#[test]
fn a_bundle_is_taken_whole_or_not_at_all() {
    let server = Server::start();
    let mut con = server.client();
    for (key, stock) in [("{b}:phone", "2"), ("{b}:case", "1"), ("{b}:watch", "5")] {
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.INIT",
                key,
                stock,
                "LIMIT",
                "1",
                "STREAM",
                "{b}:orders",
            ],
        );
    }
    let bundle = |user: &'static str, id: &'static str| {
        vec![
            "SECKILL.MDEDUCT",
            "2",
            "{b}:phone",
            "1",
            "{b}:case",
            "1",
            user,
            id,
        ]
    };
    assert_eq!(order(&mut con, &bundle("ann", "o1")), [Some(1), Some(0)]);
    assert_eq!(stream_len(&mut con, "{b}:orders"), 2);
    // The case is gone: bob's bundle takes nothing, the phone included.
    assert_eq!(order(&mut con, &bundle("bob", "o2")), [None, Some(-1)]);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "{b}:phone"]), 1);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.BOUGHT", "{b}:phone", "bob"]),
        0
    );
    assert_eq!(status(&mut con, "{b}:phone", "o2"), "unknown");
    assert_eq!(stream_len(&mut con, "{b}:orders"), 2);
    // A retry gets the first reply and writes nothing.
    assert_eq!(order(&mut con, &bundle("ann", "o1")), [Some(1), Some(0)]);
    assert_eq!(stream_len(&mut con, "{b}:orders"), 2);
    // The id of an order of other items is refused, and changes nothing.
    let other_items = [
        "SECKILL.MDEDUCT",
        "2",
        "{b}:phone",
        "1",
        "{b}:watch",
        "1",
        "ann",
        "o1",
    ];
    assert_eq!(
        error(&mut con, &other_items),
        "ERR request id was already used for an order of other items"
    );
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "{b}:watch"]), 5);
    let other_qty = [
        "SECKILL.MDEDUCT",
        "2",
        "{b}:phone",
        "2",
        "{b}:case",
        "1",
        "ann",
        "o1",
    ];
    assert_eq!(
        error(&mut con, &other_qty),
        "ERR request id was already used by another user or for another quantity"
    );
    // A line on a missing item refuses the order with -3.
    let missing = [
        "SECKILL.MDEDUCT",
        "2",
        "{b}:watch",
        "1",
        "{b}:none",
        "1",
        "cy",
        "o3",
    ];
    assert_eq!(order(&mut con, &missing), [None, Some(-3)]);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "{b}:watch"]), 5);
    // Each line is an order of its item: STATUS and BOUGHT see it.
    assert_eq!(status(&mut con, "{b}:case", "o1"), "purchased");
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.BOUGHT", "{b}:phone", "ann"]),
        1
    );
}

#[test]
fn bad_orders_get_redis_errors_and_change_nothing() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "{e}:a", "5"]);
    ok::<i64>(&mut con, &["SECKILL.INIT", "{e}:b", "5"]);
    ok::<String>(&mut con, &["SET", "{e}:text", "x"]);
    let too_many = (0..65)
        .flat_map(|n| [format!("{{e}}:k{n}"), "1".to_owned()])
        .collect::<Vec<_>>();
    let mut sixty_five = vec!["SECKILL.MDEDUCT", "65"];
    sixty_five.extend(too_many.iter().map(String::as_str));
    sixty_five.extend(["u", "r"]);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["SECKILL.MDEDUCT", "0", "{e}:a", "1", "u", "r"],
            "ERR numlines must be 1 to 64",
        ),
        (
            vec!["SECKILL.MDEDUCT", "x", "{e}:a", "1", "u", "r"],
            "ERR numlines must be 1 to 64",
        ),
        (sixty_five, "ERR numlines must be 1 to 64"),
        (
            vec!["SECKILL.MDEDUCT", "2", "{e}:a", "1", "u", "r"],
            "ERR syntax error",
        ),
        (
            vec!["SECKILL.MDEDUCT", "2", "{e}:a", "1", "{e}:a", "1", "u", "r"],
            "ERR a key appears on more than one line",
        ),
        (
            vec!["SECKILL.MDEDUCT", "2", "{e}:a", "1", "{e}:b", "0", "u", "r"],
            "ERR value is out of range, must be positive",
        ),
        (
            vec![
                "SECKILL.MDEDUCT",
                "2",
                "{e}:a",
                "1",
                "{e}:b",
                "-1",
                "u",
                "r",
            ],
            "ERR value is out of range, must be positive",
        ),
        (
            vec!["SECKILL.MDEDUCT", "1", "{e}:a", "1", "u", "r", "HOLD", "0"],
            "ERR invalid hold time in 'seckill.mdeduct' command",
        ),
        (
            vec![
                "SECKILL.MDEDUCT",
                "1",
                "{e}:a",
                "1",
                "u",
                "r",
                "HOLD",
                "1",
                "HOLD",
                "1",
            ],
            "ERR syntax error",
        ),
        (
            vec!["SECKILL.MDEDUCT", "1", "{e}:a", "1", "u", "r", "NOPE"],
            "ERR syntax error",
        ),
        (
            vec![
                "SECKILL.MDEDUCT",
                "2",
                "{e}:a",
                "1",
                "{e}:text",
                "1",
                "u",
                "r",
            ],
            "WRONGTYPE Operation against a key holding the wrong kind of value",
        ),
        (
            vec!["SECKILL.MDEDUCT", "1", "{e}:a", "1", "u"],
            "ERR wrong number of arguments for 'seckill.mdeduct' command",
        ),
        (
            vec!["SECKILL.MCONFIRM", "2", "{e}:a", "{e}:a", "r"],
            "ERR a key appears on more than one line",
        ),
        (
            vec!["SECKILL.MCONFIRM", "0", "{e}:a", "r"],
            "ERR numkeys must be 1 to 64",
        ),
        (
            vec!["SECKILL.MREFUND", "2", "{e}:a", "r"],
            "ERR syntax error",
        ),
        (
            vec!["SECKILL.MREFUND", "1", "{e}:a", "r", "DETAILS"],
            "ERR syntax error",
        ),
    ];
    let before = (info(&mut con, "{e}:a"), info(&mut con, "{e}:b"));
    for (args, expected) in cases {
        assert_eq!(error(&mut con, &args), expected, "{args:?}");
    }
    assert_eq!((info(&mut con, "{e}:a"), info(&mut con, "{e}:b")), before);
}

#[test]
fn a_held_order_is_confirmed_whole_or_lapses_whole() {
    let server = Server::start();
    let mut con = server.client();
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "seckill.sweep-interval-ms", "60000"],
    );
    ok::<i64>(&mut con, &["SECKILL.INIT", "{h}:a", "5"]);
    ok::<i64>(&mut con, &["SECKILL.INIT", "{h}:b", "5"]);
    let held: Vec<Value> = ok(
        &mut con,
        &[
            "SECKILL.MDEDUCT",
            "2",
            "{h}:a",
            "1",
            "{h}:b",
            "2",
            "dan",
            "o1",
            "HOLDUNTIL",
            FAR,
            "WITHDEADLINE",
        ],
    );
    assert_eq!(lines(&held[0]), [Some(4), Some(3)]);
    assert_eq!(held[1], Value::Int(FAR.parse().unwrap()));
    let both = ["SECKILL.MCONFIRM", "2", "{h}:a", "{h}:b", "o1"];
    assert_eq!(order(&mut con, &both), [Some(1), Some(1)]);
    assert_eq!(order(&mut con, &both), [Some(0), Some(0)]);
    assert_eq!(status(&mut con, "{h}:b", "o1"), "confirmed");
    // A hold that lapses lapses on every line, at one deadline.
    let soon = (server_now_ms(&mut con) + 100).to_string();
    let lapsing = [
        "SECKILL.MDEDUCT",
        "2",
        "{h}:a",
        "1",
        "{h}:b",
        "1",
        "eve",
        "o2",
        "HOLDUNTIL",
        &soon,
    ];
    assert_eq!(order(&mut con, &lapsing), [Some(3), Some(2)]);
    std::thread::sleep(Duration::from_millis(150));
    let confirm_late = ["SECKILL.MCONFIRM", "2", "{h}:a", "{h}:b", "o2", "DETAIL"];
    assert_eq!(order(&mut con, &confirm_late), [Some(-8), Some(-8)]);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "{h}:a"]), 4);
    // One line refunded alone: the order cannot be confirmed, and the
    // other line stays held.
    let third = [
        "SECKILL.MDEDUCT",
        "2",
        "{h}:a",
        "1",
        "{h}:b",
        "1",
        "fay",
        "o3",
        "HOLDUNTIL",
        FAR,
    ];
    assert_eq!(order(&mut con, &third), [Some(3), Some(2)]);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.REFUND", "{h}:b", "o3"]), 1);
    let confirm_third = ["SECKILL.MCONFIRM", "2", "{h}:a", "{h}:b", "o3", "DETAIL"];
    assert_eq!(order(&mut con, &confirm_third), [None, Some(-7)]);
    assert_eq!(status(&mut con, "{h}:a", "o3"), "held");
    let refund_third = ["SECKILL.MREFUND", "2", "{h}:a", "{h}:b", "o3", "DETAIL"];
    assert_eq!(order(&mut con, &refund_third), [Some(1), Some(-7)]);
    assert_eq!(order(&mut con, &refund_third), [Some(-7), Some(-7)]);
    let unknown = ["SECKILL.MREFUND", "2", "{h}:a", "{h}:none", "o9", "DETAIL"];
    assert_eq!(order(&mut con, &unknown), [Some(-9), Some(-3)]);
    let plain = ["SECKILL.MREFUND", "1", "{h}:a", "o9"];
    assert_eq!(order(&mut con, &plain), [Some(0)]);
    // Every unit back but dan's 3.
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "{h}:a"]), 4);
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "{h}:b"]), 3);
}

/// A few orders of every kind, on `con`'s server.
fn trade(con: &mut Connection) {
    ok::<i64>(con, &["SECKILL.INIT", "{r}:a", "4", "STREAM", "{r}:orders"]);
    ok::<i64>(con, &["SECKILL.INIT", "{r}:b", "3", "LIMIT", "2"]);
    for (n, user) in ["gil", "hal", "ivy", "jon"].iter().enumerate() {
        let id = format!("o{n}");
        ok::<Value>(
            con,
            &[
                "SECKILL.MDEDUCT",
                "2",
                "{r}:a",
                "1",
                "{r}:b",
                "1",
                user,
                &id,
                "HOLD",
                "600",
            ],
        );
    }
    ok::<Value>(con, &["SECKILL.MCONFIRM", "2", "{r}:a", "{r}:b", "o0"]);
    ok::<Value>(con, &["SECKILL.MREFUND", "2", "{r}:a", "{r}:b", "o1"]);
    ok::<Value>(con, &["SECKILL.MDEDUCT", "1", "{r}:a", "2", "kim", "o4"]);
    // An order judged while a hold of its item has lapsed and waits for
    // the sweep: it goes with the moment it was judged at.
    ok::<String>(
        con,
        &["CONFIG", "SET", "seckill.sweep-interval-ms", "60000"],
    );
    ok::<i64>(con, &["SECKILL.INIT", "{r}:c", "1", "LIMIT", "1"]);
    let soon = (server_now_ms(con) + 50).to_string();
    ok::<i64>(
        con,
        &[
            "SECKILL.DEDUCT",
            "{r}:c",
            "lea",
            "1",
            "ID",
            "c1",
            "HOLDUNTIL",
            &soon,
        ],
    );
    std::thread::sleep(Duration::from_millis(100));
    let reply: Value = ok(
        con,
        &[
            "SECKILL.MDEDUCT",
            "2",
            "{r}:c",
            "1",
            "{r}:b",
            "1",
            "lea",
            "o5",
        ],
    );
    assert_eq!(lines(&reply), [Some(0), Some(0)]);
}

#[test]
fn replicas_and_the_aof_apply_orders_as_the_master_did() {
    let mut master = Server::start_with(&["--appendonly", "yes"]);
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    trade(&mut con);
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "5000"]), 1);
    let seen = |con: &mut Connection| {
        let mut seen = BTreeMap::new();
        for key in ["{r}:a", "{r}:b", "{r}:c"] {
            seen.insert(key.to_owned(), snapshot(con, key));
            for n in 0..6 {
                let id = format!("o{n}");
                let reply: Value = ok(con, &["SECKILL.STATUS", key, &id]);
                seen.insert(format!("{key} {id}"), (Vec::new(), format!("{reply:?}")));
            }
        }
        seen.insert(
            "stream".to_owned(),
            (
                vec![("len".to_owned(), stream_len(con, "{r}:orders"))],
                String::new(),
            ),
        );
        seen
    };
    let on_master = seen(&mut con);
    assert_eq!(seen(&mut replica.client()), on_master);
    master.restart();
    assert_eq!(seen(&mut master.client()), on_master);
}

#[test]
fn a_cluster_refuses_an_order_across_slots_and_acl_checks_every_line() {
    let cluster = Cluster::start(3, 0);
    let mut con = cluster.client();
    for key in ["{z}:a", "{z}:b"] {
        let created: i64 = redis::cmd("SECKILL.INIT")
            .arg(&[key, "5"])
            .query(&mut con)
            .expect("INIT");
        assert_eq!(created, 1);
    }
    let reply: Value = redis::cmd("SECKILL.MDEDUCT")
        .arg(&["2", "{z}:a", "1", "{z}:b", "1", "u", "r1"])
        .query(&mut con)
        .expect("an order in one slot");
    assert_eq!(lines(&reply), [Some(4), Some(4)]);
    // On the node that owns {z}: two keys of different slots.
    let owner = cluster.owner(cluster.slot("{z}:a"));
    let mut node = cluster.con(owner);
    let across = [
        "SECKILL.MDEDUCT",
        "2",
        "{z}:a",
        "1",
        "other",
        "1",
        "u",
        "r2",
    ];
    assert!(error(&mut node, &across).starts_with("CROSSSLOT"));
    let across = ["SECKILL.MCONFIRM", "2", "{z}:a", "other", "r1"];
    assert!(error(&mut node, &across).starts_with("CROSSSLOT"));
    drop(cluster);

    let server = Server::start();
    let mut admin = server.client();
    ok::<i64>(&mut admin, &["SECKILL.INIT", "shop:a", "5"]);
    ok::<i64>(&mut admin, &["SECKILL.INIT", "secret:b", "5"]);
    ok::<String>(
        &mut admin,
        &["ACL", "SETUSER", "app", "on", ">pw", "~shop:*", "+@all"],
    );
    let mut app = server.client();
    ok::<String>(&mut app, &["AUTH", "app", "pw"]);
    let sneaky = [
        "SECKILL.MDEDUCT",
        "2",
        "shop:a",
        "1",
        "secret:b",
        "1",
        "u",
        "r",
    ];
    assert!(error(&mut app, &sneaky).starts_with("NOPERM"));
    let sneaky = ["SECKILL.MREFUND", "2", "shop:a", "secret:b", "r"];
    assert!(error(&mut app, &sneaky).starts_with("NOPERM"));
    assert_eq!(ok::<i64>(&mut admin, &["SECKILL.GET", "secret:b"]), 5);
    let allowed = ["SECKILL.MDEDUCT", "1", "shop:a", "1", "u", "r"];
    assert_eq!(order(&mut app, &allowed), [Some(4)]);
}

/// A tiny deterministic generator, so that a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// An order placed: its request id, its lines (item, qty), and whether it
/// was taken.
type Placed = (String, Vec<(usize, i64)>, bool);

#[test]
fn five_thousand_random_bundles_are_never_partly_taken() {
    let server = Server::start();
    let mut con = server.client();
    const ITEMS: usize = 6;
    let keys: Vec<String> = (0..ITEMS).map(|n| format!("{{p}}:item{n}")).collect();
    let mut initial = Vec::new();
    for (n, key) in keys.iter().enumerate() {
        let stock = 600 + 150 * n as i64;
        initial.push(stock);
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.INIT",
                key,
                &stock.to_string(),
                "LIMIT",
                "3",
                "STREAM",
                "{p}:orders",
            ],
        );
    }
    let mut rng = Rng(0x5eed_cafe);
    let mut placed: Vec<Placed> = Vec::new();
    for n in 0..5_000 {
        let count = 2 + rng.below(3) as usize;
        let mut chosen: Vec<usize> = Vec::new();
        while chosen.len() < count {
            let item = rng.below(ITEMS as u64) as usize;
            if !chosen.contains(&item) {
                chosen.push(item);
            }
        }
        let lines_of: Vec<(usize, i64)> = chosen
            .iter()
            .map(|item| (*item, 1 + rng.below(2) as i64))
            .collect();
        let user = format!("user:{}", rng.below(400));
        let id = format!("order:{n}");
        let mut args = vec!["SECKILL.MDEDUCT".to_owned(), count.to_string()];
        for (item, qty) in &lines_of {
            args.push(keys[*item].clone());
            args.push(qty.to_string());
        }
        args.push(user);
        args.push(id.clone());
        if rng.below(4) == 0 {
            args.extend(["HOLD".to_owned(), "600".to_owned()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let reply = order(&mut con, &args);
        let taken = reply
            .iter()
            .all(|line| line.is_some_and(|figure| figure >= 0));
        assert!(
            taken
                || reply
                    .iter()
                    .any(|line| line.is_some_and(|figure| figure < 0)),
            "{args:?} replied {reply:?}"
        );
        // Every line recorded, or none.
        for (item, qty) in &lines_of {
            let reply: Vec<Value> = ok(&mut con, &["SECKILL.STATUS", &keys[*item], &id]);
            let status: String = redis::from_redis_value(reply[1].clone()).unwrap();
            let recorded: i64 = redis::from_redis_value(reply[5].clone()).unwrap();
            if taken {
                assert!(status == "purchased" || status == "held", "{id}: {status}");
                assert_eq!(recorded, *qty);
            } else {
                assert_eq!(status, "unknown", "{id} refused {reply:?} but recorded");
            }
        }
        // Some orders are refunded whole, which puts their units back.
        if taken && rng.below(10) == 0 {
            let mut refund = vec!["SECKILL.MREFUND".to_owned(), count.to_string()];
            refund.extend(lines_of.iter().map(|(item, _)| keys[*item].clone()));
            refund.push(id.clone());
            let refund: Vec<&str> = refund.iter().map(String::as_str).collect();
            let units = order(&mut con, &refund);
            let expected: Vec<Option<i64>> = lines_of.iter().map(|(_, qty)| Some(*qty)).collect();
            assert_eq!(units, expected);
        }
        // The stock invariant of every item, after every call.
        for (item, key) in keys.iter().enumerate() {
            let fields: BTreeMap<String, i64> = info(&mut con, key).into_iter().collect();
            assert_eq!(
                fields["stock"] + fields["sold"],
                initial[item] + fields["refunded"],
                "{key} after {id}: {fields:?}"
            );
        }
        placed.push((id, lines_of, taken));
    }
    let taken = placed.iter().filter(|(_, _, taken)| *taken).count();
    // Enough of both to mean something: items sell out and buyers reach
    // their limit before the 5,000th order.
    assert!(
        taken > 1_000 && taken < 4_500,
        "{taken} of 5000 orders taken"
    );
    // The order stream: one purchase or hold event per line of every taken
    // order, none for a refused one.
    let entries: Vec<Value> = ok(&mut con, &["XRANGE", "{p}:orders", "-", "+"]);
    let mut events: BTreeMap<(String, String), usize> = BTreeMap::new();
    for entry in &entries {
        let (_, fields): (String, Vec<String>) = redis::from_redis_value(entry.clone()).unwrap();
        let field = |name: &str| {
            let at = fields.iter().position(|field| field == name).unwrap();
            fields[at + 1].clone()
        };
        if field("event") == "purchase" || field("event") == "hold" {
            *events.entry((field("request"), field("item"))).or_default() += 1;
        }
    }
    for (id, lines_of, taken) in &placed {
        for (item, _) in lines_of {
            let count = events
                .get(&(id.clone(), keys[*item].clone()))
                .copied()
                .unwrap_or(0);
            assert_eq!(count, usize::from(*taken), "{id} on {}", keys[*item]);
        }
    }
}

#[test]
fn the_server_asks_the_module_for_an_order_s_keys() {
    let server = Server::start();
    let mut con = server.client();
    for command in ["seckill.mdeduct", "seckill.mconfirm", "seckill.mrefund"] {
        let info: Vec<Value> = ok(&mut con, &["COMMAND", "INFO", command]);
        let Value::Array(info) = &info[0] else {
            panic!("{command}: no COMMAND INFO")
        };
        let flags: Vec<String> = redis::from_redis_value(info[2].clone()).unwrap();
        assert!(
            flags.iter().any(|flag| flag == "movablekeys"),
            "{command} {flags:?}"
        );
    }
    let keys: Vec<String> = ok(
        &mut con,
        &[
            "COMMAND",
            "GETKEYS",
            "SECKILL.MDEDUCT",
            "3",
            "a",
            "1",
            "b",
            "2",
            "c",
            "3",
            "u",
            "r",
        ],
    );
    assert_eq!(keys, ["a", "b", "c"]);
    let keys: Vec<String> = ok(
        &mut con,
        &[
            "COMMAND",
            "GETKEYS",
            "SECKILL.MREFUND",
            "2",
            "a",
            "b",
            "r",
            "DETAIL",
        ],
    );
    assert_eq!(keys, ["a", "b"]);
}

#[test]
fn an_order_s_streams_are_the_same_on_the_replica_and_a_refused_order_leaves_them_alone() {
    let master = Server::start_with(&["--appendonly", "yes"]);
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    // Two items on one stream, one trimming it to its last entry.
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.INIT",
            "{s}:phone",
            "10",
            "STREAM",
            "{s}:orders",
            "MAXLEN",
            "1",
        ],
    );
    ok::<i64>(
        &mut con,
        &["SECKILL.INIT", "{s}:case", "10", "STREAM", "{s}:orders"],
    );
    let both = [
        "SECKILL.MDEDUCT",
        "2",
        "{s}:phone",
        "1",
        "{s}:case",
        "1",
        "ann",
        "o1",
    ];
    assert_eq!(order(&mut con, &both), [Some(9), Some(9)]);
    let refund = ["SECKILL.MREFUND", "2", "{s}:phone", "{s}:case", "o1"];
    assert_eq!(order(&mut con, &refund), [Some(1), Some(1)]);
    // A replica applies the phone's entry with MAXLEN 1, then the case's.
    assert_eq!(stream_len(&mut con, "{s}:orders"), 2);
    // A later line's stream refuses the order: the earlier line's stream
    // is not created, and one with a single ID left keeps it.
    ok::<i64>(
        &mut con,
        &["SECKILL.INIT", "{w}:phone", "10", "STREAM", "{w}:orders"],
    );
    ok::<i64>(
        &mut con,
        &["SECKILL.INIT", "{w}:case", "10", "STREAM", "{w}:text"],
    );
    ok::<String>(&mut con, &["SET", "{w}:text", "not a stream"]);
    let refused = [
        "SECKILL.MDEDUCT",
        "2",
        "{w}:phone",
        "1",
        "{w}:case",
        "1",
        "ann",
        "o1",
    ];
    assert!(error(&mut con, &refused).starts_with("WRONGTYPE"));
    assert_eq!(ok::<i64>(&mut con, &["EXISTS", "{w}:orders"]), 0);
    ok::<i64>(
        &mut con,
        &["SECKILL.INIT", "{x}:phone", "10", "STREAM", "{x}:orders"],
    );
    ok::<i64>(
        &mut con,
        &["SECKILL.INIT", "{x}:case", "10", "STREAM", "{x}:orders"],
    );
    let last_but_one = "18446744073709551615-18446744073709551614";
    ok::<String>(&mut con, &["XADD", "{x}:orders", last_but_one, "f", "v"]);
    let full = [
        "SECKILL.MDEDUCT",
        "2",
        "{x}:phone",
        "1",
        "{x}:case",
        "1",
        "ann",
        "o1",
    ];
    assert!(error(&mut con, &full).contains("exhausted the last possible ID"));
    let last_id = |con: &mut Connection| -> String {
        let info: Vec<Value> = ok(con, &["XINFO", "STREAM", "{x}:orders"]);
        let at = info
            .iter()
            .position(|field| *field == Value::BulkString(b"last-generated-id".to_vec()))
            .unwrap();
        redis::from_redis_value(info[at + 1].clone()).unwrap()
    };
    assert_eq!(last_id(&mut con), last_but_one);
    assert_eq!(
        ok::<i64>(
            &mut con,
            &["SECKILL.DEDUCT", "{x}:phone", "bob", "1", "ID", "o2"]
        ),
        9
    );
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "5000"]), 1);
    let mut on_replica = replica.client();
    for stream in ["{s}:orders", "{x}:orders"] {
        let on_master: Vec<Value> = ok(&mut con, &["XRANGE", stream, "-", "+"]);
        let there: Vec<Value> = ok(&mut on_replica, &["XRANGE", stream, "-", "+"]);
        assert_eq!(there, on_master, "{stream}");
    }
    let keys = |con: &mut Connection| -> i64 { ok(con, &["DBSIZE"]) };
    assert_eq!(keys(&mut on_replica), keys(&mut con));
}
