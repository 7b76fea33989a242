//! Valkey 9's atomic slot migration (`CLUSTER MIGRATESLOTS`) on a cluster of
//! 3 masters with a replica each: live items move intact while clients buy,
//! hold and confirm, holds lapse exactly once, and a cancelled migration
//! leaves both nodes as they were. Skipped on servers without it.

mod common;

use common::cluster::Cluster;
use common::{ok, server_info, wait_until, Server};
use redis::cluster::ClusterConnection;
use redis::{Connection, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

const SETTLES_WITHIN: Duration = Duration::from_secs(60);

/// True on Valkey 9 or later, the servers with `CLUSTER MIGRATESLOTS`.
fn server_has_atomic_slot_migration() -> bool {
    let server = Server::start();
    let mut con = server.client();
    let valkey = server_info(&mut con, "server", "server_name").as_deref() == Some("valkey");
    let major = server_info(&mut con, "server", "valkey_version")
        .and_then(|version| version.split('.').next()?.parse::<u32>().ok())
        .unwrap_or(0);
    valkey && major >= 9
}

fn cluster_query<T: redis::FromRedisValue>(
    con: &mut ClusterConnection,
    args: &[&str],
) -> redis::RedisResult<T> {
    let mut command = redis::cmd(args[0]);
    for arg in &args[1..] {
        command.arg(*arg);
    }
    command.query(con)
}

fn text(value: &Value) -> String {
    match value {
        Value::Int(number) => number.to_string(),
        other => redis::from_redis_value::<String>(other.clone()).unwrap_or_default(),
    }
}

/// `CLUSTER GETSLOTMIGRATIONS` on one node: its jobs, newest first, as
/// field/value maps.
fn migrations(con: &mut Connection) -> Vec<HashMap<String, String>> {
    let jobs: Vec<Value> = ok(con, &["CLUSTER", "GETSLOTMIGRATIONS"]);
    jobs.iter()
        .map(|job| match job {
            Value::Map(pairs) => pairs.iter().map(|(k, v)| (text(k), text(v))).collect(),
            Value::Array(items) => items
                .chunks(2)
                .map(|pair| (text(&pair[0]), text(&pair[1])))
                .collect(),
            other => panic!("unexpected migration {other:?}"),
        })
        .collect()
}

/// The state of the newest `operation` (IMPORT or EXPORT) of `slot` on a
/// node, if it has one.
fn migration_state(con: &mut Connection, operation: &str, slot: u16) -> Option<String> {
    let range = format!("{slot}-{slot}");
    migrations(con)
        .into_iter()
        .find(|job| job["operation"] == operation && job["slot_ranges"] == range)
        .map(|job| job["state"].clone())
}

/// Starts moving `slot` from the node of `source` to the node `target_id`
/// (`CLUSTER MIGRATESLOTS`): `OK` once the job is under way.
fn migrate_slot(source: &mut Connection, slot: u16, target_id: &str) -> redis::RedisResult<String> {
    let slot = slot.to_string();
    redis::cmd("CLUSTER")
        .arg("MIGRATESLOTS")
        .arg("SLOTSRANGE")
        .arg(&slot)
        .arg(&slot)
        .arg("NODE")
        .arg(target_id)
        .query(source)
}

fn digest(con: &mut Connection, key: &str) -> String {
    let digests: Vec<String> = ok(con, &["DEBUG", "DIGEST-VALUE", key]);
    digests.concat()
}

const ABSENT: &str = "0000000000000000000000000000000000000000";

fn items_with_pending_holds(con: &mut Connection) -> i64 {
    server_info(con, "seckill", "seckill_items_with_pending_holds")
        .and_then(|count| count.parse().ok())
        .expect("INFO seckill items_with_pending_holds")
}

fn dataset_bytes(con: &mut Connection) -> i64 {
    server_info(con, "memory", "used_memory_dataset")
        .and_then(|bytes| bytes.parse().ok())
        .expect("INFO memory used_memory_dataset")
}

/// `buyers` purchases of one unit each, pipelined: an item whose ledger
/// takes several chunks and a few megabytes.
fn fill_buyers(con: &mut Connection, key: &str, buyers: usize) {
    ok::<i64>(con, &["SECKILL.INIT", key, &(buyers * 2).to_string()]);
    for batch in (0..buyers).collect::<Vec<_>>().chunks(1_000) {
        let mut pipe = redis::pipe();
        for n in batch {
            pipe.cmd("SECKILL.DEDUCT")
                .arg(key)
                .arg(format!("buyer:{n}"))
                .arg(1)
                .arg("ID")
                .arg(format!("order:{n}"));
        }
        let replies: Vec<i64> = pipe.query(con).expect("pipelined DEDUCT");
        assert!(replies.iter().all(|reply| *reply >= 0));
    }
}

/// What the clients were told, by request id.
#[derive(Default)]
struct Acknowledged {
    purchases: Vec<String>,
    holds: Vec<String>,
    confirmed: Vec<String>,
    /// Calls that failed: they may or may not have been applied.
    failed: usize,
}

/// Buys, holds for one second and confirms every other hold on `key`
/// through a cluster client until `stop`, recording what was acknowledged.
fn shopper(
    cluster: &Cluster,
    key: &'static str,
    name: &'static str,
    stop: Arc<AtomicBool>,
    acknowledged: Arc<Mutex<Acknowledged>>,
) -> thread::JoinHandle<()> {
    let mut con = cluster.client();
    thread::spawn(move || {
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            n += 1;
            let user = format!("{name}:{n}");
            // Of every 8 calls: 5 purchases, 2 holds, and a confirmation of
            // the first hold; the second lapses unless its client paid.
            let kind = match n % 8 {
                2 | 6 => "hold",
                3 => "confirm",
                _ => "buy",
            };
            let (id, reply) = match kind {
                "buy" => {
                    let id = format!("{name}:buy:{n}");
                    let args = ["SECKILL.DEDUCT", key, &user, "1", "ID", &id];
                    (id.clone(), cluster_query::<i64>(&mut con, &args))
                }
                "hold" => {
                    let id = format!("{name}:hold:{n}");
                    let args = ["SECKILL.DEDUCT", key, &user, "1", "ID", &id, "HOLD", "1"];
                    (id.clone(), cluster_query::<i64>(&mut con, &args))
                }
                _ => {
                    let id = format!("{name}:hold:{}", n - 1);
                    (
                        id.clone(),
                        cluster_query(&mut con, &["SECKILL.CONFIRM", key, &id]),
                    )
                }
            };
            let mut acknowledged = acknowledged.lock().unwrap();
            match (kind, reply) {
                ("buy", Ok(stock)) if stock >= 0 => acknowledged.purchases.push(id),
                ("hold", Ok(stock)) if stock >= 0 => acknowledged.holds.push(id),
                ("confirm", Ok(1)) => acknowledged.confirmed.push(id),
                ("confirm", Ok(_)) => {} // lapsed already, or never held
                _ => acknowledged.failed += 1,
            }
        }
    })
}

/// The order stream's events by request id: (event, request) pairs.
fn events_by_request(con: &mut ClusterConnection, stream: &str) -> HashMap<String, Vec<String>> {
    let entries: Vec<(String, HashMap<String, String>)> =
        cluster_query(con, &["XRANGE", stream, "-", "+"]).expect("XRANGE");
    let mut events: HashMap<String, Vec<String>> = HashMap::new();
    for (_, fields) in entries {
        events
            .entry(fields["request"].clone())
            .or_default()
            .push(fields["event"].clone());
    }
    events
}

/// The consumer group as a reader sees it: its XINFO GROUPS fields that
/// new entries do not change, and its pending entries with their consumers.
fn group_state(con: &mut Connection, stream: &str) -> (Vec<(String, String)>, Vec<String>) {
    let groups: Vec<Value> = ok(con, &["XINFO", "GROUPS", stream]);
    let group: Vec<(String, String)> = match &groups[0] {
        Value::Array(items) => items
            .chunks(2)
            .map(|pair| (text(&pair[0]), text(&pair[1])))
            .filter(|(field, _)| {
                ["name", "consumers", "pending", "last-delivered-id"].contains(&field.as_str())
            })
            .collect(),
        Value::Map(pairs) => pairs.iter().map(|(k, v)| (text(k), text(v))).collect(),
        other => panic!("unexpected XINFO GROUPS reply {other:?}"),
    };
    // Id, consumer and delivery count; not the idle time, which runs on.
    let pending: Vec<(String, String, i64, i64)> =
        ok(con, &["XPENDING", stream, "g", "-", "+", "100"]);
    let pending = pending
        .into_iter()
        .map(|(id, consumer, _idle, deliveries)| format!("{id} {consumer} {deliveries}"))
        .collect();
    (group, pending)
}

#[test]
fn live_items_move_atomically_and_a_cancelled_move_leaves_nothing_behind() {
    if !server_has_atomic_slot_migration() {
        eprintln!("skipped: the server has no atomic slot migration (Valkey 9 and later)");
        return;
    }
    let cluster = Cluster::start(3, 1);
    a_slot_of_live_items_moves_while_clients_shop(&cluster);
    a_migration_cancelled_half_way_leaves_both_nodes_as_they_were(&cluster);
}

/// With more than one database per node, Valkey 9.1 applies the writes it
/// streams during a migration to the database its snapshot ended in, not
/// to the key's (a plain SET shows it too): the module declares no support
/// there, so the server refuses the migration and the item stays whole
/// where it was.
#[test]
fn with_several_databases_per_node_a_migration_is_refused() {
    if !server_has_atomic_slot_migration() {
        eprintln!("skipped: the server has no atomic slot migration (Valkey 9 and later)");
        return;
    }
    let cluster = Cluster::start_with(3, 0, &["--cluster-databases", "2"]);
    const ITEM: &str = "{sale:d}";
    let slot = cluster.slot(ITEM);
    let source = cluster.owner(slot);
    let target = (source + 1) % 3;
    let mut source_con = cluster.con(source);
    ok::<i64>(&mut source_con, &["SECKILL.INIT", ITEM, "10"]);
    ok::<i64>(&mut source_con, &["SECKILL.DEDUCT", ITEM, "ann", "1"]);
    let refused = migrate_slot(&mut source_con, slot, &cluster.id(target))
        .expect_err("the migration is refused")
        .to_string();
    assert!(
        refused.contains("seckill does not support atomic slot migrations"),
        "{refused}"
    );
    assert_eq!(cluster.owner(slot), source);
    assert_eq!(ok::<i64>(&mut source_con, &["SECKILL.GET", ITEM]), 9);
    // With one database per node the same cluster setting moves the slot.
    let single = Cluster::start_with(3, 0, &["--cluster-databases", "1"]);
    let slot = single.slot(ITEM);
    let source = single.owner(slot);
    let mut source_con = single.con(source);
    ok::<i64>(&mut source_con, &["SECKILL.INIT", ITEM, "10"]);
    let started =
        migrate_slot(&mut source_con, slot, &single.id((source + 1) % 3)).expect("MIGRATESLOTS");
    assert_eq!(started, "OK");
    wait_until("the slot to move", SETTLES_WITHIN, || {
        migration_state(&mut source_con, "EXPORT", slot).as_deref() == Some("success")
    });
}

/// Moves the slot of a busy item, an untouched one and a big one while two
/// clients buy, hold and confirm, with holds lapsing during the move.
fn a_slot_of_live_items_moves_while_clients_shop(cluster: &Cluster) {
    let mut con = cluster.client();
    const BUSY: &str = "{sale:a}";
    const STREAM: &str = "{sale:a}:orders";
    const QUIET: &str = "{sale:a}:quiet";
    const BIG: &str = "{sale:a}:big";
    let slot = cluster.slot(BUSY);
    let source = cluster.owner(slot);
    let target = (0..3)
        .find(|index| *index != source)
        .expect("another master");
    let mut source_con = cluster.con(source);
    let mut target_con = cluster.con(target);
    // A first item and stream cost the server some memory of its own for
    // good (its tables for the slot, the stream's structures): paid here,
    // so that what is left after the move is the module's alone.
    fill_buyers(&mut source_con, "{sale:a}:warm-up", 1_000);
    ok::<String>(
        &mut source_con,
        &["XADD", "{sale:a}:warm-up:orders", "*", "f", "v"],
    );
    ok::<i64>(
        &mut source_con,
        &["DEL", "{sale:a}:warm-up", "{sale:a}:warm-up:orders"],
    );
    let source_dataset_before = dataset_bytes(&mut source_con);
    let source_holds_before = items_with_pending_holds(&mut source_con);

    cluster_query::<i64>(
        &mut con,
        &["SECKILL.INIT", BUSY, "1000000", "STREAM", STREAM],
    )
    .expect("INIT");
    for n in 0..4 {
        let (user, id) = (format!("early:{n}"), format!("early:{n}"));
        cluster_query::<i64>(&mut con, &["SECKILL.DEDUCT", BUSY, &user, "1", "ID", &id])
            .expect("DEDUCT");
    }
    // A consumer group that read three entries and acknowledged one.
    ok::<String>(&mut source_con, &["XGROUP", "CREATE", STREAM, "g", "0"]);
    ok::<Value>(
        &mut source_con,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "reader",
            "COUNT",
            "3",
            "STREAMS",
            STREAM,
            ">",
        ],
    );
    let first: Vec<(String, HashMap<String, String>)> =
        ok(&mut source_con, &["XRANGE", STREAM, "-", "+", "COUNT", "1"]);
    ok::<i64>(&mut source_con, &["XACK", STREAM, "g", &first[0].0]);
    let group_before = group_state(&mut source_con, STREAM);

    // An item nobody touches during the move: buyers, a long hold, a
    // transfer given out and one received.
    ok::<i64>(
        &mut source_con,
        &["SECKILL.INIT", QUIET, "500", "LIMIT", "4"],
    );
    for n in 0..5 {
        let user = format!("quiet:{n}");
        ok::<i64>(&mut source_con, &["SECKILL.DEDUCT", QUIET, &user, "2"]);
    }
    ok::<i64>(
        &mut source_con,
        &[
            "SECKILL.DEDUCT",
            QUIET,
            "waiter",
            "1",
            "ID",
            "long",
            "HOLD",
            "600",
        ],
    );
    ok::<i64>(
        &mut source_con,
        &["SECKILL.TAKE", QUIET, "20", "ID", "t-out", "TO", "{sale:z}"],
    );
    ok::<i64>(&mut source_con, &["SECKILL.ADD", QUIET, "5", "ID", "t-in"]);
    fill_buyers(&mut source_con, BIG, 100_000);
    let quiet_digests: Vec<String> = [QUIET, BIG]
        .iter()
        .map(|key| digest(&mut source_con, key))
        .collect();

    let items_bytes = dataset_bytes(&mut source_con) - source_dataset_before;

    let stop = Arc::new(AtomicBool::new(false));
    let acknowledged = Arc::new(Mutex::new(Acknowledged::default()));
    let shoppers: Vec<_> = ["north", "south"]
        .into_iter()
        .map(|name| {
            shopper(
                cluster,
                BUSY,
                name,
                Arc::clone(&stop),
                Arc::clone(&acknowledged),
            )
        })
        .collect();
    thread::sleep(Duration::from_millis(500));

    // The source streams the slot and its writes, and is kept from the
    // final pause: the move stays half-way while holds placed before and
    // during it lapse on the source.
    ok::<String>(
        &mut source_con,
        &["DEBUG", "SLOTMIGRATION", "PREVENT-PAUSE", "1"],
    );
    let moved = migrate_slot(&mut source_con, slot, &cluster.id(target)).expect("MIGRATESLOTS");
    assert_eq!(moved, "OK");
    wait_until("the slot's snapshot to be sent", SETTLES_WITHIN, || {
        migration_state(&mut source_con, "EXPORT", slot).as_deref() == Some("waiting-to-pause")
    });
    thread::sleep(Duration::from_millis(2_500));

    // Half-way, the target holds what the source holds for items nobody
    // writes to, while the slot is still the source's: clients are sent
    // there, and the snapshot's commands are refused to them.
    for (key, before) in [QUIET, BIG].iter().zip(&quiet_digests) {
        assert_eq!(&digest(&mut target_con, key), before, "{key} half-way");
    }
    let refused = common::run::<i64>(&mut target_con, &["SECKILL.GET", BUSY]);
    assert_eq!(refused.expect_err("a redirect").code(), Some("MOVED"));
    let owned_by_target = (0..)
        .map(|n| format!("{{probe:{n}}}"))
        .find(|key| common::run::<Value>(&mut target_con, &["SECKILL.GET", key]).is_ok())
        .expect("a key the target serves");
    let refused = common::error(
        &mut target_con,
        &["SECKILL.LOADCHUNK", &owned_by_target, "x"],
    );
    assert!(
        refused.starts_with("ERR SECKILL.LOADCHUNK is only accepted"),
        "{refused}"
    );

    ok::<String>(
        &mut source_con,
        &["DEBUG", "SLOTMIGRATION", "PREVENT-PAUSE", "0"],
    );
    wait_until("the slot to move", SETTLES_WITHIN, || {
        migration_state(&mut source_con, "EXPORT", slot).as_deref() == Some("success")
            && migration_state(&mut target_con, "IMPORT", slot).as_deref() == Some("success")
    });
    thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    for shopper in shoppers {
        shopper.join().expect("shopper");
    }
    assert_eq!(cluster.owner(slot), target);

    // Every hold lapses or is confirmed, on the target now. (Reads count a
    // lapsed hold as released at once; its release, with its event, is the
    // sweep's.)
    let acknowledged = acknowledged.lock().unwrap();
    assert!(!acknowledged.purchases.is_empty() && !acknowledged.holds.is_empty());
    let mut events = HashMap::new();
    wait_until("the last holds to lapse", SETTLES_WITHIN, || {
        events = events_by_request(&mut con, STREAM);
        acknowledged
            .holds
            .iter()
            .all(|id| events.get(id).is_some_and(|kinds| kinds.len() >= 2))
    });
    for id in &acknowledged.purchases {
        assert_eq!(events.get(id), Some(&vec!["purchase".to_owned()]), "{id}");
    }
    let mut lapsed = 0;
    for id in &acknowledged.holds {
        let outcome = events
            .get(id)
            .unwrap_or_else(|| panic!("{id} has no events"));
        assert_eq!(outcome.len(), 2, "{id}: {outcome:?}");
        assert_eq!(outcome[0], "hold", "{id}: {outcome:?}");
        if acknowledged.confirmed.contains(id) {
            assert_eq!(outcome[1], "confirm", "{id}: {outcome:?}");
        } else {
            assert!(
                ["confirm", "expire"].contains(&outcome[1].as_str()),
                "{id}: {outcome:?}"
            );
        }
        lapsed += usize::from(outcome[1] == "expire");
    }
    assert!(lapsed > 0, "no hold lapsed during the test");
    // Nothing was applied twice, and nothing beyond the failed calls was
    // applied unacknowledged: the ledger agrees with its stream.
    let sales = events
        .values()
        .filter(|kinds| kinds[0] == "purchase" || kinds[0] == "hold")
        .count() as i64;
    let expired = events
        .values()
        .filter(|kinds| kinds.iter().any(|kind| kind == "expire"))
        .count() as i64;
    assert!(events.values().all(|kinds| kinds.len() <= 2));
    let answered = (acknowledged.purchases.len() + acknowledged.holds.len()) as i64;
    let sold = common::info_field(&mut target_con, BUSY, "sold");
    assert_eq!(sold, sales);
    assert!(sold >= answered + 4 && sold <= answered + 4 + acknowledged.failed as i64);
    assert_eq!(
        common::info_field(&mut target_con, BUSY, "expired"),
        expired
    );

    // The items nobody wrote to arrived as they left, and the consumer
    // group with its pending entries; the target's replica holds the same.
    for (key, before) in [QUIET, BIG].iter().zip(&quiet_digests) {
        assert_eq!(&digest(&mut target_con, key), before, "{key}");
    }
    assert_eq!(group_state(&mut target_con, STREAM), group_before);
    let replica = cluster.replica_of(target);
    let mut replica_con = cluster.con(replica);
    ok::<i64>(&mut target_con, &["WAIT", "1", "5000"]);
    for key in [BUSY, STREAM, QUIET, BIG] {
        assert_eq!(
            digest(&mut replica_con, key),
            digest(&mut target_con, key),
            "{key}"
        );
    }

    // The source deleted the slot's keys and freed what the module held
    // (not to the byte: the server keeps some structures of its own for
    // the slot; a module value left behind would be most of the items).
    wait_until("the source to free the moved items", SETTLES_WITHIN, || {
        let left = dataset_bytes(&mut source_con) - source_dataset_before;
        left < items_bytes / 4 && items_with_pending_holds(&mut source_con) == source_holds_before
    });
    for key in [BUSY, STREAM, QUIET, BIG] {
        assert_eq!(digest(&mut source_con, key), ABSENT, "{key} on the source");
    }
}

/// Starts moving the slot of an item with a hold, a stream and a big
/// ledger, and cancels once the target holds them all.
fn a_migration_cancelled_half_way_leaves_both_nodes_as_they_were(cluster: &Cluster) {
    let mut con = cluster.client();
    const KEPT: &str = "{sale:b}";
    const KEPT_STREAM: &str = "{sale:b}:orders";
    const KEPT_BIG: &str = "{sale:b}:big";
    let slot = cluster.slot(KEPT);
    let source = cluster.owner(slot);
    let target = (0..3)
        .find(|index| *index != source)
        .expect("another master");
    let mut source_con = cluster.con(source);
    let mut target_con = cluster.con(target);
    ok::<i64>(
        &mut source_con,
        &["SECKILL.INIT", KEPT, "100", "STREAM", KEPT_STREAM],
    );
    ok::<i64>(
        &mut source_con,
        &["SECKILL.DEDUCT", KEPT, "ann", "1", "ID", "k1"],
    );
    ok::<i64>(
        &mut source_con,
        &[
            "SECKILL.DEDUCT",
            KEPT,
            "ben",
            "2",
            "ID",
            "k2",
            "HOLD",
            "600",
        ],
    );
    ok::<String>(
        &mut source_con,
        &["XGROUP", "CREATE", KEPT_STREAM, "g", "0"],
    );
    ok::<Value>(
        &mut source_con,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "reader",
            "COUNT",
            "1",
            "STREAMS",
            KEPT_STREAM,
            ">",
        ],
    );
    fill_buyers(&mut source_con, KEPT_BIG, 20_000);
    let kept: Vec<String> = [KEPT, KEPT_STREAM, KEPT_BIG]
        .iter()
        .map(|key| digest(&mut source_con, key))
        .collect();
    let target_keys_before: i64 = ok(&mut target_con, &["DBSIZE"]);
    let target_holds_before = items_with_pending_holds(&mut target_con);
    let target_dataset_before = dataset_bytes(&mut target_con);

    ok::<String>(
        &mut source_con,
        &["DEBUG", "SLOTMIGRATION", "PREVENT-PAUSE", "1"],
    );
    let started = migrate_slot(&mut source_con, slot, &cluster.id(target)).expect("MIGRATESLOTS");
    assert_eq!(started, "OK");
    wait_until("the slot's snapshot to be sent", SETTLES_WITHIN, || {
        migration_state(&mut source_con, "EXPORT", slot).as_deref() == Some("waiting-to-pause")
    });
    // Half-way: the target has the items, and the hold in its sweep's
    // registry (which leaves it to the source).
    for (key, before) in [KEPT, KEPT_STREAM, KEPT_BIG].iter().zip(&kept) {
        assert_eq!(&digest(&mut target_con, key), before, "{key} half-way");
    }
    assert_eq!(
        items_with_pending_holds(&mut target_con),
        target_holds_before + 1
    );

    ok::<String>(&mut source_con, &["CLUSTER", "CANCELSLOTMIGRATIONS"]);
    ok::<String>(
        &mut source_con,
        &["DEBUG", "SLOTMIGRATION", "PREVENT-PAUSE", "0"],
    );
    wait_until(
        "the target to drop the cancelled import",
        SETTLES_WITHIN,
        || {
            let state = migration_state(&mut target_con, "IMPORT", slot);
            let keys: i64 = ok(&mut target_con, &["DBSIZE"]);
            matches!(state.as_deref(), Some("failed" | "cancelled"))
                && keys == target_keys_before
                && items_with_pending_holds(&mut target_con) == target_holds_before
        },
    );
    assert_eq!(
        migration_state(&mut source_con, "EXPORT", slot).as_deref(),
        Some("cancelled")
    );
    for key in [KEPT, KEPT_STREAM, KEPT_BIG] {
        assert_eq!(
            digest(&mut target_con, key),
            ABSENT,
            "{key} left on the target"
        );
    }
    wait_until(
        "the target to free the cancelled import",
        SETTLES_WITHIN,
        || dataset_bytes(&mut target_con) < target_dataset_before + 256 * 1024,
    );

    // The source is as it was, and keeps selling.
    assert_eq!(cluster.owner(slot), source);
    for (key, before) in [KEPT, KEPT_STREAM, KEPT_BIG].iter().zip(&kept) {
        assert_eq!(&digest(&mut source_con, key), before, "{key} on the source");
    }
    assert_eq!(
        cluster_query::<i64>(&mut con, &["SECKILL.DEDUCT", KEPT, "cat", "1", "ID", "k3"])
            .expect("DEDUCT after the cancel"),
        96
    );
    assert_eq!(
        cluster_query::<i64>(&mut con, &["SECKILL.CONFIRM", KEPT, "k2"]).expect("CONFIRM"),
        1
    );
}
