//! `volley run script.js`: k6 scripts → [`volley_js::run`], k6's summary, k6's exit codes.

use crate::args::RunArgs;
use crate::{exit, signals};
use volley_engine::RunControl;
use volley_js::{CliOptions, RunError, Summary};

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
    let env = volley_js::environment(&pairs, !a.no_system_env);
    let cli = CliOptions {
        vus: a.vus,
        duration: a.duration,
        iterations: a.iterations,
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
        Err(RunError::Other(e)) => return exit::fail(&e),
    };
    let summary = match Summary::from_result(&out.result) {
        Ok(s) => s,
        Err(e) => return exit::fail(&e),
    };
    if !a.quiet {
        print!("{}", summary.render_text());
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
        return SCRIPT_EXCEPTION;
    }
    if let Some(e) = &out.aborted {
        eprintln!("ERRO[0000] test aborted: {e}");
        return ABORTED;
    }
    if out.result.meta.interrupted {
        return exit::INTERRUPTED;
    }
    exit::OK
}
