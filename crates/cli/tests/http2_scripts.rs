//! HTTP/2 in `volley run`: https requests negotiate h2 by ALPN as k6 does (`res.proto`
//! "HTTP/2.0", the `proto` tag), a VU keeps its connection and multiplexes a batch on it;
//! `wss://` stays on HTTP/1.1. `tests/k6/http2.js` against the built-in target over TLS.

mod common;
use common::*;

fn tls_target() -> volley_testserver::RunningTarget {
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    target_with(
        Some(volley_testserver::TlsIdentity {
            cert_chain_pem: ck.cert.pem().into_bytes(),
            key_pem: ck.signing_key.serialize_pem().into_bytes(),
        }),
        None,
    )
}

fn script(name: &str) -> String {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/k6")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn https_requests_speak_h2_on_one_connection_per_vu() {
    let t = tls_target();
    let dir = scratch("http2-scripts");
    let export = dir.join("summary.json");
    let base = format!("BASE=https://127.0.0.1:{}", t.local_addr().port());
    let o = run(&[
        "run",
        &script("http2.js"),
        "-q",
        "-e",
        &base,
        "--summary-export",
        export.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&export).unwrap()).unwrap();
    let m = &v["metrics"];
    assert_eq!(m["checks"]["fails"], 0, "{}", stderr(&o));
    assert_eq!(m["checks"]["passes"], 14);
    // 12 requests per iteration, each counted once.
    assert_eq!(m["http_reqs"]["count"], 24);
    assert_eq!(
        t.stats().requests,
        24 + 2,
        "and one WebSocket upgrade per iteration"
    );
    // One h2 connection for the VU's 24 requests (the batch of 10 multiplexed on it, the
    // second iteration reusing it) and one HTTP/1.1 connection per wss session.
    assert_eq!(t.stats().connections, 3);
    assert!(m["data_received"]["count"].as_f64().unwrap() > 0.0);
    t.shutdown();
}

#[test]
fn the_response_body_limit_applies_over_h2() {
    let t = tls_target();
    let dir = scratch("http2-body-limit");
    let js = dir.join("limit.js");
    std::fs::write(
        &js,
        r#"import http from "k6/http";
import { check } from "k6";
export const options = { iterations: 1, insecureSkipTLSVerify: true, maxResponseBodySize: 1000 };
export default function () {
  check(http.get(`${__ENV.BASE}/bytes/900`), { "h2 under the limit": (r) => r.proto === "HTTP/2.0" && r.body.length === 900 });
  check(http.get(`${__ENV.BASE}/bytes/50000`), { "over the limit: an error": (r) => r.status === 0 && r.error_code !== 0 });
}
"#,
    )
    .unwrap();
    let export = dir.join("summary.json");
    let base = format!("BASE=https://127.0.0.1:{}", t.local_addr().port());
    let o = run(&[
        "run",
        js.to_str().unwrap(),
        "-q",
        "-e",
        &base,
        "--summary-export",
        export.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&export).unwrap()).unwrap();
    assert_eq!(v["metrics"]["checks"]["passes"], 2, "{}", stderr(&o));
    t.shutdown();
}

/// A batch of 8 https requests as a VU's first call, through a TLS front offering `alpn`:
/// (the protos the responses report, connections the front accepted).
fn first_batch(alpn: &[&[u8]]) -> (Vec<String>, usize) {
    let t = target();
    let pki = volley_testkit::Pki::new();
    let front = volley_testkit::TlsFront::start(
        volley_testkit::FrontConfig {
            cert: pki.server.0.clone(),
            key: pki.server.1.clone(),
            client_ca: None,
            alpn: alpn.iter().map(|p| p.to_vec()).collect(),
        },
        t.local_addr(),
    );
    let dir = scratch("http2-first-batch");
    let js = dir.join("batch.js");
    std::fs::write(
        &js,
        r#"import http from "k6/http";
export const options = { iterations: 1, insecureSkipTLSVerify: true };
export default function () {
  const reqs = [];
  for (let i = 0; i < 8; i++) reqs.push(["GET", `${__ENV.BASE}/delay/100`]);
  console.log("PROTOS=" + http.batch(reqs).map((r) => `${r.status} ${r.proto}`).join(",") + ";");
}
"#,
    )
    .unwrap();
    let base = format!("BASE=https://{}", front.addr());
    let o = run(&["run", js.to_str().unwrap(), "-q", "-e", &base]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let line = err
        .lines()
        .find_map(|l| l.split("PROTOS=").nth(1))
        .unwrap_or_else(|| panic!("{err}"));
    let line = line.split(';').next().unwrap_or_default();
    let protos = line.split(',').map(String::from).collect();
    let accepted = front.accepted();
    t.shutdown();
    (protos, accepted)
}

/// Regression (#16 item 1): the batch dialled a connection per request (6 at once, then
/// kept one) before any h2 connection to the origin existed. Now the first request dials
/// and the others wait for its ALPN answer: h2 → all 8 multiplexed on that one connection.
#[test]
fn a_first_batch_over_h2_waits_for_one_connection() {
    let (protos, accepted) = first_batch(&[b"h2", b"http/1.1"]);
    assert_eq!(protos, vec!["200 HTTP/2.0".to_string(); 8]);
    assert_eq!(accepted, 1, "one TLS connection for the whole batch");
}

/// The same batch against an HTTP/1.1-only server: after the first answer the others dial
/// their own connections, in parallel (`batchPerHost` 6 at a time).
#[test]
fn a_first_batch_over_http1_still_gets_parallel_connections() {
    let (protos, accepted) = first_batch(&[b"http/1.1"]);
    assert_eq!(protos, vec!["200 HTTP/1.1".to_string(); 8]);
    assert!(accepted >= 6, "{accepted} connections");
}
