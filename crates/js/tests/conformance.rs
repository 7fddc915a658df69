//! k6 conformance: each script under `tests/k6/` run against the built-in target, with its
//! outcome asserted exactly from the run result (and the target's own request count).

mod common;
use common::*;

use std::collections::BTreeMap;
use volley_engine::RunControl;
use volley_js::{CliOptions, RunError, RunOutput};
use volley_metrics::TotalValue;

fn run_with(
    name: &str,
    t: &volley_testserver::RunningTarget,
    extra: &[(&str, &str)],
    cli: CliOptions,
) -> Result<RunOutput, RunError> {
    let mut env = BTreeMap::new();
    env.insert("BASE".to_string(), format!("http://{}", t.local_addr()));
    for (k, v) in extra {
        env.insert(k.to_string(), v.to_string());
    }
    volley_js::run(&script(name), env, &cli, 2, vec![], &RunControl::new())
}

fn run(name: &str, t: &volley_testserver::RunningTarget) -> RunOutput {
    run_with(name, t, &[], CliOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn checks_are_counted_per_name_and_requests_match_the_server() {
    let t = target();
    let out = run("checks.js", &t);
    let r = &out.result;
    assert_eq!(r.meta.mode, "run");
    assert_eq!(counter(r, "iterations", &[]), 10.0);
    assert_eq!(rate(r, "checks", &[("check", "status is 200")]), (10, 10));
    assert_eq!(
        rate(r, "checks", &[("check", "body is 13 bytes")]),
        (10, 10)
    );
    assert_eq!(
        rate(
            r,
            "checks",
            &[("check", "404 is 200"), ("kind", "negative")]
        ),
        (0, 10)
    );
    assert_eq!(rate(r, "checks", &[]), (20, 30));
    assert_eq!(counter(r, "http_reqs", &[]), 20.0);
    assert_eq!(counter(r, "http_reqs", &[("status", "404")]), 10.0);
    assert_eq!(rate(r, "http_req_failed", &[]), (10, 20));
    assert_eq!(
        rate(r, "http_req_failed", &[("expected_response", "true")]),
        (0, 10)
    );
    assert_eq!(t.stats().requests, 20, "the server saw every request");
    assert_eq!(
        counter(r, "data_received", &[]) as u64,
        t.stats().bytes_sent,
        "bytes received are counted on the wire"
    );
    // The summary export has k6's shape.
    let s = volley_run::Summary::from_result(r).unwrap();
    let e = s.export();
    assert_eq!(e["metrics"]["http_reqs"]["count"], 20.0);
    assert_eq!(e["metrics"]["checks"]["passes"], 20);
    assert_eq!(e["metrics"]["checks"]["fails"], 10);
    assert_eq!(e["root_group"]["checks"]["404 is 200"]["fails"], 10);
    let text = s.render_text();
    assert!(text.contains("✓ status is 200"), "{text}");
    assert!(text.contains("✗ 404 is 200"), "{text}");
    assert!(text.contains("↳  0% — ✓ 0 / ✗ 10"), "{text}");
}

#[test]
fn custom_metrics_record_exact_values() {
    let t = target();
    let out = run("metrics.js", &t);
    let r = &out.result;
    assert_eq!(counter(r, "my_counter", &[]), 16.0);
    assert_eq!(counter(r, "my_counter", &[("kind", "a")]), 12.0);
    let g = r.metrics_named("my_gauge").next().unwrap();
    assert!(matches!(
        g.value,
        TotalValue::Gauge { last, min, max, n: 4 } if last == 13.0 && min == 10.0 && max == 13.0
    ));
    assert_eq!(rate(r, "my_rate", &[]), (2, 4));
    let (n, sum, min, max) = trend(r, "my_trend");
    assert_eq!((n, sum, min, max), (4, 1000.0, 100.0, 400.0));
    assert_eq!(
        r.metrics_named("my_trend").next().unwrap().unit,
        volley_metrics::Unit::Time
    );
    assert_eq!(trend(r, "my_plain").0, 4);
    // Custom metric samples carry k6's scenario and group tags.
    let c = r.metrics_named("my_counter").next().unwrap();
    assert_eq!(c.tags.get("scenario").map(String::as_str), Some("default"));
    assert_eq!(c.tags.get("group").map(String::as_str), Some(""));
}

#[test]
fn an_exception_is_counted_and_the_test_goes_on() {
    let t = target();
    let out = run("exception.js", &t);
    let r = &out.result;
    assert_eq!(
        counter(r, "iterations", &[]),
        9.0,
        "failed iterations still count"
    );
    assert_eq!(counter(r, "iteration_errors", &[]), 3.0);
    assert_eq!(counter(r, "http_reqs", &[]), 9.0);
    assert_eq!(t.stats().requests, 9);
    assert!(out.aborted.is_none() && out.teardown_error.is_none());
}

#[test]
fn modules_setup_teardown_groups_and_http_api() {
    let t = target();
    let out = run_with(
        "modules.js",
        &t,
        &[("MODE", "conformance")],
        CliOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = &out.result;
    assert!(out.teardown_error.is_none(), "{:?}", out.teardown_error);
    let (passes, total) = rate(r, "checks", &[]);
    assert_eq!(total, 3 * 9);
    if passes != total {
        let failed: Vec<_> = r
            .metrics_named("checks")
            .filter(|m| !matches!(m.value, TotalValue::Rate { trues, total } if trues == total))
            .map(|m| m.tags.get("check").cloned())
            .collect();
        panic!("failed checks: {failed:?}");
    }
    assert_eq!(rate(r, "checks", &[("group", "::api")]).1, 3 * 4);
    assert_eq!(rate(r, "checks", &[("group", "::api::nested")]).1, 3);
    // Per iteration: 1 POST + 3 hops of a 2-redirect chain; teardown: 1 more.
    assert_eq!(counter(r, "http_reqs", &[]), 3.0 * 4.0 + 1.0);
    assert_eq!(counter(r, "http_reqs", &[("name", "redirects")]), 9.0);
    assert_eq!(counter(r, "http_reqs", &[("status", "302")]), 6.0);
    assert_eq!(counter(r, "http_reqs", &[("group", "::api::nested")]), 9.0);
    assert_eq!(t.stats().requests, 13);
    assert_eq!(
        r.metrics_named("group_duration")
            .filter(|m| m.tags.get("group").map(String::as_str) == Some("::api"))
            .count(),
        1
    );
}

#[test]
fn failed_requests_have_k6_error_codes() {
    let t = target();
    // A port that was just free: nothing listens there.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}/", dead.local_addr().unwrap());
    drop(dead);
    let out = run_with(
        "errors.js",
        &t,
        &[("DEAD", dead_url.as_str())],
        CliOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = &out.result;
    assert_eq!(rate(r, "checks", &[]), (4, 4));
    assert_eq!(rate(r, "http_req_failed", &[]), (2, 2));
    assert_eq!(counter(r, "http_reqs", &[("error_code", "1212")]), 1.0);
    assert_eq!(counter(r, "http_reqs", &[("error_code", "1050")]), 1.0);
}

#[test]
fn constant_vus_run_for_the_duration_and_sleeping_vus_share_threads() {
    let t = target();
    let out = run("duration.js", &t);
    let r = &out.result;
    let iters = counter(r, "iterations", &[]);
    // 20 VUs × ~10 iterations of ≥100 ms in 1 s (loose: CI machines are busy).
    assert!((100.0..=220.0).contains(&iters), "iterations {iters}");
    assert_eq!(counter(r, "http_reqs", &[]), iters);
    assert_eq!(t.stats().requests as f64, iters);
    assert!(r.meta.duration_s >= 1.0 && r.meta.duration_s < 3.0);
    let vmax = r.metrics_named("vus_max").next().unwrap();
    assert!(matches!(vmax.value, TotalValue::Gauge { max, .. } if max == 20.0));
}

#[test]
fn cli_options_override_the_script() {
    let t = target();
    let cli = CliOptions {
        vus: Some(3),
        duration: None,
        iterations: Some(7),
        ..Default::default()
    };
    let out = run_with("duration.js", &t, &[], cli).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(counter(&out.result, "iterations", &[]), 7.0);
    assert_eq!(t.stats().requests, 7);
}

#[test]
fn ramping_vus_follow_the_stages() {
    let t = target();
    let out = run("ramping.js", &t);
    let r = &out.result;
    let vus = r.metrics_named("vus").next().unwrap();
    assert!(
        matches!(vus.value, TotalValue::Gauge { max, .. } if (3.0..=4.0).contains(&max)),
        "{vus:?}"
    );
    let iters = counter(r, "iterations", &[]);
    // Area under the ramp: ~4 VU-seconds at ≥50 ms per iteration → at most ~80.
    assert!((10.0..=90.0).contains(&iters), "iterations {iters}");
    assert!(
        r.meta.duration_s >= 1.5 && r.meta.duration_s < 4.0,
        "{}",
        r.meta.duration_s
    );
}

#[test]
fn a_syntax_error_names_file_line_and_column() {
    let t = target();
    match run_with("syntax_error.js", &t, &[], CliOptions::default()) {
        Err(RunError::Script(msg)) => {
            assert!(msg.contains("syntax_error.js:4:"), "{msg}");
            assert!(msg.contains("SyntaxError"), "{msg}");
        }
        Err(e) => panic!("wrong error kind: {e}"),
        Ok(_) => panic!("a syntax error must not run"),
    }
}

/// `check()` and `http.get()` are native (src/check.rs, src/http.rs): every shortcut they
/// take must give what k6 gives.
#[test]
fn native_check_and_get_behave_as_the_shims_did() {
    let t = target();
    let out = run("check_native.js", &t);
    let r = &out.result;
    assert_eq!(
        counter(r, "bad", &[]),
        0.0,
        "an expectation in the script failed"
    );
    assert_eq!(counter(r, "not_all", &[]), 6.0);
    assert_eq!(rate(r, "checks", &[("check", "truthy value")]), (6, 6));
    assert_eq!(rate(r, "checks", &[("check", "falsy value")]), (0, 6));
    assert_eq!(rate(r, "checks", &[("check", "200")]), (6, 6));
    assert_eq!(rate(r, "checks", &[("check", "parity 0")]), (3, 3));
    assert_eq!(rate(r, "checks", &[("check", "parity 1")]), (0, 3));
    assert_eq!(
        rate(r, "checks", &[("check", "same"), ("group", "")]),
        (6, 6)
    );
    assert_eq!(
        rate(r, "checks", &[("check", "same"), ("group", "::g")]),
        (0, 6)
    );
    for t3 in ["0", "1", "2"] {
        assert_eq!(rate(r, "checks", &[("check", "tagged"), ("t", t3)]), (2, 2));
    }
    // The throwing condition: the one before it counted, the one after it never ran.
    assert_eq!(rate(r, "checks", &[("check", "before throw")]), (1, 1));
    assert_eq!(rate(r, "checks", &[("check", "boom")]), (0, 0));
    assert_eq!(rate(r, "checks", &[("check", "after")]), (0, 0));
    assert_eq!(counter(r, "iteration_errors", &[]), 1.0);
    // Three requests per iteration reach the server (the one without a URL does not).
    assert_eq!(counter(r, "http_reqs", &[]), 18.0);
    assert_eq!(t.stats().requests, 18);
}
