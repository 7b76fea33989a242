//! The rebalancer against parts that misbehave: one item it cannot move
//! does not stop the others, a part created again under the same name is
//! refilled without losing units, a transfer someone else pointed outside
//! the item is left alone, and bad settings are refused. Its settings come
//! from the environment as well as from flags, and no password it is given
//! ever shows in its output.

use seckill_client::{Deduct, Init, SeckillCommands};
use seckill_harness::{free_port, ok, wait_until, Server};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The rebalancer's own environment variables: cleared for every run, so
/// that only what a test sets counts.
const REBALANCER_ENV: [&str; 15] = [
    "SECKILL_REDIS_URL",
    "SECKILL_SENTINELS",
    "SECKILL_MASTER_NAME",
    "SECKILL_SENTINEL_USERNAME",
    "SECKILL_SENTINEL_PASSWORD",
    "SECKILL_REDIS_USERNAME",
    "SECKILL_REDIS_PASSWORD",
    "SECKILL_CLUSTER",
    "SECKILL_ITEMS",
    "SECKILL_LOW",
    "SECKILL_INTERVAL_MS",
    "SECKILL_LEASE_MS",
    "SECKILL_NAME",
    "SECKILL_WAIT_REPLICAS",
    "SECKILL_WAIT_TIMEOUT_MS",
];

/// A rebalancer process, its stdout and stderr in one file; killed when
/// dropped.
struct Rebalancer {
    child: Child,
    output: PathBuf,
}

impl Rebalancer {
    fn start(server: &Server, items: &[&str]) -> Rebalancer {
        Rebalancer::start_with(server, items, &[])
    }

    fn start_with(server: &Server, items: &[&str], extra: &[&str]) -> Rebalancer {
        let mut args = vec![
            "--redis".to_owned(),
            server.url(),
            "--low".to_owned(),
            "5".to_owned(),
            "--interval-ms".to_owned(),
            "20".to_owned(),
        ];
        args.extend(extra.iter().map(|arg| arg.to_string()));
        for item in items {
            args.extend(["--item".to_owned(), item.to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Rebalancer::run(server.dir(), &[], &args)
    }

    /// Starts one with exactly `env` (of its own variables) and `args`,
    /// its output in a new file in `dir`.
    fn run(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Rebalancer {
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        let output = dir.join(format!(
            "rebalancer-{}.out",
            RUNS.fetch_add(1, Ordering::Relaxed)
        ));
        let file = fs::File::create(&output).expect("create the output file");
        let mut command = Command::new(env!("CARGO_BIN_EXE_seckill-rebalancer"));
        for var in REBALANCER_ENV {
            command.env_remove(var);
        }
        let child = command
            .envs(env.iter().copied())
            .args(args)
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("clone the output file"))
            .stderr(file)
            .spawn()
            .expect("start seckill-rebalancer");
        Rebalancer { child, output }
    }

    fn output(&self) -> String {
        fs::read_to_string(&self.output).unwrap_or_default()
    }

    /// Waits until the output says `what`.
    fn wait_for(&self, what: &str) {
        wait_until(
            &format!("the output to say {what:?}"),
            Duration::from_secs(20),
            || self.output().contains(what),
        );
    }

    /// Waits for it to exit by itself.
    fn exit_status(&mut self) -> ExitStatus {
        let mut status = None;
        wait_until(
            "seckill-rebalancer to exit",
            Duration::from_secs(20),
            || {
                status = self.child.try_wait().expect("poll seckill-rebalancer");
                status.is_some()
            },
        );
        status.expect("an exit status")
    }
}

impl Drop for Rebalancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- seckill-rebalancer output ---\n{}", self.output());
        }
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
    // Stopped while both parts are full: stopped after the sale below, it
    // could make a second move from the first e:0 before it went, and the
    // new parts would then balance more than the 100 units counted here.
    rebalancer.take();
    for n in 0..50 {
        let result = con
            .seckill_deduct(&Deduct::new("e:1", format!("u{n}"), 1))
            .unwrap();
        assert!(result.bought());
    }
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

/// `VARIANTS` of `key`: each size with its stock.
fn sizes(con: &mut redis::Connection, key: &str) -> Vec<(String, i64)> {
    con.seckill_variants(key).unwrap().unwrap_or_default()
}

fn owned(sizes: &[(&str, i64)]) -> Vec<(String, i64)> {
    sizes
        .iter()
        .map(|(name, stock)| ((*name).to_owned(), *stock))
        .collect()
}

#[test]
fn a_drop_is_balanced_size_by_size_and_an_open_move_of_a_size_is_finished() {
    let server = Server::start();
    let mut con = server.client();
    let init = |key: &str, sizes: &[&str]| {
        let mut args = vec!["SECKILL.INIT", key, "VARIANTS"];
        let count = (sizes.len() / 2).to_string();
        args.push(&count);
        args.extend_from_slice(sizes);
        args.extend(["LIMIT", "1"]);
        let mut con = server.client();
        ok::<i64>(&mut con, &args);
    };
    init("d:0", &["42", "100", "43", "0"]);
    init("d:1", &["42", "0", "43", "40", "44", "7"]);
    // A mover killed between its TAKE of size 42 and the ADD: the next one
    // finishes that move, of that size, from what the part recorded.
    let taken = con
        .seckill_take_variant("d:0", 1, "rb:gone:1:1", Some("d:1"), "42")
        .unwrap();
    assert_eq!(taken, Some(1));
    let _rebalancer = Rebalancer::start(&server, &["d:0,d:1"]);
    wait_until("every size to be balanced", Duration::from_secs(10), || {
        sizes(&mut con, "d:0") == owned(&[("42", 50), ("43", 20)])
            && sizes(&mut con, "d:1") == owned(&[("42", 50), ("43", 20), ("44", 7)])
    });
    for part in ["d:0", "d:1"] {
        let open = con.seckill_transfers(part).unwrap().unwrap();
        assert!(open.is_empty(), "{part}: {open:?}");
        // Every unit moved is counted out of one part and into the other,
        // size by size.
        for size in ["42", "43"] {
            let info = con.seckill_info_variant(part, size).unwrap().unwrap();
            assert_eq!(
                info.initial + info.added + info.moved_in - info.moved_out - info.sold,
                info.stock,
                "{part} size {size}: {info:?}"
            );
        }
    }
    let moved_in = |con: &mut redis::Connection, size: &str| {
        con.seckill_info_variant("d:1", size)
            .unwrap()
            .unwrap()
            .moved_in
    };
    assert_eq!(moved_in(&mut con, "42"), 50);
    assert_eq!(
        con.seckill_info_variant("d:0", "43")
            .unwrap()
            .unwrap()
            .moved_in,
        20
    );
}

/// An environment variable and its value.
type Variable<'a> = (&'a str, &'a str);

#[test]
fn bad_settings_are_refused_with_exit_status_2() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = "redis://127.0.0.1:1/";
    let long_part = format!("a,{}", "x".repeat(256));
    let sentinel = "127.0.0.1:1";
    let cases: [(&[Variable], &[&str]); 19] = [
        (&[], &["--item", "a,b"]),
        (&[], &["--redis", url, "--item", "a"]),
        (&[], &["--redis", url, "--item", "a,b,a"]),
        (&[], &["--redis", url, "--item", &long_part]),
        (&[], &["--redis", url, "--item", "a,b", "--low", "many"]),
        (&[], &["--redis", url, "--item", "a,b", "--what"]),
        // A URL that does not parse is refused at once, not retried.
        (
            &[],
            &["--redis", "redis://127.0.0.1:notaport/", "--item", "a,b"],
        ),
        // The same mistakes in the environment.
        (
            &[("SECKILL_REDIS_URL", "redis://127.0.0.1:notaport/")],
            &["--item", "a,b"],
        ),
        (&[("SECKILL_ITEMS", "a,b c")], &["--redis", url]),
        (
            &[("SECKILL_LOW", "many")],
            &["--redis", url, "--item", "a,b"],
        ),
        (
            &[("SECKILL_CLUSTER", "maybe")],
            &["--redis", url, "--item", "a,b"],
        ),
        (&[("SECKILL_REDIS_URL", url)], &[]),
        // Two ways to find Redis, or half of the sentinel one.
        (
            &[],
            &[
                "--redis-url",
                url,
                "--sentinel",
                sentinel,
                "--master-name",
                "m",
                "--item",
                "a,b",
            ],
        ),
        (&[], &["--sentinel", sentinel, "--item", "a,b"]),
        (
            &[],
            &["--master-name", "m", "--redis", url, "--item", "a,b"],
        ),
        (
            &[
                ("SECKILL_SENTINELS", "127.0.0.1"),
                ("SECKILL_MASTER_NAME", "m"),
            ],
            &["--item", "a,b"],
        ),
        (
            &[],
            &[
                "--sentinel",
                "127.0.0.1:1,",
                "--master-name",
                "m",
                "--item",
                "a,b",
            ],
        ),
        (
            &[],
            &[
                "--sentinel",
                sentinel,
                "--master-name",
                "m",
                "--cluster",
                "--item",
                "a,b",
            ],
        ),
        (
            &[("SECKILL_REDIS_PASSWORD", "s3cret")],
            &["--redis-url", url, "--item", "a,b"],
        ),
    ];
    for (env, args) in cases {
        let mut rebalancer = Rebalancer::run(dir.path(), env, args);
        let status = rebalancer.exit_status();
        assert_eq!(
            status.code(),
            Some(2),
            "{env:?} {args:?}: {}",
            rebalancer.output()
        );
        assert!(
            rebalancer.output().contains("configuration error"),
            "{env:?} {args:?}: {}",
            rebalancer.output()
        );
    }
}

/// A server whose user `mover` has a password (the default user has none,
/// so that the test itself connects without one).
fn server_with_a_password(password: &str) -> Server {
    Server::start_with(&[
        "--user",
        "mover",
        "on",
        &format!(">{password}"),
        "~*",
        "+@all",
    ])
}

#[test]
fn every_setting_can_come_from_the_environment_alone() {
    const PASSWORD: &str = "rebalancer-env-s3cret";
    let server = server_with_a_password(PASSWORD);
    let mut con = server.client();
    con.seckill_init(&Init::new("env:a:0", 100)).unwrap();
    con.seckill_init(&Init::new("env:a:1", 0)).unwrap();
    // Refilled only with a low watermark of 20 or more (the default is 10).
    con.seckill_init(&Init::new("env:b:0", 100)).unwrap();
    con.seckill_init(&Init::new("env:b:1", 20)).unwrap();
    let url = format!("redis://mover:{PASSWORD}@127.0.0.1:{}/", server.port);
    let rebalancer = Rebalancer::run(
        server.dir(),
        &[
            ("SECKILL_REDIS_URL", &url),
            ("SECKILL_CLUSTER", "0"),
            ("SECKILL_ITEMS", "env:a:0,env:a:1 env:b:0,env:b:1"),
            ("SECKILL_LOW", "30"),
            ("SECKILL_INTERVAL_MS", "20"),
            ("SECKILL_LEASE_MS", "600000"),
            ("SECKILL_NAME", "from-the-environment"),
            ("SECKILL_WAIT_REPLICAS", "0"),
            ("SECKILL_WAIT_TIMEOUT_MS", "5"),
        ],
        &[],
    );
    wait_until("both items to be balanced", Duration::from_secs(20), || {
        stock(&mut con, "env:a:1") == 50 && stock(&mut con, "env:b:1") == 60
    });
    assert_eq!(stock(&mut con, "env:a:0"), 50);
    assert_eq!(stock(&mut con, "env:b:0"), 60);
    // Its lease, under its name, for as long as it was told.
    let lease = "seckill-rebalancer:lease:env:a:0,env:a:1";
    let holder: String = ok(&mut con, &["GET", lease]);
    assert_eq!(holder, "from-the-environment");
    let ttl: i64 = ok(&mut con, &["PTTL", lease]);
    assert!(ttl > 2_000, "a lease of {ttl} ms left");
    rebalancer.wait_for("mover:****@");
    assert!(
        !rebalancer.output().contains(PASSWORD),
        "{}",
        rebalancer.output()
    );
}

#[test]
fn a_flag_overrides_its_environment_variable() {
    let server = Server::start();
    let mut con = server.client();
    con.seckill_init(&Init::new("flag:0", 100)).unwrap();
    con.seckill_init(&Init::new("flag:1", 0)).unwrap();
    let nowhere = format!("redis://127.0.0.1:{}/", free_port());
    let url = server.url();
    let _rebalancer = Rebalancer::run(
        server.dir(),
        &[
            ("SECKILL_REDIS_URL", &nowhere),
            ("SECKILL_ITEMS", "env:0,env:1"),
            ("SECKILL_NAME", "from-the-environment"),
            ("SECKILL_LOW", "0"),
        ],
        &[
            "--redis",
            &url,
            "--item",
            "flag:0,flag:1",
            "--name",
            "from-a-flag",
            "--low",
            "5",
            "--interval-ms",
            "20",
        ],
    );
    wait_until("the move", Duration::from_secs(20), || {
        stock(&mut con, "flag:1") == 50
    });
    let holder: String = ok(&mut con, &["GET", "seckill-rebalancer:lease:flag:0,flag:1"]);
    assert_eq!(holder, "from-a-flag");
    // --item replaces SECKILL_ITEMS: the item from the environment was
    // never looked at (its lease is taken before the other item's moves).
    let leased: i64 = ok(
        &mut con,
        &["EXISTS", "seckill-rebalancer:lease:env:0,env:1"],
    );
    assert_eq!(leased, 0);
}

#[test]
fn no_output_shows_the_redis_password_in_a_normal_run_or_any_failure() {
    const PASSWORD: &str = "rebalancer-s3cret";
    const WRONG: &str = "WRONG-rebalancer-pass";
    let server = server_with_a_password(PASSWORD);
    let mut con = server.client();
    con.seckill_init(&Init::new("pw:0", 100)).unwrap();
    con.seckill_init(&Init::new("pw:1", 0)).unwrap();
    let url = |port: u16, password: &str| format!("redis://mover:{password}@127.0.0.1:{port}/");
    let assert_no_password = |what: &str, rebalancer: &Rebalancer| {
        let output = rebalancer.output();
        for password in [PASSWORD, WRONG] {
            assert!(
                !output.contains(password),
                "{what}: a password is shown:\n{output}"
            );
        }
    };
    let flags = ["--item", "pw:0,pw:1", "--low", "5", "--interval-ms", "20"];

    let normal = Rebalancer::run(
        server.dir(),
        &[("SECKILL_REDIS_URL", &url(server.port, PASSWORD))],
        &flags,
    );
    wait_until("the move", Duration::from_secs(20), || {
        stock(&mut con, "pw:1") == 50
    });
    normal.wait_for("mover:****@");
    assert_no_password("a normal run", &normal);
    drop(normal);

    let wrong = Rebalancer::run(
        server.dir(),
        &[("SECKILL_REDIS_URL", &url(server.port, WRONG))],
        &flags,
    );
    wrong.wait_for("authentication failed");
    assert_no_password("a wrong password", &wrong);

    let mut args = vec!["--redis".to_owned(), url(free_port(), PASSWORD)];
    args.extend(flags.iter().map(|flag| flag.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let down = Rebalancer::run(server.dir(), &[], &args);
    down.wait_for("unavailable, retrying");
    down.wait_for("mover:****@");
    assert_no_password("a server that is down", &down);

    let unparsable = format!("redis://mover:{PASSWORD}@127.0.0.1:notaport/");
    for (env, args) in [
        (vec![("SECKILL_REDIS_URL", unparsable.as_str())], vec![]),
        (vec![], vec!["--redis", unparsable.as_str()]),
    ] {
        let args: Vec<&str> = args.into_iter().chain(flags).collect();
        let mut bad = Rebalancer::run(server.dir(), &env, &args);
        assert_eq!(bad.exit_status().code(), Some(2), "{}", bad.output());
        bad.wait_for("redis://mover:****@127.0.0.1:notaport/");
        assert_no_password("a URL that does not parse", &bad);
    }
}

/// Someone allowed to take from a part (the module checks no right on a
/// TAKE's TO) points a transfer at a key outside the item. The rebalancer,
/// which may write every key, must not finish it on their behalf; and the
/// part still gives what it has left to the rest of its item.
#[test]
fn a_transfer_to_a_key_outside_the_item_is_left_open_and_reported() {
    let server = Server::start_with(&["--user", "app", "on", ">app-pass", "~sku:*", "+@all"]);
    let mut con = server.client();
    con.seckill_init(&Init::new("sku:rb:0", 100)).unwrap();
    con.seckill_init(&Init::new("sku:rb:1", 0)).unwrap();
    con.seckill_init(&Init::new("other:victim", 0)).unwrap();
    let mut app = redis::Client::open(format!("redis://app:app-pass@127.0.0.1:{}/", server.port))
        .and_then(|client| client.get_connection())
        .expect("connect as app");
    let taken = app
        .seckill_take("sku:rb:0", 40, "t1", Some("other:victim"))
        .unwrap();
    assert_eq!(taken, Some(40));
    assert!(
        app.seckill_add_transfer("other:victim", 40, "t1").is_err(),
        "app may not write other:victim"
    );

    let rebalancer = Rebalancer::start(&server, &["sku:rb:0,sku:rb:1"]);
    // The rest of sku:rb:0's stock still moves: half of 60.
    wait_until("the move to sku:rb:1", Duration::from_secs(20), || {
        stock(&mut con, "sku:rb:1") == 30
    });
    assert_eq!(stock(&mut con, "sku:rb:0"), 30);
    // Each round looks at the open transfers before it moves: the one to
    // other:victim was seen, and left alone.
    assert_eq!(stock(&mut con, "other:victim"), 0);
    let open = con.seckill_transfers("sku:rb:0").unwrap().unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0].transfer_id, "t1");
    assert_eq!(open[0].units, 40);
    assert_eq!(open[0].destination.as_deref(), Some("other:victim"));
    rebalancer.wait_for("transfer t1 ");
    let output = rebalancer.output();
    let said: Vec<&str> = output
        .lines()
        .filter(|line| line.contains("transfer t1 "))
        .collect();
    assert_eq!(said.len(), 1, "said once:\n{output}");
    for name in ["sku:rb:0", "other:victim", "left open"] {
        assert!(said[0].contains(name), "{}", said[0]);
    }
}

#[test]
fn help_shows_the_usage_and_exits_0() {
    let dir = tempfile::tempdir().expect("temp dir");
    for flag in ["--help", "-h"] {
        let mut rebalancer = Rebalancer::run(dir.path(), &[], &[flag]);
        assert_eq!(rebalancer.exit_status().code(), Some(0));
        let output = rebalancer.output();
        assert!(output.starts_with("usage: seckill-rebalancer"), "{output}");
        assert!(output.contains("--sentinel"), "{output}");
    }
}

#[test]
fn each_outage_is_logged_when_it_starts_and_when_it_ends() {
    let mut server = Server::start();
    let mut con = server.client();
    for part in ["sku:out:0", "sku:out:1"] {
        con.seckill_init(&Init::new(part, 50)).unwrap();
    }
    let rebalancer = Rebalancer::start(&server, &["sku:out:0,sku:out:1"]);
    rebalancer.wait_for("item(s)");
    for outage in 1..=2 {
        server.stop();
        wait_until("the outage to be logged", Duration::from_secs(20), || {
            rebalancer.output().matches("unavailable").count() == outage
        });
        server.start_again();
        wait_until("its end to be logged", Duration::from_secs(20), || {
            rebalancer.output().matches("back after").count() == outage
        });
    }
    // Each outage once, however many retries it took.
    let output = rebalancer.output();
    assert_eq!(output.matches("unavailable").count(), 2, "{output}");
    assert_eq!(output.matches("back after").count(), 2, "{output}");
}

#[test]
fn given_only_sentinels_it_follows_a_failover_and_refills_parts_on_the_new_master() {
    use seckill_harness::sentinel::{Sentinels, MASTER_NAME};
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    for part in ["sku:sn:0", "sku:sn:1"] {
        con.seckill_init(&Init::new(part, 100)).unwrap();
    }
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "5000"]), 1);
    let sentinels = Sentinels::watch(&master, 1);
    let addresses = sentinels.addresses();
    let rebalancer = Rebalancer::run(
        master.dir(),
        &[
            ("SECKILL_SENTINELS", addresses.as_str()),
            ("SECKILL_MASTER_NAME", MASTER_NAME),
        ],
        &[
            "--item",
            "sku:sn:0,sku:sn:1",
            "--low",
            "10",
            "--interval-ms",
            "20",
        ],
    );
    rebalancer.wait_for(&format!("name 127.0.0.1:{} as the master", master.port));
    // A part drained on the master is refilled there.
    for user in 0..95 {
        let bought = con
            .seckill_deduct(&Deduct::new("sku:sn:0", format!("user:{user}"), 1))
            .unwrap();
        assert!(bought.stock.is_some(), "{bought:?}");
    }
    wait_until("the refill on the master", Duration::from_secs(20), || {
        stock(&mut con, "sku:sn:0") > 10
    });

    // A failover the operator asks for: the master is demoted while the
    // rebalancer holds a connection to it (its writes then meet READONLY).
    let _: redis::Value = redis::cmd("SENTINEL")
        .arg("FAILOVER")
        .arg(MASTER_NAME)
        .query(&mut sentinels.nodes[0].client())
        .expect("SENTINEL FAILOVER");
    sentinels.wait_for_master(replica.port);
    let mut promoted = replica.client();
    wait_until(
        "the replica to be promoted",
        Duration::from_secs(30),
        || {
            seckill_harness::server_info(&mut promoted, "replication", "role").as_deref()
                == Some("master")
        },
    );
    rebalancer.wait_for(&format!("name 127.0.0.1:{} as the master", replica.port));
    // Drained on the new master, the part is refilled there, by the same
    // process.
    let left = stock(&mut promoted, "sku:sn:0");
    for user in 0..left {
        let user = format!("new:{user}");
        let _ = promoted
            .seckill_deduct(&Deduct::new("sku:sn:0", user, 1))
            .unwrap();
    }
    wait_until(
        "the refill on the new master",
        Duration::from_secs(30),
        || stock(&mut promoted, "sku:sn:0") > 10,
    );
    // Once no move is under way, every unit not sold is in a part.
    let sold = 95 + left;
    wait_until(
        "no unit lost or made in the moves",
        Duration::from_secs(20),
        || stock(&mut promoted, "sku:sn:0") + stock(&mut promoted, "sku:sn:1") == 200 - sold,
    );
    let mut rebalancer = rebalancer;
    assert!(
        rebalancer.child.try_wait().unwrap().is_none(),
        "never restarted"
    );
}

#[test]
fn a_master_the_sentinels_no_longer_name_is_left_even_while_it_answers() {
    use seckill_harness::sentinel::{Sentinels, MASTER_NAME};
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let mut con = master.client();
    for part in ["sku:cut:0", "sku:cut:1"] {
        con.seckill_init(&Init::new(part, 100)).unwrap();
    }
    assert_eq!(ok::<i64>(&mut con, &["WAIT", "1", "5000"]), 1);
    let sentinels = Sentinels::watch(&master, 1);
    let addresses = sentinels.addresses();
    let rebalancer = Rebalancer::run(
        master.dir(),
        &[
            ("SECKILL_SENTINELS", addresses.as_str()),
            ("SECKILL_MASTER_NAME", MASTER_NAME),
        ],
        &[
            "--item",
            "sku:cut:0,sku:cut:1",
            "--low",
            "10",
            "--interval-ms",
            "20",
        ],
    );
    rebalancer.wait_for(&format!("name 127.0.0.1:{} as the master", master.port));
    // The sentinels stop getting valid answers from the master, as across a
    // partition, and promote the replica; the rebalancer's connection to
    // the old master still works.
    ok::<String>(&mut con, &["ACL", "SETUSER", "default", "-ping"]);
    sentinels.wait_for_master(replica.port);
    let mut promoted = replica.client();
    wait_until(
        "the replica to be promoted",
        Duration::from_secs(30),
        || {
            seckill_harness::server_info(&mut promoted, "replication", "role").as_deref()
                == Some("master")
        },
    );
    // Drained on the new master, the part is refilled there.
    for user in 0..95 {
        let _ = promoted
            .seckill_deduct(&Deduct::new("sku:cut:0", format!("new:{user}"), 1))
            .unwrap();
    }
    wait_until(
        "the refill on the new master",
        Duration::from_secs(30),
        || stock(&mut promoted, "sku:cut:0") > 10,
    );
    rebalancer.wait_for(&format!("name 127.0.0.1:{} as the master", replica.port));
}
