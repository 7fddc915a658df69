//! k6's WebSocket and gRPC behaviour on hostile input and k6's own gRPC example flows, under
//! Volley and — where k6 is installed — under k6 beside it: tests/k6/parity_ws_errors.js
//! (against `volley target` and tests/ws/evil_server.py, a raw-socket server that breaks the
//! protocol on purpose) and tests/k6/parity_grpc.js (against tests/peers/route_guide_server.py,
//! grpcio). Every check in those scripts states what k6 v1.8.1 does, so each fails on the
//! Volley that differed. Skipped with a message when python3 (or grpcio) is absent; the k6
//! half is skipped when no k6 binary is found (`K6=/path/to/k6`, or bench/install-peers.sh's
//! ~/.cache/volley-peers/bin/k6).

mod common;

use common::{python_server, run, stderr, target};
use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn k6() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("K6") {
        return Some(PathBuf::from(p));
    }
    let peers = PathBuf::from(std::env::var_os("HOME")?).join(".cache/volley-peers/bin/k6");
    peers.is_file().then_some(peers)
}

/// What one run gave: checks by name (passes, fails), counters by name, and the number of
/// points per (metric, selected tags) in its `--out json`.
#[derive(Debug, PartialEq)]
struct Outcome {
    checks: BTreeMap<String, (u64, u64)>,
    counters: BTreeMap<String, u64>,
    points: BTreeMap<String, u64>,
}

/// The metrics whose counts must agree, and the tags their points are told apart by.
const COUNTED: &[&str] = &[
    "iterations",
    "ws_sessions",
    "ws_msgs_received",
    "grpc_streams",
    "grpc_streams_msgs_sent",
    "grpc_streams_msgs_received",
];
const POINT_TAGS: &[&str] = &["method", "status", "url"];

fn outcome(export: &Path, ndjson: &Path) -> Outcome {
    let e: Value = serde_json::from_slice(&std::fs::read(export).unwrap()).unwrap();
    let mut checks = BTreeMap::new();
    for c in e["root_group"]["checks"]
        .as_object()
        .expect("checks")
        .values()
    {
        let n = |k: &str| c[k].as_u64().unwrap();
        checks.insert(
            c["name"].as_str().unwrap().to_string(),
            (n("passes"), n("fails")),
        );
    }
    let mut counters = BTreeMap::new();
    for name in COUNTED {
        if let Some(c) = e["metrics"][*name]["count"].as_u64() {
            counters.insert(name.to_string(), c);
        }
    }
    let mut points = BTreeMap::new();
    for line in std::fs::read_to_string(ndjson).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let metric = v["metric"].as_str().unwrap_or_default();
        let wanted = COUNTED.contains(&metric) || metric == "grpc_req_duration";
        if v["type"] != "Point" || !wanted {
            continue;
        }
        let tags = &v["data"]["tags"];
        let mut key = metric.to_string();
        for t in POINT_TAGS {
            if let Some(x) = tags[*t].as_str() {
                key.push_str(&format!(" {t}={x}"));
            }
        }
        *points.entry(key).or_insert(0) += 1;
    }
    Outcome {
        checks,
        counters,
        points,
    }
}

/// Run `tests/k6/NAME` with `env` under Volley and, when installed, k6; Volley's outcome, and
/// k6's when it ran.
fn both(name: &str, env: &[String]) -> (Outcome, Option<Outcome>) {
    let dir = common::scratch(&format!("k6-parity-protocols-{name}"));
    let script = repo().join("tests/k6").join(name);
    let script = script.to_str().unwrap();
    let mut env_args: Vec<&str> = Vec::new();
    for kv in env {
        env_args.extend(["-e", kv.as_str()]);
    }
    let (export, ndjson) = (dir.join("volley.json"), dir.join("volley.ndjson"));
    let out = format!("json={}", ndjson.display());
    let mut args = vec!["run", script, "-q", "--out", &out, "--summary-export"];
    args.push(export.to_str().unwrap());
    args.extend(&env_args);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "volley {name}: {}", stderr(&o));
    let volley = outcome(&export, &ndjson);
    let Some(k6) = k6() else {
        eprintln!("k6 not found (set K6=/path/to/k6): the k6 half of {name} skipped");
        return (volley, None);
    };
    let (export, ndjson) = (dir.join("k6.json"), dir.join("k6.ndjson"));
    let o = Command::new(k6)
        .args(["run", "-q", "--no-usage-report", "--address", "127.0.0.1:0"])
        .arg("--out")
        .arg(format!("json={}", ndjson.display()))
        .arg("--summary-export")
        .arg(&export)
        .args(&env_args)
        .arg(script)
        .env("K6_NO_USAGE_REPORT", "true")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "k6 {name}: {err}");
    (volley, Some(outcome(&export, &ndjson)))
}

/// k6's run (when there was one) passes the same checks with the same counts, and gives the
/// same series once `series` has mapped both sides' keys (None: a series left out).
fn same_as_k6(v: &Outcome, k: Option<Outcome>, series: impl Fn(&str) -> Option<String>) {
    let Some(k) = k else { return };
    all_pass(&k, "k6");
    assert_eq!(v.checks, k.checks, "checks: volley (left) vs k6 (right)");
    assert_eq!(
        v.counters, k.counters,
        "counts: volley (left) vs k6 (right)"
    );
    let map = |o: &Outcome| -> BTreeMap<String, u64> {
        o.points
            .iter()
            .filter_map(|(key, n)| Some((series(key)?, *n)))
            .collect()
    };
    assert_eq!(map(v), map(&k), "series: volley (left) vs k6 (right)");
}

fn all_pass(o: &Outcome, name: &str) {
    let failed: Vec<_> = o.checks.iter().filter(|(_, (_, f))| *f > 0).collect();
    assert!(failed.is_empty(), "{name}: failed checks {failed:?}");
}

#[test]
fn websocket_errors_behave_as_k6s() {
    let Some(evil) = python_server("pass", "tests/ws/evil_server.py", &[], "") else {
        eprintln!("SKIP: python3 not found");
        return;
    };
    let t = target();
    let env = [
        format!("BASE=http://{}", t.local_addr()),
        format!("EVIL=127.0.0.1:{}", evil.port),
    ];
    let (v, k) = both("parity_ws_errors.js", &env);
    all_pass(&v, "volley");
    assert_eq!(v.checks.len(), 12, "{:?}", v.checks);
    assert_eq!(v.checks.values().map(|c| c.0).sum::<u64>(), 17);
    // Every connect is a session, the two with a URL that is not ws(s):// included (k6 tags
    // them with the URL only: there was no handshake).
    assert_eq!(v.counters["ws_sessions"], 10);
    let http_session = format!("ws_sessions url=http://{}/ws/echo", t.local_addr());
    assert_eq!(v.points.get(&http_session), Some(&1), "{:?}", v.points);
    // ws_msgs_sent is left out on purpose: k6 also counts the frames its script writes after
    // close() (which fail with "websocket: close sent"); Volley counts what it sent.
    let evil = format!(":{}/", evil.port);
    let target = format!(":{}/", t.local_addr().port());
    same_as_k6(&v, k, |key| {
        Some(key.replace(&evil, ":EVIL/").replace(&target, ":TARGET/"))
    });
}

#[test]
fn grpc_example_flows_and_errors_behave_as_k6s() {
    let dir = common::scratch("k6-parity-protocols-grpc");
    let protos = repo().join("tests/peers");
    let pool = volley_grpc::proto::load(&[protos], &["route_guide.proto".into()]).unwrap();
    let protoset = dir.join("route_guide.protoset");
    std::fs::write(&protoset, pool.encode_to_vec()).unwrap();
    let probe = "import grpc, grpc_reflection";
    let Some(peer) = python_server(
        probe,
        "tests/peers/route_guide_server.py",
        &[protoset.as_os_str()],
        "",
    ) else {
        eprintln!("SKIP: python3 with grpcio and grpcio-reflection not found (pip install grpcio grpcio-reflection)");
        return;
    };
    let args = [protoset.as_os_str(), OsStr::new("noreflect")];
    let bare =
        python_server(probe, "tests/peers/route_guide_server.py", &args, "").expect("as above");
    let env = [
        format!("ADDR=127.0.0.1:{}", peer.port),
        format!("NOREFLECT=127.0.0.1:{}", bare.port),
    ];
    let (v, k) = both("parity_grpc.js", &env);
    all_pass(&v, "volley");
    assert_eq!(v.checks.len(), 9, "{:?}", v.checks);
    assert_eq!(v.checks.values().map(|c| c.0).sum::<u64>(), 18);
    // Per iteration: three streams; 1 + 5 + 2 messages sent (the one that did not encode is
    // not); 3 features + 1 summary + 1 note received.
    let want: BTreeMap<String, u64> = [
        ("grpc_streams", 6),
        ("grpc_streams_msgs_received", 10),
        ("grpc_streams_msgs_sent", 14),
        ("iterations", 2),
    ]
    .into_iter()
    .map(|(n, c)| (n.to_string(), c))
    .collect();
    assert_eq!(v.counters, want);
    // A client stream's one response comes with its status, as in k6 (grpc-go).
    let url = format!("url=127.0.0.1:{}/main.RouteGuide/RecordRoute", peer.port);
    let key = format!("grpc_streams_msgs_received method=RecordRoute status=0 {url}");
    assert_eq!(v.points.get(&key), Some(&2), "{:?}", v.points);
    // The call with a bad metadata key is INTERNAL (13), the stream whose message did not
    // encode UNKNOWN (2).
    let port = peer.port;
    for (method, status, path) in [
        ("GetFeature", 0, "main.FeatureExplorer/GetFeature"),
        ("GetFeature", 13, "main.FeatureExplorer/GetFeature"),
        ("RouteChat", 2, "main.RouteGuide/RouteChat"),
    ] {
        let key = format!(
            "grpc_req_duration method={method} status={status} url=127.0.0.1:{port}/{path}"
        );
        assert_eq!(v.points.get(&key), Some(&2), "{key}: {:?}", v.points);
    }
    // grpc-go refuses the bad metadata key before the call starts (no sample), the stream that
    // failed on its message records none, and k6 records its reflection calls (no method tag;
    // status 12, sometimes 0); Volley records the first two with their status, not the last.
    same_as_k6(&v, k, |key| {
        let skip = key.starts_with("grpc_req_duration")
            && !(key.contains("status=0") && key.contains("method="));
        (!skip).then(|| key.to_string())
    });
}
