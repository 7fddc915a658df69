//! Bench results (`volley bench`, `meta.mode = "bench"`): the noise is run-to-run, not
//! second-to-second. Each trend keeps every run's value exactly, so the rank test compares
//! the runs of base against the runs of new; the figures are the median and the mean of the
//! runs; and which way is better comes from the file (`options.metrics[NAME].better`, e.g.
//! `higher` for a printed `write_mib_per_s`), not from HTTP conventions.

use crate::view::{self, Figure, Sel};
use volley_metrics::{Agg, RunResult};

/// Are both files bench results?
pub fn both(b: &RunResult, n: &RunResult) -> bool {
    b.meta.mode == "bench" && n.meta.mode == "bench"
}

/// The figures compared for a bench metric of this kind.
pub fn figures(agg: &Agg) -> Vec<Figure> {
    match agg {
        Agg::Trend(_) => vec![Figure::P50, Figure::Avg],
        Agg::Rate { .. } => vec![Figure::ErrorRate],
        _ => vec![],
    }
}

/// Every run's value of the selected series (all its tag sets pooled); the whole-run
/// figure for rates, which have no per-run values.
pub fn values(r: &RunResult, sel: &Sel, fig: Figure) -> Vec<f64> {
    match view::total(r, sel) {
        Some((Agg::Trend(t), _)) => t.exact().map(<[f64]>::to_vec).unwrap_or_default(),
        _ => view::total_figure(r, sel, fig).into_iter().collect(),
    }
}

/// Whether a higher value is worse, as the base file says (else the name's convention).
pub fn higher_is_worse(r: &RunResult, metric: &str, fig: Figure) -> bool {
    match r
        .options
        .get("metrics")
        .and_then(|m| m.get(metric)?.get("better")?.as_str())
    {
        Some("higher") => false,
        Some("lower") => true,
        _ => fig.higher_is_worse(metric),
    }
}

#[cfg(test)]
mod tests {
    use crate::compare::{compare, CompareOptions, Verdict};
    use crate::view::Figure;
    use volley_metrics::agg::TrendAgg;
    use volley_metrics::{
        Agg, MetricDesc, MetricKey, MetricKind, MetricTotal, RunMeta, RunResult, Unit,
    };

    /// A bench result with one trend per (name, per-run values); `write_mib_per_s` is marked
    /// higher-is-better as `volley bench` marks it.
    fn bench(series: &[(&str, &[f64])]) -> RunResult {
        let metrics = series
            .iter()
            .map(|(name, vals)| {
                let mut t = TrendAgg::new();
                vals.iter().for_each(|v| t.add(*v));
                let desc = MetricDesc {
                    key: MetricKey::new(name),
                    kind: MetricKind::Trend,
                    unit: Unit::Default,
                };
                MetricTotal::from_agg(&desc, &Agg::Trend(Box::new(t)))
            })
            .collect();
        let opts = serde_json::json!({"metrics": {"write_mib_per_s": {"better": "higher"}}});
        RunResult::new(
            RunMeta::new("bench", "x", vec![]),
            opts,
            metrics,
            Default::default(),
        )
    }

    #[test]
    fn bench_results_are_judged_over_their_runs_with_the_files_direction() {
        let base = bench(&[
            ("wall_time", &[20.1, 20.3, 20.2, 20.4, 20.2, 20.3]),
            ("write_mib_per_s", &[70.0, 71.0, 72.0, 70.5, 71.5, 70.8]),
        ]);
        let new = bench(&[
            ("wall_time", &[40.2, 40.1, 40.5, 40.3, 40.4, 40.2]),
            ("write_mib_per_s", &[35.0, 36.0, 35.5, 34.8, 35.2, 36.1]),
        ]);
        let c = compare(("a", &base), ("b", &new), &CompareOptions::default(), &[]);
        let row = |m: &str, f: Figure| {
            c.rows
                .iter()
                .find(|r| r.metric == m && r.figure == f)
                .unwrap()
        };
        assert_eq!(row("wall_time", Figure::P50).verdict, Verdict::Regression);
        assert_eq!(
            row("wall_time", Figure::P50).intervals,
            [6, 6],
            "runs, not intervals"
        );
        assert_eq!(
            row("write_mib_per_s", Figure::Avg).verdict,
            Verdict::Regression,
            "throughput fell"
        );
        let back = compare(("b", &new), ("a", &base), &CompareOptions::default(), &[]);
        assert!(back.rows.iter().all(|r| r.verdict == Verdict::Improvement));
        let same = compare(("a", &base), ("a2", &base), &CompareOptions::default(), &[]);
        assert!(same.rows.iter().all(|r| r.verdict == Verdict::WithinNoise));
        assert!(
            !same.rows.iter().any(|r| r.figure == Figure::P95),
            "no tail percentiles of 6 runs"
        );
    }
}
