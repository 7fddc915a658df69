//! The run result file: what `--save` writes and `summary`, `report`, `compare` and `merge`
//! read. Documented in `docs/result-file.md`; bump [`VERSION`] on incompatible changes.

use crate::agg::{Agg, MetricKind, TrendAgg, Unit, EXACT_MAX};
use crate::hist;
use crate::recorder::MetricDesc;
use crate::series::Series;
use crate::text::escape_control;
use crate::{MetricKey, TagSet};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

pub const FORMAT: &str = "volley-result";
/// Version 2 stores the series as a table (`crate::series_file`); version 1 files still read.
pub const VERSION: u32 = 2;
/// The oldest version this Volley reads.
pub const OLDEST_VERSION: u32 = 1;

/// Largest result file Volley reads (256 MiB; docs/result-file.md). Parsing costs a few times
/// the file's size; files of bounded series stay far below (a 5-minute run of a million
/// distinct URLs writes under 5 MB).
pub const MAX_FILE_BYTES: u64 = 256 << 20;
/// Widest series bucket a file may state (about 136 years in seconds): doubling stays in range.
const MAX_BUCKET_S: u64 = 1 << 32;
/// Most series points a file may ask a merge to keep.
const MAX_POINTS: usize = 1 << 24;
/// Appended to every error about a result file's content.
const HINT: &str =
    "the file is damaged, truncated or not written by Volley; write a new one with --save";

/// `line L, column C: message` from a serde_json error (its text without the trailing
/// location, which it prints in another form).
fn located(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    let msg = msg
        .rsplit_once(" at line ")
        .map_or(msg.as_str(), |(m, _)| m);
    format!("line {}, column {}: {msg}", e.line(), e.column())
}

/// A result file's text, read with a size limit: directories, oversized files and data that
/// does not start like a JSON object are refused before being read whole.
pub fn read_text(path: &Path) -> Result<String, String> {
    use std::io::Read as _;
    let name = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("{name}: {e}"))?;
    if meta.is_dir() {
        return Err(format!(
            "{name}: is a directory, not a result file\n  hint: give the .json file --save wrote"
        ));
    }
    let too_big = || {
        format!(
            "{name}: larger than {} MiB, the limit for result files (docs/result-file.md)\n  hint: {HINT}",
            MAX_FILE_BYTES >> 20
        )
    };
    if meta.is_file() && meta.len() > MAX_FILE_BYTES {
        return Err(too_big());
    }
    let mut f = std::fs::File::open(path).map_err(|e| format!("{name}: {e}"))?;
    let mut buf = Vec::new();
    // Devices and pipes have no length: look at the start before reading on.
    let mut head = [0u8; 4096];
    let n = f.read(&mut head).map_err(|e| format!("{name}: {e}"))?;
    buf.extend_from_slice(&head[..n]);
    let first = buf
        .iter()
        .position(|b| !b" \t\r\n".contains(b))
        .map(|i| buf[i]);
    match first {
        Some(b'{') => {}
        None if n == 0 => return Err(format!("{name}: the file is empty\n  hint: {HINT}")),
        _ => {
            return Err(format!(
                "{name}: not a Volley result file (it does not start with '{{')\n  hint: {HINT}"
            ))
        }
    }
    (&mut f)
        .take(MAX_FILE_BYTES + 1 - n as u64)
        .read_to_end(&mut buf)
        .map_err(|e| format!("{name}: {e}"))?;
    if buf.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big());
    }
    String::from_utf8(buf).map_err(|e| {
        format!(
            "{name}: not UTF-8 text (invalid byte at offset {})\n  hint: {HINT}",
            e.utf8_error().valid_up_to()
        )
    })
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    pub format: String,
    pub version: u32,
    pub meta: RunMeta,
    /// The options as resolved for this run (mode-specific shape).
    pub options: serde_json::Value,
    pub metrics: Vec<MetricTotal>,
    pub series: Series,
    /// Script mode: every threshold with its verdict and observed value, in option order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<ThresholdResult>,
    /// Faults and other outside events on the run's timeline (absent in older files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<crate::Event>,
    /// A sweep's or breaking-point search's steps (`crate::capacity`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<crate::capacity::Capacity>,
}

/// One evaluated threshold (`metric` may name a sub-metric: `http_req_duration{name:a}`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ThresholdResult {
    pub metric: String,
    /// As written, e.g. `p(95)<200`.
    pub expression: String,
    pub ok: bool,
    /// The aggregated value the expression was checked against.
    pub observed: Option<f64>,
    /// Set when a crossed threshold with `abortOnFail` stopped the test.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aborted: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, Default)]
pub struct RunMeta {
    pub volley_version: String,
    /// `http` (quick mode) or `run` (script mode).
    pub mode: String,
    /// The command line as given.
    pub command: Vec<String>,
    /// Test name: the URL in quick mode, the script path in script mode.
    #[serde(default)]
    pub name: String,
    pub started_at: String,
    pub ended_at: String,
    pub started_unix_ms: u64,
    pub ended_unix_ms: u64,
    /// Time load was applied, in seconds (the rate denominator).
    pub duration_s: f64,
    #[serde(default)]
    pub interrupted: bool,
    /// How many runs this file holds (1, or more after merging).
    #[serde(default = "one")]
    pub instances: u32,
    #[serde(default)]
    pub host: HostInfo,
    /// Peak resident memory of the Volley process (largest across merged instances).
    #[serde(default)]
    pub peak_rss_bytes: Option<u64>,
}

fn one() -> u32 {
    1
}

impl RunMeta {
    /// The one way to describe a run: its mode (`http`, `run`, `monitor`...), name (URL,
    /// script, targets) and command line, on this host; [`RunMeta::timed`] adds when it ran.
    pub fn new(mode: &str, name: impl Into<String>, command: Vec<String>) -> RunMeta {
        RunMeta {
            volley_version: env!("CARGO_PKG_VERSION").to_string(),
            mode: mode.to_string(),
            command,
            name: name.into(),
            started_at: String::new(),
            ended_at: String::new(),
            started_unix_ms: 0,
            ended_unix_ms: 0,
            duration_s: 0.0,
            interrupted: false,
            instances: 1,
            host: HostInfo::current(),
            peak_rss_bytes: None,
        }
    }

    /// When the run started and ended (wall clock), how long load was applied (the rate
    /// denominator) and whether the user interrupted it.
    pub fn timed(
        mut self,
        started: std::time::SystemTime,
        ended: std::time::SystemTime,
        duration: std::time::Duration,
        interrupted: bool,
    ) -> RunMeta {
        let (s_ms, e_ms) = (crate::time::unix_ms(started), crate::time::unix_ms(ended));
        self.started_at = crate::time::rfc3339_ms(s_ms);
        self.ended_at = crate::time::rfc3339_ms(e_ms);
        self.started_unix_ms = s_ms;
        self.ended_unix_ms = e_ms;
        self.duration_s = duration.as_secs_f64();
        self.interrupted = interrupted;
        self
    }

    /// The Volley process's peak resident memory, if measured.
    pub fn with_peak_rss(mut self, bytes: Option<u64>) -> RunMeta {
        self.peak_rss_bytes = bytes;
        self
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, Default, PartialEq)]
pub struct HostInfo {
    pub hostname: String,
    pub os: String,
    pub arch: String,
    pub cpus: usize,
}

impl HostInfo {
    pub fn current() -> HostInfo {
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        HostInfo {
            hostname,
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// One series' totals over the whole run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MetricTotal {
    pub name: String,
    #[serde(default, skip_serializing_if = "TagSet::is_empty")]
    pub tags: TagSet,
    #[serde(default)]
    pub unit: Unit,
    #[serde(flatten)]
    pub value: TotalValue,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum TotalValue {
    Counter {
        sum: f64,
        n: u64,
    },
    Gauge {
        last: f64,
        min: f64,
        max: f64,
        n: u64,
    },
    Rate {
        trues: u64,
        total: u64,
    },
    /// `hist` is the standard compressed HDR encoding of values in thousandths of the unit
    /// (µs for time trends); min, max and sum are exact. `samples` holds every value in
    /// arrival order while there are at most [`EXACT_MAX`] (absent in older files and past
    /// that), so percentiles read back from a file are k6's, as in the run.
    Trend {
        count: u64,
        sum: f64,
        min: f64,
        max: f64,
        hist: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        samples: Vec<f64>,
    },
}

impl MetricTotal {
    pub fn from_agg(d: &MetricDesc, a: &Agg) -> MetricTotal {
        MetricTotal {
            name: d.key.name.clone(),
            tags: d.key.tags.clone(),
            unit: d.unit,
            value: TotalValue::from_agg(a),
        }
    }

    /// As [`MetricTotal::from_agg`], taking the name and tags over.
    pub fn from_desc(d: MetricDesc, a: &Agg) -> MetricTotal {
        MetricTotal {
            name: d.key.name,
            tags: d.key.tags,
            unit: d.unit,
            value: TotalValue::from_agg(a),
        }
    }

    pub fn kind(&self) -> MetricKind {
        match self.value {
            TotalValue::Counter { .. } => MetricKind::Counter,
            TotalValue::Gauge { .. } => MetricKind::Gauge,
            TotalValue::Rate { .. } => MetricKind::Rate,
            TotalValue::Trend { .. } => MetricKind::Trend,
        }
    }

    pub fn key(&self) -> MetricKey {
        MetricKey {
            name: self.name.clone(),
            tags: self.tags.clone(),
        }
    }

    /// Back to a mergeable aggregate (decodes the histogram).
    pub fn to_agg(&self) -> Result<Agg, String> {
        Ok(match &self.value {
            TotalValue::Counter { sum, n } => Agg::Counter { sum: *sum, n: *n },
            TotalValue::Gauge { last, min, max, n } => Agg::Gauge {
                last: *last,
                min: *min,
                max: *max,
                n: *n,
            },
            TotalValue::Rate { trues, total } => Agg::Rate {
                trues: *trues,
                total: *total,
            },
            TotalValue::Trend {
                count,
                sum,
                min,
                max,
                hist: h,
                samples,
            } => {
                let hist =
                    hist::decode_trend(h).map_err(|e| format!("metric {}: {e}", self.name))?;
                let empty = *count == 0;
                Agg::Trend(Box::new(TrendAgg {
                    hist,
                    count: *count,
                    sum: *sum,
                    min: if empty { f64::INFINITY } else { *min },
                    max: if empty { f64::NEG_INFINITY } else { *max },
                    // Validated: all of them or none (a file without them reads as past the buffer).
                    samples: if samples.len() as u64 == *count {
                        samples.clone()
                    } else {
                        Vec::new()
                    },
                }))
            }
        })
    }
}

impl TotalValue {
    fn from_agg(a: &Agg) -> TotalValue {
        match a {
            Agg::Counter { sum, n } => TotalValue::Counter { sum: *sum, n: *n },
            Agg::Gauge { last, min, max, n } => TotalValue::Gauge {
                last: *last,
                min: *min,
                max: *max,
                n: *n,
            },
            Agg::Rate { trues, total } => TotalValue::Rate {
                trues: *trues,
                total: *total,
            },
            Agg::Trend(t) => TotalValue::Trend {
                count: t.count,
                sum: t.sum,
                min: if t.count == 0 { 0.0 } else { t.min },
                max: if t.count == 0 { 0.0 } else { t.max },
                hist: t.hist.encode(),
                samples: t.exact().map_or_else(Vec::new, <[f64]>::to_vec),
            },
        }
    }
}

/// A trend's exact samples from a file: none, or all `count` of them (at most [`EXACT_MAX`]),
/// each within the stated `min..=max` (JSON has no NaN or infinity to let through).
fn check_samples(samples: &[f64], count: u64, min: f64, max: f64) -> Result<(), String> {
    if samples.is_empty() {
        return Ok(());
    }
    if samples.len() > EXACT_MAX {
        return Err(format!(
            "{} values, more than the {EXACT_MAX} a trend keeps exactly",
            samples.len()
        ));
    }
    if samples.len() as u64 != count {
        return Err(format!(
            "holds {} values but count is {count} (all samples or none)",
            samples.len()
        ));
    }
    if let Some((i, v)) = samples
        .iter()
        .enumerate()
        .find(|(_, v)| !(min..=max).contains(*v))
    {
        return Err(format!("[{i}]: {v} is outside min {min} .. max {max}"));
    }
    Ok(())
}

/// Why two result files could not be merged.
#[derive(Debug, PartialEq)]
pub struct MergeError(pub String);

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MergeError {}

/// Write `value` as indented JSON ([`crate::json_fmt`]) atomically (temporary file + rename) so a crash never leaves
/// half a file. The JSON is streamed to the file: with thousands of series a result is tens
/// of megabytes, which an in-memory copy would add to the run's peak memory. Result files and
/// the `volley-ab` file are written with it.
pub fn write_json(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    let write = || -> std::io::Result<()> {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        crate::json_fmt::to_writer(&mut w, value).map_err(std::io::Error::other)?;
        w.flush()
    };
    write()
        .and_then(|()| std::fs::rename(&tmp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

impl RunResult {
    pub fn new(
        meta: RunMeta,
        options: serde_json::Value,
        metrics: Vec<MetricTotal>,
        series: Series,
    ) -> Self {
        RunResult {
            format: FORMAT.to_string(),
            version: VERSION,
            meta,
            options,
            metrics,
            series,
            thresholds: Vec::new(),
            events: Vec::new(),
            capacity: None,
        }
    }

    /// The totals of one series, by name and exact tag set.
    pub fn metric(&self, name: &str, tags: &TagSet) -> Option<&MetricTotal> {
        self.metrics
            .iter()
            .find(|m| m.name == name && &m.tags == tags)
    }

    /// All tag sets of a metric.
    pub fn metrics_named<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = &'a MetricTotal> + 'a {
        self.metrics.iter().filter(move |m| m.name == name)
    }

    /// Sum of a counter over all its tag sets.
    pub fn counter_sum(&self, name: &str) -> f64 {
        self.metrics_named(name)
            .map(|m| match m.value {
                TotalValue::Counter { sum, .. } => sum,
                _ => 0.0,
            })
            .sum()
    }

    /// Parse and [validate](RunResult::validate) a result file's text: the one entry point
    /// every reader goes through (`summary`, `report`, `compare`, stored history runs, merge).
    /// Errors name the line and column or the JSON path, and end with a hint.
    pub fn from_json(text: &str) -> Result<RunResult, String> {
        Self::parse(text).map_err(|e| format!("{e}\n  hint: {HINT}"))
    }

    fn parse(text: &str) -> Result<RunResult, String> {
        // Check the envelope first so a wrong file gets a useful message; only these two
        // fields are materialised (the rest is skipped, not built as a JSON tree).
        #[derive(Deserialize)]
        struct Envelope {
            format: Option<serde_json::Value>,
            version: Option<serde_json::Value>,
        }
        let env: Envelope =
            serde_json::from_str(text).map_err(|e| format!("not valid JSON at {}", located(&e)))?;
        match env.format.as_ref().and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            _ => {
                return Err(format!(
                    "not a Volley result file (expected \"format\": \"{FORMAT}\"); write one with --save"
                ))
            }
        }
        match env.version.as_ref().and_then(|f| f.as_u64()) {
            Some(x) if (OLDEST_VERSION as u64..=VERSION as u64).contains(&x) => {}
            Some(x) => {
                return Err(format!(
                "result file version {x} is not supported by this Volley (reads versions {OLDEST_VERSION} to {VERSION})"
            ))
            }
            None => {
                return Err(format!(
                    "result file has no \"version\" number (this Volley reads version {VERSION})"
                ))
            }
        }
        let mut r: RunResult = serde_json::from_str(text)
            .map_err(|e| format!("invalid result file at {}", located(&e)))?;
        // Read into the current shape: written again, it is a current file.
        r.version = VERSION;
        r.validate()
            .map_err(|e| format!("invalid result file: {e}"))?;
        Ok(r)
    }

    /// What serde cannot check: histograms that decode within bounds and hold the count the
    /// file states, minima not above maxima, rates with no more trues than samples, series
    /// widths a merge can work with. Errors start with the JSON path of the bad value.
    pub fn validate(&self) -> Result<(), String> {
        let m = &self.meta;
        if !(m.duration_s.is_finite() && m.duration_s >= 0.0) {
            return Err(format!(
                "meta.duration_s: {} is not a duration in seconds",
                m.duration_s
            ));
        }
        for (i, t) in self.metrics.iter().enumerate() {
            let at = || format!("metrics[{i}] ({})", escape_control(&t.name));
            match &t.value {
                TotalValue::Counter { .. } => {}
                TotalValue::Gauge { min, max, n, .. } => {
                    if *n > 0 && min > max {
                        return Err(format!("{}: min {min} is above max {max}", at()));
                    }
                }
                TotalValue::Rate { trues, total } => {
                    if trues > total {
                        return Err(format!("{}: trues {trues} exceed total {total}", at()));
                    }
                }
                TotalValue::Trend {
                    count,
                    min,
                    max,
                    hist: h,
                    samples,
                    ..
                } => {
                    let held = hist::check(h).map_err(|e| format!("{}.hist: {e}", at()))?;
                    if held != *count {
                        return Err(format!(
                            "{}: count is {count} but the histogram holds {held} samples",
                            at()
                        ));
                    }
                    if *count > 0 && min > max {
                        return Err(format!("{}: min {min} is above max {max}", at()));
                    }
                    check_samples(samples, *count, *min, *max)
                        .map_err(|e| format!("{}.samples: {e}", at()))?;
                }
            }
        }
        let s = &self.series;
        if s.interval_s == 0 || s.interval_s > MAX_BUCKET_S {
            return Err(format!(
                "series.interval_s: {} is out of range",
                s.interval_s
            ));
        }
        if s.bucket_s < s.interval_s
            || s.bucket_s > MAX_BUCKET_S
            || !s.bucket_s.is_multiple_of(s.interval_s)
            || !(s.bucket_s / s.interval_s).is_power_of_two()
        {
            return Err(format!(
                "series.bucket_s: {} is not a power-of-two multiple of interval_s ({})",
                s.bucket_s, s.interval_s
            ));
        }
        if s.max_points < 2 || s.max_points > MAX_POINTS {
            return Err(format!(
                "series.max_points: {} is outside 2..={MAX_POINTS}",
                s.max_points
            ));
        }
        for (i, p) in s.points.iter().enumerate() {
            if p.w == 0 || p.w > MAX_BUCKET_S || p.t > u64::MAX / 4 {
                return Err(format!(
                    "series bucket [{i}]: bad interval t={} w={}",
                    p.t, p.w
                ));
            }
            for v in &p.values {
                if let crate::series::Stat::Rate { trues, total } = v.stat {
                    if trues > total {
                        return Err(format!(
                            "series {} at t={}: trues {trues} exceed total {total}",
                            escape_control(v.name()),
                            p.t
                        ));
                    }
                }
            }
        }
        if let Some(c) = &self.capacity {
            c.validate()?;
        }
        Ok(())
    }

    /// Read and validate a result file (see [`RunResult::from_json`]). Refuses directories,
    /// files over [`MAX_FILE_BYTES`] and streams that do not start like JSON (`/dev/zero`)
    /// before reading them whole; errors start with the file name.
    pub fn read(path: &Path) -> Result<RunResult, String> {
        let text = read_text(path)?;
        Self::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Write atomically (see [`write_json`]).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        write_json(path, self)
    }

    /// Merge two results of the same test run in parallel (e.g. from two machines): see
    /// [`crate::merge`] (and [`crate::merge::merge`] for more than two).
    pub fn merge(&self, other: &RunResult) -> Result<RunResult, MergeError> {
        crate::merge::merge(&[("the first result", self), ("the second", other)], false)
    }
}

#[cfg(test)]
#[path = "result_tests.rs"]
mod tests;
