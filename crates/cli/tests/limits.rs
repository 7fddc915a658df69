//! Absurd numbers are refused before anything is allocated or waited on: huge durations,
//! VU and connection counts, endless script files. Exit 2 for flags, 104 for options (k6),
//! 107 for a script that cannot be loaded; the limit is always in the message.

mod common;
use common::*;
use std::process::Output;
use std::time::{Duration, Instant};

/// Run volley under a 2 GB address-space limit, so an unbounded allocation fails the test
/// (the process aborts) instead of the machine.
fn run_bounded(args: &[&str]) -> Output {
    let mut sh = std::process::Command::new("sh");
    sh.args(["-c", "ulimit -v 2000000 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_volley"))
        .args(args);
    sh.output().expect("sh runs")
}

fn script(dir: &std::path::Path, name: &str, src: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, src).unwrap();
    p.to_string_lossy().into_owned()
}

fn assert_refused(o: &Output, code: i32, needle: &str, what: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "{what}: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert!(err.contains(needle), "{what}: should say {needle:?}: {err}");
}

#[test]
fn huge_durations_in_flags_exit_2_with_the_limit() {
    let url = "http://127.0.0.1:1/";
    let cases: &[&[&str]] = &[
        &["http", url, "-z", "1e30"],
        &["http", url, "--timeout", "99999999999h"],
        &["http", url, "--connect-timeout", "1e300"],
        &["http", url, "--rate-stages", "10:1e300"],
        &["http", url, "--rate-stages", "10:5000h,10:5000h"],
        &["run", "x.js", "-d", "99999999999999h"],
        &["monitor", "pid:1", "-i", "1e30"],
        &["monitor", "pid:1", "-z", "1e30"],
    ];
    for args in cases {
        assert_refused(&run(args), 2, "8760h", &format!("{args:?}"));
    }
}

#[test]
fn huge_durations_in_options_exit_104_with_the_limit() {
    let dir = scratch("limits-durations");
    let cases = [
        "{ duration: '99999999999h' }",
        "{ duration: 1e300 }",
        "{ setupTimeout: 1e300 }",
        "{ teardownTimeout: '1e30' }",
        "{ stages: [{ duration: '1e30', target: 1 }] }",
        "{ scenarios: { s: { executor: 'constant-vus', duration: '1s', gracefulStop: 1e300 } } }",
        "{ scenarios: { s: { executor: 'shared-iterations', startTime: '9999999h' } } }",
    ];
    for (i, opts) in cases.iter().enumerate() {
        let src = format!("export const options = {opts};\nexport default function () {{}}\n");
        let s = script(&dir, &format!("d{i}.js"), &src);
        assert_refused(&run(&["run", "-q", &s]), 104, "8760h", opts);
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn huge_vu_counts_are_refused_before_allocating() {
    let dir = scratch("limits-vus");
    let s = script(&dir, "s.js", "export default function () {}\n");
    assert_refused(
        &run_bounded(&["run", "-q", &s, "-u", "99999999999"]),
        2,
        "100000",
        "-u",
    );
    let cases = [
        "{ vus: 99999999999, duration: '1s' }",
        "{ stages: [{ duration: '1s', target: 99999999999 }] }",
        "{ scenarios: { s: { executor: 'constant-arrival-rate', rate: 1, duration: '1s', preAllocatedVUs: 1, maxVUs: 99999999999 } } }",
        "{ scenarios: { s: { executor: 'ramping-arrival-rate', stages: [{ duration: '1s', target: 1 }], preAllocatedVUs: 99999999999 } } }",
        "{ scenarios: { a: { executor: 'constant-vus', vus: 60000, duration: '1s' }, b: { executor: 'constant-vus', vus: 60000, duration: '1s' } } }",
        "{ scenarios: { s: { executor: 'per-vu-iterations', vus: 99999999999, iterations: 99999999999 } } }",
    ];
    for (i, opts) in cases.iter().enumerate() {
        let src = format!("export const options = {opts};\nexport default function () {{}}\n");
        let s = script(&dir, &format!("v{i}.js"), &src);
        let start = Instant::now();
        let o = run_bounded(&["run", "-q", &s]);
        assert_refused(&o, 104, "limit of 100000", opts);
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{opts}: fails fast"
        );
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn quick_mode_connections_are_capped_by_the_limit_and_by_n() {
    let _serial = exclusive();
    assert_refused(
        &run(&["http", "http://127.0.0.1:1/", "-c", "1000000", "-n", "2"]),
        2,
        "65535",
        "-c",
    );
    assert_refused(
        &run(&[
            "http",
            "http://127.0.0.1:1/",
            "-q",
            "5",
            "--max-connections",
            "1000000",
        ]),
        2,
        "65535",
        "--max-connections",
    );
    let t = target();
    let dir = scratch("limits-conns");
    let file = dir.join("r.json");
    let url = format!("{}/", t.url());
    let o = run_bounded(&["http", &url, "-c", "65535", "-n", "2", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&["http", &url, "-c", "5000", "-n", "3", "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&[
        "http",
        &url,
        "-c",
        "5000",
        "-n",
        "3",
        "--quiet",
        "--save",
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(saved["options"]["connections"], 3, "-c is capped to -n");
    std::fs::remove_dir_all(dir).ok();
    t.shutdown();
}

#[test]
fn endless_script_module_and_open_files_are_refused_with_the_limit() {
    let dir = scratch("limits-files");
    let start = Instant::now();
    assert_refused(
        &run_bounded(&["run", "-q", "/dev/zero"]),
        107,
        "limit of 64 MiB",
        "script",
    );
    let imp = script(
        &dir,
        "imp.js",
        "import '/dev/zero';\nexport default function () {}\n",
    );
    assert_refused(
        &run_bounded(&["run", "-q", &imp]),
        107,
        "limit of 64 MiB",
        "module",
    );
    let open = script(
        &dir,
        "open.js",
        "const d = open('/dev/zero');\nexport default function () {}\n",
    );
    assert_refused(
        &run_bounded(&["run", "-q", &open]),
        107,
        "limit of 256 MiB",
        "open()",
    );
    assert!(start.elapsed() < Duration::from_secs(60), "fails fast");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn huge_waits_in_scripts_are_clamped_not_a_panic() {
    let dir = scratch("limits-waits");
    let port = closed_port();
    let src = format!(
        "import http from 'k6/http';\nimport {{ sleep }} from 'k6';\n\
         export const options = {{ scenarios: {{ s: {{ executor: 'shared-iterations', \
         maxDuration: '1s', gracefulStop: '0s' }} }} }};\n\
         export default function () {{\n\
           http.get('http://127.0.0.1:{port}/', {{ timeout: 1e300 }});\n\
           sleep(1e300);\n}}\n"
    );
    let s = script(&dir, "w.js", &src);
    let start = Instant::now();
    let o = run(&["run", "-q", &s]);
    let err = stderr(&o);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "the sleep was cut"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_tiny_open_model_rate_is_not_a_panic() {
    let _serial = exclusive();
    let port = closed_port();
    let url = format!("http://127.0.0.1:{port}/");
    // The second arrival is due in 1e300 s: past the deadline, not a Duration overflow.
    let start = Instant::now();
    let o = run(&["http", &url, "-q", "1e-300", "-z", "1s", "--json"]);
    let err = stderr(&o);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(3), "one refused request: {err}");
    assert_eq!(json(&o)["errors"]["refused"], 1);
    assert!(start.elapsed() < Duration::from_secs(10));
}
