//! `volley http --find-max-rate` and `--sweep` (#21) against targets of known capacity:
//! `volley target --workers 4 --delay 10` serves 400 requests/s. Tolerances are the issue's;
//! every run is bounded by its probe count and durations (each test well under a minute).

mod common;
use common::*;
use std::time::Duration;

/// The built-in target with at most `workers` requests in service, each `delay_ms` long.
fn limited(
    workers: Option<usize>,
    delay_ms: u64,
    fail_above: Option<f64>,
) -> volley_testserver::RunningTarget {
    volley_testserver::spawn_limited(
        volley_testserver::TargetConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            threads: 1,
            tls: None,
            delay_all: (delay_ms > 0).then(|| Duration::from_millis(delay_ms)),
        },
        volley_testserver::Limits {
            workers,
            fail_above,
        },
    )
    .expect("target starts")
}

/// Probes of 2 s after a 500 ms warm-up: stable enough on a busy machine.
const STEADY: (&str, &str) = ("2s", "500ms");

/// A search with short probes (`probe` long, after a `warmup`); returns the process output
/// and the saved capacity section.
fn search(
    url: &str,
    save: &std::path::Path,
    (probe, warmup): (&str, &str),
    extra: &[&str],
) -> (std::process::Output, serde_json::Value) {
    let mut args = vec![
        "http",
        url,
        "--find-max-rate",
        "--slo",
        "p99<50ms",
        "--probe-duration",
        probe,
        "--warmup",
        warmup,
        "--tolerance",
        "10%",
        "--save",
    ];
    let s = save.to_str().unwrap();
    args.push(s);
    args.extend_from_slice(extra);
    let o = run(&args);
    let file: serde_json::Value = std::fs::read(save)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| {
            panic!(
                "no result file\nstdout:\n{}\nstderr:\n{}",
                stdout(&o),
                stderr(&o)
            )
        });
    (o, file["capacity"].clone())
}

#[test]
fn find_max_rate_reports_the_capacity_of_a_400_per_second_target() {
    let _x = exclusive();
    let t = limited(Some(4), 10, None);
    let dir = scratch("cap-search");
    let (o, c) = search(&t.url(), &dir.join("s.json"), STEADY, &[]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert_eq!(c["finding"], "capacity", "{c}");
    let max = c["max_rate"].as_f64().unwrap();
    assert!(
        (340.0..=420.0).contains(&max),
        "max rate {max}/s\n{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("max rate under SLO (p99<50ms): "),
        "{}",
        stdout(&o)
    );
    // The evidence: the probes with their percentiles, the last one the confirming run.
    let steps = c["steps"].as_array().unwrap();
    assert!(steps.len() >= 3);
    assert_eq!(steps.last().unwrap()["role"], "confirm");
    assert!(steps
        .iter()
        .all(|s| s["p99_ms"].as_f64().is_some() && s["hist"].is_string()));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_rate_sweep_places_the_knee_at_the_capacity() {
    let _x = exclusive();
    let t = limited(Some(4), 10, None);
    let dir = scratch("cap-sweep");
    let save = dir.join("sweep.json");
    let o = run(&[
        "http",
        &t.url(),
        "--sweep",
        "rate=100:800:100",
        "--step-duration",
        "2s",
        "--warmup",
        "500ms",
        "--save",
        save.to_str().unwrap(),
        "--report",
        dir.join("r.html").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&save).unwrap()).unwrap();
    let c = &file["capacity"];
    assert_eq!(c["steps"].as_array().unwrap().len(), 8);
    let k = c["knee"]
        .as_u64()
        .unwrap_or_else(|| panic!("no knee\n{}", stdout(&o))) as usize;
    let knee = c["steps"][k]["load"].as_f64().unwrap();
    assert!(
        (350.0..=450.0).contains(&knee),
        "knee at {knee}/s\n{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("◀ knee"), "{}", stdout(&o));
    // The report draws the curves with the knee marked.
    let html = std::fs::read_to_string(dir.join("r.html")).unwrap();
    assert!(html.contains("Latency against load") && html.contains(">knee</text>"));
    // The file is still an ordinary result file for the other commands.
    let s = run(&["summary", save.to_str().unwrap()]);
    assert_eq!(s.status.code(), Some(0), "{}", stderr(&s));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_target_failing_hard_above_a_rate_stops_the_search() {
    let _x = exclusive();
    // Errors (500) once more than 300 requests/s arrive.
    let t = limited(None, 0, Some(300.0));
    let dir = scratch("cap-hard");
    let (o, c) = search(&t.url(), &dir.join("h.json"), STEADY, &[]);
    assert_eq!(o.status.code(), Some(99), "{}\n{}", stdout(&o), stderr(&o));
    assert_eq!(c["finding"], "hard-failure", "{c}");
    let steps = c["steps"].as_array().unwrap();
    // 100, 200 pass; 400 fails hard and nothing runs after it.
    assert_eq!(steps.len(), 3, "{c}");
    assert!(
        stdout(&o).contains("failed hard at 400/s: error rate"),
        "{}",
        stdout(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_saturated_generator_is_reported_as_generator_bound_not_as_capacity() {
    let _x = exclusive();
    let t = limited(None, 0, None);
    let dir = scratch("cap-gen");
    let (o, c) = search(
        &t.url(),
        &dir.join("g.json"),
        STEADY,
        &[
            "--threads",
            "1",
            "-c",
            "10",
            "--start-rate",
            "500000",
            "--max-rate",
            "500000",
        ],
    );
    assert_eq!(c["finding"], "generator-bound", "{c}\n{}", stdout(&o));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains("generator-bound at "), "{}", stdout(&o));
    assert!(c.get("max_rate").is_none(), "no capacity is claimed: {c}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compare_flags_a_halved_capacity_as_a_regression() {
    let _x = exclusive();
    let dir = scratch("cap-compare");
    let quick = ("1s", "0s");
    let four = limited(Some(4), 10, None);
    let (o, _) = search(&four.url(), &dir.join("a.json"), quick, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    drop(four);
    let two = limited(Some(2), 10, None);
    let (o, _) = search(&two.url(), &dir.join("b.json"), quick, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let c = run(&[
        "compare",
        dir.join("a.json").to_str().unwrap(),
        dir.join("b.json").to_str().unwrap(),
    ]);
    let out = stdout(&c);
    assert!(
        out.contains("capacity: max rate under SLO "),
        "{out}\n{}",
        stderr(&c)
    );
    assert!(out.contains("), regression (noise"), "{out}");
    let j = run(&[
        "compare",
        "--json",
        dir.join("a.json").to_str().unwrap(),
        dir.join("b.json").to_str().unwrap(),
    ]);
    let change = json(&j)["capacity"]["change"].as_f64().unwrap();
    assert!((-0.65..=-0.35).contains(&change), "halved: {change}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_capacity_flags_are_usage_errors_with_a_hint() {
    let o = run(&[
        "http",
        "http://127.0.0.1:9/",
        "--find-max-rate",
        "--slo",
        "p99<fast",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--slo, column 1: 'fast' is not a duration"),
        "{}",
        stderr(&o)
    );
    let o = run(&["http", "http://127.0.0.1:9/", "--sweep", "users=1,2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cannot sweep 'users'"),
        "{}",
        stderr(&o)
    );
    let o = run(&["http", "http://127.0.0.1:9/", "--find-max-rate"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "--slo is required: {}",
        stderr(&o)
    );
}

/// A k6 script whose one scenario is `executor` (its options as JS).
fn script(dir: &std::path::Path, scenario: &str) -> std::path::PathBuf {
    let p = dir.join("s.js");
    std::fs::write(
        &p,
        format!(
            "import http from 'k6/http';\n\
             export const options = {{ scenarios: {{ api: {scenario} }} }};\n\
             export default function () {{ http.get(__ENV.BASE_URL + '/'); }}\n"
        ),
    )
    .unwrap();
    p
}

#[test]
fn a_scripts_arrival_rate_is_scaled_to_find_its_max_rate() {
    let _x = exclusive();
    let t = limited(Some(4), 10, None);
    let dir = scratch("cap-script");
    let js = script(
        &dir,
        "{ executor: 'constant-arrival-rate', rate: 100, timeUnit: '1s', duration: '3s', \
         preAllocatedVUs: 20, maxVUs: 200 }",
    );
    let save = dir.join("r.json");
    let o = run(&[
        "run",
        js.to_str().unwrap(),
        "-e",
        &format!("BASE_URL={}", t.url()),
        "--find-max-rate",
        // Script latency is not corrected for late starts; a 100 ms limit keeps one stall of
        // a busy machine from breaking a probe far below the capacity.
        "--slo",
        "p99<100ms",
        "--tolerance",
        "10%",
        "--max-rate",
        "1600",
        "--save",
        save.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&save).unwrap()).unwrap();
    let c = &file["capacity"];
    assert_eq!(c["finding"], "capacity", "{c}");
    // The script's own rate is the first probe.
    assert_eq!(c["steps"][0]["load"], 100.0);
    let max = c["max_rate"].as_f64().unwrap();
    assert!(
        (200.0..=420.0).contains(&max),
        "max rate {max}/s\n{}",
        stdout(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_scripts_vus_are_swept() {
    let _x = exclusive();
    let t = limited(Some(4), 10, None);
    let dir = scratch("cap-vus");
    let js = script(&dir, "{ executor: 'constant-vus', vus: 1, duration: '2s' }");
    let save = dir.join("v.json");
    let o = run(&[
        "run",
        js.to_str().unwrap(),
        "-e",
        &format!("BASE_URL={}", t.url()),
        "--sweep",
        "vus=2,4,16",
        "--save",
        save.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&save).unwrap()).unwrap();
    let steps = file["capacity"]["steps"].as_array().unwrap().clone();
    let loads: Vec<f64> = steps.iter().map(|s| s["load"].as_f64().unwrap()).collect();
    assert_eq!(loads, [2.0, 4.0, 16.0]);
    let x = |i: usize| steps[i]["throughput"].as_f64().unwrap();
    // Closed model: 4 VUs already keep the 4 workers busy; 16 cannot go past 400/s.
    assert!(x(1) > 1.5 * x(0), "{}", stdout(&o));
    assert!(x(2) < 440.0 && x(2) < 1.6 * x(1), "{}", stdout(&o));
    assert!(file["capacity"]["variable"] == "vus");
    let _ = std::fs::remove_dir_all(&dir);
}
