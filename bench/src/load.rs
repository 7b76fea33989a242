//! Two load generators: Debian's redis-benchmark for single commands, and a
//! closed loop of client threads for anything that takes several round trips
//! or needs every reply checked.

use std::ops::Range;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, Default)]
pub struct Throughput {
    pub ops_per_sec: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The slowest call; only redis-benchmark reports it.
    pub max_ms: f64,
}

/// Runs redis-benchmark with `clients` connections, `requests` calls and
/// `pipeline` commands in flight per connection. `__rand_int__` in an
/// argument becomes a random number below `keyspace`.
pub fn redis_benchmark(
    port: u16,
    clients: usize,
    requests: usize,
    pipeline: usize,
    keyspace: usize,
    args: &[String],
) -> Throughput {
    redis_benchmark_on(None, port, clients, requests, pipeline, keyspace, args)
}

/// `redis_benchmark`, pinned to CPU `cpu` when given (with `taskset`).
pub fn redis_benchmark_on(
    cpu: Option<usize>,
    port: u16,
    clients: usize,
    requests: usize,
    pipeline: usize,
    keyspace: usize,
    args: &[String],
) -> Throughput {
    let mut command = match cpu {
        Some(cpu) => {
            let mut command = Command::new("taskset");
            command.args(["-c", &cpu.to_string(), "redis-benchmark"]);
            command
        }
        None => Command::new("redis-benchmark"),
    };
    let output = command
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["-c", &clients.to_string(), "-n", &requests.to_string()])
        .args(["-P", &pipeline.to_string(), "-r", &keyspace.to_string()])
        .arg("--csv")
        .args(args)
        .output()
        .expect("cannot run redis-benchmark (package redis-tools)");
    let text = String::from_utf8_lossy(&output.stdout);
    // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
    let fields: Vec<f64> = text
        .lines()
        .nth(1)
        .map(|line| {
            line.split("\",\"")
                .skip(1)
                .map(|field| field.trim_matches('"').parse().unwrap_or(f64::NAN))
                .collect()
        })
        .unwrap_or_default();
    match fields.as_slice() {
        [rps, _avg, _min, p50, _p95, p99, max, ..] => Throughput {
            ops_per_sec: *rps,
            p50_ms: *p50,
            p99_ms: *p99,
            max_ms: *max,
        },
        _ => panic!(
            "unexpected redis-benchmark output for {args:?}:\n{text}\n{}",
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

/// What a closed-loop run saw.
pub struct LoopRun<T> {
    pub elapsed: Duration,
    /// One per round trip: a single call, or a pipelined batch.
    pub latencies: Vec<Duration>,
    /// Each call's result with the time its round trip completed.
    pub results: Vec<(T, Duration)>,
}

impl<T> LoopRun<T> {
    pub fn throughput(&self) -> Throughput {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        let quantile = |q: f64| {
            sorted
                .get(((sorted.len() as f64 - 1.0) * q).round() as usize)
                .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
        };
        Throughput {
            ops_per_sec: self.results.len() as f64 / self.elapsed.as_secs_f64(),
            p50_ms: quantile(0.50),
            p99_ms: quantile(0.99),
            max_ms: quantile(1.0),
        }
    }
}

/// Runs calls `0..calls` from `clients` threads, each with its own
/// connection. A thread takes the next `batch` indexes and hands them to
/// `call` for one round trip (a pipeline when `batch` > 1), until none are
/// left.
pub fn closed_loop<T, F>(
    url: &str,
    clients: usize,
    calls: usize,
    batch: usize,
    call: F,
) -> LoopRun<T>
where
    T: Send + 'static,
    F: Fn(&mut redis::Connection, Range<usize>) -> Vec<T> + Send + Sync + 'static,
{
    let call = Arc::new(call);
    let next = Arc::new(AtomicUsize::new(0));
    let batch = batch.max(1);
    let connections: Vec<_> = (0..clients)
        .map(|_| {
            redis::Client::open(url)
                .and_then(|client| client.get_connection())
                .expect("connect")
        })
        .collect();
    let start = Instant::now();
    let workers: Vec<_> = connections
        .into_iter()
        .map(|mut con| {
            let call = Arc::clone(&call);
            let next = Arc::clone(&next);
            thread::spawn(move || {
                let mut latencies = Vec::new();
                let mut results = Vec::new();
                loop {
                    let first = next.fetch_add(batch, Ordering::Relaxed);
                    if first >= calls {
                        return (latencies, results);
                    }
                    let sent = Instant::now();
                    let replies = call(&mut con, first..(first + batch).min(calls));
                    let done = Instant::now();
                    latencies.push(done - sent);
                    results.extend(replies.into_iter().map(|reply| (reply, done - start)));
                }
            })
        })
        .collect();
    let mut run = LoopRun {
        elapsed: Duration::ZERO,
        latencies: Vec::with_capacity(calls),
        results: Vec::with_capacity(calls),
    };
    for worker in workers {
        let (latencies, results) = worker.join().expect("load thread");
        run.latencies.extend(latencies);
        run.results.extend(results);
    }
    run.elapsed = start.elapsed();
    run
}

/// The middle value (the upper one of an even count); NaN for none.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}
