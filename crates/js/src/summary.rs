//! The end-of-test summary in k6's text layout, and `--summary-export` in k6's export shape,
//! both computed from a [`RunResult`] alone.
//!
//! Every metric is shown as its total over all tag sets (k6 shows the untagged metric).
//! Checks are listed per group; within a group they are sorted by name (the result file does
//! not keep the order in which a script first ran them).

use std::collections::BTreeMap;
use volley_metrics::agg::TrendAgg;
use volley_metrics::{Agg, MetricKind, RunResult, Unit};

/// One metric merged over its tag sets.
pub struct Merged {
    pub unit: Unit,
    pub agg: Agg,
}

/// Totals per metric name, and check counts per group path and check name.
pub struct Summary {
    pub metrics: BTreeMap<String, Merged>,
    /// group path → check name → (passes, fails)
    pub checks: BTreeMap<String, BTreeMap<String, (u64, u64)>>,
    /// Every group path seen (from checks and group_duration).
    pub groups: Vec<String>,
    pub duration_s: f64,
}

impl Summary {
    pub fn from_result(r: &RunResult) -> Result<Summary, String> {
        let mut metrics: BTreeMap<String, Merged> = BTreeMap::new();
        let mut checks: BTreeMap<String, BTreeMap<String, (u64, u64)>> = BTreeMap::new();
        let mut groups = vec![String::new()];
        for m in &r.metrics {
            let agg = m.to_agg()?;
            if m.name == "checks" {
                if let Agg::Rate { trues, total } = &agg {
                    let g = m.tags.get("group").cloned().unwrap_or_default();
                    let name = m.tags.get("check").cloned().unwrap_or_default();
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
            if m.name == "group_duration" {
                if let Some(g) = m.tags.get("group") {
                    groups.push(g.clone());
                }
            }
            match metrics.get_mut(&m.name) {
                Some(e) => e.agg.merge(&agg),
                None => {
                    metrics.insert(m.name.clone(), Merged { unit: m.unit, agg });
                }
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
        Ok(Summary {
            metrics,
            checks,
            groups: all,
            duration_s: r.meta.duration_s,
        })
    }

    pub fn counter(&self, name: &str) -> f64 {
        match self.metrics.get(name).map(|m| &m.agg) {
            Some(Agg::Counter { sum, .. }) => *sum,
            _ => 0.0,
        }
    }

    /// Text in k6's layout.
    pub fn render_text(&self) -> String {
        let mut out = String::from("\n");
        self.render_group("", 1, &mut out);
        out.push('\n');
        let width = self.metrics.keys().map(|k| k.len()).max().unwrap_or(0) + 7;
        let rate = |v: f64| v / self.duration_s.max(1e-9);
        for (name, m) in &self.metrics {
            let value = match &m.agg {
                Agg::Counter { sum, .. } if m.unit == Unit::Data => {
                    format!("{:<10} {}/s", bytes(*sum), bytes(rate(*sum)))
                }
                Agg::Counter { sum, .. } => format!("{:<10} {}/s", num(*sum), sig(rate(*sum))),
                Agg::Rate { trues, total } => format!(
                    "{:<7} ✓ {:<8} ✗ {}",
                    format!("{:.2}%", pct(*trues, *total)),
                    trues,
                    total - trues
                ),
                Agg::Gauge { last, min, max, .. } => {
                    format!("{:<10} min={:<8} max={}", num(*last), num(*min), num(*max))
                }
                Agg::Trend(t) => trend_line(t, m.unit == Unit::Time),
            };
            let dots = ".".repeat(width.saturating_sub(name.len()));
            out.push_str(&format!("     {name}{dots}: {value}\n"));
        }
        out.push('\n');
        out
    }

    fn render_group(&self, path: &str, depth: usize, out: &mut String) {
        let indent = "  ".repeat(depth + 1) + " ";
        if let Some(cs) = self.checks.get(path) {
            for (name, (p, f)) in cs {
                if *f == 0 {
                    out.push_str(&format!("{indent}✓ {name}\n"));
                } else {
                    out.push_str(&format!("{indent}✗ {name}\n"));
                    out.push_str(&format!(
                        "{indent} ↳  {:.0}% — ✓ {p} / ✗ {f}\n",
                        pct(*p, p + f)
                    ));
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
            out.push_str(&format!("\n{indent}█ {rest}\n\n"));
            self.render_group(g, depth + 1, out);
        }
    }

    /// k6's `--summary-export` shape (the legacy JSON: `root_group` and `metrics`).
    pub fn export(&self) -> serde_json::Value {
        use serde_json::{json, Map, Value};
        let mut metrics = Map::new();
        for (name, m) in &self.metrics {
            let v = match &m.agg {
                Agg::Counter { sum, .. } => {
                    json!({"count": sum, "rate": sum / self.duration_s.max(1e-9)})
                }
                Agg::Gauge { last, min, max, .. } => json!({"value": last, "min": min, "max": max}),
                Agg::Rate { trues, total } => json!({
                    "passes": trues,
                    "fails": total - trues,
                    "value": if *total == 0 { 0.0 } else { *trues as f64 / *total as f64 },
                }),
                Agg::Trend(t) => json!({
                    "avg": t.mean(), "min": zero(t.min, t.count), "med": t.percentile(50.0),
                    "max": zero(t.max, t.count), "p(90)": t.percentile(90.0),
                    "p(95)": t.percentile(95.0),
                }),
            };
            metrics.insert(name.clone(), v);
        }
        fn group(s: &Summary, path: &str, name: &str) -> Value {
            let mut checks = Map::new();
            if let Some(cs) = s.checks.get(path) {
                for (n, (p, f)) in cs {
                    checks.insert(
                        n.clone(),
                        json!({"name": n, "path": format!("{path}::{n}"), "passes": p, "fails": f}),
                    );
                }
            }
            let mut groups = Map::new();
            for g in &s.groups {
                if let Some(rest) = g.strip_prefix(path).and_then(|r| r.strip_prefix("::")) {
                    if !rest.contains("::") && !g.is_empty() {
                        groups.insert(rest.to_string(), group(s, g, rest));
                    }
                }
            }
            json!({"name": name, "path": path, "groups": groups, "checks": checks})
        }
        json!({"root_group": group(self, "", ""), "metrics": metrics})
    }
}

fn zero(v: f64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        v
    }
}

fn pct(p: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        p as f64 * 100.0 / total as f64
    }
}

fn trend_line(t: &TrendAgg, time: bool) -> String {
    let f = |v: f64| if time { dur(v) } else { num(v) };
    let (min, max) = (zero(t.min, t.count), zero(t.max, t.count));
    let parts = [
        ("avg", f(t.mean())),
        ("min", f(min)),
        ("med", f(t.percentile(50.0))),
        ("max", f(max)),
        ("p(90)", f(t.percentile(90.0))),
        ("p(95)", f(t.percentile(95.0))),
    ];
    parts
        .iter()
        .map(|(k, v)| format!("{:<15}", format!("{k}={v}")))
        .collect::<Vec<_>>()
        .join("")
        .trim_end()
        .to_string()
}

/// Milliseconds as k6 shows durations: µs, ms, s, then m/h.
fn dur(ms: f64) -> String {
    if ms <= 0.0 {
        return "0s".into();
    }
    let trim = |v: f64| {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if ms < 1.0 {
        format!("{}µs", trim(ms * 1000.0))
    } else if ms < 1000.0 {
        format!("{}ms", trim(ms))
    } else if ms < 60_000.0 {
        format!("{}s", trim(ms / 1000.0))
    } else {
        let s = ms / 1000.0;
        format!("{}m{}s", (s / 60.0).floor(), trim(s % 60.0))
    }
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Six significant digits, as k6 prints rates.
fn sig(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let digits = (5 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    format!("{v:.digits$}")
}

/// Bytes in k6's SI units.
fn bytes(v: f64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB"];
    let mut v = v;
    let mut i = 0;
    while v >= 1000.0 && i + 1 < units.len() {
        v /= 1000.0;
        i += 1;
    }
    if i == 0 {
        format!("{} {}", v.round(), units[0])
    } else {
        format!("{v:.1} {}", units[i])
    }
}

#[allow(dead_code)]
fn kind_name(k: MetricKind) -> &'static str {
    match k {
        MetricKind::Counter => "counter",
        MetricKind::Gauge => "gauge",
        MetricKind::Rate => "rate",
        MetricKind::Trend => "trend",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_format_like_k6() {
        assert_eq!(dur(0.5123), "512.3µs");
        assert_eq!(dur(12.345), "12.35ms");
        assert_eq!(dur(1500.0), "1.5s");
        assert_eq!(bytes(2300.0), "2.3 kB");
        assert_eq!(bytes(230.0), "230 B");
        assert_eq!(sig(1.99262), "1.99262");
        assert_eq!(num(3.0), "3");
    }
}
