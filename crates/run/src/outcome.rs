//! How a run ended, and the one table from that to the process's exit code (k6's codes for
//! what k6 has, Volley's small ones for the rest; README.md "Exit codes").

use std::time::Duration;

/// The exit codes, by name. Everything that maps an ending to a code goes through
/// [`Outcome::exit_code`]; these names exist for the few places that need a code without an
/// outcome (the CLI's usage errors, `volley compare`).
pub mod code {
    /// The run completed; every request got a response (any status), every threshold held.
    pub const OK: i32 = 0;
    /// Volley could not do its job: unreadable files, unresolvable host, cannot bind or save.
    pub const FAILURE: i32 = 1;
    /// Bad flags or arguments (clap uses 2 as well).
    pub const USAGE: i32 = 2;
    /// The run completed, but some requests got no response (refused, timeout, reset, TLS,
    /// DNS, protocol): quick mode.
    pub const REQUEST_ERRORS: i32 = 3;
    /// `volley verify`: acknowledged data was lost, corrupted or left half-written.
    pub const DATA_LOST: i32 = 6;
    /// `volley bench`: some timed run failed (non-zero exit, killed by a signal) or timed
    /// out; those runs are reported and left out of the statistics.
    pub const RUNS_FAILED: i32 = 7;
    /// k6: some thresholds failed (also when `abortOnFail` stopped the test).
    pub const THRESHOLDS_FAILED: i32 = 99;
    /// k6: `setup()` ran past `setupTimeout`.
    pub const SETUP_TIMEOUT: i32 = 100;
    /// k6: `teardown()` ran past `teardownTimeout`.
    pub const TEARDOWN_TIMEOUT: i32 = 101;
    /// k6: invalid options.
    pub const INVALID_CONFIG: i32 = 104;
    /// k6: stopped by Ctrl-C / SIGTERM (the summary and result file were still written).
    pub const INTERRUPTED: i32 = 105;
    /// k6: a script exception or syntax error in init, setup or teardown.
    pub const SCRIPT_EXCEPTION: i32 = 107;
    /// k6: the test was aborted from the script (`exec.test.abort()`).
    pub const ABORTED: i32 = 108;
}

/// How a run (or the attempt to start one) ended. The message, where there is one, is what
/// the user is told.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Completed; every threshold held.
    Passed,
    /// Completed, but some requests got no response (quick mode, exit 3).
    RequestErrors,
    /// Completed with crossed thresholds: k6's message (`thresholds on metrics 'x' have been
    /// crossed`).
    ThresholdsFailed(String),
    /// Crossed `abortOnFail` thresholds stopped the test early: k6's final message (the
    /// one logged when they stopped it is `Finished::threshold_abort`).
    ThresholdsAborted(String),
    /// Ctrl-C/SIGTERM during the run: the result is complete up to the stop.
    Interrupted,
    /// Ctrl-C/SIGTERM before the test started (while init code ran): nothing was recorded.
    InterruptedBeforeStart(String),
    /// The script aborted the test (`exec.test.abort()`).
    Aborted(String),
    /// An exception or syntax error in init or setup.
    ScriptError(String),
    /// `setup()` ran past its timeout.
    SetupTimeout(String),
    /// `teardown()` ran past its timeout (the run itself completed).
    TeardownTimeout(String),
    /// An exception in `teardown()` (the run itself completed).
    TeardownError(String),
    /// Invalid options.
    ConfigError(String),
    /// Bad flags or arguments.
    Usage(String),
    /// Volley could not do its job (cannot start threads, cannot write an output).
    Failure(String),
}

impl Outcome {
    /// The process's exit code: the one place endings map to codes.
    pub fn exit_code(&self) -> i32 {
        use code::*;
        match self {
            Outcome::Passed => OK,
            Outcome::RequestErrors => REQUEST_ERRORS,
            Outcome::ThresholdsFailed(_) | Outcome::ThresholdsAborted(_) => THRESHOLDS_FAILED,
            Outcome::Interrupted | Outcome::InterruptedBeforeStart(_) => INTERRUPTED,
            Outcome::Aborted(_) => ABORTED,
            Outcome::ScriptError(_) | Outcome::TeardownError(_) => SCRIPT_EXCEPTION,
            Outcome::SetupTimeout(_) => SETUP_TIMEOUT,
            Outcome::TeardownTimeout(_) => TEARDOWN_TIMEOUT,
            Outcome::ConfigError(_) => INVALID_CONFIG,
            Outcome::Usage(_) => USAGE,
            Outcome::Failure(_) => FAILURE,
        }
    }

    /// The ending of a completed run (k6's order): teardown trouble, then a script abort, then
    /// crossed thresholds (an interrupted run exits 105 even with thresholds crossed, as k6),
    /// then the interruption, then request errors.
    pub fn of_run(
        teardown_error: Option<&str>,
        aborted: Option<&str>,
        thresholds: Option<String>,
        interrupted: bool,
        request_errors: bool,
    ) -> Outcome {
        if let Some(e) = teardown_error {
            return if is_teardown_timeout(e) {
                Outcome::TeardownTimeout(e.to_string())
            } else {
                Outcome::TeardownError(e.to_string())
            };
        }
        if let Some(e) = aborted {
            return Outcome::Aborted(e.to_string());
        }
        match (thresholds, interrupted) {
            (_, true) => Outcome::Interrupted,
            (Some(m), false) => Outcome::ThresholdsFailed(m),
            (None, false) if request_errors => Outcome::RequestErrors,
            (None, false) => Outcome::Passed,
        }
    }

    /// Did the run itself complete as asked (the after-run chain's failures count then)?
    pub fn is_success(&self) -> bool {
        matches!(self, Outcome::Passed)
    }
}

/// k6's message for a setup/teardown timeout.
pub fn timeout_message(phase: &str, d: Duration) -> String {
    format!(
        "{phase}() execution timed out after {} seconds",
        d.as_secs_f64()
    )
}

/// Is `e` a teardown timeout ([`timeout_message`])?
pub fn is_teardown_timeout(e: &str) -> bool {
    e.starts_with("teardown() execution timed out")
}

/// Is `e` a setup timeout ([`timeout_message`])?
pub fn is_setup_timeout(e: &str) -> bool {
    e.starts_with("setup() execution timed out")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ending_has_k6s_code() {
        let s = || "x".to_string();
        let table = [
            (Outcome::Passed, 0),
            (Outcome::Failure(s()), 1),
            (Outcome::Usage(s()), 2),
            (Outcome::RequestErrors, 3),
            (Outcome::ThresholdsFailed(s()), 99),
            (Outcome::ThresholdsAborted(s()), 99),
            (Outcome::SetupTimeout(s()), 100),
            (Outcome::TeardownTimeout(s()), 101),
            (Outcome::ConfigError(s()), 104),
            (Outcome::Interrupted, 105),
            (Outcome::InterruptedBeforeStart(s()), 105),
            (Outcome::ScriptError(s()), 107),
            (Outcome::TeardownError(s()), 107),
            (Outcome::Aborted(s()), 108),
        ];
        for (o, c) in table {
            assert_eq!(o.exit_code(), c, "{o:?}");
        }
    }

    #[test]
    fn a_completed_runs_ending_follows_k6s_order() {
        let th = || Some("thresholds on metrics 'x' have been crossed".to_string());
        let t = timeout_message("teardown", Duration::from_secs(2));
        assert_eq!(
            Outcome::of_run(Some(&t), Some("a"), th(), true, true).exit_code(),
            101
        );
        assert_eq!(
            Outcome::of_run(Some("boom"), None, None, false, false).exit_code(),
            107
        );
        assert_eq!(
            Outcome::of_run(None, Some("a"), th(), true, true).exit_code(),
            108
        );
        assert_eq!(
            Outcome::of_run(None, None, th(), true, false).exit_code(),
            105
        );
        assert_eq!(
            Outcome::of_run(None, None, th(), false, true).exit_code(),
            99
        );
        assert_eq!(
            Outcome::of_run(None, None, None, false, true).exit_code(),
            3
        );
        assert_eq!(
            Outcome::of_run(None, None, None, false, false),
            Outcome::Passed
        );
    }
}
