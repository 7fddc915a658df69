//! examples/crash (#18 item 5): the demo service under direct and chunked uploads is
//! SIGKILLed mid-run and restarted on its data; `volley verify` finds every acknowledged
//! upload byte-identical (exit 0, `lost: 0`), and finds the losses of the deliberately broken
//! client that acknowledges before writing (exit 6): the verifier can fail.

mod common;
use common::*;

fn harness(name: &str, ack_early: bool) -> (Option<i32>, String) {
    let work = scratch(name);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/crash/run.sh");
    let o = std::process::Command::new("sh")
        .arg(script)
        .env("VOLLEY", env!("CARGO_BIN_EXE_volley"))
        .env("PORT", closed_port().to_string())
        .env("WORK", &work)
        .env("DURATION", "4s")
        .env("KILL_AT", "2s")
        .env("DOWN_FOR", "1s")
        .env("ACK_EARLY", if ack_early { "1" } else { "0" })
        .output()
        .expect("sh runs");
    let text = format!("{}\n{}", stdout(&o), stderr(&o));
    let _ = std::fs::remove_dir_all(&work);
    (o.status.code(), text)
}

/// `lost: N` of the verify report.
fn lost(text: &str) -> u64 {
    let at = text
        .find(", lost: ")
        .unwrap_or_else(|| panic!("no report:\n{text}"));
    text[at + 8..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap()
}

#[test]
fn the_real_demo_service_loses_nothing_acknowledged_across_a_sigkill() {
    let (code, text) = harness("crash-real", false);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(lost(&text), 0, "{text}");
    assert!(text.contains("faults injected: 1"), "{text}");
    assert!(!text.contains("partial"), "{text}");
}

#[test]
fn a_client_that_acks_before_writing_is_caught_losing_data() {
    let (code, text) = harness("crash-broken", true);
    assert_eq!(code, Some(6), "{text}");
    assert!(lost(&text) > 0, "{text}");
}
