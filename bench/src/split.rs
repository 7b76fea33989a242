//! Section (j): one hot item split over three shards against the same item
//! on one shard, in the same run.
//!
//! Clients are pinned to parts, as the split-item helpers pin users, so each
//! shard receives only its own part's purchases: the split side is three
//! redis-benchmark runs at once, each against its own server and part, with
//! a third of the clients each; the one-shard side is one run with all the
//! clients against one server. A cluster adds nothing on the server side
//! once clients route by key, so standalone servers stand in for shards.

use crate::load::{median, redis_benchmark};
use seckill_harness::{ok, Server};
use std::thread;

pub struct SplitScaling {
    pub shards: usize,
    pub clients: usize,
    pub requests: usize,
    /// Purchases per second, median of the rounds.
    pub one_shard: f64,
    pub split: f64,
}

const SHARDS: usize = 3;

fn deduct(part: &str) -> Vec<String> {
    ["SECKILL.DEDUCT", part, "user:__rand_int__", "1"]
        .iter()
        .map(|arg| arg.to_string())
        .collect()
}

pub fn measure(clients: usize, requests: usize, rounds: usize) -> SplitScaling {
    let servers: Vec<Server> = (0..SHARDS)
        .map(|_| Server::start_with(&["--appendonly", "no"]))
        .collect();
    for (i, server) in servers.iter().enumerate() {
        ok::<i64>(
            &mut server.client(),
            &[
                "SECKILL.INIT",
                &format!("hot:part:{i}"),
                "1000000000000",
                "REPLACE",
            ],
        );
    }
    let per_shard = clients.div_ceil(SHARDS);
    let mut one = Vec::new();
    let mut split = Vec::new();
    for _ in 0..rounds {
        one.push(
            redis_benchmark(
                servers[0].port,
                clients,
                requests,
                16,
                100_000,
                &deduct("hot:part:0"),
            )
            .ops_per_sec,
        );
        let runs: Vec<f64> = thread::scope(|scope| {
            let handles: Vec<_> = servers
                .iter()
                .enumerate()
                .map(|(i, server)| {
                    let port = server.port;
                    scope.spawn(move || {
                        redis_benchmark(
                            port,
                            per_shard,
                            requests / SHARDS,
                            16,
                            100_000,
                            &deduct(&format!("hot:part:{i}")),
                        )
                        .ops_per_sec
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or(0.0))
                .collect()
        });
        split.push(runs.iter().sum());
    }
    SplitScaling {
        shards: SHARDS,
        clients,
        requests,
        one_shard: median(one),
        split: median(split),
    }
}

impl SplitScaling {
    pub fn markdown(&self, cores: usize) -> String {
        format!(
            "\n## (j) One item split over {shards} shards\n\n\
             `SECKILL.DEDUCT` on one item, pipelined (`-P 16`, {clients} clients, {requests} \
             purchases per round, a random user out of 100,000): all of it on one shard, \
             against the same traffic spread over {shards} parts on {shards} shards, each \
             shard taking the purchases of the users pinned to its part \
             (`SplitItem`, FNV-1a of the user id). Median of the rounds.\n\n\
             | layout | purchases/s | × one shard |\n|---|--:|--:|\n\
             | one shard | {one:.0} | 1.00× |\n\
             | {shards} shards | {split:.0} | {ratio:.2}× |\n\n\
             What {cores} cores can show: a shard is one main thread. On one shard, \
             that thread is the ceiling (here with the load generator on the other \
             core); split, {shards} main threads and {shards} load generators share the \
             same {cores} cores, so the ratio shows what the cores left idle by one \
             shard give, and that splitting costs nothing per purchase, not the gain \
             on real hardware. With a core per shard (a cluster of machines), the \
             ceiling grows with the number of shards, up to what the clients can \
             send.\n",
            shards = self.shards,
            clients = self.clients,
            requests = self.requests,
            one = self.one_shard,
            split = self.split,
            ratio = self.split / self.one_shard.max(1.0),
        )
    }
}
