//! The WebSocket quick-mode summary, computed from a [`RunResult`] alone (so `volley summary
//! run.json` prints it again): the terminal text, in `volley http`'s style, and `--json`.

use super::{
    DROPPED, MISSED_STARTS, WS_ERRORS, WS_RTT, WS_RTT_CORRECTED, WS_UNANSWERED, WS_UNMATCHED,
};
use crate::summary::{
    latency_of, trend, write_data, write_header, write_histogram, write_latency, LatencyMs,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use volley_metrics::agg::TrendAgg;
use volley_metrics::{fmt, names, RunResult, TotalValue};

/// The `--json` document. Keys are stable; new keys may be added.
#[derive(Clone, Debug, Serialize)]
pub struct WsSummary {
    pub url: String,
    pub duration_s: f64,
    pub messages_sent: u64,
    pub messages_received: u64,
    /// Echoes matched per second of the run.
    pub msgs_per_s: f64,
    /// Sent messages whose echo never came.
    pub unanswered: u64,
    /// Received messages that matched no send.
    pub unmatched: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Sessions opened (successful upgrades, reconnects included).
    pub sessions: u64,
    /// TCP + TLS + upgrade.
    pub connecting_ms: LatencyMs,
    /// Round trip as the client saw it: in the open model from when each message was due
    /// (coordinated omission corrected), otherwise from its send.
    pub rtt_ms: LatencyMs,
    /// Round trip from the actual send.
    pub service_rtt_ms: LatencyMs,
    /// Open model: the rate asked for (messages/s in total), else absent.
    pub target_rate: Option<f64>,
    pub missed_starts: u64,
    /// Open model with `--inflight`: messages due before the end that were never sent.
    pub dropped: u64,
    /// Error class → count: a connect error's class (refused, timeout, tls, dns ...),
    /// `handshake STATUS` for a refused upgrade, `closed CODE` for a close by the peer,
    /// `timeout` for an echo later than `--timeout`, `write` for a failed send.
    pub errors: BTreeMap<String, u64>,
    pub interrupted: bool,
    pub started_at: String,
    pub peak_rss_bytes: Option<u64>,
    #[serde(skip)]
    rtt: Option<TrendAgg>,
}

impl WsSummary {
    pub fn from_result(r: &RunResult) -> Result<WsSummary, String> {
        let mut errors = BTreeMap::new();
        for m in r.metrics_named(WS_ERRORS) {
            if let (TotalValue::Counter { sum, .. }, Some(class)) = (&m.value, m.tags.get("error"))
            {
                *errors.entry(class.clone()).or_insert(0) += *sum as u64;
            }
        }
        let service = trend(r, WS_RTT)?;
        let corrected = trend(r, WS_RTT_CORRECTED)?.filter(|t| t.count > 0);
        let rtt = corrected.or(service.clone());
        let d = r.meta.duration_s;
        let matched = service.as_ref().map_or(0, |t| t.count);
        let target_rate = r
            .options
            .get("rate")
            .filter(|v| !v.is_null())
            .and_then(|v| serde_json::from_value::<crate::RateSchedule>(v.clone()).ok())
            .map(|s| s.mean_rate());
        let c = |name: &str| r.counter_sum(name) as u64;
        Ok(WsSummary {
            url: r.meta.name.clone(),
            duration_s: d,
            messages_sent: c(names::WS_MSGS_SENT),
            messages_received: c(names::WS_MSGS_RECEIVED),
            msgs_per_s: if d > 0.0 { matched as f64 / d } else { 0.0 },
            unanswered: c(WS_UNANSWERED),
            unmatched: c(WS_UNMATCHED),
            bytes_sent: c(names::DATA_SENT),
            bytes_received: c(names::DATA_RECEIVED),
            sessions: c(names::WS_SESSIONS),
            connecting_ms: latency_of(trend(r, names::WS_CONNECTING)?.as_ref()),
            rtt_ms: latency_of(rtt.as_ref()),
            service_rtt_ms: latency_of(service.as_ref()),
            target_rate,
            missed_starts: c(MISSED_STARTS),
            dropped: c(DROPPED),
            errors,
            interrupted: r.meta.interrupted,
            started_at: r.meta.started_at.clone(),
            peak_rss_bytes: r.meta.peak_rss_bytes,
            rtt,
        })
    }

    /// Is this a WebSocket quick run's result?
    pub fn is_ws(r: &RunResult) -> bool {
        r.meta.mode == super::RUN_KIND
    }

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
        let (b, r, z) = write_header(&mut o, color, &self.url, self.interrupted);
        let _ = writeln!(
            o,
            "  Messages:      {} sent, {} received in {:.2}s, {b}{:.1} msg/s{z} round trips",
            self.messages_sent, self.messages_received, self.duration_s, self.msgs_per_s
        );
        if self.unanswered + self.unmatched > 0 {
            let _ = writeln!(
                o,
                "  Unanswered:    {} sent without an echo, {} received matching no send",
                self.unanswered, self.unmatched
            );
        }
        write_data(
            &mut o,
            self.bytes_sent,
            self.bytes_received,
            self.duration_s,
        );
        let cn = &self.connecting_ms;
        let _ = writeln!(
            o,
            "  Sessions:      {} opened, connecting avg {}  p95 {}  max {}",
            self.sessions,
            fmt::ms(cn.avg),
            fmt::ms(cn.p95),
            fmt::ms(cn.max)
        );
        if let Some(rss) = self.peak_rss_bytes {
            let _ = writeln!(o, "  Peak RSS:      {}", fmt::bytes(rss as f64));
        }
        if let Some(rate) = self.target_rate {
            let _ = writeln!(
                o,
                "  Open model:    target {rate:.1} msg/s, {} missed starts, {} dropped",
                self.missed_starts, self.dropped
            );
            let _ = writeln!(
                o,
                "\n{b}Round trip{z} (from when each message was due: coordinated omission corrected)"
            );
        } else {
            let _ = writeln!(o, "\n{b}Round trip{z}");
        }
        write_latency(&mut o, &self.rtt_ms);
        if self.target_rate.is_some() {
            let l = &self.service_rtt_ms;
            let _ = writeln!(
                o,
                "  from the actual send: avg {}  p50 {}  p95 {}  p99 {}  max {}",
                fmt::ms(l.avg),
                fmt::ms(l.p50),
                fmt::ms(l.p95),
                fmt::ms(l.p99),
                fmt::ms(l.max)
            );
        }
        if let Some(t) = &self.rtt {
            write_histogram(&mut o, t, b, z);
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
