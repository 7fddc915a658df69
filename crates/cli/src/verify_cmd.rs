//! `volley verify --ledger FILE -- CMD`: after a run with faults, a verifier command checks
//! every acknowledged entry of the ledger ([`volley_faults::verify`]); Volley counts its
//! verdicts and exits 6 on any loss (README.md, "Exit codes"; docs/faults.md).

use crate::exit;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The ledger a run wrote (--ledger or options.ledger)
    #[arg(long, value_name = "FILE")]
    pub ledger: PathBuf,
    /// The verifier and its arguments: it reads the ledger (stdin, or env VOLLEY_LEDGER) and
    /// prints 'verify: verified ID', 'verify: lost ID', 'verify: corrupted ID' or
    /// 'verify: partial NAME'
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: VerifyArgs) -> i32 {
    let contents = match volley_faults::ledger::read(&a.ledger) {
        Ok(c) => c,
        Err(e) => return exit::fail(&e),
    };
    if contents.torn_tail {
        eprintln!("volley: note: the ledger's last line was cut short (a crash while writing); it is not counted");
    }
    let r = match volley_faults::verify::run_command(&a.ledger, &contents, &a.command) {
        Ok(r) => r,
        Err(e) => return exit::fail(&e),
    };
    if a.json {
        outln!(
            "{}",
            serde_json::json!({
                "faults": r.faults, "acknowledged": r.acknowledged, "verified": r.verified,
                "lost": r.lost, "corrupted": r.corrupted, "partial": r.partial,
                "unreported": r.unreported, "lost_ids": r.lost_ids,
                "corrupted_ids": r.corrupted_ids, "ok": r.ok(),
            })
        );
    } else {
        exit::print(&r.render());
    }
    if r.ok() {
        exit::OK
    } else {
        volley_run::outcome::code::DATA_LOST
    }
}
