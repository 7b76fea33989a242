//! Instructions per call, counted by valgrind's callgrind inside Redis's
//! `call()`: the same work `usec_per_call` times, but repeatable to the
//! instruction on a noisy shared machine. Memory stalls do not show here;
//! wall-clock figures carry those.

use crate::contenders::{
    floor_module, load_scripts, BASELINE, DECRBY, FLOOR, GET, HINCRBY, LUA_SECKILL, MODULE,
    MODULE_HOLD, MODULE_ID, MODULE_ORDER, MODULE_VARIANT,
};
use redis::Connection;
use seckill_harness::{free_port, module_path, ok, server_binary};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CALLS: usize = 20_000;
const USERS: usize = 100_000;

pub struct Count {
    pub contender: &'static str,
    pub path: &'static str,
    pub instructions: f64,
}

struct Valgrind {
    child: Child,
}

impl Drop for Valgrind {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn connect(port: u16) -> Option<Connection> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let con = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|client| client.get_connection());
        if let Ok(mut con) = con {
            if redis::cmd("PING").query::<String>(&mut con).is_ok() {
                return Some(con);
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    None
}

fn send(con: &mut Connection, calls: impl Iterator<Item = redis::Cmd>) {
    let calls: Vec<_> = calls.collect();
    for batch in calls.chunks(1000) {
        let mut pipe = redis::pipe();
        for call in batch {
            pipe.add_command(call.clone()).ignore();
        }
        // Replies such as "sold out" are fine; only the count matters.
        let _: redis::RedisResult<()> = pipe.query(con);
    }
}

/// Instructions executed inside `call()` per command while `calls` run.
fn count(
    pid: u32,
    dir: &Path,
    con: &mut Connection,
    calls: impl Iterator<Item = redis::Cmd>,
) -> f64 {
    let control = |flag: &str| {
        Command::new("callgrind_control")
            .args([flag, &pid.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    };
    if !control("-z") {
        return f64::NAN;
    }
    send(con, calls);
    if !control("-d") {
        return f64::NAN;
    }
    let newest = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("callgrind"))
        .max_by_key(|entry| entry.metadata().and_then(|m| m.modified()).ok());
    let total = newest
        .and_then(|entry| std::fs::read_to_string(entry.path()).ok())
        .and_then(|text| {
            text.lines()
                .find_map(|line| {
                    line.strip_prefix("summary:")
                        .or(line.strip_prefix("totals:"))
                })
                .and_then(|value| value.trim().parse::<f64>().ok())
        });
    total.map_or(f64::NAN, |total| total / CALLS as f64)
}

fn lua_for(sha: &str, user: String) -> redis::Cmd {
    let mut call = redis::cmd("EVALSHA");
    call.arg(sha)
        .arg(2)
        .arg("lua:stock")
        .arg("lua:bought")
        .arg(user)
        .arg(1_000_000_000);
    call
}

/// Counts, or an empty list when valgrind is not installed. With
/// `SECKILL_BASELINE_MODULE` set (`make bench` builds the baseline commit's
/// module there), its success and sold-out paths are counted too, under
/// `BASELINE`, in a server of their own: two modules named seckill cannot
/// share one.
pub fn measure() -> Vec<Count> {
    let mut counts = measure_module(&module_path().display().to_string(), false);
    match std::env::var("SECKILL_BASELINE_MODULE") {
        Ok(baseline) if !counts.is_empty() && Path::new(&baseline).exists() => {
            println!("  the baseline commit's module: {baseline}");
            counts.extend(measure_module(&baseline, true));
        }
        _ => println!("  no baseline module (SECKILL_BASELINE_MODULE): not compared"),
    }
    counts
}

fn measure_module(module: &str, baseline: bool) -> Vec<Count> {
    let dir = tempfile::Builder::new()
        .prefix("seckill-bench-callgrind-")
        .tempdir()
        .expect("temp dir");
    let port = free_port();
    let spawned = Command::new("valgrind")
        .args(["--tool=callgrind", "--toggle-collect=call"])
        .arg(format!(
            "--callgrind-out-file={}/callgrind.%p",
            dir.path().display()
        ))
        .arg(server_binary())
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir.path())
        .arg("--loadmodule")
        .arg(module)
        .args(
            floor_module()
                .filter(|_| !baseline)
                .map(|floor| ["--loadmodule".to_owned(), floor])
                .into_iter()
                .flatten(),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(child) = spawned else {
        println!("  valgrind not installed: instruction counts skipped (make bench installs it)");
        return Vec::new();
    };
    let valgrind = Valgrind { child };
    let Some(mut con) = connect(port) else {
        println!("  redis-server under valgrind did not answer: instruction counts skipped");
        return Vec::new();
    };
    let scripts = load_scripts(&mut con);
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.INIT",
            "ok",
            "100000000000000",
            "LIMIT",
            "1000000000",
        ],
    );
    ok::<i64>(&mut con, &["SECKILL.INIT", "none", "0"]);
    let stock = "100000000000000";
    let limit = "1000000000";
    ok::<i64>(
        &mut con,
        &[
            "SECKILL.INIT",
            "sizes",
            "VARIANTS",
            "3",
            "s",
            stock,
            "m",
            stock,
            "l",
            stock,
            "LIMIT",
            limit,
        ],
    );
    for line in ["{order}:1", "{order}:2", "{order}:3"] {
        ok::<i64>(&mut con, &["SECKILL.INIT", line, stock, "LIMIT", limit]);
    }
    ok::<String>(&mut con, &["SET", "ref", "100000000000000"]);
    ok::<String>(&mut con, &["SET", "lua:stock", "100000000000000"]);
    // Every user has bought before, as on the wall-clock success path.
    send(
        &mut con,
        (0..USERS).map(|n| {
            let mut call = redis::cmd("SECKILL.DEDUCT");
            call.arg("ok").arg(format!("user:{n}")).arg(1);
            call
        }),
    );
    // So have the hash's, one field each.
    send(
        &mut con,
        (0..USERS).map(|n| {
            let mut call = redis::cmd("HINCRBY");
            call.arg("ref:buyers").arg(format!("user:{n}")).arg(1);
            call
        }),
    );
    // The script's users have bought before too.
    send(
        &mut con,
        (0..USERS).map(|n| lua_for(&scripts.seckill_lua, format!("user:{n}"))),
    );
    let user = |n: usize| format!("user:{}", (n * 7919) % USERS);
    let pid = valgrind.child.id();
    let dir = dir.path();
    let mut counts = Vec::new();
    let mut record = |contender, path, calls: Vec<redis::Cmd>| {
        counts.push(Count {
            contender,
            path,
            instructions: count(pid, dir, &mut con, calls.into_iter()),
        });
    };
    let command = |name: &str, args: &[String]| {
        let mut call = redis::cmd(name);
        for arg in args {
            call.arg(arg);
        }
        call
    };
    let s = |text: &str| text.to_owned();
    let deduct = |item: &str, n: usize| command("SECKILL.DEDUCT", &[s(item), user(n), s("1")]);
    if baseline {
        println!("  success and sold-out paths, {CALLS} calls each");
        record(
            BASELINE,
            "success",
            (0..CALLS).map(|n| deduct("ok", n)).collect(),
        );
        record(
            BASELINE,
            "sold out",
            (0..CALLS).map(|n| deduct("none", n)).collect(),
        );
        return counts;
    }
    println!("  success path, sold-out path and references, {CALLS} calls each");
    record(
        MODULE,
        "success",
        (0..CALLS).map(|n| deduct("ok", n)).collect(),
    );
    record(
        MODULE_ID,
        "success",
        (0..CALLS)
            .map(|n| {
                let id = format!("req:{n}");
                command(
                    "SECKILL.DEDUCT",
                    &[s("ok"), s("user:bench"), s("1"), s("ID"), id],
                )
            })
            .collect(),
    );
    // The same purchase held for ten minutes: nothing lapses while it runs.
    record(
        MODULE_HOLD,
        "success",
        (0..CALLS)
            .map(|n| {
                let id = format!("hold:{n}");
                command(
                    "SECKILL.DEDUCT",
                    &[
                        s("ok"),
                        s("user:bench"),
                        s("1"),
                        s("ID"),
                        id,
                        s("HOLD"),
                        s("600"),
                    ],
                )
            })
            .collect(),
    );
    record(
        MODULE_VARIANT,
        "success",
        (0..CALLS)
            .map(|n| {
                let id = format!("size:{n}");
                command(
                    "SECKILL.DEDUCT",
                    &[
                        s("sizes"),
                        s("user:bench"),
                        s("1"),
                        s("ID"),
                        id,
                        s("VARIANT"),
                        s("m"),
                    ],
                )
            })
            .collect(),
    );
    record(
        MODULE_ORDER,
        "success",
        (0..CALLS)
            .map(|n| {
                let mut args = vec![s("3")];
                for line in ["{order}:1", "{order}:2", "{order}:3"] {
                    args.extend([s(line), s("1")]);
                }
                args.extend([s("user:bench"), format!("order:{n}")]);
                command("SECKILL.MDEDUCT", &args)
            })
            .collect(),
    );
    record(
        LUA_SECKILL,
        "success",
        (0..CALLS)
            .map(|n| lua_for(&scripts.seckill_lua, user(n)))
            .collect(),
    );
    record(
        HINCRBY,
        "success",
        (0..CALLS)
            .map(|n| command("HINCRBY", &[s("ref:buyers"), user(n), s("1")]))
            .collect(),
    );
    record(
        DECRBY,
        "success",
        (0..CALLS)
            .map(|_| command("DECRBY", &[s("ref"), s("1")]))
            .collect(),
    );
    record(
        MODULE,
        "sold out",
        (0..CALLS).map(|n| deduct("none", n)).collect(),
    );
    if floor_module().is_some() {
        record(
            FLOOR,
            "sold out",
            (0..CALLS)
                .map(|_| command("FLOOR.TOUCH", &[s("none")]))
                .collect(),
        );
    }
    record(
        GET,
        "sold out",
        (0..CALLS).map(|_| command("GET", &[s("ref")])).collect(),
    );
    counts
}
