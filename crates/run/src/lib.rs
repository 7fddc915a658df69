//! volley-run: the run layer every kind of run goes through, free of JavaScript.
//!
//! A run is a plan (scenarios and their executors), a body factory (script VUs, quick mode's
//! fixed request), thresholds, output sinks and monitors; the engine schedules it and this
//! crate turns it into a finished [`volley_metrics::RunResult`] and a verdict.
//!
//! # Layout
//!
//! - [`thresholds`]: k6's threshold grammar (`METRIC{tags}: EXPR`, `abortOnFail`, drift
//!   checks), evaluated once per second (`abortOnFail`) and at the end (the verdict).
//! - [`out_json`]: `--out json=FILE`, k6's NDJSON of every sample, streamed per worker.
//! - [`outputs`]: the other `--out`s: CSV (per sample), InfluxDB and Prometheus remote write
//!   (per-second aggregates), JUnit (at the end).
//! - [`summary`]: k6's end-of-test text summary (legacy layout), `handleSummary`'s data and
//!   `--summary-export` JSON, from a result file; `summary_v1`: k6 v1's compact/full layout
//!   (both format numbers with `volley_metrics::fmt::k6`).
//! - [`progress`]: k6's execution header and one progress line per scenario.
//! - [`checks`]: the `--threshold` flags' grammar and Volley's per-series checks (slope,
//!   drift, gauge limits) that `volley http` and `volley monitor` judge.
//! - [`md5`]: k6 names groups and checks by the MD5 of their path.
//! - [`Observer`]: what watches a run once per second and at its end.
//! - [`mod@execute`]: runs a plan with a body factory to a judged result ([`execute::execute`]):
//!   the engine's scheduler, one per-second hook feeding observers, outputs and `abortOnFail`,
//!   then the result, the verdicts and the [`Outcome`].
//! - [`merge`]: one judged result from the results of a test's instances (`volley merge`).
//! - [`outcome`]: how a run ended, and the one table from that to the exit code.
//! - [`capacity`]: load sweeps and the breaking-point search as sequences of runs, the knee,
//!   the SLO, the result file's `capacity` section.
//! - [`after`]: the chain every command runs around a run: the pre-run check of the output
//!   targets, then `--save`, `--summary-export`, `--report`, `--history` and the final outcome.

pub mod after;
pub mod capacity;
pub mod checks;
pub mod execute;
pub mod md5;
pub mod merge;
pub mod out_json;
pub mod outcome;
pub mod outputs;
pub mod progress;
pub mod summary;
mod summary_v1;
pub mod thresholds;

pub use execute::{execute, Finished, RunSpec};
pub use outcome::Outcome;
pub use summary::Summary;
pub use summary_v1::SummaryMode;

/// Watches a run: once per second of run time, from the same aggregates every part of Volley
/// reads (progress line, live dashboard, aggregated outputs), and once at the end.
pub trait Observer {
    /// A second of run time has been merged (`tick.agg` holds the totals and the series).
    fn tick(&mut self, _tick: &volley_engine::vus::Tick<'_>) {}
    /// The scheduler returned (before the result is built and judged).
    fn ended(
        &mut self,
        _run: &volley_engine::vus::VuRunResult,
        _plan: &volley_engine::vus::VuPlan,
    ) {
    }
    /// The run is over and its result final (thresholds judged).
    fn finish(&mut self, _result: &volley_metrics::RunResult) {}
}
