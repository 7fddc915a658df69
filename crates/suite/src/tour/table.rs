//! What the tour reports once its examples ran: the progress line's verdict per example, the
//! baseline table, the failure lines and the exit code, and `tour.json`.

use super::{Plan, Row};
use crate::code;
use std::path::Path;
use volley_engine::RunControl;
use volley_metrics::names::{DATA_RECEIVED, HTTP_REQS, HTTP_REQ_DURATION};
use volley_report::view::Figure;

/// The progress line's verdict for one example.
pub(super) fn verdict(r: &Row) -> String {
    if let Some(e) = &r.error {
        return format!("✗ error (exit {}): {}", r.code, first_line(e));
    }
    let mut bad = Vec::new();
    if r.checks.0 < r.checks.1 {
        bad.push(format!("{} failed checks", r.checks.1 - r.checks.0));
    }
    if r.thresholds.0 < r.thresholds.1 {
        bad.push(format!(
            "{} crossed thresholds",
            r.thresholds.1 - r.thresholds.0
        ));
    }
    if !r.bytes_ok() {
        bad.push("body bytes differ from the service's".into());
    }
    if r.code == code::INTERRUPTED {
        bad.push("interrupted".into());
    }
    if bad.is_empty() && r.code == code::OK {
        "✓".into()
    } else if bad.is_empty() {
        format!("✗ exit {}", r.code)
    } else {
        format!("✗ {}", bad.join(", "))
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// Checks as `passed/total pct%`, the percentage truncated as k6 does (99.99 % never shows
/// as 100 %).
pub(crate) fn checks_cell(c: (u64, u64)) -> String {
    let pct = if c.1 == 0 {
        0.0
    } else {
        (c.0 as f64 / c.1 as f64 * 10000.0).trunc() / 100.0
    };
    if pct.fract() == 0.0 {
        format!("{}/{} {pct:.0}%", c.0, c.1)
    } else {
        format!("{}/{} {pct:.2}%", c.0, c.1)
    }
}

pub(super) fn table(rows: &[Row]) -> String {
    use volley_metrics::fmt::{bytes, ms, num};
    let head = [
        "scenario",
        "avg",
        "p95",
        "req/s",
        "recv/s",
        "checks",
        "thresholds",
        "bytes = service",
    ];
    let mut cells: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for r in rows {
        let mut line = vec![r.name.to_string()];
        if let Some(e) = &r.error {
            line.push(format!("error, exit {}: {}", r.code, first_line(e)));
            cells.push(line);
            continue;
        }
        let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".into(), f);
        line.push(opt(r.figure(HTTP_REQ_DURATION, Figure::Avg), &ms));
        line.push(opt(r.figure(HTTP_REQ_DURATION, Figure::P95), &ms));
        line.push(opt(r.figure(HTTP_REQS, Figure::Rate), &num));
        line.push(opt(r.figure(DATA_RECEIVED, Figure::Rate), &|v| {
            format!("{}/s", bytes(v))
        }));
        line.push(checks_cell(r.checks));
        let (ok, all) = r.thresholds;
        line.push(format!("{} {ok}/{all}", if ok == all { "✓" } else { "✗" }));
        line.push(if r.bytes.is_empty() {
            "-".into()
        } else if r.bytes_ok() {
            "✓".into()
        } else {
            "✗".into()
        });
        cells.push(line);
    }
    let cols = head.len();
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            cells
                .iter()
                .filter(|l| l.len() == cols)
                .map(|l| l[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for l in &cells {
        let mut s = String::new();
        for (c, v) in l.iter().enumerate() {
            let pad = width.get(c).copied().unwrap_or(0);
            // Names and verdicts left-aligned, numbers right-aligned.
            if c == 0 || c >= 5 || l.len() < cols {
                s.push_str(&format!("{v:<pad$}  "));
            } else {
                s.push_str(&format!("{v:>pad$}  "));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    }
    out
}

/// Prints what failed (one line each) and returns the tour's exit code: the first failing
/// example's code; 1 when only the byte counts disagree (Volley miscounted, or the service
/// could not be read); 105 when interrupted.
pub(super) fn finish(rows: &[Row], ctl: &RunControl) -> i32 {
    let mut exit = code::OK;
    let mut first = |c: i32| {
        if exit == code::OK {
            exit = c;
        }
    };
    for r in rows {
        if let Some(e) = &r.error {
            eprintln!("volley demo: {}: {e}", r.name);
        }
        if let Some(res) = &r.result {
            for t in res.thresholds.iter().filter(|t| !t.ok) {
                let seen = t.observed.map_or("no data".into(), |v| format!("{v:.2}"));
                eprintln!(
                    "volley demo: {}: threshold {} {} crossed (observed {seen})",
                    r.name, t.metric, t.expression
                );
            }
        }
        if r.checks.0 < r.checks.1 {
            eprintln!(
                "volley demo: {}: {} of {} checks failed (see {}.html)",
                r.name,
                r.checks.1 - r.checks.0,
                r.checks.1,
                r.name
            );
        }
        for (what, script, served) in &r.bytes {
            match served {
                Some(v) if v == script => {}
                Some(v) => eprintln!(
                    "volley demo: {}: the script counted {script} bytes {what}, the service reports {v}",
                    r.name
                ),
                None => eprintln!(
                    "volley demo: {}: could not read the service's /metrics to check the bytes {what}",
                    r.name
                ),
            }
        }
        if r.code != code::OK {
            first(r.code);
        } else if !r.bytes_ok() {
            first(code::FAILURE);
        }
    }
    if ctl.was_interrupted() {
        return code::INTERRUPTED;
    }
    // Per example, e.g. "webdav-rw 116.28 MiB down + 57.69 MiB up".
    let matched: Vec<String> = rows
        .iter()
        .filter(|r| !r.bytes.is_empty() && r.bytes_ok())
        .map(|r| {
            let parts: Vec<String> = r
                .bytes
                .iter()
                .map(|(what, n, _)| {
                    let dir = if *what == "downloaded" { "down" } else { "up" };
                    format!("{} {dir}", volley_metrics::fmt::bytes(*n))
                })
                .collect();
            format!("{} {}", r.name, parts.join(" + "))
        })
        .collect();
    if !matched.is_empty() {
        outln!(
            "\nBody bytes counted by the scripts equal the service's /metrics: {}.",
            matched.join("; ")
        );
    }
    if exit == code::OK {
        outln!(
            "Every example passed: all checks, all thresholds{}.",
            if matched.is_empty() {
                ""
            } else {
                ", exact byte counts"
            }
        );
    }
    exit
}

pub(super) fn tour_json(
    p: &Plan,
    base: &str,
    results: &Path,
    rows: &[Row],
    code: i32,
) -> serde_json::Value {
    use serde_json::json;
    let examples: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            let bytes: serde_json::Map<String, serde_json::Value> = r
                .bytes
                .iter()
                .map(|(what, s, v)| (what.to_string(), json!({"script": s, "service": v})))
                .collect();
            json!({
                "name": r.name,
                "exit_code": r.code,
                "error": r.error,
                "took_s": r.took.as_secs_f64(),
                "result": r.result.as_ref().map(|_| results.join(format!("{}.json", r.name))),
                "report": r.result.as_ref().map(|_| results.join(format!("{}.html", r.name))),
                "http_req_duration_avg_ms": r.figure(HTTP_REQ_DURATION, Figure::Avg),
                "http_req_duration_p95_ms": r.figure(HTTP_REQ_DURATION, Figure::P95),
                "http_reqs_per_s": r.figure(HTTP_REQS, Figure::Rate),
                "data_received_per_s": r.figure(DATA_RECEIVED, Figure::Rate),
                "checks": {"passed": r.checks.0, "total": r.checks.1},
                "thresholds": {"passed": r.thresholds.0, "total": r.thresholds.1},
                "body_bytes": bytes,
            })
        })
        .collect();
    json!({
        "profile": p.profile.name(),
        "service": base,
        "exit_code": code,
        "examples": examples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_percentages_never_round_up_to_100() {
        assert_eq!(checks_cell((9999, 10000)), "9999/10000 99.99%");
        assert_eq!(checks_cell((99999, 100000)), "99999/100000 99.99%");
        assert_eq!(checks_cell((12, 12)), "12/12 100%");
        assert_eq!(checks_cell((1, 2)), "1/2 50%");
        assert_eq!(checks_cell((1, 3)), "1/3 33.33%");
        assert_eq!(checks_cell((0, 0)), "0/0 0%");
    }
}
