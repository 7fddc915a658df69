//! volley-suite: runs suites of steps — k6 scripts, quick-mode blasts — against services it
//! starts itself, and judges them as one. The demo tour (`volley demo`) is its first suite;
//! `volley suite` (suite files: provisioning, readiness, seed, profiles, teardown) grows here.
//!
//! The CLI only parses flags into the configs below and calls [`demo::run`]; everything a
//! suite prints goes to stdout (tables, summaries) or stderr (progress, errors) as the
//! commands do, and each entry point returns the documented exit code.
//!
//! # Layout
//!
//! - [`demo`]: `volley demo`'s intro against the built-in target (a quick blast whose count
//!   must equal what the target served, then the caller's k6 step) followed by the tour.
//! - `demo_capacity`: the demo's short breaking-point search against a target of known
//!   capacity (`volley http URL --find-max-rate --slo ...`).
//! - [`tour`]: the example suites against the demo service: [`tour::Plan`] (which examples,
//!   extra environment, profile), seeding, one run per example, the byte-count check.
//! - `tour::table`: the baseline table, the per-example verdicts, `tour.json`, the exit code.
//! - `examples`: the example scripts and their `lib/`, embedded at build time.
//! - [`script`]: the one place a suite runs a k6 script and maps its outcome to `volley
//!   run`'s exit code (to be swapped for the run layer's typed outcome).
//! - [`code`]: the exit codes suites return (README, "Exit codes").
//!
//! `volley suite` (suite files; docs/suite.md):
//!
//! - [`file`]: the suite file's serde model read with spans, [`file::FileError`]
//!   (file:line:column + hint), `file::interp` (`${...}` interpolation).
//! - [`check`]: validation into the runnable [`check::Suite`] (`volley suite check`).
//! - [`services`]: ports, starting services in process groups, readiness probes,
//!   `kind = "postgres"`, teardown and the survivors check.
//! - [`steps`]: one step run and judged (run, http, command, sql, bench);
//!   `capacity_step`: an http step's sweep or breaking-point search.
//! - `bench_step`: a `bench` step through volley-bench; `fault_step`: a run step's
//!   `faults`/`proxies` through volley-faults (services lent as fault targets).
//! - [`results`]: the results directory, `suite.json`, `suite.md`, baseline verdicts.
//! - [`runner`]: `volley suite run|check|services` end to end, the exit code.

/// `println!` that tolerates a closed stdout (`volley demo | head`) instead of panicking.
macro_rules! outln {
    ($($t:tt)*) => { $crate::print(&format!("{}\n", format_args!($($t)*))) };
}

mod bench_step;
mod capacity_step;
pub mod check;
pub mod demo;
mod demo_capacity;
mod examples;
mod fault_step;
pub mod file;
pub mod results;
pub mod runner;
pub mod script;
pub mod services;
pub mod steps;
pub mod tour;

/// Exit codes (README.md, "Exit codes"): the run layer's one table.
pub use volley_run::outcome::code;

/// Writes to stdout; a closed pipe is not an error worth a panic.
pub fn print(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

/// Prints an error as every `volley` command does and returns [`code::FAILURE`].
fn fail(msg: &str) -> i32 {
    eprintln!("volley: error: {msg}");
    code::FAILURE
}
