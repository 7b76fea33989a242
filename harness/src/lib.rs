//! Test harness: a real redis-server with the freshly built module, on a free
//! loopback port, in its own temporary directory, killed when dropped.
//!
//! `SECKILL_SERVER` names the server binary (default `redis-server`) and
//! `SECKILL_MODULE` the module (default `target/release/libseckill.so`),
//! so the same suite runs against other servers and builds.

pub mod cluster;
pub mod contract;
pub mod dump;
pub mod metrics;
pub mod postgres;
pub mod sentinel;

use redis::{Connection, Value};
use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};
use tempfile::TempDir;

const START_DEADLINE: Duration = Duration::from_secs(20);

/// The server binary: `SECKILL_SERVER`, or `redis-server`.
pub fn server_binary() -> String {
    std::env::var("SECKILL_SERVER").unwrap_or_else(|_| "redis-server".to_owned())
}

/// The module to load: `SECKILL_MODULE`, or the release build.
pub fn module_path() -> PathBuf {
    let path = std::env::var_os("SECKILL_MODULE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/libseckill.so")
        });
    assert!(
        path.exists(),
        "module not found at {}: run `make test`, or `cargo build --release` first",
        path.display()
    );
    path
}

/// Ports handed out below the kernel's ephemeral range (32768 and up), so
/// that the tests' own client connections never take a server's port.
const PORTS: std::ops::Range<u32> = 20_000..32_000;

/// A loopback port nothing listens on now (never 6379). Ports are drawn in
/// turn from a per-process starting point, so that parallel tests and
/// processes rarely try the same one.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let start = std::process::id().wrapping_mul(7919) % (PORTS.end - PORTS.start);
    loop {
        let offset =
            (start + NEXT.fetch_add(1, Ordering::Relaxed) * 13) % (PORTS.end - PORTS.start);
        let port = (PORTS.start + offset) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// In `Server::start_with` arguments: replaced by a fresh free port at each
/// launch attempt (e.g. a cluster bus port).
pub const ANY_PORT: &str = "$ANY_PORT";

pub struct Server {
    child: Option<Child>,
    pub port: u16,
    dir: TempDir,
    args: Vec<String>,
}

impl Server {
    /// A server with no persistence configured.
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    /// A server with extra configuration, given as `redis-server` flags,
    /// e.g. `["--appendonly", "yes"]`.
    pub fn start_with(args: &[&str]) -> Server {
        Server::start_with_files(&[], args)
    }

    /// A replica of `master`, returned once its link is up.
    pub fn start_replica_of(master: &Server) -> Server {
        // Full syncs start at once instead of waiting for more replicas.
        ok::<String>(
            &mut master.client(),
            &["CONFIG", "SET", "repl-diskless-sync-delay", "0"],
        );
        let port = master.port.to_string();
        let replica = Server::start_with(&["--replicaof", "127.0.0.1", &port]);
        let mut con = replica.client();
        wait_until("the replica to sync", START_DEADLINE, || {
            server_info(&mut con, "replication", "master_link_status").as_deref() == Some("up")
        });
        replica
    }

    /// A server whose directory holds `files` (name, content) before it
    /// starts, e.g. an RDB file written by an older release.
    pub fn start_with_files(files: &[(&str, &[u8])], args: &[&str]) -> Server {
        let mut server = Server::unlaunched(files, args);
        server.launch();
        server
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("redis.log")
    }

    pub fn log(&self) -> String {
        fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn launch(&mut self) {
        if let Err(failure) = self.try_launch() {
            panic!(
                "server exited at start ({})\n{}",
                failure.status, failure.log
            );
        }
    }

    fn try_ping(&self) -> bool {
        let Ok(client) = redis::Client::open(self.url()) else {
            return false;
        };
        let Ok(mut con) = client.get_connection_with_timeout(Duration::from_millis(200)) else {
            return false;
        };
        redis::cmd("PING").query::<String>(&mut con).is_ok()
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn client(&self) -> Connection {
        redis::Client::open(self.url())
            .and_then(|client| client.get_connection())
            .expect("cannot connect")
    }

    /// A connection speaking RESP3.
    pub fn client_resp3(&self) -> Connection {
        redis::Client::open(format!("{}?protocol=resp3", self.url()))
            .and_then(|client| client.get_connection())
            .expect("cannot connect with RESP3")
    }

    /// Stops the server the way an operator would (SHUTDOWN, which saves
    /// when persistence is configured) and waits for it to exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let mut con = self.client();
            let _: redis::RedisResult<Value> = redis::cmd("SHUTDOWN").query(&mut con);
            let deadline = Instant::now() + START_DEADLINE;
            while !matches!(child.try_wait(), Ok(Some(_))) {
                if Instant::now() > deadline {
                    let _ = child.kill();
                }
                sleep(Duration::from_millis(10));
            }
        }
    }

    /// Kills the server with SIGKILL, as a crash would, and leaves it down.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server with SIGKILL, as a crash would, and starts it again
    /// on the same directory and configuration.
    pub fn crash_and_restart(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.launch();
    }

    /// Stops the server and starts it again on the same directory and
    /// configuration, as a restart after maintenance would.
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    /// Starts a server `stop`ped before again, on the same directory and
    /// configuration, and on the same port while it is free.
    pub fn start_again(&mut self) {
        if self.child.is_none() {
            self.launch();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!(
                "--- redis-server log (port {}) ---\n{}",
                self.port,
                self.log()
            );
        }
    }
}

/// Runs a command built from string arguments.
pub fn run<T: redis::FromRedisValue>(con: &mut Connection, args: &[&str]) -> redis::RedisResult<T> {
    let mut command = redis::cmd(args[0]);
    for arg in &args[1..] {
        command.arg(*arg);
    }
    command.query(con)
}

/// Runs a command that must succeed.
pub fn ok<T: redis::FromRedisValue>(con: &mut Connection, args: &[&str]) -> T {
    run(con, args).unwrap_or_else(|err| panic!("{args:?} failed: {err}"))
}

/// Runs a command that must fail, and returns the error line as a client
/// would print it, code first: `ERR syntax error`.
pub fn error(con: &mut Connection, args: &[&str]) -> String {
    match run::<Value>(con, args) {
        Ok(value) => panic!("{args:?} should have failed, replied {value:?}"),
        Err(err) => match (err.code(), err.detail()) {
            (Some(code), Some(detail)) => format!("{code} {detail}"),
            (Some(code), None) => code.to_owned(),
            _ => err.to_string(),
        },
    }
}

/// Waits until `check` holds, failing the test after `deadline`.
pub fn wait_until(what: &str, deadline: Duration, mut check: impl FnMut() -> bool) {
    let until = Instant::now() + deadline;
    while !check() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        sleep(Duration::from_millis(20));
    }
}

/// A field of INFO <section>, e.g. ("persistence", "aof_rewrite_in_progress").
pub fn server_info(con: &mut Connection, section: &str, field: &str) -> Option<String> {
    let text: String = ok(con, &["INFO", section]);
    let prefix = format!("{field}:");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .map(|value| value.trim().to_owned())
}

/// INFO memory's `used_memory`, in bytes.
pub fn used_memory(con: &mut Connection) -> i64 {
    server_info(con, "memory", "used_memory")
        .and_then(|bytes| bytes.parse().ok())
        .expect("INFO memory used_memory")
}

/// `used_memory` less what client buffers hold (`mem_clients_normal`): a
/// pipeline leaves a query buffer behind for a while, which is not any
/// key's memory. Both figures come from one INFO reply, because the server
/// may free that buffer between two calls.
pub fn used_memory_less_clients(con: &mut Connection) -> Option<f64> {
    let text: String = ok(con, &["INFO", "memory"]);
    let figure = |field: &str| -> Option<f64> {
        text.lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|bytes| bytes.trim().parse().ok())
    };
    Some(figure("used_memory")? - figure("mem_clients_normal")?)
}

/// One figure of a command's INFO commandstats line, e.g. ("get", "calls").
pub fn command_stat(con: &mut Connection, command: &str, figure: &str) -> Option<f64> {
    let stats = server_info(con, "commandstats", &format!("cmdstat_{command}"))?;
    let prefix = format!("{figure}=");
    stats
        .split(',')
        .find_map(|part| part.strip_prefix(prefix.as_str()))
        .and_then(|value| value.parse().ok())
}

/// How many times the server executed `command`, from INFO commandstats.
pub fn command_calls(con: &mut Connection, command: &str) -> i64 {
    command_stat(con, command, "calls").map_or(0, |calls| calls as i64)
}

/// Microseconds the server spent in all commands since the last
/// CONFIG RESETSTAT, from INFO commandstats.
pub fn total_command_usec(con: &mut Connection) -> f64 {
    let text: String = ok(con, &["INFO", "commandstats"]);
    text.lines()
        .filter(|line| line.starts_with("cmdstat_"))
        .filter_map(|line| line.split(',').find_map(|part| part.strip_prefix("usec=")))
        .filter_map(|usec| usec.parse::<f64>().ok())
        .sum()
}

/// Why a server started with `Server::try_start_with_files` did not come up:
/// how it exited, and its log.
#[derive(Debug)]
pub struct StartFailure {
    pub status: std::process::ExitStatus,
    pub log: String,
}

impl StartFailure {
    /// True when the server died of a signal or reported a crash, rather
    /// than refusing to start with an exit code.
    pub fn crashed(&self) -> bool {
        use std::os::unix::process::ExitStatusExt;
        self.status.signal().is_some()
            || self.log.contains("crashed by signal")
            || self.log.contains("Guru Meditation")
            || self.log.contains("BUG REPORT")
    }
}

impl Server {
    /// Like `start_with_files`, for files the server may refuse: a server
    /// that exits at start is reported with its exit status and log instead
    /// of failing the test.
    pub fn try_start_with_files(
        files: &[(&str, &[u8])],
        args: &[&str],
    ) -> Result<Server, StartFailure> {
        let mut server = Server::unlaunched(files, args);
        server.try_launch()?;
        Ok(server)
    }

    /// A server not started yet, in a new temp directory holding `files`.
    fn unlaunched(files: &[(&str, &[u8])], args: &[&str]) -> Server {
        let dir = tempfile::Builder::new()
            .prefix("seckill-test-")
            .tempdir()
            .expect("cannot create a temp dir");
        for (name, content) in files {
            fs::write(dir.path().join(name), content).expect("cannot write a file for the server");
        }
        Server {
            child: None,
            port: 0,
            dir,
            args: args.iter().map(|arg| arg.to_string()).collect(),
        }
    }

    /// `launch`, returning how the server exited instead of panicking when
    /// it exits at start for another reason than a taken port.
    /// Starts the server; a server that exits at start is reported with
    /// its exit status and log. A restart takes its old port back first,
    /// so that clients holding its address follow it. A port picked as
    /// free can be taken before the server binds it; then the server exits
    /// and another is tried.
    fn try_launch(&mut self) -> Result<(), StartFailure> {
        let previous = self.port;
        for attempt in 0..5 {
            self.port = if attempt == 0 && previous != 0 {
                previous
            } else {
                free_port()
            };
            let mut child = Command::new(server_binary())
                .current_dir(self.dir.path())
                .args(["--port", &self.port.to_string()])
                .args(["--bind", "127.0.0.1"])
                .args(["--dir", &self.dir.path().display().to_string()])
                .args(["--logfile", &self.log_path().display().to_string()])
                .args(["--save", ""])
                .args(["--enable-debug-command", "yes"])
                .args(["--loadmodule", &module_path().display().to_string()])
                .args(self.args.iter().map(|arg| {
                    if arg == ANY_PORT {
                        free_port().to_string()
                    } else {
                        arg.clone()
                    }
                }))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|err| panic!("cannot start {}: {err}", server_binary()));
            let deadline = Instant::now() + START_DEADLINE;
            let status = loop {
                if let Ok(Some(status)) = child.try_wait() {
                    break status;
                }
                if self.try_ping() {
                    self.child = Some(child);
                    return Ok(());
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "server did not answer within {START_DEADLINE:?}\n{}",
                        self.log()
                    );
                }
                sleep(Duration::from_millis(10));
            };
            let log = self.log();
            if !log.contains("Address already in use") {
                return Err(StartFailure { status, log });
            }
            // The log of the failed attempt would be read as this one's.
            let _ = fs::remove_file(self.log_path());
        }
        panic!("no free port after several attempts");
    }

    /// A replica of `master` started with extra `redis-server` flags (e.g.
    /// `["--repl-diskless-load", "swapdb"]`), returned once its link is up.
    pub fn start_replica_of_with(master: &Server, args: &[&str]) -> Server {
        // Full syncs start at once instead of waiting for more replicas.
        ok::<String>(
            &mut master.client(),
            &["CONFIG", "SET", "repl-diskless-sync-delay", "0"],
        );
        let port = master.port.to_string();
        let mut all = vec!["--replicaof", "127.0.0.1", &port];
        all.extend_from_slice(args);
        let replica = Server::start_with(&all);
        let mut con = replica.client();
        wait_until("the replica to sync", START_DEADLINE, || {
            server_info(&mut con, "replication", "master_link_status").as_deref() == Some("up")
        });
        replica
    }
}

/// Sends `commands`, one a line, to the server on `port` through
/// `redis-cli --no-raw` (or `SECKILL_CLI`), as a user types them, and
/// returns what it printed: how documented transcripts are replayed.
pub fn redis_cli<S: AsRef<str>>(port: u16, commands: &[S]) -> String {
    use std::io::Write;
    let cli = std::env::var("SECKILL_CLI").unwrap_or_else(|_| "redis-cli".to_owned());
    let mut child = Command::new(cli)
        .args(["--no-raw", "-h", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("cannot start redis-cli");
    let mut stdin = child.stdin.take().expect("stdin");
    for command in commands {
        writeln!(stdin, "{}", command.as_ref()).expect("write to redis-cli");
    }
    drop(stdin);
    let output = child.wait_with_output().expect("redis-cli output");
    String::from_utf8_lossy(&output.stdout).into_owned()
}
