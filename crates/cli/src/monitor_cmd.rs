//! `volley monitor SPEC...`: flags → [`volley_monitor::WatchPlan`] (the sampling loop, live
//! table and CSV are `volley_monitor::watch`), then the summary, `--save` and thresholds; and
//! the `--monitor` / `--threshold` helpers `volley http` shares.

use crate::args::MonitorArgs;
use crate::{exit, signals};
use std::time::Duration;
use volley_engine::{MonitorPlan, RunControl};
use volley_metrics::{RunResult, TagSet};
use volley_monitor::watch::{show, Control};
use volley_monitor::{Check, MonitorSpec, WatchPlan};

/// A threshold failed (k6's code for crossed thresholds).
pub const THRESHOLDS_FAILED: i32 = 99;

/// One `--threshold METRIC[{tag:value,...}]:CHECK`.
pub struct Threshold {
    pub metric: String,
    pub tags: TagSet,
    pub check: Check,
}

impl Threshold {
    pub fn parse(s: &str) -> Result<Threshold, String> {
        let hint = || {
            format!(
                "--threshold '{s}': expected METRIC:CHECK, e.g. monitor_rss_bytes:slope<5MB/h, \
                 monitor_rss_bytes{{target:api}}:max<2GB or http_req_duration:drift(p95)<10%"
            )
        };
        // A tag selector holds ':' itself, so the separator is the first ':' after it.
        let (metric, tags, rest) = match s.find('{') {
            Some(open) if s[..open].find(':').is_none() => {
                let close = s[open..].find('}').ok_or_else(hint)? + open;
                let mut tags = TagSet::new();
                for kv in s[open + 1..close]
                    .split(',')
                    .filter(|kv| !kv.trim().is_empty())
                {
                    let (k, v) = kv.split_once(':').ok_or_else(hint)?;
                    tags.insert(k.trim().to_string(), v.trim().to_string());
                }
                let rest = s[close + 1..].strip_prefix(':').ok_or_else(hint)?;
                (&s[..open], tags, rest)
            }
            _ => {
                let (m, rest) = s.split_once(':').ok_or_else(hint)?;
                (m, TagSet::new(), rest)
            }
        };
        if metric.trim().is_empty() {
            return Err(hint());
        }
        Ok(Threshold {
            metric: metric.trim().to_string(),
            tags,
            check: Check::parse(rest).map_err(|e| format!("--threshold: {e}"))?,
        })
    }
}

pub fn parse_thresholds(list: &[String]) -> Result<Vec<Threshold>, String> {
    list.iter().map(|s| Threshold::parse(s)).collect()
}

/// `--monitor` values → what the engine samples. A bad spec is a usage error (Err(usage));
/// a missing pid or cgroup is a failure (Ok(Err(msg))).
pub fn plan(specs: &[String], interval: Duration) -> Result<Result<MonitorPlan, String>, String> {
    let specs = specs
        .iter()
        .map(|s| MonitorSpec::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    if interval.is_zero() {
        return Err("--monitor-interval must be at least 1s".into());
    }
    Ok(volley_monitor::validate(&specs).map(|()| MonitorPlan { specs, interval }))
}

fn tags_label(t: &TagSet) -> String {
    if t.is_empty() {
        return String::new();
    }
    let v: Vec<String> = t.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{{{}}}", v.join(","))
}

/// Judge the thresholds on a finished run, print one line per series on stderr, and return
/// the exit code: `code`, or [`THRESHOLDS_FAILED`] when one failed (unless the run was
/// interrupted or could not be saved).
pub fn apply_thresholds(r: &RunResult, list: &[Threshold], quiet: bool, code: i32) -> i32 {
    let mut failed = false;
    for t in list {
        for o in volley_monitor::evaluate(r, &t.metric, &t.tags, &t.check) {
            failed |= !o.passed;
            if quiet && o.passed {
                continue;
            }
            let seen = match o.observed {
                Some(v) if t.check.aggregate == volley_monitor::drift::Aggregate::Slope => {
                    format!("{}/h", show(&t.metric, v))
                }
                Some(v)
                    if matches!(
                        t.check.aggregate,
                        volley_monitor::drift::Aggregate::Drift(_)
                    ) =>
                {
                    format!("{v:+.1}%")
                }
                Some(v) => show(&t.metric, v),
                None => "no data".to_string(),
            };
            eprintln!(
                "{} {}{} {}  (observed {seen})",
                if o.passed { "✓" } else { "✗" },
                t.metric,
                tags_label(&o.tags),
                t.check.source,
            );
        }
    }
    if failed && (code == exit::OK || code == exit::REQUEST_ERRORS) {
        THRESHOLDS_FAILED
    } else {
        code
    }
}

pub fn run(a: MonitorArgs) -> i32 {
    let specs = match a
        .specs
        .iter()
        .map(|s| MonitorSpec::parse(s))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(s) => s,
        Err(e) => return exit::usage(&e),
    };
    let thresholds = match parse_thresholds(&a.thresholds) {
        Ok(t) => t,
        Err(e) => return exit::usage(&e),
    };
    if let Some(t) = thresholds
        .iter()
        .find(|t| !t.metric.starts_with("monitor_"))
    {
        return exit::usage(&format!(
            "--threshold: volley monitor records no metric '{}'; its metrics are monitor_* \
             (e.g. monitor_rss_bytes; see docs/monitor.md)",
            t.metric
        ));
    }
    if a.interval.is_zero() {
        return exit::usage("--interval must be at least 1s");
    }
    if let Err(e) = volley_monitor::validate(&specs) {
        return exit::fail(&e);
    }
    let save: Vec<(&str, &std::path::Path)> = a.save.iter().map(|p| ("--save", &**p)).collect();
    if let Err(e) = volley_history::preflight::check(&save, None) {
        return exit::fail(&e);
    }
    let plan = WatchPlan {
        targets: a.specs.clone(),
        specs,
        interval: a.interval,
        duration: a.duration,
        quiet: a.quiet,
        csv: a.csv.clone(),
        command: std::env::args().collect(),
    };
    let ctl = RunControl::new();
    signals::install(ctl.clone());
    let (stopped, interrupted) = (|| ctl.is_stopped(), || ctl.was_interrupted());
    let watched = match volley_monitor::watch(
        &plan,
        &Control {
            is_stopped: &stopped,
            was_interrupted: &interrupted,
        },
    ) {
        Ok(w) => w,
        Err(e) => return exit::fail(&e),
    };
    let mut code = match &watched.error {
        Some(e) => exit::fail(e),
        None => exit::OK,
    };
    let result = watched.result;
    if !a.quiet {
        let summary = volley_monitor::summarize(&result);
        exit::print(&volley_monitor::summary::render_text(&summary, "", ""));
    }
    if let Some(p) = &a.save {
        if let Err(e) = result.write(p) {
            code = exit::fail(&format!("cannot save the result to {}: {e}", p.display()));
        }
    }
    if code == exit::OK && ctl.was_interrupted() {
        code = exit::INTERRUPTED;
    }
    apply_thresholds(&result, &thresholds, a.quiet, code)
}

/// Validate `--monitor`/`--threshold` of `volley http` up front; returns the plan, the
/// thresholds, or the exit code of a bad flag.
pub fn http_setup(
    monitor: &[String],
    interval: Duration,
    thresholds: &[String],
) -> Result<(MonitorPlan, Vec<Threshold>), i32> {
    let t = parse_thresholds(thresholds).map_err(|e| exit::usage(&e))?;
    // A metric the run never records would fail as "no data" (99) after the whole run: say so
    // up front, as a bad flag (k6 refuses thresholds on unknown metrics before running, too).
    let quick = volley_engine::quick::METRICS;
    for th in &t {
        let m = th.metric.as_str();
        let watched = m.starts_with("monitor_") && !monitor.is_empty();
        if !quick.contains(&m) && !watched {
            return Err(exit::usage(&format!(
                "--threshold: quick mode records no metric '{m}'; it records {}{}",
                quick.join(", "),
                if monitor.is_empty() {
                    " (and monitor_* with --monitor)"
                } else {
                    " and monitor_*"
                }
            )));
        }
    }
    match plan(monitor, interval) {
        Err(e) => Err(exit::usage(&e)),
        Ok(Err(e)) => Err(exit::fail(&e)),
        Ok(Ok(p)) => Ok((p, t)),
    }
}
