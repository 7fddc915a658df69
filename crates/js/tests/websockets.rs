//! `k6/ws` and `k6/websockets` against the built-in target's `/ws/echo`: the scripts under
//! `tests/k6/ws*.js` assert events, their order and k6's messages with checks; here every
//! check must pass and the metrics (k6's names and kinds) must count exactly.

mod common;
use common::*;

use volley_js::RunOutput;

fn run(name: &str, t: &volley_testserver::RunningTarget) -> RunOutput {
    run_script(name, t, &[]).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Samples of a trend over all its series.
fn samples(r: &volley_metrics::RunResult, name: &str) -> u64 {
    trend_count(r, name, &[])
}

#[test]
fn k6_ws_callback_api_echoes_pings_closes_and_counts_exactly() {
    let t = target();
    let out = run("ws_callback.js", &t);
    let r = &out.result;
    assert!(r.metrics_named("iteration_errors").next().is_none());
    let checks = check_names(&out);
    assert_eq!(checks.len(), 13, "{checks:?}");
    assert_eq!(counter(r, "iterations", &[]), 2.0);
    // Per iteration: 6 sessions (echo, server close, timers, refused, bad handshake,
    // headers), 8 messages sent (3 + 1 + 3 + 1) and 6 received (2 + 0 + 3 + 1).
    assert_eq!(counter(r, "ws_sessions", &[]), 12.0);
    assert_eq!(counter(r, "ws_msgs_sent", &[]), 16.0);
    assert_eq!(counter(r, "ws_msgs_received", &[]), 12.0);
    assert_eq!(counter(r, "ws_msgs_sent", &[("part", "echo")]), 6.0);
    assert_eq!(counter(r, "ws_sessions", &[("status", "101")]), 8.0);
    assert_eq!(counter(r, "ws_sessions", &[("status", "200")]), 2.0);
    assert_eq!(samples(r, "ws_ping"), 2, "one ping per iteration");
    assert_eq!(samples(r, "ws_connecting"), 12);
    assert_eq!(samples(r, "ws_session_duration"), 12);
    let url = format!("ws://{}/ws/echo", t.local_addr());
    assert_eq!(counter(r, "ws_sessions", &[("url", url.as_str())]), 8.0);
    assert!(counter(r, "data_sent", &[("url", url.as_str())]) > 0.0);
    assert!(counter(r, "data_received", &[("url", url.as_str())]) > 0.0);
}

#[test]
fn k6_websockets_event_api_runs_on_the_event_loop_and_counts_exactly() {
    let t = target();
    let out = run("websockets.js", &t);
    let r = &out.result;
    assert!(r.metrics_named("iteration_errors").next().is_none());
    let checks = check_names(&out);
    assert_eq!(
        checks,
        [
            "a Blob comes back",
            "close code checked",
            "each socket its own echo",
            "events in order",
            "refused: closed",
            "refused: error event",
            "send before open",
            "server close: error then close",
            "unknown binaryType",
            "ws or wss only",
        ]
    );
    // Each check ran in both iterations (the 5 sockets' check 5 times each): the iteration
    // waited for every socket's events.
    assert_eq!(rate(r, "checks", &[]), (28, 28));
    // Per iteration: 9 sessions (a, b, c, refused, 5 at once), 17 frames sent (k6 counts
    // pings and closes here: a 2 + ping + close, b 1 + close, c 1, the five 1 + close each),
    // 8 messages received.
    assert_eq!(counter(r, "ws_sessions", &[]), 18.0);
    assert_eq!(counter(r, "ws_msgs_sent", &[]), 34.0);
    assert_eq!(counter(r, "ws_msgs_received", &[]), 16.0);
    assert_eq!(counter(r, "ws_sessions", &[("subproto", "chat")]), 2.0);
    assert_eq!(counter(r, "ws_msgs_sent", &[("part", "a")]), 8.0);
    assert_eq!(samples(r, "ws_ping"), 2);
    // No session duration for the refused ones (as k6).
    assert_eq!(samples(r, "ws_session_duration"), 16);
    let url = format!("ws://{}/ws/echo", t.local_addr());
    assert_eq!(
        counter(
            r,
            "ws_sessions",
            &[("url", url.as_str()), ("name", url.as_str())]
        ),
        16.0
    );
}

#[test]
fn many_vus_share_workers_with_websockets_on_both_apis() {
    let t = target();
    let out = run("ws_many.js", &t);
    let r = &out.result;
    assert!(r.metrics_named("iteration_errors").next().is_none());
    assert_eq!(counter(r, "iterations", &[]), 80.0);
    assert_eq!(counter(r, "ws_sessions", &[]), 80.0);
    // 40 sessions per API; k6/websockets also counts its close frame.
    assert_eq!(counter(r, "ws_msgs_sent", &[("api", "ws")]), 400.0);
    assert_eq!(counter(r, "ws_msgs_sent", &[("api", "websockets")]), 440.0);
    assert_eq!(counter(r, "ws_msgs_received", &[]), 800.0);
}

/// Several messages ready at once go straight from the native pump to the handlers: a close
/// in the handler of the first stops the rest (neither dispatched nor counted), handlers get
/// every message in order (one added during a dispatch from the next message on, as k6),
/// replies come back in order, and a
/// timer set from a handler still fires on time.
#[test]
fn k6_ws_burst_keeps_order_close_and_timers() {
    let t = target();
    let out = run("ws_burst.js", &t);
    let r = &out.result;
    assert!(r.metrics_named("iteration_errors").next().is_none());
    assert_eq!(
        check_names(&out),
        [
            "burst in order",
            "close in a burst: no later message",
            "late handler from the next message",
            "replies in order",
            "timer from a handler fired",
        ]
    );
    assert_eq!(rate(r, "checks", &[]), (10, 10));
    // Per iteration: "close" sends the command and gets one message of five; "order" sends
    // the command and 20 replies and gets 20 + 20.
    assert_eq!(counter(r, "ws_msgs_received", &[("part", "close")]), 2.0);
    assert_eq!(counter(r, "ws_msgs_sent", &[("part", "close")]), 2.0);
    assert_eq!(counter(r, "ws_msgs_received", &[("part", "order")]), 80.0);
    assert_eq!(counter(r, "ws_msgs_sent", &[("part", "order")]), 42.0);
}

/// Several events per read, which the pump hands to the handlers without waiting in between:
/// a close in the third handler of ten stops the rest (neither delivered nor counted), two
/// sends per handler and a timeout set in the same batch (replies in order, the timer fires),
/// an interval firing between messages that never pause, text and binary in arrival order.
#[test]
fn k6_ws_batches_keep_close_sends_timers_and_order() {
    let t = target();
    let out = run("ws_batch.js", &t);
    let r = &out.result;
    assert!(r.metrics_named("iteration_errors").next().is_none());
    assert_eq!(
        check_names(&out),
        [
            "close mid-batch: no later message",
            "interval fired between messages",
            "sends from a batch in order",
            "text and binary in order",
            "timeout set in a batch fired",
        ]
    );
    assert_eq!(rate(r, "checks", &[]), (10, 10));
    // Per iteration: "close" sends the command and gets 3 of 10; "sends" sends the command
    // and 10 replies and gets 5 + 10; "mixed" sends 5 and gets 5; "interval" sends the first
    // message and each echo back, so one more than it gets.
    let n = |name, part| counter(r, name, &[("part", part)]);
    assert_eq!(n("ws_msgs_received", "close"), 6.0);
    assert_eq!(n("ws_msgs_sent", "close"), 2.0);
    assert_eq!(n("ws_msgs_received", "sends"), 30.0);
    assert_eq!(n("ws_msgs_sent", "sends"), 22.0);
    assert_eq!(n("ws_msgs_received", "mixed"), 10.0);
    assert_eq!(n("ws_msgs_sent", "mixed"), 10.0);
    let chain = n("ws_msgs_received", "interval");
    assert!(chain > 0.0);
    assert_eq!(n("ws_msgs_sent", "interval"), chain + 2.0);
}

/// A run cut by its duration (gracefulStop 0) while bursts keep arriving: every message
/// counted in ws_msgs_received reached the handler, but at most the one per VU that was being
/// dispatched when the stop came (k6 too counts a message just before its handler runs).
#[test]
fn k6_ws_cut_mid_batch_counts_what_the_handlers_got() {
    let t = target();
    let out = run("ws_cut.js", &t);
    let r = &out.result;
    let received = counter(r, "ws_msgs_received", &[]);
    let handled = counter(r, "handled", &[]);
    assert!(
        handled >= 400.0,
        "each of 2 VUs gets at least one burst of 200: {handled}"
    );
    assert!(
        received >= handled && received <= handled + 2.0,
        "received {received}, handled {handled}"
    );
    assert_eq!(counter(r, "ws_sessions", &[]), 2.0);
}
