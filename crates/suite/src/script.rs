//! The one place a suite runs a k6 script, and the one mapping of its outcome to `volley
//! run`'s exit code (the same order as crates/cli/src/run_cmd.rs). When the run layer owns a
//! typed outcome and the exit-code table, only this file changes.

use crate::code;
use std::path::Path;
use std::time::Duration;
use volley_engine::RunControl;
use volley_js::{CliOptions, RunError, RunOutput};

/// Runs `script` as `volley run --no-system-env -e K=V... [-d DURATION]` would, printing
/// nothing: the process environment stays out (a PROFILE or P95_MS exported in the user's
/// shell must not change what a suite measures). `command` is recorded in the result file.
/// A run that produced no result is `Err((exit code, message))`.
pub fn run_script(
    script: &Path,
    env: &[(String, String)],
    duration: Option<Duration>,
    command: Vec<String>,
    ctl: &RunControl,
) -> Result<RunOutput, (i32, String)> {
    let cli = CliOptions {
        duration,
        ..CliOptions::default()
    };
    volley_js::run(
        script,
        volley_js::environment(env, false),
        &cli,
        0,
        command,
        ctl,
    )
    .map_err(|e| (error_code(&e), e.to_string()))
}

/// The codes `volley run` gives for a run that produced no result.
fn error_code(e: &RunError) -> i32 {
    match e {
        RunError::Script(_) => code::SCRIPT_EXCEPTION,
        RunError::Config(_) => code::INVALID_CONFIG,
        RunError::SetupTimeout(_) => code::SETUP_TIMEOUT,
        RunError::Other(_) => code::FAILURE,
        RunError::Interrupted(_) => code::INTERRUPTED,
    }
}

/// `volley run`'s exit code for a run that completed.
pub fn outcome_code(out: &RunOutput) -> i32 {
    if let Some(e) = &out.teardown_error {
        return if volley_js::is_teardown_timeout(e) {
            code::TEARDOWN_TIMEOUT
        } else {
            code::SCRIPT_EXCEPTION
        };
    }
    if out.aborted.is_some() {
        return code::ABORTED;
    }
    if out.thresholds_failed() {
        return code::THRESHOLDS_FAILED;
    }
    if out.result.meta.interrupted {
        return code::INTERRUPTED;
    }
    code::OK
}
