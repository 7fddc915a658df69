//! `volley run`: the binary end to end — k6 exit codes, error positions, summary text,
//! `--summary-export`, `--save`, `-e`.

mod common;

use common::{run, stderr, stdout, target};
use std::path::PathBuf;

fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/k6")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn syntax_error_exits_107_with_file_line_column() {
    let o = run(&["run", &script("syntax_error.js")]);
    assert_eq!(o.status.code(), Some(107), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("syntax_error.js:4:"), "{err}");
    assert!(err.contains("SyntaxError"), "{err}");
}

#[test]
fn async_errors_are_logged_as_k6_logs_them() {
    let o = run(&["run", "-q", &script("async_errors.js")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    // A rejected default promise and an unhandled rejection: k6's "Uncaught (in promise)",
    // at the position of the throw.
    assert!(
        err.contains("async_errors.js:22:13: Uncaught (in promise) Error: async boom"),
        "{err}"
    );
    assert!(
        err.contains("async_errors.js:26:22: Uncaught (in promise) Error: nobody catches this"),
        "{err}"
    );
    // A throwing timer callback is a plain exception.
    assert!(
        err.contains("async_errors.js:31:15: Error: thrown in a timer"),
        "{err}"
    );
    assert!(!err.contains("handled later"), "{err}");
}

#[test]
fn summary_export_and_result_file() {
    let t = target();
    let dir = std::env::temp_dir().join(format!("volley-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let export = dir.join("summary.json");
    let save = dir.join("run.json");
    let base = format!("BASE=http://{}", t.local_addr());
    let o = run(&[
        "run",
        &script("checks.js"),
        "-e",
        &base,
        "-u",
        "1",
        "-i",
        "4",
        "--summary-export",
        export.to_str().unwrap(),
        "--save",
        save.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("✓ status is 200"), "{text}");
    assert!(text.contains("http_reqs"), "{text}");
    assert!(text.contains("iterations"), "{text}");
    let e: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    assert_eq!(e["metrics"]["iterations"]["count"], 4.0);
    assert_eq!(e["metrics"]["http_reqs"]["count"], 8.0);
    assert_eq!(e["metrics"]["checks"]["fails"], 4);
    let r = volley_metrics::RunResult::read(&save).unwrap();
    assert_eq!(r.meta.mode, "run");
    assert_eq!(r.counter_sum("http_reqs"), 8.0);
    assert_eq!(t.stats().requests, 8);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn exception_in_setup_exits_107() {
    let dir = std::env::temp_dir().join(format!("volley-run-setup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let s = dir.join("setup_throws.js");
    std::fs::write(
        &s,
        "export function setup() {\n  throw new Error('no token');\n}\nexport default function () {}\n",
    )
    .unwrap();
    let o = run(&["run", s.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(107), "{}", stderr(&o));
    assert!(stderr(&o).contains("setup_throws.js:2:"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

fn base(t: &volley_target::RunningTarget) -> String {
    format!("BASE=http://{}", t.local_addr())
}

#[test]
fn thresholds_pass_exit_0_and_fail_exit_99() {
    let t = target();
    let b = base(&t);
    let o = run(&["run", &script("thresholds.js"), "-e", &b]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("✓ http_reqs"), "{text}");
    assert!(
        text.contains("✓ { group:::login, method:GET }")
            || text.contains("✓ { group:::login,method:GET }"),
        "{text}"
    );
    let o = run(&["run", &script("thresholds.js"), "-e", &b, "-e", "FAIL=1"]);
    assert_eq!(o.status.code(), Some(99), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("thresholds on metrics 'checks, http_reqs{name:verify}' have been crossed"),
        "{err}"
    );
    assert!(stdout(&o).contains("✗ checks"), "{}", stdout(&o));
}

#[test]
fn abort_on_fail_stops_the_test_early_with_99() {
    let t = target();
    let started = std::time::Instant::now();
    let dir = common::scratch("abort");
    let save = dir.join("run.json");
    let o = run(&[
        "run",
        &script("thresholds_abort.js"),
        "-e",
        &base(&t),
        "--save",
        save.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(99), "{}", stderr(&o));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "the 30 s test was not stopped"
    );
    assert!(stderr(&o).contains("abortOnFail"), "{}", stderr(&o));
    let r = volley_metrics::RunResult::read(&save).unwrap();
    let th = r
        .thresholds
        .iter()
        .find(|t| t.metric == "http_reqs")
        .unwrap();
    assert!(!th.ok && th.aborted, "{th:?}");
    assert!(r
        .thresholds
        .iter()
        .any(|t| t.metric == "iterations" && t.ok));
    // `volley summary` renders the run file with the threshold marks.
    let s = run(&["summary", save.to_str().unwrap()]);
    assert_eq!(s.status.code(), Some(0), "{}", stderr(&s));
    assert!(stdout(&s).contains("✗ http_reqs"), "{}", stdout(&s));
    assert!(stdout(&s).contains("✓ iterations"), "{}", stdout(&s));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_threshold_expression_exits_104_naming_the_option() {
    let o = run(&["run", &script("thresholds_bad.js")]);
    assert_eq!(o.status.code(), Some(104), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("options.thresholds[\"http_req_duration\"][1]"),
        "{err}"
    );
    assert!(err.contains("'p95 < 200'") && err.contains("p(N)"), "{err}");
    let o = run(&["run", &script("thresholds_unknown.js")]);
    assert_eq!(o.status.code(), Some(104), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no metric name \"no_such_metric\""),
        "{}",
        stderr(&o)
    );
}

#[test]
fn handle_summary_writes_stdout_and_a_file_with_k6_data() {
    let t = target();
    let dir = common::scratch("handle-summary");
    let o = common::volley()
        .current_dir(&dir)
        .args([
            "run",
            &script("handle_summary.js"),
            "-e",
            &base(&t),
            "-e",
            "OUT=out/facts.json",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "HANDLED 3\n",
        "the default summary must not be printed"
    );
    let f: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/facts.json")).unwrap())
            .unwrap();
    assert_eq!(f["reqs"], 3.0);
    assert_eq!(f["rate_type"], "rate");
    assert_eq!(f["checks_passes"], 3);
    assert_eq!(f["checks_ok"], true);
    assert_eq!(f["duration_contains"], "time");
    assert_eq!(f["trend_keys"], "avg,count,p(99)");
    assert_eq!(f["sub_ok"], true);
    assert_eq!(f["sub_count"], 3.0);
    assert_eq!(f["group_name"], "g1");
    assert_eq!(f["group_path"], "::g1");
    assert_eq!(f["check_name"], "is 200");
    assert_eq!(f["check_passes"], 3);
    assert_eq!(f["root_id"], "d41d8cd98f00b204e9800998ecf8427e");
    assert_eq!(f["stats"], "avg,p(99),count");
    assert_eq!(f["has_state"], true);
    // A throwing handleSummary: logged, and the default summary is printed.
    let o = run(&["run", &script("handle_summary_throws.js")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("broken summary"), "{}", stderr(&o));
    assert!(stdout(&o).contains("iterations"), "{}", stdout(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn out_json_streams_k6_ndjson_and_summary_export_has_k6_fields() {
    let t = target();
    let dir = common::scratch("out-json");
    let nd = dir.join("out.ndjson");
    let export = dir.join("export.json");
    let o = run(&[
        "run",
        &script("thresholds.js"),
        "-e",
        &base(&t),
        "--out",
        &format!("json={}", nd.display()),
        "--summary-export",
        export.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&nd).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let points = |m: &str| {
        lines
            .iter()
            .filter(|l| l["type"] == "Point" && l["metric"] == m)
            .count()
    };
    assert_eq!(points("http_reqs"), 8, "one point per request");
    assert_eq!(points("http_req_duration"), 8);
    assert_eq!(points("checks"), 8);
    assert_eq!(points("iterations"), 4);
    let decl = lines
        .iter()
        .find(|l| l["type"] == "Metric" && l["metric"] == "http_req_duration")
        .unwrap();
    assert_eq!(decl["data"]["type"], "trend");
    assert_eq!(decl["data"]["contains"], "time");
    // Every metric is declared before its first point.
    let mut declared = std::collections::HashSet::new();
    for l in &lines {
        let m = l["metric"].as_str().unwrap().to_string();
        if l["type"] == "Metric" {
            declared.insert(m);
        } else {
            assert!(declared.contains(&m), "point before declaration: {l}");
            assert!(l["data"]["time"].as_str().unwrap().ends_with('Z'));
            assert!(l["data"]["value"].is_number());
        }
    }
    let verify = lines
        .iter()
        .find(|l| l["metric"] == "http_reqs" && l["data"]["tags"]["name"] == "verify")
        .unwrap();
    assert_eq!(verify["data"]["tags"]["group"], "::login");
    assert_eq!(verify["data"]["tags"]["method"], "GET");
    let e: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    let d = &e["metrics"]["http_req_duration"];
    for k in ["avg", "min", "med", "max", "p(90)", "p(95)"] {
        assert!(d[k].is_number(), "{k}: {d}");
    }
    assert_eq!(e["metrics"]["http_reqs"]["count"], 8.0);
    assert!(e["metrics"]["http_reqs"]["rate"].is_number());
    assert_eq!(e["metrics"]["checks"]["passes"], 4);
    assert_eq!(e["metrics"]["checks"]["fails"], 4);
    assert_eq!(e["metrics"]["checks"]["value"], 0.5);
    assert_eq!(e["metrics"]["http_reqs"]["thresholds"]["count==8"], false);
    assert_eq!(e["root_group"]["id"], "d41d8cd98f00b204e9800998ecf8427e");
    assert_eq!(
        e["root_group"]["groups"]["login"]["checks"]["status is 200"]["passes"],
        4
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn options_are_honoured() {
    let t = target();
    let dir = common::scratch("options");
    let save = dir.join("run.json");
    let o = run(&[
        "run",
        &script("options.js"),
        "-e",
        &base(&t),
        "--save",
        save.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    for c in [
        "user agent sent",
        "body discarded",
        "hosts pins the address",
        "maxRedirects stops after one hop",
    ] {
        assert!(
            text.contains(&format!("✓ {c}")),
            "{c}:\n{text}\n{}",
            stderr(&o)
        );
    }
    assert!(!stderr(&o).contains("not supported"), "{}", stderr(&o));
    let r = volley_metrics::RunResult::read(&save).unwrap();
    assert!(r.metrics.iter().filter(|m| m.name == "http_reqs").all(|m| m
        .tags
        .get("team")
        .map(String::as_str)
        == Some("blue")));
    assert!(r
        .metrics
        .iter()
        .filter(|m| m.name == "iterations")
        .all(|m| m.tags.get("team").map(String::as_str) == Some("blue")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn setup_timeout_exits_100() {
    let started = std::time::Instant::now();
    let o = run(&["run", &script("setup_timeout.js")]);
    assert_eq!(o.status.code(), Some(100), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("setup() execution timed out after 0.3 seconds"),
        "{}",
        stderr(&o)
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
}

#[test]
fn test_abort_exits_108() {
    let t = target();
    let base = format!("BASE=http://{}", t.local_addr());
    let o = run(&["run", &script("abort.js"), "-e", &base, "-q"]);
    assert_eq!(o.status.code(), Some(108), "{}", stderr(&o));
    assert!(stderr(&o).contains("enough"), "{}", stderr(&o));
}

#[test]
fn bad_scenarios_exit_104_with_k6s_words() {
    for (name, want) in [
        (
            "scenarios_mixed.js",
            "using `duration` and `scenarios` options simultaneously is not allowed",
        ),
        (
            "scenarios_bad_exec.js",
            "function 'nope' not found in exports",
        ),
    ] {
        let o = run(&["run", &script(name), "-q"]);
        assert_eq!(o.status.code(), Some(104), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{name}: {}", stderr(&o));
    }
}

/// Ctrl-C during a multi-scenario run: `signals` SIGINTs, then the exit, the interrupted
/// iterations in the result file, and how long the stop took.
fn interrupt_scenarios(signals: u32) -> (std::process::Output, serde_json::Value, f64) {
    interrupt_script("scenarios_sigint.js", signals)
}

/// `interrupt_scenarios` for any script.
fn interrupt_script(name: &str, signals: u32) -> (std::process::Output, serde_json::Value, f64) {
    let t = target();
    let dir = common::scratch(&format!("sigint-{signals}-{name}"));
    let save = dir.join("run.json");
    let base = format!("BASE=http://{}", t.local_addr());
    let child = common::volley()
        .args([
            "run",
            &script(name),
            "-e",
            &base,
            "--save",
            save.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let began = std::time::Instant::now();
    for _ in 0..signals {
        let st = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let o = child.wait_with_output().unwrap();
    let took = began.elapsed().as_secs_f64();
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&save).expect("result file written"))
            .unwrap();
    (o, saved, took)
}

#[test]
fn ctrl_c_once_stops_gracefully_and_twice_at_once() {
    let stuck = |saved: &serde_json::Value| -> u64 {
        saved["options"]["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "stuck")
            .unwrap()["interrupted_iterations"]
            .as_u64()
            .unwrap()
    };
    let (o, saved, took) = interrupt_scenarios(1);
    assert_eq!(o.status.code(), Some(105), "{}", stderr(&o));
    assert!(stdout(&o).contains("█ SCENARIOS"), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("* stuck: 2.00 iterations/s for 1m0s"),
        "{}",
        stderr(&o)
    );
    // The sleeping iterations were interrupted after the graceful stop (2 s), not awaited.
    assert!(stuck(&saved) >= 1, "{saved}");
    assert!((1.5..20.0).contains(&took), "took {took}s");
    let (o, saved, took2) = interrupt_scenarios(2);
    assert_eq!(o.status.code(), Some(105), "{}", stderr(&o));
    assert!(stuck(&saved) >= 1, "{saved}");
    assert!(
        took2 < took,
        "a second Ctrl-C cuts the graceful stop short ({took2}s vs {took}s)"
    );
}

/// After one Ctrl-C each scenario's running iterations get its own gracefulStop (as k6), not
/// the longest of the run's.
#[test]
fn ctrl_c_gives_each_scenario_its_own_graceful_stop() {
    let (o, saved, took) = interrupt_script("scenarios_sigint_grace.js", 1);
    assert_eq!(o.status.code(), Some(105), "{}", stderr(&o));
    let scen = saved["options"]["scenarios"].to_string();
    let count = |name: &str, field: &str| -> u64 {
        saved["options"]["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no scenario {name}: {scen}"))[field]
            .as_u64()
            .unwrap()
    };
    // Ctrl-C at ~1.5 s, iterations of 4 s: `short` (gracefulStop 1 s) is cut off, `long`
    // (20 s) is let finish, and the run does not wait for 20 s.
    assert_eq!(count("short", "interrupted_iterations"), 2, "{scen}");
    assert_eq!(count("short", "completed_iterations"), 0, "{scen}");
    assert_eq!(count("long", "completed_iterations"), 2, "{scen}");
    assert_eq!(count("long", "interrupted_iterations"), 0, "{scen}");
    assert!(took < 15.0, "took {took}s");
}

#[test]
fn summary_flags_replace_the_scripts_trend_stats_and_time_unit() {
    let t = target();
    let base = format!("BASE=http://{}", t.local_addr());
    let o = run(&[
        "run",
        &script("checks.js"),
        "-e",
        &base,
        "--summary-trend-stats",
        "avg, p(99),count",
        "--summary-time-unit",
        "us",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let line = out
        .lines()
        .find(|l| l.contains("http_req_duration"))
        .expect("http_req_duration in the summary");
    assert!(
        line.contains("avg=") && line.contains("p(99)=") && line.contains("count="),
        "{line}"
    );
    assert!(!line.contains("med="), "{line}");
    assert!(line.contains("µs"), "{line}");
    let o = run(&[
        "run",
        &script("checks.js"),
        "-e",
        &base,
        "--summary-trend-stats",
        "p(101)",
    ]);
    assert_eq!(o.status.code(), Some(104), "{}", stderr(&o));
    assert!(stderr(&o).contains("summaryTrendStats"), "{}", stderr(&o));
}
