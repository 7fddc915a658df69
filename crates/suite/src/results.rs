//! The results directory of one suite run, `RESULTS/SUITE/PROFILE/TIMESTAMP/`: per load step
//! `NAME.json`, `NAME.summary.json`, `NAME.html` (see [`crate::steps`]), `logs/` (services and
//! command steps), and the run's own `suite.json` (for machines) and `suite.md` (the baseline
//! table: step, avg, p95, req/s, bytes/s, checks, thresholds, verdict vs baseline, exit).
//! Both are rewritten after every step, so an interrupted or killed run keeps what it had.

use crate::steps::StepResult;
use std::path::{Path, PathBuf};
use volley_metrics::names::{CHECKS, DATA_RECEIVED, HTTP_REQS, HTTP_REQ_DURATION};
use volley_metrics::{Agg, RunResult};
use volley_report::view::{self, Figure, Sel};

/// `root/suite/profile/20261128T001502Z` (a `-2`, `-3` ... suffix when that second is taken).
pub fn create_dir(root: &Path, suite: &str, profile: &str) -> Result<PathBuf, String> {
    let now = volley_metrics::time::rfc3339_ms(volley_metrics::time::unix_ms(
        std::time::SystemTime::now(),
    ));
    let stamp: String = now[..19]
        .chars()
        .filter(|c| *c != '-' && *c != ':')
        .collect::<String>()
        + "Z";
    let base = root.join(suite).join(profile);
    std::fs::create_dir_all(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
    for n in 1..1000 {
        let dir = if n == 1 {
            base.join(&stamp)
        } else {
            base.join(format!("{stamp}-{n}"))
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                let logs = dir.join("logs");
                std::fs::create_dir_all(&logs)
                    .map_err(|e| format!("cannot create {}: {e}", logs.display()))?;
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
        }
    }
    Err(format!(
        "cannot create a results directory under {}",
        base.display()
    ))
}

/// Where the baseline of each step comes from (`--baseline`).
pub enum Baseline {
    /// An earlier results directory: its `NAME.json` per step.
    Dir(PathBuf),
    /// The history (`--history` or `[outputs] history`): the newest run of the same step
    /// (`last`), or the newest carrying a label.
    History {
        db: String,
        which: volley_history::Baseline,
    },
}

/// Fills `r.verdict` from the baseline.
pub fn judge(b: &Baseline, r: &mut StepResult) {
    let Some(new) = &r.result else { return };
    let base: Result<Option<RunResult>, String> = match b {
        Baseline::Dir(d) => {
            let p = d.join(format!("{}.json", r.name));
            if p.is_file() {
                RunResult::read(&p).map(Some)
            } else {
                Ok(None)
            }
        }
        Baseline::History { db, which } => {
            volley_history::History::open(&volley_history::Location::parse(Some(db)))
                .and_then(|mut h| h.baseline(new, which))
                .map(|o| o.map(|(_, run)| run))
        }
    };
    r.verdict = Some(match base {
        Err(e) => format!("baseline unreadable: {e}"),
        Ok(None) => "no baseline".into(),
        Ok(Some(base)) => {
            let c = volley_report::compare::compare(
                ("baseline", &base),
                ("this run", new),
                &volley_report::compare::CompareOptions::default(),
                &[],
            );
            let worse: Vec<String> = c
                .rows
                .iter()
                .filter(|row| row.verdict == volley_report::compare::Verdict::Regression)
                .map(|row| format!("{} {}", row.label(), row.change_text()))
                .collect();
            if worse.is_empty() {
                "no regression".into()
            } else {
                format!("regressed: {}", worse.join(", "))
            }
        }
    });
}

fn figure(r: &RunResult, metric: &str, f: Figure) -> Option<f64> {
    view::total_figure(r, &Sel::all(metric), f)
}

fn checks(r: &RunResult) -> (u64, u64) {
    match view::total(r, &Sel::all(CHECKS)) {
        Some((Agg::Rate { trues, total }, _)) => (trues, total),
        _ => (0, 0),
    }
}

fn thresholds(r: &RunResult) -> (usize, usize) {
    (
        r.thresholds.iter().filter(|t| t.ok).count(),
        r.thresholds.len(),
    )
}

/// What the run knows so far; written after every step.
pub struct Report<'a> {
    pub suite: &'a str,
    pub profile: &'a str,
    pub file: &'a Path,
    pub dir: &'a Path,
    pub started: &'a str,
    pub services: &'a [(String, String, u32)],
    pub steps: &'a [StepResult],
    /// `None` while the run is still going.
    pub exit_code: Option<i32>,
    pub interrupted: bool,
    pub notes: &'a [String],
}

impl Report<'_> {
    pub fn json(&self) -> serde_json::Value {
        use serde_json::json;
        let steps: Vec<serde_json::Value> = self
            .steps
            .iter()
            .map(|s| {
                let r = s.result.as_ref();
                let f = |m: &str, fig: Figure| r.and_then(|r| figure(r, m, fig));
                json!({
                    "name": s.name,
                    "kind": s.kind,
                    "exit_code": s.code,
                    "error": s.error,
                    "took_s": s.took.as_secs_f64(),
                    "files": s.files,
                    "http_req_duration_avg_ms": f(HTTP_REQ_DURATION, Figure::Avg),
                    "http_req_duration_p95_ms": f(HTTP_REQ_DURATION, Figure::P95),
                    "http_reqs_per_s": f(HTTP_REQS, Figure::Rate),
                    "data_received_per_s": f(DATA_RECEIVED, Figure::Rate),
                    "checks": r.map(checks).map(|c| json!({"passed": c.0, "total": c.1})),
                    "thresholds": r.map(thresholds).map(|t| json!({"passed": t.0, "total": t.1})),
                    "verdict": s.verdict,
                })
            })
            .collect();
        let services: Vec<serde_json::Value> = self
            .services
            .iter()
            .map(|(n, url, pid)| json!({"name": n, "url": url, "pid": pid, "log": format!("logs/{n}.log")}))
            .collect();
        json!({
            "suite": self.suite,
            "profile": self.profile,
            "file": self.file,
            "results": self.dir,
            "started": self.started,
            "finished": self.exit_code.is_some(),
            "interrupted": self.interrupted,
            "exit_code": self.exit_code,
            "services": services,
            "steps": steps,
            "notes": self.notes,
        })
    }

    /// The Markdown table (also what the terminal shows at the end).
    pub fn markdown(&self) -> String {
        use volley_metrics::fmt::{bytes, ms, num};
        let mut o = format!(
            "### volley suite {} — profile {}\n\n| step | avg | p95 | req/s | bytes/s | checks | thresholds | verdict | exit |\n|---|--:|--:|--:|--:|---|---|---|--:|\n",
            self.suite, self.profile
        );
        for s in self.steps {
            let cell = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".to_string(), f);
            let (avg, p95, rps, bps, chk, th) = match &s.result {
                Some(r) => (
                    cell(figure(r, HTTP_REQ_DURATION, Figure::Avg), &ms),
                    cell(figure(r, HTTP_REQ_DURATION, Figure::P95), &ms),
                    cell(figure(r, HTTP_REQS, Figure::Rate), &num),
                    cell(figure(r, DATA_RECEIVED, Figure::Rate), &|v| {
                        format!("{}/s", bytes(v))
                    }),
                    {
                        let c = checks(r);
                        if c.1 == 0 {
                            "-".into()
                        } else {
                            crate::tour::table::checks_cell(c)
                        }
                    },
                    {
                        let (ok, all) = thresholds(r);
                        if all == 0 {
                            "-".into()
                        } else {
                            format!("{} {ok}/{all}", if ok == all { "✓" } else { "✗" })
                        }
                    },
                ),
                None => {
                    let d = || "-".to_string();
                    (d(), d(), d(), d(), d(), d())
                }
            };
            let verdict = s.verdict.clone().unwrap_or_else(|| "-".into());
            let name = match &s.error {
                Some(e) if s.result.is_none() => format!(
                    "{} ({}: {})",
                    s.name,
                    s.kind,
                    e.lines().next().unwrap_or("").replace('|', "\\|")
                ),
                _ => format!("{} ({})", s.name, s.kind),
            };
            o.push_str(&format!(
                "| {name} | {avg} | {p95} | {rps} | {bps} | {chk} | {th} | {} | {} |\n",
                verdict.replace('|', "\\|"),
                s.code
            ));
        }
        match self.exit_code {
            Some(c) => o.push_str(&format!(
                "\nExit code {c}{}.\n",
                if self.interrupted {
                    " (interrupted)"
                } else {
                    ""
                }
            )),
            None => o.push_str("\n(the run is still going, or was killed)\n"),
        }
        for n in self.notes {
            o.push_str(&format!("\n{n}"));
        }
        o
    }

    /// Writes `suite.json` and `suite.md`.
    pub fn write(&self) -> Result<(), String> {
        let j = self.dir.join("suite.json");
        let m = self.dir.join("suite.md");
        std::fs::write(
            &j,
            serde_json::to_string_pretty(&self.json()).unwrap_or_default() + "\n",
        )
        .map_err(|e| format!("cannot write {}: {e}", j.display()))?;
        std::fs::write(&m, self.markdown())
            .map_err(|e| format!("cannot write {}: {e}", m.display()))
    }
}
