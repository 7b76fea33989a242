//! Random sequences of SECKILL calls, well-formed and not, over a handful of
//! items (with and without an order stream, one unlimited, one missing, one
//! key of another type). After every call:
//!
//! - the server answered (a connection error fails the test);
//! - an error reply starts with an error code (`ERR`, `WRONGTYPE`, ...);
//! - a call that errored left its key exactly as it was (DUMP before and
//!   after, in the same pipeline as the call, so no timer runs between);
//! - every limited item's counters add up:
//!   `stock + sold - refunded - expired + moved_out - moved_in == initial +
//!   added`.
//!
//! The generator is a fixed xorshift, so each seed replays the same calls.

mod common;

use common::{ok, Server};
use redis::Value;
use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

const CALLS_PER_SEED: usize = 5_000;

/// Keys calls are made on: items with a stream ({a}, {d}), without
/// ({b}), unlimited ({c}), usually missing ({z}), and a string ({p}).
const KEYS: &[&str] = &["{a}", "{b}", "{c}", "{d}", "{z}", "{p}"];
/// Keys whose INFO is checked after every call.
const ITEMS: &[&str] = &["{a}", "{b}", "{c}", "{d}", "{z}"];
/// Variant names calls use: two an item with variants may have, one it
/// never has.
const VARIANTS: &[&str] = &["s", "m", "xl"];

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn range(&mut self, low: i64, high: i64) -> i64 {
        low + (self.next() % (high - low + 1) as u64) as i64
    }

    fn percent(&mut self, p: usize) -> bool {
        self.below(100) < p
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64
}

type Args = Vec<Vec<u8>>;

fn b(text: impl AsRef<[u8]>) -> Vec<u8> {
    text.as_ref().to_vec()
}

/// An argument that is rarely what a parser wants.
fn garbage(rng: &mut Rng) -> Vec<u8> {
    match rng.below(12) {
        0 => b(""),
        1 => b("-1"),
        2 => b("0"),
        3 => b("9223372036854775807"),
        4 => b("-9223372036854775808"),
        5 => b("18446744073709551616"),
        6 => b("1e3"),
        7 => b("x".repeat(129)),
        8 => b(" 1"),
        9 => b(*rng.pick(&[
            "ID",
            "HOLD",
            "HOLDUNTIL",
            "WITHDEADLINE",
            "DETAIL",
            "LIMIT",
            "STREAM",
            "MAXLEN",
            "REPLACE",
            "UNLIMITED",
            "EX",
            "PXAT",
        ])),
        _ => (0..rng.below(20)).map(|_| rng.next() as u8).collect(),
    }
}

fn user(rng: &mut Rng) -> Vec<u8> {
    b(format!("u{}", rng.below(6)))
}

fn request(rng: &mut Rng) -> Vec<u8> {
    b(format!("r{}", rng.below(24)))
}

fn qty(rng: &mut Rng) -> Vec<u8> {
    b(rng.range(1, 3).to_string())
}

fn stream_for(rng: &mut Rng, key: &[u8]) -> Vec<u8> {
    let key = String::from_utf8_lossy(key);
    match rng.below(10) {
        0 => b("elsewhere:o"),
        1 => b(key.as_bytes()),
        2 => b(format!("{key}:o2")),
        _ => b(format!("{key}:o")),
    }
}

/// One SECKILL call, mostly well-formed.
fn seckill_call(rng: &mut Rng) -> Args {
    let key = b(rng.pick(KEYS));
    let now = now_ms();
    let mut args: Args = match rng.below(100) {
        // INIT key stock [LIMIT n] [START s] [END e] [STREAM s [MAXLEN n]] [EX ..] [REPLACE]
        0..=7 => {
            let mut args = vec![b("SECKILL.INIT"), key.clone()];
            let variants = rng.percent(25);
            if variants {
                // An item with variants, now and then a repeated name.
                let count = rng.range(1, 3);
                args.extend([b("VARIANTS"), b(count.to_string())]);
                for _ in 0..count {
                    args.push(b(rng.pick(VARIANTS)));
                    args.push(b(rng.range(0, 20).to_string()));
                }
            } else {
                args.push(if rng.percent(15) {
                    b("UNLIMITED")
                } else {
                    b(rng.range(0, 40).to_string())
                });
            }
            if rng.percent(50) {
                args.extend([b("LIMIT"), b(rng.range(0, 4).to_string())]);
            }
            if variants && rng.percent(30) {
                args.extend([
                    b("VARIANTLIMIT"),
                    b(rng.pick(VARIANTS)),
                    b(rng.range(0, 3).to_string()),
                ]);
            }
            if rng.percent(10) {
                args.extend([b("START"), b((now - 1_000).to_string())]);
            }
            if rng.percent(10) {
                args.extend([b("END"), b((now + rng.range(-500, 60_000)).to_string())]);
            }
            if rng.percent(40) {
                args.extend([b("STREAM"), stream_for(rng, &key)]);
                if rng.percent(40) {
                    args.extend([b("MAXLEN"), b(rng.range(0, 6).to_string())]);
                }
            }
            if rng.percent(10) {
                args.extend([b("EX"), b("100000")]);
            }
            if rng.percent(40) {
                args.push(b("REPLACE"));
            }
            args
        }
        8..=10 => {
            let mut args = vec![b("SECKILL.ADD"), key, qty(rng)];
            if rng.percent(30) {
                args.extend([b("VARIANT"), b(rng.pick(VARIANTS))]);
            }
            args
        }
        // Transfers between parts: TAKE, ADD ... ID, SETTLE, TRANSFERS.
        11 => {
            let mut args = vec![b("SECKILL.TAKE"), key, qty(rng), b("ID"), request(rng)];
            if rng.percent(50) {
                args.push(b("TO"));
                args.push(b(rng.pick(KEYS)));
            }
            if rng.percent(40) {
                args.extend([b("VARIANT"), b(rng.pick(VARIANTS))]);
            }
            args
        }
        12 => {
            let mut args = match rng.below(4) {
                0 => vec![b("SECKILL.ADD"), key, qty(rng), b("ID"), request(rng)],
                1 => vec![b("SECKILL.SETTLE"), key, request(rng)],
                // IMPORT key [VARIANT v] record ..., into one variant or not.
                2 => {
                    let mut args = vec![b("SECKILL.IMPORT"), key];
                    if rng.percent(50) {
                        args.extend([b("VARIANT"), b(rng.pick(VARIANTS))]);
                    }
                    for _ in 0..rng.range(1, 3) {
                        if rng.percent(30) {
                            args.extend([b("BUYER"), user(rng), qty(rng)]);
                        } else {
                            let status = ["purchased", "held", "confirmed", "refunded", "lapsed"];
                            let deadline = now + rng.range(-1_000, 60_000);
                            args.extend([
                                b("REQUEST"),
                                request(rng),
                                user(rng),
                                qty(rng),
                                b(rng.pick(&status)),
                                b(deadline.to_string()),
                                b(rng.range(0, 20).to_string()),
                            ]);
                        }
                    }
                    return args;
                }
                _ if rng.percent(50) => return vec![b("SECKILL.TRANSFERS"), key],
                _ => return vec![b("SECKILL.VARIANTS"), key],
            };
            if rng.percent(40) {
                args.extend([b("VARIANT"), b(rng.pick(VARIANTS))]);
            }
            args
        }
        // DEDUCT key user qty [ID r] [HOLD s | HOLDUNTIL ms]
        13..=49 => {
            let mut args = vec![b("SECKILL.DEDUCT"), key, user(rng), qty(rng)];
            match rng.below(10) {
                0 | 1 => {}
                2 | 3 => args.extend([b("ID"), request(rng)]),
                4 => args.extend([b("ID"), request(rng), b("HOLD"), b("1")]),
                5 | 6 => args.extend([
                    b("ID"),
                    request(rng),
                    b("HOLDUNTIL"),
                    b((now - rng.range(0, 2_000)).max(1).to_string()),
                ]),
                7 | 8 => args.extend([
                    b("ID"),
                    request(rng),
                    b("HOLDUNTIL"),
                    b((now + rng.range(1, 3_000)).to_string()),
                ]),
                _ => args.extend([b("HOLD"), b("5")]),
            }
            if rng.percent(30) {
                args.extend([b("VARIANT"), b(rng.pick(VARIANTS))]);
            }
            if rng.below(4) == 0 {
                args.push(b("WITHDEADLINE"));
            }
            args
        }
        50..=57 => {
            let mut args = vec![b("SECKILL.CONFIRM"), key, request(rng)];
            if rng.below(2) == 0 {
                args.push(b("DETAIL"));
            }
            args
        }
        58..=62 => {
            let mut args = vec![b("SECKILL.RELEASE"), key];
            for _ in 0..rng.range(1, 3) {
                args.push(request(rng));
            }
            args
        }
        63..=70 => {
            let mut args = vec![b("SECKILL.REFUND"), key, request(rng)];
            if rng.below(2) == 0 {
                args.push(b("DETAIL"));
            }
            args
        }
        71..=74 => {
            let (start, end) = match rng.below(6) {
                0 => (now + 60_000, 0),
                1 => (0, now - 1),
                2 => (now + 10, now),
                _ => (0, 0),
            };
            vec![
                b("SECKILL.WINDOW"),
                key,
                b(start.to_string()),
                b(end.to_string()),
            ]
        }
        75..=78 => {
            let mut args = vec![b("SECKILL.STREAM"), key.clone()];
            if rng.percent(80) {
                args.push(stream_for(rng, &key));
                if rng.percent(30) {
                    args.extend([b("MAXLEN"), b(rng.range(0, 6).to_string())]);
                }
            }
            args
        }
        79..=83 => {
            let mut args = vec![b("SECKILL.GET"), key];
            if rng.percent(30) {
                args.extend([b("VARIANT"), b(rng.pick(VARIANTS))]);
            }
            args
        }
        84..=88 => {
            let mut args = vec![b("SECKILL.BOUGHT"), key, user(rng)];
            if rng.percent(30) {
                args.extend([b("VARIANT"), b(rng.pick(VARIANTS))]);
            }
            args
        }
        89..=93 => {
            let mut args = vec![b("SECKILL.HOLDS"), key];
            if rng.percent(30) {
                args.push(user(rng));
            }
            args
        }
        // Orders of several items: keys may repeat, which is refused.
        94..=96 => {
            let lines = rng.range(1, 4);
            let mut args = vec![b("SECKILL.MDEDUCT"), b(lines.to_string())];
            for _ in 0..lines {
                args.extend([b(rng.pick(KEYS)), qty(rng)]);
            }
            args.extend([user(rng), request(rng)]);
            match rng.below(4) {
                0 => args.extend([b("HOLD"), b("1")]),
                1 => args.extend([b("HOLDUNTIL"), b((now + rng.range(1, 3_000)).to_string())]),
                _ => {}
            }
            // Lines of items with variants name theirs; now and then a
            // line that has none, or a line number out of range.
            for line in 1..=lines + 1 {
                if rng.percent(40) {
                    args.extend([b("VARIANT"), b(line.to_string()), b(rng.pick(VARIANTS))]);
                }
            }
            if rng.percent(25) {
                args.push(b("WITHDEADLINE"));
            }
            args
        }
        97 | 98 => {
            let keys = rng.range(1, 4);
            let command = if rng.percent(50) {
                "SECKILL.MCONFIRM"
            } else {
                "SECKILL.MREFUND"
            };
            let mut args = vec![b(command), b(keys.to_string())];
            for _ in 0..keys {
                args.push(b(rng.pick(KEYS)));
            }
            args.push(request(rng));
            if rng.percent(50) {
                args.push(b("DETAIL"));
            }
            args
        }
        _ => {
            let mut args = vec![b("SECKILL.INFO"), key];
            if rng.percent(30) {
                args.extend([b("VARIANT"), b(rng.pick(VARIANTS))]);
            }
            args
        }
    };
    // Damage about one call in eight.
    match rng.below(40) {
        0 | 1 => {
            let at = 2 + rng.below(args.len().saturating_sub(2).max(1));
            if at < args.len() {
                args[at] = garbage(rng);
            }
        }
        2 => args.push(garbage(rng)),
        3 => {
            let keep = 1 + rng.below(args.len());
            args.truncate(keep);
        }
        4 => {
            let at = 1 + rng.below(args.len() - 1);
            args[at] = garbage(rng);
        }
        _ => {}
    }
    args
}

/// Something a client other than the module does to the keys around the
/// items: a string where a stream should be, a stream that cannot take
/// another entry, a deleted stream or item.
fn disturbance(rng: &mut Rng) -> Args {
    let stream = b(format!("{}:o", rng.pick(&["{a}", "{b}", "{d}"])));
    match rng.below(5) {
        0 => vec![b("SET"), stream, b("not a stream")],
        1 => vec![
            b("XADD"),
            stream,
            b("18446744073709551615-18446744073709551615"),
            b("f"),
            b("v"),
        ],
        2 | 3 => vec![b("DEL"), stream],
        _ => vec![b("DEL"), b(*rng.pick(&["{a}", "{b}", "{d}"]))],
    }
}

fn command(args: &Args) -> redis::Cmd {
    let mut cmd = redis::cmd(&String::from_utf8_lossy(&args[0]));
    for arg in &args[1..] {
        cmd.arg(arg.as_slice());
    }
    cmd
}

fn show(args: &Args) -> String {
    args.iter()
        .map(|arg| format!("{:?}", String::from_utf8_lossy(arg)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn info_fields(value: &Value) -> Option<BTreeMap<String, i64>> {
    let items: Vec<Value> = match value {
        Value::Array(items) => items.clone(),
        Value::Map(pairs) => pairs
            .iter()
            .flat_map(|(k, v)| [k.clone(), v.clone()])
            .collect(),
        _ => return None,
    };
    Some(
        items
            .chunks(2)
            .filter_map(|pair| {
                let field: String = redis::from_redis_value(pair[0].clone()).ok()?;
                match pair[1] {
                    Value::Int(value) => Some((field, value)),
                    _ => None,
                }
            })
            .collect(),
    )
}

/// The first word of an error must be its code: capitals only.
fn has_code(err: &redis::ServerError) -> bool {
    let code = err.code();
    !code.is_empty() && code.bytes().all(|c| c.is_ascii_uppercase())
}

/// Failures by kind: how many, and the first one in full.
#[derive(Default)]
struct Findings(BTreeMap<&'static str, (usize, String)>);

impl Findings {
    fn add(&mut self, kind: &'static str, detail: impl FnOnce() -> String) {
        let entry = self.0.entry(kind).or_insert_with(|| (0, detail()));
        entry.0 += 1;
    }

    fn report(&self, seed: u64) -> String {
        self.0
            .iter()
            .map(|(kind, (count, first))| {
                format!("seed {seed}: {kind}: {count} time(s); first: {first}")
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

fn check_items(findings: &mut Findings, infos: &[Value], context: &dyn Fn() -> String) {
    for (key, value) in ITEMS.iter().zip(infos) {
        match value {
            Value::Nil => {}
            Value::ServerError(err) => findings.add("INFO of an item failed", || {
                format!("{key}: {err:?} after {}", context())
            }),
            value => {
                let Some(f) = info_fields(value) else {
                    findings.add("INFO reply of an unknown shape", || {
                        format!("{key}: {value:?}")
                    });
                    continue;
                };
                if f.get("unlimited") != Some(&0) {
                    continue;
                }
                let lhs = f["stock"] as i128 + f["sold"] as i128
                    - f["refunded"] as i128
                    - f["expired"] as i128
                    + f["moved_out"] as i128
                    - f["moved_in"] as i128;
                let rhs = f["initial"] as i128 + f["added"] as i128;
                if lhs != rhs {
                    findings.add("counters do not add up", || {
                        format!("{key}: stock + sold - refunded - expired + moved_out - moved_in = {lhs}, initial + added = {rhs}, {f:?}, after {}", context())
                    });
                }
            }
        }
    }
}

fn fuzz(seed: u64) {
    let server = Server::start();
    let mut con = server.client();
    for args in [
        &["SECKILL.INIT", "{a}", "50", "LIMIT", "5", "STREAM", "{a}:o"][..],
        &["SECKILL.INIT", "{b}", "30", "LIMIT", "3"][..],
        &["SECKILL.INIT", "{c}", "UNLIMITED", "LIMIT", "2"][..],
        &[
            "SECKILL.INIT",
            "{d}",
            "20",
            "STREAM",
            "{d}:o",
            "MAXLEN",
            "5",
        ][..],
    ] {
        assert_eq!(ok::<i64>(&mut con, args), 1);
    }
    ok::<String>(&mut con, &["SET", "{p}", "plain"]);

    let mut rng = Rng::new(seed);
    let mut findings = Findings::default();
    let mut calls = 0;
    let mut errors = 0;
    while calls < CALLS_PER_SEED {
        if rng.percent(3) {
            let args = disturbance(&mut rng);
            // The server may refuse it (e.g. XADD onto a string); it must answer.
            let result: redis::RedisResult<Value> = command(&args).query(&mut con);
            if let Err(err) = result {
                assert!(
                    err.code().is_some(),
                    "seed {seed}: {} got no reply: {err}",
                    show(&args)
                );
            }
            continue;
        }
        calls += 1;
        let args = seckill_call(&mut rng);
        let key = args.get(1).cloned().unwrap_or_else(|| b("{z}"));
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        pipe.cmd("DUMP").arg(key.as_slice());
        pipe.add_command(command(&args));
        pipe.cmd("DUMP").arg(key.as_slice());
        for item in ITEMS {
            pipe.cmd("SECKILL.INFO").arg(*item);
        }
        let replies: Vec<Value> = pipe.query(&mut con).unwrap_or_else(|err| {
            panic!(
                "seed {seed}, call {calls}: {} got no reply: {err}\n{}",
                show(&args),
                findings.report(seed)
            )
        });
        let context = || format!("call {calls}: {} replied {:?}", show(&args), replies[1]);
        if let Value::ServerError(err) = &replies[1] {
            errors += 1;
            if !has_code(err) {
                findings.add("error reply without an error code", context);
            }
            if replies[0] != replies[2] {
                findings.add("a call that errored changed its key", context);
            }
        }
        check_items(&mut findings, &replies[3..], &context);
    }
    // Whatever the calls left behind still saves, loads and adds up.
    ok::<String>(&mut con, &["DEBUG", "RELOAD"]);
    let infos: Vec<Value> = {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for item in ITEMS {
            pipe.cmd("SECKILL.INFO").arg(*item);
        }
        pipe.query(&mut con).expect("INFO after DEBUG RELOAD")
    };
    check_items(&mut findings, &infos, &|| "DEBUG RELOAD".to_owned());
    assert_eq!(ok::<String>(&mut con, &["PING"]), "PONG");
    assert!(
        errors > CALLS_PER_SEED / 20,
        "seed {seed}: only {errors} calls errored; the generator is too tame"
    );
    assert!(findings.0.is_empty(), "{}", findings.report(seed));
}

#[test]
fn random_calls_seed_1() {
    fuzz(1);
}

#[test]
fn random_calls_seed_2() {
    fuzz(2);
}

#[test]
fn random_calls_seed_3() {
    fuzz(3);
}

#[test]
fn random_calls_seed_4() {
    fuzz(4);
}
