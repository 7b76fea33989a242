//! One item split over three shards, sold out to the last unit while the
//! rebalancer moves stock between the parts, is killed with SIGKILL twice
//! and restarted, and one master fails over.

use redis::cluster::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use seckill_client::split::SplitItem;
use seckill_client::{Deduct, Init, Outcome, SeckillCommands};
use seckill_harness::cluster::Cluster;
use seckill_harness::wait_until;
use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

const UNITS: i64 = 5_000;
const LIMIT: i64 = 2;
const CLICKS: usize = 100_000;
const USERS: u64 = 30_000;

/// Part names whose slots three different masters own.
fn parts_on_three_masters(cluster: &Cluster) -> Vec<String> {
    let mut owners = Vec::new();
    let mut parts = Vec::new();
    for i in 0.. {
        let name = format!("sku:hot:part:{i}");
        let owner = cluster.owner(cluster.slot(&name));
        if !owners.contains(&owner) {
            owners.push(owner);
            parts.push(name);
        }
        if parts.len() == 3 {
            return parts;
        }
    }
    unreachable!()
}

/// The rebalancer process, killed when dropped, so that a failing test
/// leaves none running.
struct Rebalancer(Child);

impl Rebalancer {
    fn start(seed: &str, parts: &[String]) -> Rebalancer {
        let child = Command::new(env!("CARGO_BIN_EXE_seckill-rebalancer"))
            .args(["--redis", seed, "--cluster", "--item", &parts.join(",")])
            .args(["--low", "20", "--interval-ms", "20", "--lease-ms", "500"])
            // A TAKE's units go elsewhere only once a replica has it.
            .args(["--wait-replicas", "1", "--wait-timeout-ms", "200"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start seckill-rebalancer");
        Rebalancer(child)
    }

    /// SIGKILL, wherever it is.
    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Rebalancer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A small deterministic generator: the same clicks every run.
struct Clicks(u64);

impl Clicks {
    fn next_user(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % USERS
    }
}

/// Runs `call` until it succeeds: while a master fails over, calls fail
/// for a few seconds, and a purchase is retried with its request id, which
/// makes the retry safe. After a failure the connection is made again from
/// the live nodes, so that it learns the new master.
fn retried<T>(
    cluster: &Cluster,
    con: &mut ClusterConnection,
    what: &str,
    mut call: impl FnMut(&mut ClusterConnection) -> seckill_client::Result<T>,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match call(con) {
            Ok(value) => return value,
            Err(err) if Instant::now() < deadline => {
                let _ = err;
                sleep(Duration::from_millis(100));
                *con = cluster.client();
            }
            Err(err) => panic!("{what}: {err}"),
        }
    }
}

fn master_of(slot: u16) -> RoutingInfo {
    RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::new(
        slot,
        SlotAddr::Master,
    )))
}

/// Replicas of the part's master that have the purchase, after `WAIT 1`.
fn acknowledged(con: &mut ClusterConnection, slot: u16) -> bool {
    let mut wait = redis::cmd("WAIT");
    wait.arg(1).arg(100);
    matches!(con.route_command(&wait, master_of(slot)), Ok(redis::Value::Int(n)) if n >= 1)
}

#[test]
fn a_split_item_sells_exactly_its_stock_through_kills_and_a_failover() {
    let mut cluster = Cluster::start(3, 1);
    let parts = parts_on_three_masters(&cluster);
    let item = SplitItem::new(parts.clone());
    let slots: Vec<u16> = parts.iter().map(|part| cluster.slot(part)).collect();
    let mut con = cluster.client();
    // Uneven on purpose: the third part starts dry, so its buyers are
    // served only by what the rebalancer moves there.
    for (part, units) in parts.iter().zip([4_000, 1_000, 0]) {
        assert!(con
            .seckill_init(&Init::new(part.as_str(), units).limit(LIMIT))
            .unwrap());
    }
    let owners: Vec<usize> = slots.iter().map(|slot| cluster.owner(*slot)).collect();
    // The rebalancer's seed is a master that is not failed over below.
    let seed = cluster.nodes[owners[0]].url();
    let mut rebalancer = Rebalancer::start(&seed, &parts);

    let mut clicks = Clicks(0x9e37_79b9_7f4a_7c15);
    let mut acked: Vec<(String, String)> = Vec::new();
    let mut bought_by_outcome: HashMap<&'static str, usize> = HashMap::new();
    let failed_over = owners[1];
    let mut sold_out_at = None;
    for click in 0..CLICKS {
        match click {
            // SIGKILL at any point: the next run finishes what it left open.
            1_500 | 3_500 => {
                rebalancer.kill();
                rebalancer = Rebalancer::start(&seed, &parts);
            }
            // The second part's master dies; its replica takes over.
            2_500 => cluster.nodes[failed_over].kill(),
            // Back as a replica of the new master, so WAIT 1 can succeed.
            3_000 => {
                cluster.nodes[failed_over].start_again();
            }
            _ => {}
        }
        let user = format!("user:{}", clicks.next_user());
        let request_id = format!("click:{click}");
        let part = item.part_for(&user);
        let result = retried(&cluster, &mut con, "DEDUCT", |con| {
            item.deduct(con, &user, |key| {
                Deduct::new(key, user.as_str(), 1).request_id(request_id.as_str())
            })
        });
        *bought_by_outcome.entry(result.outcome.name()).or_default() += 1;
        if result.outcome == Outcome::Bought {
            sold_out_at = Some(click);
        }
        if result.outcome == Outcome::Bought && acknowledged(&mut con, slots[part]) {
            acked.push((user, request_id));
        }
    }
    eprintln!(
        "outcomes: {bought_by_outcome:?}; acknowledged {}",
        acked.len()
    );
    // The kills and the failover all came while units were still selling.
    assert!(
        sold_out_at.is_some_and(|click| click > 3_000),
        "sold out at click {sold_out_at:?}"
    );

    // The rebalancer finishes: nothing left open, nothing left to move.
    wait_until(
        "open transfers to be settled",
        Duration::from_secs(30),
        || {
            parts.iter().all(|part| {
                retried(&cluster, &mut con, "TRANSFERS", |con| {
                    con.seckill_transfers(part.as_str())
                })
                .unwrap_or_default()
                .is_empty()
            })
        },
    );
    rebalancer.kill();

    // Exactly the stock was sold, none left while buyers kept clicking.
    let infos: Vec<_> = parts
        .iter()
        .map(|part| {
            retried(&cluster, &mut con, "INFO", |con| {
                con.seckill_info(part.as_str())
            })
            .unwrap()
        })
        .collect();
    let mut net_sold = 0;
    let (mut moved_out, mut moved_in) = (0, 0);
    for (part, info) in parts.iter().zip(&infos) {
        // Each part's own bookkeeping.
        assert_eq!(
            info.stock + info.sold - info.refunded - info.expired + info.moved_out - info.moved_in,
            info.initial + info.added,
            "{part}: {info:?}"
        );
        net_sold += info.sold - info.refunded - info.expired;
        moved_out += info.moved_out;
        moved_in += info.moved_in;
    }
    assert_eq!(net_sold, UNITS, "{infos:?}");
    assert_eq!(infos.iter().map(|info| info.stock).sum::<i64>(), 0);
    // Summed over the parts, every unit moved out arrived once.
    assert_eq!(moved_out, moved_in);
    assert!(infos[2].moved_in > 0, "the dry part was refilled");

    // Every acknowledged purchase is there: its replay answers its reply
    // (a lost one would try to buy again and be refused, sold out).
    for (user, request_id) in &acked {
        let replay = retried(&cluster, &mut con, "replay", |con| {
            item.deduct(con, user, |key| {
                Deduct::new(key, user.as_str(), 1).request_id(request_id.as_str())
            })
        });
        assert_eq!(
            replay.outcome,
            Outcome::Bought,
            "{request_id} of {user} was lost"
        );
    }
    // Nobody holds more than the limit, and the units held add up to the
    // units sold: each purchase counted once.
    let mut held = 0;
    for n in 0..USERS {
        let user = format!("user:{n}");
        let units =
            retried(&cluster, &mut con, "BOUGHT", |con| item.bought(con, &user)).unwrap_or(0);
        assert!(units <= LIMIT, "{user} holds {units}");
        held += units;
    }
    assert_eq!(held, UNITS);
}
