//! The "Target" section of end-of-run summaries, computed from a [`RunResult`] alone.

use crate::drift::{self, Field};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use volley_metrics::series::Stat;
use volley_metrics::{RunResult, TagSet, TotalValue};

/// One watched target over the run (the JSON summary's `monitor.<target>`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TargetSummary {
    /// Which memory figure the `memory_*` keys hold: `monitor_rss_bytes` (processes) or
    /// `monitor_memory_current_bytes` (cgroups); None for scraped endpoints.
    pub memory_metric: Option<String>,
    pub memory_start_bytes: Option<f64>,
    pub memory_peak_bytes: Option<f64>,
    pub memory_end_bytes: Option<f64>,
    /// Least-squares slope after warm-up, bytes per hour.
    pub memory_slope_bytes_per_hour: Option<f64>,
    /// CPU in percent of one core: mean of the samples, and the highest.
    pub cpu_mean_percent: Option<f64>,
    pub cpu_max_percent: Option<f64>,
    /// Seconds into the run when the target was first seen gone (exited, unreachable).
    pub gone_at_s: Option<f64>,
    /// How many `monitor_*` series the target has (scraped endpoints: one per sample line).
    pub series: usize,
}

fn tag(target: &str) -> TagSet {
    [("target".to_string(), target.to_string())].into()
}

fn gauge_total(r: &RunResult, name: &str, tags: &TagSet) -> Option<(f64, f64)> {
    match r.metric(name, tags)?.value {
        TotalValue::Gauge { last, max, .. } => Some((last, max)),
        _ => None,
    }
}

/// Every target with `monitor_*` series in the run, by its `target` tag.
pub fn summarize(r: &RunResult) -> BTreeMap<String, TargetSummary> {
    let mut out = BTreeMap::new();
    let targets: std::collections::BTreeSet<String> = r
        .metrics
        .iter()
        .filter(|m| m.name.starts_with("monitor_"))
        .filter_map(|m| m.tags.get("target").cloned())
        .collect();
    for t in targets {
        let tags = tag(&t);
        let memory_metric = ["monitor_rss_bytes", "monitor_memory_current_bytes"]
            .into_iter()
            .find(|m| r.metric(m, &tags).is_some());
        let (mut start, mut peak, mut end, mut slope) = (None, None, None, None);
        if let Some(m) = memory_metric {
            start = drift::points(r, m, &tags, Field::Value)
                .first()
                .map(|p| p.1);
            if let Some((last, max)) = gauge_total(r, m, &tags) {
                end = Some(last);
                peak = Some(max);
            }
            slope = drift::slope(r, m, &tags);
        }
        let series = r
            .metrics
            .iter()
            .filter(|m| m.name.starts_with("monitor_") && m.name != "monitor_gone")
            .filter(|m| m.tags.get("target") == Some(&t))
            .count();
        let cpu = drift::points(r, "monitor_cpu_percent", &tags, Field::Value);
        let cpu_mean =
            (!cpu.is_empty()).then(|| cpu.iter().map(|p| p.1).sum::<f64>() / cpu.len() as f64);
        let cpu_max = gauge_total(r, "monitor_cpu_percent", &tags).map(|g| g.1);
        let gone_at_s = r
            .series
            .points
            .iter()
            .find_map(|p| match p.get("monitor_gone", &tags) {
                Some(Stat::Gauge { max, .. }) if *max >= 1.0 => Some(p.t as f64),
                _ => None,
            });
        out.insert(
            t,
            TargetSummary {
                memory_metric: memory_metric.map(String::from),
                memory_start_bytes: start,
                memory_peak_bytes: peak,
                memory_end_bytes: end,
                memory_slope_bytes_per_hour: slope,
                cpu_mean_percent: cpu_mean,
                cpu_max_percent: cpu_max,
                gone_at_s,
                series,
            },
        );
    }
    out
}

/// Bytes with a binary unit and one decimal, signed (slopes can be negative): the Target
/// block's format, [`volley_metrics::fmt::bytes_prec`].
pub fn bytes(v: f64) -> String {
    volley_metrics::fmt::bytes_prec(v, 1)
}

/// The "Target" section (empty when nothing was monitored). `bold`/`reset` are ANSI codes or
/// empty strings.
pub fn render_text(targets: &BTreeMap<String, TargetSummary>, bold: &str, reset: &str) -> String {
    let mut o = String::new();
    if targets.is_empty() {
        return o;
    }
    let _ = writeln!(o, "\n{bold}Target{reset}");
    let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".to_string(), f);
    for (name, t) in targets {
        let name = volley_metrics::text::escape_control(name);
        let _ = write!(o, "  {name}:");
        if t.memory_metric.is_some() {
            let label = if t.memory_metric.as_deref() == Some("monitor_rss_bytes") {
                "RSS"
            } else {
                "memory"
            };
            let _ = write!(
                o,
                " {label} start {}  peak {}  end {}  slope {}/h",
                opt(t.memory_start_bytes, &bytes),
                opt(t.memory_peak_bytes, &bytes),
                opt(t.memory_end_bytes, &bytes),
                opt(t.memory_slope_bytes_per_hour, &bytes),
            );
        }
        if t.cpu_mean_percent.is_some() {
            let _ = write!(
                o,
                "{} CPU mean {}  max {}",
                if t.memory_metric.is_some() { " |" } else { "" },
                opt(t.cpu_mean_percent, &|v| format!("{v:.1}%")),
                opt(t.cpu_max_percent, &|v| format!("{v:.1}%")),
            );
        }
        if t.memory_metric.is_none() && t.cpu_mean_percent.is_none() {
            let _ = write!(o, " {} series (see the result file)", t.series);
        }
        if let Some(g) = t.gone_at_s {
            let _ = write!(o, "  (gone at {g:.0}s)");
        }
        let _ = writeln!(o);
    }
    o
}
