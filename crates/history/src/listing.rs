//! What the history commands show: `volley history`'s table and the baseline lookup of
//! `volley compare --baseline`, with the messages a user sees when there is none.

use crate::{Baseline, History, Location, Record};
use volley_metrics::RunResult;

/// `volley compare --baseline last|LABEL NEW.json`: the stored run to compare `new` against,
/// and how to name it (`run ID @REV`); a missing SQLite file is an error, not a new database.
pub fn find_baseline(
    loc: &Location,
    which: &str,
    new: &RunResult,
) -> Result<(String, RunResult), String> {
    // Reading a baseline must not leave an empty database behind a typo in --db.
    if let Location::Sqlite(p) = loc {
        if !p.exists() {
            return Err(format!(
                "no history at {} (store runs with --history, or point --db at one)",
                p.display()
            ));
        }
    }
    let mut h = History::open(loc)?;
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

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), volley_metrics::fmt::ms)
}

/// The terminal table: one run a line, newest first; names shown with control characters
/// escaped (a stored test name cannot drive the terminal).
pub fn render(runs: &[Record]) -> String {
    use volley_metrics::text::escape_control as esc;
    if runs.is_empty() {
        return "no stored runs match\n".into();
    }
    // Capacity searches' answers get a column only when a listed run has one.
    let with_max_rate = runs.iter().any(|r| r.max_rate.is_some());
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let mut row = vec![
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
            ];
            if with_max_rate {
                row.push(r.max_rate.map_or_else(|| "-".into(), |m| format!("{m:.1}")));
            }
            row
        })
        .collect();
    let mut head = vec![
        "ID", "STARTED", "TEST", "MODE", "REV", "LABELS", "REQS", "REQ/S", "P50", "P95", "P99",
        "ERRORS",
    ];
    if with_max_rate {
        head.push("MAX REQ/S");
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: i64, test: &str, p95: Option<f64>) -> Record {
        Record {
            id,
            test: test.into(),
            mode: "http".into(),
            started_at: "2026-11-25T10:00:00.123Z".into(),
            started_unix_ms: 0,
            duration_s: 1.0,
            git_rev: None,
            labels: vec!["main".into()],
            requests: 1234,
            rps: 1234.0,
            p50_ms: Some(1.5),
            p95_ms: p95,
            p99_ms: None,
            error_rate: Some(0.0),
            interrupted: false,
            max_rate: None,
        }
    }

    #[test]
    fn the_table_aligns_ids_and_text_left_figures_right_and_escapes_names() {
        assert_eq!(render(&[]), "no stored runs match\n");
        let t = render(&[
            record(12, "http://a/\u{1b}[31m", Some(2500.0)),
            record(3, "b", None),
        ]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert!(lines[0].starts_with("ID  STARTED "), "{t}");
        assert!(lines[1].starts_with("12  2026-11-25 10:00:00  "), "{t}");
        assert!(lines[2].starts_with("3   2026"), "{t}");
        assert!(!t.contains('\u{1b}'), "control characters are escaped: {t}");
        assert!(
            lines[1].contains("2.50s") && lines[2].contains(" - "),
            "{t}"
        );
    }

    /// Regression: capacity searches' answers (max rate) had no column.
    #[test]
    fn a_max_rate_column_appears_when_a_run_has_one() {
        let plain = render(&[record(1, "a", None)]);
        assert!(!plain.contains("MAX REQ/S"), "{plain}");
        let mut search = record(2, "a", None);
        search.max_rate = Some(1234.56);
        let t = render(&[search, record(1, "a", None)]);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].ends_with("ERRORS  MAX REQ/S"), "{t}");
        assert!(lines[1].ends_with("1234.6"), "{t}");
        assert!(lines[2].ends_with(" -"), "{t}");
    }

    #[test]
    fn a_missing_sqlite_history_is_an_error_and_stays_missing() {
        let p = std::env::temp_dir().join(format!("volley-no-history-{}.db", std::process::id()));
        let r = RunResult::new(
            volley_metrics::RunMeta::new("http", "x", Vec::new()),
            serde_json::Value::Null,
            Vec::new(),
            Default::default(),
        );
        let e = find_baseline(&Location::Sqlite(p.clone()), "last", &r)
            .err()
            .unwrap();
        assert!(e.starts_with("no history at "), "{e}");
        assert!(!p.exists());
    }
}
