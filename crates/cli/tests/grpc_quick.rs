//! `volley grpc` end to end against `volley target`'s gRPC service (volley.target.Target,
//! examples/grpc/target.proto): exact call counts, the status distribution, deadlines,
//! descriptors by reflection and from a protoset, bad input (proto, --call, -d), the result
//! file through `volley summary`/`compare`, A/B with --vs, the open model, a refused port, TLS;
//! and one run against the independent Python grpcio server (skipped when grpcio is absent).

mod common;
use common::*;
use std::path::PathBuf;
use std::time::Duration;

fn proto() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/grpc/target.proto")
}

fn addr(t: &volley_testserver::RunningTarget) -> String {
    t.local_addr().to_string()
}

/// `volley grpc ADDR --plaintext ARGS --json` within a minute: (exit code, summary, stderr).
fn grpc(addr: &str, args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let mut cmd = volley();
    cmd.args(["grpc", addr, "--plaintext"])
        .args(args)
        .arg("--json");
    let o = output_within(&mut cmd, Duration::from_secs(60));
    let j = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    (o.status.code(), j, stderr(&o))
}

/// `--proto examples/grpc/target.proto --call volley.target.Target/METHOD` and `rest`.
fn with_proto<'a>(method: &'a str, proto: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["--proto", proto, "--call", method];
    v.extend_from_slice(rest);
    v
}

#[test]
fn exact_call_counts_over_multiplexed_connections_and_the_result_file_round_trip() {
    let _serial = exclusive();
    let t = target();
    let dir = scratch("grpc-exact");
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    let p = proto().display().to_string();
    for file in [&a, &b] {
        let args = with_proto(
            "volley.target.Target/Echo",
            &p,
            &[
                "-d",
                r#"{"text":"hello"}"#,
                "-n",
                "500",
                "-c",
                "8",
                "--connections",
                "2",
                "--save",
                file.to_str().unwrap(),
            ],
        );
        let (code, j, err) = grpc(&addr(&t), &args);
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(j["requests"], 500, "{j}");
        assert_eq!(j["statuses"]["OK"], 500, "{j}");
        assert_eq!(j["statuses"].as_object().unwrap().len(), 1, "{j}");
        assert_eq!(j["errors"].as_object().unwrap().len(), 0, "{j}");
        // Eight callers multiplexed on two connections.
        assert_eq!(j["connections_opened"], 2, "{j}");
        assert_eq!(j["interrupted_requests"], 0, "{j}");
        // Each call carries at least its 7-byte request and the 5-byte frame prefix.
        assert!(j["bytes_sent"].as_u64().unwrap() > 500 * 12, "{j}");
        assert!(j["latency_ms"]["p50"].as_f64().unwrap() > 0.0, "{j}");
    }
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&a).unwrap()).unwrap();
    assert_eq!(file["meta"]["mode"], "grpc");
    assert_eq!(counter(&file, "grpc_reqs"), 500.0);
    assert_eq!(file["options"]["call"], "/volley.target.Target/Echo");
    let o = run(&["summary", a.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json(&o)["statuses"]["OK"], 500);
    let o = run(&["summary", a.to_str().unwrap()]);
    assert!(stdout(&o).contains("[OK] 500 responses"), "{}", stdout(&o));
    let o = run(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows = json(&o)["rows"].as_array().unwrap().clone();
    assert!(
        rows.iter().any(|r| r["metric"] == "grpc_req_duration"),
        "{rows:?}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn status_distribution_counts_the_servers_codes_by_name() {
    let _serial = exclusive();
    let t = target();
    let p = proto().display().to_string();
    let args = with_proto(
        "volley.target.Target/Fail",
        &p,
        &["-d", r#"{"code":14,"text":"down"}"#, "-n", "40", "-c", "4"],
    );
    let (code, j, err) = grpc(&addr(&t), &args);
    // A status the server sent is no transport error: exit 0, as `volley http` with 5xx.
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["statuses"]["UNAVAILABLE"], 40, "{j}");
    assert!(j["statuses"].get("OK").is_none(), "{j}");
    assert_eq!(j["errors"].as_object().unwrap().len(), 0, "{j}");
    // k6's grammar on gRPC's metrics: no OK at all crosses the threshold (exit 99).
    let mut args = args.clone();
    args.extend(["--threshold", "grpc_reqs{status:OK}:count>0"]);
    let (code, _, err) = grpc(&addr(&t), &args);
    assert_eq!(code, Some(99), "{err}");
    // An unknown metric is refused before the run.
    let mut args = args.clone();
    args.extend(["--threshold", "http_req_duration:p(95)<100"]);
    let (code, _, err) = grpc(&addr(&t), &args);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("grpc_req_duration"), "{err}");
}

#[test]
fn calls_past_their_deadline_are_deadline_exceeded_timeouts() {
    let _serial = exclusive();
    let t = target();
    let p = proto().display().to_string();
    let args = with_proto(
        "volley.target.Target/Slow",
        &p,
        &[
            "-d",
            r#"{"delayMs":2000}"#,
            "-n",
            "6",
            "-c",
            "3",
            "--deadline",
            "100ms",
        ],
    );
    let (code, j, err) = grpc(&addr(&t), &args);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(j["statuses"]["DEADLINE_EXCEEDED"], 6, "{j}");
    assert_eq!(j["errors"]["timeout"], 6, "{j}");
}

#[test]
fn reflection_and_protoset_give_the_same_method() {
    let _serial = exclusive();
    let t = target();
    let (code, j, err) = grpc(
        &addr(&t),
        &[
            "--reflect",
            "--call",
            "volley.target.Target.Echo",
            "-n",
            "50",
            "-c",
            "2",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["statuses"]["OK"], 50, "{j}");
    let dir = scratch("grpc-protoset");
    let set = dir.join("target.protoset");
    let pool = volley_grpc::proto::load(
        &[proto().parent().unwrap().to_path_buf()],
        &["target.proto".into()],
    )
    .unwrap();
    std::fs::write(&set, pool.encode_to_vec()).unwrap();
    let req = dir.join("req.json");
    std::fs::write(&req, r#"{"text": "from a file"}"#).unwrap();
    let data = format!("@{}", req.display());
    let (code, j, err) = grpc(
        &addr(&t),
        &[
            "--protoset",
            set.to_str().unwrap(),
            "--call",
            "volley.target.Target/Echo",
            "-d",
            &data,
            "-n",
            "50",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["statuses"]["OK"], 50, "{j}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn bad_proto_call_and_data_are_usage_errors_that_say_where() {
    let _serial = exclusive();
    let t = target();
    let dir = scratch("grpc-bad");
    let bad = dir.join("bad.proto");
    std::fs::write(
        &bad,
        "syntax = \"proto3\";\npackage b;\nmessage M {\n  strnig text = 1;\n}\n",
    )
    .unwrap();
    let (code, _, err) = grpc(
        &addr(&t),
        &["--proto", bad.to_str().unwrap(), "--call", "b.S/Get"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("bad.proto:4:3"), "{err}");
    let p = proto().display().to_string();
    let (code, _, err) = grpc(&addr(&t), &with_proto("volley.target.Target/Nope", &p, &[]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("volley.target.Target/Echo") && err.contains("volley.target.Target/Slow"),
        "{err}"
    );
    let (code, _, err) = grpc(
        &addr(&t),
        &with_proto("volley.target.Target/Count", &p, &[]),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("unary methods only"), "{err}");
    let (code, _, err) = grpc(
        &addr(&t),
        &with_proto(
            "volley.target.Target/Echo",
            &p,
            &["-d", "{\"text\": \"a\",\n \"nope\": 1}"],
        ),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("-d: ") && err.contains("line 2"), "{err}");
    // Addresses are host:port, not URLs (--vs's too), refused before anything is dialled.
    let (code, _, err) = grpc(
        &addr(&t),
        &with_proto(
            "volley.target.Target/Echo",
            &p,
            &["--vs", "http://127.0.0.1:1"],
        ),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--vs: 'http://127.0.0.1:1' is not an address"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn vs_compares_two_servers_round_by_round() {
    let _serial = exclusive();
    let (ta, tb) = (target(), target());
    let p = proto().display().to_string();
    let b = addr(&tb);
    let args = with_proto(
        "volley.target.Target/Echo",
        &p,
        &["-n", "200", "-c", "4", "--vs", &b, "--rounds", "2"],
    );
    let (code, j, err) = grpc(&addr(&ta), &args);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["a"]["rounds"].as_array().unwrap().len(), 2, "{j}");
    assert_eq!(j["b"]["rounds"][1]["statuses"]["OK"], 200, "{j}");
    let rows = j["comparison"].as_array().unwrap();
    let success = rows.iter().find(|r| r["metric"] == "success rate").unwrap();
    assert_eq!(success["a"], 1.0, "{j}");
    let rps = rows.iter().find(|r| r["metric"] == "requests/s").unwrap();
    assert!(rps["b"].as_f64().unwrap() > 0.0, "{j}");
}

#[test]
fn open_model_starts_every_call_due_before_the_deadline() {
    let _serial = exclusive();
    let t = target();
    let p = proto().display().to_string();
    let args = with_proto(
        "volley.target.Target/Echo",
        &p,
        &["-q", "200", "-z", "1s", "-c", "20"],
    );
    let (code, j, err) = grpc(&addr(&t), &args);
    assert_eq!(code, Some(0), "{err}");
    // Arrivals at 0, 5 ms, ... 995 ms: exactly 200 are due before the one-second deadline.
    assert_eq!(j["requests"], 200, "{j}");
    assert_eq!(j["dropped_requests"], 0, "{j}");
    assert_eq!(j["target_rate"], 200.0, "{j}");
}

#[test]
fn a_refused_port_is_a_connect_error_that_ends_a_counted_run() {
    let _serial = exclusive();
    let port = closed_port();
    let p = proto().display().to_string();
    let (code, j, err) = grpc(
        &format!("127.0.0.1:{port}"),
        &with_proto("volley.target.Target/Echo", &p, &["-n", "3", "-c", "1"]),
    );
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(j["errors"]["connect"], 3, "{j}");
    assert_eq!(j["statuses"]["UNAVAILABLE"], 3, "{j}");
}

#[test]
fn tls_needs_a_trusted_certificate_unless_insecure() {
    let _serial = exclusive();
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let t = target_with(
        Some(volley_testserver::TlsIdentity {
            cert_chain_pem: ck.cert.pem().into_bytes(),
            key_pem: ck.signing_key.serialize_pem().into_bytes(),
        }),
        None,
    );
    let p = proto().display().to_string();
    let tls = |extra: &[&str]| {
        let mut cmd = volley();
        cmd.args(["grpc", &addr(&t), "--json"])
            .args(with_proto(
                "volley.target.Target/Echo",
                &p,
                &["-n", "20", "-c", "2"],
            ))
            .args(extra);
        let o = output_within(&mut cmd, Duration::from_secs(60));
        let j = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
        (o.status.code(), j, stderr(&o))
    };
    // TLS is the default (ALPN h2); a self-signed certificate fails every connect.
    let (code, j, err) = tls(&[]);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(j["errors"]["connect"], 20, "{j}");
    let (code, j, err) = tls(&["--insecure"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["statuses"]["OK"], 20, "{j}");
    let dir = scratch("grpc-tls");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, ck.cert.pem()).unwrap();
    let (code, j, err) = tls(&["--cacert", ca.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["statuses"]["OK"], 20, "{j}");
    t.shutdown();
}

/// The Python grpcio server (tests/peers/grpc_server.py) on loopback, or None (skip).
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
    let server = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers/grpc_server.py");
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
fn independent_grpcio_server_answers_every_call() {
    let _serial = exclusive();
    let dir = scratch("grpc-peer");
    let set = dir.join("target.protoset");
    let pool = volley_grpc::proto::load(
        &[proto().parent().unwrap().to_path_buf()],
        &["target.proto".into()],
    )
    .unwrap();
    std::fs::write(&set, pool.encode_to_vec()).unwrap();
    let Some(peer) = python_peer(&set) else {
        eprintln!("SKIP: python3 with grpcio and grpcio-reflection not found (pip install grpcio grpcio-reflection)");
        return;
    };
    let a = format!("127.0.0.1:{}", peer.port);
    let (code, j, err) = grpc(
        &a,
        &[
            "--reflect",
            "--call",
            "volley.target.Target/Echo",
            "-d",
            r#"{"text":"peer"}"#,
            "-n",
            "300",
            "-c",
            "10",
            "-m",
            r#"{"x-id":"7"}"#,
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["statuses"]["OK"], 300, "{j}");
    let (code, j, err) = grpc(
        &a,
        &[
            "--protoset",
            set.to_str().unwrap(),
            "--call",
            "volley.target.Target/Fail",
            "-d",
            r#"{"code":5,"text":"gone"}"#,
            "-n",
            "20",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["statuses"]["NOT_FOUND"], 20, "{j}");
    drop(peer);
    std::fs::remove_dir_all(dir).ok();
}
