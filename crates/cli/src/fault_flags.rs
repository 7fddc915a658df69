//! `--fault`, `--proxy`, `--fault-target` and `--ledger` on `volley run` and `volley http`
//! (docs/faults.md): the flags, and the thin glue to [`volley_faults::Armed`], which starts
//! the proxies and targets, schedules the faults on the run's clock and writes their events.

use crate::exit;
use clap::Args;
use std::path::PathBuf;
use volley_faults::{ArmError, Armed};

#[derive(Args, Debug, Default)]
pub struct FaultFlags {
    /// Inject a fault during the run, e.g. 'at=10s,for=5s,proxy=api,latency=200ms,jitter=20ms',
    /// 'at=5s,kill=pid:1234', 'after=500,for=2s,pause=api' (repeatable; docs/faults.md)
    #[arg(long = "fault", value_name = "SPEC")]
    pub faults: Vec<String>,
    /// Start a fault proxy NAME=LISTEN->UPSTREAM, e.g. api=127.0.0.1:0->127.0.0.1:8080; its
    /// address is printed and given to scripts as env VOLLEY_PROXY_<NAME> (and replaces
    /// ${VOLLEY_PROXY_<NAME>} in `volley http`'s URL)
    #[arg(long = "proxy", value_name = "NAME=LISTEN->UPSTREAM")]
    pub proxies: Vec<String>,
    /// A service Volley starts (sh -c COMMAND) for kill/term/pause/restart faults by NAME
    #[arg(long = "fault-target", value_name = "NAME=COMMAND")]
    pub targets: Vec<String>,
    /// Append acknowledged operations (volley/ledger's ledger.ack) and injected faults to
    /// FILE as NDJSON, for `volley verify` (scripts may also set options.ledger)
    #[arg(long, value_name = "FILE")]
    pub ledger: Option<PathBuf>,
    /// volley run: after the load, call the script's exported verify(entries) once with the
    /// ledger's acknowledged entries; exit 6 if it reports anything lost or corrupted
    #[arg(long)]
    pub verify: bool,
}

/// Open the ledger and arm the faults; `Err` is the exit code (the error is printed).
/// `script`: `volley run` (only it has a `verify` function to call).
pub fn arm(f: &FaultFlags, quiet: bool, script: bool) -> Result<Armed, i32> {
    if f.verify && !script {
        return Err(exit::usage(
            "--verify calls a script's verify(entries): use it with volley run (or volley verify -- CMD)",
        ));
    }
    let ledger = match &f.ledger {
        Some(p) => Some(volley_faults::ledger::open_global(p).map_err(|e| exit::fail(&e))?),
        None => None,
    };
    let armed = Armed::arm(&f.faults, &f.proxies, &f.targets, ledger).map_err(|e| match e {
        ArmError::Usage(m) => exit::usage(&m),
        ArmError::Failure(m) => exit::fail(&m),
    })?;
    if !quiet {
        for l in armed.describe() {
            eprintln!("{l}");
        }
    }
    Ok(armed)
}

/// The faults' summary lines, after the run's summary.
pub fn print(lines: &[String], quiet: bool) {
    if !quiet {
        for l in lines {
            outln!("{l}");
        }
    }
}

/// `--verify`: the script's `verify(entries)` against the ledger, and its report. `None`
/// without `--verify`; else the exit code it decides (0, 6 on any loss, 1 when it could not
/// run).
pub fn verify_after(
    f: &FaultFlags,
    script: &std::path::Path,
    env: std::collections::BTreeMap<String, String>,
    threads: usize,
    ctl: &volley_engine::RunControl,
) -> Option<i32> {
    if !f.verify {
        return None;
    }
    let Some(ledger) = volley_faults::ledger::global() else {
        return Some(exit::fail(
            "--verify needs the ledger the run wrote\n  hint: give --ledger FILE (or options.ledger)",
        ));
    };
    let contents = match volley_faults::ledger::read(ledger.path()) {
        Ok(c) => c,
        Err(e) => return Some(exit::fail(&e)),
    };
    let lines = match volley_js::verify::verify_pass(script, env, &contents.entries, threads, ctl) {
        Ok(l) => l,
        Err(e) => return Some(exit::outcome(&e.outcome())),
    };
    let report = volley_faults::verify::tally(&contents, lines.iter().map(String::as_str));
    exit::print(&report.render());
    Some(if report.ok() {
        exit::OK
    } else {
        volley_run::outcome::code::DATA_LOST
    })
}
