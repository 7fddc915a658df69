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
}

/// Open the ledger and arm the faults; `Err` is the exit code (the error is printed).
pub fn arm(f: &FaultFlags, quiet: bool) -> Result<Armed, i32> {
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
