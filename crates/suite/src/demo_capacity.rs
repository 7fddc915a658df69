//! The demo's capacity step: a short breaking-point search (`volley http URL --find-max-rate
//! --slo 'p99<50ms'`) against a second built-in target whose capacity is known (4 workers ×
//! 10 ms = 400 requests/s), so the answer can be checked by eye. One-second probes keep it to
//! about five seconds; the result file and report land beside the others.

use crate::code;
use std::path::Path;
use std::time::Duration;
use volley_engine::{MonitorPlan, RunControl};
use volley_run::capacity::{probe::QuickProbe, search, slo::Slo, table};

const WORKERS: usize = 4;
const DELAY_MS: u64 = 10;

/// Runs the search; returns `volley http --find-max-rate`'s exit code.
pub(crate) fn run(dir: &Path, ctl: &RunControl) -> i32 {
    let target = match volley_testserver::spawn_limited(
        volley_testserver::TargetConfig {
            listen: "127.0.0.1:0".parse().expect("static address"),
            threads: 1,
            tls: None,
            delay_all: Some(Duration::from_millis(DELAY_MS)),
        },
        volley_testserver::Limits {
            workers: Some(WORKERS),
            fail_above: None,
        },
    ) {
        Ok(t) => t,
        Err(e) => return crate::fail(&format!("cannot start the built-in target: {e}")),
    };
    let url = format!("{}/", target.url());
    outln!(
        "\n== Capacity: the highest rate that keeps p99 under 50ms, on a target of {WORKERS} workers × {DELAY_MS}ms (400 requests/s)\n   (same as: volley target --workers {WORKERS} --delay {DELAY_MS}; volley http {url} --find-max-rate --slo 'p99<50ms')\n"
    );
    let cfg = crate::steps::quick_defaults(url, 50, Some(Duration::from_secs(1)));
    let monitor = MonitorPlan::default();
    let mut probe = QuickProbe::new(
        cfg,
        "rate",
        &monitor,
        ctl,
        (Duration::ZERO, Duration::from_secs(1)),
        true,
    );
    let slo = Slo::parse("p99<50ms").expect("a valid SLO");
    // 250, 500 (broken), 375, then the confirming run: four probes.
    let sc = search::SearchConfig {
        start: 250.0,
        factor: 2.0,
        tolerance: 0.5,
        max_rate: 10_000.0,
    };
    let found = search::find_max_rate(&sc, &slo, &mut probe);
    target.shutdown();
    let found = match found {
        Ok(f) => f,
        Err(e) => return crate::fail(&e),
    };
    crate::print(&table(&found.capacity));
    outln!("{}", found.capacity.message);
    let Some(mut result) = found.reference else {
        return code::OK;
    };
    let code = if found.capacity.finding == "interrupted" {
        volley_run::Outcome::Interrupted.exit_code()
    } else {
        code::OK
    };
    result.capacity = Some(found.capacity);
    let after = volley_run::after::AfterRun {
        save: Some(dir.join("capacity.json")),
        report: Some(dir.join("capacity.html")),
        ..Default::default()
    };
    match after.finish(&result, volley_run::Outcome::Passed, false) {
        volley_run::Outcome::Failure(e) => crate::fail(&e),
        _ => code,
    }
}
