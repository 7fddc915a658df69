//! The end-of-test summary in k6's text layout, `handleSummary`'s data object, and
//! `--summary-export` in k6's legacy export shape — all computed from a [`RunResult`] alone
//! (so `volley summary run.json` prints the same text).
//!
//! Every metric is shown as its total over all tag sets (k6 shows the untagged metric);
//! sub-metrics (`http_req_duration{name:a}`) are the merge of the series whose tags include
//! the pairs, listed under their parent: the ones thresholds name, plus
//! `{ expected_response:true }` under `http_req_duration`, as k6 does. A metric with
//! thresholds is marked ✓ (all passed) or ✗. This file renders the pre-1.0 (`legacy`) text:
//! checks per group, sorted by name; k6 v1's `compact`/`full` layouts are in
//! `summary_v1`, which lists checks in first-seen order (`options.check_order`).

use std::collections::BTreeMap;
use volley_metrics::agg::TrendAgg;
use volley_metrics::fmt::k6::{humanize, pct};
use volley_metrics::text::escape_control as esc;
use volley_metrics::{Agg, MetricKind, RunResult, TagSet, Unit};

/// One metric (or sub-metric) merged over its tag sets.
pub struct Merged {
    pub unit: Unit,
    pub agg: Agg,
    /// Thresholds on exactly this key: (expression, ok).
    pub thresholds: Vec<(String, bool)>,
}

/// k6's summary options (`summaryTrendStats`, `summaryTimeUnit`).
#[derive(Clone, Debug)]
pub struct SummaryOptions {
    pub trend_stats: Vec<String>,
    /// "" (adaptive), "s", "ms" or "us".
    pub time_unit: String,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions {
            trend_stats: DEFAULT_TREND_STATS.iter().map(|s| s.to_string()).collect(),
            time_unit: String::new(),
        }
    }
}

pub const DEFAULT_TREND_STATS: &[&str] = &["avg", "min", "med", "max", "p(90)", "p(95)"];

/// Validate a `summaryTrendStats` entry (`avg`, `min`, `med`, `max`, `count`, `p(N)`).
pub fn valid_trend_stat(s: &str) -> bool {
    matches!(s, "avg" | "min" | "med" | "max" | "count")
        || s.strip_prefix("p(")
            .and_then(|r| r.strip_suffix(')'))
            .and_then(|n| n.parse::<f64>().ok())
            .is_some_and(|p| (0.0..=100.0).contains(&p))
}

/// Totals per metric key, and check counts per group path and check name.
pub struct Summary {
    /// Keyed by the full key (`name` or `name{tags}`).
    pub metrics: BTreeMap<String, Merged>,
    /// group path → check name → (passes, fails)
    pub checks: BTreeMap<String, BTreeMap<String, (u64, u64)>>,
    /// Every group path seen (from checks and group_duration).
    pub groups: Vec<String>,
    pub duration_s: f64,
    pub options: SummaryOptions,
    /// Watched targets (`--monitor`), by their `target` tag: the "Target" block.
    pub targets: BTreeMap<String, volley_monitor::TargetSummary>,
    /// Per scenario (from the `scenario` tag), when the run had more than one.
    pub scenarios: Vec<ScenarioSummary>,
    /// Every series (name, tags, unit, totals): k6 v1's `full` mode splits them per group
    /// and scenario.
    pub series: Vec<(String, TagSet, Unit, Agg)>,
    /// (group path, check name) in first-seen order, when the result file has it.
    pub check_order: Vec<(String, String)>,
    /// Group paths in the order first entered, when the result file has it.
    pub group_order: Vec<String>,
}

/// One scenario's figures for the summary's per-scenario block.
#[derive(Clone, Debug, Default)]
pub struct ScenarioSummary {
    pub name: String,
    pub iterations: u64,
    pub interrupted: u64,
    pub dropped: u64,
    pub http_reqs: u64,
    /// http_req_duration of the scenario's requests.
    pub duration: Option<volley_metrics::agg::TrendAgg>,
    /// checks: (passes, total).
    pub checks: (u64, u64),
}

impl ScenarioSummary {
    /// Gather per-scenario figures from the metrics' `scenario` tag and the result's options.
    fn collect(r: &RunResult, aggs: &[(&volley_metrics::MetricTotal, Agg)]) -> Vec<Self> {
        let Some(list) = r.options.get("scenarios").and_then(|v| v.as_array()) else {
            return Vec::new();
        };
        if list.len() < 2 {
            return Vec::new();
        }
        let mut out: Vec<ScenarioSummary> = list
            .iter()
            .map(|v| ScenarioSummary {
                name: v["name"].as_str().unwrap_or_default().to_string(),
                interrupted: v["interrupted_iterations"].as_u64().unwrap_or(0),
                dropped: v[volley_metrics::names::DROPPED_ITERATIONS]
                    .as_u64()
                    .unwrap_or(0),
                ..Default::default()
            })
            .collect();
        for (m, agg) in aggs {
            let Some(sc) = m.tags.get("scenario") else {
                continue;
            };
            let Some(e) = out.iter_mut().find(|e| &e.name == sc) else {
                continue;
            };
            match (m.name.as_str(), agg) {
                ("iterations", Agg::Counter { sum, .. }) => e.iterations += *sum as u64,
                (volley_metrics::names::HTTP_REQS, Agg::Counter { sum, .. }) => {
                    e.http_reqs += *sum as u64
                }
                ("checks", Agg::Rate { trues, total }) => {
                    e.checks.0 += trues;
                    e.checks.1 += total;
                }
                (volley_metrics::names::HTTP_REQ_DURATION, Agg::Trend(t)) => {
                    match &mut e.duration {
                        Some(d) => d.merge(t),
                        None => e.duration = Some((**t).clone()),
                    }
                }
                _ => {}
            }
        }
        out
    }
}

impl Summary {
    pub fn from_result(r: &RunResult) -> Result<Summary, String> {
        let mut metrics: BTreeMap<String, Merged> = BTreeMap::new();
        let mut checks: BTreeMap<String, BTreeMap<String, (u64, u64)>> = BTreeMap::new();
        let mut groups = vec![String::new()];
        let mut aggs = Vec::with_capacity(r.metrics.len());
        for m in &r.metrics {
            let agg = m.to_agg()?;
            if m.name == "checks" {
                if let Agg::Rate { trues, total } = &agg {
                    let g = m.tags.get("group").cloned().unwrap_or_default();
                    let name = match m.tags.get("check") {
                        Some(c) => c.clone(),
                        // The guard's overflow series (volley_metrics::guard).
                        None if m.tags.contains_key(volley_metrics::OVERFLOW_TAG) => {
                            "(other checks, beyond maxSeriesPerMetric)".into()
                        }
                        None => String::new(),
                    };
                    let e = checks
                        .entry(g.clone())
                        .or_default()
                        .entry(name)
                        .or_default();
                    e.0 += trues;
                    e.1 += total - trues;
                    groups.push(g);
                }
            }
            if m.name == volley_metrics::names::GROUP_DURATION {
                if let Some(g) = m.tags.get("group") {
                    groups.push(g.clone());
                }
            }
            match metrics.get_mut(&m.name) {
                Some(e) => e.agg.merge(&agg),
                None => {
                    metrics.insert(
                        m.name.clone(),
                        Merged {
                            unit: m.unit,
                            agg: agg.clone(),
                            thresholds: Vec::new(),
                        },
                    );
                }
            }
            aggs.push((m, agg));
        }
        let scenarios = ScenarioSummary::collect(r, &aggs);
        let series = aggs
            .iter()
            .map(|(m, a)| (m.name.clone(), m.tags.clone(), m.unit, a.clone()))
            .collect();
        let group_order = r.options["group_order"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|g| Some(g.as_str()?.to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let check_order = r.options["check_order"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|p| Some((p[0].as_str()?.to_string(), p[1].as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        // Sub-metrics: those thresholds name, and k6's default one.
        let mut subs: Vec<String> = r
            .thresholds
            .iter()
            .map(|t| t.metric.clone())
            .filter(|k| k.contains('{'))
            .collect();
        if metrics.contains_key(volley_metrics::names::HTTP_REQ_DURATION) {
            subs.push("http_req_duration{expected_response:true}".into());
        }
        for key in subs {
            if metrics.contains_key(&key) {
                continue;
            }
            let Ok((name, tags)) = crate::thresholds::parse_metric_key(&key) else {
                continue;
            };
            let mut merged: Option<Merged> = None;
            for (m, agg) in &aggs {
                let hit = m.name == name
                    && tags
                        .iter()
                        .all(|(k, v)| m.tags.get(k).map(String::as_str) == Some(v.as_str()));
                if !hit {
                    continue;
                }
                match &mut merged {
                    Some(x) => x.agg.merge(agg),
                    None => {
                        merged = Some(Merged {
                            unit: m.unit,
                            agg: agg.clone(),
                            thresholds: Vec::new(),
                        })
                    }
                }
            }
            // A sub-metric nothing recorded into still shows (empty), as in k6.
            let merged = merged.or_else(|| {
                metrics.get(&name).map(|p| Merged {
                    unit: p.unit,
                    agg: Agg::empty(p.agg.kind()),
                    thresholds: Vec::new(),
                })
            });
            if let Some(m) = merged {
                metrics.insert(key, m);
            }
        }
        // k6 always reports the bytes on the wire: zero when the script made no request.
        for name in [
            volley_metrics::names::DATA_RECEIVED,
            volley_metrics::names::DATA_SENT,
        ] {
            metrics.entry(name.into()).or_insert_with(|| Merged {
                unit: Unit::Data,
                agg: Agg::empty(MetricKind::Counter),
                thresholds: Vec::new(),
            });
        }
        for t in &r.thresholds {
            if let Some(m) = metrics.get_mut(&t.metric) {
                m.thresholds.push((t.expression.clone(), t.ok));
            }
        }
        // Parents of nested groups exist even without their own checks.
        let mut all: Vec<String> = Vec::new();
        for g in groups {
            let mut p = g.as_str();
            loop {
                all.push(p.to_string());
                match p.rfind("::") {
                    Some(i) => p = &p[..i],
                    None => break,
                }
            }
        }
        all.sort();
        all.dedup();
        let script = &r.options["script"];
        let mut options = SummaryOptions::default();
        if let Some(a) = script.get("summaryTrendStats").and_then(|v| v.as_array()) {
            let stats: Vec<String> = a
                .iter()
                .filter_map(|s| s.as_str())
                .filter(|s| valid_trend_stat(s))
                .map(str::to_string)
                .collect();
            if !stats.is_empty() {
                options.trend_stats = stats;
            }
        }
        if let Some(u) = script.get("summaryTimeUnit").and_then(|v| v.as_str()) {
            options.time_unit = u.to_string();
        }
        Ok(Summary {
            metrics,
            checks,
            groups: all,
            duration_s: r.meta.duration_s,
            options,
            targets: volley_monitor::summarize(r),
            scenarios,
            series,
            check_order,
            group_order,
        })
    }

    pub fn counter(&self, name: &str) -> f64 {
        match self.metrics.get(name).map(|m| &m.agg) {
            Some(Agg::Counter { sum, .. }) => *sum,
            _ => 0.0,
        }
    }

    /// Metric keys in k6's order: by parent name, each parent followed by its sub-metrics.
    fn ordered(&self) -> Vec<&String> {
        let mut names: Vec<&String> = self.metrics.keys().collect();
        let split = |k: &str| -> (String, String) {
            let i = k.find('{').unwrap_or(k.len());
            (k[..i].to_string(), k[i..].to_string())
        };
        names.sort_by_key(|k| split(k));
        names
    }

    pub(crate) fn rate_of(&self, v: f64) -> f64 {
        if self.duration_s > 0.0 {
            v / self.duration_s
        } else {
            0.0
        }
    }

    /// One trend statistic, in the metric's unit (ms for time trends).
    pub(crate) fn trend_value(t: &TrendAgg, stat: &str) -> f64 {
        if t.count == 0 {
            return 0.0;
        }
        match stat {
            "avg" => t.mean(),
            "min" => t.min,
            "max" => t.max,
            "med" => t.percentile(50.0),
            "count" => t.count as f64,
            p => p
                .strip_prefix("p(")
                .and_then(|r| r.strip_suffix(')'))
                .and_then(|n| n.parse::<f64>().ok())
                .map_or(0.0, |p| t.percentile(p)),
        }
    }

    /// Text in k6's layout (without colours). Names (metrics, tags, checks, groups, scenarios)
    /// are shown with control characters escaped: a crafted file or script cannot drive the
    /// terminal.
    pub fn render_text(&self) -> String {
        let mut out = String::from("\n");
        self.render_group("", 1, &mut out);
        out.push('\n');
        let names = self.ordered();
        let display = |k: &str| -> (usize, String) {
            match k.find('{') {
                Some(i) => (
                    2,
                    format!("{{ {} }}", esc(&k[i + 1..k.len().saturating_sub(1)])),
                ),
                None => (0, esc(k).into_owned()),
            }
        };
        let width = names
            .iter()
            .map(|k| {
                let (ind, d) = display(k);
                ind + d.chars().count()
            })
            .max()
            .unwrap_or(0);
        let stats = &self.options.trend_stats;
        // Formatted values, so columns can be aligned as k6 aligns them.
        use crate::summary_v1::Cells as Row;
        let mut rows = Vec::new();
        for k in &names {
            let m = &self.metrics[*k];
            let row = self.value_cells(m.unit, &m.agg, |trues, total| {
                vec![format!("✓ {trues}"), format!("✗ {}", total - trues)]
            });
            rows.push(row);
        }
        let w = |s: &String| s.chars().count();
        let mut trend_w = vec![0; stats.len()];
        let mut value_w = 0;
        let mut extra_w: Vec<usize> = Vec::new();
        for r in &rows {
            match r {
                Row::Trend(cols) => {
                    for (i, c) in cols.iter().enumerate() {
                        trend_w[i] = trend_w[i].max(w(c));
                    }
                }
                Row::Other(v, ex) => {
                    value_w = value_w.max(w(v));
                    for (i, e) in ex.iter().enumerate() {
                        if extra_w.len() <= i {
                            extra_w.push(0);
                        }
                        extra_w[i] = extra_w[i].max(w(e));
                    }
                }
            }
        }
        for (k, r) in names.iter().zip(&rows) {
            let m = &self.metrics[*k];
            let mark = if m.thresholds.is_empty() {
                ' '
            } else if m.thresholds.iter().all(|(_, ok)| *ok) {
                '✓'
            } else {
                '✗'
            };
            let (ind, d) = display(k);
            let dots = ".".repeat(width + 3 - ind - d.chars().count());
            let value = match r {
                Row::Trend(cols) => stats
                    .iter()
                    .zip(cols)
                    .enumerate()
                    .map(|(i, (s, c))| format!("{s}={c}{}", " ".repeat(trend_w[i] - w(c))))
                    .collect::<Vec<_>>()
                    .join(" "),
                Row::Other(v, ex) => {
                    let mut s = format!("{v}{}", " ".repeat(value_w - w(v)));
                    for (i, e) in ex.iter().enumerate() {
                        s.push(' ');
                        s.push_str(e);
                        s.push_str(&" ".repeat(extra_w[i] - w(e)));
                    }
                    s
                }
            };
            let value = value.trim_end();
            out.push_str(&format!(
                "   {}{mark} {d}{dots}: {value}\n",
                " ".repeat(ind)
            ));
        }
        self.render_scenarios(&mut out);
        // `--monitor`: start, peak, end and slope per watched target.
        out.push_str(&volley_monitor::summary::render_text(&self.targets, "", ""));
        out.push('\n');
        out
    }

    /// One line per scenario: iterations, requests, latency, checks.
    fn render_scenarios(&self, out: &mut String) {
        if self.scenarios.is_empty() {
            return;
        }
        let unit = self.options.time_unit.as_str();
        let width = self
            .scenarios
            .iter()
            .map(|s| esc(&s.name).len())
            .max()
            .unwrap_or(0);
        out.push_str("\n     █ SCENARIOS\n\n");
        for sc in &self.scenarios {
            let mut line = format!(
                "     {:<width$}  iterations={} interrupted={}",
                esc(&sc.name),
                sc.iterations,
                sc.interrupted
            );
            if sc.dropped > 0 {
                line.push_str(&format!(" dropped={}", sc.dropped));
            }
            line.push_str(&format!(" http_reqs={}", sc.http_reqs));
            if let Some(t) = sc.duration.as_ref().filter(|t| t.count > 0) {
                line.push_str(&format!(
                    " avg={} p(95)={}",
                    humanize(Self::trend_value(t, "avg"), Unit::Time, unit),
                    humanize(Self::trend_value(t, "p(95)"), Unit::Time, unit)
                ));
            }
            if sc.checks.1 > 0 {
                line.push_str(&format!(
                    " checks={}",
                    pct(sc.checks.0, sc.checks.1).trim_end()
                ));
            }
            out.push_str(&line);
            out.push('\n');
        }
    }

    fn render_group(&self, path: &str, depth: usize, out: &mut String) {
        let indent = "  ".repeat(depth + 1) + " ";
        if let Some(cs) = self.checks.get(path) {
            for (name, (p, f)) in cs {
                let name = esc(name);
                if *f == 0 {
                    out.push_str(&format!("{indent}✓ {name}\n"));
                } else {
                    out.push_str(&format!("{indent}✗ {name}\n"));
                    let succ = (100 * p) / (p + f).max(1);
                    out.push_str(&format!("{indent} ↳  {succ}% — ✓ {p} / ✗ {f}\n"));
                }
            }
        }
        for g in &self.groups {
            let Some(rest) = g.strip_prefix(path).and_then(|r| r.strip_prefix("::")) else {
                continue;
            };
            if rest.contains("::") || (path.is_empty() && g.is_empty()) {
                continue;
            }
            out.push_str(&format!("\n{indent}█ {}\n\n", esc(rest)));
            self.render_group(g, depth + 1, out);
        }
    }

    /// A metric's values as k6 puts them in `handleSummary`'s data (`values`).
    fn values(&self, m: &Merged) -> serde_json::Value {
        use serde_json::{json, Map, Value};
        match &m.agg {
            Agg::Counter { sum, .. } => json!({"count": sum, "rate": self.rate_of(*sum)}),
            Agg::Gauge { last, min, max, n } => {
                if *n == 0 {
                    json!({"value": 0.0, "min": 0.0, "max": 0.0})
                } else {
                    json!({"value": last, "min": min, "max": max})
                }
            }
            Agg::Rate { trues, total } => json!({
                "rate": if *total == 0 { 0.0 } else { *trues as f64 / *total as f64 },
                "passes": trues,
                "fails": total - trues,
            }),
            Agg::Trend(t) => {
                let mut o = Map::new();
                for s in &self.options.trend_stats {
                    o.insert(s.clone(), Value::from(Self::trend_value(t, s)));
                }
                Value::Object(o)
            }
        }
    }

    /// When group `path` was first entered (older files: where it, or one below it, first
    /// recorded a check); `usize::MAX` if unknown.
    pub(crate) fn first_seen_group(&self, path: &str) -> usize {
        if let Some(i) = self.group_order.iter().position(|g| g == path) {
            return i;
        }
        let below = format!("{path}::");
        self.check_order
            .iter()
            .position(|(g, _)| g == path || g.starts_with(&below))
            .unwrap_or(usize::MAX)
    }

    /// `root_group` as in k6: `groups` and `checks` as arrays (`legacy`: objects keyed by
    /// name, the `--summary-export` shape).
    fn group_json(&self, path: &str, name: &str, legacy: bool) -> serde_json::Value {
        use serde_json::{json, Map, Value};
        let mut checks = Vec::new();
        if let Some(cs) = self.checks.get(path) {
            for (n, (p, f)) in cs {
                let cpath = format!("{path}::{n}");
                checks.push((
                    n.clone(),
                    json!({"name": n, "path": cpath, "id": md5_hex(cpath.as_bytes()), "passes": p, "fails": f}),
                ));
            }
        }
        // k6 lists them in first-seen order (then by name, for files without the order).
        checks.sort_by_key(|(n, _)| {
            self.check_order
                .iter()
                .position(|(g, c)| g == path && c == n)
                .unwrap_or(usize::MAX)
        });
        let mut groups = Vec::new();
        for g in &self.groups {
            if let Some(rest) = g.strip_prefix(path).and_then(|r| r.strip_prefix("::")) {
                if !rest.contains("::") && !g.is_empty() {
                    groups.push((self.first_seen_group(g), rest.to_string(), g));
                }
            }
        }
        groups.sort();
        let groups: Vec<(String, serde_json::Value)> = groups
            .into_iter()
            .map(|(_, rest, g)| (rest.clone(), self.group_json(g, &rest, legacy)))
            .collect();
        let (groups, checks) = if legacy {
            (
                Value::Object(groups.into_iter().collect::<Map<_, _>>()),
                Value::Object(checks.into_iter().collect::<Map<_, _>>()),
            )
        } else {
            (
                Value::Array(groups.into_iter().map(|x| x.1).collect()),
                Value::Array(checks.into_iter().map(|x| x.1).collect()),
            )
        };
        json!({"name": name, "path": path, "id": md5_hex(path.as_bytes()), "groups": groups, "checks": checks})
    }

    /// `handleSummary(data)`'s argument, in k6's shape.
    pub fn data(&self, stdout_tty: bool, stderr_tty: bool) -> serde_json::Value {
        use serde_json::{json, Map, Value};
        let mut metrics = Map::new();
        for (k, m) in &self.metrics {
            let (kind, contains) = (kind_name(m.agg.kind()), contains(m.unit));
            let mut o = json!({"type": kind, "contains": contains, "values": self.values(m)});
            if !m.thresholds.is_empty() {
                let th: Map<String, Value> = m
                    .thresholds
                    .iter()
                    .map(|(e, ok)| (e.clone(), json!({ "ok": ok })))
                    .collect();
                o["thresholds"] = Value::Object(th);
            }
            metrics.insert(k.clone(), o);
        }
        json!({
            "root_group": self.group_json("", "", false),
            "metrics": metrics,
            "options": {
                "summaryTrendStats": self.options.trend_stats,
                "summaryTimeUnit": self.options.time_unit,
                "noColor": false,
            },
            "state": {
                "isStdOutTTY": stdout_tty,
                "isStdErrTTY": stderr_tty,
                "testRunDurationMs": self.duration_s * 1000.0,
            },
        })
    }

    /// k6's `--summary-export` shape (the legacy JSON: `root_group` and `metrics`; rates as
    /// `passes/fails/value`, thresholds as `{expression: failed}`).
    pub fn export(&self) -> serde_json::Value {
        use serde_json::{json, Map, Value};
        let mut metrics = Map::new();
        for (name, m) in &self.metrics {
            let mut v = match &m.agg {
                Agg::Rate { trues, total } => json!({
                    "passes": trues,
                    "fails": total - trues,
                    "value": if *total == 0 { 0.0 } else { *trues as f64 / *total as f64 },
                }),
                _ => self.values(m),
            };
            if !m.thresholds.is_empty() {
                let th: Map<String, Value> = m
                    .thresholds
                    .iter()
                    .map(|(e, ok)| (e.clone(), Value::Bool(!ok)))
                    .collect();
                v["thresholds"] = Value::Object(th);
            }
            metrics.insert(name.clone(), v);
        }
        go_numbers(json!({"root_group": self.group_json("", "", true), "metrics": metrics}))
    }
}

/// Print whole numbers as k6 (Go's encoding/json) does: `568`, not serde's `568.0`, so
/// readers that expect integer counts keep working.
fn go_numbers(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(a) => Value::Array(a.into_iter().map(go_numbers).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, go_numbers(v))).collect()),
        other => other,
    }
}

fn contains(u: Unit) -> &'static str {
    match u {
        Unit::Time => "time",
        Unit::Data => "data",
        Unit::Default => "default",
    }
}

pub(crate) fn kind_name(k: MetricKind) -> &'static str {
    match k {
        MetricKind::Counter => "counter",
        MetricKind::Gauge => "gauge",
        MetricKind::Rate => "rate",
        MetricKind::Trend => "trend",
    }
}

/// MD5 as lowercase hex: k6 names groups and checks by the MD5 of their path.
pub(crate) fn md5_hex(input: &[u8]) -> String {
    crate::md5::md5(input)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_prints_whole_numbers_as_integers() {
        let v = go_numbers(serde_json::json!({"count": 568.0, "rate": 2.5, "n": [1.0, 0.25]}));
        assert_eq!(v.to_string(), r#"{"count":568,"n":[1,0.25],"rate":2.5}"#);
    }

    #[test]
    fn md5_matches_k6_ids() {
        // k6's root group id is md5("").
        assert_eq!(md5_hex(b""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(md5_hex(b"abc"), "900150983cd24fb0d6963f7d28e17f72");
    }

    #[test]
    fn trend_stats_are_validated() {
        assert!(valid_trend_stat("p(99.9)"));
        assert!(valid_trend_stat("count"));
        assert!(!valid_trend_stat("p99"));
    }
}
