//! volley-metrics: the metrics core every Volley mode records into.
//!
//! Invariants (see DESIGN.md): no raw samples are kept beyond a trend's small bounded buffer
//! ([`agg::EXACT_MAX`], for k6's exact percentiles on small samples), and nothing is pushed
//! sample by sample through a channel. Each worker thread owns a [`Recorder`]; once per interval it hands a
//! [`Snapshot`] of its aggregates to the [`Aggregator`], which merges them into run totals and a
//! bounded per-interval [`Series`]. The finished run becomes a [`RunResult`], the versioned file
//! that summaries, reports, comparisons and merges read.
//!
//! Layout:
//! - [`hist`]: HDR histogram construction (1 µs .. 1 h, 3 significant digits), the standard
//!   compressed base64 encoding, and [`hist::TrendHist`], a trend's histogram that stays a
//!   short list while it has few distinct values (a series per URL costs bytes, not an HDR
//!   array).
//! - [`hist_check`]: bounds a file's encoded histogram (sizes, bounds, counts) before decoding.
//! - [`agg`]: the four metric kinds (counter, gauge, rate, trend) as mergeable aggregates; a
//!   trend keeps its exact samples while it has few, for k6's interpolated percentiles.
//! - [`guard`]: the per-metric cardinality guard that folds tag sets beyond a limit into one
//!   overflow series, so memory does not grow with the number of distinct tag values.
//! - [`recorder`]: per-worker, lock-free recording through pre-resolved handles.
//! - [`aggregate`]: merges worker snapshots into totals and the per-second series.
//! - [`series`]: the per-interval time series, coarsened so its size stays bounded; values
//!   share their series' interned name and tags.
//! - [`series_file`]: the series in the result file: a series table with columns (version 2),
//!   and version 1's point lists, still read.
//! - [`result`]: the run result file (serde), reading with validation and size limits (the
//!   one reader every command uses), writing and exact merging.
//! - [`events`]: what happened to a run from outside (faults): the result file's timeline.
//! - [`merge`]: one result from the results of a test's instances (exact totals, series
//!   aligned on wall-clock seconds, VU gauges added).
//! - [`capacity`]: a result file's optional section of sweep or search steps.
//! - [`output`]: the pre-run check that an output file can be written.
//! - [`names`]: k6's built-in metric names as constants, with their kinds.
//! - [`json_fmt`]: the layout of written JSON files: indented, arrays of numbers on one line.
//! - [`fmt`]: every number shown to a human (durations, bytes, counts, ticks), Volley's own
//!   formats and k6's ([`fmt::k6`]), in one place.
//! - [`text`]: control characters escaped in names shown on a terminal.
//! - [`time`]: RFC 3339 timestamps without a date-time dependency.

pub mod agg;
pub mod aggregate;
pub mod capacity;
pub mod events;
pub mod fmt;
pub mod guard;
pub mod hist;
pub mod hist_check;
pub mod json_fmt;
pub mod merge;
pub mod names;
pub mod output;
pub mod recorder;
pub mod result;
pub mod series;
pub mod series_file;
pub mod text;
pub mod time;

pub use agg::{Agg, MetricKind, Unit};
pub use aggregate::Aggregator;
pub use events::Event;
pub use guard::{SeriesGuard, DEFAULT_MAX_SERIES, OVERFLOW_KEEPS, OVERFLOW_TAG};
pub use recorder::{Handle, MetricDesc, Recorder, SampleSink, Snapshot};
pub use result::{MergeError, MetricTotal, RunMeta, RunResult, ThresholdResult, TotalValue};
pub use series::{Interner, Point, Series, SeriesKey, SeriesValue};

use std::collections::BTreeMap;

/// A metric's tags, sorted by name so equal sets compare and hash equal.
pub type TagSet = BTreeMap<String, String>;

/// Identifies one time series: a metric name plus its tag set (k6's "sub-metric" key).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MetricKey {
    pub name: String,
    pub tags: TagSet,
}

impl MetricKey {
    pub fn new(name: &str) -> Self {
        MetricKey {
            name: name.to_string(),
            tags: TagSet::new(),
        }
    }

    pub fn tagged(name: &str, tags: &[(&str, &str)]) -> Self {
        MetricKey {
            name: name.to_string(),
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }
}
