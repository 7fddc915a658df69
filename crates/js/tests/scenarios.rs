//! k6 conformance for `options.scenarios`: the six executors side by side, exec/env/tags per
//! scenario, per-scenario thresholds, arrival rates, dropped iterations and graceful stops.
//! Each script under `tests/k6/` runs against the built-in target; outcomes are asserted from
//! the run result (and the target's own request count).

mod common;
use common::*;

use volley_js::{RunError, RunOutput};
use volley_metrics::TotalValue;

fn run(name: &str, t: &volley_testserver::RunningTarget) -> RunOutput {
    run_script(name, t, &[]).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// What the result file says about scenario `name` (completed, interrupted, dropped).
fn scenario_counts(out: &RunOutput, name: &str) -> (u64, u64, u64) {
    let list = out.result.options["scenarios"]
        .as_array()
        .expect("scenarios in the result's options");
    let s = list
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no scenario {name} in {list:?}"));
    let n = |k: &str| s[k].as_u64().unwrap();
    (
        n("completed_iterations"),
        n("interrupted_iterations"),
        n("dropped_iterations"),
    )
}

#[test]
fn a_multi_scenario_suite_runs_its_smoke_profile_and_passes_its_thresholds() {
    let t = target();
    let out = run("scenarios_suite.js", &t);
    let r = &out.result;
    let failed: Vec<_> = r.thresholds.iter().filter(|t| !t.ok).collect();
    assert!(failed.is_empty(), "thresholds failed: {failed:?}");
    assert_eq!(r.thresholds.len(), 6);
    // Every check passed, and each exec function ran in its own scenario.
    let bad: Vec<_> = r
        .metrics_named("checks")
        .filter(|m| !matches!(m.value, TotalValue::Rate { trues, total } if trues == total))
        .map(|m| m.tags.clone())
        .collect();
    assert!(bad.is_empty(), "failed checks: {bad:?}");
    for m in r.metrics_named("per_scenario") {
        assert_eq!(
            m.tags.get("seen_in"),
            m.tags.get("scenario"),
            "samples carry the scenario they were recorded in"
        );
    }
    // Exact counts where the executor defines them.
    assert_eq!(
        counter(r, "iterations", &[("scenario", "write_create")]),
        6.0
    );
    assert_eq!(
        counter(r, "iterations", &[("scenario", "write_update")]),
        10.0
    );
    assert_eq!(counter(r, "iterations", &[("scenario", "functional")]), 1.0);
    // 20/s for 2 s.
    assert_eq!(
        counter(r, "iterations", &[("scenario", "write_background")]),
        40.0
    );
    assert_eq!(scenario_counts(&out, "write_background"), (40, 0, 0));
    // Scenario tags land on the requests.
    assert_eq!(
        counter(r, "http_reqs", &[("kind", "write")]),
        6.0 + 10.0 + 40.0
    );
    assert!(
        counter(
            r,
            "http_reqs",
            &[("scenario", "read_list"), ("kind", "read")]
        ) > 0.0
    );
    assert!(counter(r, "http_reqs", &[("scenario", "read_ramp")]) > 0.0);
    assert_eq!(
        counter(r, "http_reqs", &[]) as u64,
        t.stats().requests,
        "the server saw every request"
    );
    // vus_max is the sum of what the scenarios need: 2 + 2 + 2 + 2 + 2 (pre-allocated) + 1.
    let vus_max = r.metrics_named("vus_max").next().unwrap();
    let TotalValue::Gauge { max, .. } = vus_max.value else {
        panic!("vus_max is a gauge")
    };
    assert!(max >= 11.0, "vus_max {max}");
    assert_eq!(r.options["executor"], "scenarios");
}

#[test]
fn constant_arrival_rate_holds_its_rate_against_a_fast_target() {
    let t = target();
    let out = run("arrival_rate.js", &t);
    let r = &out.result;
    // 300/s for 10 s: 3,000 iterations are due; within 1 % of them started.
    let n = counter(r, "iterations", &[("scenario", "steady")]);
    assert!((2970.0..=3000.0).contains(&n), "iterations {n}");
    let (done, _, dropped) = scenario_counts(&out, "steady");
    assert_eq!(
        done + dropped,
        3000,
        "every due iteration is run or dropped"
    );
    assert_eq!(t.stats().requests, done, "one request per iteration");
    // The corrected duration (from when each iteration was due) is reported beside.
    assert!(r
        .metrics_named("iteration_duration_corrected")
        .next()
        .is_some());
}

#[test]
fn arrivals_without_a_free_vu_are_dropped_not_queued() {
    let t = target();
    let out = run("arrival_dropped.js", &t);
    let r = &out.result;
    let done = counter(r, "iterations", &[]);
    let dropped = counter(r, "dropped_iterations", &[("scenario", "slow")]);
    // 40 due over 2 s; 2 VUs at 400 ms per iteration start at most ~10 of them.
    assert_eq!(done + dropped, 40.0, "done {done} dropped {dropped}");
    assert!(dropped >= 25.0, "dropped {dropped}");
    assert_eq!(scenario_counts(&out, "slow").2 as f64, dropped);
}

#[test]
fn graceful_stop_interrupts_a_sleeping_iteration() {
    let t = target();
    let out = run("graceful_stop.js", &t);
    let r = &out.result;
    assert_eq!(scenario_counts(&out, "sleepy"), (0, 2, 0));
    assert_eq!(counter(r, "iterations", &[]), 0.0);
    assert_eq!(counter(r, "after_sleep", &[]), 0.0);
    assert!(
        r.metrics_named("iteration_errors").next().is_none(),
        "interrupted is not failed"
    );
    // Stopped at duration + gracefulStop, not after the 30 s sleep.
    assert!(r.meta.duration_s < 10.0, "{}", r.meta.duration_s);
}

/// The same for an iteration that never waits: the interrupt handler cuts it, and it counts
/// as interrupted, not as `iteration_errors` (it used to be reported as an exception).
#[test]
fn graceful_stop_interrupts_a_busy_iteration_without_an_error() {
    let t = target();
    let out = run("graceful_stop_busy.js", &t);
    let r = &out.result;
    assert_eq!(scenario_counts(&out, "spinning"), (0, 2, 0));
    assert_eq!(counter(r, "iterations", &[]), 0.0);
    assert!(
        r.metrics_named("iteration_errors").next().is_none(),
        "interrupted is not failed"
    );
}

#[test]
fn bad_scenario_configs_are_config_errors() {
    let t = target();
    for (name, want) in [
        (
            "scenarios_bad_exec.js",
            "function 'nope' not found in exports",
        ),
        (
            "scenarios_mixed.js",
            "using `duration` and `scenarios` options simultaneously is not allowed",
        ),
    ] {
        match run_script(name, &t, &[]) {
            Err(RunError::Config(e)) => assert!(e.contains(want), "{name}: {e}"),
            Err(e) => panic!("{name}: not a config error: {e}"),
            Ok(_) => panic!("{name}: ran"),
        }
    }
}

/// Regression (#15): on a ramp down Volley removed each VU one step before k6, so this 20 s
/// profile of 5.5 s iterations ran 32 iterations. 33 is k6 v1.8.1's count for the same script
/// (`k6 run -q --summary-export k.json tests/k6/ramp_down.js`, 3 runs, all 33; the per-VU
/// margins are ≥ 0.33 s, far above scheduling jitter).
#[test]
fn ramp_down_runs_as_many_iterations_as_k6() {
    let t = target();
    let out = run("ramp_down.js", &t);
    assert_eq!(counter(&out.result, "iterations", &[]), 33.0);
}

/// Regression (#15): ramping-arrival-rate started an iteration at t = 0 and ran ⌈∫rate⌉ = 35
/// iterations for an integral of 34.5; k6 v1.8.1 runs 34 (`k6 run -q --summary-export k.json
/// tests/k6/ramp_down_arrival.js`, 5 runs, all 34).
#[test]
fn ramping_arrival_rate_runs_as_many_iterations_as_k6() {
    let t = target();
    let out = run("ramp_down_arrival.js", &t);
    assert_eq!(counter(&out.result, "iterations", &[]), 34.0);
    assert_eq!(scenario_counts(&out, "ramp"), (34, 0, 0));
}
