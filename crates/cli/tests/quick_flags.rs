//! The quick modes' shared flags (crates/cli/src/quick_flags.rs) where `volley ws` gained
//! them: `--threshold` in k6's grammar on ws metrics, `--out json=`, `--monitor`, and `--vs`
//! refused with a hint rather than accepted and ignored.

mod common;
use common::*;
use std::time::Duration;

fn ws(args: &[&str]) -> (Option<i32>, String) {
    let mut cmd = volley();
    cmd.arg("ws").args(args).arg("--quiet");
    let o = output_within(&mut cmd, Duration::from_secs(60));
    (o.status.code(), stderr(&o))
}

#[test]
fn ws_thresholds_are_judged_on_its_metrics() {
    let _serial = exclusive();
    let t = target();
    let url = format!("ws://{}/ws/echo", t.local_addr());
    let args = ["-n", "100", "-c", "2"];
    let (code, err) = ws(&[
        &[url.as_str()][..],
        &args,
        &["--threshold", "ws_msgs_received:count>=100"],
    ]
    .concat());
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = ws(&[
        &[url.as_str()][..],
        &args,
        &["--threshold", "ws_msgs_received:count>100"],
    ]
    .concat());
    assert_eq!(code, Some(99), "{err}");
    // A metric volley ws never records is refused before the run.
    let (code, err) = ws(&[
        &[url.as_str()][..],
        &args,
        &["--threshold", "http_req_duration:p(95)<1"],
    ]
    .concat());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("ws_rtt"), "{err}");
}

#[test]
fn ws_streams_samples_with_out_and_watches_with_monitor() {
    let _serial = exclusive();
    let t = target();
    let url = format!("ws://{}/ws/echo", t.local_addr());
    let dir = scratch("quick-flags-ws");
    let (out, saved) = (dir.join("samples.ndjson"), dir.join("run.json"));
    let out_flag = format!("json={}", out.display());
    let me = format!("pid:{}", std::process::id());
    let (code, err) = ws(&[
        &url,
        "-z",
        "1500ms",
        "-c",
        "2",
        "--out",
        &out_flag,
        "--monitor",
        &me,
        "--save",
        saved.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let lines = std::fs::read_to_string(&out).unwrap();
    assert!(
        lines.lines().any(|l| l.contains("\"ws_rtt\"")),
        "{lines:.400}"
    );
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&saved).unwrap()).unwrap();
    let names: Vec<&str> = file["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert!(names.contains(&"monitor_rss_bytes"), "{names:?}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn ws_refuses_vs_with_a_hint() {
    let (code, err) = ws(&["ws://127.0.0.1:1/", "--vs", "ws://127.0.0.1:2/"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--vs is not supported by volley ws") && err.contains("volley compare"),
        "{err}"
    );
}
