//! WebSockets against an independent server: tests/ws/echo_server.py (the `websockets` PyPI
//! package), started by the test. The conformance scripts of tests/k6/ (k6/ws, k6/websockets,
//! many VUs) and `volley ws` give the counts they give against `volley target`; where k6 is
//! installed, k6 gives the same. Skipped with a message when python3 or the package is absent
//! (.ci/run installs it).
//!
//! One difference is the server's own: `websockets` answers a ping as soon as it reads it,
//! before its handler echoes the messages sent just before, so a pong can overtake two
//! echoes. websockets.js closes on the pong, and k6 neither dispatches nor counts messages
//! that arrive once closing: each iteration where that happens fails its "events in order"
//! check and receives 2 messages fewer. The test asserts exactly that relation.

mod common;
use common::*;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn py_server() -> Option<PyServer> {
    py_server_with(&[])
}

/// The Python server started with `args` (e.g. `--deflate`).
fn py_server_with(args: &[&str]) -> Option<PyServer> {
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    let server = python_server(
        "import websockets",
        "tests/ws/echo_server.py",
        &args,
        "listening ",
    );
    if server.is_none() {
        eprintln!("SKIP: python3 with the `websockets` package not found (pip install websockets)");
    }
    server
}

fn k6() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("K6") {
        return Some(PathBuf::from(p));
    }
    let peers = PathBuf::from(std::env::var_os("HOME")?).join(".cache/volley-peers/bin/k6");
    peers.is_file().then_some(peers)
}

/// Run tests/k6/NAME with BASE (HTTP parts: `volley target`) and WS (the Python server) under
/// `tool` ("volley" or a k6 path); the summary export.
fn export(tool: Option<&PathBuf>, name: &str, base: &str, ws: &str) -> Value {
    export_env(tool, name, base, ws, &[])
}

/// [`export`] with more `-e` variables.
fn export_env(
    tool: Option<&PathBuf>,
    name: &str,
    base: &str,
    ws: &str,
    env: &[(&str, &str)],
) -> Value {
    let dir = scratch(&format!("ws-indep-{name}"));
    let path = dir.join(if tool.is_some() {
        "k6.json"
    } else {
        "volley.json"
    });
    let script = repo().join("tests/k6").join(name);
    let mut cmd = match tool {
        Some(k6) => {
            let mut c = Command::new(k6);
            c.args(["run", "-q", "--no-usage-report", "--address", "127.0.0.1:0"])
                .env("K6_NO_USAGE_REPORT", "true");
            c
        }
        None => {
            let mut c = volley();
            c.args(["run", "-q"]);
            c
        }
    };
    cmd.args(["-e", &format!("BASE={base}"), "-e", &format!("WS={ws}")])
        .args(
            env.iter()
                .flat_map(|(k, v)| ["-e".to_string(), format!("{k}={v}")]),
        )
        .arg("--summary-export")
        .arg(&path)
        .arg(&script);
    let o = output_within(&mut cmd, Duration::from_secs(120));
    assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// Failed checks by name in a summary export.
fn failed_checks(v: &Value) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut groups = vec![&v["root_group"]];
    while let Some(g) = groups.pop() {
        if let Some(checks) = g["checks"].as_object() {
            for c in checks.values() {
                let fails = c["fails"].as_u64().unwrap_or(0);
                if fails > 0 {
                    out.push((c["name"].as_str().unwrap_or("").to_string(), fails));
                }
            }
        }
        if let Some(gs) = g["groups"].as_object() {
            groups.extend(gs.values());
        }
    }
    out
}

fn count(v: &Value, metric: &str) -> u64 {
    v["metrics"][metric]["count"].as_u64().unwrap_or(0)
}

/// The counts against `volley target` (crates/js/tests/websockets.rs), with the server's
/// ping race accounted for (see the module docs).
fn assert_counts(who: &str, name: &str, v: &Value) {
    let fails = failed_checks(v);
    let order: u64 = fails
        .iter()
        .filter(|(n, _)| n.ends_with("events in order"))
        .map(|(_, f)| f)
        .sum();
    let other: Vec<_> = fails
        .iter()
        .filter(|(n, _)| !n.ends_with("events in order"))
        .collect();
    assert!(other.is_empty(), "{who} {name}: failed checks {other:?}");
    let (sent, received, sessions) = (
        count(v, "ws_msgs_sent"),
        count(v, "ws_msgs_received"),
        count(v, "ws_sessions"),
    );
    match name {
        "ws_callback.js" => assert_eq!((sent, received, sessions), (16, 12, 12), "{who}"),
        "websockets.js" => {
            assert_eq!((sent, sessions), (34, 18), "{who}");
            // An iteration whose pong beats its echoes closes before them: once closing,
            // arriving messages are not counted (k6), so it loses the text, the binary or both.
            assert!(
                (16 - 2 * order..=16 - order).contains(&received),
                "{who}: {received} received with {order} iterations raced"
            );
        }
        _ => assert_eq!((sent, received, sessions), (840, 800, 80), "{who} {name}"),
    }
}

#[test]
fn conformance_scripts_count_the_same_against_python_websockets() {
    let Some(py) = py_server() else { return };
    let _serial = exclusive();
    let t = target();
    let base = format!("http://{}", t.local_addr());
    let ws = format!("ws://127.0.0.1:{}/", py.port);
    let k6 = k6();
    if k6.is_none() {
        eprintln!("k6 not found (set K6=/path/to/k6): the k6 half skipped");
    }
    for name in ["ws_callback.js", "websockets.js", "ws_many.js"] {
        assert_counts("volley", name, &export(None, name, &base, &ws));
        if let Some(k6) = &k6 {
            assert_counts("k6", name, &export(Some(k6), name, &base, &ws));
        }
    }
    t.shutdown();
}

#[test]
fn volley_ws_counts_every_echo_of_python_websockets() {
    let Some(py) = py_server() else { return };
    let _serial = exclusive();
    let url = format!("ws://127.0.0.1:{}/echo", py.port);
    for extra in [&[][..], &["--binary", "--size", "200"][..]] {
        let mut cmd = volley();
        cmd.args(["ws", &url, "-n", "1000", "-c", "4", "--json"])
            .args(extra);
        let o = output_within(&mut cmd, Duration::from_secs(60));
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let j = json(&o);
        assert_eq!(j["messages_sent"], 1000, "{extra:?}");
        assert_eq!(j["messages_received"], 1000, "{extra:?}");
        assert_eq!(j["unanswered"], 0);
        assert_eq!(j["unmatched"], 0);
        assert_eq!(j["sessions"], 4);
    }
    // The server's close with a code, from an independent implementation.
    let mut cmd = volley();
    cmd.args([
        "ws",
        &url,
        "-n",
        "2",
        "-c",
        "1",
        "--json",
        "--message",
        "!close 4003 x",
    ]);
    let o = output_within(&mut cmd, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert_eq!(json(&o)["errors"]["closed 4003"], 2);
}

/// permessage-deflate against the `websockets` package with compression on (tests/k6/
/// ws_deflate.js: k6/ws and k6/websockets, text and binary, small and over 64 KiB, a binary
/// the server fragments): negotiated with k6's parameters, every message equal, the same
/// counts as uncompressed; the wire bytes both ways are a fraction of the uncompressed run's
/// (data_received/data_sent count compressed bytes, as k6). A server without compression
/// declines the offer: a plain connection, the same messages and bytes as uncompressed.
/// Where k6 is installed it gives the same checks and counts, and the bytes received (±1%).
/// `volley ws --compression deflate` matches every echo, in a fraction of the bytes.
#[test]
fn deflate_round_trips_against_python_websockets() {
    let Some(zip) = py_server_with(&["--deflate"]) else {
        return;
    };
    let Some(plain) = py_server() else { return };
    let _serial = exclusive();
    let t = target();
    let base = format!("http://{}", t.local_addr());
    let zip_url = format!("ws://127.0.0.1:{}/", zip.port);
    let plain_url = format!("ws://127.0.0.1:{}/", plain.port);
    let k6 = k6();
    if k6.is_none() {
        eprintln!("k6 not found (set K6=/path/to/k6): the k6 half skipped");
    }
    let name = "ws_deflate.js";
    let mut received = Vec::new();
    for tool in std::iter::once(None).chain(k6.as_ref().map(Some)) {
        let who = if tool.is_some() { "k6" } else { "volley" };
        let on = export_env(tool, name, &base, &zip_url, &[("EXPECT_DEFLATE", "1")]);
        let off = export_env(tool, name, &base, &zip_url, &[("COMPRESSION", "")]);
        let declined = export_env(tool, name, &base, &plain_url, &[]);
        for (run, v) in [
            ("deflate", &on),
            ("uncompressed", &off),
            ("declined", &declined),
        ] {
            assert_eq!(failed_checks(v), vec![], "{who} {run}");
            let counts = (
                count(v, "ws_msgs_sent"),
                count(v, "ws_msgs_received"),
                count(v, "ws_sessions"),
            );
            assert_eq!(counts, (16, 14, 4), "{who} {run}");
        }
        for metric in ["data_received", "data_sent"] {
            let (zipped, full) = (count(&on, metric), count(&off, metric));
            assert!(
                zipped * 5 < full,
                "{who} {metric}: {zipped} compressed, {full} not"
            );
            let declined = count(&declined, metric);
            assert!(
                declined.abs_diff(full) < full / 100,
                "{who} {metric}: {declined} vs {full}"
            );
        }
        received.push(count(&on, "data_received"));
    }
    // Quick mode: every echo matched with and without --compression; fewer bytes with it.
    let url = format!("{zip_url}echo");
    let mut bytes = Vec::new();
    for extra in [&["--compression", "deflate"][..], &[][..]] {
        let mut cmd = volley();
        cmd.args([
            "ws", &url, "-n", "400", "-c", "2", "--size", "2000", "--json",
        ])
        .args(extra);
        let o = output_within(&mut cmd, Duration::from_secs(60));
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let j = json(&o);
        assert_eq!(j["messages_received"], 400, "{extra:?}");
        assert_eq!(j["unmatched"], 0, "{extra:?}");
        bytes.push((j["bytes_sent"].as_u64(), j["bytes_received"].as_u64()));
    }
    let ((Some(zs), Some(zr)), (Some(ps), Some(pr))) = (bytes[0], bytes[1]) else {
        panic!("{bytes:?}")
    };
    assert!(zs * 5 < ps && zr * 5 < pr, "{bytes:?}");
    // The server compresses alike for both clients (the close frames may differ by a few bytes).
    if let [volley, k6] = received[..] {
        assert!(
            volley.abs_diff(k6) < k6 / 100,
            "data_received: volley {volley}, k6 {k6}"
        );
    }
    t.shutdown();
}
