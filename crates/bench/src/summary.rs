//! What a bench result says, computed from the result file alone (so `volley summary
//! bench.json` prints what `volley bench` printed): per benchmark and metric mean ± σ, median,
//! min … max and outliers over the successful runs; failures and parser notes; "A ran N ± E ×
//! faster than B" by wall time. Rendered as a terminal table, Markdown or JSON.

use crate::record::{PEAK_RSS, RUN_FAILED, WALL_TIME};
use crate::stats::{self, Stats, NOISY_CV};
use serde::Serialize;
use std::fmt::Write as _;
use volley_metrics::fmt;
use volley_metrics::text::escape_control as esc;
use volley_metrics::{RunResult, TagSet, TotalValue, Unit};

#[derive(Clone, Debug, Serialize)]
pub struct MetricStats {
    pub name: String,
    #[serde(skip)]
    pub unit: Unit,
    /// The printed unit of a metric that is neither a time nor a size (`MiB/s`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub unit_label: String,
    /// `ms`, `bytes` or the label, for JSON readers.
    #[serde(rename = "unit")]
    pub unit_name: String,
    #[serde(flatten)]
    pub stats: Stats,
    /// Each successful run's value, in run order.
    pub values: Vec<f64>,
}

impl MetricStats {
    pub fn show(&self, v: f64) -> String {
        match self.unit {
            Unit::Time => fmt::ms(v),
            Unit::Data => fmt::bytes(v),
            Unit::Default => {
                let n = sig4(v);
                if self.unit_label.is_empty() {
                    n
                } else {
                    format!("{n} {}", self.unit_label)
                }
            }
        }
    }
}

/// Four significant digits (integers as they are), no exponent for everyday sizes.
fn sig4(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || a >= 1000.0 || (v == v.trunc() && a < 1e15) {
        return format!("{v:.0}");
    }
    let decimals = (3 - a.log10().floor() as i32).clamp(0, 9) as usize;
    format!("{v:.decimals$}")
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchStats {
    pub name: String,
    pub tags: TagSet,
    pub argv: Vec<String>,
    pub runs: u64,
    pub failed: u64,
    pub failures: serde_json::Value,
    pub output: serde_json::Value,
    pub notes: Vec<String>,
    pub metrics: Vec<MetricStats>,
}

impl BenchStats {
    pub fn metric(&self, name: &str) -> Option<&MetricStats> {
        self.metrics.iter().find(|m| m.name == name)
    }
}

/// `faster` ran `ratio ± uncertainty` times faster than `slower` (mean wall time).
#[derive(Clone, Debug, Serialize)]
pub struct Relative {
    pub faster: String,
    pub slower: String,
    pub ratio: f64,
    pub uncertainty: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub benches: Vec<BenchStats>,
    pub relative: Vec<Relative>,
    pub thresholds: Vec<volley_metrics::ThresholdResult>,
    pub interrupted: bool,
}

impl Summary {
    pub fn from_result(r: &RunResult) -> Result<Summary, String> {
        if r.meta.mode != "bench" {
            return Err(format!("not a bench result (mode '{}')", r.meta.mode));
        }
        let list =
            r.options.get("benches").and_then(|b| b.as_array()).ok_or(
                "options.benches is missing\n  hint: write the file with volley bench --save",
            )?;
        let units = r.options.get("metrics");
        let mut benches = Vec::new();
        for b in list {
            let tags: TagSet = serde_json::from_value(b.get("tags").cloned().unwrap_or_default())
                .map_err(|e| format!("options.benches[].tags: {e}"))?;
            let mut metrics = Vec::new();
            for m in r
                .metrics
                .iter()
                .filter(|m| m.tags == tags && m.name != RUN_FAILED)
            {
                let TotalValue::Trend { samples, .. } = &m.value else {
                    continue;
                };
                let Some(stats) = Stats::of(samples) else {
                    continue;
                };
                let label = units
                    .and_then(|u| u.get(&m.name)?.get("unit")?.as_str())
                    .unwrap_or_default()
                    .to_string();
                let unit_name = match m.unit {
                    Unit::Time => "ms".to_string(),
                    Unit::Data => "bytes".to_string(),
                    Unit::Default => label.clone(),
                };
                metrics.push(MetricStats {
                    name: m.name.clone(),
                    unit: m.unit,
                    unit_label: label,
                    unit_name,
                    stats,
                    values: samples.clone(),
                });
            }
            let num = |k: &str| b.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
            benches.push(BenchStats {
                name: b
                    .get("name")
                    .and_then(|x| x.as_str())
                    .unwrap_or_default()
                    .to_string(),
                argv: serde_json::from_value(b.get("argv").cloned().unwrap_or_default())
                    .unwrap_or_default(),
                runs: num("runs"),
                failed: num("failed"),
                failures: b.get("failures").cloned().unwrap_or_default(),
                output: b.get("output").cloned().unwrap_or_default(),
                notes: serde_json::from_value(b.get("notes").cloned().unwrap_or_default())
                    .unwrap_or_default(),
                tags,
                metrics,
            });
        }
        let relative = relative(&benches);
        Ok(Summary {
            benches,
            relative,
            thresholds: r.thresholds.clone(),
            interrupted: r.meta.interrupted,
        })
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// Warnings worth a line: failed runs, outliers, a large spread, parser trouble.
    fn warnings(b: &BenchStats) -> Vec<String> {
        let mut w = Vec::new();
        if b.failed > 0 {
            w.push(format!(
                "{} of {} runs failed and are left out of the statistics",
                b.failed, b.runs
            ));
        }
        if let Some(m) = b.metric(WALL_TIME) {
            if !m.stats.outliers.is_empty() {
                w.push(format!(
                    "{} wall-time outlier(s) (modified z-score > {}): runs {}; another process may \
                     have interfered — rerun on a quiet machine, or add --warmup",
                    m.stats.outliers.len(),
                    stats::OUTLIER_Z,
                    list_runs(&m.stats.outliers)
                ));
            }
            if m.stats.cv() > NOISY_CV && m.stats.n > 1 {
                w.push(format!(
                    "wall time varies by σ = {:.0}% of its mean: the machine is noisy or the command is",
                    m.stats.cv() * 100.0
                ));
            }
        }
        let o = &b.output;
        if let Some(n) = o
            .get("malformed_lines")
            .and_then(|x| x.as_u64())
            .filter(|n| *n > 0)
        {
            let first = o
                .get("first_malformed")
                .and_then(|f| {
                    Some((
                        f.get(0)?.as_u64()?,
                        f.get(1)?.as_u64()?,
                        f.get(2)?.as_str()?,
                    ))
                })
                .map(|(run, line, text)| format!(", first: run {run} line {line}: {}", esc(text)))
                .unwrap_or_default();
            w.push(format!("{n} malformed output line(s) ignored{first}"));
        }
        if let Some(rep) = o.get("repeated_keys").and_then(|x| x.as_object()) {
            let keys: Vec<String> = rep
                .iter()
                .map(|(k, v)| format!("{} ({} runs)", esc(k), v))
                .collect();
            if !keys.is_empty() {
                w.push(format!(
                    "keys printed more than once per run (the last value counts): {}",
                    keys.join(", ")
                ));
            }
        }
        if let Some(um) = o.get("unit_mismatch").and_then(|x| x.as_object()) {
            for (k, v) in um {
                w.push(format!(
                    "{}: {v} value(s) with a different kind of unit left out",
                    esc(k)
                ));
            }
        }
        w.extend(b.notes.iter().map(|n| esc(n).into_owned()));
        w
    }

    pub fn render_text(&self) -> String {
        let mut s = String::new();
        for (i, b) in self.benches.iter().enumerate() {
            let ok = b.runs - b.failed;
            let _ = writeln!(
                s,
                "Benchmark {}: {}\n  {} runs{}",
                i + 1,
                esc(&b.name),
                ok,
                if b.failed > 0 {
                    format!(", {} failed", b.failed)
                } else {
                    String::new()
                }
            );
            let rows: Vec<[String; 5]> = b
                .metrics
                .iter()
                .map(|m| {
                    [
                        format!("  {}", esc(&m.name)),
                        format!("{} ± {}", m.show(m.stats.mean), m.show(m.stats.stddev)),
                        m.show(m.stats.median),
                        format!("{} … {}", m.show(m.stats.min), m.show(m.stats.max)),
                        if m.stats.outliers.is_empty() {
                            String::new()
                        } else {
                            format!("{} outlier(s)", m.stats.outliers.len())
                        },
                    ]
                })
                .collect();
            let head = ["  metric", "mean ± σ", "median", "min … max", ""].map(String::from);
            if !rows.is_empty() {
                table(&mut s, &head, &rows);
            }
            if let Some(f) = b.failures.as_array().filter(|f| !f.is_empty()) {
                for x in f {
                    let _ = writeln!(
                        s,
                        "  ✗ run {}: {}",
                        x.get("run").and_then(|r| r.as_u64()).unwrap_or(0),
                        x.get("status").and_then(|r| r.as_str()).unwrap_or("")
                    );
                }
                if (f.len() as u64) < b.failed {
                    let _ = writeln!(s, "  ✗ … and {} more", b.failed - f.len() as u64);
                }
            }
            for w in Self::warnings(b) {
                let _ = writeln!(s, "  warning: {w}");
            }
            s.push('\n');
        }
        for r in &self.relative {
            let _ = writeln!(
                s,
                "'{}' ran {:.2} ± {:.2} × faster than '{}'",
                esc(&r.faster),
                r.ratio,
                r.uncertainty,
                esc(&r.slower)
            );
        }
        for t in &self.thresholds {
            let name = t.metric.split('{').next().unwrap_or_default();
            let unit = self.benches.iter().find_map(|b| b.metric(name));
            let seen = match (t.observed, unit) {
                (None, _) => "no data".into(),
                (Some(v), Some(m)) if name != RUN_FAILED => m.show(v),
                (Some(v), _) => format!("{v}"),
            };
            let _ = writeln!(
                s,
                "{} {} {}  (observed {seen})",
                if t.ok { "✓" } else { "✗" },
                t.metric,
                t.expression
            );
        }
        if self.interrupted {
            s.push_str("interrupted: the statistics cover the runs completed before the stop\n");
        }
        s
    }

    /// One table of the headline figures per benchmark, then one of every metric.
    pub fn render_markdown(&self) -> String {
        let mut s = String::from("| Command | Runs | Failed | Wall time (mean ± σ) | Median | Min … Max | Peak RSS | Relative |\n|:---|---:|---:|---:|---:|---:|---:|---:|\n");
        let fastest = self
            .benches
            .iter()
            .filter_map(|b| b.metric(WALL_TIME))
            .map(|m| m.stats.mean)
            .fold(f64::INFINITY, f64::min);
        for b in &self.benches {
            let w = b.metric(WALL_TIME);
            let cell = |f: &dyn Fn(&MetricStats) -> String| w.map_or_else(|| "-".into(), f);
            let _ = writeln!(
                s,
                "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
                md(&b.name),
                b.runs - b.failed,
                b.failed,
                cell(&|m| format!("{} ± {}", m.show(m.stats.mean), m.show(m.stats.stddev))),
                cell(&|m| m.show(m.stats.median)),
                cell(&|m| format!("{} … {}", m.show(m.stats.min), m.show(m.stats.max))),
                b.metric(PEAK_RSS)
                    .map_or_else(|| "-".into(), |m| m.show(m.stats.max)),
                cell(&|m| format!("{:.2}", m.stats.mean / fastest)),
            );
        }
        s.push_str(
            "\n| Command | Metric | Mean ± σ | Median | Min … Max |\n|:---|:---|---:|---:|---:|\n",
        );
        for b in &self.benches {
            for m in &b.metrics {
                let _ = writeln!(
                    s,
                    "| `{}` | {} | {} ± {} | {} | {} … {} |",
                    md(&b.name),
                    md(&m.name),
                    m.show(m.stats.mean),
                    m.show(m.stats.stddev),
                    m.show(m.stats.median),
                    m.show(m.stats.min),
                    m.show(m.stats.max)
                );
            }
        }
        s
    }
}

fn list_runs(idx: &[usize]) -> String {
    let v: Vec<String> = idx.iter().take(10).map(|i| (i + 1).to_string()).collect();
    v.join(", ") + if idx.len() > 10 { ", …" } else { "" }
}

fn md(s: &str) -> String {
    esc(s).replace('|', "\\|").replace('`', "'")
}

/// The fastest benchmark by mean wall time against each of the others.
fn relative(benches: &[BenchStats]) -> Vec<Relative> {
    let timed: Vec<(&BenchStats, &Stats)> = benches
        .iter()
        .filter_map(|b| Some((b, &b.metric(WALL_TIME)?.stats)))
        .collect();
    let Some(&(fast, fs)) = timed.iter().min_by(|a, b| a.1.mean.total_cmp(&b.1.mean)) else {
        return Vec::new();
    };
    timed
        .iter()
        .filter(|(b, _)| !std::ptr::eq(*b, fast))
        .filter_map(|(b, s)| {
            let (ratio, uncertainty) = stats::ratio(s, fs)?;
            Some(Relative {
                faster: fast.name.clone(),
                slower: b.name.clone(),
                ratio,
                uncertainty,
            })
        })
        .collect()
}

/// Left-aligned first column, the others right-aligned, two spaces apart.
fn table(s: &mut String, head: &[String; 5], rows: &[[String; 5]]) {
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([head[i].chars().count()])
            .max()
            .unwrap_or(0)
    };
    let w: Vec<usize> = (0..5).map(width).collect();
    for r in std::iter::once(head).chain(rows.iter()) {
        let mut line = format!("{:<w0$}", r[0], w0 = w[0]);
        for i in 1..5 {
            let pad = w[i] - r[i].chars().count();
            let _ = write!(line, "  {}{}", " ".repeat(pad), r[i]);
        }
        let _ = writeln!(s, "{}", line.trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_figures_keep_four_significant_digits() {
        let cases = [
            (73.76, "73.76"),
            (0.000294, "0.0002940"),
            (13824.01, "13824"),
            (780.52, "780.5"),
            (64.0, "64"),
            (-1.5, "-1.500"),
        ];
        for (v, s) in cases {
            assert_eq!(sig4(v), s, "{v}");
        }
    }
}
