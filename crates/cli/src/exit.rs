//! Exit codes (documented in README.md, "Exit codes") and error printing.

use std::io::IsTerminal;

// The codes live with the one table that maps a run's ending to them
// (`volley_run::Outcome::exit_code`).
pub use volley_run::outcome::code::{FAILURE, INTERRUPTED, OK, REQUEST_ERRORS, USAGE};

pub fn fail(msg: &str) -> i32 {
    eprintln!("volley: error: {msg}");
    FAILURE
}

pub fn usage(msg: &str) -> i32 {
    eprintln!("volley: error: {msg}\n  (see 'volley help' for usage)");
    USAGE
}

/// Say how a run (or the attempt to start one) ended, in the CLI's and k6's wording, and
/// return its exit code.
pub fn outcome(o: &volley_run::Outcome) -> i32 {
    use volley_engine::log;
    use volley_run::Outcome as O;
    match o {
        O::Passed | O::RequestErrors | O::Interrupted => {}
        O::ThresholdsFailed(m) | O::ThresholdsAborted(m) => log::error(m),
        O::InterruptedBeforeStart(m) => eprintln!("volley: {m}"),
        O::Aborted(m) => log::error(&format!("test aborted: {m}")),
        O::ScriptError(m) => log::log(log::Level::Error, m, &[("hint", "script exception")]),
        O::TeardownTimeout(m) | O::TeardownError(m) => log::log(
            log::Level::Error,
            &format!("teardown: {m}"),
            &[("hint", "script exception")],
        ),
        O::SetupTimeout(m) => log::error(m),
        O::ConfigError(m) => eprintln!("volley: error: invalid options: {m}"),
        O::Usage(m) => {
            usage(m);
        }
        O::Failure(m) => m.lines().for_each(|l| {
            fail(l);
        }),
    }
    o.exit_code()
}

pub fn stdout_is_tty() -> bool {
    std::io::stdout().is_terminal()
}

/// Write to stdout; a closed pipe (`volley ... | head`) is not an error worth a panic.
pub fn print(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}
