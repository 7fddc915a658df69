//! `volley merge a.json b.json ... -o all.json`: result files of one test's instances →
//! [`volley_run::merge`] (exact merge, thresholds judged again) → the k6 summary, the
//! summary export or the script's `handleSummary`, and k6's exit code (99 when a threshold
//! fails on the merged figures).

use crate::exit;
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;
use volley_metrics::RunResult;
use volley_run::{Outcome, Summary};

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Result files (--save) of the instances of one test
    #[arg(required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// Write the merged result here
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Merge even when the files look like different tests (script, options, segments)
    #[arg(long)]
    pub force: bool,
    /// Write k6's --summary-export JSON of the merged result
    #[arg(long, value_name = "FILE")]
    pub summary_export: Option<PathBuf>,
    /// Run this script's handleSummary(data) on the merged result instead of printing the
    /// summary (a script or an archive)
    #[arg(long, value_name = "SCRIPT")]
    pub handle_summary: Option<PathBuf>,
    /// Summary layout: compact (k6 v1's default), full or legacy
    #[arg(long, value_name = "MODE", value_parser = ["compact", "full", "legacy"])]
    pub summary_mode: Option<String>,
    /// Print no summary
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

pub fn run(a: MergeArgs) -> i32 {
    let mode = match crate::run_cmd::summary_mode(a.summary_mode.as_deref()) {
        Ok(m) => m,
        Err(e) => return exit::usage(&e),
    };
    let results = match read_all(&a.files) {
        Ok(r) => r,
        Err(e) => return exit::fail(&e),
    };
    let inputs: Vec<(&str, &RunResult)> = results.iter().map(|(n, r)| (n.as_str(), r)).collect();
    let merged = match volley_run::merge::merge(&inputs, a.force) {
        Ok(m) => m,
        Err(e) => return exit::fail(&e),
    };
    let summary = match Summary::from_result(&merged) {
        Ok(s) => s,
        Err(e) => return exit::fail(&e),
    };
    let handled = match &a.handle_summary {
        Some(script) => match handle_summary(script, &summary) {
            Ok(done) => done,
            Err(e) => return exit::outcome(&Outcome::ScriptError(e)),
        },
        None => false,
    };
    if !handled && !a.quiet {
        exit::print(&summary.render(mode));
    }
    let after = volley_run::after::AfterRun {
        save: a.output.clone(),
        summary_export: a.summary_export.clone(),
        report: None,
        history: None,
        labels: Vec::new(),
        quiet: a.quiet,
    };
    let outcome = match volley_run::execute::thresholds_message(&merged) {
        Some(m) => Outcome::ThresholdsFailed(m),
        None => Outcome::Passed,
    };
    exit::outcome(&after.finish(&merged, outcome, false))
}

/// Read the files, as many at once as there are cores (parsing dominates: an hour-long
/// result is tens of MB of JSON).
fn read_all(files: &[PathBuf]) -> Result<Vec<(String, RunResult)>, String> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut out = Vec::with_capacity(files.len());
    for chunk in files.chunks(n) {
        let read: Vec<Result<RunResult, String>> = std::thread::scope(|s| {
            let readers: Vec<_> = chunk
                .iter()
                .map(|f| s.spawn(move || RunResult::read(f)))
                .collect();
            readers
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("cannot read a file".into()))
                })
                .collect()
        });
        for (f, r) in chunk.iter().zip(read) {
            out.push((f.display().to_string(), r?));
        }
    }
    Ok(out)
}

/// Run `script`'s handleSummary on `summary`: Ok(false) when it has none.
fn handle_summary(script: &std::path::Path, summary: &Summary) -> Result<bool, String> {
    let view = volley_js::archive::summary_view(script, volley_js::environment(&[], false))?;
    let tty = (
        std::io::stdout().is_terminal(),
        std::io::stderr().is_terminal(),
    );
    match view.handle_summary(summary, tty.0, tty.1)? {
        Some(outs) => volley_js::handle_summary::write_outputs(&outs).map(|_| true),
        None => Ok(false),
    }
}
