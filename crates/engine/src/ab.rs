//! A/B comparison (`volley http URL_A --vs URL_B`): the same load against two targets,
//! alternating A B A B so drift on a shared machine hits both sides alike, then one table with
//! medians per side, the ratio B/A and whether the gap is larger than round-to-round noise.

use crate::summary::{ms, QuickSummary};
use serde::Serialize;
use std::fmt::Write as _;
use volley_metrics::RunResult;

/// One compared figure.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub metric: &'static str,
    pub a: f64,
    pub b: f64,
    /// b / a (None when a is 0).
    pub ratio: Option<f64>,
    /// `better`, `worse`, `within noise`, or `n/a` (one round cannot show noise).
    pub verdict: &'static str,
}

/// Every round of both sides plus the comparison table.
#[derive(Clone, Debug, Serialize)]
pub struct AbReport {
    pub a_url: String,
    pub b_url: String,
    pub rounds: usize,
    pub rows: Vec<Row>,
    #[serde(skip)]
    pub a: Vec<QuickSummary>,
    #[serde(skip)]
    pub b: Vec<QuickSummary>,
}

/// (name, extractor, higher_is_better)
type Figure = (&'static str, fn(&QuickSummary) -> f64, bool);

const FIGURES: [Figure; 8] = [
    ("requests/s", |s| s.rps, true),
    (
        "MiB/s received",
        |s| s.bytes_received as f64 / s.duration_s.max(1e-9) / 1048576.0,
        true,
    ),
    ("avg ms", |s| s.latency_ms.avg, false),
    ("p95 ms", |s| s.latency_ms.p95, false),
    ("p99 ms", |s| s.latency_ms.p99, false),
    ("slowest ms", |s| s.latency_ms.max, false),
    ("fastest ms", |s| s.latency_ms.min, false),
    ("success rate", |s| s.success_rate, true),
];

impl AbReport {
    pub fn new(a: &[RunResult], b: &[RunResult]) -> Result<AbReport, String> {
        let sa = a
            .iter()
            .map(QuickSummary::from_result)
            .collect::<Result<Vec<_>, _>>()?;
        let sb = b
            .iter()
            .map(QuickSummary::from_result)
            .collect::<Result<Vec<_>, _>>()?;
        let rounds = sa.len().min(sb.len());
        let rows = FIGURES
            .iter()
            .map(|(name, f, higher_better)| {
                let va: Vec<f64> = sa.iter().map(f).collect();
                let vb: Vec<f64> = sb.iter().map(f).collect();
                let (ma, mb) = (median(&va), median(&vb));
                Row {
                    metric: name,
                    a: ma,
                    b: mb,
                    ratio: (ma != 0.0).then(|| mb / ma),
                    verdict: verdict(&va, &vb, *higher_better),
                }
            })
            .collect();
        Ok(AbReport {
            a_url: a.first().map(|r| r.meta.name.clone()).unwrap_or_default(),
            b_url: b.first().map(|r| r.meta.name.clone()).unwrap_or_default(),
            rounds,
            rows,
            a: sa,
            b: sb,
        })
    }

    pub fn to_json(&self) -> serde_json::Value {
        let side = |url: &str, s: &[QuickSummary]| serde_json::json!({ "url": url, "rounds": s.iter().map(|x| x.to_json()).collect::<Vec<_>>() });
        serde_json::json!({
            "a": side(&self.a_url, &self.a),
            "b": side(&self.b_url, &self.b),
            "rounds": self.rounds,
            "comparison": self.rows,
        })
    }

    pub fn render_text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "A/B comparison, {} round(s), alternating A B",
            self.rounds
        );
        let _ = writeln!(o, "  A = {}", self.a_url);
        let _ = writeln!(o, "  B = {}\n", self.b_url);
        let _ = writeln!(
            o,
            "  {:<16} {:>12} {:>12} {:>8}  verdict",
            "", "A", "B", "B/A"
        );
        for r in &self.rows {
            let fmt = |v: f64| match r.metric {
                "success rate" => format!("{:.2}%", v * 100.0),
                m if m.ends_with("ms") => ms(v),
                _ => format!("{v:.1}"),
            };
            let ratio = r.ratio.map_or("-".to_string(), |x| format!("{x:.3}"));
            let name = r.metric.trim_end_matches(" ms");
            let _ = writeln!(
                o,
                "  {name:<16} {:>12} {:>12} {ratio:>8}  {}",
                fmt(r.a),
                fmt(r.b),
                r.verdict
            );
        }
        let _ = writeln!(
            o,
            "\n  Medians over rounds. A difference counts only when B's rounds all lie beyond A's\n  (the ranges do not overlap); otherwise it is within the round-to-round noise."
        );
        o
    }
}

fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

/// Non-overlapping ranges over ≥ 2 rounds each: a distribution-free test that needs no
/// assumption about the noise's shape (for 3 vs 3 rounds, chance overlap-free ordering is
/// 1 in 10 per direction).
fn verdict(a: &[f64], b: &[f64], higher_is_better: bool) -> &'static str {
    if a.len() < 2 || b.len() < 2 {
        return "n/a (1 round)";
    }
    let (amin, amax) = min_max(a);
    let (bmin, bmax) = min_max(b);
    let b_higher = bmin > amax;
    let b_lower = bmax < amin;
    match (b_higher, b_lower) {
        (true, _) if higher_is_better => "B better",
        (true, _) => "B worse",
        (_, true) if higher_is_better => "B worse",
        (_, true) => "B better",
        _ => "within noise",
    }
}

fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(*x), hi.max(*x))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        assert_eq!(
            verdict(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], true),
            "B better"
        );
        assert_eq!(
            verdict(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], false),
            "B worse"
        );
        assert_eq!(
            verdict(&[1.0, 2.0, 3.0], &[2.5, 5.0, 6.0], false),
            "within noise"
        );
        assert_eq!(verdict(&[1.0], &[9.0], false), "n/a (1 round)");
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
