//! `volley suite` with the other harnesses wired in: a `bench` step (volley-bench through the
//! suite: its row, its result file, the failed-run exit code) and a `run` step whose faults
//! kill and restart a suite service (volley-faults with the service as the target: errors in
//! the window, success after, the service running again and torn down at the end), and an
//! `http` step that runs a capacity sweep through the capacity library.

mod common;

use common::{output_within, per_second, scratch, stderr, stdout, target, volley};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

fn suite_run(dir: &Path, limit: Duration) -> Output {
    output_within(
        volley().args(["suite", "run", dir.to_str().unwrap(), "-p", "smoke"]),
        limit,
    )
}

/// DIR/results/SUITE/smoke/TIMESTAMP.
fn results_dir(dir: &Path) -> PathBuf {
    let suite = std::fs::read_dir(dir.join("results"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut all: Vec<PathBuf> = std::fs::read_dir(suite.join("smoke"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(all.len(), 1, "{all:?}");
    all.pop().unwrap()
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn a_bench_step_writes_its_row_and_result_and_exits_0() {
    let dir = scratch("suite-bench-ok");
    std::fs::write(
        dir.join("volley.toml"),
        r#"
[[profiles.smoke.steps]]
name = "echo"
bench = { command = "sh -c 'echo ops=5'", runs = 3, warmup = 1, parse = "kv" }
thresholds = { ops = "max<10" }
"#,
    )
    .unwrap();
    let o = suite_run(&dir, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let res = results_dir(&dir);
    let j = json(&res.join("suite.json"));
    let step = &j["steps"][0];
    assert_eq!(step["kind"], "bench", "{j}");
    assert_eq!(step["exit_code"], 0);
    assert_eq!(step["thresholds"]["passed"], 1, "{j}");
    // Quick-mode columns do not apply.
    assert!(step["http_reqs_per_s"].is_null(), "{j}");
    let md = std::fs::read_to_string(res.join("suite.md")).unwrap();
    assert!(md.contains("| echo (bench) | - | - | - | - |"), "{md}");
    let r = json(&res.join("echo.json"));
    assert_eq!(r["meta"]["mode"], "bench", "{r}");
    assert!(
        r.to_string().contains("\"ops\""),
        "the parsed key=value metric: {r}"
    );
}

#[test]
fn a_failing_bench_command_gives_the_failed_run_code() {
    let dir = scratch("suite-bench-fail");
    std::fs::write(
        dir.join("volley.toml"),
        "[[profiles.smoke.steps]]\nbench = { command = \"false\", runs = 2 }\n",
    )
    .unwrap();
    let o = suite_run(&dir, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(7), "{}\n{}", stdout(&o), stderr(&o));
    let j = json(&results_dir(&dir).join("suite.json"));
    assert_eq!(j["steps"][0]["name"], "bench-1");
    assert_eq!(j["steps"][0]["exit_code"], 7);
    assert!(
        j["steps"][0]["error"]
            .as_str()
            .unwrap()
            .contains("2 run(s)"),
        "{j}"
    );
}

#[test]
fn bad_bench_and_fault_keys_are_located_with_a_hint() {
    let dir = scratch("suite-glue-bad");
    let p = dir.join("volley.toml");
    for (text, says) in [
        (
            "[[profiles.smoke.steps]]\nbench = { command = \"true\", rnus = 3 }\n",
            "volley.toml:2:",
        ),
        (
            "[services.api]\ncommand = \"sleep 9\"\n[[profiles.smoke.steps]]\nrun = \"x.js\"\nfaults = [\"at=1s,kill=apj\"]\n",
            "no service named 'apj'",
        ),
        (
            "[[profiles.smoke.steps]]\nrun = \"x.js\"\nfaults = [\"at=1s,kil=api\"]\n",
            "volley.toml:3:",
        ),
    ] {
        std::fs::write(&p, text).unwrap();
        let o = volley()
            .args(["suite", "check", p.to_str().unwrap()])
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(104), "{text}: {e}");
        assert!(e.contains(says) && e.contains("hint"), "{text}: {e}");
    }
}

const LOOP: &str = r#"
import http from 'k6/http';
import { sleep } from 'k6';
export const options = { thresholds: {} };
export default function () {
  http.get(`${__ENV.URL}/`, { timeout: '500ms' });
  sleep(0.02);
}
"#;

#[test]
fn a_run_step_kills_and_restarts_a_service_which_serves_again_and_is_torn_down() {
    let dir = scratch("suite-fault-restart");
    std::fs::write(dir.join("loop.js"), LOOP).unwrap();
    std::fs::write(
        dir.join("volley.toml"),
        r#"
[services.api]
command = ["${volley}", "target", "--listen", "127.0.0.1:${port}", "--threads", "1"]
ready.http = "http://127.0.0.1:${port}/"

[[profiles.smoke.steps]]
name = "load"
run = "loop.js"
vus = 2
duration = "5s"
env = { URL = "${services.api.url}" }
faults = ["at=2s,for=1s,kill=api"]

[[profiles.smoke.steps]]
name = "after"
command = ["${volley}", "http", "${services.api.url}/", "-n", "3", "--quiet"]
"#,
    )
    .unwrap();
    let o = suite_run(&dir, Duration::from_secs(60));
    assert!(
        dir.join("results").is_dir(),
        "{}\n{}",
        stdout(&o),
        stderr(&o)
    );
    let res = results_dir(&dir);
    let j = json(&res.join("suite.json"));
    // Failed requests in the window are not a threshold failure: the step passes.
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n{}\n{j}",
        stdout(&o),
        stderr(&o)
    );
    let r = json(&res.join("load.json"));
    let ev = &r["events"][0];
    assert_eq!(ev["kind"], "kill", "{r}");
    assert!(ev["error"].is_null(), "{ev}");
    let secs = per_second(&r);
    assert!(secs.len() >= 5, "{secs:?}");
    assert!(secs[1].0 > 0 && secs[1].1 == 0, "before the kill: {secs:?}");
    assert!(secs[2].1 + secs[3].1 > 0, "in the window: {secs:?}");
    // The last second that saw requests (a trailing partial second may have none).
    let last = *secs.iter().rev().find(|s| s.0 > 0).unwrap();
    assert!(last.0 > 0 && last.1 == 0, "after the restart: {secs:?}");
    // The next step found it serving; teardown stopped the restarted one.
    assert_eq!(j["steps"][1]["exit_code"], 0, "{j}");
    let log = std::fs::read_to_string(res.join("logs/api.log")).unwrap();
    assert!(
        log.matches("listening").count() >= 2,
        "started twice: {log}"
    );
    let url = j["services"][0]["url"].as_str().unwrap().to_string();
    let addr = url.trim_start_matches("http://");
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "the restarted service is gone after teardown"
    );
}

/// Regression: `sweep`/`find_max_rate` on an http step were unknown keys; now the step runs
/// the capacity library (as `volley http --sweep`) and keeps its `capacity` section.
#[test]
fn an_http_step_runs_a_capacity_sweep_and_saves_its_steps() {
    let t = target();
    let dir = scratch("suite-capacity");
    std::fs::write(
        dir.join("volley.toml"),
        format!(
            r#"
[[profiles.smoke.steps]]
name = "sweep"
http = "http://{}/"
connections = 2
duration = "1s"
sweep = "rate=20,40"
"#,
            t.local_addr()
        ),
    )
    .unwrap();
    let o = suite_run(&dir, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let res = results_dir(&dir);
    let r = json(&res.join("sweep.json"));
    let cap = &r["capacity"];
    assert_eq!(cap["kind"], "sweep", "{r}");
    let loads: Vec<f64> = cap["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["load"].as_f64().unwrap())
        .collect();
    assert_eq!(loads, [20.0, 40.0], "{cap}");
    let table = std::fs::read_to_string(res.join("sweep.capacity.txt")).unwrap();
    assert!(
        table.contains(&cap["message"].as_str().unwrap().to_string()),
        "{table}"
    );
    let j = json(&res.join("suite.json"));
    assert_eq!(j["steps"][0]["exit_code"], 0, "{j}");
}

#[test]
fn capacity_keys_are_checked_with_file_line_column() {
    let dir = scratch("suite-capacity-bad");
    let cases = [
        (
            "[[profiles.smoke.steps]]\nhttp = \"http://127.0.0.1:1/\"\nsweep = \"speed=1,2\"\n",
            ":3:9: profiles.smoke step 1.sweep:",
        ),
        (
            "[[profiles.smoke.steps]]\nhttp = \"http://127.0.0.1:1/\"\nfind_max_rate = { start_rate = 10 }\n",
            "find_max_rate: needs slo",
        ),
        (
            "[[profiles.smoke.steps]]\nhttp = \"http://127.0.0.1:1/\"\nfind_max_rate = { slo = \"p99<50ms\", tolerance = \"150%\" }\n",
            "is not a tolerance",
        ),
        (
            "[[profiles.smoke.steps]]\nhttp = \"http://127.0.0.1:1/\"\nsweep = \"rate=10,20\"\nthresholds = { http_req_failed = \"rate<0.01\" }\n",
            "thresholds is for one run",
        ),
        (
            "[[profiles.smoke.steps]]\ncommand = \"true\"\nsweep = \"rate=10,20\"\n",
            "sweep and find_max_rate are for http steps",
        ),
    ];
    for (text, want) in cases {
        let p = dir.join("volley.toml");
        std::fs::write(&p, text).unwrap();
        let o = volley()
            .args(["suite", "check", p.to_str().unwrap()])
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(104), "{text}\n{err}");
        assert!(err.contains(want), "want {want}:\n{err}");
        assert!(err.contains("hint"), "{err}");
    }
}
