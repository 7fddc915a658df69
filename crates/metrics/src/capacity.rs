//! The `capacity` section of a result file: the steps of a load sweep or of a breaking-point
//! search (`volley http --sweep`, `--find-max-rate`), each step's figures and its latency
//! histogram (so a comparison can judge noise), the knee and the search's answer. Older files
//! have no such section; the file version does not change (the section is optional).
//! Method: `docs/capacity.md`.

use serde::{Deserialize, Serialize};

/// Most steps a file may hold (a sweep or search is tens of runs).
pub const MAX_STEPS: usize = 10_000;

/// A sweep or a search.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Capacity {
    /// `sweep` or `search`.
    pub kind: String,
    /// What was varied: `rate` (requests/s, open model), `connections` or `vus`.
    pub variable: String,
    /// The SLO as written (`p99<50ms,error_rate<0.1%`), if one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<String>,
    pub steps: Vec<Step>,
    /// Index into `steps` of the knee (sweeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee: Option<usize>,
    /// Search: the highest rate that met the SLO (requests/s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rate: Option<f64>,
    /// Search: the lowest rate that broke the SLO (the answer lies between the two).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_rate: Option<f64>,
    /// Search: the repeat run at `max_rate` met the SLO too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<bool>,
    /// How it ended: `capacity` (an answer), `generator-bound`, `hard-failure`, `no-break`
    /// (the SLO held up to the highest load tried), `slo-unmet` (not even the lowest load met
    /// it), `interrupted`; sweeps: `sweep`.
    pub finding: String,
    /// One line saying what was found, as printed.
    #[serde(default)]
    pub message: String,
}

/// One step: an ordinary run at one load.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Step {
    /// The offered load: requests/s, connections or VUs.
    pub load: f64,
    /// `sweep`, `grow`, `shrink`, `bisect`, `retry` (a repeat of a probe that broke the SLO
    /// while keeping up with its load) or `confirm`.
    pub role: String,
    /// Length of the measured window (after the warm-up), seconds.
    pub duration_s: f64,
    pub requests: u64,
    /// Responses and errors per second of the measured window.
    pub throughput: f64,
    /// Failed requests (transport errors and HTTP errors) over all requests.
    pub error_rate: f64,
    /// Latency percentiles (ms), in the open model from each request's due time.
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Service time p99 (from the actual send), ms.
    #[serde(default)]
    pub service_p99_ms: f64,
    /// Open model: requests that started late, and that never started.
    #[serde(default)]
    pub missed_starts: u64,
    #[serde(default)]
    pub dropped: u64,
    /// Connection refusals among the errors.
    #[serde(default)]
    pub refused: u64,
    /// How busy Volley's worker threads were (0..1: running or waiting for a CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_busy: Option<f64>,
    /// `--monitor`: the first target's mean CPU (percent of one core) and peak memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cpu_percent: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_rss_bytes: Option<f64>,
    /// The SLO's verdict on this step (searches; sweeps with --slo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_ok: Option<bool>,
    /// Why the step failed the SLO, e.g. `p99 81.2ms ≥ 50ms`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
    /// Throughput of each second of the measured window (the noise of the step).
    #[serde(default)]
    pub per_second: Vec<f64>,
    /// The latency histogram (standard compressed HDR encoding, µs), as metric totals.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hist: String,
}

impl Capacity {
    /// What serde cannot check; errors start with the JSON path.
    pub fn validate(&self) -> Result<(), String> {
        if self.steps.len() > MAX_STEPS {
            return Err(format!(
                "capacity.steps: {} steps, more than {MAX_STEPS}",
                self.steps.len()
            ));
        }
        if let Some(k) = self.knee.filter(|k| *k >= self.steps.len()) {
            return Err(format!("capacity.knee: step {k} does not exist"));
        }
        for (i, s) in self.steps.iter().enumerate() {
            let finite = [s.load, s.throughput, s.error_rate, s.p99_ms, s.duration_s];
            if finite.iter().any(|v| !v.is_finite() || *v < 0.0) {
                return Err(format!(
                    "capacity.steps[{i}]: load, throughput, error_rate, p99_ms and duration_s \
                     must be finite and not negative"
                ));
            }
            if s.per_second.len() > crate::series::DEFAULT_MAX_POINTS * 24 {
                return Err(format!("capacity.steps[{i}].per_second: too many points"));
            }
            if !s.hist.is_empty() {
                crate::hist::check(&s.hist)
                    .map_err(|e| format!("capacity.steps[{i}].hist: {e}"))?;
            }
        }
        Ok(())
    }

    /// The knee step, if any.
    pub fn knee_step(&self) -> Option<&Step> {
        self.knee.and_then(|k| self.steps.get(k))
    }
}
