//! Writes that wait for replicas (`wait_replicas`, `seckill_durably`) and
//! the `Unavailable` error kind, against real masters, replicas and a real
//! cluster. A replica is held back with `CLIENT PAUSE ... ALL`, under which
//! `WAIT` on its master answers 0.

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Connection};
use seckill_client::{
    AsyncSeckillCommands, Confirm, ConfirmOutcome, Deduct, Durable, Error, ErrorKind, Init, Refund,
    RefundOutcome, RefundResult, SeckillCommands,
};
use seckill_harness::cluster::Cluster;
use seckill_harness::{command_calls, ok, server_info, wait_until, Server};
use std::time::Duration;

const WITHIN: Duration = Duration::from_secs(60);

/// An async connection that waits for replies longer than any wait here
/// (redis-rs gives up after 500 ms by default).
async fn connect_async(url: String) -> MultiplexedConnection {
    let config = AsyncConnectionConfig::new().set_response_timeout(Some(WITHIN));
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap()
}

fn now_ms(con: &mut Connection) -> i64 {
    let time: Vec<i64> = ok(con, &["TIME"]);
    time[0] * 1000 + time[1] / 1000
}

/// `err` is the `Unavailable` kind, retryable, with the server's `code`.
fn assert_unavailable(err: &Error, code: &str) {
    let Error::Unavailable(cause) = err else {
        panic!("expected Unavailable, got {err:?}");
    };
    assert_eq!(err.kind(), Some(ErrorKind::Unavailable));
    assert_eq!(ErrorKind::Unavailable.name(), "UNAVAILABLE");
    assert!(err.retryable());
    assert!(err.seckill().is_none(), "not the module's error");
    assert_eq!(cause.code(), Some(code), "{err}");
}

#[test]
fn a_paid_hold_confirmed_on_a_replica_survives_the_failover() {
    let mut master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    let mut on_replica = replica.client();
    con.seckill_init(&Init::new("sku:1", 10)).unwrap();
    let deadline = now_ms(&mut con) + 8_000;
    let hold = |user: &str, id: &str| {
        Deduct::new("sku:1", user, 1)
            .request_id(id)
            .hold_until(deadline)
            .wait_replicas(1, 30_000)
    };
    let ann = con.seckill_durably(&hold("ann", "h1")).unwrap();
    assert_eq!(
        (
            ann.result.stock,
            ann.result.deadline,
            ann.replicas,
            ann.wanted
        ),
        (Some(9), Some(deadline), 1, 1)
    );
    assert!(ann.durable());
    let bob = con.seckill_durably(&hold("bob", "h2")).unwrap();
    assert!(bob.durable());

    // Ann pays while the replica is held back: confirmed on the master
    // only.
    ok::<String>(&mut on_replica, &["CLIENT", "PAUSE", "4000", "ALL"]);
    let paid = Confirm::new("sku:1", "h1");
    let unacknowledged = con
        .seckill_durably(&paid.clone().wait_replicas(1, 200))
        .unwrap();
    assert_eq!(
        unacknowledged,
        Durable {
            result: ConfirmOutcome::Confirmed,
            replicas: 0,
            wanted: 1
        }
    );
    assert!(!unacknowledged.durable());
    // Answered once the replica runs again: at once, or when the pause
    // ends on servers that hold UNPAUSE back too.
    ok::<String>(&mut on_replica, &["CLIENT", "UNPAUSE"]);
    // Sent again on the same connection: CONFIRM answers that the purchase
    // was final already, and its WAIT covers the first CONFIRM.
    let acknowledged = con.seckill_durably(&paid.wait_replicas(1, 30_000)).unwrap();
    assert_eq!(
        acknowledged,
        Durable {
            result: ConfirmOutcome::AlreadyFinal,
            replicas: 1,
            wanted: 1
        }
    );
    assert!(acknowledged.durable());

    // The master dies; the replica takes over and outlives the deadline.
    master.kill();
    ok::<String>(&mut on_replica, &["REPLICAOF", "NO", "ONE"]);
    wait_until("the holds' deadline on the new master", WITHIN, || {
        now_ms(&mut on_replica) > deadline
    });
    assert_eq!(on_replica.seckill_bought("sku:1", "ann").unwrap(), Some(1));
    assert_eq!(
        on_replica.seckill_confirm("sku:1", "h1").unwrap(),
        ConfirmOutcome::AlreadyFinal
    );
    // Bob never paid: his hold lapsed there, and its unit is for sale again.
    assert_eq!(on_replica.seckill_bought("sku:1", "bob").unwrap(), Some(0));
    assert_eq!(
        on_replica.seckill_confirm("sku:1", "h2").unwrap(),
        ConfirmOutcome::Lapsed
    );
    assert_eq!(on_replica.seckill_get("sku:1").unwrap(), Some(9));
}

#[test]
fn a_master_short_of_replicas_refuses_writes_as_unavailable() {
    let server = Server::start_with(&["--min-replicas-to-write", "1"]);
    let mut con = server.client();
    let refused = con.seckill_init(&Init::new("sku:1", 10)).unwrap_err();
    assert_unavailable(&refused, "NOREPLICAS");
    assert_eq!(con.seckill_get("sku:1").unwrap(), None, "nothing created");

    ok::<String>(&mut con, &["CONFIG", "SET", "min-replicas-to-write", "0"]);
    con.seckill_init(&Init::new("sku:1", 10)).unwrap();
    ok::<String>(&mut con, &["CONFIG", "SET", "min-replicas-to-write", "1"]);
    let purchase = Deduct::new("sku:1", "ann", 1).request_id("o1");
    let refused = con.seckill_deduct(&purchase).unwrap_err();
    assert_unavailable(&refused, "NOREPLICAS");
    // With a wait, the write's error is returned, and WAIT's answer dropped.
    let refused = con
        .seckill_durably(&purchase.wait_replicas(1, 100))
        .unwrap_err();
    assert_unavailable(&refused, "NOREPLICAS");
    let refused = con
        .seckill_durably(&Confirm::new("sku:1", "o1").wait_replicas(1, 100))
        .unwrap_err();
    assert_unavailable(&refused, "NOREPLICAS");

    let info = con.seckill_info("sku:1").unwrap().unwrap();
    assert_eq!((info.stock, info.sold, info.requests), (10, 0, 0));
}

#[test]
fn a_replica_refuses_writes_as_unavailable() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    con.seckill_init(&Init::new("sku:1", 10)).unwrap();
    let replicas: i64 = ok(&mut con, &["WAIT", "1", "30000"]);
    assert_eq!(replicas, 1);

    let mut on_replica = replica.client();
    let purchase = Deduct::new("sku:1", "ann", 1).request_id("o1");
    let refused = on_replica.seckill_deduct(&purchase).unwrap_err();
    assert_unavailable(&refused, "READONLY");
    let refused = on_replica
        .seckill_durably(&purchase.wait_replicas(1, 100))
        .unwrap_err();
    assert_unavailable(&refused, "READONLY");
    let refused = on_replica
        .seckill_durably(&Refund::new("sku:1", "o1").wait_replicas(1, 100))
        .unwrap_err();
    assert_unavailable(&refused, "READONLY");
    // Reads are served there, and nothing was sold.
    assert_eq!(on_replica.seckill_get("sku:1").unwrap(), Some(10));
    assert_eq!(con.seckill_info("sku:1").unwrap().unwrap().sold, 0);
}

#[test]
fn a_replica_cut_off_from_its_master_answers_unavailable() {
    let mut master = Server::start();
    let replica = Server::start_replica_of_with(&master, &["--replica-serve-stale-data", "no"]);
    let mut on_replica = replica.client();
    master.kill();
    wait_until("the replica to lose its master", WITHIN, || {
        server_info(&mut on_replica, "replication", "master_link_status").as_deref() == Some("down")
    });
    let refused = on_replica.seckill_get("sku:1").unwrap_err();
    assert_unavailable(&refused, "MASTERDOWN");
}

#[test]
fn a_replica_loading_its_master_s_data_answers_unavailable() {
    let master = Server::start();
    let mut con = master.client();
    ok::<String>(&mut con, &["DEBUG", "POPULATE", "5000", "key", "100"]);
    con.seckill_init(&Init::new("sku:1", 10)).unwrap();
    ok::<String>(
        &mut con,
        &["CONFIG", "SET", "repl-diskless-sync-delay", "0"],
    );

    // A replica that loads one key a millisecond, answering clients in
    // between.
    let replica = Server::start();
    let mut on_replica = replica.client();
    ok::<String>(
        &mut on_replica,
        &["CONFIG", "SET", "key-load-delay", "1000"],
    );
    ok::<String>(
        &mut on_replica,
        &[
            "CONFIG",
            "SET",
            "loading-process-events-interval-bytes",
            "1024",
        ],
    );
    let port = master.port.to_string();
    ok::<String>(&mut on_replica, &["REPLICAOF", "127.0.0.1", &port]);
    wait_until("the replica to load the master's data", WITHIN, || {
        server_info(&mut on_replica, "persistence", "loading").as_deref() == Some("1")
    });
    let refused = on_replica.seckill_get("sku:1").unwrap_err();
    assert_unavailable(&refused, "LOADING");
}

#[test]
fn a_connection_lost_during_a_durable_write_is_unavailable_and_its_retry_happens_once() {
    // No replica: the WAIT after the purchase waits until the connection
    // is killed.
    let server = Server::start();
    let mut admin = server.client();
    admin.seckill_init(&Init::new("sku:1", 10)).unwrap();
    let mut con = server.client();
    let id: i64 = ok(&mut con, &["CLIENT", "ID"]);
    let buyer = std::thread::spawn(move || {
        con.seckill_durably(
            &Deduct::new("sku:1", "ann", 1)
                .request_id("o1")
                .wait_replicas(1, 120_000),
        )
    });
    wait_until("the purchase to wait for a replica", WITHIN, || {
        server_info(&mut admin, "clients", "blocked_clients").as_deref() == Some("1")
    });
    ok::<i64>(&mut admin, &["CLIENT", "KILL", "ID", &id.to_string()]);
    let lost = buyer.join().unwrap().unwrap_err();
    let Error::Unavailable(cause) = &lost else {
        panic!("expected Unavailable, got {lost:?}");
    };
    assert_eq!(cause.code(), None, "no reply: the connection was lost");
    assert_eq!(lost.kind(), Some(ErrorKind::Unavailable));
    assert!(lost.retryable());

    // The purchase was made before the connection was lost; sent again
    // with its request id, it is not made twice.
    let mut again = server.client();
    let retried = again
        .seckill_deduct(&Deduct::new("sku:1", "ann", 1).request_id("o1"))
        .unwrap();
    assert_eq!(retried.stock, Some(9));
    assert_eq!(again.seckill_info("sku:1").unwrap().unwrap().sold, 1);
}

#[test]
fn a_durable_write_inside_a_transaction_is_refused() {
    // `Durably` has no `to_cmd`, so it cannot be queued in a pipeline (a
    // doctest of `Durably` checks that it does not compile). A `MULTI`
    // opened by hand on the connection is told apart by its replies.
    let server = Server::start();
    let mut con = server.client();
    con.seckill_init(&Init::new("sku:1", 10)).unwrap();
    ok::<String>(&mut con, &["MULTI"]);
    let refused = con
        .seckill_durably(&Deduct::new("sku:1", "ann", 1).wait_replicas(1, 100))
        .unwrap_err();
    assert!(matches!(refused, Error::Redis(_)), "{refused:?}");
    assert_eq!(refused.kind(), None);
    assert!(!refused.retryable());
    assert!(refused.to_string().contains("inside MULTI"), "{refused}");
    ok::<String>(&mut con, &["DISCARD"]);
    assert_eq!(con.seckill_get("sku:1").unwrap(), Some(10));
}

#[test]
fn async_connections_wait_for_replicas_too() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut con = connect_async(format!("{}?protocol=resp3", master.url())).await;
        con.seckill_init(&Init::new("sku:1", 10)).await.unwrap();
        let held = con
            .seckill_durably(
                &Deduct::new("sku:1", "ann", 2)
                    .request_id("o1")
                    .hold(600)
                    .wait_replicas(1, 30_000),
            )
            .await
            .unwrap();
        assert_eq!((held.result.stock, held.replicas), (Some(8), 1));
        assert!(held.result.deadline.is_some(), "a hold's deadline");
        let paid = con
            .seckill_durably(&Confirm::new("sku:1", "o1").wait_replicas(1, 30_000))
            .await
            .unwrap();
        assert_eq!(
            paid,
            Durable {
                result: ConfirmOutcome::Confirmed,
                replicas: 1,
                wanted: 1
            }
        );
        let refunded = con
            .seckill_durably(&Refund::new("sku:1", "o1").wait_replicas(1, 30_000))
            .await
            .unwrap();
        let units_back = RefundResult {
            outcome: RefundOutcome::Refunded,
            units: Some(2),
        };
        assert_eq!((refunded.result, refunded.replicas), (units_back, 1));
        assert!(refunded.durable());
        // Refunded before: no units, on the connection that refunded them.
        let again = con
            .seckill_durably(&Refund::new("sku:1", "o1").wait_replicas(1, 30_000))
            .await
            .unwrap();
        assert_eq!(
            (again.result.outcome, again.result.units, again.replicas),
            (RefundOutcome::AlreadyRefunded, None, 1)
        );
        let none = con
            .seckill_durably(&Refund::new("sku:none", "o1").wait_replicas(0, 100))
            .await
            .unwrap();
        assert_eq!(none.result.outcome, RefundOutcome::NoItem);
        assert!(none.durable(), "no replica was asked for");

        let mut on_replica = connect_async(replica.url()).await;
        let refused = on_replica
            .seckill_durably(&Confirm::new("sku:1", "o1").wait_replicas(1, 100))
            .await
            .unwrap_err();
        assert_unavailable(&refused, "READONLY");
    });
}

/// One key on each of three masters, found by asking the cluster.
fn keys_on_three_masters(cluster: &Cluster) -> Vec<(String, usize)> {
    let mut keys: Vec<(String, usize)> = Vec::new();
    for n in 0.. {
        let key = format!("sku:{n}");
        let owner = cluster.owner(cluster.slot(&key));
        if keys.iter().all(|(_, seen)| *seen != owner) {
            keys.push((key, owner));
        }
        if keys.len() == 3 {
            return keys;
        }
    }
    unreachable!()
}

/// How many WAITs each node ran.
fn waits(cluster: &Cluster) -> Vec<i64> {
    cluster
        .nodes
        .iter()
        .map(|node| command_calls(&mut node.client(), "wait"))
        .collect()
}

/// `before` with one more WAIT on each of `owners`.
fn one_more_on(before: &[i64], owners: &[usize]) -> Vec<i64> {
    let mut after = before.to_vec();
    for owner in owners {
        after[*owner] += 1;
    }
    after
}

#[test]
fn on_a_cluster_the_wait_runs_on_the_master_of_the_key() {
    let cluster = Cluster::start(3, 1);
    let keys = keys_on_three_masters(&cluster);
    let owners: Vec<usize> = keys.iter().map(|(_, owner)| *owner).collect();
    let mut con = cluster.client();
    for (key, _) in &keys {
        con.seckill_init(&Init::new(key.as_str(), 10)).unwrap();
    }

    let before = waits(&cluster);
    for (key, _) in &keys {
        let held = con
            .seckill_durably(
                &Deduct::new(key.as_str(), "ann", 1)
                    .request_id("o1")
                    .hold(600)
                    .wait_replicas(1, 30_000),
            )
            .unwrap();
        assert_eq!((held.result.stock, held.replicas), (Some(9), 1), "{key}");
    }
    assert_eq!(waits(&cluster), one_more_on(&before, &owners));

    // The async cluster connection, the same way.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let before = waits(&cluster);
    runtime.block_on(async {
        let nodes: Vec<String> = cluster.nodes.iter().map(Server::url).collect();
        let client = redis::cluster::ClusterClient::builder(nodes)
            .response_timeout(WITHIN)
            .build()
            .unwrap();
        let mut con = client.get_async_connection().await.unwrap();
        for (key, _) in &keys {
            let paid = con
                .seckill_durably(&Confirm::new(key.as_str(), "o1").wait_replicas(1, 30_000))
                .await
                .unwrap();
            assert_eq!(
                (paid.result, paid.replicas),
                (ConfirmOutcome::Confirmed, 1),
                "{key}"
            );
        }
    });
    assert_eq!(waits(&cluster), one_more_on(&before, &owners));
}
