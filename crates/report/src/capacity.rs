//! Capacity results (a sweep's or a breaking-point search's steps, `RunResult::capacity`) in
//! the report and in `volley compare`: throughput and p50/p95/p99 against load with the knee
//! marked, the steps' table, and base-against-new of the capacity itself with a noise
//! judgement. Method: docs/capacity.md.

use crate::compare::Verdict;
use crate::fmt::esc;
use crate::stats;
use crate::svg::{self, Line, PALETTE};
use serde::Serialize;
use std::fmt::Write as _;
use volley_metrics::capacity::{Capacity, Step};
use volley_metrics::fmt::{ms, ms_tick, rate, short};
use volley_metrics::RunResult;

/// Smallest change in capacity that can count (a search's tolerance is 5 % by default).
const MIN_EFFECT: f64 = 0.05;

/// Base against new, by capacity.
#[derive(Clone, Debug, Serialize)]
pub struct CapacityChange {
    /// `max rate under SLO` (searches) or `peak throughput` (sweeps).
    pub figure: String,
    pub base: f64,
    pub new: f64,
    /// `new / base − 1`.
    pub change: f64,
    /// The relative uncertainty a change must exceed.
    pub noise: f64,
    /// Where the noise comes from.
    pub noise_from: String,
    pub verdict: Verdict,
}

impl CapacityChange {
    /// `max rate under SLO 8,400/s → 7,300/s (−13.1%), regression (noise ±5.0%: …)`.
    pub fn render_text(&self) -> String {
        format!(
            "{} {} → {} ({}), {} (noise ±{:.1}%: {})",
            self.figure,
            rate(self.base),
            rate(self.new),
            volley_metrics::fmt::pct_change(self.change).replace('-', "−"),
            self.verdict.label(),
            self.noise * 100.0,
            self.noise_from
        )
    }
}

/// Compare the capacity sections of two results, when both have one of the same kind.
pub fn compare(base: &RunResult, new: &RunResult) -> Option<CapacityChange> {
    let (b, n) = (base.capacity.as_ref()?, new.capacity.as_ref()?);
    match (b.kind.as_str(), n.kind.as_str()) {
        ("search", "search") => searches(b, n),
        ("sweep", "sweep") => sweeps(b, n),
        _ => None,
    }
}

/// Searches: the answers, judged against the width of each search's final bracket (the
/// answer lies between the highest passing and the lowest failing rate) and the tolerance.
fn searches(b: &Capacity, n: &Capacity) -> Option<CapacityChange> {
    let (mb, mn) = (b.max_rate?, n.max_rate?);
    if mb <= 0.0 {
        return None;
    }
    let bracket = |c: &Capacity, m: f64| c.failed_rate.map_or(0.0, |f| (f / m - 1.0).abs());
    let mut noise = bracket(b, mb).max(bracket(n, mn)).max(MIN_EFFECT);
    let mut from = "the searches' final brackets".to_string();
    if b.confirmed == Some(false) || n.confirmed == Some(false) {
        // An unconfirmed answer may be one step too high.
        noise *= 2.0;
        from += ", doubled: an answer was not confirmed";
    }
    let change = mn / mb - 1.0;
    Some(CapacityChange {
        figure: "max rate under SLO".into(),
        base: mb,
        new: mn,
        change,
        noise,
        noise_from: from,
        verdict: verdict(change, noise, change.abs() > noise),
    })
}

/// Sweeps: the peak throughput, judged on the per-second throughputs of each sweep's peak
/// step (the shared rank test and noise rule, [`stats::judge`]).
fn sweeps(b: &Capacity, n: &Capacity) -> Option<CapacityChange> {
    let peak = |c: &Capacity| {
        c.steps
            .iter()
            .max_by(|x, y| x.throughput.total_cmp(&y.throughput))
            .cloned()
    };
    let (pb, pn) = (peak(b)?, peak(n)?);
    if pb.throughput <= 0.0 {
        return None;
    }
    let rule = stats::Rule {
        alpha: 0.05,
        floor: MIN_EFFECT,
        points: false,
        min_n: 3,
    };
    let j = stats::judge(
        &pb.per_second,
        &pn.per_second,
        pb.throughput,
        pn.throughput,
        rule,
        None,
    );
    let change = pn.throughput / pb.throughput - 1.0;
    Some(CapacityChange {
        figure: "peak throughput".into(),
        base: pb.throughput,
        new: pn.throughput,
        change,
        noise: j.noise.unwrap_or(0.0).max(MIN_EFFECT),
        noise_from: "per-second throughput of the peak steps (Mann-Whitney)".into(),
        verdict: verdict(change, 0.0, j.differs),
    })
}

fn verdict(change: f64, _noise: f64, differs: bool) -> Verdict {
    match (differs, change < 0.0) {
        (false, _) => Verdict::WithinNoise,
        (true, true) => Verdict::Regression,
        (true, false) => Verdict::Improvement,
    }
}

/// The steps in order of load (a search probes out of order).
fn by_load(c: &Capacity) -> Vec<(usize, &Step)> {
    let mut v: Vec<(usize, &Step)> = c.steps.iter().enumerate().collect();
    v.sort_by(|a, b| a.1.load.total_cmp(&b.1.load).then(a.0.cmp(&b.0)));
    v
}

/// The two charts of a capacity result: throughput against load (with the offered rate as
/// a dashed line for rate sweeps) and p50/p95/p99 against load; the knee (or the search's
/// answer) marked.
pub fn charts(c: &Capacity) -> [String; 2] {
    let steps = by_load(c);
    let x_name = match c.variable.as_str() {
        "rate" => "offered rate (requests/s)",
        "connections" => "connections",
        _ => "VUs",
    };
    let mark = match (c.knee_step(), c.max_rate) {
        (Some(k), _) => Some((k.load, "knee".to_string())),
        (None, Some(m)) => Some((m, format!("max {}", rate(m)))),
        _ => None,
    };
    let x = svg::XAxis {
        name: x_name,
        tick: &short,
        at: &short,
        mark: mark.as_ref().map(|(x, l)| (*x, l.as_str())),
        marks: &[],
        points: true,
    };
    let pts = |f: &dyn Fn(&Step) -> f64| steps.iter().map(|(_, s)| (s.load, f(s))).collect();
    let mut tp = vec![Line {
        label: "throughput".into(),
        color: PALETTE[0],
        dash: None,
        points: pts(&|s| s.throughput),
    }];
    if c.variable == "rate" {
        tp.push(Line {
            label: "offered".into(),
            color: "#8c959f",
            dash: Some("6 3"),
            points: pts(&|s| s.load),
        });
    }
    let lat: Vec<Line> = [("p50", 0usize), ("p95", 1), ("p99", 2)]
        .into_iter()
        .map(|(name, i)| Line {
            label: name.into(),
            color: PALETTE[i + 1],
            dash: None,
            points: pts(&|s| [s.p50_ms, s.p95_ms, s.p99_ms][i]),
        })
        .collect();
    [
        svg::xy_chart(
            "Throughput against load (requests/s)",
            &tp,
            false,
            (&short, &rate),
            &x,
        ),
        svg::xy_chart("Latency against load", &lat, false, (&ms_tick, &ms), &x),
    ]
}

/// The report's capacity section for every run that has one.
pub(crate) fn section(o: &mut String, runs: &[crate::Labeled]) {
    for r in runs {
        let Some(c) = &r.run.capacity else { continue };
        let what = if c.kind == "search" {
            "breaking-point search"
        } else {
            "load sweep"
        };
        let _ = write!(
            o,
            "<h2>Capacity: {} ({})</h2><p>{}</p>",
            esc(what),
            esc(&r.label),
            esc(&c.message)
        );
        o.push_str("<div class=\"charts\">");
        for chart in charts(c) {
            o.push_str(&chart);
        }
        o.push_str("</div><table><tr><th>load</th><th>step</th><th>throughput</th><th>p50</th><th>p95</th><th>p99</th><th>errors</th><th>note</th></tr>");
        for (i, s) in c.steps.iter().enumerate() {
            let load = match c.variable.as_str() {
                "rate" => rate(s.load),
                _ => short(s.load),
            };
            let mut note = s.why.clone();
            if c.knee == Some(i) {
                note = format!("knee {note}");
            }
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}%</td><td>{}</td></tr>",
                esc(&load),
                esc(&s.role),
                esc(&rate(s.throughput)),
                ms(s.p50_ms),
                ms(s.p95_ms),
                ms(s.p99_ms),
                s.error_rate * 100.0,
                esc(note.trim())
            );
        }
        o.push_str("</table>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(max: f64, failed: f64) -> RunResult {
        let meta = volley_metrics::RunMeta::new("http", "t", vec![]);
        let mut r = RunResult::new(meta, serde_json::json!({}), vec![], Default::default());
        r.capacity = Some(Capacity {
            kind: "search".into(),
            variable: "rate".into(),
            slo: Some("p99<50ms".into()),
            steps: vec![],
            knee: None,
            max_rate: Some(max),
            failed_rate: Some(failed),
            confirmed: Some(true),
            finding: "capacity".into(),
            message: String::new(),
        });
        r
    }

    #[test]
    fn a_lower_max_rate_beyond_the_brackets_is_a_regression() {
        let c = compare(&search(8400.0, 8800.0), &search(7300.0, 7600.0)).unwrap();
        assert_eq!(c.verdict, Verdict::Regression);
        assert_eq!(
            c.render_text().split(" (noise").next().unwrap(),
            "max rate under SLO 8,400/s → 7,300/s (−13.1%), regression"
        );
        let same = compare(&search(8400.0, 8800.0), &search(8200.0, 8600.0)).unwrap();
        assert_eq!(same.verdict, Verdict::WithinNoise);
        let better = compare(&search(200.0, 210.0), &search(400.0, 420.0)).unwrap();
        assert_eq!(better.verdict, Verdict::Improvement);
    }
}
