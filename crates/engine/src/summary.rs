//! The quick-mode summary, computed from a [`RunResult`] alone: the terminal text and the
//! `--json` document (its keys are documented in `docs/quick-mode.md` and relied on by CI).

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use volley_metrics::agg::TrendAgg;
use volley_metrics::fmt;
use volley_metrics::fmt::ms;
use volley_metrics::{Agg, RunResult, TagSet, TotalValue};

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct OpenModel {
    /// Mean rate the schedule asked for (requests/s).
    pub target_rps: f64,
    /// Requests started per second of the run.
    pub achieved_rps: f64,
    /// Requests that started late because no connection was free when they were due.
    pub missed_starts: u64,
    /// Requests that fell due before the run stopped but were never started.
    pub dropped: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LatencyMs {
    pub min: f64,
    pub avg: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

/// The `--json` document. Keys are stable; new keys may be added.
#[derive(Clone, Debug, Serialize)]
pub struct QuickSummary {
    pub url: String,
    /// Requests that finished, with a response or with an error.
    pub requests: u64,
    pub rps: f64,
    pub duration_s: f64,
    /// Share of requests answered with a status in 200..=399.
    pub success_rate: f64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Latency as the client saw it: in the open model measured from when each request was
    /// due (coordinated omission corrected), otherwise the same as `service_latency_ms`.
    pub latency_ms: LatencyMs,
    /// Service time: from each request's actual send to its last response byte.
    pub service_latency_ms: LatencyMs,
    /// Open-model figures (`-q`/`--rate-stages`), absent in the closed model.
    pub open_model: Option<OpenModel>,
    /// Status code → count (responses only).
    pub status: BTreeMap<String, u64>,
    /// Error class → count (requests that got no response).
    pub errors: BTreeMap<String, u64>,
    pub connections_opened: u64,
    /// Requests still in flight when the run ended (cut at the `-z` deadline after a short
    /// grace, or abandoned by a second Ctrl-C): neither responses nor errors, not in `rps`.
    pub interrupted_requests: u64,
    pub interrupted: bool,
    pub started_at: String,
    pub peak_rss_bytes: Option<u64>,
    /// Watched targets (`--monitor`) by their `target` tag; absent when nothing was watched.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub monitor: BTreeMap<String, volley_monitor::TargetSummary>,
    #[serde(skip)]
    latency: Option<TrendAgg>,
}

impl QuickSummary {
    pub fn from_result(r: &RunResult) -> Result<QuickSummary, String> {
        let mut status = BTreeMap::new();
        let mut errors = BTreeMap::new();
        let mut requests = 0u64;
        for m in r.metrics_named(volley_metrics::names::HTTP_REQS) {
            let TotalValue::Counter { sum, .. } = m.value else {
                continue;
            };
            let n = sum as u64;
            requests += n;
            if let Some(code) = m.tags.get("status") {
                *status.entry(code.clone()).or_insert(0) += n;
            } else if let Some(class) = m.tags.get("error") {
                *errors.entry(class.clone()).or_insert(0) += n;
            }
        }
        let ok: u64 = status
            .iter()
            .filter(|(c, _)| c.parse::<u16>().is_ok_and(|c| (200..400).contains(&c)))
            .map(|(_, n)| n)
            .sum();
        let latency = trend(r, volley_metrics::names::HTTP_REQ_DURATION)?;
        let corrected = trend(r, "http_req_corrected")?.filter(|t| t.count > 0);
        let service = latency_of(latency.as_ref());
        let lat = match &corrected {
            Some(c) => latency_of(Some(c)),
            None => service.clone(),
        };
        let open_model = r.options.get("rate").filter(|v| !v.is_null()).map(|v| {
            let target_rps = serde_json::from_value::<crate::RateSchedule>(v.clone())
                .map_or(0.0, |s| s.mean_rate());
            OpenModel {
                target_rps,
                achieved_rps: if r.meta.duration_s > 0.0 {
                    requests as f64 / r.meta.duration_s
                } else {
                    0.0
                },
                missed_starts: r.counter_sum("missed_starts") as u64,
                dropped: r.counter_sum("dropped_requests") as u64,
            }
        });
        let d = r.meta.duration_s;
        Ok(QuickSummary {
            url: r.meta.name.clone(),
            requests,
            rps: if d > 0.0 { requests as f64 / d } else { 0.0 },
            duration_s: d,
            success_rate: if requests > 0 {
                ok as f64 / requests as f64
            } else {
                0.0
            },
            bytes_sent: r.counter_sum(volley_metrics::names::DATA_SENT) as u64,
            bytes_received: r.counter_sum(volley_metrics::names::DATA_RECEIVED) as u64,
            latency_ms: lat,
            service_latency_ms: service,
            open_model,
            status,
            errors,
            connections_opened: r.counter_sum("connections_opened") as u64,
            interrupted_requests: r.counter_sum("interrupted_requests") as u64,
            interrupted: r.meta.interrupted,
            started_at: r.meta.started_at.clone(),
            peak_rss_bytes: r.meta.peak_rss_bytes,
            monitor: volley_monitor::summarize(r),
            latency: corrected.or(latency),
        })
    }

    pub fn transport_errors(&self) -> u64 {
        self.errors.values().sum()
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// The terminal summary. `color` adds ANSI colours (only when stdout is a terminal).
    /// The terminal summary. Names from the file (URL, status, error class) are shown with
    /// control characters escaped: a crafted file cannot drive the terminal.
    pub fn render_text(&self, color: bool) -> String {
        use volley_metrics::text::escape_control as esc;
        let (b, g, y, r, z) = if color {
            ("\x1b[1m", "\x1b[32m", "\x1b[33m", "\x1b[31m", "\x1b[0m")
        } else {
            ("", "", "", "", "")
        };
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{b}Summary{z}  {}{}",
            esc(&self.url),
            if self.interrupted {
                "  (interrupted)"
            } else {
                ""
            }
        );
        let _ = writeln!(
            o,
            "  Requests:      {} in {:.2}s, {b}{:.1} req/s{z}",
            self.requests, self.duration_s, self.rps
        );
        write_data(
            &mut o,
            self.bytes_sent,
            self.bytes_received,
            self.duration_s,
        );
        let sc = if self.success_rate >= 0.999 {
            g
        } else if self.success_rate >= 0.9 {
            y
        } else {
            r
        };
        let _ = writeln!(
            o,
            "  Success rate:  {sc}{:.2}%{z}  (status 200-399)",
            self.success_rate * 100.0
        );
        let _ = writeln!(o, "  Connections:   {} opened", self.connections_opened);
        if self.interrupted_requests > 0 {
            let _ = writeln!(
                o,
                "  Interrupted:   {} requests in flight at the end, cut without a response",
                self.interrupted_requests
            );
        }
        if let Some(rss) = self.peak_rss_bytes {
            let _ = writeln!(o, "  Peak RSS:      {}", fmt::bytes(rss as f64));
        }
        if let Some(m) = &self.open_model {
            let _ = writeln!(
                o,
                "  Open model:    target {:.1} req/s, achieved {:.1} req/s, {} missed starts, {} dropped",
                m.target_rps, m.achieved_rps, m.missed_starts, m.dropped
            );
        }
        let l = &self.latency_ms;
        if self.open_model.is_some() {
            let _ = writeln!(
                o,
                "\n{b}Latency{z} (from when each request was due: coordinated omission corrected)"
            );
        } else {
            let _ = writeln!(o, "\n{b}Latency{z}");
        }
        write_latency(&mut o, l);
        if self.open_model.is_some() {
            let l = &self.service_latency_ms;
            let _ = writeln!(
                o,
                "  service time (from the actual send): avg {}  p50 {}  p95 {}  p99 {}  max {}",
                ms(l.avg),
                ms(l.p50),
                ms(l.p95),
                ms(l.p99),
                ms(l.max)
            );
        }
        if let Some(t) = self.latency.as_ref() {
            write_histogram(&mut o, t, b, z);
        }
        if !self.status.is_empty() {
            let _ = writeln!(o, "\n{b}Status codes{z}");
            for (code, n) in &self.status {
                let c = match code.as_bytes().first() {
                    Some(b'2') | Some(b'3') => g,
                    Some(b'4') => y,
                    _ => r,
                };
                let _ = writeln!(o, "  {c}[{}]{z} {n} responses", esc(code));
            }
        }
        if !self.errors.is_empty() {
            let _ = writeln!(o, "\n{b}{r}Errors{z}");
            for (class, n) in &self.errors {
                let _ = writeln!(o, "  {r}[{}]{z} {n} requests", esc(class));
            }
        }
        o.push_str(&volley_monitor::summary::render_text(&self.monitor, b, z));
        o
    }
}

/// The first line of a quick summary ("Summary  NAME  (interrupted)") and the ANSI codes
/// (bold, red, reset) the rest of it uses; empty codes without `color`.
pub(crate) fn write_header(
    o: &mut String,
    color: bool,
    name: &str,
    interrupted: bool,
) -> (&'static str, &'static str, &'static str) {
    use volley_metrics::text::escape_control as esc;
    let (b, r, z) = if color {
        ("\x1b[1m", "\x1b[31m", "\x1b[0m")
    } else {
        ("", "", "")
    };
    let cut = if interrupted { "  (interrupted)" } else { "" };
    let _ = writeln!(o, "{b}Summary{z}  {}{cut}", esc(name));
    (b, r, z)
}

/// The summary's data line: bytes each way and their rates over `duration_s`.
pub(crate) fn write_data(o: &mut String, sent: u64, received: u64, duration_s: f64) {
    let d = duration_s.max(1e-9);
    let _ = writeln!(
        o,
        "  Data:          {} sent ({}/s), {} received ({}/s)",
        fmt::bytes(sent as f64),
        fmt::bytes(sent as f64 / d),
        fmt::bytes(received as f64),
        fmt::bytes(received as f64 / d),
    );
}

/// The two latency lines of a summary (avg/min/max, percentiles).
pub(crate) fn write_latency(o: &mut String, l: &LatencyMs) {
    let _ = writeln!(
        o,
        "  avg {}  min {}  max {}",
        ms(l.avg),
        ms(l.min),
        ms(l.max)
    );
    let _ = writeln!(
        o,
        "  p50 {}  p90 {}  p95 {}  p99 {}  p99.9 {}",
        ms(l.p50),
        ms(l.p90),
        ms(l.p95),
        ms(l.p99),
        ms(l.p999)
    );
}

/// A quick summary's latency section: the heading (in the open model, latency from each
/// request's due time, then the service time from the actual send as one line), the
/// percentiles and the histogram of `shown`.
pub(crate) fn write_latency_section(
    o: &mut String,
    title: &str,
    open: bool,
    (shown, service): (&LatencyMs, &LatencyMs),
    hist: Option<&TrendAgg>,
    (b, z): (&str, &str),
) {
    if open {
        let _ = writeln!(
            o,
            "\n{b}{title}{z} (from when each was due: coordinated omission corrected)"
        );
    } else {
        let _ = writeln!(o, "\n{b}{title}{z}");
    }
    write_latency(o, shown);
    if open {
        let l = service;
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
    if let Some(t) = hist {
        write_histogram(o, t, b, z);
    }
}

/// The latency histogram section (nothing when `t` is empty); `b`/`z`: bold on/off.
pub(crate) fn write_histogram(o: &mut String, t: &TrendAgg, b: &str, z: &str) {
    if t.count == 0 {
        return;
    }
    let _ = writeln!(o, "\n{b}Latency histogram{z}");
    for (upper, n) in histogram_rows(t, 10) {
        let max = t.count.max(1) as f64;
        let bar = "■".repeat(((n as f64 / max) * 40.0).ceil() as usize);
        let _ = writeln!(o, "  ≤ {:>10} [{n:>9}] {bar}", ms(upper));
    }
}

pub(crate) fn trend(r: &RunResult, name: &str) -> Result<Option<TrendAgg>, String> {
    match r.metric(name, &TagSet::new()) {
        Some(m) => match m.to_agg()? {
            Agg::Trend(t) => Ok(Some(*t)),
            _ => Ok(None),
        },
        None => Ok(None),
    }
}

pub(crate) fn latency_of(t: Option<&TrendAgg>) -> LatencyMs {
    match t {
        Some(t) if t.count > 0 => LatencyMs {
            min: t.min,
            avg: t.mean(),
            p50: t.percentile(50.0),
            p90: t.percentile(90.0),
            p95: t.percentile(95.0),
            p99: t.percentile(99.0),
            p999: t.percentile(99.9),
            max: t.max,
        },
        _ => LatencyMs {
            min: 0.0,
            avg: 0.0,
            p50: 0.0,
            p90: 0.0,
            p95: 0.0,
            p99: 0.0,
            p999: 0.0,
            max: 0.0,
        },
    }
}

/// `rows` buckets between min and max (log-spaced when the range spans a decade or more, so a
/// long tail does not squash everything into the first bucket): (upper bound ms, count).
fn histogram_rows(t: &TrendAgg, rows: usize) -> Vec<(f64, u64)> {
    let (lo, hi) = (t.min.max(0.001), t.max.max(0.001));
    let (bounds, _) = volley_metrics::agg::display_bounds(lo, hi, rows);
    let counts = t.bucket_counts(&bounds);
    bounds.into_iter().zip(counts).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_metrics::{Aggregator, MetricKey, MetricKind, Recorder, RunMeta, Unit};

    fn result() -> RunResult {
        let mut rec = Recorder::new();
        let ok = rec.handle(
            MetricKey::tagged("http_reqs", &[("status", "200")]),
            MetricKind::Counter,
            Unit::Default,
        );
        let nf = rec.handle(
            MetricKey::tagged("http_reqs", &[("status", "404")]),
            MetricKind::Counter,
            Unit::Default,
        );
        let er = rec.handle(
            MetricKey::tagged("http_reqs", &[("error", "timeout")]),
            MetricKind::Counter,
            Unit::Default,
        );
        let d = rec.handle(
            MetricKey::new("http_req_duration"),
            MetricKind::Trend,
            Unit::Time,
        );
        let rx = rec.handle(
            MetricKey::new("data_received"),
            MetricKind::Counter,
            Unit::Data,
        );
        for i in 0..90 {
            rec.add(ok, 1.0);
            rec.trend_us(d, 1000 + i * 100);
            rec.add(rx, 100.0);
        }
        for _ in 0..8 {
            rec.add(nf, 1.0);
            rec.trend_us(d, 50_000);
        }
        rec.add(er, 2.0);
        let mut agg = Aggregator::new(1, 10);
        agg.add(0, 0, rec.snapshot());
        let (metrics, series) = agg.finish();
        let meta = RunMeta {
            mode: "http".into(),
            name: "http://x/".into(),
            duration_s: 2.0,
            ..Default::default()
        };
        RunResult::new(meta, serde_json::Value::Null, metrics, series)
    }

    #[test]
    fn summary_counts_statuses_errors_and_rates() {
        let s = QuickSummary::from_result(&result()).unwrap();
        assert_eq!(s.requests, 100);
        assert_eq!(s.status["200"], 90);
        assert_eq!(s.status["404"], 8);
        assert_eq!(s.errors["timeout"], 2);
        assert_eq!(s.rps, 50.0);
        assert!((s.success_rate - 0.9).abs() < 1e-9);
        assert_eq!(s.bytes_received, 9000);
        assert_eq!(s.latency_ms.min, 1.0);
        assert_eq!(s.latency_ms.max, 50.0);
        assert!(
            s.latency_ms.p50 > 5.0 && s.latency_ms.p50 < 6.0,
            "{}",
            s.latency_ms.p50
        );
        let j = s.to_json();
        for k in [
            "requests",
            "rps",
            "duration_s",
            "success_rate",
            "bytes_sent",
            "bytes_received",
            "latency_ms",
            "status",
            "errors",
        ] {
            assert!(j.get(k).is_some(), "missing key {k}");
        }
        for k in ["min", "avg", "p50", "p90", "p95", "p99", "p999", "max"] {
            assert!(j["latency_ms"].get(k).is_some(), "missing latency key {k}");
        }
    }

    #[test]
    fn text_shows_every_section() {
        let s = QuickSummary::from_result(&result()).unwrap();
        let t = s.render_text(false);
        for needle in [
            "100 in 2.00s",
            "50.0 req/s",
            "Success rate:  90.00%",
            "[404] 8",
            "[timeout] 2",
            "p99.9",
            "Latency histogram",
        ] {
            assert!(t.contains(needle), "missing {needle:?} in\n{t}");
        }
        assert!(!t.contains('\x1b'), "no colour codes unless asked");
        let hist_total: u64 = histogram_rows(s.latency.as_ref().unwrap(), 10)
            .iter()
            .map(|(_, n)| n)
            .sum();
        assert_eq!(hist_total, 98, "every response lands in one histogram row");
    }

    #[test]
    fn units() {
        assert_eq!(ms(0.25), "250µs");
        assert_eq!(ms(12.345), "12.35ms");
        assert_eq!(ms(1500.0), "1.50s");
        assert_eq!(fmt::bytes(1536.0), "1.50 KiB");
    }
}
