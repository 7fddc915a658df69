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

#[test]
fn summary_export_matches_k6_for_the_same_script() {
    let Some(k6) = k6() else {
        eprintln!("k6 not found (set K6=/path/to/k6): skipped");
        return;
    };
    let t = target();
    let dir = common::scratch("k6-parity");
    let base = format!("BASE=http://{}", t.local_addr());
    let k6_export = dir.join("k6.json");
    let o = Command::new(&k6)
        .args(["run", "-q", "--no-usage-report", "--address", "127.0.0.1:0"])
        .args(["-e", &base, "--summary-export"])
        .arg(&k6_export)
        .arg(script("parity.js"))
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
        &script("parity.js"),
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
    assert_eq!(counts(&v), counts(&k), "volley (left) vs k6 (right)");
    // Both requested the same: 10 + 24 requests.
    assert_eq!(v["metrics"]["http_reqs"]["count"], 34);
}
