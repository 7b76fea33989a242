//! The rebalancer against parts that misbehave: one item it cannot move
//! does not stop the others, a part created again under the same name is
//! refilled without losing units, and bad settings are refused.

use seckill_client::{Deduct, Init, SeckillCommands};
use seckill_harness::{ok, wait_until, Server};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Rebalancer(Child);

impl Rebalancer {
    fn start(server: &Server, items: &[&str]) -> Rebalancer {
        Rebalancer::start_with(server, items, &[])
    }

    fn start_with(server: &Server, items: &[&str], extra: &[&str]) -> Rebalancer {
        let mut command = Command::new(env!("CARGO_BIN_EXE_seckill-rebalancer"));
        command.args([
            "--redis",
            &server.url(),
            "--low",
            "5",
            "--interval-ms",
            "20",
        ]);
        command.args(extra);
        for item in items {
            command.args(["--item", item]);
        }
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start seckill-rebalancer");
        Rebalancer(child)
    }
}

impl Drop for Rebalancer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn stock(con: &mut redis::Connection, key: &str) -> i64 {
    con.seckill_get(key).unwrap().unwrap_or(0)
}

#[test]
fn an_item_it_cannot_move_does_not_stop_the_others() {
    let server = Server::start();
    let mut con = server.client();
    // The first item has a part of another type and an unlimited one.
    ok::<String>(&mut con, &["SET", "bad:0", "not an item"]);
    con.seckill_init(&Init::new("bad:1", 0)).unwrap();
    con.seckill_init(&Init::new("bad:2", seckill_client::Stock::Unlimited))
        .unwrap();
    con.seckill_init(&Init::new("good:0", 100)).unwrap();
    con.seckill_init(&Init::new("good:1", 0)).unwrap();
    let _rebalancer = Rebalancer::start(&server, &["bad:0,bad:1,bad:2", "good:0,good:1"]);
    wait_until(
        "the good item to be balanced",
        Duration::from_secs(10),
        || stock(&mut con, "good:1") == 50,
    );
    assert_eq!(stock(&mut con, "good:0"), 50);
    assert_eq!(stock(&mut con, "bad:1"), 0);
}

#[test]
fn a_part_created_again_is_refilled_without_losing_units() {
    let server = Server::start();
    let mut con = server.client();
    con.seckill_init(&Init::new("e:0", 100)).unwrap();
    con.seckill_init(&Init::new("e:1", 0)).unwrap();
    let mut rebalancer = Some(Rebalancer::start(&server, &["e:0,e:1"]));
    wait_until("the first move", Duration::from_secs(10), || {
        stock(&mut con, "e:1") == 50
    });
    for n in 0..50 {
        let result = con
            .seckill_deduct(&Deduct::new("e:1", format!("u{n}"), 1))
            .unwrap();
        assert!(result.bought());
    }
    rebalancer.take();
    ok::<i64>(&mut con, &["DEL", "e:0"]);
    con.seckill_init(&Init::new("e:0", 100)).unwrap();
    let _rebalancer = Rebalancer::start(&server, &["e:0,e:1"]);
    wait_until("the new part to give", Duration::from_secs(10), || {
        stock(&mut con, "e:1") == 50
    });
    assert_eq!(stock(&mut con, "e:0"), 50, "units lost in the second move");
    let open = con.seckill_transfers("e:0").unwrap().unwrap();
    assert!(open.is_empty(), "{open:?}");
}

#[test]
fn a_move_waiting_for_a_replica_is_not_taken_again_every_round() {
    // No replica will ever acknowledge: the first TAKE stays open, and the
    // donor gives nothing more meanwhile.
    let server = Server::start();
    let mut con = server.client();
    con.seckill_init(&Init::new("w:0", 100)).unwrap();
    con.seckill_init(&Init::new("w:1", 0)).unwrap();
    let _rebalancer = Rebalancer::start_with(
        &server,
        &["w:0,w:1"],
        &["--wait-replicas", "1", "--wait-timeout-ms", "5"],
    );
    wait_until("the first TAKE", Duration::from_secs(10), || {
        stock(&mut con, "w:0") == 50
    });
    // Many rounds later (20 ms each), still that one transfer.
    std::thread::sleep(Duration::from_millis(500));
    let open = con.seckill_transfers("w:0").unwrap().unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!((stock(&mut con, "w:0"), stock(&mut con, "w:1")), (50, 0));
}

#[test]
fn bad_settings_are_refused_with_exit_status_2() {
    for args in [
        &["--item", "a,b"][..],
        &["--redis", "redis://127.0.0.1:1/", "--item", "a"],
        &["--redis", "redis://127.0.0.1:1/", "--item", "a,b,a"],
        &[
            "--redis",
            "redis://127.0.0.1:1/",
            "--item",
            &format!("a,{}", "x".repeat(256)),
        ],
        &[
            "--redis",
            "redis://127.0.0.1:1/",
            "--item",
            "a,b",
            "--low",
            "many",
        ],
        &["--redis", "redis://127.0.0.1:1/", "--item", "a,b", "--what"],
    ] {
        let status = Command::new(env!("CARGO_BIN_EXE_seckill-rebalancer"))
            .args(args)
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(2), "{args:?}");
    }
}
