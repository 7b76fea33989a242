//! Redis Sentinel for failover tests: sentinels on free loopback ports,
//! configured from the repository's `sentinel.conf.example`, watching a
//! test's master, killed when dropped.
//!
//! `SECKILL_SENTINEL` names the binary (default `redis-sentinel`, from
//! Debian's package of that name).

use crate::{free_port, wait_until, Server};
use redis::Connection;
use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tempfile::TempDir;

/// The name the example configuration gives the master.
pub const MASTER_NAME: &str = "seckill";

/// How long a sentinel waits before calling a silent master down in
/// tests: shorter than the example's 5 s, so a failover takes about 2 s.
const DOWN_AFTER_MS: u64 = 1_000;

/// The example configuration with a test's ports, directory and a short
/// down-after period; every other line as the example has it.
fn configuration(port: u16, master_port: u16, dir: &Path) -> String {
    let example = include_str!("../../sentinel.conf.example");
    let mut lines: Vec<String> = example
        .lines()
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["port", _] => format!("port {port}"),
                ["sentinel", "monitor", name, _host, _port, quorum] => {
                    format!("sentinel monitor {name} 127.0.0.1 {master_port} {quorum}")
                }
                ["sentinel", "down-after-milliseconds", name, _] => {
                    format!("sentinel down-after-milliseconds {name} {DOWN_AFTER_MS}")
                }
                // A failover that stalls is retried after this long.
                ["sentinel", "failover-timeout", name, _] => {
                    format!("sentinel failover-timeout {name} 10000")
                }
                _ => line.to_owned(),
            }
        })
        .collect();
    lines.push(format!("dir {}", dir.display()));
    lines.push(format!("logfile {}", dir.join("sentinel.log").display()));
    lines.join("\n") + "\n"
}

pub struct Sentinel {
    child: Option<Child>,
    pub port: u16,
    dir: TempDir,
}

impl Sentinel {
    /// A sentinel watching the master on `master_port`, once it answers.
    fn start(master_port: u16) -> Sentinel {
        let dir = tempfile::Builder::new()
            .prefix("seckill-sentinel-")
            .tempdir()
            .expect("cannot create a temp dir");
        let port = free_port();
        let config = dir.path().join("sentinel.conf");
        fs::write(&config, configuration(port, master_port, dir.path()))
            .expect("cannot write sentinel.conf");
        let binary = std::env::var("SECKILL_SENTINEL").unwrap_or_else(|_| "redis-sentinel".into());
        let child = Command::new(&binary)
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {binary} (make deps installs it): {err}"));
        let sentinel = Sentinel {
            child: Some(child),
            port,
            dir,
        };
        wait_until("a sentinel to answer", Duration::from_secs(20), || {
            sentinel.try_client().is_some()
        });
        sentinel
    }

    fn try_client(&self) -> Option<Connection> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port)).ok()?;
        let mut con = client
            .get_connection_with_timeout(Duration::from_millis(200))
            .ok()?;
        redis::cmd("PING").query::<String>(&mut con).ok()?;
        Some(con)
    }

    pub fn client(&self) -> Connection {
        self.try_client().expect("cannot connect to a sentinel")
    }

    /// SIGSTOP: it keeps its connections open and answers nothing, as a
    /// hung host would.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("a running sentinel").id();
        let sent = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill {signal} {pid}");
    }

    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("sentinel.log")).unwrap_or_default()
    }

    /// The master's port as this sentinel sees it now.
    pub fn master_port(&self) -> Option<u16> {
        let address: Option<(String, String)> = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(MASTER_NAME)
            .query(&mut self.try_client()?)
            .ok()?;
        address?.1.parse().ok()
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // A paused one would take SIGKILL all the same.
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!("--- sentinel log (port {}) ---\n{}", self.port, self.log());
        }
    }
}

/// Three sentinels (quorum 2, as in the example) watching one master.
pub struct Sentinels {
    pub nodes: Vec<Sentinel>,
}

impl Sentinels {
    /// Three sentinels watching `master`, returned once each knows the
    /// others and the master's `replicas` replicas, so that a failover
    /// can be voted and has a replica to promote.
    pub fn watch(master: &Server, replicas: usize) -> Sentinels {
        let nodes: Vec<Sentinel> = (0..3).map(|_| Sentinel::start(master.port)).collect();
        for node in &nodes {
            let mut con = node.client();
            wait_until(
                "the sentinels to find each other and the replicas",
                Duration::from_secs(30),
                || {
                    let master: Vec<String> = redis::cmd("SENTINEL")
                        .arg("MASTER")
                        .arg(MASTER_NAME)
                        .query(&mut con)
                        .unwrap_or_default();
                    let field = |name: &str| {
                        master
                            .iter()
                            .position(|field| field == name)
                            .and_then(|at| master.get(at + 1))
                            .and_then(|value| value.parse::<usize>().ok())
                            .unwrap_or(0)
                    };
                    field("num-other-sentinels") >= 2 && field("num-slaves") >= replicas
                },
            );
        }
        Sentinels { nodes }
    }

    /// `HOST:PORT,HOST:PORT,...`, as the programs take them.
    pub fn addresses(&self) -> String {
        self.nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Waits until every sentinel names `port` as the master.
    pub fn wait_for_master(&self, port: u16) {
        wait_until(
            "the sentinels to name the new master",
            Duration::from_secs(60),
            || {
                self.nodes
                    .iter()
                    .all(|node| node.master_port() == Some(port))
            },
        );
    }
}
