//! The same script under k6 and under Volley: `--summary-export` must name the same metrics
//! with the same counts. Runs only where a k6 binary is at hand (`K6=/path/to/k6`, `k6` on
//! PATH, or bench/install-peers.sh's ~/.cache/volley-peers/bin/k6); skipped otherwise.

mod common;

use common::{run, stderr, target};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn k6() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("K6") {
        return Some(PathBuf::from(p));
    }
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("k6"))
            .find(|f| f.is_file())
    });
    on_path.or_else(|| {
        let peers = PathBuf::from(std::env::var_os("HOME")?).join(".cache/volley-peers/bin/k6");
        peers.is_file().then_some(peers)
    })
}

fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/k6")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// What must agree: per metric, its kind-specific counts (counters' count, rates' passes and
/// fails, gauges' value); trends and byte counters only by presence.
fn counts(export: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, m) in export["metrics"].as_object().expect("metrics") {
        // Timing-dependent by nature: how many VUs were seen active in a sampling tick.
        if name == "vus" || name == "vus_max" {
            continue;
        }
        // Bytes differ by the clients' own headers (User-Agent, ...), which /echo echoes.
        let v = if name.starts_with("data_") {
            "bytes".to_string()
        } else if m.get("passes").is_some() {
            format!("passes={} fails={}", m["passes"], m["fails"])
        } else if m.get("count").is_some() {
            format!("count={}", m["count"])
        } else if m.get("avg").is_some() {
            "trend".to_string()
        } else {
            format!("value={}", m["value"])
        };
        out.push((name.clone(), v));
    }
    out.sort();
    out
}

/// Run `tests/k6/NAME` under k6 and under Volley against one built-in target: both
/// `--summary-export`s must have the same [`counts`]; Volley's export is returned.
fn same_counts_as_k6(k6: &PathBuf, name: &str) -> Value {
    let t = target();
    let dir = common::scratch(&format!("k6-parity-{name}"));
    let base = format!("BASE=http://{}", t.local_addr());
    let k6_export = dir.join("k6.json");
    let o = Command::new(k6)
        .args(["run", "-q", "--no-usage-report", "--address", "127.0.0.1:0"])
        .args(["-e", &base, "--summary-export"])
        .arg(&k6_export)
        .arg(script(name))
        .env("K6_NO_USAGE_REPORT", "true")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "k6: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v_export = dir.join("volley.json");
    let o = run(&[
        "run",
        &script(name),
        "-q",
        "-e",
        &base,
        "--summary-export",
        v_export.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "volley: {}", stderr(&o));
    let read =
        |p: &PathBuf| -> Value { serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap() };
    let (k, v) = (read(&k6_export), read(&v_export));
    assert_eq!(
        counts(&v),
        counts(&k),
        "{name}: volley (left) vs k6 (right)"
    );
    v
}

#[test]
fn summary_export_matches_k6_for_the_same_script() {
    let Some(k6) = k6() else {
        eprintln!("k6 not found (set K6=/path/to/k6): skipped");
        return;
    };
    let v = same_counts_as_k6(&k6, "parity.js");
    // Both requested the same: 10 + 24 requests.
    assert_eq!(v["metrics"]["http_reqs"]["count"], 34);
}

#[test]
fn websocket_scripts_give_k6s_checks_and_message_counts() {
    let Some(k6) = k6() else {
        eprintln!("k6 not found (set K6=/path/to/k6): skipped");
        return;
    };
    for (name, sent) in [
        ("ws_callback.js", 16),
        ("websockets.js", 34),
        ("ws_many.js", 840),
    ] {
        let v = same_counts_as_k6(&k6, name);
        assert_eq!(v["metrics"]["ws_msgs_sent"]["count"], sent, "{name}");
        // (ws_many.js has no checks.)
        let fails = &v["metrics"]["checks"]["fails"];
        assert!(fails.is_null() || *fails == 0, "{name}: {fails}");
    }
}

/// k6 v1.8.1's `--summary-export` numbers for tests/k6/percentiles.js (the custom trends get
/// fixed values), obtained with
/// `k6 run -q --summary-export k6.json tests/k6/percentiles.js` on 2026-11-25: exit code 0,
/// the threshold `p(95)<2500` on t32 not crossed. They equal k6's formula (metrics/sink.go,
/// TrendSink.P) over the script's values.
const K6_TRENDS: &str = r#"{
  "t32": {"avg": 1455.3027276785717, "count": 32, "max": 2622.1225714285715,
    "med": 1571.5823571428573, "min": 19.967285714285715, "p(1)": 74.5292342857143,
    "p(90)": 2343.166771428572, "p(95)": 2456.552721428571, "p(99)": 2605.583982857143,
    "p(99.9)": 2620.468712571429},
  "t1032": {"avg": 1452.0373250276868, "count": 1032, "max": 2850.3751428571427,
    "med": 1466.8337142857142, "min": 1.453, "p(1)": 33.75097285714286,
    "p(90)": 2575.796542857143, "p(95)": 2696.148664285714, "p(99)": 2803.8146085714284,
    "p(99.9)": 2844.293991142857}
}"#;

/// The trend statistics of t32 and t1032 in a summary export, without the thresholds.
fn trend_stats(export: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for name in ["t32", "t1032"] {
        let mut m = export["metrics"][name].clone();
        if let Some(o) = m.as_object_mut() {
            o.remove("thresholds");
        }
        out.insert(name.to_string(), m);
    }
    Value::Object(out)
}

#[test]
fn trend_percentiles_of_32_and_1032_samples_equal_k6s_to_the_last_bit() {
    let dir = common::scratch("k6-percentiles");
    let (export, saved) = (dir.join("volley.json"), dir.join("run.json"));
    let o = run(&[
        "run",
        &script("percentiles.js"),
        "-q",
        "--summary-export",
        export.to_str().unwrap(),
        "--save",
        saved.to_str().unwrap(),
    ]);
    // p(95) of t32 is 2456.55 (k6's interpolation); the nearest-rank histogram bucket Volley
    // used before said 2569.x and crossed `p(95)<2500`: exit code 99.
    assert_eq!(o.status.code(), Some(0), "volley: {}", stderr(&o));
    let v: Value = serde_json::from_slice(&std::fs::read(&export).unwrap()).unwrap();
    let k6_numbers: Value = serde_json::from_str(K6_TRENDS).unwrap();
    assert_eq!(
        trend_stats(&v),
        k6_numbers,
        "volley (left) vs k6 v1.8.1 (right)"
    );
    assert_eq!(v["metrics"]["t32"]["thresholds"]["p(95)<2500"], false);
    // The saved result file gives the same numbers again.
    let o = run(&["summary", saved.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "summary: {}", stderr(&o));
    let again: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(trend_stats(&again), k6_numbers, "volley summary of --save");
    // handleSummary's data (k6 v1.8.1 prints the same JSON for this script).
    let o = run(&["run", "-q", &script("percentiles_handle_summary.js")]);
    assert_eq!(o.status.code(), Some(0), "handleSummary: {}", stderr(&o));
    let data: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(data, k6_numbers, "handleSummary data");
    // With k6 at hand, the same script under k6 gives these numbers today too.
    if let Some(k6) = k6() {
        let k6_export = dir.join("k6.json");
        let o = Command::new(&k6)
            .args(["run", "-q", "--no-usage-report", "--address", "127.0.0.1:0"])
            .arg("--summary-export")
            .arg(&k6_export)
            .arg(script("percentiles.js"))
            .env("K6_NO_USAGE_REPORT", "true")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "k6: {}", stderr(&o));
        let k: Value = serde_json::from_slice(&std::fs::read(&k6_export).unwrap()).unwrap();
        assert_eq!(
            trend_stats(&v),
            trend_stats(&k),
            "volley (left) vs k6 (right)"
        );
    }
}

/// The checks' passes and fails (and `iterations`, `csv_rows_streamed`) of an export.
fn check_counts(export: &Value) -> Vec<(String, String)> {
    let keep = ["checks", "iterations", "csv_rows_streamed"];
    counts(export)
        .into_iter()
        .filter(|(n, _)| keep.contains(&n.as_str()))
        .collect()
}

#[test]
fn typescript_and_data_module_scripts_match_k6() {
    let Some(k6) = k6() else {
        eprintln!("k6 not found (set K6=/path/to/k6): skipped");
        return;
    };
    let dir = common::scratch("k6-ts-data");
    for name in ["typescript.ts", "data_files.js"] {
        let (k_path, v_path) = (dir.join("k6.json"), dir.join("volley.json"));
        let k = Command::new(&k6)
            .args(["run", "-q", "--no-usage-report", "--address", "127.0.0.1:0"])
            .arg("--summary-export")
            .args([&k_path, &PathBuf::from(script(name))])
            .output()
            .unwrap();
        let v = run(&["run", "-q", &script(name), "--summary-export"]
            .into_iter()
            .chain([v_path.to_str().unwrap()])
            .collect::<Vec<_>>());
        assert_eq!(v.status.code(), k.status.code(), "{name}: {}", stderr(&v));
        let read =
            |p: &PathBuf| -> Value { serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap() };
        let (kc, vc) = (check_counts(&read(&k_path)), check_counts(&read(&v_path)));
        assert_eq!(vc, kc, "{name}: volley (left) vs k6 (right)");
        assert!(kc.iter().any(|(n, _)| n == "checks"), "{kc:?}");
    }
}

#[test]
fn grpc_scripts_give_k6s_checks_and_message_counts() {
    let Some(k6) = k6() else {
        eprintln!("k6 not found (set K6=/path/to/k6): skipped");
        return;
    };
    // (script, checks that pass, stream messages received or None)
    for (name, passes, received) in [
        ("grpc_unary.js", 36, None),
        ("grpc_streams.js", 8, Some(18)),
        ("grpc_reflection.js", 8, None),
        ("grpc_errors.js", 13, None),
    ] {
        let v = same_counts_as_k6(&k6, name);
        assert_eq!(v["metrics"]["checks"]["passes"], passes, "{name}");
        assert_eq!(v["metrics"]["checks"]["fails"], 0, "{name}");
        if let Some(n) = received {
            assert_eq!(
                v["metrics"]["grpc_streams_msgs_received"]["count"], n,
                "{name}"
            );
        }
    }
}
