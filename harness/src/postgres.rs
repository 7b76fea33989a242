//! A real, throw-away PostgreSQL cluster in a temp dir on a free loopback
//! port, for the order consumer's tests and the benchmark's SQL baseline.

use std::fs;
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

/// The output of a tool that must succeed.
pub fn checked(what: &str, output: std::io::Result<Output>) -> String {
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
        let port = crate::free_port();
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

    pub fn port(&self) -> u16 {
        self.port
    }

    /// A libpq connection string for the `bench` superuser's database.
    pub fn url(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=bench dbname=postgres",
            self.port
        )
    }

    /// The cluster's own directory, writable by the server.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Makes `path` writable by the server, which runs as `postgres` when
    /// we are root.
    pub fn hand_over(&self, path: &Path) {
        if self.as_postgres {
            checked(
                "chown",
                Command::new("chown")
                    .args(["-R", "postgres:postgres"])
                    .arg(path)
                    .output(),
            );
        }
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

    /// A PostgreSQL client program (psql, pgbench) aimed at this cluster.
    pub fn client_tool(&self, tool: &str) -> Command {
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

impl Postgres {
    /// The server options `start` launches the cluster with (port, loopback
    /// only, socket directory, connection limit).
    fn server_options(&self) -> String {
        format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} \
             -c max_connections=200",
            self.port,
            self.dir.path().display()
        )
    }

    /// Stops the cluster the way an operator's fast shutdown does: open
    /// sessions are ended, their transactions rolled back, and the call
    /// returns once the server is down. `start_again` brings it back.
    pub fn stop(&mut self) {
        checked(
            "pg_ctl stop",
            self.server_tool("pg_ctl")
                .args(["-w", "-m", "fast", "-D"])
                .arg(self.data_dir())
                .arg("stop")
                .output(),
        );
    }

    /// Starts the cluster stopped by `stop` again, on the same port and
    /// data directory, and returns once it accepts connections.
    pub fn start_again(&mut self) {
        let options = self.server_options();
        checked(
            "pg_ctl start",
            self.server_tool("pg_ctl")
                .args(["-w", "-D"])
                .arg(self.data_dir())
                .arg("-l")
                .arg(self.dir.path().join("server.log"))
                .args(["-o", &options, "start"])
                .output(),
        );
    }
}
