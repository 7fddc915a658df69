//! `--dashboard [ADDR]` and `--dashboard-export FILE` (docs/dashboard.md): start the live page
//! before the run, write the export after it.

use crate::args::DashboardArgs;
use crate::exit;
use volley_metrics::RunResult;
use volley_run::Observer;

/// The dashboard as the run's observer, when asked for; a bind failure is a usage error (exit
/// 2) and the run does not start.
pub fn start(a: &DashboardArgs) -> Result<Vec<Box<dyn Observer>>, i32> {
    let Some(addr) = a.dashboard else {
        return Ok(Vec::new());
    };
    let d = volley_dashboard::Dashboard::start(addr).map_err(|e| exit::usage(&e))?;
    eprintln!("dashboard: {}", d.url());
    if !addr.ip().is_loopback() {
        eprintln!(
            "dashboard: note: listening on {addr}: anyone who can reach this host can watch the run"
        );
    }
    Ok(vec![Box::new(d)])
}

/// Write `--dashboard-export`; keeps the run's exit code unless writing fails.
pub fn after_run(result: &RunResult, a: &DashboardArgs, quiet: bool, code: i32) -> i32 {
    let Some(path) = &a.dashboard_export else {
        return code;
    };
    match volley_dashboard::export(result, path) {
        Ok(()) => {
            if !quiet {
                eprintln!("dashboard export written to {}", path.display());
            }
            code
        }
        Err(e) => exit::fail(&e),
    }
}
