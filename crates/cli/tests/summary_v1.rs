//! k6 v1's end-of-test summary (`--summary-mode compact|full|legacy`, `K6_SUMMARY_MODE`):
//! Volley's text compared line by line with k6 v1.8.1's output of the same script, recorded
//! in tests/k6/summary_v1/ (and live when a k6 binary is at hand: `K6=/path/to/k6`, `k6` on
//! PATH, or ~/.cache/volley-peers/bin/k6). Numbers differ run to run, so the comparison keeps
//! the structure: section titles, metric names and order, dots, indentation, stat names,
//! check lines and marks.

mod common;

use common::{run, stderr, stdout, target};
use std::path::PathBuf;
use std::process::Command;

fn k6_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/k6")
}

fn script(name: &str) -> String {
    k6_dir().join(name).to_string_lossy().into_owned()
}

fn recorded(name: &str) -> String {
    std::fs::read_to_string(k6_dir().join("summary_v1").join(name)).expect("recorded k6 output")
}

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

/// A summary with its values blanked: `avg=12.5ms` → `avg=`, `60.00%` → `#`, `3 out of 5` →
/// `# out of #`, units dropped, spaces collapsed. The VU gauges are left out: k6 samples them
/// once a second, so a sub-second run may have none.
fn shape(text: &str) -> Vec<String> {
    let units = ["B", "kB", "MB", "GB", "B/s", "kB/s", "MB/s", "GB/s"];
    text.lines()
        .filter(|l| {
            let t = l.trim_start();
            !(t.starts_with("vus.") || t.starts_with("vus_max."))
        })
        .map(|l| {
            let indent = l.len() - l.trim_start().len();
            let (key, rest) = match l.find("...: ") {
                Some(i) => (&l[..i + 5], &l[i + 5..]),
                None => (&l[..indent], &l[indent..]),
            };
            let toks: Vec<String> = rest
                .split_whitespace()
                .filter(|t| !units.contains(t))
                .map(|t| {
                    if let Some(i) = t.find('=').filter(|_| !t.starts_with('\'')) {
                        t[..=i].to_string()
                    } else if t.starts_with(|c: char| c.is_ascii_digit()) {
                        if t.ends_with("/s") { "#/s" } else { "#" }.to_string()
                    } else {
                        t.to_string()
                    }
                })
                .collect();
            format!("{key}{}", toks.join(" ")).trim_end().to_string()
        })
        .collect()
}

fn assert_same_shape(volley: &str, k6: &str, what: &str) {
    let (v, k) = (shape(volley), shape(k6));
    for (i, (a, b)) in v.iter().zip(&k).enumerate() {
        assert_eq!(
            a,
            b,
            "{what}: line {} differs\n--- volley:\n{volley}\n--- k6:\n{k6}",
            i + 1
        );
    }
    assert_eq!(
        v.len(),
        k.len(),
        "{what}: line count\n--- volley:\n{volley}\n--- k6:\n{k6}"
    );
}

fn volley_run(name: &str, args: &[&str]) -> String {
    let t = target();
    let base = format!("BASE=http://{}", t.local_addr());
    let mut all = vec!["run", "-e", &base];
    all.extend(args);
    let path = script(name);
    all.push(&path);
    let o = run(&all);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    stdout(&o)
}

#[test]
fn compact_summary_is_k6_v1_layout_by_default() {
    assert_same_shape(
        &volley_run("summary_v1.js", &[]),
        &recorded("summary_v1.compact.k6.txt"),
        "summary_v1.js compact",
    );
    assert_same_shape(
        &volley_run("checks.js", &["--summary-mode", "compact"]),
        &recorded("checks.compact.k6.txt"),
        "checks.js compact",
    );
}

#[test]
fn full_summary_has_k6_v1_group_and_scenario_sections() {
    assert_same_shape(
        &volley_run("summary_v1.js", &["--summary-mode", "full"]),
        &recorded("summary_v1.full.k6.txt"),
        "summary_v1.js full",
    );
    assert_same_shape(
        &volley_run("checks.js", &["--summary-mode", "full"]),
        &recorded("checks.full.k6.txt"),
        "checks.js full",
    );
}

#[test]
fn checks_are_listed_in_first_seen_order() {
    let text = volley_run("summary_v1.js", &[]);
    let at = |s: &str| {
        text.find(s)
            .unwrap_or_else(|| panic!("{s} missing:\n{text}"))
    };
    // Recorded zeta → alpha → outer → inner → the later scenario's check; not by name.
    assert!(at("✓ zeta first") < at("✓ alpha second"), "{text}");
    assert!(at("✓ alpha second") < at("✓ in outer"), "{text}");
    assert!(at("✗ in inner fails") < at("✓ is 404"), "{text}");
}

#[test]
fn legacy_mode_keeps_the_pre_1_0_layout() {
    let t = target();
    let base = format!("BASE=http://{}", t.local_addr());
    let o = common::volley()
        .args(["run", "-e", &base, &script("checks.js")])
        .env("K6_SUMMARY_MODE", "legacy")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(!text.contains("█ TOTAL RESULTS"), "{text}");
    assert!(text.contains("   checks...."), "{text}");
    // The flag wins over the environment, as in k6.
    let o = common::volley()
        .args([
            "run",
            "-e",
            &base,
            "--summary-mode",
            "full",
            &script("checks.js"),
        ])
        .env("K6_SUMMARY_MODE", "legacy")
        .output()
        .unwrap();
    assert!(stdout(&o).contains("█ TOTAL RESULTS"), "{}", stdout(&o));
    assert!(stdout(&o).contains("http_req_waiting"), "{}", stdout(&o));
}

#[test]
fn bad_summary_mode_is_a_usage_error() {
    let o = run(&["run", "--summary-mode", "short", &script("checks.js")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = common::volley()
        .args(["run", &script("checks.js")])
        .env("K6_SUMMARY_MODE", "short")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("K6_SUMMARY_MODE='short': expected compact, full or legacy"),
        "{}",
        stderr(&o)
    );
}

/// With k6 at hand: both tools, the same script, the same target, the same structure.
#[test]
fn summary_matches_k6_live() {
    let Some(k6) = k6() else {
        eprintln!("k6 not found: skipped");
        return;
    };
    let t = target();
    let base = format!("http://{}", t.local_addr());
    for mode in ["compact", "full"] {
        let o = Command::new(&k6)
            .args([
                "run",
                "--quiet",
                "--summary-mode",
                mode,
                &script("summary_v1.js"),
            ])
            .env("BASE", &base)
            .env("K6_NO_USAGE_REPORT", "true")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v = volley_run("summary_v1.js", &["--summary-mode", mode]);
        assert_same_shape(&v, &stdout(&o), &format!("live {mode}"));
    }
}

/// Every key path of a JSON value (array items as `[]`), the VU gauges left out (see `shape`).
fn key_paths(v: &serde_json::Value, at: &str, out: &mut std::collections::BTreeSet<String>) {
    match v {
        serde_json::Value::Object(o) => {
            for (k, x) in o {
                let p = format!("{at}.{k}");
                if p == ".metrics.vus" || p == ".metrics.vus_max" {
                    continue;
                }
                out.insert(p.clone());
                key_paths(x, &p, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| key_paths(x, &format!("{at}[]"), out)),
        _ => {}
    }
}

/// root_group as a list of paths, in the order k6 gives them.
fn tree_order(g: &serde_json::Value, out: &mut Vec<String>) {
    for c in g["checks"].as_array().expect("checks array") {
        out.push(c["path"].as_str().unwrap_or_default().to_string());
    }
    for s in g["groups"].as_array().expect("groups array") {
        out.push(s["path"].as_str().unwrap_or_default().to_string());
        tree_order(s, out);
    }
}

#[test]
fn handle_summary_data_has_k6_v1_shape_and_first_seen_order() {
    let k6: serde_json::Value = serde_json::from_str(&recorded("data.k6.json")).unwrap();
    let text = volley_run("summary_v1_data.js", &[]);
    let v: serde_json::Value = serde_json::from_str(&text).expect("handleSummary's JSON");
    let (mut kk, mut vk) = Default::default();
    key_paths(&k6, "", &mut kk);
    key_paths(&v, "", &mut vk);
    assert_eq!(vk, kk, "key paths differ");
    let (mut ko, mut vo) = (Vec::new(), Vec::new());
    tree_order(&k6["root_group"], &mut ko);
    tree_order(&v["root_group"], &mut vo);
    assert_eq!(vo, ko, "root_group order");
}

/// k6 lists groups in the order they were first entered, checks or not.
#[test]
fn groups_are_listed_in_first_entered_order() {
    let dir = common::scratch("summary-v1-group-order");
    let path = dir.join("gorder.js");
    std::fs::write(
        &path,
        "import { check, group } from 'k6';\n\
         export const options = { iterations: 1 };\n\
         export default function () {\n\
           group('zz', () => {});\n\
           group('aa', () => { check(1, { one: (v) => v === 1 }); });\n\
         }\n\
         export function handleSummary(data) {\n\
           return { stdout: JSON.stringify(data.root_group.groups.map((g) => g.name)) };\n\
         }\n",
    )
    .unwrap();
    let o = run(&["run", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // k6 v1.8.1 prints ["zz","aa"] for this script.
    assert_eq!(stdout(&o).trim(), r#"["zz","aa"]"#);
    let _ = std::fs::remove_dir_all(&dir);
}
