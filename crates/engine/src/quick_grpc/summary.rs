//! The gRPC quick-mode summary, computed from a [`RunResult`] alone (so `volley summary
//! run.json` prints it again): the terminal text, in `volley http`'s style with ghz's status
//! distribution, and `--json`.

use super::{
    CONNECTIONS_OPENED, DROPPED_REQUESTS, GRPC_CONNECTING, GRPC_ERRORS, GRPC_REQS,
    GRPC_REQ_CORRECTED, INTERRUPTED_REQUESTS, MISSED_STARTS,
};
use crate::summary::{
    latency_of, trend, write_data, write_header, write_latency_section, LatencyMs,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use volley_metrics::agg::TrendAgg;
use volley_metrics::{fmt, names, RunResult, TotalValue};

/// The `--json` document. Keys are stable; new keys may be added.
#[derive(Clone, Debug, Serialize)]
pub struct GrpcSummary {
    /// `ADDR/pkg.Service/Method`.
    pub name: String,
    pub duration_s: f64,
    /// Calls that ended (any status), connect failures included.
    pub requests: u64,
    pub requests_per_s: f64,
    /// Status name (`OK`, `UNAVAILABLE`, ...) → calls, as ghz's status code distribution.
    pub statuses: BTreeMap<String, u64>,
    /// Failures that are no status the server sent, by class: `connect`, `timeout` (the
    /// deadline passed), `reset`, `transport`.
    pub errors: BTreeMap<String, u64>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub connections_opened: u64,
    /// TCP + TLS + HTTP/2 handshake.
    pub connecting_ms: LatencyMs,
    /// Latency as the client saw it: in the open model from when each call was due
    /// (coordinated omission corrected), otherwise from its send.
    pub latency_ms: LatencyMs,
    /// From the actual send (`grpc_req_duration`).
    pub service_latency_ms: LatencyMs,
    /// Open model: the rate asked for (calls/s in total), else absent.
    pub target_rate: Option<f64>,
    pub missed_starts: u64,
    pub dropped_requests: u64,
    pub interrupted_requests: u64,
    pub interrupted: bool,
    pub started_at: String,
    pub peak_rss_bytes: Option<u64>,
    #[serde(skip)]
    latency: Option<TrendAgg>,
}

impl GrpcSummary {
    pub fn from_result(r: &RunResult) -> Result<GrpcSummary, String> {
        let tagged = |metric: &str, tag: &str| {
            let mut out = BTreeMap::new();
            for m in r.metrics_named(metric) {
                if let (TotalValue::Counter { sum, .. }, Some(v)) = (&m.value, m.tags.get(tag)) {
                    *out.entry(v.clone()).or_insert(0) += *sum as u64;
                }
            }
            out
        };
        let statuses = tagged(GRPC_REQS, "status");
        let errors = tagged(GRPC_ERRORS, "error");
        let service = trend(r, names::GRPC_REQ_DURATION)?;
        let corrected = trend(r, GRPC_REQ_CORRECTED)?.filter(|t| t.count > 0);
        let latency = corrected.or(service.clone());
        let d = r.meta.duration_s;
        let requests: u64 = statuses.values().sum();
        let target_rate = r
            .options
            .get("rate")
            .filter(|v| !v.is_null())
            .and_then(|v| serde_json::from_value::<crate::RateSchedule>(v.clone()).ok())
            .map(|s| s.mean_rate());
        let c = |name: &str| r.counter_sum(name) as u64;
        Ok(GrpcSummary {
            name: r.meta.name.clone(),
            duration_s: d,
            requests,
            requests_per_s: if d > 0.0 { requests as f64 / d } else { 0.0 },
            statuses,
            errors,
            bytes_sent: c(names::DATA_SENT),
            bytes_received: c(names::DATA_RECEIVED),
            connections_opened: c(CONNECTIONS_OPENED),
            connecting_ms: latency_of(trend(r, GRPC_CONNECTING)?.as_ref()),
            latency_ms: latency_of(latency.as_ref()),
            service_latency_ms: latency_of(service.as_ref()),
            target_rate,
            missed_starts: c(MISSED_STARTS),
            dropped_requests: c(DROPPED_REQUESTS),
            interrupted_requests: c(INTERRUPTED_REQUESTS),
            interrupted: r.meta.interrupted,
            started_at: r.meta.started_at.clone(),
            peak_rss_bytes: r.meta.peak_rss_bytes,
            latency,
        })
    }

    /// Failures that are no status the server sent (exit code 3 when any).
    pub fn errors_total(&self) -> u64 {
        self.errors.values().sum()
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// The terminal summary (`color`: ANSI colours). Names from the file are escaped.
    pub fn render_text(&self, color: bool) -> String {
        let mut o = String::new();
        use volley_metrics::text::escape_control as esc;
        let (b, r, z) = write_header(&mut o, color, &self.name, self.interrupted);
        let _ = writeln!(
            o,
            "  Calls:         {} in {:.2}s, {b}{:.1} calls/s{z}",
            self.requests, self.duration_s, self.requests_per_s
        );
        write_data(
            &mut o,
            self.bytes_sent,
            self.bytes_received,
            self.duration_s,
        );
        let cn = &self.connecting_ms;
        let _ = writeln!(
            o,
            "  Connections:   {} opened, connecting avg {}  p95 {}  max {}",
            self.connections_opened,
            fmt::ms(cn.avg),
            fmt::ms(cn.p95),
            fmt::ms(cn.max)
        );
        if self.interrupted_requests > 0 {
            let _ = writeln!(
                o,
                "  Interrupted:   {} calls in flight at the end",
                self.interrupted_requests
            );
        }
        if let Some(rss) = self.peak_rss_bytes {
            let _ = writeln!(o, "  Peak RSS:      {}", fmt::bytes(rss as f64));
        }
        if let Some(rate) = self.target_rate {
            let _ = writeln!(
                o,
                "  Open model:    target {rate:.1} calls/s, {} missed starts, {} dropped",
                self.missed_starts, self.dropped_requests
            );
        }
        write_latency_section(
            &mut o,
            "Latency",
            self.target_rate.is_some(),
            (&self.latency_ms, &self.service_latency_ms),
            self.latency.as_ref(),
            (b, z),
        );
        let _ = writeln!(o, "\n{b}Status code distribution{z}");
        for (name, n) in &self.statuses {
            let (c, e) = if name == "OK" { ("", "") } else { (r, z) };
            let _ = writeln!(o, "  {c}[{}]{e} {n} responses", esc(name));
        }
        if !self.errors.is_empty() {
            let _ = writeln!(o, "\n{b}{r}Errors{z}");
            for (class, n) in &self.errors {
                let _ = writeln!(o, "  {r}[{}]{z} {n}", esc(class));
            }
        }
        o
    }
}
