//! `volley run` behaving as k6 decides (issue #13, sections 5 and 6): module paths relative to
//! the importing module, `handleSummary` outputs, setup/teardown groups, zero durations, and
//! the per-response body cap; and (issue #15 item 7) `res.proto` of HTTP/1.0 responses and the
//! zero `data_sent`/`data_received` of a run without requests.

mod common;

use common::{stderr, stdout, volley};
use std::path::Path;

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A tree where the wrong resolution finds a different file than the right one: every
/// `lib.js` and `data.txt` says where it is.
fn module_tree(name: &str) -> common::Scratch {
    let d = common::scratch(name);
    for dir in ["", "a/", "a/b/"] {
        write(
            &d,
            &format!("{dir}lib.js"),
            &format!("export const who = 'lib@{dir}';"),
        );
    }
    for dir in ["a/b/", "x/y/", "lib/"] {
        write(&d, &format!("{dir}data.txt"), &format!("data@{dir}"));
    }
    write(
        &d,
        "x/y/z.js",
        "export const z = 'z@x/y/';\nexport const data = open('./data.txt');\n",
    );
    // A re-export across folders: lib/re.js names ../x/y/z.js relative to itself.
    write(&d, "lib/re.js", "export * from '../x/y/z.js';\n");
    write(
        &d,
        "lib/helper.js",
        "export function readIt(p) { return open(p); }\n",
    );
    write(
        &d,
        "lib/c.js",
        "module.exports = { d: open('./data.txt') };\n",
    );
    write(
        &d,
        "x/y/w.js",
        "const zz = require('./z.js');\nexport const viaRequire = zz.z;\n",
    );
    write(
        &d,
        "a/b/main.js",
        r#"import { who } from '../../lib.js';
import { z, data } from '../../lib/re.js';
import { readIt } from '../../lib/helper.js';
import { viaRequire } from '../../x/y/w.js';
const c = require('../../lib/c.js');
const helper = readIt('./data.txt');
export const options = { iterations: 1, vus: 1 };
export default function () {}
export function handleSummary() {
  return { stdout: [who, z, data, helper, c.d, viaRequire].join('|') };
}
"#,
    );
    d
}

/// k6 resolves imports (and re-exports) against the importing module and `open()` against
/// the module whose init code runs (the file being `require()`d, else the bottom frame), from
/// whatever directory the run starts in. Before: `../../lib.js` from `a/b/main.js` run in
/// `a/b` was normalised to `lib.js` (the wrong file), `lib/re.js`'s `../x/y/z.js` failed,
/// and `open()` in `x/y/z.js` read `a/b/data.txt`.
#[test]
fn imports_and_open_resolve_relative_to_the_module_from_any_directory() {
    let d = module_tree("modres");
    let want = "lib@|z@x/y/|data@x/y/|data@a/b/|data@lib/|z@x/y/";
    for (cwd, arg) in [
        (d.join("a/b"), "main.js".to_string()),
        (d.join("a"), "b/main.js".to_string()),
        (d.to_path_buf(), "./a/b/main.js".to_string()),
        (
            std::env::temp_dir(),
            d.join("a/b/main.js").to_string_lossy().into_owned(),
        ),
    ] {
        let o = volley()
            .current_dir(&cwd)
            .args(["run", "-q", &arg])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{arg}: {}", stderr(&o));
        assert_eq!(stdout(&o), want, "run {arg} in {}", cwd.display());
    }
}

/// `volley run -d 0s` used to run "2 iterations shared among 2 VUs"; k6 refuses the
/// configuration with exit 104, and so does `options.duration: '0s'` (and `-i 0`).
#[test]
fn zero_duration_exits_104_as_k6() {
    let d = common::scratch("zero-dur");
    write(&d, "nop.js", "export default function () {}\n");
    write(
        &d,
        "d0.js",
        "export const options = { vus: 2, duration: '0s' };\nexport default function () {}\n",
    );
    // `-i 0` is k6's configuration error too (it was a flag-parsing error, exit 2).
    let o = volley()
        .current_dir(&d)
        .args(["run", "-q", "-i", "0", "nop.js"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(104), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("the number of iterations (0) can't be less than the number of VUs (1)"),
        "{}",
        stderr(&o)
    );
    for args in [
        vec!["run", "-q", "-u", "2", "-d", "0s", "nop.js"],
        vec!["run", "-q", "d0.js"],
    ] {
        let o = volley().current_dir(&d).args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(104), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("`duration` option should be more than 0"),
            "{}",
            stderr(&o)
        );
        assert!(!stdout(&o).contains("iterations"), "{}", stdout(&o));
    }
}

/// An output that cannot be written (here a path under a regular file) no longer stops the
/// ones after it: as k6, every output is tried, the failures are reported together and the
/// exit code stays k6's (0).
#[test]
fn handle_summary_write_error_does_not_stop_the_other_outputs() {
    let d = common::scratch("hs-write");
    write(&d, "blocker", "a file, not a directory");
    write(
        &d,
        "hs.js",
        r#"export const options = { iterations: 1 };
export default function () {}
export function handleSummary() {
  return { 'blocker/x.txt': 'lost', 'ok.txt': 'kept', stdout: 'S', 'b.bin': new Uint8Array([104, 105]) };
}
"#,
    );
    let o = volley()
        .current_dir(&d)
        .args(["run", "hs.js"])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(stdout(&o), "S");
    assert_eq!(std::fs::read_to_string(d.join("ok.txt")).unwrap(), "kept");
    assert_eq!(std::fs::read_to_string(d.join("b.bin")).unwrap(), "hi");
    assert!(
        err.contains("could not save some summary information")
            && err.contains("could not write 'blocker/x.txt'"),
        "{err}"
    );
}

/// k6 accepts only a string or an ArrayBuffer per output and writes nothing when one is
/// anything else; Volley used to print `42`. The error names the key and the type, and the
/// default summary is shown instead (as for a throwing handleSummary).
#[test]
fn handle_summary_rejects_non_string_values() {
    let d = common::scratch("hs-types");
    for (value, kind) in [("42", "number"), ("{ a: 1 }", "object"), ("null", "null")] {
        write(
            &d,
            "hs.js",
            &format!(
                "export const options = {{ iterations: 1 }};\nexport default function () {{}}\n\
                 export function handleSummary() {{ return {{ 'ok.txt': 'x', stdout: {value} }}; }}\n"
            ),
        );
        let _ = std::fs::remove_file(d.join("ok.txt"));
        let o = volley()
            .current_dir(&d)
            .args(["run", "hs.js"])
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert!(
            err.contains(&format!(
                "error handling summary object stdout: invalid type {kind}, it needs to be a \
                 string or ArrayBuffer"
            )),
            "{value}: {err}"
        );
        assert!(!d.join("ok.txt").exists(), "{value}: nothing is written");
        assert!(stdout(&o).contains("iterations"), "{}", stdout(&o));
    }
}

/// k6 tags what `setup()`/`teardown()` record with `group: "::setup"`/`"::teardown"`, so
/// their checks (and groups) sit under those groups in `root_group`; Volley filed them under
/// the root. The expected paths and ids are k6 v1.8.1's for this script.
#[test]
fn setup_and_teardown_checks_are_under_their_k6_groups() {
    let d = common::scratch("setup-groups");
    write(
        &d,
        "su.js",
        r#"import { check, group } from 'k6';
import { Counter } from 'k6/metrics';
const c = new Counter('mine');
export const options = { iterations: 1 };
export function setup() {
  check(1, { 'setup ok': (v) => v === 1 });
  group('g', () => { check(1, { 'in g': () => true }); });
  c.add(1);
}
export default function () { check(1, { 'main ok': () => true }); }
export function teardown() { check(1, { 'teardown ok': () => true }); }
"#,
    );
    let o = volley()
        .current_dir(&d)
        .args([
            "run",
            "-q",
            "--summary-export",
            "exp.json",
            "--out",
            "json=out.json",
            "su.js",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("exp.json")).unwrap()).unwrap();
    let root = &e["root_group"];
    let check = |g: &serde_json::Value, name: &str| -> (String, String) {
        let c = &g["checks"][name];
        assert_eq!(c["passes"], 1, "{name}: {g}");
        (
            c["path"].as_str().unwrap().to_string(),
            c["id"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(
        check(root, "main ok"),
        (
            "::main ok".into(),
            "3d11cbb5cc793b44b558882dc5a6fad5".into()
        )
    );
    assert!(root["checks"].get("setup ok").is_none(), "{root}");
    let setup = &root["groups"]["setup"];
    assert_eq!(setup["path"], "::setup");
    assert_eq!(setup["id"], "5c0f8025f7e0b6654089e5b00e950f1a");
    assert_eq!(
        check(setup, "setup ok"),
        (
            "::setup::setup ok".into(),
            "77124ba589ff022294235b26618aa71a".into()
        )
    );
    assert_eq!(
        check(&setup["groups"]["g"], "in g"),
        (
            "::setup::g::in g".into(),
            "de83b25dee95b70a9021df4302e1530f".into()
        )
    );
    let teardown = &root["groups"]["teardown"];
    assert_eq!(teardown["id"], "a8a9942382e8ffe2e56ef29e664b8229");
    assert_eq!(
        check(teardown, "teardown ok"),
        (
            "::teardown::teardown ok".into(),
            "3adf4db828c74a5873bd279041fa99c9".into()
        )
    );
    // Every sample from setup carries the tag, custom metrics too (as k6's NDJSON).
    let ndjson = std::fs::read_to_string(d.join("out.json")).unwrap();
    let point = |metric: &str, want: &str| {
        assert!(
            ndjson.lines().any(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["type"] == "Point" && v["metric"] == metric && v["data"]["tags"]["group"] == want
            }),
            "no {metric} point with group {want}:\n{ndjson}"
        );
    };
    point("mine", "::setup");
    point("group_duration", "::setup::g");
    point("checks", "::teardown");
}

/// A raw server whose responses never end: a chunked body, 64 KiB per chunk (`fast`) or
/// 1 KiB every 20 ms (`trickle`), until the client goes away or 20 s pass.
fn endless(s: std::net::TcpStream, trickle: bool) {
    use std::io::Write;
    let mut s = s;
    if !common::read_head(&mut s) {
        return;
    }
    let size: usize = if trickle { 1024 } else { 64 * 1024 };
    let mut chunk = format!("{size:x}\r\n").into_bytes();
    chunk.extend(std::iter::repeat_n(b'z', size));
    chunk.extend_from_slice(b"\r\n");
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    while std::time::Instant::now() < end {
        if s.write_all(&chunk).is_err() {
            return;
        }
        if trickle {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

const CAP_SCRIPT: &str = r#"import http from 'k6/http';
import { check } from 'k6';
export const options = { vus: 1, iterations: 3, maxResponseBodySize: '1MiB' };
export default function () {
  const r = http.get(__ENV.URL, { timeout: '3s' });
  check(r, {
    'failed with 1790': (r) => r.error_code === 1790,
    'no body': (r) => r.body === null,
    'says why': (r) => r.error.includes(`response body larger than the ${__ENV.CAP} limit`),
  });
}
"#;

/// An endless response body used to be buffered until the request timeout (gigabytes with a
/// few VUs); now a request stops at `maxResponseBodySize` / `--max-response-body` with
/// error_code 1790, and only about the cap is read per request (counted in data_received).
#[test]
fn endless_response_body_stops_at_the_cap_with_error_1790() {
    let port = common::raw_server(8, std::time::Duration::from_secs(30), |s| endless(s, false));
    let d = common::scratch("body-cap");
    write(&d, "cap.js", CAP_SCRIPT);
    let url = format!("URL=http://127.0.0.1:{port}/");
    for (extra, cap, bytes) in [
        (vec![], "1 MiB", 1u64 << 20),
        (vec!["--max-response-body", "256KiB"], "256 KiB", 256 << 10),
    ] {
        let cap_env = format!("CAP={cap}");
        let mut args = vec!["run", "-q", "--summary-export", "exp.json"];
        args.extend(&extra);
        args.extend(["-e", &url, "-e", &cap_env, "cap.js"]);
        let o = volley().current_dir(&d).args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let e: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("exp.json")).unwrap()).unwrap();
        let m = &e["metrics"];
        assert_eq!(m["checks"]["passes"], 9, "{cap}: {}", e["root_group"]);
        assert_eq!(m["checks"]["fails"], 0, "{cap}: {}", e["root_group"]);
        assert_eq!(m["http_req_failed"]["passes"], 3, "{m}");
        let received = m["data_received"]["count"].as_f64().unwrap() as u64;
        assert!(
            received > 3 * bytes && received < 3 * (bytes + (256 << 10)),
            "{cap}: {received} bytes received"
        );
    }
}

/// The hard stop (end of gracefulStop) cuts a response still arriving: a body that trickles
/// in for longer than the request timeout allows does not hold the run past its end. (A
/// guard: this already held; the issue's overrun came from buffering, fixed above.)
#[test]
fn hard_stop_cuts_a_response_still_arriving() {
    let port = common::raw_server(4, std::time::Duration::from_secs(30), |s| endless(s, true));
    let d = common::scratch("body-hard-stop");
    write(
        &d,
        "slow.js",
        r#"import http from 'k6/http';
export const options = { scenarios: { s: { executor: 'constant-vus', vus: 1, duration: '1s', gracefulStop: '0s' } } };
export default function () { http.get(__ENV.URL); }
"#,
    );
    let t0 = std::time::Instant::now();
    let o = volley()
        .current_dir(&d)
        .args([
            "run",
            "-e",
            &format!("URL=http://127.0.0.1:{port}/"),
            "slow.js",
        ])
        .output()
        .unwrap();
    let took = t0.elapsed();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The request timeout is 60 s and the server trickles for 20 s: ending before that
    // can only be the hard stop.
    assert!(took < std::time::Duration::from_secs(15), "took {took:?}");
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(all.contains("0 complete, 1 interrupted"), "{all}");
}

/// A server that answers every request with an HTTP/1.0 response and closes.
fn http10(mut s: std::net::TcpStream) {
    use std::io::Write;
    if common::read_head(&mut s) {
        let _ = s.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
    }
}

/// Regression (#15 item 7): `res.proto` and the `proto` tag said HTTP/1.1 for an HTTP/1.0
/// response; k6 reports the version the response came with.
#[test]
fn http10_response_reports_proto_http10() {
    let port = common::raw_server(4, std::time::Duration::from_secs(30), http10);
    let d = common::scratch("proto-http10");
    write(
        &d,
        "p.js",
        r#"import http from 'k6/http';
import { check } from 'k6';
export const options = { iterations: 2, thresholds: { 'http_reqs{proto:HTTP/1.0}': ['count>0'] } };
export default function () {
  const r = http.get(__ENV.URL);
  check(r, { 'body ok': (r) => r.body === 'ok', 'proto 1.0': (r) => r.proto === 'HTTP/1.0' });
}
export function handleSummary(d) {
  return { stdout: JSON.stringify({ checks: d.metrics.checks.values,
    tagged: d.metrics['http_reqs{proto:HTTP/1.0}'].values }) };
}
"#,
    );
    let o = volley()
        .args(["run", "-q", "-e"])
        .arg(format!("URL=http://127.0.0.1:{port}/"))
        .arg(d.join("p.js"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("summary JSON");
    assert_eq!(v["checks"]["passes"], 4, "{v}");
    assert_eq!(v["checks"]["fails"], 0, "{v}");
    assert_eq!(v["tagged"]["count"], 2, "{v}");
}

/// Regression (#15 item 7): without an HTTP request `data_sent`/`data_received` were missing
/// from handleSummary's data and `--summary-export`; k6 always has them, with zero values
/// (`{"type":"counter","contains":"data","values":{"count":0,"rate":0}}` from k6 v1.8.1).
#[test]
fn data_sent_and_received_are_reported_without_requests() {
    let d = common::scratch("no-data");
    write(
        &d,
        "n.js",
        r#"export const options = { iterations: 2 };
export default function () {}
export function handleSummary(d) {
  return { stdout: JSON.stringify({ sent: d.metrics.data_sent, received: d.metrics.data_received }) };
}
"#,
    );
    let export = d.join("export.json");
    let o = volley()
        .args(["run", "-q", "--summary-export"])
        .arg(&export)
        .arg(d.join("n.js"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("summary JSON");
    let zero = serde_json::json!({"type": "counter", "contains": "data",
                                  "values": {"count": 0, "rate": 0}});
    assert_eq!(v["sent"], zero, "{v}");
    assert_eq!(v["received"], zero, "{v}");
    let e: serde_json::Value = serde_json::from_slice(&std::fs::read(&export).unwrap()).unwrap();
    for m in ["data_sent", "data_received"] {
        assert_eq!(
            e["metrics"][m],
            serde_json::json!({"count": 0, "rate": 0}),
            "{e}"
        );
    }
}

/// Regression (#15 item 7): a request that got no response said `res.proto` "HTTP/1.1" and
/// tagged its samples `proto=HTTP/1.1`; k6 v1.8.1 gives "" and no `proto` tag (checked with
/// `k6 run --out json` against a closed port).
#[test]
fn failed_request_has_no_proto() {
    let port = common::closed_port();
    let d = common::scratch("proto-none");
    write(
        &d,
        "f.js",
        r#"import http from 'k6/http';
import { check } from 'k6';
export const options = { iterations: 1 };
export default function () {
  check(http.get(__ENV.URL), { 'proto empty': (r) => r.proto === '' && r.status === 0 });
}
"#,
    );
    let out = d.join("out.json");
    let o = volley()
        .args(["run", "-q", "-e"])
        .arg(format!("URL=http://127.0.0.1:{port}/"))
        .arg("--out")
        .arg(format!("json={}", out.display()))
        .arg(d.join("f.js"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let point = |name: &str| {
        lines
            .iter()
            .find(|v| v["type"] == "Point" && v["metric"] == name)
            .unwrap_or_else(|| panic!("no {name} point in {text}"))
            .clone()
    };
    let reqs = point("http_reqs");
    assert_eq!(reqs["data"]["tags"]["status"], "0", "{reqs}");
    assert!(reqs["data"]["tags"].get("proto").is_none(), "{reqs}");
    assert_eq!(point("checks")["data"]["value"], 1.0, "{text}");
}
