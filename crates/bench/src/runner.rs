//! The run loop: for each benchmark, warm-up runs (discarded), then timed runs until the run
//! count is met, each after `--prepare`; `--cleanup` after the last. Values are collected per
//! metric in run order; failed runs are counted and described, never averaged.
//!
//! With `--shell`, the shell's own start-up (`SHELL -c ''`, median of [`CALIBRATION_RUNS`])
//! is measured first and subtracted from every run's wall, user and system time, so `--shell`
//! and direct exec give comparable numbers.

use crate::exec::{self, Launch, Measured};
use crate::plan::Bench;
use crate::record::{self, BUILTIN};
use crate::units::{Class, Quantity};
use crate::{BenchSpec, Runs};
use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};
use volley_engine::RunControl;

/// Failed runs described one by one (the rest are counted).
pub const MAX_FAILURES: usize = 20;
/// Runs of `SHELL -c ''` that measure the shell's start-up.
pub const CALIBRATION_RUNS: usize = 20;
/// Most distinct notes kept per benchmark.
const MAX_NOTES: usize = 8;

/// One metric's values, one per successful run that printed it.
#[derive(Clone, Debug)]
pub struct Values {
    pub name: String,
    pub class: Class,
    pub values: Vec<f64>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Failure {
    /// 1-based number of the timed run.
    pub run: u32,
    pub status: String,
}

/// What the parser saw over all runs of a benchmark.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct OutputSummary {
    pub malformed_lines: u64,
    /// Run number, line number and text of the first malformed line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_malformed: Option<(u32, u64, String)>,
    /// Keys printed more than once in a run: key → runs in which that happened.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub repeated_keys: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "is_zero")]
    pub dropped_keys: u64,
    /// Values whose unit class differed from the metric's first one (left out).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub unit_mismatch: BTreeMap<String, u64>,
    /// Non-numeric values (`backend=file`) of the last run.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One benchmark's runs.
#[derive(Clone, Debug)]
pub struct Collected {
    pub bench: Bench,
    pub metrics: Vec<Values>,
    /// Timed runs made (an interrupted one is not counted).
    pub runs: u32,
    pub failed: u32,
    pub failures: Vec<Failure>,
    pub warmup_failed: u32,
    pub output: OutputSummary,
    pub notes: Vec<String>,
}

impl Collected {
    fn new(bench: Bench) -> Self {
        let metrics = BUILTIN
            .iter()
            .map(|(n, c)| Values {
                name: n.to_string(),
                class: c.clone(),
                values: Vec::new(),
            })
            .collect();
        Collected {
            bench,
            metrics,
            runs: 0,
            failed: 0,
            failures: Vec::new(),
            warmup_failed: 0,
            output: OutputSummary::default(),
            notes: Vec::new(),
        }
    }

    fn note(&mut self, n: String) {
        if self.notes.len() < MAX_NOTES && !self.notes.contains(&n) {
            self.notes.push(n);
        }
    }

    fn push(&mut self, name: &str, q: &Quantity) {
        let i = match self.metrics.iter().position(|m| m.name == name) {
            Some(i) => i,
            None => {
                self.metrics.push(Values {
                    name: name.to_string(),
                    class: q.class.clone(),
                    values: Vec::new(),
                });
                self.metrics.len() - 1
            }
        };
        let m = &mut self.metrics[i];
        if m.class == q.class {
            m.values.push(q.value);
        } else {
            *self
                .output
                .unit_mismatch
                .entry(name.to_string())
                .or_insert(0) += 1;
        }
    }

    /// Record a successful run's measurements and printed figures.
    fn record(&mut self, m: &Measured, corr: &Correction) {
        let ms = |v: f64| Quantity {
            value: v.max(0.0),
            class: Class::Time,
        };
        let plain = |v: u64| Quantity {
            value: v as f64,
            class: Class::Plain,
        };
        let bytes = |v: Option<u64>| Quantity {
            // Unknown: NaN, left out below.
            value: v.map_or(f64::NAN, |v| v as f64),
            class: Class::Bytes,
        };
        let (user, sys) = (m.user_ms - corr.user_ms, m.sys_ms - corr.sys_ms);
        let values = [
            ms(m.wall_ms - corr.wall_ms),
            ms(user),
            ms(sys),
            ms(user.max(0.0) + sys.max(0.0)),
            bytes(m.peak_rss()),
            bytes(m.ru_maxrss),
            plain(m.voluntary_cs),
            plain(m.involuntary_cs),
        ];
        for ((name, _), q) in BUILTIN.iter().zip(values.iter()) {
            if q.value.is_finite() {
                self.push(name, q);
            }
        }
        let run = self.runs;
        if let Some(p) = &m.parsed {
            for (k, q) in &p.values {
                let name = record::metric_name(k);
                self.push(&name, q);
            }
            let o = &mut self.output;
            o.malformed_lines += p.malformed;
            if o.first_malformed.is_none() {
                if let Some((line, text)) = &p.first_malformed {
                    o.first_malformed = Some((run, *line, text.clone()));
                }
            }
            for k in p.repeated.keys() {
                *o.repeated_keys.entry(k.clone()).or_insert(0) += 1;
            }
            o.dropped_keys += p.dropped_keys;
            o.labels = p.labels.clone();
        }
    }
}

/// The shell's start-up cost subtracted from every run (zero without `--shell`).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Correction {
    pub wall_ms: f64,
    pub user_ms: f64,
    pub sys_ms: f64,
}

/// Every benchmark's runs, and when they happened.
pub struct Done {
    pub collected: Vec<Collected>,
    pub interrupted: bool,
    pub started: SystemTime,
    pub ended: SystemTime,
    pub elapsed: Duration,
    pub correction: Option<Correction>,
}

fn progress(spec: &BenchSpec, msg: &str) {
    if !spec.quiet {
        eprintln!("{msg}");
    }
}

fn calibrate(spec: &BenchSpec, shell: &str, ctl: &RunControl) -> Result<Correction, String> {
    let argv = vec![shell.to_string(), "-c".to_string(), String::new()];
    let launch = Launch {
        argv: &argv,
        stdin: None,
        parse: None,
        show_output: false,
        timeout: Some(Duration::from_secs(10)),
        sample_max: spec.sample_max,
    };
    let mut runs: Vec<Measured> = Vec::new();
    for _ in 0..CALIBRATION_RUNS + 3 {
        runs.push(exec::run_once(&launch, ctl)?);
    }
    let med = |f: fn(&Measured) -> f64| {
        crate::stats::median(&runs[3..].iter().map(f).collect::<Vec<_>>())
    };
    Ok(Correction {
        wall_ms: med(|m| m.wall_ms),
        user_ms: med(|m| m.user_ms),
        sys_ms: med(|m| m.sys_ms),
    })
}

/// Has the benchmark had enough timed runs?
fn enough(runs: &Runs, made: u32, spent: Duration) -> bool {
    match *runs {
        Runs::Exact(n) => made >= n,
        Runs::Until { min_time, min, max } => made >= max || (made >= min && spent >= min_time),
    }
}

pub fn run_all(spec: &BenchSpec, benches: &[Bench], ctl: &RunControl) -> Result<Done, String> {
    let started = SystemTime::now();
    let t0 = Instant::now();
    let correction = match &spec.shell {
        Some(sh) => {
            let c = calibrate(spec, sh, ctl)?;
            progress(
                spec,
                &format!(
                    "Shell start-up ({sh} -c ''): {} wall, subtracted from every run",
                    volley_metrics::fmt::ms(c.wall_ms)
                ),
            );
            Some(c)
        }
        None => None,
    };
    let corr = correction.clone().unwrap_or_default();
    let mut collected = Vec::with_capacity(benches.len());
    let mut interrupted = false;
    for (i, b) in benches.iter().enumerate() {
        if ctl.is_stopped() {
            interrupted = true;
            break;
        }
        progress(
            spec,
            &format!("Benchmark {}/{}: {}", i + 1, benches.len(), b.name),
        );
        let mut c = Collected::new(b.clone());
        let launch = Launch {
            argv: &b.argv,
            stdin: spec.input.as_deref(),
            parse: spec.parse,
            show_output: spec.show_output,
            timeout: spec.timeout,
            sample_max: spec.sample_max,
        };
        let prepare = |c: &Collected| -> Result<(), String> {
            match &c.bench.prepare {
                Some(p) => exec::run_helper("--prepare", p, spec.show_output),
                None => Ok(()),
            }
        };
        for _ in 0..spec.warmup {
            if ctl.is_stopped() {
                break;
            }
            prepare(&c)?;
            let m = exec::run_once(&launch, ctl)?;
            if !m.status.ok() && m.status != exec::Status::Interrupted {
                c.warmup_failed += 1;
            }
        }
        let mut spent = Duration::ZERO;
        while !enough(&spec.runs, c.runs, spent) {
            if ctl.is_stopped() {
                interrupted = true;
                break;
            }
            prepare(&c)?;
            let m = exec::run_once(&launch, ctl)?;
            if m.status == exec::Status::Interrupted {
                interrupted = true;
                break;
            }
            c.runs += 1;
            spent += Duration::from_secs_f64(m.wall_ms / 1e3);
            if let Some(n) = &m.note {
                c.note(n.clone());
            }
            if m.status.ok() {
                c.record(&m, &corr);
            } else {
                c.failed += 1;
                let status = m.status.describe(spec.timeout);
                if c.failures.len() < MAX_FAILURES {
                    progress(spec, &format!("  run {} failed: {status}", c.runs));
                    c.failures.push(Failure {
                        run: c.runs,
                        status,
                    });
                }
            }
        }
        if let Some(cl) = &b.cleanup {
            if let Err(e) = exec::run_helper("--cleanup", cl, spec.show_output) {
                c.note(e);
            }
        }
        collected.push(c);
        if interrupted {
            break;
        }
    }
    Ok(Done {
        collected,
        interrupted,
        started,
        ended: SystemTime::now(),
        elapsed: t0.elapsed(),
        correction,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_counts_stop_at_exact_or_at_time_and_minimum_within_the_maximum() {
        let s = Duration::from_secs;
        assert!(!enough(&Runs::Exact(3), 2, s(100)));
        assert!(enough(&Runs::Exact(3), 3, s(0)));
        let until = Runs::Until {
            min_time: s(3),
            min: 10,
            max: 50,
        };
        assert!(!enough(&until, 9, s(60)), "the minimum count first");
        assert!(!enough(&until, 20, s(2)), "then the minimum time");
        assert!(enough(&until, 10, s(3)));
        assert!(enough(&until, 50, s(0)), "the maximum whatever the time");
    }
}
