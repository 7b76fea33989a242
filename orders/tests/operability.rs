//! What an operator sees of seckill-orders: its Prometheus metrics, the
//! systemd unit it ships with, and never a password, whatever goes wrong.

use seckill_harness::metrics::{sample, scrape};
use seckill_harness::postgres::Postgres;
use seckill_harness::{free_port, ok, wait_until, Server};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

const ITEM: &str = "{sku:metrics}";
const STREAM: &str = "{sku:metrics}:orders";

#[test]
fn metrics_report_rows_written_and_nothing_pending() {
    let Some(pg) = Postgres::start() else {
        eprintln!("PostgreSQL is not installed: skipped (make deps installs it)");
        return;
    };
    let server = Server::start();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", ITEM, "100", "STREAM", STREAM]);
    for n in 0..40 {
        let id = format!("order:{n}");
        ok::<i64>(
            &mut con,
            &["SECKILL.DEDUCT", ITEM, &format!("u{n}"), "1", "ID", &id],
        );
    }
    let port = free_port();
    let mut consumer = Command::new(env!("CARGO_BIN_EXE_seckill-orders"))
        .args(["--redis-url", &server.url()])
        .args(["--postgres-url", &pg.url()])
        .args(["--stream", STREAM])
        .args(["--metrics-addr", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start seckill-orders");
    let stream_label = format!("{{stream=\"{STREAM}\"}}");
    wait_until(
        "the metrics to show every row",
        Duration::from_secs(30),
        || {
            let text = scrape(port);
            sample(&text, "seckill_orders_rows_written_total") == Some(40.0)
                && sample(
                    &text,
                    &format!("seckill_orders_pending_entries{stream_label}"),
                ) == Some(0.0)
                && sample(&text, &format!("seckill_orders_lag_entries{stream_label}")) == Some(0.0)
        },
    );
    let text = scrape(port);
    assert_eq!(
        sample(&text, "seckill_orders_entries_read_total"),
        Some(40.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "seckill_orders_dead_lettered_total"),
        Some(0.0),
        "{text}"
    );
    assert!(
        text.contains("# TYPE seckill_orders_rows_written_total counter"),
        "{text}"
    );
    let _ = consumer.kill();
    let _ = consumer.wait();
}

#[test]
fn a_metrics_address_that_cannot_be_bound_is_a_configuration_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let addr = taken.local_addr().expect("its address").to_string();
    let status = Command::new(env!("CARGO_BIN_EXE_seckill-orders"))
        .args(["--postgres-url", "host=127.0.0.1"])
        .args(["--stream", STREAM])
        .args(["--metrics-addr", &addr])
        .stderr(Stdio::null())
        .status()
        .expect("run seckill-orders");
    assert_eq!(status.code(), Some(2));
}

/// The unit file in the repository, as systemd reads it: checked with
/// `systemd-analyze verify` where the machine has it.
#[test]
fn the_systemd_unit_verifies() {
    let unit = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("seckill-orders.service");
    let text = std::fs::read_to_string(&unit).expect("orders/seckill-orders.service");
    for required in ["[Unit]", "[Service]", "[Install]", "ExecStart=", "Restart="] {
        assert!(text.contains(required), "the unit has no {required}");
    }
    // The URLs, passwords and all, come from a file only root reads, not
    // from the command line, which every user of the host can read.
    assert!(text.contains("\nEnvironmentFile="), "{text}");
    let exec_start = text
        .lines()
        .find(|line| line.starts_with("ExecStart="))
        .unwrap_or_default();
    assert!(!exec_start.contains("-url"), "{exec_start}");
    let analyze = Command::new("systemd-analyze")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !analyze.is_ok_and(|status| status.success()) {
        eprintln!("systemd-analyze is not installed: only the unit's sections were checked");
        return;
    }
    // verify wants the binary the unit names to exist: point a copy of
    // the unit at the one cargo built.
    let dir = tempfile::tempdir().expect("temp dir");
    let binary = env!("CARGO_BIN_EXE_seckill-orders");
    let local = text
        .lines()
        .map(|line| match line.strip_prefix("ExecStart=") {
            Some(command) => {
                let args = command.split_once(' ').map_or("", |(_, args)| args);
                format!("ExecStart={binary} {args}")
            }
            None => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let copy = dir.path().join("seckill-orders.service");
    std::fs::write(&copy, local).expect("write the unit");
    let output = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&copy)
        .output()
        .expect("run systemd-analyze");
    let complaints = String::from_utf8_lossy(&output.stderr);
    // Outside a booted systemd (a container, CI) verify also reports that
    // it cannot reach the system manager; only complaints about this unit
    // count.
    let about_unit: Vec<&str> = complaints
        .lines()
        .filter(|line| line.contains("seckill-orders.service"))
        .collect();
    assert!(about_unit.is_empty(), "{complaints}");
}

// ---------------------------------------------------------------------------
// No password in any output.

/// The Redis user's password, a wrong one, and PostgreSQL's: none of them
/// may appear in anything the consumer prints or serves.
const REDIS_PASSWORD: &str = "orders-redis-s3cret";
const WRONG_PASSWORD: &str = "WRONG-redis-pass";
const POSTGRES_PASSWORD: &str = "orders-pg-s3cret";

/// The consumer's own environment variables: cleared, so that only what a
/// test sets counts.
const CONSUMER_ENV: [&str; 17] = [
    "SECKILL_SENTINELS",
    "SECKILL_MASTER_NAME",
    "SECKILL_SENTINEL_USERNAME",
    "SECKILL_SENTINEL_PASSWORD",
    "SECKILL_REDIS_USERNAME",
    "SECKILL_REDIS_PASSWORD",
    "SECKILL_WAIT_REPLICAS",
    "SECKILL_WAIT_TIMEOUT_MS",
    "SECKILL_REDIS_URL",
    "SECKILL_POSTGRES_URL",
    "SECKILL_STREAMS",
    "SECKILL_GROUP",
    "SECKILL_CONSUMER",
    "SECKILL_CLAIM_IDLE_MS",
    "SECKILL_CLAIM_PAGE",
    "SECKILL_MAX_DELIVERIES",
    "SECKILL_METRICS_ADDR",
];

/// A server whose user `orders` has a password (the default user has
/// none, so that the test itself connects without one).
fn server_with_a_password() -> Server {
    Server::start_with(&[
        "--user",
        "orders",
        "on",
        &format!(">{REDIS_PASSWORD}"),
        "~*",
        "+@all",
    ])
}

fn redis_url(port: u16, password: &str) -> String {
    format!("redis://orders:{password}@127.0.0.1:{port}/")
}

fn postgres_url(port: u16) -> String {
    format!("postgres://bench:{POSTGRES_PASSWORD}@127.0.0.1:{port}/postgres")
}

/// One run of the consumer, its stdout and stderr in one file, serving its
/// metrics on a port of its own; killed when dropped.
struct Run {
    child: Child,
    output: PathBuf,
    metrics_port: u16,
}

impl Run {
    /// Starts the consumer with `env` set (and no other variable of its
    /// own) and `args`.
    fn start(dir: &Path, name: &str, env: &[(&str, &str)], args: &[&str]) -> Run {
        let output = dir.join(format!("{name}.out"));
        let file = fs::File::create(&output).expect("create the output file");
        let metrics_port = free_port();
        let mut command = Command::new(env!("CARGO_BIN_EXE_seckill-orders"));
        for var in CONSUMER_ENV {
            command.env_remove(var);
        }
        let child = command
            .envs(env.iter().copied())
            .args(["--stream", STREAM, "--consumer", name])
            .args(["--metrics-addr", &format!("127.0.0.1:{metrics_port}")])
            .args(args)
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("clone the output file"))
            .stderr(file)
            .spawn()
            .expect("start seckill-orders");
        Run {
            child,
            output,
            metrics_port,
        }
    }

    fn output(&self) -> String {
        fs::read_to_string(&self.output).unwrap_or_default()
    }

    /// Waits until the output says `what`.
    fn wait_for(&self, what: &str) {
        wait_until(
            &format!("the output to say {what:?}"),
            Duration::from_secs(30),
            || self.output().contains(what),
        );
    }

    /// Waits for the consumer to exit by itself.
    fn exit_status(&mut self) -> ExitStatus {
        let mut status = None;
        wait_until("seckill-orders to exit", Duration::from_secs(30), || {
            status = self.child.try_wait().expect("poll seckill-orders");
            status.is_some()
        });
        status.expect("an exit status")
    }

    /// Everything it printed, and its metrics if it serves them, with no
    /// password in any.
    fn assert_shows_no_password(&self) {
        let shown = format!("{}\n{}", self.output(), scrape(self.metrics_port));
        for password in [REDIS_PASSWORD, WRONG_PASSWORD, POSTGRES_PASSWORD] {
            assert!(!shown.contains(password), "a password is shown:\n{shown}");
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- seckill-orders output ---\n{}", self.output());
        }
    }
}

#[test]
fn a_run_that_writes_orders_shows_no_password_in_its_output_or_metrics() {
    let Some(pg) = Postgres::start() else {
        eprintln!("PostgreSQL is not installed: skipped (make deps installs it)");
        return;
    };
    let server = server_with_a_password();
    let mut con = server.client();
    ok::<i64>(&mut con, &["SECKILL.INIT", ITEM, "100", "STREAM", STREAM]);
    for n in 0..10 {
        let id = format!("order:{n}");
        ok::<i64>(
            &mut con,
            &["SECKILL.DEDUCT", ITEM, &format!("u{n}"), "1", "ID", &id],
        );
    }
    // The PostgreSQL cluster trusts loopback connections: the password in
    // its URL is never checked, only carried.
    let run = Run::start(
        server.dir(),
        "normal",
        &[("SECKILL_POSTGRES_URL", &postgres_url(pg.port()))],
        &["--redis-url", &redis_url(server.port, REDIS_PASSWORD)],
    );
    wait_until("every row to be written", Duration::from_secs(30), || {
        sample(
            &scrape(run.metrics_port),
            "seckill_orders_rows_written_total",
        ) == Some(10.0)
    });
    // It says which server it reads, without the password.
    run.wait_for(&format!(
        "on redis://orders:****@127.0.0.1:{}/",
        server.port
    ));
    run.assert_shows_no_password();
}

#[test]
fn a_wrong_password_or_a_redis_that_is_down_is_reported_without_the_password() {
    let server = server_with_a_password();
    // PostgreSQL is not reached: Redis comes first.
    let nowhere = postgres_url(free_port());
    let wrong = Run::start(
        server.dir(),
        "wrong",
        &[
            ("SECKILL_REDIS_URL", &redis_url(server.port, WRONG_PASSWORD)),
            ("SECKILL_POSTGRES_URL", &nowhere),
        ],
        &[],
    );
    wrong.wait_for("authentication failed");
    wrong.wait_for("orders:****@");
    wrong.assert_shows_no_password();

    let down = Run::start(
        server.dir(),
        "down",
        &[],
        &[
            "--redis-url",
            &redis_url(free_port(), REDIS_PASSWORD),
            "--postgres-url",
            &nowhere,
        ],
    );
    down.wait_for("retrying until it is back");
    down.wait_for("orders:****@");
    down.assert_shows_no_password();
    // One prefix per line: not "Redis: Redis at ...".
    for run in [&wrong, &down] {
        assert!(!run.output().contains("Redis: Redis"), "{}", run.output());
    }
}

/// An environment variable and its value.
type Variable<'a> = (&'a str, &'a str);

#[test]
fn a_url_that_does_not_parse_is_refused_without_showing_its_password() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bad_redis = &format!("redis://orders:{REDIS_PASSWORD}@127.0.0.1:notaport/")[..];
    // A password its writer did not percent-encode: the URL does not parse,
    // and it is masked whole all the same.
    let unencoded = &format!("redis://:{REDIS_PASSWORD}/#x@127.0.0.1:6379/")[..];
    let bad_postgres = &format!("postgres://bench:{POSTGRES_PASSWORD}@127.0.0.1:notaport/db")[..];
    let good_postgres = &postgres_url(free_port())[..];
    let conninfo = &format!("host=127.0.0.1 password={POSTGRES_PASSWORD} port=x")[..];
    // Each: a name, the environment, the flags, what the error says.
    let cases: [(&str, Vec<Variable>, Vec<&str>, &str); 5] = [
        (
            "redis-flag",
            vec![],
            vec!["--redis-url", bad_redis, "--postgres-url", good_postgres],
            "--redis-url redis://orders:****@127.0.0.1:notaport/",
        ),
        (
            "redis-env",
            vec![
                ("SECKILL_REDIS_URL", bad_redis),
                ("SECKILL_POSTGRES_URL", good_postgres),
            ],
            vec![],
            "SECKILL_REDIS_URL redis://orders:****@127.0.0.1:notaport/",
        ),
        (
            "redis-unencoded",
            vec![("SECKILL_REDIS_URL", unencoded)],
            vec!["--postgres-url", good_postgres],
            "SECKILL_REDIS_URL redis://:****@127.0.0.1:6379/",
        ),
        (
            "postgres-flag",
            vec![],
            vec!["--postgres-url", bad_postgres],
            "--postgres-url postgres://bench:****@127.0.0.1:notaport/db",
        ),
        (
            "postgres-conninfo",
            vec![],
            vec!["--postgres-url", conninfo],
            "host=127.0.0.1 password=**** port=x",
        ),
    ];
    for (name, env, args, said) in cases {
        let mut run = Run::start(dir.path(), name, &env, &args);
        assert_eq!(
            run.exit_status().code(),
            Some(2),
            "{name}: {}",
            run.output()
        );
        assert!(run.output().contains(said), "{name}: {}", run.output());
        run.assert_shows_no_password();
    }
}

#[test]
fn stream_flags_replace_the_streams_of_the_environment() {
    let dir = tempfile::tempdir().expect("temp dir");
    let nowhere = format!("redis://127.0.0.1:{}/", free_port());
    let run = Run::start(
        dir.path(),
        "streams",
        &[
            ("SECKILL_STREAMS", "from-the-environment"),
            ("SECKILL_REDIS_URL", &nowhere),
            ("SECKILL_POSTGRES_URL", "host=127.0.0.1 port=1"),
        ],
        &[],
    );
    // `Run` gives it `--stream` STREAM.
    run.wait_for(&format!("consuming {STREAM} on"));
    assert!(
        !run.output().contains("from-the-environment"),
        "{}",
        run.output()
    );
}

#[test]
fn sentinel_settings_that_do_not_fit_together_are_a_configuration_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let postgres = &postgres_url(free_port())[..];
    let url = "redis://127.0.0.1:1/";
    let cases: [(&str, Vec<Variable>, Vec<&str>, &str); 5] = [
        (
            "url-and-sentinels",
            vec![("SECKILL_SENTINELS", "127.0.0.1:1")],
            vec!["--redis-url", url, "--master-name", "m"],
            "--redis-url and SECKILL_SENTINELS",
        ),
        (
            "no-master-name",
            vec![],
            vec!["--sentinel", "127.0.0.1:1"],
            "--master-name",
        ),
        (
            "no-sentinels",
            vec![("SECKILL_MASTER_NAME", "m")],
            vec![],
            "no sentinel",
        ),
        (
            "bad-list",
            vec![],
            vec!["--sentinel", "127.0.0.1:1,localhost", "--master-name", "m"],
            "has no port",
        ),
        (
            "master-password-with-a-url",
            vec![("SECKILL_REDIS_PASSWORD", REDIS_PASSWORD)],
            vec!["--redis-url", url],
            "put them in the URL",
        ),
    ];
    for (name, env, args, said) in cases {
        let mut args = args;
        args.extend(["--postgres-url", postgres]);
        let mut run = Run::start(dir.path(), name, &env, &args);
        assert_eq!(
            run.exit_status().code(),
            Some(2),
            "{name}: {}",
            run.output()
        );
        assert!(run.output().contains(said), "{name}: {}", run.output());
        run.assert_shows_no_password();
    }
}

#[test]
fn sentinels_that_are_all_down_are_an_outage_logged_once_and_measured() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pg = Postgres::start().expect("PostgreSQL is not installed: run `make deps`");
    let sentinels = format!("127.0.0.1:{},127.0.0.1:{}", free_port(), free_port());
    let run = Run::start(
        dir.path(),
        "no-sentinel",
        &[
            ("SECKILL_SENTINELS", &sentinels),
            ("SECKILL_MASTER_NAME", "seckill"),
            ("SECKILL_SENTINEL_PASSWORD", REDIS_PASSWORD),
            ("SECKILL_REDIS_PASSWORD", WRONG_PASSWORD),
        ],
        &["--postgres-url", &pg.url()],
    );
    run.wait_for("no master seckill from the sentinels");
    wait_until("the outage to be measured", Duration::from_secs(30), || {
        sample(
            &scrape(run.metrics_port),
            "seckill_orders_outage_seconds{link=\"redis\"}",
        )
        .is_some_and(|seconds| seconds >= 1.0)
    });
    assert_eq!(
        run.output().matches("no master seckill").count(),
        1,
        "logged once: {}",
        run.output()
    );
    run.assert_shows_no_password();
}
