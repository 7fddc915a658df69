//! Exit codes (documented in README.md, "Exit codes") and error printing.

use std::io::IsTerminal;

/// The run completed; every request got a response (any status).
pub const OK: i32 = 0;
/// Volley could not do its job: unreadable files, unresolvable host, cannot bind, cannot save.
pub const FAILURE: i32 = 1;
/// Bad flags or arguments (clap uses 2 as well).
pub const USAGE: i32 = 2;
/// The run completed, but some requests failed without a response (refused, timeout, reset,
/// TLS, DNS, protocol).
pub const REQUEST_ERRORS: i32 = 3;
/// Stopped by Ctrl-C / SIGTERM; the summary and result file were still written (k6's code).
pub const INTERRUPTED: i32 = 105;

pub fn fail(msg: &str) -> i32 {
    eprintln!("volley: error: {msg}");
    FAILURE
}

pub fn usage(msg: &str) -> i32 {
    eprintln!("volley: error: {msg}\n  (see 'volley help' for usage)");
    USAGE
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
