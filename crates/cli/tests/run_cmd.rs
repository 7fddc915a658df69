//! `volley run`: the binary end to end — k6 exit codes, error positions, summary text,
//! `--summary-export`, `--save`, `-e`.

mod common;

use common::{counter, run, stderr, stdout, target};
use std::path::PathBuf;
use std::time::{Duration, Instant};

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
    let dir = volley_testkit::scratch("volley-run", "t");
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
    let dir = volley_testkit::scratch("volley-run", "setup");
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

fn base(t: &volley_testserver::RunningTarget) -> String {
    format!("BASE=http://{}", t.local_addr())
}

#[test]
fn thresholds_pass_exit_0_and_fail_exit_99() {
    let t = target();
    let b = base(&t);
    let o = run(&["run", &script("thresholds.js"), "-e", &b]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    // k6 v1's THRESHOLDS section: the metric, then one line per expression.
    assert!(
        text.contains("    http_reqs\n    ✓ 'count==8' count=8\n"),
        "{text}"
    );
    assert!(
        text.contains("      {group:::login,method:GET}\n      ✓ 'count==4' count=4\n"),
        "{text}"
    );
    let o = run(&["run", &script("thresholds.js"), "-e", &b, "-e", "FAIL=1"]);
    assert_eq!(o.status.code(), Some(99), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("thresholds on metrics 'checks, http_reqs{name:verify}' have been crossed"),
        "{err}"
    );
    assert!(
        stdout(&o).contains("    checks\n    ✗ 'rate>0.9' rate="),
        "{}",
        stdout(&o)
    );
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
    let s = run(&[
        "summary",
        save.to_str().unwrap(),
        "--summary-mode",
        "legacy",
    ]);
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

/// A run of `name` interrupted: after `after`, `signals` times `sig` (100 ms apart). Gives the
/// output, the result file (`--save`, None when not written), and the seconds from the first
/// signal to the exit. A run that does not stop within 60 s is killed and fails the test.
fn interrupt_run(
    name: &str,
    sig: &str,
    after: Duration,
    signals: u32,
    env: &[&str],
) -> (std::process::Output, Option<serde_json::Value>, f64) {
    let t = target();
    let dir = common::scratch(&format!("sig-{sig}-{signals}-{name}-{}", env.join("-")));
    let save = dir.join("run.json");
    let base = format!("BASE=http://{}", t.local_addr());
    let (path, save_s) = (script(name), save.to_string_lossy().into_owned());
    let mut args = vec!["run", &path, "-e", &base, "--save", &save_s];
    for e in env {
        args.extend(["-e", e]);
    }
    // `full`: the summary has a section per scenario.
    let child = common::volley()
        .args(&args)
        .env("K6_SUMMARY_MODE", "full")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    std::thread::sleep(after);
    let began = Instant::now();
    for _ in 0..signals {
        let st = std::process::Command::new("kill")
            .args([&format!("-{sig}"), &pid])
            .status()
            .unwrap();
        assert!(st.success());
        std::thread::sleep(Duration::from_millis(100));
    }
    // Bounded: a run that ignores the signal is killed, so the test fails instead of hanging.
    let watchdog = std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(60);
        while Instant::now() < end {
            std::thread::sleep(Duration::from_millis(200));
            let alive = std::path::Path::new(&format!("/proc/{pid}")).exists();
            if !alive {
                return;
            }
        }
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status();
    });
    let o = child.wait_with_output().unwrap();
    let took = began.elapsed().as_secs_f64();
    let _ = watchdog.join();
    let saved = std::fs::read_to_string(&save)
        .ok()
        .map(|s| serde_json::from_str(&s).expect("the result file parses"));
    let _ = std::fs::remove_dir_all(&dir);
    (o, saved, took)
}

/// (completed, interrupted) iterations of scenario `name` in a result file.
fn counts(saved: &serde_json::Value, name: &str) -> (u64, u64) {
    let all = &saved["options"]["scenarios"];
    let sc = all
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no scenario {name}: {all}"));
    (
        sc["completed_iterations"].as_u64().unwrap(),
        sc["interrupted_iterations"].as_u64().unwrap(),
    )
}

/// `docker stop`: SIGTERM, then SIGKILL 10 s later. 50 VUs in `sleep(10)` must stop at once
/// (k6: ~0.1 s), with the summary, `--save`, `--summary-export` and `--out json` written.
#[test]
fn sigterm_ends_sleeping_vus_at_once_and_writes_every_output() {
    let t = target();
    let dir = common::scratch("sigterm-sleep");
    let (save, export, ndjson) = (
        dir.join("run.json"),
        dir.join("summary.json"),
        dir.join("out.ndjson"),
    );
    let base = format!("BASE=http://{}", t.local_addr());
    let out = format!("json={}", ndjson.display());
    let (report, history) = (dir.join("run.html"), dir.join("history.db"));
    let child = common::volley()
        .args([
            "run",
            &script("interrupt_sleep.js"),
            "-e",
            &base,
            "--out",
            &out,
        ])
        .args(["--save".as_ref(), save.as_os_str()])
        .args(["--summary-export".as_ref(), export.as_os_str()])
        .args(["--report".as_ref(), report.as_os_str()])
        .args(["--history".as_ref(), history.as_os_str()])
        // Crossed, but an interrupted run exits 105 (as k6), not 99.
        .args(["--threshold", "http_reqs:count>1000000"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let began = Instant::now();
    let st = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let o = child.wait_with_output().unwrap();
    let took = began.elapsed().as_secs_f64();
    assert_eq!(o.status.code(), Some(105), "{}", stderr(&o));
    // Today's main waited for the sleeps (8 s more); the grace is only for requests.
    assert!(took < 5.0, "took {took}s to stop");
    assert!(
        stderr(&o).contains("stopping: ending the sleep of 50 VUs"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("http_reqs"), "{}", stdout(&o));
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&save).expect("--save written")).unwrap();
    assert_eq!(saved["meta"]["interrupted"], true);
    assert_eq!(counts(&saved, "default"), (0, 50), "{}", saved["options"]);
    let export: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&export).expect("export written")).unwrap();
    assert_eq!(export["metrics"]["http_reqs"]["count"], 50, "{export}");
    let lines = std::fs::read_to_string(&ndjson).expect("--out json written");
    assert!(lines
        .lines()
        .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()));
    assert!(lines.contains("\"http_reqs\""));
    let html = std::fs::read_to_string(&report).expect("--report written");
    assert!(html.contains("<html"), "{}", &html[..html.len().min(200)]);
    let h = common::run(&["history", "--db", history.to_str().unwrap()]);
    assert!(
        stdout(&h).contains("interrupt_sleep"),
        "{}{}",
        stdout(&h),
        stderr(&h)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Ctrl-C in a multi-scenario run (looping VUs and an arrival-rate pool asleep for 120 s,
/// gracefulStop 2 s): the sleeps end at once, counted as interrupted, the per-scenario
/// summary is printed.
#[test]
fn ctrl_c_ends_arrival_rate_and_looping_scenarios_at_once() {
    let at = Duration::from_millis(1500);
    let (o, saved, took) = interrupt_run("scenarios_sigint.js", "INT", at, 1, &[]);
    assert_eq!(o.status.code(), Some(105), "{}", stderr(&o));
    assert!(stdout(&o).contains("█ SCENARIO: "), "{}", stdout(&o));
    let saved = saved.expect("result file written");
    assert!(counts(&saved, "stuck").1 >= 1, "{}", saved["options"]);
    assert_eq!(counts(&saved, "stuck").0, 0, "{}", saved["options"]);
    // Today's main waited for the 2 s gracefulStop.
    assert!(took < 1.5, "took {took}s");
}

/// Ctrl-C while iterations sleep, wait on a request, spin, await a timer, sit in a group or a
/// check, swallow the interruption, await an async request: each counts as interrupted (not
/// complete, not an iteration error), and requests get the 2 s grace, not the 30 s
/// gracefulStop.
#[test]
fn ctrl_c_counts_every_cut_iteration_as_interrupted_not_failed() {
    let (o, saved, took) = interrupt_run(
        "interrupt_paths.js",
        "INT",
        Duration::from_millis(1500),
        1,
        &[],
    );
    assert_eq!(o.status.code(), Some(105), "{}", stderr(&o));
    let saved = saved.expect("result file written");
    for sc in [
        "sleeping",
        "request",
        "busy",
        "timers",
        "grouped",
        "checking",
        "caught",
        "async_request",
    ] {
        assert_eq!(counts(&saved, sc), (0, 1), "{sc}: {}", stderr(&o));
    }
    assert_eq!(counter(&saved, "iteration_errors"), 0.0, "{}", stderr(&o));
    assert_eq!(counter(&saved, "iterations"), 0.0);
    // A cut group or check records nothing (as k6: samples of a cut iteration are dropped).
    let names: Vec<&str> = saved["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    for gone in ["group_duration", "checks", "http_req_failed"] {
        assert!(!names.contains(&gone), "{gone} in {names:?}");
    }
    assert!(!stderr(&o).contains("ERRO"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("2 requests in flight"),
        "{}",
        stderr(&o)
    );
    assert!((1.5..8.0).contains(&took), "took {took}s");
}

/// A second Ctrl-C ends the run at once, even in a CPU-bound teardown with a long
/// teardownTimeout; the result file is still written. One Ctrl-C gives that teardown 2 s.
#[test]
fn second_ctrl_c_ends_at_once_even_in_a_busy_teardown() {
    let one = Duration::from_millis(1500);
    let (o, saved, took) = interrupt_run("interrupt_busy_teardown.js", "INT", one, 1, &[]);
    assert_eq!(o.status.code(), Some(105), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("teardown() was interrupted"),
        "{}",
        stderr(&o)
    );
    assert_eq!(counts(&saved.expect("saved"), "default"), (0, 2));
    assert!((1.9..8.0).contains(&took), "took {took}s");
    let (o, saved, took) = interrupt_run("interrupt_busy_teardown.js", "INT", one, 2, &[]);
    assert_eq!(o.status.code(), Some(105), "{}", stderr(&o));
    assert_eq!(counts(&saved.expect("saved"), "default"), (0, 2));
    assert!(took < 1.5, "took {took}s after two Ctrl-C");
}

/// SIGTERM during the script's init, VU init, setup, teardown and handleSummary: each stops
/// promptly (init and setup at once, teardown after its 2 s, a busy handleSummary at once: the default summary
/// is printed instead), exit 105, the result file written.
#[test]
fn sigterm_in_every_phase_stops_promptly_with_105() {
    for (phase, at, most) in [
        ("script", 1000, 3.0),
        ("init", 1500, 3.0),
        // A VU an arrival-rate scenario creates mid-run, cut in its init: not a script error.
        ("lazy", 1500, 3.0),
        ("setup", 1500, 3.0),
        ("teardown", 1500, 4.5),
        ("summary", 1500, 3.0),
        ("summary_timer", 1500, 3.0),
    ] {
        let env = format!("PHASE={phase}");
        let after = Duration::from_millis(at);
        let (o, saved, took) = interrupt_run("interrupt_phases.js", "TERM", after, 1, &[&env]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(105), "{phase}: {err}");
        assert!(took < most, "{phase}: took {took}s");
        // Nothing was recorded while the script's own init code ran.
        assert_eq!(saved.is_some(), phase != "script", "{phase}: {err}");
        match phase {
            "script" => assert!(err.contains("interrupting the script's init code"), "{err}"),
            "init" => assert!(err.contains("interrupting the init of VUs"), "{err}"),
            "lazy" => assert!(err.contains("ending the sleep of"), "{err}"),
            "setup" => assert!(err.contains("interrupting setup()"), "{err}"),
            "teardown" => assert!(err.contains("waiting for teardown()"), "{err}"),
            _ => {
                assert!(err.contains("writing the summary"), "{err}");
                assert!(stdout(&o).contains("iterations"), "{}", stdout(&o));
            }
        }
    }
}

/// setupTimeout/teardownTimeout interrupt CPU-bound code too (k6: exit 100 / 101).
#[test]
fn busy_setup_and_teardown_time_out_with_100_and_101() {
    for (phase, code) in [("setup", 100), ("teardown", 101)] {
        let env = format!("PHASE={phase}");
        let mut child = common::volley()
            .args(["run", &script("busy_setup_timeout.js"), "-q", "-e", &env])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let began = Instant::now();
        // Bounded: today's main spins for ever.
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if began.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                panic!("{phase}: a busy {phase}() was not interrupted by its timeout");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(code), "{phase}: {err}");
        let want = format!("{phase}() execution timed out after 0.3 seconds");
        assert!(err.contains(&want), "{phase}: {err}");
    }
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
