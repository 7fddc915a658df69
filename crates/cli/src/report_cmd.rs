//! `volley report` and `volley compare` (and `volley http --report`): read result files, call
//! `volley-report`, write or print, and map the outcome to an exit code.

use crate::args::{CompareArgs, ReportArgs};
use crate::exit;
use std::path::Path;
use volley_metrics::RunResult;
use volley_report::{CompareOptions, FailRule, Labeled};

/// `volley compare --fail-on`: a figure regressed beyond its limit (README, "Exit codes").
pub const REGRESSION: i32 = 4;

/// How a file is named in reports and comparisons: its file name.
fn label(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

pub fn report(a: ReportArgs) -> i32 {
    let mut loaded = Vec::with_capacity(a.files.len());
    for f in &a.files {
        match volley_report::read(f) {
            Ok(x) => loaded.push((label(f), x)),
            Err(e) => return exit::fail(&e),
        }
    }
    let runs: Vec<Labeled> = loaded
        .iter()
        .map(|(l, (run, raw))| Labeled {
            label: l.clone(),
            run,
            raw: Some(raw),
        })
        .collect();
    match write_html(&runs, &a.output) {
        Ok(()) => {
            eprintln!("report written to {}", a.output.display());
            exit::OK
        }
        Err(e) => exit::fail(&e),
    }
}

fn write_html(runs: &[Labeled], path: &Path) -> Result<(), String> {
    let html = volley_report::render_report(runs);
    std::fs::write(path, html)
        .map_err(|e| format!("cannot write the report to {}: {e}", path.display()))
}

pub fn compare(a: CompareArgs) -> i32 {
    let rules = match a.fail_on.as_deref().map(FailRule::parse_list).transpose() {
        Ok(r) => r.unwrap_or_default(),
        Err(e) => return exit::usage(&e),
    };
    if !(a.alpha > 0.0 && a.alpha < 1.0) {
        return exit::usage(&format!("--alpha {} must be between 0 and 1", a.alpha));
    }
    if !(a.min_effect.is_finite() && a.min_effect >= 0.0) {
        return exit::usage(&format!(
            "--min-effect {} must be a percentage ≥ 0",
            a.min_effect
        ));
    }
    // `--baseline last|LABEL NEW.json`: the base comes from the history.
    let (base_path, new_path) = match (&a.baseline, &a.base, &a.new) {
        (Some(_), Some(n), None) => (None, n.clone()),
        (Some(_), _, _) => {
            return exit::usage("with --baseline, give only the result file to judge")
        }
        (None, Some(b), Some(n)) => (Some(b.clone()), n.clone()),
        (None, _, _) => return exit::usage("give two result files: BASE.json NEW.json"),
    };
    let new = match RunResult::read(&new_path) {
        Ok(r) => r,
        Err(e) => return exit::fail(&e),
    };
    let (base_label, base) = match (&base_path, &a.baseline) {
        (Some(p), _) => match RunResult::read(p) {
            Ok(r) => (label(p), r),
            Err(e) => return exit::fail(&e),
        },
        (None, Some(which)) => match crate::history_cmd::baseline(&a.db, which, &new) {
            Ok(x) => x,
            Err(e) => return exit::fail(&e),
        },
        (None, None) => unreachable!("checked above"),
    };
    if base.meta.name != new.meta.name {
        eprintln!(
            "volley: note: comparing different tests ('{}' and '{}')",
            volley_metrics::text::escape_control(&base.meta.name),
            volley_metrics::text::escape_control(&new.meta.name)
        );
    }
    let opts = CompareOptions {
        alpha: a.alpha,
        min_effect: a.min_effect / 100.0,
        ..CompareOptions::default()
    };
    let c = volley_report::compare(
        (&base_label, &base),
        (&label(&new_path), &new),
        &opts,
        &rules,
    );
    if c.rows.is_empty() {
        eprintln!("volley: note: the two files have no metric in common");
    }
    let capacity = volley_report::capacity::compare(&base, &new);
    if a.json {
        let mut j = c.to_json();
        if let (Some(cap), Some(o)) = (&capacity, j.as_object_mut()) {
            o.insert(
                "capacity".into(),
                serde_json::to_value(cap).unwrap_or_default(),
            );
        }
        println!("{}", serde_json::to_string_pretty(&j).unwrap_or_default());
    } else if a.markdown {
        print!("{}", c.render_markdown());
    } else {
        print!("{}", c.render_text(exit::stdout_is_tty()));
    }
    if let Some(cap) = capacity.filter(|_| !a.json) {
        println!("\ncapacity: {}", cap.render_text());
    }
    if c.failed {
        REGRESSION
    } else {
        exit::OK
    }
}
