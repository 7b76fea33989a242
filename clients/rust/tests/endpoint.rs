//! `Endpoint` with Redis Sentinel: the master is whatever the sentinels
//! name now, and a sentinel that hangs does not hang the caller.

use seckill_client::endpoint::{Endpoint, EndpointSettings, Setting};
use seckill_harness::sentinel::{Sentinels, MASTER_NAME};
use seckill_harness::{ok, Server};
use std::sync::mpsc;
use std::time::Duration;

fn sentinel_endpoint(sentinels: &str) -> Endpoint {
    let settings = EndpointSettings {
        sentinels: Some(Setting::new("--sentinel", sentinels)),
        master_name: Some(Setting::new("--master-name", MASTER_NAME)),
        ..Default::default()
    };
    Endpoint::from_settings(&settings, None).expect("an endpoint")
}

fn port_of(client: &redis::Client) -> u16 {
    match client.get_connection_info().addr() {
        redis::ConnectionAddr::Tcp(_, port) => *port,
        other => panic!("not TCP: {other:?}"),
    }
}

#[test]
fn the_master_is_found_past_a_sentinel_that_hangs() {
    let master = Server::start();
    let _replica = Server::start_replica_of(&master);
    let sentinels = Sentinels::watch(&master, 1);
    // The hung one first: it is asked first, and must be passed over.
    sentinels.nodes[0].pause();
    let endpoint = sentinel_endpoint(&sentinels.addresses());
    let (found, answer) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = found.send(endpoint.master().map(|client| port_of(&client)));
    });
    // A guard against hanging, not a timing assertion: the lookup gives
    // up on the hung sentinel long before this.
    let port = answer
        .recv_timeout(Duration::from_secs(60))
        .expect("the lookup returned")
        .expect("a master");
    assert_eq!(port, master.port);
    sentinels.nodes[0].resume();
}

#[test]
fn the_master_is_asked_again_after_a_failover() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let sentinels = Sentinels::watch(&master, 1);
    let endpoint = sentinel_endpoint(&sentinels.addresses());
    assert_eq!(port_of(&endpoint.master().unwrap()), master.port);
    let _: redis::Value = redis::cmd("SENTINEL")
        .arg("FAILOVER")
        .arg(MASTER_NAME)
        .query(&mut sentinels.nodes[0].client())
        .expect("SENTINEL FAILOVER");
    sentinels.wait_for_master(replica.port);
    let mut promoted = endpoint.master().unwrap().get_connection().unwrap();
    assert_eq!(port_of(&endpoint.master().unwrap()), replica.port);
    // It answers as a master: it takes writes.
    ok::<String>(&mut promoted, &["SET", "after-failover", "1"]);
}

#[test]
fn sentinels_that_are_all_down_are_an_error_that_names_them() {
    let endpoint = sentinel_endpoint("127.0.0.1:1,127.0.0.1:2");
    let Err(err) = endpoint.master() else {
        panic!("a master from sentinels that are down");
    };
    assert!(
        err.contains("no master seckill from the sentinels 127.0.0.1:1,127.0.0.1:2"),
        "{err}"
    );
}
