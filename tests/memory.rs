//! Holds leave no memory behind: once the holds of many items are
//! confirmed, refunded or simply deleted with their items, `used_memory`
//! returns to where it was, on the master and on its replica. The sweep's
//! schedule of deadlines must not keep entries for holds that are settled
//! or items that are gone.

mod common;

use common::{ok, used_memory, Server};
use redis::Connection;
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How far `used_memory` may stay above its starting point.
const SLACK: i64 = 2 << 20;

const ITEMS: usize = 1_000;
const HOLDS_PER_ITEM: usize = 300;
/// Commands per pipeline.
const BATCH: usize = 2_000;

fn server_now_ms(con: &mut Connection) -> i64 {
    let time: Vec<i64> = ok(con, &["TIME"]);
    time[0] * 1000 + time[1] / 1000
}

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
