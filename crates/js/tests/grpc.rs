//! `k6/net/grpc` against the built-in target's gRPC service: the scripts under
//! `tests/k6/grpc_*.js` assert responses, events and k6's error texts with checks; here
//! every check must pass and the metrics (k6's names, kinds and tags) must count exactly.

mod common;
use common::*;

use volley_js::RunOutput;

fn run(name: &str, t: &volley_testserver::RunningTarget) -> RunOutput {
    run_script(name, t, &[]).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn samples(r: &volley_metrics::RunResult, name: &str, filter: &[(&str, &str)]) -> u64 {
    trend_count(r, name, filter)
}

#[test]
fn unary_calls_shape_responses_as_k6_and_count_exactly() {
    let t = target();
    let out = run("grpc_unary.js", &t);
    let r = &out.result;
    assert!(r.metrics_named("iteration_errors").next().is_none());
    let checks = check_names(&out);
    assert_eq!(checks.len(), 18, "{checks:?}");
    // Per iteration: 2 Echo + Fail + Slow + discarded Echo + async Echo + 2 async Slow = 8.
    assert_eq!(samples(r, "grpc_req_duration", &[]), 16);
    assert_eq!(samples(r, "grpc_req_duration", &[("status", "0")]), 12);
    assert_eq!(samples(r, "grpc_req_duration", &[("status", "5")]), 2);
    assert_eq!(samples(r, "grpc_req_duration", &[("status", "4")]), 2);
    let url = format!("{}/volley.target.Target/Echo", t.local_addr());
    assert_eq!(
        samples(
            r,
            "grpc_req_duration",
            &[
                ("part", "echo"),
                ("name", "/volley.target.Target/Echo"),
                ("method", "Echo"),
                ("service", "volley.target.Target"),
                ("url", url.as_str()),
            ]
        ),
        2
    );
    assert!(counter(r, "data_sent", &[]) > 0.0);
    assert!(counter(r, "data_received", &[]) > 0.0);
}

#[test]
fn streams_deliver_events_in_order_and_count_messages() {
    let t = target();
    let out = run("grpc_streams.js", &t);
    let r = &out.result;
    assert!(r.metrics_named("iteration_errors").next().is_none());
    assert_eq!(check_names(&out).len(), 4);
    assert_eq!(rate(r, "checks", &[]), (8, 8));
    assert_eq!(counter(r, "grpc_streams", &[]), 8.0);
    // Per iteration: Count 1 + Sum 4 + Chat 5 + Fail 1 written.
    assert_eq!(counter(r, "grpc_streams_msgs_sent", &[]), 22.0);
    assert_eq!(
        counter(r, "grpc_streams_msgs_sent", &[("part", "sum")]),
        8.0
    );
    // Count 3 + Sum 1 + Chat 5 received.
    assert_eq!(counter(r, "grpc_streams_msgs_received", &[]), 18.0);
    assert_eq!(
        counter(r, "grpc_streams_msgs_received", &[("part", "chat")]),
        10.0
    );
    assert_eq!(
        samples(r, "grpc_req_duration", &[("part", "fail"), ("status", "5")]),
        2
    );
}

/// Largest value (ms for time trends) of a trend over the tag sets matching `filter`.
fn trend_max(r: &volley_metrics::RunResult, name: &str, filter: &[(&str, &str)]) -> f64 {
    matching(r, name, filter)
        .map(|m| match m.value {
            volley_metrics::TotalValue::Trend { max, .. } => max,
            _ => panic!("{name} is not a trend"),
        })
        .fold(0.0, f64::max)
}

/// One connection per VU with many things in flight: concurrent calls, a stream that must
/// be read while the VU sleeps (its duration ends before the sleep does), a deadline.
#[test]
fn calls_and_streams_in_flight_together_share_the_vus_connection() {
    let t = target();
    let out = run("grpc_driven.js", &t);
    let r = &out.result;
    assert!(r.metrics_named("iteration_errors").next().is_none());
    assert_eq!(check_names(&out).len(), 5);
    assert_eq!(rate(r, "checks", &[]), (20, 20));
    assert_eq!(
        counter(r, "grpc_streams_msgs_received", &[("part", "count")]),
        8000.0
    );
    // 10 async + 3 blocking calls + 1 stream per iteration.
    assert_eq!(samples(r, "grpc_req_duration", &[]), 56);
    // The stream's own end came while the VU slept 1.5 s, not after it.
    let took = trend_max(r, "grpc_req_duration", &[("part", "count")]);
    assert!(took < 1500.0, "the stream ended after {took} ms");
}

#[test]
fn reflection_builds_descriptors_from_the_server() {
    let t = target();
    let out = run("grpc_reflection.js", &t);
    assert_eq!(rate(&out.result, "checks", &[]), (8, 8));
    assert_eq!(
        samples(&out.result, "grpc_req_duration", &[("status", "0")]),
        4
    );
}

#[test]
fn errors_read_as_k6() {
    let t = target();
    let out = run("grpc_errors.js", &t);
    assert_eq!(check_names(&out).len(), 13);
    assert_eq!(rate(&out.result, "checks", &[]), (13, 13));
}

#[test]
fn health_check_answers_and_cached_series_keep_groups_apart() {
    let t = target();
    let out = run("grpc_health.js", &t);
    let r = &out.result;
    assert!(r.metrics_named("iteration_errors").next().is_none());
    assert_eq!(check_names(&out).len(), 4);
    assert_eq!(rate(r, "checks", &[]), (12, 12));
    // Per iteration: 3 health checks (2 OK, 1 NotFound) + 2 Echo.
    assert_eq!(samples(r, "grpc_req_duration", &[]), 15);
    assert_eq!(samples(r, "grpc_req_duration", &[("status", "5")]), 3);
    let echo = [("name", "/volley.target.Target/Echo"), ("status", "0")];
    assert_eq!(samples(r, "grpc_req_duration", &echo), 6);
    for g in ["::a", "::b"] {
        let f = [echo[0], echo[1], ("group", g)];
        assert_eq!(samples(r, "grpc_req_duration", &f), 3, "{g}");
    }
}

#[test]
fn repeated_calls_keep_metadata_timeouts_and_request_errors_per_call() {
    let t = target();
    let out = run("grpc_repeat.js", &t);
    let r = &out.result;
    assert!(r.metrics_named("iteration_errors").next().is_none());
    assert_eq!(check_names(&out).len(), 7);
    assert_eq!(rate(r, "checks", &[]), (14, 14));
    // Per iteration: 5 + 2 + 4 + 4 + 1 + 1 calls that reached the server (the three
    // unknown-field and the wrong-type requests throw before sending).
    assert_eq!(samples(r, "grpc_req_duration", &[]), 34);
    assert_eq!(samples(r, "grpc_req_duration", &[("status", "4")]), 4);
}

#[test]
fn response_headers_trailers_errors_and_messages_keep_their_exact_shape() {
    let t = target();
    let out = run("grpc_metadata.js", &t);
    let r = &out.result;
    assert!(r.metrics_named("iteration_errors").next().is_none());
    assert_eq!(check_names(&out).len(), 4);
    assert_eq!(rate(r, "checks", &[]), (8, 8));
    assert_eq!(samples(r, "grpc_req_duration", &[]), 8);
    assert_eq!(samples(r, "grpc_req_duration", &[("status", "5")]), 2);
}

/// A Python grpcio server (tests/peers/grpc_server.py) on loopback; `None` (skip) when
/// `python3 -c 'import grpc, grpc_reflection'` fails.
struct Peer {
    child: std::process::Child,
    port: u16,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn python_peer(protoset: &std::path::Path) -> Option<Peer> {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let ok = Command::new("python3")
        .args(["-c", "import grpc, grpc_reflection"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return None;
    }
    let server =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers/grpc_server.py");
    let mut child = Command::new("python3")
        .arg(server)
        .arg(protoset)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take()?)
        .read_line(&mut line)
        .ok()?;
    let port = line.trim().parse().ok()?;
    Some(Peer { child, port })
}

#[test]
fn independent_grpcio_server_with_a_protoset_and_reflection() {
    let dir = volley_testkit::scratch("volley-grpc", "peer");
    let protoset = dir.join("target.protoset");
    let protos = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/grpc");
    let pool = volley_grpc::proto::load(&[protos], &["target.proto".into()]).unwrap();
    std::fs::write(&protoset, pool.encode_to_vec()).unwrap();
    let Some(peer) = python_peer(&protoset) else {
        eprintln!("SKIP: python3 with grpcio and grpcio-reflection not found (pip install grpcio grpcio-reflection)");
        return;
    };
    let mut env = std::collections::BTreeMap::new();
    env.insert(
        "BASE".to_string(),
        format!("http://127.0.0.1:{}", peer.port),
    );
    env.insert("PROTOSET".to_string(), protoset.display().to_string());
    let out = volley_js::run(
        &script("grpc_peer.js"),
        env,
        &volley_js::CliOptions::default(),
        2,
        vec![],
        &volley_engine::RunControl::new(),
    )
    .unwrap_or_else(|e| panic!("grpc_peer.js: {e}"));
    let r = &out.result;
    assert!(r.metrics_named("iteration_errors").next().is_none());
    assert_eq!(check_names(&out).len(), 8);
    assert_eq!(rate(r, "checks", &[]), (16, 16));
    assert_eq!(counter(r, "grpc_streams_msgs_received", &[]), 14.0);
    assert_eq!(samples(r, "grpc_req_duration", &[("status", "7")]), 2);
}

#[test]
fn bad_proto_fails_init_with_file_line_column_and_a_hint() {
    let t = target();
    let e = run_script("grpc_bad_proto.js", &t, &[])
        .err()
        .expect("init fails");
    let volley_js::RunError::Script(msg) = e else {
        panic!("not a script error: {e:?}")
    };
    assert!(msg.contains("bad.proto:6:3: "), "{msg}");
    assert!(msg.contains("strnig"), "{msg}");
    assert!(msg.contains("hint:"), "{msg}");
}
