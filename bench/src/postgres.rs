//! The articles' SQL baseline: one hot row updated in a real, throw-away
//! PostgreSQL cluster, driven by pgbench.

use crate::load::Throughput;
use seckill_harness::postgres::{checked, Postgres};
use std::fs;
use std::path::Path;

/// Runs `script` from `clients` connections: for `seconds`, or
/// `transactions` per client when given. Latencies come from pgbench's
/// per-transaction log.
pub fn pgbench(
    pg: &Postgres,
    script: &str,
    clients: usize,
    seconds: u64,
    transactions: Option<usize>,
) -> Throughput {
    let run_dir = pg.dir().join(format!("run-{}", std::process::id()));
    let _ = fs::remove_dir_all(&run_dir);
    fs::create_dir_all(&run_dir).expect("run dir");
    let script_path = run_dir.join("script.sql");
    fs::write(&script_path, script).expect("script");
    pg.hand_over(&run_dir);
    let mut command = pg.client_tool("pgbench");
    command
        .args(["-n", "-c", &clients.to_string(), "-j", "2", "-l"])
        .arg(format!("--log-prefix={}", run_dir.join("log").display()))
        .arg("-f")
        .arg(&script_path);
    match transactions {
        Some(count) => command.args(["-t", &count.to_string()]),
        None => command.args(["-T", &seconds.to_string()]),
    };
    let out = checked("pgbench", command.arg("postgres").output());
    let tps = out
        .lines()
        .find(|line| line.starts_with("tps = "))
        .and_then(|line| line.split_whitespace().nth(2))
        .and_then(|tps| tps.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no tps in pgbench output:\n{out}"));
    let mut latencies_us = transaction_latencies(&run_dir);
    latencies_us.sort_unstable();
    let quantile = |q: f64| {
        latencies_us
            .get(((latencies_us.len() as f64 - 1.0) * q).round() as usize)
            .map_or(f64::NAN, |us| *us as f64 / 1000.0)
    };
    Throughput {
        ops_per_sec: tps,
        p50_ms: quantile(0.5),
        p99_ms: quantile(0.99),
        max_ms: quantile(1.0),
    }
}

/// The third column of pgbench's per-transaction log is its latency in µs.
fn transaction_latencies(dir: &Path) -> Vec<u64> {
    fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|entry| entry.file_name().to_string_lossy().starts_with("log"))
                .filter_map(|entry| fs::read_to_string(entry.path()).ok())
                .flat_map(|text| {
                    text.lines()
                        .filter_map(|line| line.split_whitespace().nth(2)?.parse().ok())
                        .collect::<Vec<u64>>()
                })
                .collect()
        })
        .unwrap_or_default()
}
