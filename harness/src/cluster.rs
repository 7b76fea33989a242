//! A real Redis Cluster on loopback: masters with replicas, every node
//! loading the module, created with `redis-cli --cluster create`.

use crate::{ok, server_info, wait_until, Server, ANY_PORT};
use redis::cluster::{ClusterClient, ClusterConnection};
use redis::Connection;
use std::process::Command;
use std::time::Duration;

pub struct Cluster {
    /// Masters first, then their replicas, as created.
    pub nodes: Vec<Server>,
}

const HEALTHY_WITHIN: Duration = Duration::from_secs(60);

impl Cluster {
    /// `masters` shards with `replicas` replicas each. Node timeout is one
    /// second, so that a killed master is replaced quickly.
    pub fn start(masters: usize, replicas: usize) -> Cluster {
        Cluster::start_with(masters, replicas, &[])
    }

    /// `start`, with `extra` server arguments on every node.
    pub fn start_with(masters: usize, replicas: usize, extra: &[&str]) -> Cluster {
        let count = masters * (1 + replicas);
        let mut args = vec![
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            "1000",
            "--cluster-port",
            ANY_PORT,
            "--appendonly",
            "yes",
        ];
        args.extend_from_slice(extra);
        let nodes: Vec<Server> = (0..count).map(|_| Server::start_with(&args)).collect();
        let addresses: Vec<String> = nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port))
            .collect();
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .output()
            .expect("run redis-cli --cluster create");
        assert!(
            created.status.success(),
            "cluster create failed:\n{}",
            String::from_utf8_lossy(&created.stdout)
        );
        let cluster = Cluster { nodes };
        cluster.wait_healthy();
        cluster
    }

    /// Waits until every live node sees all slots served.
    pub fn wait_healthy(&self) {
        for node in self.live() {
            let mut con = node.client();
            wait_until("the cluster to be healthy", HEALTHY_WITHIN, || {
                let info: String = ok(&mut con, &["CLUSTER", "INFO"]);
                info.contains("cluster_state:ok") && info.contains("cluster_slots_ok:16384")
            });
        }
    }

    /// The nodes still running.
    pub fn live(&self) -> impl Iterator<Item = &Server> {
        self.nodes.iter().filter(|node| node.is_running())
    }

    pub fn client(&self) -> ClusterConnection {
        let urls: Vec<String> = self.live().map(Server::url).collect();
        ClusterClient::builder(urls)
            .retries(20)
            .build()
            .and_then(|client| client.get_connection())
            .expect("cluster connection")
    }

    pub fn slot(&self, key: &str) -> u16 {
        let mut con = self.live().next().expect("a live node").client();
        ok::<i64>(&mut con, &["CLUSTER", "KEYSLOT", key]) as u16
    }

    /// The index of the live master serving `slot`.
    pub fn owner(&self, slot: u16) -> usize {
        self.nodes
            .iter()
            .position(|node| {
                node.is_running() && {
                    let mut con = node.client();
                    is_master(&mut con) && owns(&mut con, slot)
                }
            })
            .expect("a master for the slot")
    }

    /// The index of a live replica of the master at `master`.
    pub fn replica_of(&self, master: usize) -> usize {
        let id = self.id(master);
        self.nodes
            .iter()
            .position(|node| {
                node.is_running()
                    && server_info(&mut node.client(), "replication", "role").as_deref()
                        == Some("slave")
                    && {
                        let nodes: String = ok(&mut node.client(), &["CLUSTER", "NODES"]);
                        nodes
                            .lines()
                            .any(|line| line.contains("myself") && line.contains(&id))
                    }
            })
            .expect("a replica of the master")
    }

    pub fn id(&self, index: usize) -> String {
        ok(&mut self.nodes[index].client(), &["CLUSTER", "MYID"])
    }

    pub fn con(&self, index: usize) -> Connection {
        self.nodes[index].client()
    }
}

pub fn is_master(con: &mut Connection) -> bool {
    server_info(con, "replication", "role").as_deref() == Some("master")
}

fn owns(con: &mut Connection, slot: u16) -> bool {
    let slots: Vec<Vec<redis::Value>> = ok(con, &["CLUSTER", "SLOTS"]);
    let myself: String = ok(con, &["CLUSTER", "MYID"]);
    slots.iter().any(|range| {
        let bounds: Option<(i64, i64)> = match (range.first(), range.get(1)) {
            (Some(redis::Value::Int(start)), Some(redis::Value::Int(end))) => Some((*start, *end)),
            _ => None,
        };
        let master_id = match range.get(2) {
            Some(redis::Value::Array(master)) => master
                .get(2)
                .and_then(|id| redis::from_redis_value::<String>(id.clone()).ok()),
            _ => None,
        };
        bounds.is_some_and(|(start, end)| (start..=end).contains(&i64::from(slot)))
            && master_id.as_deref() == Some(myself.as_str())
    })
}
