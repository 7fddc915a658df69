//! `volley run script.js`: k6 scripts → [`volley_js::run`], k6's summary (or the script's
//! `handleSummary`), thresholds, k6's exit codes.

use crate::args::RunArgs;
use crate::{exit, signals};
use std::io::IsTerminal;
use volley_engine::RunControl;
use volley_js::{CliOptions, RunError, Summary};

/// k6: some thresholds failed.
pub const THRESHOLDS_FAILED: i32 = 99;
/// k6: `setup()` ran past `setupTimeout`.
pub const SETUP_TIMEOUT: i32 = 100;
/// k6: `teardown()` ran past `teardownTimeout`.
pub const TEARDOWN_TIMEOUT: i32 = 101;
/// k6: a script exception or syntax error in init, setup or teardown.
pub const SCRIPT_EXCEPTION: i32 = 107;
/// k6: invalid options.
pub const INVALID_CONFIG: i32 = 104;
/// k6: the test was aborted from the script.
pub const ABORTED: i32 = 108;

pub fn run(a: RunArgs) -> i32 {
    let mut pairs = Vec::new();
    for kv in &a.env {
        match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => pairs.push((k.to_string(), v.to_string())),
            _ => return exit::usage(&format!("-e/--env '{kv}': expected KEY=VALUE")),
        }
    }
    let mut out_json = None;
    for o in &a.out {
        match o.split_once('=') {
            Some(("json", f)) if !f.is_empty() => out_json = Some(std::path::PathBuf::from(f)),
            _ => {
                eprintln!(
                    "volley: error: invalid options: --out '{o}': only json=FILE is supported"
                );
                return INVALID_CONFIG;
            }
        }
    }
    let env = volley_js::environment(&pairs, !a.no_system_env);
    let cli = CliOptions {
        vus: a.vus,
        duration: a.duration,
        iterations: a.iterations,
        out_json,
    };
    let ctl = RunControl::new();
    signals::install(ctl.clone());
    let out = match volley_js::run(
        &a.script,
        env,
        &cli,
        a.threads,
        std::env::args().collect(),
        &ctl,
    ) {
        Ok(o) => o,
        Err(RunError::Script(e)) => {
            eprintln!("ERRO[0000] {e}");
            return SCRIPT_EXCEPTION;
        }
        Err(RunError::Config(e)) => {
            eprintln!("volley: error: invalid options: {e}");
            return INVALID_CONFIG;
        }
        Err(RunError::SetupTimeout(e)) => {
            eprintln!("ERRO[0000] {e}");
            return SETUP_TIMEOUT;
        }
        Err(RunError::Other(e)) => return exit::fail(&e),
    };
    if let Some(m) = &out.threshold_abort {
        eprintln!("ERRO[0000] {m}");
    }
    let summary = match Summary::from_result(&out.result) {
        Ok(s) => s,
        Err(e) => return exit::fail(&e),
    };
    // handleSummary replaces the default summary; if it fails, the default is printed.
    let tty = (
        std::io::stdout().is_terminal(),
        std::io::stderr().is_terminal(),
    );
    let handled = match out.handle_summary(&summary, tty.0, tty.1) {
        Ok(Some(outs)) => {
            if let Err(e) = volley_js::handle_summary::write_outputs(&outs) {
                eprintln!("ERRO[0000] {e}");
            }
            true
        }
        Ok(None) => false,
        Err(e) => {
            eprintln!("ERRO[0000] handleSummary: {e}");
            false
        }
    };
    if !a.quiet && !handled {
        exit::print(&summary.render_text());
    }
    if let Some(path) = &a.summary_export {
        let text = serde_json::to_string_pretty(&summary.export()).unwrap_or_default();
        if let Err(e) = std::fs::write(path, text + "\n") {
            return exit::fail(&format!("cannot write {}: {e}", path.display()));
        }
    }
    if let Some(path) = &a.save {
        if let Err(e) = out.result.write(path) {
            return exit::fail(&format!("cannot save {}: {e}", path.display()));
        }
    }
    if let Some(e) = &out.teardown_error {
        eprintln!("ERRO[0000] teardown: {e}");
        if volley_js::is_teardown_timeout(e) {
            return TEARDOWN_TIMEOUT;
        }
        return SCRIPT_EXCEPTION;
    }
    if let Some(e) = &out.aborted {
        eprintln!("ERRO[0000] test aborted: {e}");
        return ABORTED;
    }
    if let Some(m) = out.thresholds_message() {
        eprintln!("ERRO[0000] {m}");
        return THRESHOLDS_FAILED;
    }
    if out.result.meta.interrupted {
        return exit::INTERRUPTED;
    }
    exit::OK
}
