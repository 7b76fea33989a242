//! The SQL baseline from the seeds: one hot row updated in a real, throw-away
//! PostgreSQL cluster, driven by pgbench.

use crate::load::Throughput;
use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tempfile::TempDir;

pub struct Postgres {
    bin: PathBuf,
    dir: TempDir,
    port: u16,
    /// initdb refuses to run as root; then every server-side tool runs as
    /// the `postgres` system user that Debian's package creates.
    as_postgres: bool,
}

fn binaries() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("pgbench").exists())
        .collect();
    versions.sort();
    versions.pop()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
        .unwrap_or(false)
}

fn checked(what: &str, output: std::io::Result<Output>) -> String {
    let output = output.unwrap_or_else(|err| panic!("cannot run {what}: {err}"));
    if !output.status.success() {
        panic!(
            "{what} failed:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    String::from_utf8_lossy(&output.stdout).into_owned()
}

impl Postgres {
    /// Starts a cluster in a temp dir on a free loopback port, or `None`
    /// when PostgreSQL is not installed.
    pub fn start() -> Option<Postgres> {
        let bin = binaries()?;
        let dir = tempfile::Builder::new()
            .prefix("seckill-bench-pg-")
            .tempdir()
            .expect("temp dir");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|addr| addr.port())
            .expect("free port");
        let postgres = Postgres {
            bin,
            dir,
            port,
            as_postgres: is_root(),
        };
        if postgres.as_postgres {
            checked(
                "chown",
                Command::new("chown")
                    .args(["-R", "postgres:postgres"])
                    .arg(postgres.dir.path())
                    .output(),
            );
        }
        let data = postgres.data_dir();
        checked(
            "initdb",
            postgres
                .server_tool("initdb")
                .args(["-A", "trust", "-U", "bench", "--no-sync", "-D"])
                .arg(&data)
                .output(),
        );
        // Debian's defaults otherwise: fsync and synchronous commits on.
        let options = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} \
             -c max_connections=200",
            postgres.dir.path().display()
        );
        checked(
            "pg_ctl start",
            postgres
                .server_tool("pg_ctl")
                .args(["-w", "-D"])
                .arg(&data)
                .arg("-l")
                .arg(postgres.dir.path().join("server.log"))
                .args(["-o", &options, "start"])
                .output(),
        );
        Some(postgres)
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn server_tool(&self, tool: &str) -> Command {
        let path = self.bin.join(tool);
        if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(path);
            command.current_dir("/");
            command
        } else {
            Command::new(path)
        }
    }

    fn client_tool(&self, tool: &str) -> Command {
        let mut command = self.server_tool(tool);
        command.args([
            "-h",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
            "-U",
            "bench",
        ]);
        command
    }

    /// Durable commits (the default) wait for the WAL to reach the disk;
    /// without them PostgreSQL runs at memory speed, like Redis here.
    pub fn set_durable_commits(&self, durable: bool) {
        let setting = if durable { "on" } else { "off" };
        self.sql(&format!("ALTER SYSTEM SET synchronous_commit = {setting}"));
        self.sql("SELECT pg_reload_conf()");
    }

    pub fn sql(&self, sql: &str) -> String {
        checked(
            "psql",
            self.client_tool("psql")
                .args(["-X", "-q", "-t", "-A", "-d", "postgres", "-c", sql])
                .output(),
        )
    }

    /// Runs `script` from `clients` connections: for `seconds`, or
    /// `transactions` per client when given. Latencies come from pgbench's
    /// per-transaction log.
    pub fn pgbench(
        &self,
        script: &str,
        clients: usize,
        seconds: u64,
        transactions: Option<usize>,
    ) -> Throughput {
        let run_dir = self.dir.path().join(format!("run-{}", std::process::id()));
        let _ = fs::remove_dir_all(&run_dir);
        fs::create_dir_all(&run_dir).expect("run dir");
        let script_path = run_dir.join("script.sql");
        fs::write(&script_path, script).expect("script");
        if self.as_postgres {
            checked(
                "chown",
                Command::new("chown")
                    .args(["-R", "postgres:postgres"])
                    .arg(&run_dir)
                    .output(),
            );
        }
        let mut command = self.client_tool("pgbench");
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

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self
            .server_tool("pg_ctl")
            .args(["-m", "immediate", "-D"])
            .arg(self.data_dir())
            .arg("stop")
            .output();
    }
}
