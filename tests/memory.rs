//! Holds leave no memory behind: once the holds of many items are
//! confirmed, refunded or simply deleted with their items, `used_memory`
//! returns to where it was, on the master and on its replica. The sweep's
//! schedule of deadlines must not keep entries for holds that are settled
//! or items that are gone. Also: past maxmemory new sales get OOM while
//! paid orders still settle, and an eviction policy that could evict items
//! is warned about in the log.

mod common;

use common::{error, info_field, ok, run, server_now_ms, used_memory, Server};
use redis::{Connection, Value};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How far `used_memory` may stay above its starting point.
const SLACK: i64 = 2 << 20;

const ITEMS: usize = 1_000;
const HOLDS_PER_ITEM: usize = 300;
/// Commands per pipeline.
const BATCH: usize = 2_000;

/// A master and its replica, with a small replication backlog so that the
/// backlog filling up does not count as memory kept.
fn master_and_replica() -> (Server, Server) {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    for server in [&master, &replica] {
        ok::<String>(
            &mut server.client(),
            &["CONFIG", "SET", "repl-backlog-size", "16384"],
        );
    }
    (master, replica)
}

/// Sends the commands `make(0..count)` in pipelines of `BATCH`; each reply
/// must pass `check`.
fn pipelined(
    con: &mut Connection,
    count: usize,
    make: impl Fn(usize) -> redis::Cmd,
    check: impl Fn(&redis::Value) -> bool,
) {
    let mut n = 0;
    while n < count {
        let end = (n + BATCH).min(count);
        let mut pipe = redis::pipe();
        for i in n..end {
            pipe.add_command(make(i));
        }
        let replies: Vec<redis::Value> = pipe.query(con).expect("pipeline");
        if let Some(bad) = replies.iter().find(|reply| !check(reply)) {
            panic!("unexpected reply {bad:?}");
        }
        n = end;
    }
}

fn item_key(n: usize) -> String {
    format!("sku:{n}")
}

fn is_non_negative(reply: &redis::Value) -> bool {
    matches!(reply, redis::Value::Int(n) if *n >= 0)
}

/// The item of hold `i`: holds go round the items, so that holds placed in
/// the same millisecond are on different items.
fn item_of(i: usize) -> String {
    item_key(i % ITEMS)
}

/// ITEMS items of HOLDS_PER_ITEM units, each sold out in holds of one
/// unit: hold `i` is request `r{i}` on item `item_of(i)`.
fn place_holds(con: &mut Connection, hold: impl Fn(usize) -> Vec<String>) {
    pipelined(
        con,
        ITEMS,
        |n| {
            let mut cmd = redis::cmd("SECKILL.INIT");
            cmd.arg(item_key(n)).arg(HOLDS_PER_ITEM);
            cmd
        },
        |reply| *reply == redis::Value::Int(1),
    );
    pipelined(
        con,
        ITEMS * HOLDS_PER_ITEM,
        |i| {
            let mut cmd = redis::cmd("SECKILL.DEDUCT");
            cmd.arg(item_of(i))
                .arg(format!("user:{}", i % 7))
                .arg(1)
                .arg("ID")
                .arg(format!("r{i}"))
                .arg(hold(i));
            cmd
        },
        is_non_negative,
    );
}

/// CONFIRM or REFUND every hold placed by `place_holds`.
fn settle_all(con: &mut Connection, how: impl Fn(usize) -> &'static str) {
    pipelined(
        con,
        ITEMS * HOLDS_PER_ITEM,
        |i| {
            let mut cmd = redis::cmd(how(i));
            cmd.arg(item_of(i)).arg(format!("r{i}"));
            cmd
        },
        |reply| *reply == redis::Value::Int(1),
    );
}

/// Deletes every item, one `command` (DEL or UNLINK) per 100 keys.
fn delete_items(con: &mut Connection, command: &str) {
    pipelined(
        con,
        ITEMS / 100,
        |batch| {
            let mut cmd = redis::cmd(command);
            for n in batch * 100..(batch + 1) * 100 {
                cmd.arg(item_key(n));
            }
            cmd
        },
        |reply| *reply == redis::Value::Int(100),
    );
}

fn wait_for_replica(master: &mut Connection) {
    assert_eq!(
        ok::<i64>(master, &["WAIT", "1", "30000"]),
        1,
        "replica lags"
    );
}

/// Waits until `until` (background freeing) for `used_memory` to come
/// back within SLACK of `baseline`; describes what stayed if it does not.
fn memory_kept(con: &mut Connection, baseline: i64, what: &str, until: Instant) -> Option<String> {
    let mut used = used_memory(con);
    while used - baseline > SLACK && Instant::now() < until {
        sleep(Duration::from_millis(100));
        used = used_memory(con);
    }
    eprintln!(
        "{what}: used_memory {used}, {:+} bytes from {baseline}",
        used - baseline
    );
    (used - baseline > SLACK).then(|| {
        format!(
            "{what}: used_memory is {used}, {} bytes ({:.1} MiB) above the {baseline} it \
             started at, more than {} MiB",
            used - baseline,
            (used - baseline) as f64 / (1 << 20) as f64,
            SLACK >> 20
        )
    })
}

/// Memory must come back on the master and on the replica, within 10 s.
fn assert_memory_returns(
    (master, master_baseline): (&mut Connection, i64),
    (replica, replica_baseline): (&mut Connection, i64),
    what: &str,
) {
    let until = Instant::now() + Duration::from_secs(10);
    let kept: Vec<String> = [
        memory_kept(master, master_baseline, &format!("master, {what}"), until),
        memory_kept(
            replica,
            replica_baseline,
            &format!("replica, {what}"),
            until,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert!(kept.is_empty(), "{}", kept.join("\n"));
}

fn hold_for_600s(_: usize) -> Vec<String> {
    vec!["HOLD".into(), "600".into()]
}

#[test]
fn confirmed_holds_of_deleted_items_leave_no_memory_behind() {
    let (master, replica) = master_and_replica();
    let mut con = master.client();
    let mut replica_con = replica.client();
    let (master_baseline, replica_baseline) =
        (used_memory(&mut con), used_memory(&mut replica_con));

    place_holds(&mut con, hold_for_600s);
    settle_all(&mut con, |_| "SECKILL.CONFIRM");
    delete_items(&mut con, "DEL");
    wait_for_replica(&mut con);
    assert_eq!(ok::<i64>(&mut con, &["DBSIZE"]), 0);

    assert_memory_returns(
        (&mut con, master_baseline),
        (&mut replica_con, replica_baseline),
        "confirmed then DEL",
    );
}

#[test]
fn refunded_holds_of_unlinked_items_leave_no_memory_behind() {
    let (master, replica) = master_and_replica();
    let mut con = master.client();
    let mut replica_con = replica.client();
    let (master_baseline, replica_baseline) =
        (used_memory(&mut con), used_memory(&mut replica_con));

    // Absolute deadlines 10 minutes ahead, each its own millisecond.
    let soon = server_now_ms(&mut con) + 600_000;
    place_holds(&mut con, |i| {
        vec!["HOLDUNTIL".into(), (soon + i as i64).to_string()]
    });
    settle_all(&mut con, |i| {
        if i % 2 == 0 {
            "SECKILL.REFUND"
        } else {
            "SECKILL.CONFIRM"
        }
    });
    delete_items(&mut con, "UNLINK");
    wait_for_replica(&mut con);
    assert_eq!(ok::<i64>(&mut con, &["DBSIZE"]), 0);

    assert_memory_returns(
        (&mut con, master_baseline),
        (&mut replica_con, replica_baseline),
        "refunded then UNLINK",
    );
}

#[test]
fn pending_holds_of_flushed_items_leave_no_memory_behind() {
    let (master, replica) = master_and_replica();
    let mut con = master.client();
    let mut replica_con = replica.client();
    let (master_baseline, replica_baseline) =
        (used_memory(&mut con), used_memory(&mut replica_con));

    place_holds(&mut con, hold_for_600s);
    ok::<String>(&mut con, &["FLUSHALL", "ASYNC"]);
    wait_for_replica(&mut con);
    assert_eq!(ok::<i64>(&mut con, &["DBSIZE"]), 0);

    assert_memory_returns(
        (&mut con, master_baseline),
        (&mut replica_con, replica_baseline),
        "pending then FLUSHALL ASYNC",
    );
}

/// 100,000 holds until the year 2100, each a millisecond apart, on an item
/// with a 500-byte name.
#[test]
fn far_deadlines_on_a_long_key_name_leave_no_memory_behind_after_flushall() {
    const HOLDS: usize = 100_000;
    const YEAR_2100: i64 = 4_102_444_800_000;
    let (master, replica) = master_and_replica();
    let mut con = master.client();
    let mut replica_con = replica.client();
    let (master_baseline, replica_baseline) =
        (used_memory(&mut con), used_memory(&mut replica_con));

    let key = format!("sku:{}", "k".repeat(496));
    assert_eq!(key.len(), 500);
    ok::<i64>(&mut con, &["SECKILL.INIT", &key, &HOLDS.to_string()]);
    pipelined(
        &mut con,
        HOLDS,
        |i| {
            let mut cmd = redis::cmd("SECKILL.DEDUCT");
            cmd.arg(&key)
                .arg(format!("user:{}", i % 101))
                .arg(1)
                .arg("ID")
                .arg(format!("r{i}"))
                .arg("HOLDUNTIL")
                .arg(YEAR_2100 + i as i64);
            cmd
        },
        is_non_negative,
    );
    ok::<String>(&mut con, &["FLUSHALL"]);
    wait_for_replica(&mut con);

    assert_memory_returns(
        (&mut con, master_baseline),
        (&mut replica_con, replica_baseline),
        "100k far holds then FLUSHALL",
    );
}

/// The sweep keeps one registry entry per item with pending holds: 100,000
/// such items, flushed, leave no table sized for them behind.
#[test]
fn many_items_with_one_hold_each_leave_no_memory_behind_after_flushall() {
    const MANY: usize = 100_000;
    let (master, replica) = master_and_replica();
    let mut con = master.client();
    let mut replica_con = replica.client();
    let (master_baseline, replica_baseline) =
        (used_memory(&mut con), used_memory(&mut replica_con));
    pipelined(
        &mut con,
        MANY,
        |n| {
            let mut cmd = redis::cmd("SECKILL.INIT");
            cmd.arg(format!("one:{n}")).arg(1);
            cmd
        },
        |reply| *reply == redis::Value::Int(1),
    );
    pipelined(
        &mut con,
        MANY,
        |n| {
            let mut cmd = redis::cmd("SECKILL.DEDUCT");
            cmd.arg(format!("one:{n}"))
                .arg("user")
                .arg(1)
                .arg("ID")
                .arg("r")
                .arg("HOLD")
                .arg(600);
            cmd
        },
        |reply| *reply == redis::Value::Int(0),
    );
    ok::<String>(&mut con, &["FLUSHALL"]);
    wait_for_replica(&mut con);
    assert_memory_returns(
        (&mut con, master_baseline),
        (&mut replica_con, replica_baseline),
        "100,000 items with a hold, then FLUSHALL",
    );
}

/// Past maxmemory (noeviction), new sales are refused with OOM, but the
/// payment of an order already held (CONFIRM), its cancellation (REFUND)
/// and its release (RELEASE) still go through: they only settle units
/// already taken, and refusing them would strand paid orders.
#[test]
fn paid_orders_settle_past_maxmemory_while_new_sales_get_oom() {
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", "sku:5", "100", "LIMIT", "5"]);
    for (user, id) in [
        ("alice", "paid"),
        ("bob", "cancelled"),
        ("carol", "abandoned"),
    ] {
        ok::<i64>(
            &mut con,
            &[
                "SECKILL.DEDUCT",
                "sku:5",
                user,
                "1",
                "ID",
                id,
                "HOLDUNTIL",
                "4102444800000",
            ],
        );
    }
    let filler = "x".repeat(1 << 20);
    for n in 0..8 {
        ok::<String>(&mut con, &["SET", &format!("filler:{n}"), &filler]);
    }
    let used = used_memory(&mut con);
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
    );
    ok::<String>(
        &mut con,
        &[
            "CONFIG",
            "SET",
            "maxmemory",
            &(used - (4 << 20)).to_string(),
        ],
    );
    let set = error(&mut con, &["SET", "one:more", "x"]);
    assert!(
        set.starts_with("OOM"),
        "the server is not out of memory: SET got {set}"
    );

    let mut problems = Vec::new();
    for args in [
        &["SECKILL.DEDUCT", "sku:5", "dave", "1"][..],
        &["SECKILL.INIT", "sku:new", "10"][..],
        &["SECKILL.ADD", "sku:5", "1"][..],
    ] {
        match run::<Value>(&mut con, args) {
            Err(err) if err.code() == Some("OOM") => {}
            other => problems.push(format!("{args:?} should get OOM, got {other:?}")),
        }
    }
    for (args, expected) in [
        (&["SECKILL.CONFIRM", "sku:5", "paid"][..], 1),
        (&["SECKILL.REFUND", "sku:5", "cancelled"][..], 1),
        (&["SECKILL.RELEASE", "sku:5", "abandoned"][..], 1),
    ] {
        match run::<Value>(&mut con, args) {
            Ok(Value::Int(reply)) if reply == expected => {}
            other => problems.push(format!(
                "{args:?} should reply {expected} past maxmemory, got {other:?}"
            )),
        }
    }
    for name in ["seckill.confirm", "seckill.refund", "seckill.release"] {
        let reply: Vec<Value> = ok(&mut con, &["COMMAND", "INFO", name]);
        let Some(Value::Array(entry)) = reply.first() else {
            panic!("COMMAND INFO {name}: {reply:?}");
        };
        let flags: Vec<String> = redis::from_redis_value(entry[2].clone()).expect("flags");
        if flags.iter().any(|flag| flag == "denyoom") {
            problems.push(format!("COMMAND INFO {name} lists denyoom: {flags:?}"));
        }
    }
    ok::<String>(&mut con, &["CONFIG", "SET", "maxmemory", "0"]);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(ok::<i64>(&mut con, &["SECKILL.GET", "sku:5"]), 99);
    assert_eq!(info_field(&mut con, "sku:5", "holds"), 0);
    assert_eq!(
        ok::<i64>(&mut con, &["SECKILL.CONFIRM", "sku:5", "paid"]),
        0
    );
}

/// A server whose eviction policy may evict items says so in its log when
/// the module loads, and again when CONFIG SET moves it to such a policy:
/// any `allkeys-*`, and `volatile-*`, which evicts the items with a TTL.
#[test]
fn an_eviction_policy_that_can_evict_items_logs_a_warning_at_load_and_when_set() {
    let server = Server::start_with(&["--maxmemory-policy", "allkeys-lru"]);
    assert!(
        server
            .log()
            .contains("maxmemory-policy is allkeys-lru: at maxmemory sale items can be evicted"),
        "{}",
        server.log()
    );
    let volatile = Server::start_with(&["--maxmemory-policy", "volatile-lru"]);
    assert!(
        volatile.log().contains(
            "maxmemory-policy is volatile-lru: at maxmemory sale items created with a TTL"
        ),
        "{}",
        volatile.log()
    );
    let quiet = Server::start_with(&["--maxmemory-policy", "noeviction"]);
    assert!(!quiet.log().contains("can be evicted"), "{}", quiet.log());

    let mut con = quiet.client();
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "maxmemory-policy", "volatile-ttl"],
    );
    ok::<String>(&mut con, &["CONFIG", "SET", "maxmemory", "0"]);
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
    );
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
    );
    let log = quiet.log();
    let warnings: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("can be evicted"))
        .collect();
    assert_eq!(warnings.len(), 2, "{log}");
    assert!(warnings[0].contains("is volatile-ttl"), "{log}");
    assert!(warnings[1].contains("is allkeys-lfu"), "{log}");
}
