//! `volley run --verify`: once the load is over, the script's exported `verify(entries)` runs
//! once — one VU, one iteration, no setup or teardown — with the ledger's acknowledged
//! entries as its argument, and reports each through `ledger.verified(id)`,
//! `ledger.lost(id)`, `ledger.corrupted(id)` or `ledger.partial(name)` (volley/ledger). The
//! verdicts are counted by [`volley_faults::verify::tally`], as `volley verify`'s are.

use crate::{prepare, CliOptions, RunError};
use std::collections::BTreeMap;
use std::path::Path;
use volley_engine::RunControl;

/// Run `verify(entries)` of the script at `path`; returns the verdict lines.
pub fn verify_pass(
    path: &Path,
    env: BTreeMap<String, String>,
    entries: &[volley_faults::ledger::Entry],
    threads: usize,
    ctl: &RunControl,
) -> Result<Vec<String>, RunError> {
    // The highest tier of options: this one call replaces the script's execution.
    let flags = serde_json::json!({
        "scenarios": { "verify": {
            "executor": "shared-iterations", "vus": 1, "iterations": 1, "exec": "verify",
            "maxDuration": "1h",
        }},
        "noSetup": true,
        "noTeardown": true,
    });
    let cli = CliOptions {
        flag_options: flags.as_object().cloned().unwrap_or_default(),
        no_thresholds: true,
        ..CliOptions::default()
    };
    let p = prepare(path, env, &cli, threads, Vec::new(), ctl)?;
    let data: Vec<serde_json::Value> = entries
        .iter()
        .map(|e| serde_json::Value::Object(e.fields.clone()))
        .collect();
    // What setup() would have returned: the argument of verify().
    *p.script.shared.setup_data.lock().unwrap() = Some(serde_json::Value::from(data).to_string());
    volley_faults::verify::take_verdicts();
    let fin = volley_run::execute(p.spec, ctl).map_err(RunError::from_outcome)?;
    if let Some(e) = fin.aborted {
        volley_engine::log::error(&format!("verify: {e}"));
    }
    Ok(volley_faults::verify::take_verdicts())
}
