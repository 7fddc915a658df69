//! The chain every command runs around a run (`volley run`, `volley http`, `volley monitor`):
//! before it, [`AfterRun::preflight`] checks that every output target can be written (an
//! unwritable one costs a second, not the run's results); after it, [`AfterRun::finish`]
//! writes the result file (`--save`), k6's `--summary-export`, the HTML report (`--report`),
//! appends to the history (`--history`) and settles the [`Outcome`], hence the exit code.
//!
//! Every target is written whatever the verdict (a failed run is when a report is most
//! wanted); a target that cannot be written makes the outcome [`Outcome::Failure`] (exit 1).

use crate::outcome::Outcome;
use crate::Summary;
use std::path::{Path, PathBuf};
use volley_metrics::RunResult;

/// What to write after a run.
#[derive(Clone, Debug, Default)]
pub struct AfterRun {
    /// `--save FILE`: the result file.
    pub save: Option<PathBuf>,
    /// `--summary-export FILE`: k6's summary export JSON.
    pub summary_export: Option<PathBuf>,
    /// `--report FILE`: the HTML report of this run.
    pub report: Option<PathBuf>,
    /// `--history DB` (a path or a postgres:// URL).
    pub history: Option<String>,
    /// `--label`s stored with the run in the history.
    pub labels: Vec<String>,
    /// Say nothing about what was written (errors are still reported).
    pub quiet: bool,
}

impl AfterRun {
    /// The first half: every target this chain writes, and `more` (e.g. `--out csv=FILE`),
    /// must be writable before the run starts. The message names the flag and the path.
    pub fn preflight(&self, more: &[(&str, &Path)]) -> Result<(), String> {
        let mut files: Vec<(&str, &Path)> = [
            ("--save", &self.save),
            ("--summary-export", &self.summary_export),
            ("--report", &self.report),
        ]
        .into_iter()
        .filter_map(|(f, p)| Some((f, p.as_deref()?)))
        .collect();
        files.extend_from_slice(more);
        volley_history::preflight::check(&files, self.history.as_deref())
    }

    /// The second half: write every target for `result`, then settle the outcome. `outcome`
    /// is how the run ended; `interrupted_since`: a signal came while the summary and outputs
    /// were written (counts as an interruption, as k6). A target that could not be written
    /// makes the outcome [`Outcome::Failure`] with one line per failure.
    pub fn finish(&self, result: &RunResult, outcome: Outcome, interrupted_since: bool) -> Outcome {
        let mut errors: Vec<String> = Vec::new();
        if let Some(path) = &self.save {
            match result.write(path) {
                Ok(()) => self.note(&format!("result saved to {}", path.display())),
                Err(e) => errors.push(format!("cannot save the result to {}: {e}", path.display())),
            }
        }
        if let Some(path) = &self.summary_export {
            if let Err(e) = summary_export(result, path) {
                errors.push(e);
            }
        }
        if let Some(path) = &self.report {
            match report(result, path) {
                Ok(()) => self.note(&format!("report written to {}", path.display())),
                Err(e) => errors.push(e),
            }
        }
        if let Some(spec) = &self.history {
            let loc = volley_history::Location::parse(Some(spec));
            let prov = volley_history::Provenance::detect(self.labels.clone());
            match volley_history::History::open(&loc).and_then(|mut h| h.append(result, &prov)) {
                Ok(id) => self.note(&format!("run {id} stored in {}", loc.display())),
                Err(e) => errors.push(format!("cannot store the run in {}: {e}", loc.display())),
            }
        }
        if !errors.is_empty() {
            return Outcome::Failure(errors.join("\n"));
        }
        match outcome {
            Outcome::Passed
            | Outcome::ThresholdsFailed(_)
            | Outcome::ThresholdsAborted(_)
            | Outcome::RequestErrors
                if interrupted_since =>
            {
                Outcome::Interrupted
            }
            o => o,
        }
    }

    fn note(&self, msg: &str) {
        if !self.quiet {
            eprintln!("{msg}");
        }
    }
}

/// k6's `--summary-export` JSON of `result` at `path`.
pub fn summary_export(result: &RunResult, path: &Path) -> Result<(), String> {
    let summary = Summary::from_result(result)?;
    let text = serde_json::to_string_pretty(&summary.export()).unwrap_or_default();
    std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The HTML report of one run at `path`, named after the file.
pub fn report(result: &RunResult, path: &Path) -> Result<(), String> {
    let label = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let runs = [volley_report::Labeled {
        label: label.trim_end_matches(".html").to_string(),
        run: result,
        raw: None,
    }];
    let html = volley_report::render_report(&runs);
    std::fs::write(path, html)
        .map_err(|e| format!("cannot write the report to {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_metrics::RunMeta;

    fn result() -> RunResult {
        let meta = RunMeta::new("run", "t", vec![]);
        RunResult::new(meta, serde_json::json!({}), vec![], Default::default())
    }

    #[test]
    fn an_unwritable_target_fails_the_run_and_the_others_are_still_written() {
        let dir = std::env::temp_dir().join(format!("volley-after-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let chain = AfterRun {
            save: Some(dir.join("missing/run.json")),
            report: Some(dir.join("r.html")),
            quiet: true,
            ..Default::default()
        };
        let o = chain.finish(&result(), Outcome::ThresholdsFailed("x".into()), false);
        match &o {
            Outcome::Failure(m) => assert!(m.starts_with("cannot save the result to "), "{m}"),
            o => panic!("{o:?}"),
        }
        assert_eq!(o.exit_code(), 1);
        assert!(dir.join("r.html").exists(), "the report is written anyway");
        let ok = AfterRun {
            quiet: true,
            ..Default::default()
        };
        assert_eq!(
            ok.finish(&result(), Outcome::Passed, true),
            Outcome::Interrupted
        );
        assert_eq!(
            ok.finish(&result(), Outcome::Aborted("a".into()), true)
                .exit_code(),
            108
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
