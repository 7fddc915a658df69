//! `volley monitor SPEC...`: flags → [`volley_monitor::WatchPlan`] (the sampling loop, live
//! table and CSV are `volley_monitor::watch`), then the summary, `--save` and thresholds; and
//! the `--monitor` / `--threshold` helpers `volley http` shares.

use crate::args::MonitorArgs;
use crate::{exit, signals};
use std::time::Duration;
use volley_engine::{MonitorPlan, RunControl};

use volley_monitor::watch::Control;
use volley_monitor::{MonitorSpec, WatchPlan};
use volley_run::Outcome;

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
    let thresholds = match volley_run::checks::parse_checks(&a.thresholds) {
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
    // The shared after-run chain (volley_run::after): checked before sampling starts.
    let after = volley_run::after::AfterRun {
        save: a.save.clone(),
        quiet: a.quiet,
        ..Default::default()
    };
    if let Err(e) = after.preflight(&[]) {
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
    let result = watched.result;
    if !a.quiet {
        let summary = volley_monitor::summarize(&result);
        exit::print(&volley_monitor::summary::render_text(&summary, "", ""));
    }
    let crossed = volley_run::checks::judge_checks(&result, &thresholds, a.quiet);
    let outcome = Outcome::of_run(None, None, crossed, ctl.was_interrupted(), false);
    let outcome = match (after.finish(&result, outcome, false), watched.error) {
        (Outcome::Failure(m), Some(c)) => Outcome::Failure(format!("{c}\n{m}")),
        (_, Some(c)) => Outcome::Failure(c),
        (o, None) => o,
    };
    exit::outcome(&outcome)
}

/// Validate a quick mode's `--monitor`/`--threshold` up front (`quick`: the metrics it records); returns the plan, the
/// thresholds, or the exit code of a bad flag.
pub fn setup_for(
    monitor: &[String],
    interval: Duration,
    thresholds: &[String],
    quick: &[&str],
) -> Result<(MonitorPlan, Vec<volley_run::checks::MonitorCheck>), i32> {
    let t = volley_run::checks::parse_checks(thresholds).map_err(|e| exit::usage(&e))?;
    // A metric the run never records would fail as "no data" (99) after the whole run: say so
    // up front, as a bad flag (k6 refuses thresholds on unknown metrics before running, too).
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
