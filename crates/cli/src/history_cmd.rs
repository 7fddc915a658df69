//! `volley history`, and the stored baselines of
//! `volley compare --baseline`: flags → [`volley_history`].

use crate::args::HistoryArgs;
use crate::exit;
use volley_history::{Baseline, History, Location, Query, Record};
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
    let loc = Location::parse(Some(db));
    // Reading a baseline must not leave an empty database behind a typo in --db.
    if let Location::Sqlite(p) = &loc {
        if !p.exists() {
            return Err(format!(
                "no history at {} (store runs with --history, or point --db at one)",
                p.display()
            ));
        }
    }
    let mut h = History::open(&loc)?;
    let b = Baseline::parse(which);
    match h.baseline(new, &b)? {
        Some((rec, run)) => {
            let rev = rec
                .git_rev
                .as_deref()
                .map(|r| format!(" @{r}"))
                .unwrap_or_default();
            Ok((format!("run {}{rev}", rec.id), run))
        }
        None => Err(match b {
            Baseline::Last => format!("no earlier run of '{}' in {}", new.meta.name, loc.display()),
            Baseline::Label(l) => format!(
                "no run of '{}' labelled '{l}' in {}",
                new.meta.name,
                loc.display()
            ),
        }),
    }
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
        exit::print(&render(&runs));
    }
    exit::OK
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), volley_engine::summary::ms)
}

/// The terminal table: one run a line, newest first; names shown with control characters
/// escaped (a stored test name cannot drive the terminal).
fn render(runs: &[Record]) -> String {
    use volley_metrics::text::escape_control as esc;
    if runs.is_empty() {
        return "no stored runs match\n".into();
    }
    let rows: Vec<[String; 12]> = runs
        .iter()
        .map(|r| {
            [
                r.id.to_string(),
                esc(&r.started_at.chars().take(19).collect::<String>()).replace('T', " "),
                esc(&r.test).into_owned(),
                esc(&r.mode).into_owned(),
                r.git_rev
                    .as_deref()
                    .map_or_else(|| "-".into(), |g| esc(g).into_owned()),
                if r.labels.is_empty() {
                    "-".into()
                } else {
                    esc(&r.labels.join(",")).into_owned()
                },
                r.requests.to_string(),
                format!("{:.1}", r.rps),
                ms(r.p50_ms),
                ms(r.p95_ms),
                ms(r.p99_ms),
                r.error_rate
                    .map_or_else(|| "-".into(), |e| format!("{e:.2}%")),
            ]
        })
        .collect();
    let head = [
        "ID", "STARTED", "TEST", "MODE", "REV", "LABELS", "REQS", "REQ/S", "P50", "P95", "P99",
        "ERRORS",
    ];
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: &[&str], out: &mut String| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = w[i].saturating_sub(c.chars().count());
            // Numbers right-aligned, text left-aligned.
            if i >= 6 {
                l.push_str(&" ".repeat(pad));
                l.push_str(c);
            } else {
                l.push_str(c);
                l.push_str(&" ".repeat(pad));
            }
            l.push_str("  ");
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&head, &mut out);
    for r in &rows {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        line(&cells, &mut out);
    }
    out
}
