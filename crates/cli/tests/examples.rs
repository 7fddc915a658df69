//! The example suites (`examples/*.js`) end to end: the demo service in-process on
//! 127.0.0.1:0 with a scratch data directory, seeded with the reduced data set, and each
//! example run by the real `volley` binary in the smoke profile (shortened to ~2 s). Every
//! run must exit 0 with all checks passed and all thresholds met; the byte counters of
//! download.js, upload-direct.js and upload-chunked.js must equal the bytes the service
//! reports on /metrics. When a k6 binary is at hand (`K6=/path/to/k6`, or `k6` on PATH) the
//! same scripts are also run under k6, one iteration each.

mod common;
use common::*;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use volley_demo_service::{spawn, DemoConfig, RunningDemo};

/// How long one example may take before the test kills it.
const RUN_LIMIT: Duration = Duration::from_secs(60);

struct Demo {
    demo: RunningDemo,
    dir: Scratch,
}

/// The seeded demo service shared by the tests of this file (started on first use).
fn demo() -> &'static Demo {
    static DEMO: OnceLock<Demo> = OnceLock::new();
    DEMO.get_or_init(|| {
        remove_stale_dirs();
        let dir = scratch("examples-demo");
        let mut cfg = DemoConfig::new(dir.join("data"));
        cfg.threads = 2;
        let demo = spawn(cfg).expect("demo service starts");
        let report = volley_demo_service::seed::seed_blocking(&demo.url(), true)
            .expect("seeding the demo service");
        assert_eq!(report.folders["list-1000"].files, 1000);
        Demo { demo, dir }
    })
}

/// The data directory lives as long as the test process (a static is never dropped), so each
/// run removes what earlier runs left: `volley-it-examples-demo-PID` of processes now gone.
fn remove_stale_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("volley-it-examples-demo-") else {
            continue;
        };
        let gone = pid.parse::<u32>().is_ok_and(|p| {
            p != std::process::id()
                && Path::new("/proc/self").exists()
                && !Path::new(&format!("/proc/{p}")).exists()
        });
        if gone {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

struct Ran {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    summary: Value,
    took: Duration,
}

impl Ran {
    fn why(&self) -> String {
        format!(
            "exit {:?} after {:?}\nstdout:\n{}\nstderr:\n{}",
            self.status.code(),
            self.took,
            self.stdout,
            self.stderr
        )
    }

    fn metric(&self, name: &str) -> &Value {
        &self.summary["metrics"][name]
    }
}

/// Runs `cmd` with stdout/stderr to files, killing it after RUN_LIMIT.
fn bounded(mut cmd: Command, dir: &Path) -> (ExitStatus, String, String, Duration) {
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap())
        .spawn()
        .expect("the binary starts");
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{cmd:?} still running after {RUN_LIMIT:?}; killed\nstdout:\n{}\nstderr:\n{}",
                std::fs::read_to_string(&out).unwrap_or_default(),
                std::fs::read_to_string(&err).unwrap_or_default(),
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status,
        std::fs::read_to_string(&out).unwrap_or_default(),
        std::fs::read_to_string(&err).unwrap_or_default(),
        start.elapsed(),
    )
}

/// A fresh directory under `base` for one run of `script` (its stdout, stderr and export).
/// Numbered per run: two tests running the same script at once (`search` and
/// `unknown_profile_is_refused` both run search.js, and only one of them is serial) once
/// shared `base/search`, and one wiped the other's files mid-run.
fn run_dir(base: &Path, script: &str) -> PathBuf {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = base.join(format!("{}-{n}", script.trim_end_matches(".js")));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `volley run examples/SCRIPT -e BASE_URL=... -e PROFILE=smoke [extra] --summary-export F -q`.
fn run_example(script: &str, extra: &[&str]) -> Ran {
    let d = demo();
    let dir = run_dir(&d.dir, script);
    let export = dir.join("summary.json");
    let mut cmd = volley();
    cmd.arg("run")
        .arg(examples().join(script))
        .args(["-e", &format!("BASE_URL={}", d.demo.url())])
        .args(["-e", "PROFILE=smoke", "--no-system-env", "-q"])
        .args(extra)
        .arg("--summary-export")
        .arg(&export);
    let (status, stdout, stderr, took) = bounded(cmd, &dir);
    let summary = std::fs::read(&export)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    Ran {
        status,
        stdout,
        stderr,
        summary,
        took,
    }
}

/// Exit 0, every check passed (and some ran), every threshold met.
fn assert_green(r: &Ran) {
    assert_eq!(r.status.code(), Some(0), "{}", r.why());
    let checks = r.metric("checks");
    assert_eq!(
        checks["fails"],
        0,
        "failed checks: {}\n{}",
        r.summary["root_group"],
        r.why()
    );
    assert!(
        checks["passes"].as_u64().unwrap_or(0) > 0,
        "no checks ran\n{}",
        r.why()
    );
    let mut thresholds = 0;
    for (name, m) in r.summary["metrics"].as_object().expect("metrics") {
        for (expr, failed) in m["thresholds"].as_object().into_iter().flatten() {
            thresholds += 1;
            assert_eq!(
                failed,
                false,
                "threshold {name}: {expr} failed\n{}",
                r.why()
            );
        }
    }
    assert!(
        thresholds >= 3,
        "the example declares thresholds\n{}",
        r.why()
    );
    assert_eq!(
        r.metric("http_req_failed")["passes"],
        0,
        "no failed requests\n{}",
        r.why()
    );
}

/// The service's counters on /metrics (unlabelled lines only).
fn service_counters() -> BTreeMap<String, f64> {
    get_body(demo().demo.local_addr(), "/metrics")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_owned(), v.trim().parse().ok()?))
        })
        .collect()
}

fn counter_delta(name: &str, before: &BTreeMap<String, f64>) -> f64 {
    service_counters()[name] - before[name]
}

/// Runs one example in the smoke profile, ~2 s, and asserts it is green.
fn smoke(script: &str, extra: &[&str]) -> Ran {
    let mut args = vec!["-d", "2s"];
    args.extend_from_slice(extra);
    let r = run_example(script, &args);
    assert_green(&r);
    r
}

#[test]
fn auth_login() {
    let _serial = exclusive();
    let r = smoke("auth-login.js", &[]);
    assert!(r.metric("logins")["count"].as_f64().unwrap() > 0.0);
    assert!(r.metric("login_duration")["p(95)"].as_f64().is_some());
}

#[test]
fn auth_refresh() {
    let _serial = exclusive();
    let r = smoke("auth-refresh.js", &[]);
    assert!(r.metric("refreshes")["count"].as_f64().unwrap() > 0.0);
}

#[test]
fn folder_list_100_and_1000() {
    let _serial = exclusive();
    for size in ["100", "1000"] {
        let r = smoke("folder-list.js", &["-e", &format!("LIST_SIZE={size}")]);
        assert!(
            r.metric("list_entries")["count"].as_f64().unwrap() > 0.0,
            "{size}"
        );
    }
}

#[test]
fn folder_list_10000_needs_the_full_seed() {
    let _serial = exclusive();
    // The reduced data set has no list-10000: setup fails with the seeding hint (k6's 107).
    let r = run_example("folder-list.js", &["-d", "1s", "-e", "LIST_SIZE=10000"]);
    assert_eq!(r.status.code(), Some(107), "{}", r.why());
    assert!(r.stderr.contains("volley demo seed"), "{}", r.why());
}

#[test]
fn search() {
    let _serial = exclusive();
    let r = smoke("search.js", &[]);
    assert!(r.metric("search_hits")["count"].as_f64().unwrap() > 0.0);
}

#[test]
fn download_bytes_match_the_service() {
    let _serial = exclusive();
    let _ = demo();
    let before = service_counters();
    let r = smoke("download.js", &[]);
    let service = counter_delta("volley_demo_download_bytes_total", &before);
    let script = r.metric("bytes_downloaded")["count"].as_f64().unwrap();
    assert!(
        script >= (5 << 20) as f64,
        "at least one whole download: {script}"
    );
    assert_eq!(
        script, service,
        "script counted {script} B, service sent {service} B"
    );
}

#[test]
fn upload_direct_bytes_match_the_service() {
    let _serial = exclusive();
    let _ = demo();
    let before = service_counters();
    let r = smoke("upload-direct.js", &["-e", "FILE_KB=256"]);
    let service = counter_delta("volley_demo_upload_bytes_total", &before);
    let script = r.metric("bytes_uploaded")["count"].as_f64().unwrap();
    assert!(script > 0.0);
    assert_eq!(
        script, service,
        "script counted {script} B, service took {service} B"
    );
}

#[test]
fn upload_chunked_bytes_match_the_service() {
    let _serial = exclusive();
    let _ = demo();
    let before = service_counters();
    let r = smoke(
        "upload-chunked.js",
        &["-e", "FILE_KB=2048", "-e", "CHUNK_KB=512"],
    );
    let service = counter_delta("volley_demo_upload_bytes_total", &before);
    let script = r.metric("bytes_uploaded")["count"].as_f64().unwrap();
    assert!(r.metric("chunked_uploads")["count"].as_f64().unwrap() > 0.0);
    assert!(r.metric("chunked_flow_duration")["p(95)"]
        .as_f64()
        .is_some());
    assert_eq!(
        script, service,
        "script counted {script} B, service took {service} B"
    );
}

#[test]
fn batch_move() {
    let _serial = exclusive();
    let r = smoke("batch-move.js", &[]);
    assert!(r.metric("moved_entries")["count"].as_f64().unwrap() > 0.0);
}

#[test]
fn webdav_rw() {
    let _serial = exclusive();
    let r = smoke("webdav-rw.js", &[]);
    assert!(r.metric("dav_bytes_written")["count"].as_f64().unwrap() > 0.0);
    assert!(r.metric("dav_bytes_read")["count"].as_f64().unwrap() > 0.0);
}

#[test]
fn mixed_ramp_follows_stages_from_env() {
    let _serial = exclusive();
    let r = run_example("mixed-ramp.js", &["-e", "STAGES=1:500ms,3:1s,0:500ms"]);
    assert_green(&r);
    assert_eq!(
        r.metric("vus_max")["value"].as_f64(),
        Some(3.0),
        "{}",
        r.why()
    );
    assert!(r.metric("mixed_ops")["count"].as_f64().unwrap() > 0.0);
    // A bad STAGES value is an init error (k6's 107), with the offending part.
    let bad = run_example("mixed-ramp.js", &["-e", "STAGES=1:5s,fast"]);
    assert_eq!(bad.status.code(), Some(107), "{}", bad.why());
    // (a logfmt line on a piped stderr, as k6: its quotes are escaped)
    assert!(bad.stderr.contains("\\\"fast\\\""), "{}", bad.why());
}

/// The ramp reaches its targets: 3 VUs active on the plateau (k6 runs 3 here).
#[test]
fn mixed_ramp_reaches_the_stage_target() {
    let _serial = exclusive();
    let r = run_example("mixed-ramp.js", &["-e", "STAGES=3:1s,3:2s,0:500ms"]);
    assert_green(&r);
    assert_eq!(
        r.metric("vus")["max"].as_f64(),
        Some(3.0),
        "peak active VUs\n{}",
        r.why()
    );
}

#[test]
fn soak_mixed() {
    let _serial = exclusive();
    let r = smoke("soak-mixed.js", &[]);
    assert!(r.metric("bytes_downloaded")["count"].as_f64().unwrap() > 0.0);
}

/// Regression: `unknown_profile_is_refused` failed with an empty stderr when `search` ran at
/// the same time (same scratch folder, one test deleting the other's output files).
#[test]
fn runs_of_the_same_script_get_their_own_dir() {
    let base = scratch("examples-run-dirs");
    let (a, b) = (run_dir(&base, "search.js"), run_dir(&base, "search.js"));
    assert_ne!(a, b);
    std::fs::write(a.join("stderr"), "a").unwrap();
    let _ = run_dir(&base, "search.js");
    assert_eq!(std::fs::read_to_string(a.join("stderr")).unwrap(), "a");
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn unknown_profile_is_refused() {
    let r = run_example("search.js", &["-e", "PROFILE=turbo"]);
    assert_eq!(r.status.code(), Some(107), "{}", r.why());
    assert!(r.stderr.contains("PROFILE=turbo"), "{}", r.why());
}

/// Every example under k6 too, when a k6 binary is available (skipped otherwise).
#[test]
fn examples_run_under_k6() {
    let k6 = std::env::var("K6").ok().map(PathBuf::from).or_else(|| {
        std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("k6"))
                .find(|f| f.is_file())
        })
    });
    let Some(k6) = k6 else {
        eprintln!("k6 not found (set K6=/path/to/k6): skipped");
        return;
    };
    let _serial = exclusive();
    let d = demo();
    for script in [
        "auth-login.js",
        "auth-refresh.js",
        "folder-list.js",
        "search.js",
        "download.js",
        "upload-direct.js",
        "upload-chunked.js",
        "batch-move.js",
        "webdav-rw.js",
        "mixed-ramp.js",
        "soak-mixed.js",
    ] {
        let dir = d.dir.join(format!("k6-{script}"));
        std::fs::create_dir_all(&dir).unwrap();
        let export = dir.join("summary.json");
        let mut cmd = Command::new(&k6);
        cmd.arg("run")
            .arg(examples().join(script))
            .args(["-e", &format!("BASE_URL={}", d.demo.url())])
            .args(["-e", "PROFILE=smoke", "-e", "VUS=1", "-e", "ITERATIONS=3"])
            .args(["-q", "--no-usage-report", "--address", "127.0.0.1:0"])
            .arg("--summary-export")
            .arg(&export);
        let (status, stdout, stderr, _) = bounded(cmd, &dir);
        assert_eq!(status.code(), Some(0), "k6 {script}:\n{stdout}\n{stderr}");
        let s: Value = serde_json::from_slice(&std::fs::read(&export).unwrap()).unwrap();
        assert_eq!(
            s["metrics"]["checks"]["fails"], 0,
            "k6 {script}: {}",
            s["root_group"]
        );
    }
}
