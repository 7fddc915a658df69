//! The A/B comparison of `volley http URL_A --vs URL_B` (and `volley grpc`'s): the same load against two targets,
//! alternating A B A B so drift on a shared machine hits both sides alike, then one table with
//! medians per side, the ratio B/A and whether the gap is larger than the noise.
//!
//! It lives beside `volley compare` (not in the engine, which runs loads and owns no
//! statistics) because it answers the same question with the same rule: [`stats::judge`] on
//! per-second values. A side's sample is the per-second values of all its rounds pooled; the
//! noise a difference must exceed is the larger of the per-second spread and the
//! round-to-round spread of the figure, and at least 5 % (0.1 percentage points for the
//! success rate). Method: `docs/quick-mode.md`.
//!
//! The figures are read from the rounds' result files (as `QuickSummary` computes them: the
//! corrected latency in the open model), so a saved `volley-ab` file ([`crate::ab_file`])
//! shows the same table when read back.

use crate::stats::{self, Rule};
use crate::view::{self, Figure, Sel};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use volley_metrics::names::{DATA_RECEIVED, HTTP_REQS, HTTP_REQ_DURATION};
use volley_metrics::series::Stat;
use volley_metrics::{fmt, Agg, RunResult, TagSet};

/// Latency from each request's due time (open model); quick mode records it when `-q` is set.
const HTTP_REQ_CORRECTED: &str = "http_req_corrected";

/// Smallest relative difference that counts (as `volley compare`'s default `--min-effect`).
pub const MIN_EFFECT: f64 = 0.05;
/// Smallest success-rate difference that counts, in percentage points.
pub const MIN_POINTS: f64 = 0.1;
/// Fewest per-second values per side for a verdict (as `volley compare`).
pub const MIN_SECONDS: usize = crate::compare::MIN_INTERVALS;

/// One compared figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub metric: String,
    pub a: f64,
    pub b: f64,
    /// b / a (None when a is 0).
    pub ratio: Option<f64>,
    /// `B better`, `B worse`, `within noise`, or `n/a (1 round)` (one round cannot show the
    /// round-to-round noise).
    pub verdict: String,
}

/// The comparison table of an A/B run.
#[derive(Clone, Debug, Serialize)]
pub struct AbReport {
    pub a_url: String,
    pub b_url: String,
    pub rounds: usize,
    pub rows: Vec<Row>,
}

/// What a figure reads from one round.
#[derive(Clone, Copy)]
enum Source {
    /// A figure of the view (`metric`, `figure`), divided by `scale`.
    View(&'static str, Figure, f64),
    /// A figure of the round's latency trend (corrected in the open model).
    Latency(Figure),
    /// The fastest request (the trend's minimum; the view has no such figure).
    Fastest,
    /// Share of requests answered with status 200..=399.
    Success,
}

/// (name, source, higher is better)
const FIGURES: [(&str, Source, bool); 8] = [
    (
        "requests/s",
        Source::View(HTTP_REQS, Figure::Rate, 1.0),
        true,
    ),
    (
        "MiB/s received",
        Source::View(DATA_RECEIVED, Figure::Rate, 1048576.0),
        true,
    ),
    ("avg ms", Source::Latency(Figure::Avg), false),
    ("p95 ms", Source::Latency(Figure::P95), false),
    ("p99 ms", Source::Latency(Figure::P99), false),
    ("slowest ms", Source::Latency(Figure::Max), false),
    ("fastest ms", Source::Fastest, false),
    ("success rate", Source::Success, true),
];

/// A gRPC quick run (`volley grpc`) records the same figures under its own names.
fn is_grpc(r: &RunResult) -> bool {
    r.meta.mode == "grpc"
}

/// The request counter of a round (by status).
fn reqs_metric(r: &RunResult) -> &'static str {
    if is_grpc(r) {
        "grpc_reqs"
    } else {
        HTTP_REQS
    }
}

/// The metric a figure names, in the round's own names.
fn named(r: &RunResult, name: &'static str) -> &'static str {
    if name == HTTP_REQS {
        reqs_metric(r)
    } else {
        name
    }
}

/// The latency metric of a round: corrected when it recorded anything.
fn latency_metric(r: &RunResult) -> &'static str {
    let (corrected, service) = if is_grpc(r) {
        ("grpc_req_corrected", "grpc_req_duration")
    } else {
        (HTTP_REQ_CORRECTED, HTTP_REQ_DURATION)
    };
    match view::total(r, &exact(corrected)) {
        Some((Agg::Trend(t), _)) if t.count > 0 => corrected,
        _ => service,
    }
}

fn exact(name: &str) -> Sel {
    Sel::exact(name, &TagSet::new())
}

/// Success: HTTP status 200..=399, or gRPC status OK.
fn is_success(tags: &TagSet) -> Option<bool> {
    let status = tags.get("status")?;
    if status == "OK" {
        return Some(true);
    }
    let code = status.parse::<u16>().ok();
    Some(code.is_some_and(|c| (200..400).contains(&c)))
}

/// The whole-round value of a figure (0 when the round has nothing to compute it from).
fn total(r: &RunResult, src: Source) -> f64 {
    let v = match src {
        Source::View(name, fig, scale) => {
            view::total_figure(r, &Sel::all(named(r, name)), fig).map(|v| v / scale)
        }
        Source::Latency(fig) => view::total_figure(r, &exact(latency_metric(r)), fig),
        Source::Fastest => match view::total(r, &exact(latency_metric(r))) {
            Some((Agg::Trend(t), _)) if t.count > 0 => Some(t.min),
            _ => None,
        },
        Source::Success => {
            let (mut ok, mut all) = (0.0, 0.0);
            for m in r.metrics_named(reqs_metric(r)) {
                if let volley_metrics::TotalValue::Counter { sum, .. } = m.value {
                    all += sum;
                    if is_success(&m.tags) == Some(true) {
                        ok += sum;
                    }
                }
            }
            (all > 0.0).then(|| ok / all)
        }
    };
    v.unwrap_or(0.0)
}

/// Per-second values of a figure in one round (partial seconds left out, as `compare`).
fn seconds(r: &RunResult, src: Source) -> Vec<f64> {
    let values = |name: &str, fig: Figure| -> Vec<f64> {
        view::intervals(r, &exact(name), fig, 0.5)
            .into_iter()
            .map(|x| x.1)
            .collect()
    };
    match src {
        Source::View(name, fig, scale) => view::intervals(r, &Sel::all(named(r, name)), fig, 0.5)
            .into_iter()
            .map(|x| x.1 / scale)
            .collect(),
        Source::Latency(fig) => values(latency_metric(r), fig),
        Source::Fastest => {
            let sel = exact(latency_metric(r));
            full_points(r)
                .filter_map(|p| match view::point_stat(p, &sel)? {
                    Stat::Trend { count, min, .. } if count > 0 => Some(min),
                    _ => None,
                })
                .collect()
        }
        Source::Success => full_points(r)
            .filter_map(|p| {
                let (mut ok, mut all) = (0.0, 0.0);
                let reqs = reqs_metric(r);
                for v in p.values.iter().filter(|v| v.name() == reqs) {
                    if let Stat::Counter { sum } = v.stat {
                        all += sum;
                        if is_success(v.tags()) == Some(true) {
                            ok += sum;
                        }
                    }
                }
                (all > 0.0).then(|| ok / all)
            })
            .collect(),
    }
}

/// The points covering at least half their width (as [`view::intervals`] keeps them).
fn full_points(r: &RunResult) -> impl Iterator<Item = &volley_metrics::Point> {
    r.series
        .points
        .iter()
        .filter(move |p| p.w > 0 && view::covered(r, p) >= 0.5 * p.w as f64)
}

/// `a` against `b` for one figure: the verdict label.
fn verdict(a: &[RunResult], b: &[RunResult], src: Source, higher_better: bool) -> &'static str {
    if a.len() < 2 || b.len() < 2 {
        return "n/a (1 round)";
    }
    // The success rate is judged in percentage points (a relative change of a share near
    // 100 % is meaningless), everything else relatively.
    let points = matches!(src, Source::Success);
    let k = if points { 100.0 } else { 1.0 };
    let pooled = |side: &[RunResult]| -> Vec<f64> {
        side.iter()
            .flat_map(|r| seconds(r, src))
            .map(|v| v * k)
            .collect()
    };
    let per_round =
        |side: &[RunResult]| -> Vec<f64> { side.iter().map(|r| total(r, src) * k).collect() };
    let (ra, rb) = (per_round(a), per_round(b));
    let round_noise = [
        stats::robust_spread(&ra, points),
        stats::robust_spread(&rb, points),
    ]
    .into_iter()
    .flatten()
    .reduce(f64::max);
    let rule = Rule {
        alpha: 0.05,
        floor: if points { MIN_POINTS } else { MIN_EFFECT },
        points,
        min_n: MIN_SECONDS,
    };
    let (ma, mb) = (median(&ra), median(&rb));
    let j = stats::judge(&pooled(a), &pooled(b), ma, mb, rule, round_noise);
    match (j.differs, (mb > ma) == higher_better) {
        (false, _) => "within noise",
        (true, true) => "B better",
        (true, false) => "B worse",
    }
}

fn median(v: &[f64]) -> f64 {
    stats::median(v).unwrap_or(0.0)
}

impl AbReport {
    /// Compare the rounds of side A with those of side B (the same number of each; a round
    /// cut short by Ctrl-C is left out by the caller).
    pub fn new(a: &[RunResult], b: &[RunResult]) -> AbReport {
        let rows = FIGURES
            .iter()
            .map(|&(name, src, higher_better)| {
                let ma = median(&a.iter().map(|r| total(r, src)).collect::<Vec<_>>());
                let mb = median(&b.iter().map(|r| total(r, src)).collect::<Vec<_>>());
                Row {
                    metric: name.to_string(),
                    a: ma,
                    b: mb,
                    ratio: (ma != 0.0).then(|| mb / ma),
                    verdict: verdict(a, b, src, higher_better).to_string(),
                }
            })
            .collect();
        AbReport {
            a_url: a.first().map(|r| r.meta.name.clone()).unwrap_or_default(),
            b_url: b.first().map(|r| r.meta.name.clone()).unwrap_or_default(),
            rounds: a.len().min(b.len()),
            rows,
        }
    }

    /// The `--json` document: each side's URL and per-round summaries (the quick summary's
    /// JSON, made by the caller), the number of rounds and the table.
    pub fn to_json(
        &self,
        a_rounds: Vec<serde_json::Value>,
        b_rounds: Vec<serde_json::Value>,
    ) -> serde_json::Value {
        serde_json::json!({
            "a": { "url": self.a_url, "rounds": a_rounds },
            "b": { "url": self.b_url, "rounds": b_rounds },
            "rounds": self.rounds,
            "comparison": self.rows,
        })
    }

    /// The terminal table. URLs are shown with control characters escaped.
    pub fn render_text(&self) -> String {
        use volley_metrics::text::escape_control as esc;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "A/B comparison, {} round(s), alternating A B",
            self.rounds
        );
        let _ = writeln!(o, "  A = {}", esc(&self.a_url));
        let _ = writeln!(o, "  B = {}\n", esc(&self.b_url));
        let _ = writeln!(
            o,
            "  {:<16} {:>12} {:>12} {:>8}  verdict",
            "", "A", "B", "B/A"
        );
        for r in &self.rows {
            let f = |v: f64| match r.metric.as_str() {
                "success rate" => format!("{:.2}%", v * 100.0),
                m if m.ends_with("ms") => fmt::ms(v),
                _ => format!("{v:.1}"),
            };
            let ratio = r.ratio.map_or("-".to_string(), |x| format!("{x:.3}"));
            let name = r.metric.trim_end_matches(" ms");
            let _ = writeln!(
                o,
                "  {name:<16} {:>12} {:>12} {ratio:>8}  {}",
                f(r.a),
                f(r.b),
                esc(&r.verdict)
            );
        }
        let _ = writeln!(
            o,
            "\n  Medians over rounds. A difference counts when the per-second values of B's rounds\n  differ from A's (Mann-Whitney p < 0.05) by at least 5 % and by more than both the\n  second-to-second and the round-to-round spread; otherwise it is within noise."
        );
        o
    }
}

#[cfg(test)]
#[path = "ab_tests.rs"]
mod tests;
