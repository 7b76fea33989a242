//! The module in a real Redis Cluster, 3 masters with a replica each:
//! routing, resharding live items under load, and failover without losing
//! acknowledged purchases.

mod common;

use common::cluster::Cluster;
use common::{ok, wait_until};
use redis::cluster::ClusterConnection;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

fn cluster_ok<T: redis::FromRedisValue>(con: &mut ClusterConnection, args: &[&str]) -> T {
    let mut command = redis::cmd(args[0]);
    for arg in &args[1..] {
        command.arg(*arg);
    }
    command
        .query(con)
        .unwrap_or_else(|err| panic!("{args:?} failed: {err}"))
}

#[test]
fn cluster_clients_route_every_command_to_the_items_shard() {
    let cluster = Cluster::start(3, 1);
    let mut con = cluster.client();
    let mut owners = HashSet::new();
    for n in 0..30 {
        let key = format!("{{sku:{n}}}");
        let stream = format!("{key}:orders");
        assert_eq!(
            cluster_ok::<i64>(&mut con, &["SECKILL.INIT", &key, "10", "STREAM", &stream]),
            1
        );
        assert_eq!(
            cluster_ok::<i64>(
                &mut con,
                &["SECKILL.DEDUCT", &key, "alice", "1", "ID", "r1"]
            ),
            9
        );
        assert_eq!(cluster_ok::<i64>(&mut con, &["SECKILL.GET", &key]), 9);
        assert_eq!(cluster_ok::<i64>(&mut con, &["XLEN", &stream]), 1);
        owners.insert(cluster.owner(cluster.slot(&key)));
    }
    assert_eq!(owners.len(), 3, "items on every master");

    // A node that does not own the key redirects, as for any command.
    let key = "{sku:0}";
    let owner = cluster.owner(cluster.slot(key));
    let other = (0..3)
        .find(|index| *index != owner)
        .expect("another master");
    let refused = common::run::<i64>(&mut cluster.con(other), &["SECKILL.GET", key]);
    let err = refused.expect_err("a redirect");
    assert_eq!(err.code(), Some("MOVED"), "{err}");
}

/// Deducts on `key` from a cluster client until `stop`, with unique request
/// ids, counting the purchases the cluster acknowledged.
fn buyer(
    cluster: &Cluster,
    key: &'static str,
    stop: Arc<AtomicBool>,
    sold: Arc<AtomicI64>,
) -> thread::JoinHandle<()> {
    let mut con = cluster.client();
    thread::spawn(move || {
        let mut n = 0;
        while !stop.load(Ordering::Relaxed) {
            n += 1;
            let id = format!("r{n}");
            let reply: redis::RedisResult<i64> = redis::cmd("SECKILL.DEDUCT")
                .arg(key)
                .arg(format!("user:{n}"))
                .arg(1)
                .arg("ID")
                .arg(&id)
                .query(&mut con);
            if matches!(reply, Ok(remaining) if remaining >= 0) {
                sold.fetch_add(1, Ordering::Relaxed);
            }
        }
    })
}

#[test]
fn resharding_moves_a_live_item_with_its_ledger_and_holds() {
    let cluster = Cluster::start(3, 1);
    let mut con = cluster.client();
    const KEY: &str = "{sku:moving}";
    cluster_ok::<i64>(
        &mut con,
        &[
            "SECKILL.INIT",
            KEY,
            "1000000",
            "STREAM",
            "{sku:moving}:orders",
        ],
    );
    cluster_ok::<i64>(
        &mut con,
        &[
            "SECKILL.DEDUCT",
            KEY,
            "holder",
            "1",
            "ID",
            "hold-1",
            "HOLD",
            "600",
        ],
    );
    let slot = cluster.slot(KEY);
    let source = cluster.owner(slot);
    let target = (0..3)
        .find(|index| *index != source)
        .expect("another master");
    let (source_id, target_id) = (cluster.id(source), cluster.id(target));

    let stop = Arc::new(AtomicBool::new(false));
    let sold = Arc::new(AtomicI64::new(0));
    let worker = buyer(&cluster, KEY, Arc::clone(&stop), Arc::clone(&sold));
    thread::sleep(Duration::from_millis(300));

    // Move the slot, keys and all, while the buyer keeps buying.
    let slot_arg = slot.to_string();
    let mut target_con = cluster.con(target);
    let mut source_con = cluster.con(source);
    ok::<String>(
        &mut target_con,
        &["CLUSTER", "SETSLOT", &slot_arg, "IMPORTING", &source_id],
    );
    ok::<String>(
        &mut source_con,
        &["CLUSTER", "SETSLOT", &slot_arg, "MIGRATING", &target_id],
    );
    let keys: Vec<String> = ok(
        &mut source_con,
        &["CLUSTER", "GETKEYSINSLOT", &slot_arg, "100"],
    );
    assert_eq!(keys.len(), 2, "{keys:?}");
    let port = cluster.nodes[target].port.to_string();
    let mut migrate = redis::cmd("MIGRATE");
    migrate
        .arg("127.0.0.1")
        .arg(&port)
        .arg("")
        .arg(0)
        .arg(5000)
        .arg("KEYS")
        .arg(&keys);
    let moved: String = migrate.query(&mut source_con).expect("MIGRATE");
    assert_eq!(moved, "OK");
    for index in 0..3 {
        ok::<String>(
            &mut cluster.con(index),
            &["CLUSTER", "SETSLOT", &slot_arg, "NODE", &target_id],
        );
    }
    thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    worker.join().expect("buyer");

    assert_eq!(cluster.owner(slot), target);
    let mut con = cluster.client();
    let acknowledged = sold.load(Ordering::Relaxed);
    assert!(acknowledged > 0);
    let info: std::collections::HashMap<String, redis::Value> =
        cluster_ok(&mut con, &["SECKILL.INFO", KEY]);
    let number = |field: &str| match info[field] {
        redis::Value::Int(value) => value,
        _ => panic!("{field}"),
    };
    // Every acknowledged purchase is there once, plus the hold.
    assert_eq!(number("sold"), acknowledged + 1);
    assert_eq!(number("requests"), acknowledged + 1);
    assert_eq!(number("holds"), 1);
    let holds: redis::Value = cluster_ok(&mut con, &["SECKILL.HOLDS", KEY]);
    assert_ne!(holds, redis::Value::Array(vec![]));
    assert_eq!(
        cluster_ok::<i64>(&mut con, &["XLEN", "{sku:moving}:orders"]),
        acknowledged + 1
    );
}

/// DEDUCT on `master` directly, then WAIT for its replica. Returns whether
/// the purchase was made, and whether the replica acknowledged it.
fn purchase_with_wait(con: &mut redis::Connection, key: &str, n: usize) -> (bool, bool) {
    let id = format!("f{n}");
    let reply: redis::RedisResult<i64> = redis::cmd("SECKILL.DEDUCT")
        .arg(key)
        .arg(format!("user:{n}"))
        .arg(1)
        .arg("ID")
        .arg(&id)
        .query(con);
    let made = matches!(reply, Ok(remaining) if remaining >= 0);
    let acked = made
        && matches!(redis::cmd("WAIT").arg(1).arg(2000).query::<i64>(con), Ok(acks) if acks >= 1);
    (made, acked)
}

#[test]
fn failovers_keep_every_acknowledged_purchase() {
    let mut cluster = Cluster::start(3, 1);
    const KEY: &str = "{sku:failover}";
    let mut con = cluster.client();
    cluster_ok::<i64>(&mut con, &["SECKILL.INIT", KEY, "1000000"]);
    let slot = cluster.slot(KEY);
    let (mut made, mut acknowledged) = (0, 0);
    let mut n = 0;

    // Graceful: the replica takes over on request.
    let master = cluster.owner(slot);
    let mut master_con = cluster.con(master);
    for _ in 0..50 {
        n += 1;
        let (sold, acked) = purchase_with_wait(&mut master_con, KEY, n);
        made += i64::from(sold);
        acknowledged += i64::from(acked);
    }
    let replica = cluster.replica_of(master);
    ok::<String>(&mut cluster.con(replica), &["CLUSTER", "FAILOVER"]);
    wait_until("the replica to take over", Duration::from_secs(30), || {
        cluster.owner(slot) == replica
    });
    let mut new_master = cluster.con(replica);
    wait_until("the old master to follow", Duration::from_secs(30), || {
        matches!(
            redis::cmd("WAIT")
                .arg(1)
                .arg(100)
                .query::<i64>(&mut new_master),
            Ok(1)
        )
    });
    for _ in 0..50 {
        n += 1;
        let (sold, acked) = purchase_with_wait(&mut new_master, KEY, n);
        made += i64::from(sold);
        acknowledged += i64::from(acked);
    }

    // Forced: the master dies; its replica is promoted without any reload.
    cluster.nodes[replica].kill();
    let killed_at = Instant::now();
    let survivor = master;
    wait_until(
        "the replica to be promoted",
        Duration::from_secs(60),
        || common::cluster::is_master(&mut cluster.con(survivor)),
    );
    let mut con = cluster.con(survivor);
    wait_until("deductions to work again", Duration::from_secs(60), || {
        n += 1;
        let reply: redis::RedisResult<i64> = redis::cmd("SECKILL.DEDUCT")
            .arg(KEY)
            .arg(format!("user:{n}"))
            .arg(1)
            .query(&mut con);
        let sold = matches!(reply, Ok(remaining) if remaining >= 0);
        made += i64::from(sold);
        sold
    });
    eprintln!(
        "deductions were unavailable for {} ms after the master was killed",
        killed_at.elapsed().as_millis()
    );
    let info: std::collections::HashMap<String, redis::Value> =
        ok(&mut con, &["SECKILL.INFO", KEY]);
    let redis::Value::Int(sold) = info["sold"] else {
        panic!("INFO sold");
    };
    // The one purchase after the forced failover counts as acknowledged
    // too: it was made on the promoted master itself.
    assert!(
        acknowledged >= 90,
        "only {acknowledged} of {made} acknowledged"
    );
    assert!(
        (acknowledged + 1..=made).contains(&sold),
        "sold {sold}: acknowledged {acknowledged}, made {made}"
    );
}

/// A sale on a node whose slot is half-migrated, with the order stream on
/// the other node, is refused with TRYAGAIN instead of re-creating the
/// stream where it would later collide with the migrated one.
#[test]
fn a_sale_whose_order_stream_is_mid_migration_asks_to_try_again() {
    let cluster = Cluster::start(3, 0);
    let mut con = cluster.client();
    const KEY: &str = "{sku:split}";
    const STREAM: &str = "{sku:split}:orders";
    cluster_ok::<i64>(&mut con, &["SECKILL.INIT", KEY, "100", "STREAM", STREAM]);
    cluster_ok::<i64>(&mut con, &["SECKILL.DEDUCT", KEY, "first", "1"]);
    let slot = cluster.slot(KEY);
    let slot_arg = slot.to_string();
    let source = cluster.owner(slot);
    let target = (0..3).find(|index| *index != source).expect("a target");
    let (source_id, target_id) = (cluster.id(source), cluster.id(target));
    let (mut source_con, mut target_con) = (cluster.con(source), cluster.con(target));
    ok::<String>(
        &mut target_con,
        &["CLUSTER", "SETSLOT", &slot_arg, "IMPORTING", &source_id],
    );
    ok::<String>(
        &mut source_con,
        &["CLUSTER", "SETSLOT", &slot_arg, "MIGRATING", &target_id],
    );
    let migrate = |con: &mut redis::Connection, key: &str| {
        let moved: String = redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(cluster.nodes[target].port)
            .arg(key)
            .arg(0)
            .arg(5000)
            .query(con)
            .expect("MIGRATE");
        assert_eq!(moved, "OK");
    };
    // The stream moves first: the item stays behind on the source.
    migrate(&mut source_con, STREAM);
    let refused = common::error(&mut source_con, &["SECKILL.DEDUCT", KEY, "second", "1"]);
    assert!(refused.starts_with("TRYAGAIN"), "{refused}");
    assert_eq!(ok::<i64>(&mut source_con, &["SECKILL.GET", KEY]), 99);
    // Then the item: on the importing side, its stream is there now.
    migrate(&mut source_con, KEY);
    ok::<String>(&mut target_con, &["ASKING"]);
    assert_eq!(
        ok::<i64>(&mut target_con, &["SECKILL.DEDUCT", KEY, "second", "1"]),
        98
    );
    for index in 0..3 {
        ok::<String>(
            &mut cluster.con(index),
            &["CLUSTER", "SETSLOT", &slot_arg, "NODE", &target_id],
        );
    }
    let mut con = cluster.client();
    assert_eq!(cluster_ok::<i64>(&mut con, &["XLEN", STREAM]), 2);
}

/// The importing side refuses too: item moved, stream not yet.
#[test]
fn a_sale_on_the_importing_node_before_its_stream_arrives_asks_to_try_again() {
    let cluster = Cluster::start(3, 0);
    let mut con = cluster.client();
    const KEY: &str = "{sku:early}";
    const STREAM: &str = "{sku:early}:orders";
    cluster_ok::<i64>(&mut con, &["SECKILL.INIT", KEY, "100", "STREAM", STREAM]);
    cluster_ok::<i64>(&mut con, &["SECKILL.DEDUCT", KEY, "first", "1"]);
    let slot = cluster.slot(KEY);
    let slot_arg = slot.to_string();
    let source = cluster.owner(slot);
    let target = (0..3).find(|index| *index != source).expect("a target");
    let (source_id, target_id) = (cluster.id(source), cluster.id(target));
    let (mut source_con, mut target_con) = (cluster.con(source), cluster.con(target));
    ok::<String>(
        &mut target_con,
        &["CLUSTER", "SETSLOT", &slot_arg, "IMPORTING", &source_id],
    );
    ok::<String>(
        &mut source_con,
        &["CLUSTER", "SETSLOT", &slot_arg, "MIGRATING", &target_id],
    );
    let moved: String = redis::cmd("MIGRATE")
        .arg("127.0.0.1")
        .arg(cluster.nodes[target].port)
        .arg(KEY)
        .arg(0)
        .arg(5000)
        .query(&mut source_con)
        .expect("MIGRATE");
    assert_eq!(moved, "OK");
    ok::<String>(&mut target_con, &["ASKING"]);
    let refused = common::error(&mut target_con, &["SECKILL.DEDUCT", KEY, "second", "1"]);
    assert!(refused.starts_with("TRYAGAIN"), "{refused}");
    ok::<String>(&mut target_con, &["ASKING"]);
    assert_eq!(ok::<i64>(&mut target_con, &["SECKILL.GET", KEY]), 99);
    ok::<String>(&mut target_con, &["ASKING"]);
    assert_eq!(ok::<i64>(&mut target_con, &["EXISTS", STREAM]), 0);
}

/// An item restored under a name in another slot keeps its stream's name:
/// its sales are refused with CROSSSLOT (this node may not own the stream)
/// until the stream is set again.
#[test]
fn an_item_restored_into_another_slot_asks_for_its_stream_again() {
    let cluster = Cluster::start(3, 0);
    let mut con = cluster.client();
    cluster_ok::<i64>(
        &mut con,
        &["SECKILL.INIT", "{from}", "10", "STREAM", "{from}:o"],
    );
    let payload: Vec<u8> = cluster_ok(&mut con, &["DUMP", "{from}"]);
    let restored: String = redis::cmd("RESTORE")
        .arg("{to}")
        .arg(0)
        .arg(payload)
        .query(&mut con)
        .expect("RESTORE");
    assert_eq!(restored, "OK");
    let refused = redis::cmd("SECKILL.DEDUCT")
        .arg("{to}")
        .arg("u")
        .arg(1)
        .query::<i64>(&mut con)
        .expect_err("a sale writing a stream in another slot");
    assert_eq!(refused.code(), Some("CROSSSLOT"), "{refused}");
    assert_eq!(cluster_ok::<i64>(&mut con, &["SECKILL.GET", "{to}"]), 10);
    cluster_ok::<i64>(&mut con, &["SECKILL.STREAM", "{to}", "{to}:o"]);
    assert_eq!(
        cluster_ok::<i64>(&mut con, &["SECKILL.DEDUCT", "{to}", "u", "1"]),
        9
    );
    assert_eq!(cluster_ok::<i64>(&mut con, &["XLEN", "{to}:o"]), 1);
}
