//! `volley bench` end to end: the real binary benchmarking small shell commands and the C
//! example (examples/bench/objstore.c, built with `cc`; those tests skip without it). Every
//! benchmark is bounded by `--runs` and `--timeout`; nothing touches the network.

mod common;

use common::{run, scratch, stderr, stdout};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn json_of(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", stdout(o), stderr(o)))
}

fn metric<'a>(bench: &'a Value, name: &str) -> &'a Value {
    bench["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no metric {name} in {bench}"))
}

/// The C example built into `dir`, or None (with a message) when there is no `cc`.
fn objstore(dir: &Path) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bench/objstore.c");
    let out = dir.join("objstore");
    match Command::new("cc")
        .args(["-std=c99", "-O2", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
    {
        Ok(s) if s.success() => Some(out),
        other => {
            eprintln!("skipped: cannot build examples/bench/objstore.c with cc ({other:?})");
            None
        }
    }
}

#[test]
fn printed_key_values_become_metrics_with_units_and_bad_lines_are_counted() {
    let script = "echo 'start ops=3.1k ops/s rss=2.5MiB'; echo ops=5; echo 'broken= lat=12ms'; \
                  echo 'tput=7 MiB/s size=1.2.3'";
    let o = run(&[
        "bench",
        "--runs",
        "2",
        "--parse",
        "kv",
        "--json",
        "-",
        "--timeout",
        "10s",
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json_of(&o);
    let b = &j["benches"][0];
    assert_eq!(b["runs"], 2);
    // Repeated key: the last value of each run counts, and the repetition is reported.
    assert_eq!(metric(b, "ops")["values"], serde_json::json!([5.0, 5.0]));
    assert_eq!(b["output"]["repeated_keys"]["ops"], 2);
    assert_eq!(metric(b, "rss")["median"], 2.5 * 1048576.0);
    assert_eq!(metric(b, "rss")["unit"], "bytes");
    assert_eq!(metric(b, "lat")["median"], 12.0);
    assert_eq!(metric(b, "lat")["unit"], "ms");
    assert_eq!(metric(b, "tput")["unit"], "MiB/s");
    // Two malformed lines per run (`broken=`, `size=1.2.3`), the first one kept to show.
    assert_eq!(b["output"]["malformed_lines"], 4);
    assert_eq!(
        b["output"]["first_malformed"],
        serde_json::json!([1, 3, "broken= lat=12ms"])
    );
    let text = run(&[
        "bench", "--runs", "1", "--parse", "kv", "--", "sh", "-c", script,
    ]);
    assert!(
        stdout(&text)
            .contains("2 malformed output line(s) ignored, first: run 1 line 3: broken= lat=12ms"),
        "{}",
        stdout(&text)
    );
}

#[test]
fn peak_rss_of_a_child_that_allocates_a_known_amount_and_of_a_whole_tree() {
    let dir = scratch("bench-rss");
    let Some(exe) = objstore(&dir) else { return };
    let exe = exe.to_str().unwrap();
    let mib = 1048576.0;
    let o = run(&[
        "bench",
        "--runs",
        "3",
        "--json",
        "-",
        "--timeout",
        "20s",
        "--",
        exe,
        "alloc",
        "64",
        "300",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let b = &json_of(&o)["benches"][0];
    let peak = metric(b, "peak_rss")["median"].as_f64().unwrap();
    assert!(
        (64.0 * mib..64.0 * mib * 1.1).contains(&peak),
        "peak_rss {}",
        peak / mib
    );
    // Two 48 MiB children side by side: the tree's peak is their sum, while wait4's
    // ru_maxrss only knows the largest single process.
    let both = format!("{exe} alloc 48 500 & {exe} alloc 48 500; wait");
    let o = run(&[
        "bench",
        "--runs",
        "2",
        "--json",
        "-",
        "--timeout",
        "20s",
        "--",
        "sh",
        "-c",
        &both,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let b = &json_of(&o)["benches"][0];
    let tree = metric(b, "peak_rss")["median"].as_f64().unwrap();
    let single = metric(b, "max_rss_single")["median"].as_f64().unwrap();
    assert!(
        (96.0 * mib..96.0 * mib * 1.1).contains(&tree),
        "tree {}",
        tree / mib
    );
    assert!(
        (48.0 * mib..48.0 * mib * 1.1).contains(&single),
        "single {}",
        single / mib
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn failing_and_timed_out_runs_are_reported_excluded_and_exit_6() {
    let dir = scratch("bench-fail");
    let counter = dir.join("n");
    // Every second run fails: runs 2 and 4 exit 1.
    let script = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); echo $((n+1)) > {c}; echo v=$n; [ $((n % 2)) -eq 0 ]",
        c = counter.display()
    );
    let o = run(&[
        "bench", "--runs", "4", "--parse", "kv", "--json", "-", "--", "sh", "-c", &script,
    ]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    let b = &json_of(&o)["benches"][0];
    assert_eq!(
        (b["runs"].as_u64(), b["failed"].as_u64()),
        (Some(4), Some(2))
    );
    assert_eq!(
        b["failures"][0],
        serde_json::json!({"run": 2, "status": "exit status 1"})
    );
    assert_eq!(b["failures"][1]["run"], 4);
    // Only the two good runs are in the statistics (their printed v: 0 and 2).
    assert_eq!(metric(b, "v")["values"], serde_json::json!([0.0, 2.0]));
    assert_eq!(metric(b, "wall_time")["n"], 2);
    assert!(
        stderr(&o).contains("run 2 failed: exit status 1"),
        "{}",
        stderr(&o)
    );

    let t = std::time::Instant::now();
    let o = run(&[
        "bench",
        "--runs",
        "1",
        "--timeout",
        "300ms",
        "--",
        "sleep",
        "30",
    ]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    assert!(t.elapsed() < std::time::Duration::from_secs(10));
    assert!(
        stdout(&o).contains("✗ run 1: timed out after"),
        "{}",
        stdout(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn crossed_thresholds_exit_99_and_are_stored_in_the_result() {
    let dir = scratch("bench-th");
    let save = dir.join("t.json");
    let o = run(&[
        "bench",
        "--runs",
        "2",
        "--threshold",
        "wall_time:p(95)<1ms",
        "--threshold",
        "wall_time:min>5ms",
        "--save",
        save.to_str().unwrap(),
        "--",
        "sleep",
        "0.02",
    ]);
    assert_eq!(o.status.code(), Some(99), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("thresholds on metrics 'wall_time' have been crossed"),
        "{}",
        stderr(&o)
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    assert_eq!(r["meta"]["mode"], "bench");
    assert_eq!(r["thresholds"][0]["ok"], false);
    assert_eq!(r["thresholds"][1]["ok"], true);
    // Units on the limit, and a metric no run printed fails rather than passing on zeros.
    let o = run(&[
        "bench",
        "--runs",
        "1",
        "--threshold",
        "wall_time:max<1min",
        "--",
        "sleep",
        "0.01",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&[
        "bench",
        "--runs",
        "1",
        "--threshold",
        "write_mib_per_s:min>60",
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(99), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("write_mib_per_s min>60  (observed no data)"),
        "{}",
        stdout(&o)
    );
    let o = run(&["bench", "--threshold", "peak_rss:max<lots", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compare_flags_a_2x_slowdown_and_passes_a_rerun() {
    let dir = scratch("bench-compare");
    let save = |name: &str, cmd: &str| {
        let p = dir.join(name);
        let o = run(&[
            "bench",
            "-q",
            "--runs",
            "10",
            "--save",
            p.to_str().unwrap(),
            cmd,
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        p
    };
    let (a, b, c) = (
        save("a.json", "sleep 0.05"),
        save("b.json", "sleep 0.1"),
        save("c.json", "sleep 0.05"),
    );
    let cmp = |x: &Path, y: &Path| {
        run(&[
            "compare",
            "--json",
            "--fail-on",
            // Generous against a shared, loaded machine (scheduling delays of several ms
            // between the saves); the 2× slowdown is +100 %.
            "wall_time.p50:+25%",
            x.to_str().unwrap(),
            y.to_str().unwrap(),
        ])
    };
    let verdict = |o: &std::process::Output| {
        let j = json_of(o);
        let row = j["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["metric"] == "wall_time" && r["figure"] == "p50")
            .cloned()
            .expect("a wall_time p50 row");
        (
            row["verdict"].as_str().unwrap().to_string(),
            row["intervals"].clone(),
        )
    };
    let slow = cmp(&a, &b);
    assert_eq!(slow.status.code(), Some(4), "{}", stderr(&slow));
    assert_eq!(
        verdict(&slow),
        ("regression".into(), serde_json::json!([10, 10]))
    );
    let same = cmp(&a, &c);
    assert_eq!(same.status.code(), Some(0), "{}", stdout(&same));
    assert!(verdict(&same).1 == serde_json::json!([10, 10]));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn params_expand_and_the_saved_file_reads_back_in_summary_and_report() {
    let dir = scratch("bench-params");
    let save = dir.join("p.json");
    let o = run(&[
        "bench",
        "--runs",
        "2",
        "--parse",
        "kv",
        "--param",
        "n=1,2",
        "--param",
        "m=x,y",
        "--save",
        save.to_str().unwrap(),
        "--markdown",
        dir.join("p.md").to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "echo val={n} tag={m}",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Benchmark 4: sh -c echo val=2 tag=y"), "{out}");
    assert!(out.contains("× faster than"), "{out}");
    let s = run(&["summary", save.to_str().unwrap()]);
    assert_eq!(s.status.code(), Some(0), "{}", stderr(&s));
    assert_eq!(
        stdout(&s),
        out,
        "volley summary prints what volley bench printed"
    );
    let sj = run(&["summary", "--json", save.to_str().unwrap()]);
    let j = json_of(&sj);
    assert_eq!(
        j["benches"][2]["tags"],
        serde_json::json!({"bench": "sh -c echo val=2 tag=x", "m": "x", "n": "2"})
    );
    assert_eq!(
        metric(&j["benches"][2], "val")["values"],
        serde_json::json!([2.0, 2.0])
    );
    let md = std::fs::read_to_string(dir.join("p.md")).unwrap();
    assert!(
        md.starts_with("| Command | Runs |") && md.contains("| `sh -c echo val=1 tag=x` | val |"),
        "{md}"
    );
    let r = run(&[
        "report",
        "-o",
        dir.join("r.html").to_str().unwrap(),
        save.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let bad = run(&["bench", "--param", "q=1", "--", "true"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("no command uses {q}"),
        "{}",
        stderr(&bad)
    );
    let shell = run(&["bench", "true | cat"]);
    assert_eq!(shell.status.code(), Some(2));
    assert!(stderr(&shell).contains("add --shell"), "{}", stderr(&shell));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_c_example_reproduces_the_seeds_figures_and_gates_on_them() {
    let dir = scratch("bench-example");
    let Some(exe) = objstore(&dir) else { return };
    let store = dir.join("store");
    let (exe, store) = (exe.to_str().unwrap(), store.to_str().unwrap());
    let o = run(&[
        "bench",
        "--runs",
        "2",
        "--parse",
        "kv",
        "--json",
        "-",
        "--timeout",
        "60s",
        "--threshold",
        "write_mib_per_s:min>0.001",
        "--threshold",
        "peak_rss:max<64MiB",
        "--",
        exe,
        "stream",
        "--bytes",
        "4194304",
        "--dir",
        store,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let b = &json_of(&o)["benches"][0];
    for m in [
        "write_seconds",
        "write_mib_per_s",
        "read_mib_per_s",
        "chunk_size",
        "peak_rss",
    ] {
        assert_eq!(metric(b, m)["n"], 2, "{m}");
    }
    assert_eq!(b["output"]["labels"]["backend"], "file");
    let o = run(&[
        "bench",
        "--runs",
        "1",
        "--parse",
        "kv",
        "--threshold",
        "live_objects:max<0",
        "--",
        exe,
        "stress",
        "--ops",
        "64",
        "--dir",
        store,
    ]);
    assert_eq!(o.status.code(), Some(99), "{}", stdout(&o));
    assert!(stdout(&o).contains("ops_per_s"), "{}", stdout(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn shell_mode_runs_pipelines_and_subtracts_the_shells_start_up() {
    let dir = scratch("bench-shell");
    let save = dir.join("s.json");
    let o = run(&[
        "bench",
        "--runs",
        "3",
        "--shell",
        "--parse",
        "kv",
        "--save",
        save.to_str().unwrap(),
        "echo n=$((20 + 22)) | cat",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("Shell start-up (sh -c ''):"),
        "{}",
        stderr(&o)
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    assert!(
        r["options"]["shell_correction"]["wall_ms"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let n = r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "n")
        .unwrap();
    assert_eq!(n["samples"], serde_json::json!([42.0, 42.0, 42.0]));
    let _ = std::fs::remove_dir_all(&dir);
}
