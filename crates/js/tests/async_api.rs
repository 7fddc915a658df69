//! k6's asynchronous JS API: the event loop per call, timers (globals and `k6/timers`),
//! `http.asyncRequest`, async default functions and their errors, graceful stops of pending
//! timers. Each script under `tests/k6/async_*.js` runs against the built-in target.

mod common;
use common::*;

use volley_js::RunOutput;

fn run(name: &str, t: &volley_testserver::RunningTarget) -> RunOutput {
    run_script(name, t, &[]).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn timers_run_in_deadline_order_and_the_iteration_waits_for_them() {
    let t = target();
    let out = run("async_timers.js", &t);
    let r = &out.result;
    assert_eq!(counter(r, "iterations", &[]), 2.0);
    assert!(r.metrics_named("iteration_errors").next().is_none());
    let checks = all_checks_pass(&out);
    let names: Vec<&str> = checks.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "a callback must be a function",
            "async setup data",
            "await setTimeout waits",
            "interval fired 3 times",
            "k6/timers exports the globals",
            "timer order",
            "top-level await in init",
        ]
    );
    // Each check ran once per iteration: the last timer's checks too, after the function
    // returned.
    assert!(checks.iter().all(|c| c.2 == 2), "{checks:?}");
    assert_eq!(counter(r, "timers_done", &[]), 2.0);
    assert_eq!(
        counter(r, "interval_ticks", &[]),
        6.0,
        "3 ticks per iteration"
    );
    assert!(
        r.metrics_named("cleared_fired").next().is_none(),
        "cleared timers never fire"
    );
    // The iteration lasted until its last timer (30 ms awaited + 60 ms after).
    let (n, _, min, _) = trend(r, "iteration_duration");
    assert_eq!(n, 2);
    assert!(min >= 85.0, "iteration_duration min {min} ms");
    // handleSummary is async and waits on a timer too.
    let summary = volley_run::Summary::from_result(r).unwrap();
    let outs = out
        .handle_summary(&summary, false, false)
        .expect("handleSummary runs")
        .expect("the script has one");
    assert_eq!(
        outs,
        vec![("stdout".to_string(), b"ASYNC SUMMARY 2\n".to_vec())]
    );
}

#[test]
fn async_request_gives_the_response_metrics_and_cookies_of_request() {
    let t = target();
    let out = run("async_request.js", &t);
    let r = &out.result;
    assert_eq!(counter(r, "iterations", &[]), 2.0);
    assert!(r.metrics_named("iteration_errors").next().is_none());
    let checks = all_checks_pass(&out);
    assert_eq!(checks.len(), 9, "{checks:?}");
    assert!(checks.iter().all(|c| c.2 == 2), "{checks:?}");
    // Per iteration: get, redirect/2 (3 hops), echo, cookies/set, cookies, sync get,
    // status/404; the bad URL makes no request.
    assert_eq!(counter(r, "http_reqs", &[]), 18.0);
    assert_eq!(t.stats().requests, 18, "the server saw every request");
    assert_eq!(counter(r, "http_reqs", &[("name", "async_get")]), 2.0);
    assert_eq!(counter(r, "http_reqs", &[("name", "sync_get")]), 2.0);
    assert_eq!(counter(r, "http_reqs", &[("status", "302")]), 4.0);
    assert_eq!(rate(r, "http_req_failed", &[("status", "404")]), (2, 2));
    assert_eq!(
        counter(r, "data_received", &[]) as u64,
        t.stats().bytes_sent,
        "bytes received are counted on the wire"
    );
}

#[test]
fn concurrent_async_requests_of_one_vu_overlap() {
    let t = target();
    let out = run("async_overlap.js", &t);
    let r = &out.result;
    assert_eq!(rate(r, "checks", &[]), (1, 1));
    assert_eq!(counter(r, "http_reqs", &[]), 3.0);
    for name in ["delay1", "delay2", "delay3"] {
        assert_eq!(counter(r, "http_reqs", &[("name", name)]), 1.0);
    }
    // In flight together: each needed a connection of its own (one after the other, they
    // would have shared the VU's keep-alive connection).
    assert_eq!(t.stats().connections, 3);
    // ~300 ms together; one after the other would be at least 900 ms.
    let (n, _, _, max) = trend(r, "three_requests_ms");
    assert_eq!(n, 1);
    assert!(
        (290.0..800.0).contains(&max),
        "three 300 ms requests took {max} ms"
    );
}

#[test]
fn rejections_and_throwing_timers_are_iteration_errors() {
    let t = target();
    let out = run("async_errors.js", &t);
    let r = &out.result;
    for (scenario, errors) in [
        ("rejects", 2.0),
        ("unhandled", 2.0),
        ("timerThrows", 2.0),
        ("handled", 0.0),
    ] {
        assert_eq!(
            counter(r, "iterations", &[("scenario", scenario)]),
            2.0,
            "{scenario}"
        );
        assert_eq!(
            counter(r, "iteration_errors", &[("scenario", scenario)]),
            errors,
            "{scenario}"
        );
    }
    assert_eq!(
        counter(r, "reached", &[("where", "after timer error")]),
        0.0
    );
    assert_eq!(counter(r, "reached", &[("where", "late catch")]), 2.0);
    assert_eq!(counter(r, "reached", &[("where", "handled end")]), 2.0);
    assert_eq!(
        rate(r, "checks", &[("check", "await rejects into catch")]),
        (2, 2)
    );
    assert!(out.aborted.is_none());
}

#[test]
fn graceful_stop_interrupts_an_iteration_waiting_on_a_timer() {
    let t = target();
    let started = std::time::Instant::now();
    let out = run("async_graceful.js", &t);
    let r = &out.result;
    let s = out.result.options["scenarios"]
        .as_array()
        .and_then(|l| l.iter().find(|s| s["name"] == "stuck"))
        .expect("scenario stuck")
        .clone();
    assert_eq!(s["completed_iterations"], 0, "{s}");
    assert_eq!(s["interrupted_iterations"], 2, "{s}");
    assert_eq!(counter(r, "iterations", &[]), 0.0);
    assert_eq!(counter(r, "after_timer", &[]), 0.0);
    assert!(
        r.metrics_named("iteration_errors").next().is_none(),
        "interrupted is not failed"
    );
    // Stopped at duration + gracefulStop, not after the 30 s timers.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}
