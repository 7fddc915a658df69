//! volley-report: what Volley tells you after a run, read from result files alone.
//!
//! Everything here works from [`RunResult`]s (the `--save` file), never from a live run, so a
//! report or a comparison made in CI days later shows exactly what the run recorded.
//!
//! Layout:
//! - [`view`]: pulls figures (rate, percentiles, error rate ...) out of a result file, both as
//!   whole-run totals and as per-interval values from the series. The one place that knows how
//!   a figure is computed, so the report and the comparison never disagree.
//! - [`stats`]: the Mann-Whitney U test (exact for small samples, else the tie-corrected
//!   normal approximation), medians, robust spread, and [`stats::judge`]: the one rule for
//!   "differs beyond noise" that `compare` and the A/B comparison share.
//! - [`compare`]: `volley compare`: per metric and figure, base vs new, relative change, p-value
//!   and a verdict (regression, improvement, within noise); `--fail-on` rules; text, Markdown
//!   and JSON renderings. Method: `docs/compare.md`.
//! - [`ab`]: `volley http --vs`: A against B over alternating rounds (medians, ratio B/A and
//!   a verdict per figure); [`ab_file`]: the `volley-ab` file `--vs --save` writes, with a
//!   validated reader. Method: `docs/quick-mode.md`.
//! - [`capacity`]: sweeps' and searches' steps: charts against load with the knee, and
//!   base-against-new of the capacity with a noise judgement (`volley compare`).
//! - [`html`]: `volley report`: one self-contained HTML page (inline CSS and SVG, no script, no
//!   network) for one or more runs. Layout: `docs/report.md`.
//! - [`events`]: a run's faults as marks on the charts and a table.
//! - [`svg`]: the hand-written SVG line and bar charts the report uses.
//! - [`fmt`]: HTML escaping (numbers are formatted by `volley_metrics::fmt`).

pub mod ab;
pub mod ab_file;
pub mod capacity;
pub mod compare;
pub mod events;
pub mod fmt;
pub mod html;
pub mod stats;
pub mod svg;
pub mod view;

pub use ab::AbReport;
pub use ab_file::AbFile;
pub use compare::{compare, CompareOptions, Comparison, FailRule, Verdict};
pub use html::render_report;
pub use view::Figure;

/// A result file with the label it is shown under (usually its file name).
pub struct Labeled<'a> {
    pub label: String,
    pub run: &'a volley_metrics::RunResult,
    /// The file's raw JSON, for sections the typed result does not model yet (thresholds).
    pub raw: Option<&'a serde_json::Value>,
}

use volley_metrics::RunResult;

/// Read a result file (validated by [`RunResult::read`], the same reader as `summary` and
/// `compare`) plus the raw JSON of the sections the HTML report reads tolerantly (thresholds).
pub fn read(path: &std::path::Path) -> Result<(RunResult, serde_json::Value), String> {
    let run = RunResult::read(path)?;
    let raw = serde_json::json!({ "thresholds": run.thresholds });
    Ok((run, raw))
}
