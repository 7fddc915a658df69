//! volley-bench: `volley bench`, command harnesses measured run by run.
//!
//! A benchmark runs a command N times, one run after the other, and measures each run: wall
//! time, user and system CPU, peak RSS of the whole process tree (and `wait4`'s single-process
//! `ru_maxrss`), context switches and the exit status, plus the `key=value` (or JSON) figures
//! the command prints. Failed and timed-out runs are reported and left out of the statistics.
//! The runs become a Volley result file (`meta.mode = "bench"`, one trend per metric whose
//! exact per-run values are kept), so `volley compare` judges them run against run,
//! `volley report`, `--history` and `volley summary` read them, and `--threshold` limits judge
//! them (exit 99).
//!
//! Runs are a plain sequential loop on the calling thread, not a body on the engine's VU
//! scheduler: a run is a blocking fork/exec/wait whose timing must not share a thread with
//! anything, there is never more than one in flight, and the scheduler's per-second
//! aggregation would only blur values that are wanted exactly, one per run.
//!
//! # Layout
//!
//! - this file: [`BenchSpec`] (what to run and how), [`run`] (the library entry point that
//!   `volley bench` and suite steps call) and [`BenchOutcome`].
//! - [`plan`]: commands × `--param` matrices → benchmarks, `{name}` substitution, word
//!   splitting for direct exec.
//! - [`exec`]: one timed run (process group, pidfd wait, `/proc` sampling, timeout, rusage).
//! - [`tree`]: the resident memory of a live process tree.
//! - [`parse`]: `key=value` and JSON-lines metrics in a run's stdout.
//! - [`units`]: numbers with units (`2.5MiB`, `12ms`, `3.1k ops/s`).
//! - `runner`: warm-up, timed runs, `--prepare`/`--cleanup`, the shell's start-up correction.
//! - [`record`]: the runs → a [`volley_metrics::RunResult`]; which way is better per metric.
//! - [`limits`]: `--threshold` (k6's grammar with units) on a bench result.
//! - [`stats`]: mean ± σ, median, outliers, ratios.
//! - [`summary`]: what a bench result says, read from the file alone: the terminal table,
//!   Markdown, JSON and the "a is N × faster than b" lines.

pub mod exec;
pub mod limits;
pub mod parse;
pub mod plan;
pub mod record;
mod runner;
pub mod stats;
pub mod summary;
pub mod tree;
pub mod units;

use std::path::PathBuf;
use std::time::Duration;
use volley_engine::RunControl;
use volley_metrics::RunResult;

pub use plan::{CommandSpec, Param};

/// Exit codes of `volley bench` (README.md, "Exit codes"): the run layer's one table.
pub mod code {
    pub use volley_run::outcome::code::RUNS_FAILED;
}

/// How many timed runs each benchmark gets.
#[derive(Clone, Debug, PartialEq)]
pub enum Runs {
    /// `--runs N`.
    Exact(u32),
    /// Until `min_time` of runs has passed and at least `min` runs were made, at most `max`
    /// (the defaults: 3 s, 10, [`MAX_RUNS`]).
    Until {
        min_time: Duration,
        min: u32,
        max: u32,
    },
}

/// Most timed runs per benchmark: the result file keeps every run's value exactly up to
/// this many ([`volley_metrics::agg::EXACT_MAX`]).
pub const MAX_RUNS: u32 = volley_metrics::agg::EXACT_MAX as u32;

impl Default for Runs {
    fn default() -> Self {
        Runs::Until {
            min_time: Duration::from_secs(3),
            min: 10,
            max: MAX_RUNS,
        }
    }
}

/// Everything `volley bench` needs; a suite step builds one too.
#[derive(Clone, Debug)]
pub struct BenchSpec {
    pub commands: Vec<CommandSpec>,
    pub params: Vec<Param>,
    pub warmup: u32,
    pub runs: Runs,
    /// Run before every run (warm-ups included), through `sh -c`, untimed.
    pub prepare: Option<String>,
    /// Run once after the last run of each benchmark, through `sh -c`.
    pub cleanup: Option<String>,
    /// `--shell [SHELL]`: run commands through `SHELL -c`, its start-up cost subtracted.
    pub shell: Option<String>,
    pub timeout: Option<Duration>,
    /// `--input FILE`: the commands' stdin (default /dev/null).
    pub input: Option<PathBuf>,
    pub show_output: bool,
    pub parse: Option<parse::Format>,
    /// `--threshold METRIC:EXPR` flags as written.
    pub thresholds: Vec<String>,
    /// Longest interval between memory samples of a run.
    pub sample_max: Duration,
    /// No progress lines on stderr.
    pub quiet: bool,
    /// The command line, for the result file.
    pub command_line: Vec<String>,
}

impl BenchSpec {
    /// A spec for `commands` with the defaults of `volley bench`.
    pub fn new(commands: Vec<CommandSpec>) -> BenchSpec {
        BenchSpec {
            commands,
            params: Vec::new(),
            warmup: 0,
            runs: Runs::default(),
            prepare: None,
            cleanup: None,
            shell: None,
            timeout: None,
            input: None,
            show_output: false,
            parse: None,
            thresholds: Vec::new(),
            sample_max: Duration::from_millis(10),
            quiet: false,
            command_line: Vec::new(),
        }
    }
}

/// Why a benchmark could not be run at all, with the exit code to use.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchError {
    pub code: i32,
    pub message: String,
}

impl BenchError {
    fn usage(message: String) -> BenchError {
        BenchError {
            code: volley_run::outcome::code::USAGE,
            message,
        }
    }

    fn failure(message: String) -> BenchError {
        BenchError {
            code: volley_run::outcome::code::FAILURE,
            message,
        }
    }
}

/// How a benchmark ended.
#[derive(Clone, Debug)]
pub struct BenchOutcome {
    pub result: RunResult,
    /// Timed runs that failed or timed out, over all benchmarks.
    pub failed_runs: u64,
    /// k6's message when thresholds were crossed.
    pub thresholds_failed: Option<String>,
    pub interrupted: bool,
}

impl BenchOutcome {
    /// The run layer's outcome for the after-run chain (failed runs are judged apart:
    /// [`BenchOutcome::exit_code`]).
    pub fn outcome(&self) -> volley_run::Outcome {
        volley_run::Outcome::of_run(
            None,
            None,
            self.thresholds_failed.clone(),
            self.interrupted,
            false,
        )
    }

    /// Interrupted (105), then failed runs ([`code::RUNS_FAILED`]), then crossed thresholds
    /// (99), else 0.
    pub fn exit_code(&self) -> i32 {
        if self.interrupted {
            volley_run::outcome::code::INTERRUPTED
        } else if self.failed_runs > 0 {
            code::RUNS_FAILED
        } else {
            self.outcome().exit_code()
        }
    }
}

/// Run every benchmark of `spec` and judge the thresholds. `ctl` stops the runs (Ctrl-C: the
/// run in progress is killed and left out, what was measured is kept).
pub fn run(spec: &BenchSpec, ctl: &RunControl) -> Result<BenchOutcome, BenchError> {
    let limits = limits::parse_flags(&spec.thresholds).map_err(BenchError::usage)?;
    let benches = plan::expand(
        &spec.commands,
        &spec.params,
        spec.shell.as_deref(),
        spec.prepare.as_deref(),
        spec.cleanup.as_deref(),
    )
    .map_err(BenchError::usage)?;
    if let Runs::Exact(0) = spec.runs {
        return Err(BenchError::usage("--runs must be at least 1".into()));
    }
    let done = runner::run_all(spec, &benches, ctl).map_err(BenchError::failure)?;
    let mut result = record::to_result(spec, &done);
    let thresholds_failed = limits::judge(&limits, &mut result);
    Ok(BenchOutcome {
        failed_runs: done.collected.iter().map(|c| u64::from(c.failed)).sum(),
        thresholds_failed,
        interrupted: done.interrupted,
        result,
    })
}
