//! `volley suite run|check|services`: flags → [`volley_suite::runner`] (docs/suite.md).

use clap::{Args, Subcommand};
use std::path::PathBuf;
use volley_engine::RunControl;

#[derive(Args, Debug)]
pub struct SuiteArgs {
    #[command(subcommand)]
    pub action: SuiteAction,
}

#[derive(Subcommand, Debug)]
pub enum SuiteAction {
    /// Start the services, seed, run a profile's steps, write the results, tear down
    Run(SuiteRunArgs),
    /// Validate a suite file without running anything (exit 104 when it is invalid)
    Check {
        /// Suite file, or a directory holding volley.toml (default: ./volley.toml)
        path: Option<PathBuf>,
    },
    /// Start the services (and --seed) and hold them for manual work until Ctrl-C
    Services {
        /// Suite file, or a directory holding volley.toml (default: ./volley.toml)
        path: Option<PathBuf>,
        /// Also run the seed steps once everything is ready
        #[arg(long)]
        seed: bool,
    },
}

#[derive(Args, Debug)]
pub struct SuiteRunArgs {
    /// Suite file, or a directory holding volley.toml (default: ./volley.toml)
    pub path: Option<PathBuf>,
    /// The profile to run, e.g. smoke, load, stress, soak
    #[arg(short = 'p', long)]
    pub profile: String,
    /// Results root instead of [outputs] dir (the run writes ROOT/SUITE/PROFILE/TIMESTAMP/)
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Run every step even after one failed (a failed seed still stops the run)
    #[arg(long)]
    pub keep_going: bool,
    /// Judge each step against a baseline: `last` or a label (from the history), or an
    /// earlier results directory
    #[arg(long)]
    pub baseline: Option<String>,
    /// History database (path or postgres:// URL) each step is stored in and compared with
    #[arg(long)]
    pub history: Option<String>,
}

pub fn run(a: SuiteArgs) -> i32 {
    let ctl = RunControl::new();
    match a.action {
        SuiteAction::Check { path } => volley_suite::runner::check_file(path.as_deref()),
        SuiteAction::Services { path, seed } => {
            install(&ctl);
            volley_suite::runner::hold(path.as_deref(), seed, &ctl)
        }
        SuiteAction::Run(r) => {
            install(&ctl);
            let o = volley_suite::runner::RunOptions {
                path: r.path,
                profile: r.profile,
                results: r.results,
                keep_going: r.keep_going,
                baseline: r.baseline,
                history: r.history,
            };
            volley_suite::runner::run(&o, &ctl)
        }
    }
}

/// Ctrl-C/SIGTERM as every run; should the process have to exit before teardown ran, the
/// services' process groups are killed first.
fn install(ctl: &RunControl) {
    crate::signals::install_with(ctl.clone(), volley_suite::services::process::kill_all);
}
