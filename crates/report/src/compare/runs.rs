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
