//! Hostile result files: every reader (`summary`, `report`, `compare`) gives the same clear
//! verdict (exit 1, the file name, where in the file, a hint), quickly and in bounded memory.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A real result file of a short quick-mode run.
fn saved(dir: &Path) -> Value {
    let t = target();
    let p = dir.join("good.json");
    let url = format!("{}/", t.url());
    let o = run(&[
        "http",
        &url,
        "-n",
        "50",
        "-c",
        "2",
        "--quiet",
        "--save",
        p.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    t.shutdown();
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

/// Standard base64 (the test crate has no base64 dependency).
fn b64(data: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                s.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// An uncompressed HDR V2 histogram of Volley's bounds holding `counts` from value 0 on.
fn v2(counts: &[u64]) -> String {
    let mut payload = Vec::new();
    for &c in counts {
        let mut v = c << 1; // zig-zag of a non-negative count
        while v >= 0x80 {
            payload.push(v as u8 | 0x80);
            v >>= 7;
        }
        payload.push(v as u8);
    }
    let mut b = Vec::new();
    b.extend(0x1c84_9313u32.to_be_bytes());
    b.extend((payload.len() as u32).to_be_bytes());
    b.extend(0u32.to_be_bytes());
    b.extend(3u32.to_be_bytes());
    b.extend(1u64.to_be_bytes());
    b.extend(3_600_000_000u64.to_be_bytes());
    b.extend(1.0f64.to_be_bytes());
    b.extend(payload);
    b64(&b)
}

fn trend(r: &mut Value) -> &mut Value {
    r["metrics"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|m| m["name"] == "http_req_duration")
        .unwrap()
}

/// Run `volley ARGS` under a 2 GiB address-space limit; returns (exit code, stderr).
fn limited(args: &[&str]) -> (Option<i32>, String) {
    let mut cmd = format!("ulimit -v 2097152; exec '{}'", env!("CARGO_BIN_EXE_volley"));
    for a in args {
        cmd.push_str(&format!(" '{a}'"));
    }
    let o = std::process::Command::new("sh")
        .args(["-c", &cmd])
        .output()
        .unwrap();
    (o.status.code(), stderr(&o))
}

/// summary, report and compare (as base and as new) on `bad`: one verdict.
fn assert_rejected_by_every_reader(dir: &Path, good: &Path, bad: &Path, what: &str) {
    let (b, g) = (bad.to_str().unwrap(), good.to_str().unwrap());
    let html = dir.join("r.html");
    let start = std::time::Instant::now();
    for args in [
        vec!["summary", b],
        vec!["summary", b, "--json"],
        vec!["report", b, "-o", html.to_str().unwrap()],
        vec!["compare", g, b],
        vec!["compare", b, g],
    ] {
        let (code, err) = limited(&args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(err.contains(b), "{args:?}: names the file: {err}");
        assert!(err.contains(what), "{args:?}: says '{what}': {err}");
        assert!(err.contains("hint:"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(
        start.elapsed() < std::time::Duration::from_secs(60),
        "five reads of a small file"
    );
}

fn write(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string(v).unwrap()).unwrap();
    p
}

#[test]
fn hostile_result_files_get_the_same_clear_error_from_every_reader() {
    let dir = scratch("hostile-results");
    let base = saved(&dir);
    let good = write(&dir, "good.json", &base);
    let mut cases: Vec<(&str, Value, &str)> = Vec::new();

    // Counts that add up past 2^63: aborted `summary` with a huge allocation, passed `report`.
    let mut r = base.clone();
    let t = trend(&mut r);
    t["hist"] = json!(v2(&[0, 0, 1 << 62, 1 << 62, 1 << 62]));
    t["count"] = json!(u64::MAX);
    cases.push(("absurd", r, "metrics["));
    // A histogram that does not hold the count the file states.
    let mut r = base.clone();
    trend(&mut r)["hist"] = json!(v2(&[0, 5]));
    cases.push(("count", r, "holds 5 samples"));
    // Truncated base64.
    let mut r = base.clone();
    let t = trend(&mut r);
    let h = t["hist"].as_str().unwrap().to_string();
    t["hist"] = json!(h[..h.len() / 2].to_string());
    cases.push(("truncated", r, "http_req_duration).hist"));
    // Negative duration, min above max, trues above total, a wrong type.
    let mut r = base.clone();
    r["meta"]["duration_s"] = json!(-5.0);
    cases.push(("negative", r, "meta.duration_s"));
    let mut r = base.clone();
    let t = trend(&mut r);
    t["min"] = json!(10.0);
    t["max"] = json!(1.0);
    cases.push(("minmax", r, "min 10 is above max 1"));
    let mut r = base.clone();
    for m in r["metrics"].as_array_mut().unwrap() {
        if m["kind"] == "rate" {
            m["trues"] = json!(m["total"].as_u64().unwrap() + 1);
        }
    }
    cases.push(("rate", r, "exceed total"));
    let mut r = base.clone();
    trend(&mut r)["sum"] = json!("lots");
    cases.push(("type", r, "line 1, column"));
    // A zero series bucket width made merging loop forever.
    let mut r = base.clone();
    r["series"]["bucket_s"] = json!(0);
    cases.push(("bucket", r, "series.bucket_s"));
    // A series table whose column does not fit its buckets.
    let mut r = base.clone();
    r["series"]["table"][0]["t"] = json!([0, 0]);
    cases.push(("table", r, "series.table[0]"));

    for (name, v, what) in &cases {
        let bad = write(&dir, &format!("bad-{name}.json"), v);
        assert_rejected_by_every_reader(&dir, &good, &bad, what);
    }
    // Not files at all: a directory, an endless device.
    assert_rejected_by_every_reader(&dir, &good, &dir, "is a directory");
    assert_rejected_by_every_reader(&dir, &good, Path::new("/dev/zero"), "does not start with");
}

#[test]
fn oversized_result_files_are_refused_before_being_read() {
    let dir = scratch("huge-result");
    let p = dir.join("huge.json");
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(300 << 20).unwrap(); // sparse: costs no disk
    let (code, err) = limited(&["summary", p.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("256 MiB"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Files of result-file version 1 (point lists, written before the series table) read in
/// every command, merge with version 2 files, and come out of a merge as version 2.
#[test]
fn version_1_files_still_summarise_report_compare_and_merge() {
    let dir = scratch("v1-results");
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/result_file");
    let v1 = seeds.join("quick.json");
    let text = std::fs::read_to_string(&v1).unwrap();
    assert!(
        text.contains("\"version\":1"),
        "the fixture is a version 1 file"
    );
    let f = v1.to_str().unwrap();
    for (args, shows) in [
        (vec!["summary", f], "Requests:      200"),
        (vec!["compare", f, f], "http_req_duration"),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).contains(shows), "{args:?}: {}", stdout(&o));
    }
    let html = dir.join("r.html");
    let o = run(&["report", v1.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Merge a version 1 file with itself rewritten as version 2 (forced: same segment).
    let v2 = dir.join("v2.json");
    let o = run(&[
        "merge",
        v1.to_str().unwrap(),
        "-o",
        v2.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let both = dir.join("both.json");
    let o = run(&[
        "merge",
        v1.to_str().unwrap(),
        v2.to_str().unwrap(),
        "--force",
        "-o",
        both.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&both).unwrap()).unwrap();
    assert_eq!(m["version"], 2);
    assert!(m["series"]["points"].is_null(), "{}", m["series"]);
    let reqs = m["series"]["table"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "http_reqs")
        .unwrap();
    assert_eq!(
        reqs["sum"],
        json!([400.0]),
        "200 requests in the one second, twice"
    );
    assert_eq!(counter(&m, "http_reqs"), 400.0);
}
