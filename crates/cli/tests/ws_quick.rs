//! `volley ws` end to end against `volley target`'s /ws/echo: exact message accounting,
//! the open model, errors by class (refused, handshake status, close by the peer), wss with
//! --insecure/--cacert, the result file, bad input; and examples/websocket/chat.js under
//! Volley and (when installed) k6.

mod common;
use common::*;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

fn ws_url(t: &volley_testserver::RunningTarget, path: &str) -> String {
    format!("ws://{}{path}", t.local_addr())
}

/// `volley ws ARGS --json` within a minute: (exit code, summary).
fn ws(args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let mut cmd = volley();
    cmd.arg("ws").args(args).arg("--json");
    let o = output_within(&mut cmd, Duration::from_secs(60));
    let j = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    (o.status.code(), j, stderr(&o))
}

#[test]
fn every_echo_is_matched_and_counted_exactly() {
    let _serial = exclusive();
    let t = target();
    let dir = scratch("ws-exact");
    let saved = dir.join("ws.json");
    let url = ws_url(&t, "/ws/echo");
    let (code, j, err) = ws(&[
        &url,
        "-n",
        "2000",
        "-c",
        "8",
        "--save",
        saved.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["messages_sent"], 2000);
    assert_eq!(j["messages_received"], 2000);
    assert_eq!(j["unanswered"], 0);
    assert_eq!(j["unmatched"], 0);
    assert_eq!(j["sessions"], 8);
    assert_eq!(j["errors"].as_object().unwrap().len(), 0, "{j}");
    assert!(j["rtt_ms"]["p50"].as_f64().unwrap() > 0.0);
    assert!(j["connecting_ms"]["max"].as_f64().unwrap() > 0.0);
    // Generated messages are 32 bytes: 2000 of them plus frame headers (masked: 6 bytes each)
    // and 8 upgrade requests.
    let sent = j["bytes_sent"].as_u64().unwrap();
    assert!(sent >= 2000 * 38, "{sent}");
    // The saved file holds the same counts and `volley summary` reads it back.
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&saved).unwrap()).unwrap();
    assert_eq!(file["meta"]["mode"], "ws");
    assert_eq!(counter(&file, "ws_msgs_received"), 2000.0);
    let o = run(&["summary", saved.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json(&o)["messages_received"], 2000);
    let o = run(&["summary", saved.to_str().unwrap()]);
    assert!(
        stdout(&o).contains("2000 sent, 2000 received"),
        "{}",
        stdout(&o)
    );
    t.shutdown();
}

#[test]
fn fixed_text_and_binary_messages_are_matched_in_order() {
    let _serial = exclusive();
    let t = target();
    let url = ws_url(&t, "/ws/echo");
    let (code, j, err) = ws(&[&url, "-n", "300", "-c", "3", "--message", "hello"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["messages_received"], 300);
    assert_eq!(j["unmatched"], 0);
    let dir = scratch("ws-binary");
    let file = dir.join("frame.bin");
    std::fs::write(&file, [0u8, 159, 146, 150, 255]).unwrap();
    let at = format!("@{}", file.display());
    let (code, j, err) = ws(&[&url, "-n", "50", "-c", "2", "--message", &at, "--binary"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["messages_received"], 50);
    assert_eq!(j["unanswered"], 0);
    // The same bytes as text are refused before the run, with a hint.
    let (code, _, err) = ws(&[&url, "-n", "5", "--message", &at]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--binary"), "{err}");
    t.shutdown();
}

#[test]
fn the_open_model_sends_on_schedule() {
    let _serial = exclusive();
    let t = target();
    let url = ws_url(&t, "/ws/echo");
    let (code, j, err) = ws(&[&url, "-q", "400", "-z", "2s", "-c", "4"]);
    assert_eq!(code, Some(0), "{err}");
    let sent = j["messages_sent"].as_u64().unwrap();
    // 400/s for 2 s: 800 due; a timer late at the very end may lose the last few.
    assert!((780..=800).contains(&sent), "{sent}");
    assert_eq!(j["messages_received"], sent);
    assert_eq!(j["target_rate"], 400.0);
    // Corrected round trips run from the due time: never shorter than from the send.
    assert!(j["rtt_ms"]["p50"].as_f64().unwrap() >= j["service_rtt_ms"]["p50"].as_f64().unwrap());
    t.shutdown();
}

/// `--inflight N`: N messages outstanding per connection, every one answered and counted.
#[test]
fn inflight_messages_are_all_matched_and_counted_exactly() {
    let _serial = exclusive();
    let t = target();
    let url = ws_url(&t, "/ws/echo");
    // Generated messages, matched by their sequence numbers.
    let (code, j, err) = ws(&[&url, "-n", "2000", "-c", "4", "--inflight", "8"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["messages_sent"], 2000, "{j}");
    assert_eq!(j["messages_received"], 2000);
    assert_eq!(j["unanswered"], 0);
    assert_eq!(j["unmatched"], 0);
    assert_eq!(j["sessions"], 4);
    assert_eq!(j["errors"].as_object().unwrap().len(), 0, "{j}");
    assert!(j["rtt_ms"]["p50"].as_f64().unwrap() > 0.0, "{j}");
    assert!(j["rtt_ms"]["max"].as_f64().unwrap() >= j["rtt_ms"]["p50"].as_f64().unwrap());
    // A fixed message, matched in order.
    let (code, j, err) = ws(&[&url, "-n", "801", "-c", "2", "--inflight", "32", "-m", "hi"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["messages_received"], 801, "{j}");
    assert_eq!(j["unmatched"], 0);
    assert!(j["rtt_ms"]["p50"].as_f64().unwrap() > 0.0, "{j}");
    // N really are outstanding together: the server closes on the first of each batch, so
    // each session loses 8 messages (with one in flight it would take 16 sessions).
    let (code, j, err) = ws(&[
        &url,
        "-n",
        "16",
        "-c",
        "1",
        "--inflight",
        "8",
        "-m",
        "!close 4001",
    ]);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(j["errors"]["closed 4001"], 2, "{j}");
    assert_eq!(j["sessions"], 2);
    assert_eq!(j["messages_sent"], 16);
    assert_eq!(j["unanswered"], 16);
    t.shutdown();
}

/// A message from the server that is not the fixed message sent is unmatched: it does not
/// stand in for an echo (no round trip recorded, the sends stay unanswered).
#[test]
fn a_message_that_is_no_echo_takes_no_echos_place() {
    let _serial = exclusive();
    let t = target();
    let url = ws_url(&t, "/ws/echo");
    // `!burst 2` makes the server send "burst 0" and "burst 1" instead of an echo.
    let (code, j, err) = ws(&[
        &url,
        "-n",
        "4",
        "-c",
        "1",
        "--inflight",
        "4",
        "-m",
        "!burst 2",
    ]);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(j["messages_sent"], 4, "{j}");
    assert_eq!(j["messages_received"], 8);
    assert_eq!(j["unmatched"], 8);
    assert_eq!(j["unanswered"], 4);
    assert_eq!(j["msgs_per_s"], 0.0, "no round trip may be recorded: {j}");
    t.shutdown();
}

/// Open model with a cap: a message due while `--inflight` are outstanding waits for a place
/// (a missed start when sent) and one never sent by the end is dropped; every arrival due
/// in the run is one or the other.
#[test]
fn the_open_model_with_inflight_counts_missed_and_dropped() {
    let _serial = exclusive();
    let t = target();
    let url = ws_url(&t, "/ws/echo");
    // `!ping` gets a ping, never an echo: the one place frees only when --timeout expires.
    let (code, j, err) = ws(&[
        &url,
        "-q",
        "100",
        "-z",
        "2s",
        "-c",
        "1",
        "--inflight",
        "1",
        "-m",
        "!ping",
        "--timeout",
        "500ms",
    ]);
    assert_eq!(code, Some(3), "{err}");
    let sent = j["messages_sent"].as_u64().unwrap();
    assert!((3..=5).contains(&sent), "{j}");
    assert_eq!(j["missed_starts"].as_u64().unwrap(), sent - 1, "{j}");
    let dropped = j["dropped"].as_u64().unwrap();
    assert!((198..=200).contains(&(sent + dropped)), "{j}");
    assert!(j["errors"]["timeout"].as_u64().unwrap() >= 2, "{j}");
    assert_eq!(j["messages_received"], 0);
    t.shutdown();
}

/// A server that goes away mid-run (its connections dropped, then nothing listening) is
/// counted as errors and ends the run on time: it neither hangs nor loses the accounting.
#[test]
fn a_server_gone_mid_run_is_an_error_not_a_hang() {
    let _serial = exclusive();
    let t = target();
    let url = ws_url(&t, "/ws/echo");
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(800));
        t.shutdown();
    });
    let start = std::time::Instant::now();
    let (code, j, err) = ws(&[&url, "-z", "3s", "-c", "4", "--inflight", "8"]);
    let took = start.elapsed();
    stopper.join().unwrap();
    assert_eq!(code, Some(3), "{err}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    let errors = j["errors"].as_object().unwrap();
    assert!(
        errors.get("refused").is_some_and(|n| n.as_u64() > Some(0)),
        "{j}"
    );
    let sent = j["messages_sent"].as_u64().unwrap();
    let received = j["messages_received"].as_u64().unwrap();
    assert!(received > 0, "{j}");
    // Every send is answered or counted lost; at most 8 per connection were in flight.
    let unanswered = j["unanswered"].as_u64().unwrap();
    assert_eq!(sent, received + unanswered, "{j}");
    assert!(unanswered <= 32, "{j}");
}

#[test]
fn errors_are_classified_and_fail_the_run() {
    let _serial = exclusive();
    let t = target();
    // A peer that closes with a code: each message costs one session.
    let url = ws_url(&t, "/ws/echo");
    let (code, j, err) = ws(&[&url, "-n", "4", "-c", "1", "--message", "!close 4001 bye"]);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(j["errors"]["closed 4001"], 4, "{j}");
    assert_eq!(j["unanswered"], 4);
    assert_eq!(j["sessions"], 4);
    // An endpoint that refuses the upgrade.
    let (code, j, err) = ws(&[&ws_url(&t, "/nope"), "-n", "3", "-c", "1"]);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(j["errors"]["handshake 404"], 3, "{j}");
    assert_eq!(j["messages_sent"], 0);
    // Nothing listening: connection refused, until -n is spent.
    let url = format!("ws://127.0.0.1:{}/", closed_port());
    let (code, j, err) = ws(&[&url, "-n", "5", "-c", "1"]);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(j["errors"]["refused"], 5, "{j}");
    // A server that drops the TCP connection without a close frame: 1006.
    let (code, j, _) = ws(&[
        &ws_url(&t, "/ws/echo"),
        "-n",
        "2",
        "-c",
        "1",
        "--message",
        "!drop",
    ]);
    assert_eq!(code, Some(3));
    assert_eq!(j["errors"]["closed 1006"], 2, "{j}");
    t.shutdown();
}

#[test]
fn wss_needs_a_trusted_certificate() {
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
    let url = format!("wss://{}/ws/echo", t.local_addr());
    let (code, j, _) = ws(&[&url, "-n", "3", "-c", "1"]);
    assert_eq!(code, Some(3));
    assert_eq!(j["errors"]["tls"], 3, "{j}");
    let (code, j, err) = ws(&[&url, "-n", "20", "-c", "2", "--insecure"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["messages_received"], 20);
    let dir = scratch("ws-tls");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, ck.cert.pem()).unwrap();
    let (code, j, err) = ws(&[
        &url,
        "-n",
        "20",
        "-c",
        "2",
        "--cacert",
        ca.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(j["messages_received"], 20);
    t.shutdown();
}

#[test]
fn bad_input_is_a_usage_error_with_a_hint() {
    for (args, needle) in [
        (vec!["http://127.0.0.1:1/"], "ws:// or wss://"),
        (
            vec!["ws://127.0.0.1:1/", "--message", "@/no/such/file"],
            "/no/such/file",
        ),
        (vec!["ws://127.0.0.1:1/", "--rate=-5"], "not a rate"),
        (vec!["ws://127.0.0.1:1/", "-H", "nocolon"], "no ':'"),
        (vec!["ws://127.0.0.1:1/", "--size", "4"], "16"),
    ] {
        let mut full = vec!["ws"];
        full.extend(&args);
        let o = run(&full);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

fn k6() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("K6") {
        return Some(PathBuf::from(p));
    }
    let peers = PathBuf::from(std::env::var_os("HOME")?).join(".cache/volley-peers/bin/k6");
    peers.is_file().then_some(peers)
}

fn chat_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/websocket/chat.js")
}

/// The chat example's checks and counts from a `--summary-export` file.
fn chat_counts(export: &std::path::Path) -> (serde_json::Value, serde_json::Value) {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(export).unwrap()).unwrap();
    let m = &v["metrics"];
    let counts = serde_json::json!({
        "checks_passes": m["checks"]["passes"],
        "checks_fails": m["checks"]["fails"],
        "heard": m["chat_lines_heard"]["count"],
        "sent": m["ws_msgs_sent"]["count"],
        "received": m["ws_msgs_received"]["count"],
        "sessions": m["ws_sessions"]["count"],
    });
    (counts, v)
}

#[test]
fn the_chat_example_gives_k6s_checks_and_counts() {
    let _serial = exclusive();
    let t = target();
    let base = format!("BASE=http://{}", t.local_addr());
    let dir = scratch("ws-chat");
    let ve = dir.join("volley.json");
    let o = run(&[
        "run",
        chat_script().to_str().unwrap(),
        "-q",
        "-e",
        &base,
        "-e",
        "ROOM=volley",
        "--summary-export",
        ve.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (v, _) = chat_counts(&ve);
    // 5 members × 3 lines, each heard by the 4 others and echoed to its sender.
    assert_eq!(v["heard"], 60, "{v}");
    assert_eq!(v["sent"], 15);
    assert_eq!(v["received"], 75);
    assert_eq!(v["checks_passes"], 20);
    assert_eq!(v["checks_fails"], 0);
    let Some(k6) = k6() else {
        eprintln!("k6 not found (set K6=/path/to/k6): the k6 half skipped");
        return;
    };
    let ke = dir.join("k6.json");
    let o = Command::new(k6)
        .args(["run", "-q", "--no-usage-report", "--address", "127.0.0.1:0"])
        .args(["-e", &base, "-e", "ROOM=k6", "--summary-export"])
        .arg(&ke)
        .arg(chat_script())
        .env("K6_NO_USAGE_REPORT", "true")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "k6: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(chat_counts(&ke).0, v, "k6 (left) vs volley (right)");
    t.shutdown();
}
