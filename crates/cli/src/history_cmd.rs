//! `volley history`, and the stored baselines of `volley compare --baseline`: flags →
//! [`volley_history`] (the listing's table and the baseline lookup are
//! `volley_history::listing`; `--history` after a run is `volley_run::after`).

use crate::args::HistoryArgs;
use crate::exit;
use volley_history::{History, Location, Query};
use volley_metrics::RunResult;

/// Check `--label`s before the run starts (a usage error, exit 2).
pub fn check_labels(labels: &[String]) -> Result<(), String> {
    labels
        .iter()
        .try_for_each(|l| volley_history::validate_label(l))
}

/// `volley compare --baseline last|LABEL NEW.json`: the stored run to compare against, and how
/// to name it.
pub fn baseline(db: &str, which: &str, new: &RunResult) -> Result<(String, RunResult), String> {
    volley_history::listing::find_baseline(&Location::parse(Some(db)), which, new)
}

/// `volley history`.
pub fn list(a: HistoryArgs) -> i32 {
    let loc = Location::parse(Some(&a.db));
    if let Location::Sqlite(p) = &loc {
        if !p.exists() {
            return exit::fail(&format!(
                "no history at {} (store runs with --history)",
                p.display()
            ));
        }
    }
    let q = Query {
        test: a.test,
        label: a.label,
        limit: Some(a.limit),
    };
    let runs = match History::open(&loc).and_then(|mut h| h.list(&q)) {
        Ok(r) => r,
        Err(e) => return exit::fail(&e),
    };
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&runs).unwrap_or_default()
        );
    } else {
        exit::print(&volley_history::listing::render(&runs));
    }
    exit::OK
}
