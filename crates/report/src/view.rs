//! Figures out of a result file: whole-run totals (exact, from the metrics section) and
//! per-interval values (from the series). The report's tables and charts and the comparison's
//! verdicts all read figures through here, so they cannot disagree on what "p95" or "rate"
//! means.

use serde::Serialize;
use volley_metrics::fmt;
use volley_metrics::series::Stat;
use volley_metrics::{Agg, Point, RunResult, TagSet, Unit};

/// One number that describes a metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    /// Counters: amount per second (requests/s, bytes/s).
    Rate,
    P50,
    P90,
    P95,
    P99,
    Avg,
    Max,
    /// Rate metrics: share of true samples, in percent (http_req_failed: the error rate).
    ErrorRate,
    /// Gauges: the last value.
    Last,
}

impl Figure {
    /// The names `--fail-on` accepts.
    pub const FAIL_ON: [Figure; 8] = [
        Figure::Rate,
        Figure::P50,
        Figure::P90,
        Figure::P95,
        Figure::P99,
        Figure::Avg,
        Figure::Max,
        Figure::ErrorRate,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Figure::Rate => "rate",
            Figure::P50 => "p50",
            Figure::P90 => "p90",
            Figure::P95 => "p95",
            Figure::P99 => "p99",
            Figure::Avg => "avg",
            Figure::Max => "max",
            Figure::ErrorRate => "error_rate",
            Figure::Last => "value",
        }
    }

    pub fn parse(s: &str) -> Option<Figure> {
        Figure::FAIL_ON.into_iter().find(|f| f.name() == s)
    }

    pub fn is_latency(self) -> bool {
        matches!(
            self,
            Figure::P50 | Figure::P90 | Figure::P95 | Figure::P99 | Figure::Avg | Figure::Max
        )
    }

    /// Whether a higher value of this figure of `metric` is worse. Latencies and failure
    /// shares are; counters are throughput (better when higher) unless their name says they
    /// count trouble.
    pub fn higher_is_worse(self, metric: &str) -> bool {
        match self {
            Figure::Rate => {
                metric.contains("error")
                    || metric.contains("fail")
                    || metric.contains("dropped")
                    || metric.contains("missed")
                    || metric == "connections_opened"
            }
            // `checks` is a pass rate; every other rate metric counts failures.
            Figure::ErrorRate => metric != "checks",
            // Throughput a command printed (`volley bench`): more is better.
            _ => !is_throughput_name(metric),
        }
    }

    /// Format a value of this figure for a metric of `unit`.
    pub fn format(self, unit: Unit, v: f64) -> String {
        match (self, unit) {
            (Figure::ErrorRate, _) => format!("{v:.2}%"),
            (Figure::Rate, Unit::Data) => format!("{}/s", fmt::bytes(v)),
            (Figure::Rate, _) => format!("{}/s", fmt::num(v)),
            (_, Unit::Time) => fmt::ms(v),
            (_, Unit::Data) => fmt::bytes(v),
            _ => fmt::num(v),
        }
    }
}

/// Does a metric's name say it is a throughput (`write_mib_per_s`, `ops_per_sec`,
/// `throughput`, `qps`), so that a higher value is better? Command harnesses print such
/// figures (`volley bench`); Volley's own metrics never match.
pub fn is_throughput_name(metric: &str) -> bool {
    let m = metric.to_ascii_lowercase();
    [
        "_per_s",
        "_per_sec",
        "_per_second",
        "_ops_s",
        "_mib_s",
        "_mb_s",
        "_bps",
    ]
    .iter()
    .any(|s| m.ends_with(s))
        || m.split(['_', '.', '-'])
            .any(|p| ["throughput", "bandwidth", "qps", "rps", "iops"].contains(&p))
}

/// A series to read: a metric and one exact tag set, or all its tag sets combined.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Sel {
    pub name: String,
    /// `None`: every tag set of the metric, merged (counters add, trends merge).
    pub tags: Option<TagSet>,
}

impl Sel {
    pub fn all(name: &str) -> Sel {
        Sel {
            name: name.to_string(),
            tags: None,
        }
    }

    pub fn exact(name: &str, tags: &TagSet) -> Sel {
        Sel {
            name: name.to_string(),
            tags: Some(tags.clone()),
        }
    }

    fn matches(&self, name: &str, tags: &TagSet) -> bool {
        name == self.name && self.tags.as_ref().is_none_or(|t| t == tags)
    }

    /// `name` or `name{k=v,...}`.
    pub fn label(&self) -> String {
        match &self.tags {
            Some(t) if !t.is_empty() => format!("{}{{{}}}", self.name, tags_label(t)),
            _ => self.name.clone(),
        }
    }
}

pub fn tags_label(t: &TagSet) -> String {
    t.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The run total of the selected series and its unit, merged over matching tag sets.
pub fn total(r: &RunResult, sel: &Sel) -> Option<(Agg, Unit)> {
    let mut out: Option<(Agg, Unit)> = None;
    for m in r.metrics.iter().filter(|m| sel.matches(&m.name, &m.tags)) {
        let Ok(a) = m.to_agg() else { continue };
        match &mut out {
            Some((x, _)) if x.kind() == a.kind() => x.merge(&a),
            Some(_) => {}
            None => out = Some((a, m.unit)),
        }
    }
    out
}

/// A figure of an aggregate spanning `secs` seconds; `None` when it does not apply or there
/// is nothing to compute it from.
pub fn agg_figure(a: &Agg, fig: Figure, secs: f64) -> Option<f64> {
    match (a, fig) {
        (Agg::Counter { sum, .. }, Figure::Rate) if secs > 0.0 => Some(sum / secs),
        (Agg::Rate { trues, total }, Figure::ErrorRate) if *total > 0 => {
            Some(*trues as f64 / *total as f64 * 100.0)
        }
        (Agg::Gauge { last, n, .. }, Figure::Last) if *n > 0 => Some(*last),
        (Agg::Gauge { max, n, .. }, Figure::Max) if *n > 0 => Some(*max),
        (Agg::Trend(t), f) if t.count > 0 => match f {
            Figure::P50 => Some(t.percentile(50.0)),
            Figure::P90 => Some(t.percentile(90.0)),
            Figure::P95 => Some(t.percentile(95.0)),
            Figure::P99 => Some(t.percentile(99.0)),
            Figure::Avg => Some(t.mean()),
            Figure::Max => Some(t.max),
            _ => None,
        },
        _ => None,
    }
}

/// The whole-run figure (exact: from the totals' histograms and counts).
pub fn total_figure(r: &RunResult, sel: &Sel, fig: Figure) -> Option<f64> {
    let (a, _) = total(r, sel)?;
    agg_figure(&a, fig, r.meta.duration_s)
}

/// The selected series' statistics in one point, merged over matching tag sets.
pub fn point_stat(p: &Point, sel: &Sel) -> Option<Stat> {
    let mut out: Option<Stat> = None;
    for v in p.values.iter().filter(|v| sel.matches(v.name(), v.tags())) {
        match &mut out {
            Some(s) => s.merge(&v.stat),
            None => out = Some(v.stat.clone()),
        }
    }
    out
}

/// Seconds of the run a point covers: its width, cut at the end of the load (the last point
/// is usually partial).
pub fn covered(r: &RunResult, p: &Point) -> f64 {
    let end = ((p.t + p.w) as f64).min(r.meta.duration_s.max(0.0));
    (end - p.t as f64).max(0.0)
}

/// A figure of one point's statistics, covering `secs` seconds.
pub fn stat_figure(s: &Stat, fig: Figure, secs: f64) -> Option<f64> {
    match (s, fig) {
        (Stat::Counter { sum }, Figure::Rate) if secs > 0.0 => Some(sum / secs),
        (Stat::Rate { trues, total }, Figure::ErrorRate) if *total > 0 => {
            Some(*trues as f64 / *total as f64 * 100.0)
        }
        (Stat::Gauge { last, .. }, Figure::Last) => Some(*last),
        (Stat::Gauge { max, .. }, Figure::Max) => Some(*max),
        (
            Stat::Trend {
                count,
                max,
                mean,
                p50,
                p90,
                p95,
                p99,
                ..
            },
            f,
        ) if *count > 0 => match f {
            Figure::P50 => Some(*p50),
            Figure::P90 => Some(*p90),
            Figure::P95 => Some(*p95),
            Figure::P99 => Some(*p99),
            Figure::Avg => Some(*mean),
            Figure::Max => Some(*max),
            _ => None,
        },
        _ => None,
    }
}

/// Per-interval values `(middle of the interval in s, value)` of a figure. Points covering
/// less than `min_cover` of their width are left out (a 20 ms tail would make a wild rate).
/// Counters read 0 in intervals where nothing was counted, so quiet seconds count too.
pub fn intervals(r: &RunResult, sel: &Sel, fig: Figure, min_cover: f64) -> Vec<(f64, f64)> {
    let counter = matches!(total(r, sel), Some((Agg::Counter { .. }, _)));
    r.series
        .points
        .iter()
        .filter_map(|p| {
            let secs = covered(r, p);
            if p.w == 0 || secs < min_cover * p.w as f64 {
                return None;
            }
            let v = match point_stat(p, sel) {
                Some(s) => stat_figure(&s, fig, secs),
                None if counter && fig == Figure::Rate => Some(0.0),
                None => None,
            }?;
            Some((p.t as f64 + secs / 2.0, v))
        })
        .collect()
}

/// Every distinct (name, tag set) in the file, in file order.
pub fn series_keys(r: &RunResult) -> Vec<(String, TagSet)> {
    r.metrics
        .iter()
        .map(|m| (m.name.clone(), m.tags.clone()))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use volley_metrics::{Aggregator, MetricKey, MetricKind, Recorder, RunMeta};

    /// A synthetic run: `secs` seconds at `rps` requests/s with latency `lat_ms` (plus a
    /// small per-second wobble), every `err_every`-th request failed (0: none).
    pub fn synthetic(name: &str, secs: u64, rps: u64, lat_ms: f64, err_every: u64) -> RunResult {
        let mut rec = Recorder::new();
        let ok = rec.handle(
            MetricKey::tagged(volley_metrics::names::HTTP_REQS, &[("status", "200")]),
            MetricKind::Counter,
            Unit::Default,
        );
        let dur = rec.handle(
            MetricKey::new(volley_metrics::names::HTTP_REQ_DURATION),
            MetricKind::Trend,
            Unit::Time,
        );
        let failed = rec.handle(
            MetricKey::new(volley_metrics::names::HTTP_REQ_FAILED),
            MetricKind::Rate,
            Unit::Default,
        );
        let bytes = rec.handle(
            MetricKey::new(volley_metrics::names::DATA_RECEIVED),
            MetricKind::Counter,
            Unit::Data,
        );
        let vus = rec.handle(MetricKey::new("vus"), MetricKind::Gauge, Unit::Default);
        let mut agg = Aggregator::new(1, volley_metrics::series::DEFAULT_MAX_POINTS);
        let mut i = 0u64;
        for s in 0..secs {
            let wobble = 1.0 + 0.02 * ((s * 7919 % 13) as f64 / 13.0 - 0.5);
            let n = (rps as f64 * wobble) as u64;
            for k in 0..n {
                i += 1;
                rec.add(ok, 1.0);
                rec.add(dur, lat_ms * wobble * (0.5 + (k % 100) as f64 / 100.0));
                rec.add(
                    failed,
                    (err_every > 0 && i.is_multiple_of(err_every)) as u8 as f64,
                );
                rec.add(bytes, 100.0);
            }
            rec.add(vus, 4.0);
            agg.add(0, s, rec.snapshot());
        }
        agg.worker_done(0);
        let (metrics, series) = agg.finish();
        let meta = RunMeta {
            mode: "http".into(),
            name: name.into(),
            started_at: "2025-01-01T00:00:00.000Z".into(),
            started_unix_ms: 1000,
            ended_unix_ms: 1000 + secs * 1000,
            duration_s: secs as f64,
            instances: 1,
            ..Default::default()
        };
        RunResult::new(meta, serde_json::json!({}), metrics, series)
    }

    #[test]
    fn totals_and_intervals_agree() {
        let r = synthetic("http://x/", 5, 1000, 10.0, 10);
        let rate = total_figure(
            &r,
            &Sel::all(volley_metrics::names::HTTP_REQS),
            Figure::Rate,
        )
        .unwrap();
        assert!((rate - 1000.0).abs() < 20.0, "{rate}");
        let iv = intervals(
            &r,
            &Sel::all(volley_metrics::names::HTTP_REQS),
            Figure::Rate,
            0.5,
        );
        assert_eq!(iv.len(), 5);
        assert_eq!(iv[0].0, 0.5);
        let err = total_figure(
            &r,
            &Sel::all(volley_metrics::names::HTTP_REQ_FAILED),
            Figure::ErrorRate,
        )
        .unwrap();
        assert!((err - 10.0).abs() < 0.1, "{err}");
        let p50 = total_figure(
            &r,
            &Sel::all(volley_metrics::names::HTTP_REQ_DURATION),
            Figure::P50,
        )
        .unwrap();
        assert!(p50 > 8.0 && p50 < 12.0, "{p50}");
        assert!(
            total_figure(&r, &Sel::all(volley_metrics::names::HTTP_REQS), Figure::P50).is_none()
        );
        assert_eq!(
            Sel::exact(
                volley_metrics::names::HTTP_REQS,
                &[("status".to_string(), "200".to_string())].into()
            )
            .label(),
            "http_reqs{status=200}"
        );
    }

    #[test]
    fn partial_last_interval_is_left_out() {
        let mut r = synthetic("http://x/", 4, 100, 1.0, 0);
        r.meta.duration_s = 3.02;
        assert_eq!(
            intervals(
                &r,
                &Sel::all(volley_metrics::names::HTTP_REQS),
                Figure::Rate,
                0.5
            )
            .len(),
            3
        );
    }
}
