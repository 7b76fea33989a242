//! The consumer's figures in the Prometheus text format, served at
//! `/metrics` when `--metrics-addr` is given.

use prometheus::{
    Encoder, Gauge, GaugeVec, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder,
};
use std::sync::Arc;

pub struct Metrics {
    registry: Registry,
    /// Entries read from the streams: new, re-read or claimed.
    pub read: IntCounter,
    pub written: IntCounter,
    pub dead: IntCounter,
    /// Entries pending for this consumer, by stream.
    pub pending: IntGaugeVec,
    /// Entries in each stream the group has not read yet.
    pub lag: IntGaugeVec,
    /// Connections re-established, by `link` (redis, postgres).
    pub reconnects: IntCounterVec,
    /// Seconds the current outage of each `link` has lasted, 0 while up.
    pub outage: GaugeVec,
    /// With --wait-replicas: seconds a page has been held back for the
    /// replicas so far, 0 while none is.
    pub replication_wait: Gauge,
    /// Pages found not yet held by enough replicas (each try counts).
    pub held_back: IntCounter,
}

impl Metrics {
    pub fn new() -> Metrics {
        let registry =
            Registry::new_custom(Some("seckill_orders".into()), None).unwrap_or_default();
        let counter = |name: &str, help: &str| {
            let counter = IntCounter::new(name, help).expect("a fixed, valid metric definition");
            let _ = registry.register(Box::new(counter.clone()));
            counter
        };
        let read = counter(
            "entries_read_total",
            "Stream entries read, re-read or claimed",
        );
        let written = counter("rows_written_total", "Order rows committed to PostgreSQL");
        let dead = counter(
            "dead_lettered_total",
            "Entries sent to a dead-letter stream",
        );
        let gauge = |name: &str, help: &str| {
            let gauge = IntGaugeVec::new(Opts::new(name, help), &["stream"])
                .expect("a fixed, valid metric definition");
            let _ = registry.register(Box::new(gauge.clone()));
            gauge
        };
        let pending = gauge("pending_entries", "Entries pending for this consumer");
        let lag = gauge("lag_entries", "Entries the group has not read yet");
        let reconnects = IntCounterVec::new(
            Opts::new(
                "reconnects_total",
                "Connections re-established after an outage",
            ),
            &["link"],
        )
        .expect("a fixed, valid metric definition");
        let _ = registry.register(Box::new(reconnects.clone()));
        let outage = GaugeVec::new(
            Opts::new(
                "outage_seconds",
                "How long the current outage of the link has lasted, 0 while it is up",
            ),
            &["link"],
        )
        .expect("a fixed, valid metric definition");
        let _ = registry.register(Box::new(outage.clone()));
        for link in ["redis", "postgres"] {
            outage.with_label_values(&[link]).set(0.0);
        }
        let held_back = counter(
            "pages_held_back_total",
            "Pages left pending because too few replicas held them (--wait-replicas)",
        );
        let replication_wait = Gauge::new(
            "replication_wait_seconds",
            "How long the consumer has been waiting for replicas to hold a page",
        )
        .expect("a fixed, valid metric definition");
        let _ = registry.register(Box::new(replication_wait.clone()));
        Metrics {
            registry,
            read,
            written,
            dead,
            pending,
            lag,
            reconnects,
            outage,
            replication_wait,
            held_back,
        }
    }

    /// Everything in the Prometheus text format.
    pub fn text(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        out
    }

    /// Serves `/metrics` on `addr` from a thread of its own.
    pub fn serve(self: &Arc<Self>, addr: &str) -> Result<(), String> {
        let server = tiny_http::Server::http(addr).map_err(|err| format!("{addr}: {err}"))?;
        let metrics = Arc::clone(self);
        std::thread::spawn(move || {
            for request in server.incoming_requests() {
                let response = if request.url() == "/metrics" {
                    let content_type =
                        tiny_http::Header::from_bytes("Content-Type", "text/plain; version=0.0.4")
                            .ok();
                    let mut response = tiny_http::Response::from_data(metrics.text());
                    if let Some(content_type) = content_type {
                        response.add_header(content_type);
                    }
                    response
                } else {
                    tiny_http::Response::from_data(b"not found\n".to_vec()).with_status_code(404)
                };
                let _ = request.respond(response);
            }
        });
        Ok(())
    }
}
