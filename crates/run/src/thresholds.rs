//! k6 thresholds: parsing `options.thresholds`, evaluating them on metric totals (once per
//! second during the run for `abortOnFail`, and at the end for the verdict).
//!
//! Grammar (as k6): `AGG OP NUMBER`, where AGG is `count`, `rate`, `value`, `avg`, `min`,
//! `max`, `med` or `p(N)` and OP one of `<`, `<=`, `>`, `>=`, `==`, `===`, `!=`. A threshold
//! is a string or `{threshold, abortOnFail, delayAbortEval}`. The metric key may select a
//! sub-metric by tags, `http_req_duration{name:verify,method:GET}`: every series whose tags
//! include all those pairs, merged.
//!
//! Volley extends the grammar with drift checks judged on the run's per-second series rather
//! than on its totals (see [`volley_monitor::drift`]): `slope<5MB/h` (least-squares slope
//! after warm-up), `drift(p95)<10%` (the last tenth of the run against the first tenth after
//! warm-up) on any metric, and on gauges (the `monitor_*` metrics of `--monitor`) `max<2GB`,
//! `min>0`, `avg<80`, `last<1GB` with units. An expression that starts with `slope` or
//! `drift(` is always one of these; any other is parsed as k6's first, and only a gauge
//! expression that k6's grammar rejects falls back to them. They are judged at the end of the
//! run; with `abortOnFail`, `slope` (and `max`/`min`/`last` on gauges) also once a second
//! after a warm-up ([`volley_monitor::drift::live_warmup`]).

use std::time::Duration;
use volley_metrics::agg::TrendAgg;
use volley_metrics::{Agg, MetricKind, TagSet};

/// How a threshold reduces a metric to one number.
#[derive(Clone, Debug, PartialEq)]
pub enum Stat {
    Count,
    Rate,
    Value,
    Avg,
    Min,
    Max,
    Med,
    P(f64),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// One parsed threshold.
#[derive(Clone, Debug)]
pub struct Threshold {
    /// The key as written: `http_req_duration{name:verify}`.
    pub metric: String,
    /// The metric name without tags.
    pub name: String,
    /// Sub-metric tag filter (empty: the whole metric).
    pub tags: Vec<(String, String)>,
    /// The expression as written: `p(95)<200`.
    pub source: String,
    pub stat: Stat,
    pub op: Op,
    pub target: f64,
    pub abort_on_fail: bool,
    pub delay_abort_eval: Duration,
    /// A drift check (`slope<5MB/h`, `drift(p95)<10%`, `max<2GB` on a gauge): judged by
    /// [`volley_monitor::drift`] on the run's series; `stat`, `op` and `target` then only
    /// mirror it.
    pub drift: Option<volley_monitor::Check>,
}

/// A metric key split into name and tag filter: `a{b:c, d:"e"}` → (`a`, [(b,c),(d,e)]).
pub fn parse_metric_key(key: &str) -> Result<(String, Vec<(String, String)>), String> {
    let key = key.trim();
    let Some(open) = key.find('{') else {
        return Ok((key.to_string(), Vec::new()));
    };
    let name = key[..open].trim().to_string();
    let rest = &key[open + 1..];
    let inner = rest.strip_suffix('}').ok_or_else(|| {
        format!("'{key}': a sub-metric's tag list must end with '}}', as in name{{tag:value}}")
    })?;
    let mut tags = Vec::new();
    for part in inner.split(',') {
        if part.trim().is_empty() {
            continue;
        }
        let (k, v) = part.split_once(':').ok_or_else(|| {
            format!(
                "'{key}': expected tag:value pairs inside {{}}, got '{}'",
                part.trim()
            )
        })?;
        let k = k.trim().trim_matches(|c| c == '"' || c == '\'');
        let v = v.trim().trim_matches(|c| c == '"' || c == '\'');
        if k.is_empty() {
            return Err(format!("'{key}': empty tag name in '{}'", part.trim()));
        }
        tags.push((k.to_string(), v.to_string()));
    }
    if tags.is_empty() {
        return Err(format!("'{key}': empty tag list (write name{{tag:value}})"));
    }
    Ok((name, tags))
}

const EXPECTED: &str = "expected AGGREGATION OPERATOR NUMBER, e.g. 'p(95)<200', with an \
     aggregation among count, rate, value, avg, min, max, med, p(N) and an operator among \
     <, <=, >, >=, ==, !=";

/// Parse `p(95) < 200` into its three parts.
pub fn parse_expression(src: &str) -> Result<(Stat, Op, f64), String> {
    let s = src.trim();
    let ops: [(&str, Op); 7] = [
        ("===", Op::Eq),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("<", Op::Lt),
        (">", Op::Gt),
    ];
    let (at, op_s, op) = ops
        .iter()
        .filter_map(|(t, o)| s.find(t).map(|i| (i, *t, *o)))
        .min_by_key(|(i, t, _)| (*i, std::cmp::Reverse(t.len())))
        .ok_or_else(|| format!("'{src}': no operator; {EXPECTED}"))?;
    let lhs = s[..at].trim();
    let rhs = s[at + op_s.len()..].trim();
    let target: f64 = rhs
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| format!("'{src}': '{rhs}' is not a number; {EXPECTED}"))?;
    let stat = match lhs {
        "count" => Stat::Count,
        "rate" => Stat::Rate,
        "value" => Stat::Value,
        "avg" => Stat::Avg,
        "min" => Stat::Min,
        "max" => Stat::Max,
        "med" => Stat::Med,
        _ => {
            let p = lhs
                .strip_prefix("p(")
                .and_then(|r| r.strip_suffix(')'))
                .and_then(|n| n.trim().parse::<f64>().ok())
                .filter(|p| (0.0..=100.0).contains(p))
                .ok_or_else(|| {
                    format!("'{src}': unknown aggregation '{lhs}'; {EXPECTED} (N in 0..100)")
                })?;
            Stat::P(p)
        }
    };
    Ok((stat, op, target))
}

fn stat_allowed(kind: MetricKind, stat: &Stat) -> bool {
    match kind {
        MetricKind::Counter => matches!(stat, Stat::Count | Stat::Rate),
        MetricKind::Gauge => matches!(stat, Stat::Value),
        MetricKind::Rate => matches!(stat, Stat::Rate),
        MetricKind::Trend => matches!(
            stat,
            Stat::Avg | Stat::Min | Stat::Max | Stat::Med | Stat::P(_)
        ),
    }
}

fn allowed_list(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Counter => "count, rate",
        MetricKind::Gauge => "value",
        MetricKind::Rate => "rate",
        MetricKind::Trend => "avg, min, max, med, p(N)",
    }
}

/// Parse `options.thresholds`. `kind_of` knows every metric the script can record (built-in
/// and declared in init); thresholds on anything else are an error, as in k6.
pub fn parse(
    v: &serde_json::Value,
    kind_of: impl Fn(&str) -> Option<MetricKind>,
) -> Result<Vec<Threshold>, String> {
    let Some(map) = v.as_object() else {
        return Err(
            "options.thresholds: expected an object mapping metric names to arrays of \
             expressions, e.g. {\"http_req_duration\": [\"p(95)<200\"]}"
                .into(),
        );
    };
    let mut out = Vec::new();
    for (key, list) in map {
        let path = format!("options.thresholds[\"{key}\"]");
        let (name, tags) = parse_metric_key(key).map_err(|e| format!("{path}: {e}"))?;
        let kind = kind_of(&name).ok_or_else(|| {
            format!(
                "{path}: invalid threshold defined on {key}; reason: no metric name \"{name}\" \
                 found (built-in metrics and metrics declared in the init context only)"
            )
        })?;
        let items: Vec<&serde_json::Value> = match list {
            serde_json::Value::Array(a) => a.iter().collect(),
            one @ (serde_json::Value::String(_) | serde_json::Value::Object(_)) => vec![one],
            _ => {
                return Err(format!(
                    "{path}: expected an array of threshold expressions (strings or \
                     {{threshold, abortOnFail, delayAbortEval}} objects)"
                ))
            }
        };
        for (i, item) in items.into_iter().enumerate() {
            let ipath = format!("{path}[{i}]");
            let (source, abort_on_fail, delay) = match item {
                serde_json::Value::String(s) => (s.clone(), false, Duration::ZERO),
                serde_json::Value::Object(o) => {
                    let src = o.get("threshold").and_then(|t| t.as_str()).ok_or_else(|| {
                        format!("{ipath}: expected a \"threshold\" string in the object")
                    })?;
                    for k in o.keys() {
                        if !matches!(k.as_str(), "threshold" | "abortOnFail" | "delayAbortEval") {
                            return Err(format!(
                                "{ipath}: unknown key '{k}' (expected threshold, abortOnFail, \
                                 delayAbortEval)"
                            ));
                        }
                    }
                    let abort = match o.get("abortOnFail") {
                        None | Some(serde_json::Value::Null) => false,
                        Some(serde_json::Value::Bool(b)) => *b,
                        Some(x) => {
                            return Err(format!(
                                "{ipath}.abortOnFail: expected true or false, got {x}"
                            ))
                        }
                    };
                    let delay = match o.get("delayAbortEval") {
                        None | Some(serde_json::Value::Null) => Duration::ZERO,
                        Some(serde_json::Value::String(s)) => volley_engine::parse_duration(s)
                            .map_err(|e| format!("{ipath}.delayAbortEval: {e}"))?,
                        Some(serde_json::Value::Number(n)) => {
                            let ms = n.as_f64().unwrap_or(0.0);
                            volley_engine::duration_from_secs(ms / 1000.0)
                                .map_err(|e| format!("{ipath}.delayAbortEval: {e}"))?
                        }
                        Some(x) => {
                            return Err(format!(
                            "{ipath}.delayAbortEval: expected a duration such as \"10s\", got {x}"
                        ))
                        }
                    };
                    (src.to_string(), abort, delay)
                }
                x => {
                    return Err(format!(
                        "{ipath}: expected a string such as \"p(95)<200\" or an object \
                         {{threshold, abortOnFail, delayAbortEval}}, got {x}"
                    ))
                }
            };
            let (stat, op, target, drift) =
                parse_any(&source, kind, &name).map_err(|e| format!("{ipath}: {e}"))?;
            out.push(Threshold {
                metric: key.clone(),
                name: name.clone(),
                tags: tags.clone(),
                source: source.trim().to_string(),
                stat,
                op,
                target,
                abort_on_fail,
                delay_abort_eval: delay,
                drift,
            });
        }
    }
    Ok(out)
}

/// A k6 expression, or one of volley's drift checks (see the module docs).
fn parse_any(
    source: &str,
    kind: MetricKind,
    name: &str,
) -> Result<(Stat, Op, f64, Option<volley_monitor::Check>), String> {
    let drift = |c: volley_monitor::Check| {
        use volley_monitor::drift::Op as D;
        let op = match c.op {
            D::Lt => Op::Lt,
            D::Le => Op::Le,
            D::Gt => Op::Gt,
            D::Ge => Op::Ge,
        };
        (Stat::Value, op, c.limit, Some(c))
    };
    if volley_monitor::is_drift_check(source) {
        return volley_monitor::Check::parse(source).map(drift);
    }
    let k6 = parse_expression(source);
    if let Ok((stat, op, target)) = &k6 {
        if stat_allowed(kind, stat) {
            return Ok((stat.clone(), *op, *target, None));
        }
    }
    if kind == MetricKind::Gauge {
        if let Ok(c) = volley_monitor::Check::parse(source) {
            return Ok(drift(c));
        }
    }
    k6?;
    Err(format!(
        "'{source}': this aggregation does not apply to '{name}', a {} metric (use {}{})",
        crate::summary::kind_name(kind),
        allowed_list(kind),
        if kind == MetricKind::Gauge {
            ", or max, min, avg, last, slope, drift(avg) with units, e.g. max<2GB, slope<5MB/h"
        } else {
            ", or slope<N/h, drift(p95)<N%"
        }
    ))
}

impl Threshold {
    /// Does a series (name + tags) belong to this threshold's (sub-)metric?
    pub fn matches(&self, name: &str, tags: &TagSet) -> bool {
        name == self.name
            && self
                .tags
                .iter()
                .all(|(k, v)| tags.get(k).map(String::as_str) == Some(v.as_str()))
    }

    /// The observed value and the verdict, from the (sub-)metric's merged aggregate.
    /// `elapsed_s` is the rate denominator for counters. No samples: zero values (as k6).
    pub fn check(&self, agg: Option<&Agg>, elapsed_s: f64) -> (bool, f64) {
        let observed = observe(&self.stat, agg, elapsed_s);
        let ok = match self.op {
            Op::Lt => observed < self.target,
            Op::Le => observed <= self.target,
            Op::Gt => observed > self.target,
            Op::Ge => observed >= self.target,
            Op::Eq => observed == self.target,
            Op::Ne => observed != self.target,
        };
        (ok, observed)
    }
}

fn observe(stat: &Stat, agg: Option<&Agg>, elapsed_s: f64) -> f64 {
    let empty = TrendAgg::new();
    match (stat, agg) {
        (Stat::Count, Some(Agg::Counter { sum, .. })) => *sum,
        (Stat::Rate, Some(Agg::Counter { sum, .. })) if elapsed_s > 0.0 => sum / elapsed_s,
        (Stat::Rate, Some(Agg::Rate { trues, total })) if *total > 0 => {
            *trues as f64 / *total as f64
        }
        (Stat::Value, Some(Agg::Gauge { last, n, .. })) if *n > 0 => *last,
        (s, Some(Agg::Trend(t))) => trend_stat(s, t),
        (s, None) => trend_stat(s, &empty),
        _ => 0.0,
    }
}

fn trend_stat(s: &Stat, t: &TrendAgg) -> f64 {
    if t.count == 0 {
        return 0.0;
    }
    match s {
        Stat::Avg => t.mean(),
        Stat::Min => t.min,
        Stat::Max => t.max,
        Stat::Med => t.percentile(50.0),
        Stat::P(p) => t.percentile(*p),
        _ => 0.0,
    }
}

/// Merge every series that belongs to `th`'s (sub-)metric.
pub fn merged<'a>(
    th: &Threshold,
    series: impl Iterator<Item = (&'a str, &'a TagSet, &'a Agg)>,
) -> Option<Agg> {
    let mut out: Option<Agg> = None;
    for (name, tags, agg) in series {
        if !th.matches(name, tags) {
            continue;
        }
        match &mut out {
            Some(o) => o.merge(agg),
            None => out = Some(agg.clone()),
        }
    }
    out
}

/// One threshold's verdict.
#[derive(Clone, Debug)]
pub struct Verdict {
    pub ok: bool,
    pub observed: f64,
}

/// Evaluate all thresholds on a set of series. `series` is called once per threshold.
pub fn evaluate<'a, I>(ths: &[Threshold], series: impl Fn() -> I, elapsed_s: f64) -> Vec<Verdict>
where
    I: Iterator<Item = (&'a str, &'a TagSet, &'a Agg)>,
{
    ths.iter()
        .map(|th| {
            let agg = merged(th, series());
            let (ok, observed) = th.check(agg.as_ref(), elapsed_s);
            Verdict { ok, observed }
        })
        .collect()
}

/// Replace the verdicts of drift thresholds (see the module docs) with their judgement on the
/// finished run; `verdicts` are [`evaluate`]'s, in the same order. A drift threshold passes
/// when every series it selects passes; its observed value is the worst one (NaN: no data,
/// which fails).
pub fn evaluate_drift(ths: &[Threshold], r: &volley_metrics::RunResult, verdicts: &mut [Verdict]) {
    for (th, v) in ths.iter().zip(verdicts.iter_mut()) {
        let Some(c) = &th.drift else { continue };
        let tags: TagSet = th.tags.iter().cloned().collect();
        let outcomes = volley_monitor::evaluate(r, &th.name, &tags, c);
        let upper = matches!(
            c.op,
            volley_monitor::drift::Op::Lt | volley_monitor::drift::Op::Le
        );
        let worst = outcomes.iter().filter_map(|o| o.observed).reduce(|a, b| {
            if upper {
                a.max(b)
            } else {
                a.min(b)
            }
        });
        *v = Verdict {
            ok: !outcomes.is_empty() && outcomes.iter().all(|o| o.passed),
            observed: worst.unwrap_or(f64::NAN),
        };
    }
}

impl Threshold {
    /// A drift threshold during the run (`abortOnFail`), `elapsed_s` into it: `Some(false)`
    /// once it is crossed, None while it cannot be judged yet. `slope` is judged after
    /// `warmup_s` ([`volley_monitor::drift::live_slope`]); `max`, `min` and `last` on gauges at
    /// once; `avg` and `drift()` need the whole run and are left to the end.
    pub fn check_live(
        &self,
        agg: &volley_metrics::Aggregator,
        elapsed_s: f64,
        warmup_s: f64,
    ) -> Option<bool> {
        let totals = agg
            .totals()
            .map(|(d, a)| (d.key.name.as_str(), &d.key.tags, a));
        self.check_live_on(totals, agg.series(), elapsed_s, warmup_s)
    }

    /// [`Threshold::check_live`] on running totals and a series from elsewhere (a distributed
    /// run's coordinator merges them from its agents; the series' t = 0 is the run's start).
    pub fn check_live_on<'a>(
        &self,
        totals: impl Iterator<Item = (&'a str, &'a TagSet, &'a Agg)>,
        series: &volley_metrics::Series,
        elapsed_s: f64,
        warmup_s: f64,
    ) -> Option<bool> {
        use volley_monitor::drift::Aggregate as A;
        let c = self.drift.as_ref()?;
        let bytes = format!("{}_bytes", self.name);
        let mut verdict = None;
        for (name, tags, a) in totals {
            if (name != self.name && name != bytes)
                || !self
                    .tags
                    .iter()
                    .all(|(k, v)| tags.get(k).map(String::as_str) == Some(v.as_str()))
            {
                continue;
            }
            let observed = match (c.aggregate, a) {
                (A::Slope, _) => {
                    volley_monitor::drift::live_slope(series, name, tags, elapsed_s, warmup_s)
                }
                (A::Max, Agg::Gauge { max, n, .. }) if *n > 0 => Some(*max),
                (A::Min, Agg::Gauge { min, n, .. }) if *n > 0 => Some(*min),
                (A::Last, Agg::Gauge { last, n, .. }) if *n > 0 => Some(*last),
                _ => None,
            };
            if let Some(v) = observed {
                verdict = Some(verdict.unwrap_or(true) && c.passes(v));
            }
        }
        verdict
    }
}

/// k6's message for crossed thresholds: `thresholds on metrics 'a, b' have been crossed`.
pub fn crossed_names(ths: &[Threshold], verdicts: &[Verdict]) -> Vec<String> {
    let mut names: Vec<String> = ths
        .iter()
        .zip(verdicts)
        .filter(|(_, v)| !v.ok)
        .map(|(t, _)| t.metric.clone())
        .collect();
    names.dedup();
    names
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kind(n: &str) -> Option<MetricKind> {
        volley_metrics::names::BUILTIN
            .iter()
            .find(|(m, _)| *m == n)
            .map(|(_, k)| *k)
    }

    #[test]
    fn expressions_parse_like_k6() {
        assert_eq!(
            parse_expression("p(95)<200").unwrap(),
            (Stat::P(95.0), Op::Lt, 200.0)
        );
        assert_eq!(
            parse_expression(" p(99.9) <= 1.5 ").unwrap(),
            (Stat::P(99.9), Op::Le, 1.5)
        );
        assert_eq!(
            parse_expression("rate>=0.95").unwrap(),
            (Stat::Rate, Op::Ge, 0.95)
        );
        assert_eq!(
            parse_expression("count===3").unwrap(),
            (Stat::Count, Op::Eq, 3.0)
        );
        assert_eq!(
            parse_expression("count != 0").unwrap(),
            (Stat::Count, Op::Ne, 0.0)
        );
        assert!(parse_expression("p95<200")
            .unwrap_err()
            .contains("unknown aggregation"));
        assert!(parse_expression("avg 200")
            .unwrap_err()
            .contains("no operator"));
        assert!(parse_expression("avg<fast")
            .unwrap_err()
            .contains("not a number"));
    }

    #[test]
    fn metric_keys_select_sub_metrics() {
        assert_eq!(
            parse_metric_key("http_reqs").unwrap(),
            ("http_reqs".into(), vec![])
        );
        let (n, t) = parse_metric_key("checks{check:status is 200}").unwrap();
        assert_eq!((n.as_str(), t[0].1.as_str()), ("checks", "status is 200"));
        let (_, t) = parse_metric_key("group_duration{group:::login}").unwrap();
        assert_eq!(t, vec![("group".into(), "::login".into())]);
        let (_, t) = parse_metric_key("x{a:b, c:\"d\"}").unwrap();
        assert_eq!(t, vec![("a".into(), "b".into()), ("c".into(), "d".into())]);
        assert!(parse_metric_key("x{a:b").is_err());
        assert!(parse_metric_key("x{ab}").is_err());
    }

    #[test]
    fn options_are_validated_with_their_path() {
        let ths = parse(
            &json!({"http_req_duration{name:a}": ["p(95)<200", {"threshold": "avg<100", "abortOnFail": true, "delayAbortEval": "5s"}],
                    "checks": ["rate>0.9"]}),
            kind,
        )
        .unwrap();
        assert_eq!(ths.len(), 3);
        let a = ths.iter().find(|t| t.source == "avg<100").unwrap();
        assert!(a.abort_on_fail);
        assert_eq!(a.delay_abort_eval, Duration::from_secs(5));
        let e = parse(&json!({"nope": ["count>1"]}), kind).unwrap_err();
        assert!(e.contains("no metric name \"nope\""), "{e}");
        let e = parse(&json!({"http_reqs": ["p(95)<1"]}), kind).unwrap_err();
        assert!(
            e.contains("options.thresholds[\"http_reqs\"][0]") && e.contains("count, rate"),
            "{e}"
        );
        let e = parse(&json!({"checks": ["rate>>1"]}), kind).unwrap_err();
        assert!(e.contains("[0]"), "{e}");
    }

    fn kind_or_monitor(n: &str) -> Option<MetricKind> {
        kind(n).or_else(|| n.starts_with("monitor_").then_some(MetricKind::Gauge))
    }

    #[test]
    fn drift_checks_extend_the_grammar_without_changing_k6s() {
        let ths = parse(
            &json!({
                "monitor_rss_bytes{target:api}": ["slope<5MB/h", "max<2GB", "value<3000000000"],
                "http_req_duration": ["drift(p95)<10%", "max<200", "p(95)<300"],
                "vus": ["max<=10"],
            }),
            kind_or_monitor,
        )
        .unwrap();
        let get = |src: &str| ths.iter().find(|t| t.source == src).unwrap();
        let slope = get("slope<5MB/h");
        assert_eq!(slope.tags, vec![("target".into(), "api".into())]);
        let c = slope.drift.as_ref().unwrap();
        assert_eq!(c.aggregate, volley_monitor::drift::Aggregate::Slope);
        assert_eq!((slope.op, slope.target), (Op::Lt, 5e6));
        assert_eq!(get("max<2GB").drift.as_ref().unwrap().limit, 2e9);
        assert!(get("drift(p95)<10%").drift.is_some());
        // k6's own forms stay k6's: value on a gauge, max and p(N) on a trend.
        assert!(get("value<3000000000").drift.is_none());
        assert_eq!(get("max<200").stat, Stat::Max);
        assert!(get("max<200").drift.is_none());
        // max on a gauge is not k6 grammar: it becomes a drift check over the run.
        assert!(get("max<=10").drift.is_some());
        for (key, bad, needle) in [
            ("http_req_duration", "slope<5XB/h", "unknown unit"),
            ("http_req_duration", "drift(p42)<1%", "drift() takes"),
            ("http_req_duration", "max<2GB", "not a number"),
            ("http_reqs", "max<2", "count, rate, or slope"),
        ] {
            let e = parse(&json!({ key: [bad] }), kind_or_monitor).unwrap_err();
            assert!(e.contains(needle) && e.contains("[0]"), "{key} {bad}: {e}");
        }
    }

    #[test]
    fn drift_verdicts_replace_the_k6_ones_and_missing_data_fails() {
        use volley_metrics::{Aggregator, MetricKey, Recorder, RunMeta, RunResult};
        let mut agg = Aggregator::new(1, 100);
        let mut rec = Recorder::new();
        let api = MetricKey::tagged("monitor_rss_bytes", &[("target", "api")]);
        let db = MetricKey::tagged("monitor_rss_bytes", &[("target", "db")]);
        let ha = rec.handle(api, MetricKind::Gauge, volley_metrics::Unit::Data);
        let hd = rec.handle(db, MetricKind::Gauge, volley_metrics::Unit::Data);
        for t in 0..30u64 {
            // api leaks 1 MB/s, db is steady.
            rec.add(ha, 1e8 + t as f64 * 1e6);
            rec.add(hd, 5e7);
            agg.add(0, t, rec.snapshot());
            // Live: the slope is judged only after the warm-up and enough samples.
            let th = parse(
                &json!({"monitor_rss_bytes": ["slope<5MB/h"]}),
                kind_or_monitor,
            )
            .unwrap();
            let live = th[0].check_live(&agg, t as f64 + 1.0, 10.0);
            if t < 10 {
                assert_eq!(live, None, "{t}");
            } else if t >= 21 {
                assert_eq!(live, Some(false), "{t}");
            }
        }
        let (metrics, series) = agg.finish();
        let meta = RunMeta {
            duration_s: 30.0,
            ..Default::default()
        };
        let r = RunResult::new(meta, serde_json::Value::Null, metrics, series);
        let ths = parse(
            &json!({
                "monitor_rss_bytes": ["slope<5MB/h"],
                "monitor_rss_bytes{target:db}": ["slope<5MB/h", "max<100MB"],
                "monitor_rss_bytes{target:web}": ["max<1GB"],
            }),
            kind_or_monitor,
        )
        .unwrap();
        let mut v = vec![
            Verdict {
                ok: true,
                observed: 0.0
            };
            ths.len()
        ];
        evaluate_drift(&ths, &r, &mut v);
        let by = |m: &str, src: &str| {
            let i = ths
                .iter()
                .position(|t| t.metric == m && t.source == src)
                .unwrap();
            v[i].clone()
        };
        let all = by("monitor_rss_bytes", "slope<5MB/h");
        assert!(!all.ok && (all.observed - 3.6e9).abs() < 1e6, "{all:?}");
        assert!(by("monitor_rss_bytes{target:db}", "slope<5MB/h").ok);
        assert!(by("monitor_rss_bytes{target:db}", "max<100MB").ok);
        let web = by("monitor_rss_bytes{target:web}", "max<1GB");
        assert!(!web.ok && web.observed.is_nan(), "{web:?}");
    }

    #[test]
    fn verdicts_from_merged_series() {
        let ths = parse(
            &json!({"checks{check:a}": ["rate==1"], "checks": ["rate>0.9"], "http_reqs": ["count>=3", "rate>100"]}),
            kind,
        )
        .unwrap();
        let mut t1 = TagSet::new();
        t1.insert("check".into(), "a".into());
        let mut t2 = TagSet::new();
        t2.insert("check".into(), "b".into());
        let series = [
            ("checks".to_string(), t1, Agg::Rate { trues: 3, total: 3 }),
            ("checks".to_string(), t2, Agg::Rate { trues: 0, total: 3 }),
            (
                "http_reqs".to_string(),
                TagSet::new(),
                Agg::Counter { sum: 3.0, n: 3 },
            ),
        ];
        let v = evaluate(
            &ths,
            || series.iter().map(|(n, t, a)| (n.as_str(), t, a)),
            2.0,
        );
        let by = |src: &str, m: &str| {
            let i = ths
                .iter()
                .position(|t| t.source == src && t.metric == m)
                .unwrap();
            (v[i].ok, v[i].observed)
        };
        assert_eq!(by("rate==1", "checks{check:a}"), (true, 1.0));
        assert_eq!(by("rate>0.9", "checks"), (false, 0.5));
        assert_eq!(by("count>=3", "http_reqs"), (true, 3.0));
        assert_eq!(by("rate>100", "http_reqs"), (false, 1.5));
    }
}
