//! Drift over a run, judged from its per-interval series: least-squares slope per hour,
//! `drift(p95)` (the last tenth of the run against the first tenth after warm-up), and the
//! checks `slope<5MB/h`, `max<2GB`, `drift(p95)<10%` built on them.
//!
//! These are library functions so that both the CLI (`--threshold METRIC:CHECK`) and script
//! thresholds (`options.thresholds`) can call them on a finished [`RunResult`]:
//! [`is_drift_check`] says whether an expression is one of ours, [`Check::parse`] reads it and
//! [`evaluate`] judges every series of a metric that carries the given tags.

use volley_metrics::series::Stat;
use volley_metrics::{RunResult, Series, TagSet, TotalValue};

/// Share of the run treated as warm-up and left out of slopes and drift windows.
pub const WARMUP_FRACTION: f64 = 0.1;

/// Least-squares slope of `(seconds, value)` points, in units per hour. None with fewer than
/// two distinct times.
pub fn slope_per_hour(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx * 3600.0)
}

/// Which number of an interval to take from a series.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Field {
    /// Gauges: the last value; counters: the per-second rate; rates: the share of trues;
    /// trends: the mean.
    Value,
    /// Trends: a percentile (50, 90, 95 or 99 are kept per interval).
    P(u8),
}

impl Field {
    fn of(self, s: &Stat, w: u64) -> Option<f64> {
        match (self, s) {
            (_, Stat::Gauge { last, .. }) => Some(*last),
            (_, Stat::Counter { sum }) => Some(sum / w.max(1) as f64),
            (_, Stat::Rate { trues, total }) => (*total > 0).then(|| *trues as f64 / *total as f64),
            (_, Stat::Trend { count: 0, .. }) => None,
            (Field::Value, Stat::Trend { mean, .. }) => Some(*mean),
            (
                Field::P(p),
                Stat::Trend {
                    p50, p90, p95, p99, ..
                },
            ) => match p {
                50 => Some(*p50),
                90 => Some(*p90),
                95 => Some(*p95),
                99 => Some(*p99),
                _ => None,
            },
        }
    }

    /// Weight of an interval when averaging a window (trends: their request count).
    fn weight(s: &Stat) -> f64 {
        match s {
            Stat::Trend { count, .. } => *count as f64,
            _ => 1.0,
        }
    }
}

/// One series' values over time: (seconds from the run's start, value, weight). A gauge's
/// `last` was read at the end of its bucket, so its time is the bucket's last second.
pub fn points(r: &RunResult, name: &str, tags: &TagSet, field: Field) -> Vec<(f64, f64, f64)> {
    series_points(&r.series, name, tags, field)
}

/// [`points`] of a bare series (also a run still in progress, from its aggregator).
pub fn series_points(
    series: &Series,
    name: &str,
    tags: &TagSet,
    field: Field,
) -> Vec<(f64, f64, f64)> {
    series
        .points
        .iter()
        .filter_map(|p| {
            let s = p.get(name, tags)?;
            let v = field.of(s, p.w)?;
            let t = match s {
                Stat::Gauge { .. } => (p.t + p.w - 1) as f64,
                _ => p.t as f64 + p.w as f64 / 2.0,
            };
            Some((t, v, Field::weight(s)))
        })
        .collect()
}

/// The run's length on the series' timeline (seconds).
fn span(r: &RunResult) -> f64 {
    let end = r.series.points.last().map_or(0.0, |p| (p.t + p.w) as f64);
    end.max(r.meta.duration_s)
}

/// Points after the warm-up (all of them when that would leave fewer than three).
fn after_warmup(pts: Vec<(f64, f64, f64)>, span: f64) -> Vec<(f64, f64, f64)> {
    let w = span * WARMUP_FRACTION;
    let kept: Vec<_> = pts.iter().copied().filter(|p| p.0 >= w).collect();
    if kept.len() >= 3 {
        kept
    } else {
        pts
    }
}

/// Slope of a series after warm-up, in units per hour.
pub fn slope(r: &RunResult, name: &str, tags: &TagSet) -> Option<f64> {
    let pts = after_warmup(points(r, name, tags, Field::Value), span(r));
    let xy: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.1)).collect();
    slope_per_hour(&xy)
}

/// Minimum of the warm-up before a slope is judged *during* a run (see [`live_slope`]).
pub const LIVE_WARMUP_MIN: f64 = 10.0;
/// Maximum of the warm-up before a slope is judged during a run.
pub const LIVE_WARMUP_MAX: f64 = 60.0;
/// Samples a slope needs past the warm-up before it is judged during a run.
pub const LIVE_MIN_POINTS: usize = 10;

/// How long into a run of `planned_s` seconds a slope starts being judged while the run goes
/// on (for `abortOnFail`): a tenth of the planned duration, at least 10 s and at most 60 s.
pub fn live_warmup(planned_s: f64) -> f64 {
    (planned_s * WARMUP_FRACTION).clamp(LIVE_WARMUP_MIN, LIVE_WARMUP_MAX)
}

/// The slope (units per hour) of a series of a run still in progress, `elapsed_s` into it,
/// judged on the samples after `warmup_s` (see [`live_warmup`]); None until the warm-up is
/// over and [`LIVE_MIN_POINTS`] samples followed it. The verdict at the end uses [`slope`].
pub fn live_slope(
    series: &Series,
    name: &str,
    tags: &TagSet,
    elapsed_s: f64,
    warmup_s: f64,
) -> Option<f64> {
    if elapsed_s < warmup_s {
        return None;
    }
    let xy: Vec<(f64, f64)> = series_points(series, name, tags, Field::Value)
        .into_iter()
        .filter(|p| p.0 >= warmup_s)
        .map(|p| (p.0, p.1))
        .collect();
    if xy.len() < LIVE_MIN_POINTS {
        return None;
    }
    slope_per_hour(&xy)
}

/// The two windows `drift` compares, and the relative change between them.
#[derive(Clone, Debug, PartialEq)]
pub struct Drift {
    /// The first tenth of the run after warm-up.
    pub first: f64,
    /// The last tenth of the run.
    pub last: f64,
    /// `(last - first) / first`, in percent (infinite when `first` is 0 and `last` is not).
    pub change_pct: f64,
}

/// Weighted mean of the points in `[from, to)`, or of the point nearest to the window when
/// none falls inside (short runs).
fn window(pts: &[(f64, f64, f64)], from: f64, to: f64) -> Option<f64> {
    let inside: Vec<_> = pts.iter().filter(|p| p.0 >= from && p.0 < to).collect();
    if inside.is_empty() {
        let mid = (from + to) / 2.0;
        return pts
            .iter()
            .min_by(|a, b| (a.0 - mid).abs().total_cmp(&(b.0 - mid).abs()))
            .map(|p| p.1);
    }
    let w: f64 = inside.iter().map(|p| p.2).sum();
    if w > 0.0 {
        Some(inside.iter().map(|p| p.1 * p.2).sum::<f64>() / w)
    } else {
        Some(inside.iter().map(|p| p.1).sum::<f64>() / inside.len() as f64)
    }
}

/// `drift(field)` of one series: the last tenth of the run against the first tenth after the
/// warm-up tenth. Per-interval percentiles are averaged weighted by request count.
pub fn drift(r: &RunResult, name: &str, tags: &TagSet, field: Field) -> Option<Drift> {
    let pts = points(r, name, tags, field);
    if pts.len() < 2 {
        return None;
    }
    let t = span(r);
    let tenth = t / 10.0;
    let first = window(&pts, tenth, 2.0 * tenth)?;
    let last = window(&pts, t - tenth, t + 1.0)?;
    let change_pct = if first != 0.0 {
        (last - first) / first.abs() * 100.0
    } else if last == 0.0 {
        0.0
    } else {
        f64::INFINITY * last.signum()
    };
    Some(Drift {
        first,
        last,
        change_pct,
    })
}

/// What a check looks at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Aggregate {
    /// Least-squares slope per hour after warm-up.
    Slope,
    /// Run totals of a gauge (or a trend's min/max).
    Max,
    Min,
    Last,
    /// Mean of the per-interval values.
    Avg,
    /// Relative change in percent, see [`drift`].
    Drift(Field),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
        }
    }
}

/// A parsed check such as `slope<5MB/h`.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub aggregate: Aggregate,
    pub op: Op,
    /// In the metric's own unit (bytes, ms, count); per hour for slopes; percent for drift.
    pub limit: f64,
    /// The expression as written.
    pub source: String,
}

/// Whether `expr` is a check this module evaluates (and another threshold engine should hand
/// over): `slope…` and `drift(…)…`. `max`, `min`, `avg` are understood too, but a threshold
/// engine may well have its own.
pub fn is_drift_check(expr: &str) -> bool {
    let e = expr.trim_start();
    e.starts_with("slope") || e.starts_with("drift(")
}

/// `5MB`, `2GiB`, `10%`, `1.5`, `300ms` → a number in base units (bytes, ms, percent), and
/// for slopes a `/h`, `/min`, `/s` rate suffix (per hour when absent).
fn parse_amount(s: &str, rate: bool) -> Result<f64, String> {
    let s = s.trim();
    let (s, per) = match s.rsplit_once('/') {
        Some((a, "h")) if rate => (a, 1.0),
        Some((a, "min" | "m")) if rate => (a, 60.0),
        Some((a, "s")) if rate => (a, 3600.0),
        Some(_) => return Err(format!("'{s}': a rate is written 5MB/h, 5MB/min or 5MB/s")),
        None => (s, 1.0),
    };
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e')))
        .unwrap_or(s.len());
    let (num, unit) = (&s[..split], s[split..].trim());
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' does not start with a number"))?;
    let mult = match unit {
        "" | "%" | "B" | "ms" => 1.0,
        "s" => 1000.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0f64.powi(4),
        u => {
            return Err(format!(
                "unknown unit '{u}' in '{s}' (use B, KB, MB, GB, KiB, MiB, GiB, ms, s or %)"
            ))
        }
    };
    Ok(n * mult * per)
}

impl Check {
    /// Does an observed value pass? (`observed` in the units [`evaluate`] reports.)
    pub fn passes(&self, observed: f64) -> bool {
        self.op.holds(observed, self.limit)
    }

    pub fn parse(expr: &str) -> Result<Check, String> {
        let e = expr.trim();
        let hint = || {
            format!(
                "'{e}': expected slope<5MB/h, max<2GB, min>0, avg<80, last<100 or drift(p95)<10%"
            )
        };
        let opi = e.find(['<', '>']).ok_or_else(hint)?;
        let (lhs, rest) = (e[..opi].trim(), &e[opi..]);
        let (op, rhs) = if let Some(r) = rest.strip_prefix("<=") {
            (Op::Le, r)
        } else if let Some(r) = rest.strip_prefix(">=") {
            (Op::Ge, r)
        } else if let Some(r) = rest.strip_prefix('<') {
            (Op::Lt, r)
        } else {
            (Op::Gt, &rest[1..])
        };
        let aggregate = match lhs {
            "slope" => Aggregate::Slope,
            "max" => Aggregate::Max,
            "min" => Aggregate::Min,
            "last" | "value" => Aggregate::Last,
            "avg" | "mean" => Aggregate::Avg,
            _ => {
                let inner = lhs
                    .strip_prefix("drift(")
                    .and_then(|s| s.strip_suffix(')'))
                    .ok_or_else(hint)?
                    .trim();
                Aggregate::Drift(match inner {
                    "p50" | "med" => Field::P(50),
                    "p90" => Field::P(90),
                    "p95" => Field::P(95),
                    "p99" => Field::P(99),
                    "avg" | "mean" | "value" | "" => Field::Value,
                    _ => {
                        return Err(format!(
                            "'{e}': drift() takes p50, p90, p95, p99 or avg (the percentiles kept per interval)"
                        ))
                    }
                })
            }
        };
        let limit =
            parse_amount(rhs, aggregate == Aggregate::Slope).map_err(|m| format!("'{e}': {m}"))?;
        Ok(Check {
            aggregate,
            op,
            limit,
            source: e.to_string(),
        })
    }
}

/// The verdict on one series.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub tags: TagSet,
    /// What was measured (None: not enough data, which fails the check).
    pub observed: Option<f64>,
    pub passed: bool,
}

fn observe(r: &RunResult, name: &str, tags: &TagSet, a: Aggregate) -> Option<f64> {
    match a {
        Aggregate::Slope => slope(r, name, tags),
        Aggregate::Drift(f) => drift(r, name, tags, f).map(|d| d.change_pct),
        Aggregate::Avg => {
            let pts = points(r, name, tags, Field::Value);
            let w: f64 = pts.iter().map(|p| p.2).sum();
            (w > 0.0).then(|| pts.iter().map(|p| p.1 * p.2).sum::<f64>() / w)
        }
        Aggregate::Max | Aggregate::Min | Aggregate::Last => match &r.metric(name, tags)?.value {
            TotalValue::Gauge { last, min, max, .. } => Some(match a {
                Aggregate::Max => *max,
                Aggregate::Min => *min,
                _ => *last,
            }),
            TotalValue::Trend { min, max, .. } => match a {
                Aggregate::Max => Some(*max),
                Aggregate::Min => Some(*min),
                _ => None,
            },
            TotalValue::Counter { sum, .. } => Some(*sum),
            TotalValue::Rate { trues, total } => {
                (*total > 0).then(|| *trues as f64 / *total as f64)
            }
        },
    }
}

/// Judge every series of `name` whose tags include `tags` (so `monitor_rss_bytes` with no
/// tags checks every target). `monitor_rss` is accepted for `monitor_rss_bytes`. No matching
/// series gives one failed outcome with nothing observed.
pub fn evaluate(r: &RunResult, name: &str, tags: &TagSet, check: &Check) -> Vec<Outcome> {
    let name = if r.metrics_named(name).next().is_none()
        && r.metrics_named(&format!("{name}_bytes")).next().is_some()
    {
        format!("{name}_bytes")
    } else {
        name.to_string()
    };
    let matching: Vec<TagSet> = r
        .metrics_named(&name)
        .filter(|m| tags.iter().all(|(k, v)| m.tags.get(k) == Some(v)))
        .map(|m| m.tags.clone())
        .collect();
    if matching.is_empty() {
        return vec![Outcome {
            tags: tags.clone(),
            observed: None,
            passed: false,
        }];
    }
    matching
        .into_iter()
        .map(|t| {
            let observed = observe(r, &name, &t, check.aggregate);
            Outcome {
                passed: observed.is_some_and(|v| check.op.holds(v, check.limit)),
                observed,
                tags: t,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_metrics::{Aggregator, MetricKey, MetricKind, Recorder, RunMeta, Unit};

    /// A run of `secs` seconds with one gauge following `f(t)` and a latency trend whose
    /// values follow `lat(t)` (ms).
    fn run(secs: u64, f: impl Fn(f64) -> f64, lat: impl Fn(f64) -> u64) -> RunResult {
        let mut agg = Aggregator::new(1, 3600);
        let mut rec = Recorder::new();
        let g = rec.handle(
            MetricKey::tagged("monitor_rss_bytes", &[("target", "api")]),
            MetricKind::Gauge,
            Unit::Data,
        );
        let d = rec.handle(
            MetricKey::new("http_req_duration"),
            MetricKind::Trend,
            Unit::Time,
        );
        for t in 0..secs {
            rec.add(g, f(t as f64));
            for _ in 0..100 {
                rec.trend_us(d, lat(t as f64) * 1000);
            }
            agg.add(0, t, rec.snapshot());
        }
        let (metrics, series) = agg.finish();
        let meta = RunMeta {
            duration_s: secs as f64,
            ..Default::default()
        };
        RunResult::new(meta, serde_json::Value::Null, metrics, series)
    }

    fn target(v: &str) -> TagSet {
        [("target".to_string(), v.to_string())].into()
    }

    #[test]
    fn live_slope_waits_for_the_warm_up_and_enough_samples() {
        assert_eq!(live_warmup(30.0), LIVE_WARMUP_MIN);
        assert_eq!(live_warmup(300.0), 30.0);
        assert_eq!(live_warmup(86_400.0), LIVE_WARMUP_MAX);
        // A noisy start (ignored), then 1 MB/s.
        let r = run(40, |t| if t < 5.0 { 9e9 } else { 1e8 + t * 1e6 }, |_| 5);
        let (s, tags) = (&r.series, target("api"));
        assert_eq!(live_slope(s, "monitor_rss_bytes", &tags, 9.0, 10.0), None);
        // Only points at or after the warm-up count; fewer than 10 of them: not yet.
        assert_eq!(live_slope(s, "monitor_rss_bytes", &tags, 15.0, 35.0), None);
        let v = live_slope(s, "monitor_rss_bytes", &tags, 40.0, 10.0).unwrap();
        assert!((v - 3.6e9).abs() < 1e6, "{v}");
        assert!(Check::parse("slope<5MB/h").unwrap().passes(4e6));
    }

    #[test]
    fn least_squares_slope() {
        let pts: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 5.0 + 2.0 * i as f64)).collect();
        assert!((slope_per_hour(&pts).unwrap() - 7200.0).abs() < 1e-9);
        assert_eq!(slope_per_hour(&[(1.0, 1.0)]), None);
        assert_eq!(slope_per_hour(&[(1.0, 1.0), (1.0, 2.0)]), None);
    }

    #[test]
    fn leaking_gauge_fails_slope_and_steady_one_passes() {
        // 1 MB per second = 3.6 GB/h, after a noisy warm-up spike.
        let leak = run(60, |t| if t < 3.0 { 9e9 } else { 1e8 + t * 1e6 }, |_| 5);
        let s = slope(&leak, "monitor_rss_bytes", &target("api")).unwrap();
        assert!((s - 3.6e9).abs() < 1e6, "{s}");
        let check = Check::parse("slope<5MB/h").unwrap();
        assert_eq!(check.limit, 5e6);
        let o = evaluate(&leak, "monitor_rss_bytes", &TagSet::new(), &check);
        assert_eq!(o.len(), 1);
        assert!(!o[0].passed);
        assert_eq!(o[0].tags, target("api"));
        let steady = run(60, |_| 1e8, |_| 5);
        let o = evaluate(&steady, "monitor_rss", &target("api"), &check);
        assert!(o[0].passed, "{o:?}");
        assert_eq!(o[0].observed, Some(0.0));
        // max uses the exact totals; a missing series fails.
        let max = Check::parse("max<2GB").unwrap();
        assert!(evaluate(&steady, "monitor_rss_bytes", &TagSet::new(), &max)[0].passed);
        assert!(!evaluate(&leak, "monitor_rss_bytes", &TagSet::new(), &max)[0].passed);
        let none = evaluate(&steady, "monitor_rss_bytes", &target("db"), &max);
        assert!(!none[0].passed && none[0].observed.is_none());
    }

    #[test]
    fn drift_compares_last_tenth_with_first_tenth_after_warmup() {
        // p95 constant 10 ms for most of the run, 20 ms in the last tenth; the warm-up tenth
        // (100 ms) must not count.
        let r = run(
            100,
            |_| 0.0,
            |t| {
                if t < 10.0 {
                    100
                } else if t >= 90.0 {
                    20
                } else {
                    10
                }
            },
        );
        let d = drift(&r, "http_req_duration", &TagSet::new(), Field::P(95)).unwrap();
        assert!((d.first - 10.0).abs() < 0.1, "{d:?}");
        assert!((d.last - 20.0).abs() < 0.1, "{d:?}");
        assert!((d.change_pct - 100.0).abs() < 1.0, "{d:?}");
        let c = Check::parse("drift(p95)<10%").unwrap();
        assert!(!evaluate(&r, "http_req_duration", &TagSet::new(), &c)[0].passed);
        let flat = run(100, |_| 0.0, |_| 10);
        let o = evaluate(&flat, "http_req_duration", &TagSet::new(), &c);
        assert!(o[0].passed && o[0].observed.unwrap().abs() < 1.0, "{o:?}");
    }

    #[test]
    fn checks_parse_units_and_reject_nonsense() {
        let c = Check::parse("slope <= 1.5 MiB/min").unwrap();
        assert_eq!(c.op, Op::Le);
        assert_eq!(c.limit, 1.5 * 1024.0 * 1024.0 * 60.0);
        assert_eq!(Check::parse("max<2GB").unwrap().limit, 2e9);
        assert_eq!(Check::parse("avg>=80").unwrap().aggregate, Aggregate::Avg);
        assert_eq!(Check::parse("max<300ms").unwrap().limit, 300.0);
        assert_eq!(
            Check::parse("drift(p99)<5%").unwrap().aggregate,
            Aggregate::Drift(Field::P(99))
        );
        assert!(is_drift_check("slope<1MB/h") && is_drift_check("drift(p95)<10%"));
        assert!(!is_drift_check("p(95)<200"));
        for bad in [
            "slope",
            "p(95)<200",
            "slope<5XB/h",
            "max<2GB/h",
            "drift(p42)<1%",
            "slope<abc",
        ] {
            assert!(Check::parse(bad).is_err(), "{bad} should fail");
        }
    }
}
