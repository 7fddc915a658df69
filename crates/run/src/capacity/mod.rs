//! Capacity: load sweeps and the breaking-point search, as sequences of ordinary runs on the
//! one run pipeline (`volley http --sweep`, `--find-max-rate`). Nothing here starts a run:
//! the caller passes a *probe* (run the load at this level, return its result) and this
//! module decides which levels to run, judges each step and writes the result file's
//! `capacity` section ([`volley_metrics::capacity`]). Method: `docs/capacity.md`.
//!
//! # Layout
//!
//! - this file: [`Probe`], a step's figures from a run's result ([`step_of`]), the table,
//!   small parsers shared by the flags.
//! - [`slo`]: the SLO grammar and its verdict on a step.
//! - [`knee`]: where latency starts growing much faster than throughput.
//! - [`busy`]: how busy the generator's own threads were (running or waiting for a CPU).
//! - [`judge`]: a probe's verdict: within the SLO, broken, broken hard (stop now), or not
//!   measurable because the load generator itself was the limit.
//! - [`plan`]: a sweep or a search as asked for ([`plan::Plan`], driven by a probe) and
//!   the run's outcome from its finding — shared by the CLI's flags and suite steps.
//! - [`probe`]: the quick-mode [`Probe`]: a warm-up and a measured run per step.
//! - [`scale`]: a plan's load scaled by a factor (scripts: arrival rates, VUs).
//! - [`search`]: geometric growth, bisection, the confirming run.
//! - [`sweep`]: `--sweep rate=A:B:STEP`, `connections=…`, `vus=…`.

pub mod busy;
pub mod judge;
pub mod knee;
pub mod plan;
pub mod probe;
pub mod scale;
pub mod search;
pub mod slo;
pub mod sweep;

use volley_metrics::capacity::{Capacity, Step};
use volley_metrics::{names, RunResult, TotalValue};

/// Runs one step: the load at `load` (requests/s, connections or VUs) for a warm-up and a
/// measured window, returning the measured run's result (with the process CPU it used).
pub trait Probe {
    fn run(&mut self, load: f64, role: &str) -> Result<Probed, String>;
    /// The user stopped the test (Ctrl-C): no further steps.
    fn stopped(&self) -> bool;
    /// Told about every finished step (progress output).
    fn step_done(&mut self, _step: &Step) {}
}

/// A probe's measured run.
pub struct Probed {
    pub result: RunResult,
    /// How busy Volley's busiest `threads` threads were during the measured window (0..1,
    /// running or waiting for a CPU; [`busy`]); None where unmeasured.
    pub generator_busy: Option<f64>,
    /// Worker threads the generator ran (for judging its CPU).
    pub threads: usize,
    /// The load is requests per second, comparable with the measured throughput (quick
    /// mode's rate); otherwise (iterations/s, VUs, connections) only dropped starts tell an
    /// unsustained load.
    pub comparable: bool,
}

/// A step's figures from its measured run.
pub fn step_of(p: &Probed, load: f64, role: &str) -> Step {
    let r = &p.result;
    let mut requests = 0u64;
    let (mut ok, mut refused) = (0u64, 0u64);
    for m in r.metrics_named(names::HTTP_REQS) {
        let TotalValue::Counter { sum, .. } = m.value else {
            continue;
        };
        let n = sum as u64;
        requests += n;
        match (m.tags.get("status"), m.tags.get("error")) {
            (Some(code), _) if code.parse::<u16>().is_ok_and(|c| (200..400).contains(&c)) => {
                ok += n
            }
            (_, Some(class)) if class == "refused" => refused += n,
            _ => {}
        }
    }
    let latency = trend(r, volley_engine::quick::HTTP_REQ_CORRECTED)
        .or_else(|| trend(r, names::HTTP_REQ_DURATION));
    let service = trend(r, names::HTTP_REQ_DURATION);
    let d = r.meta.duration_s;
    let pct = |t: &Option<(volley_metrics::agg::TrendAgg, String)>, q: f64| {
        t.as_ref().map_or(0.0, |(t, _)| t.percentile(q))
    };
    let per_second = r
        .series
        .points
        .iter()
        .filter(|pt| pt.w > 0)
        .map(|pt| pt.counter_sum(names::HTTP_REQS) / pt.w as f64)
        .collect();
    let monitor = volley_monitor::summarize(r);
    let first = monitor.values().next();
    Step {
        load,
        role: role.to_string(),
        duration_s: d,
        requests,
        throughput: if d > 0.0 { requests as f64 / d } else { 0.0 },
        error_rate: if requests > 0 {
            1.0 - ok as f64 / requests as f64
        } else {
            0.0
        },
        p50_ms: pct(&latency, 50.0),
        p95_ms: pct(&latency, 95.0),
        p99_ms: pct(&latency, 99.0),
        max_ms: latency.as_ref().map_or(0.0, |(t, _)| t.max),
        service_p99_ms: pct(&service, 99.0),
        missed_starts: r.counter_sum("missed_starts") as u64,
        dropped: (r.counter_sum("dropped_requests") + r.counter_sum(names::DROPPED_ITERATIONS))
            as u64,
        refused,
        generator_busy: p.generator_busy,
        target_cpu_percent: first.and_then(|t| t.cpu_mean_percent),
        target_rss_bytes: first.and_then(|t| t.memory_peak_bytes),
        slo_ok: None,
        why: String::new(),
        per_second,
        hist: latency.map(|(_, h)| h).unwrap_or_default(),
    }
}

/// A trend over all its tag sets (quick mode records it untagged, scripts per status, URL
/// name …) and its encoded histogram.
fn trend(r: &RunResult, name: &str) -> Option<(volley_metrics::agg::TrendAgg, String)> {
    let mut all: Option<volley_metrics::agg::TrendAgg> = None;
    for m in r.metrics_named(name) {
        if let Ok(volley_metrics::Agg::Trend(t)) = m.to_agg() {
            match &mut all {
                Some(a) => a.merge(&t),
                None => all = Some(*t),
            }
        }
    }
    let t = all.filter(|t| t.count > 0)?;
    let hist = t.hist.encode();
    Some((t, hist))
}

/// `50ms`, `1.5s`, `800us`, `250µs` → milliseconds.
pub fn parse_ms(s: &str) -> Option<f64> {
    let s = s.trim();
    let (num, scale) = [
        ("ms", 1.0),
        ("us", 1e-3),
        ("µs", 1e-3),
        ("s", 1e3),
        ("m", 60e3),
    ]
    .iter()
    .find_map(|(u, k)| s.strip_suffix(u).map(|n| (n, *k)))?;
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v > 0.0).then_some(v * scale)
}

/// A rate with thousands separators: `8,400/s`, `12.5/s`.
pub fn rate_text(v: f64) -> String {
    volley_metrics::fmt::rate(v)
}

/// The load of a step as shown: a rate, or a count of connections/VUs.
pub fn load_text(variable: &str, v: f64) -> String {
    match variable {
        "rate" => rate_text(v),
        _ => format!("{} {variable}", volley_metrics::fmt::num(v)),
    }
}

/// The steps as a text table (load, throughput, percentiles, errors, target CPU/RSS), the
/// knee marked.
pub fn table(c: &Capacity) -> String {
    use std::fmt::Write as _;
    let fmt_ms = volley_metrics::fmt::ms;
    let monitored = c.steps.iter().any(|s| s.target_cpu_percent.is_some());
    let mut o = String::new();
    let _ = write!(
        o,
        "  {:<10} {:<8} {:>11} {:>9} {:>9} {:>9} {:>7}",
        c.variable, "step", "throughput", "p50", "p95", "p99", "errors"
    );
    if monitored {
        let _ = write!(o, " {:>8} {:>10}", "cpu", "rss");
    }
    o.push('\n');
    for (i, s) in c.steps.iter().enumerate() {
        let load = match c.variable.as_str() {
            "rate" => rate_text(s.load),
            _ => volley_metrics::fmt::num(s.load),
        };
        let _ = write!(
            o,
            "  {:<10} {:<8} {:>11} {:>9} {:>9} {:>9} {:>6}%",
            load,
            s.role,
            rate_text(s.throughput),
            fmt_ms(s.p50_ms),
            fmt_ms(s.p95_ms),
            fmt_ms(s.p99_ms),
            volley_metrics::fmt::short(s.error_rate * 100.0)
        );
        if monitored {
            let cpu = s
                .target_cpu_percent
                .map_or("-".into(), |v| format!("{v:.0}%"));
            let rss = s
                .target_rss_bytes
                .map_or("-".into(), volley_metrics::fmt::bytes);
            let _ = write!(o, " {cpu:>8} {rss:>10}");
        }
        let mut notes = Vec::new();
        if c.knee == Some(i) {
            notes.push("◀ knee".to_string());
        }
        match s.slo_ok {
            Some(true) => notes.push("SLO ok".into()),
            Some(false) => notes.push(format!("SLO broken: {}", s.why)),
            None if !s.why.is_empty() => notes.push(s.why.clone()),
            None => {}
        }
        if !notes.is_empty() {
            let _ = write!(o, "  {}", notes.join("; "));
        }
        o.push('\n');
    }
    o
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A step with the figures the judges read.
    pub(crate) fn step(load: f64, throughput: f64, p99: f64, err: f64) -> Step {
        Step {
            load,
            role: "sweep".into(),
            duration_s: 5.0,
            requests: (throughput * 5.0) as u64,
            throughput,
            error_rate: err,
            p50_ms: p99 / 2.0,
            p95_ms: p99 * 0.9,
            p99_ms: p99,
            max_ms: p99 * 1.5,
            service_p99_ms: p99,
            missed_starts: 0,
            dropped: 0,
            refused: 0,
            generator_busy: None,
            target_cpu_percent: None,
            target_rss_bytes: None,
            slo_ok: None,
            why: String::new(),
            per_second: vec![throughput; 5],
            hist: String::new(),
        }
    }

    #[test]
    fn durations_and_rates_read_and_print_as_people_write_them() {
        assert_eq!(parse_ms("50ms"), Some(50.0));
        assert_eq!(parse_ms("1.5s"), Some(1500.0));
        assert_eq!(parse_ms("800us"), Some(0.8));
        assert_eq!(parse_ms("0ms"), None);
        assert_eq!(parse_ms("fast"), None);
        assert_eq!(rate_text(8400.0), "8,400/s");
        assert_eq!(rate_text(1_234_567.0), "1,234,567/s");
        assert_eq!(rate_text(12.5), "12.5/s");
    }
}
