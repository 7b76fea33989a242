//! What an operator sees of seckill-orders: its Prometheus metrics, and
//! the systemd unit it ships with.

use seckill_harness::postgres::Postgres;
use seckill_harness::{free_port, ok, wait_until, Server};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

const ITEM: &str = "{sku:metrics}";
const STREAM: &str = "{sku:metrics}:orders";

/// The body of `GET /metrics`, or an empty string while it cannot be read.
fn scrape(port: u16) -> String {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let request = format!("GET /metrics HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return String::new();
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default()
}

/// The value of the sample `name` (with its labels, if any) in `text`.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
}

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
