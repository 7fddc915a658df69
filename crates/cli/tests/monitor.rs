//! `volley monitor` and `volley http --monitor`: helper processes that leak, idle, exit early or
//! spin, watched through /proc; the built-in target scraped over loopback. Every helper is
//! bounded twice: it ends on its own, and it is killed when its guard drops.
#![cfg(target_os = "linux")]

mod common;

use common::*;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A child process killed and reaped when dropped.
struct Helper(Child);

impl Helper {
    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(cmd: &str, args: &[&str]) -> Option<Helper> {
    match Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
    {
        Ok(c) => Some(Helper(c)),
        Err(e) => {
            eprintln!("skipping: cannot start {cmd}: {e}");
            None
        }
    }
}

/// `python3 -c CODE`, or None (the test is skipped) where there is no python3.
fn python(code: &str) -> Option<Helper> {
    let h = spawn("python3", &["-c", code])?;
    // Let the interpreter start (and any version-manager shim exec it) before sampling.
    std::thread::sleep(Duration::from_millis(700));
    Some(h)
}

/// The CSV rows (header split off) as maps column → value.
fn csv_rows(path: &std::path::Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .expect("a header")
        .split(',')
        .map(String::from)
        .collect();
    assert_eq!(&header[..3], ["time", "elapsed_s", "target"]);
    lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(String::from))
                .collect()
        })
        .collect()
}

#[test]
fn leaking_process_has_a_positive_slope_and_fails_the_slope_limit() {
    // ~5 MB/s for 8 s (then idles), written so the pages are really touched.
    let Some(h) = python(
        "import time\na=[]\nfor i in range(16):\n    a.append(b'x'*2500000)\n    time.sleep(0.5)\ntime.sleep(20)",
    ) else {
        return;
    };
    let dir = scratch("mon-leak");
    let save = dir.join("leak.json");
    let o = run(&[
        "monitor",
        &format!("leaky=pid:{}", h.pid()),
        "--duration",
        "4s",
        "--save",
        save.to_str().unwrap(),
        "--threshold",
        "monitor_rss_bytes:slope<5MB/h",
        "--threshold",
        "monitor_rss_bytes{target:leaky}:max<2GB",
    ]);
    assert_eq!(o.status.code(), Some(99), "stderr:\n{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("✗ monitor_rss_bytes{target=leaky} slope<5MB/h"),
        "{err}"
    );
    assert!(
        err.contains("✓ monitor_rss_bytes{target=leaky} max<2GB"),
        "{err}"
    );
    let r = volley_metrics::RunResult::read(&save).unwrap();
    let s = volley_monitor::drift::slope(
        &r,
        "monitor_rss_bytes",
        &[("target".to_string(), "leaky".to_string())].into(),
    )
    .unwrap();
    // 5 MB/s is 18 GB/h; allow for the interpreter's own allocator and timing.
    assert!(s > 5e9 && s < 40e9, "slope {s} B/h");
    assert!(stdout(&o).contains("leaky: RSS start"), "{}", stdout(&o));
}

#[test]
fn steady_process_passes_and_the_csv_has_one_row_per_sample() {
    let Some(h) = spawn("sleep", &["30"]) else {
        return;
    };
    std::thread::sleep(Duration::from_millis(200));
    let dir = scratch("mon-steady");
    let csv = dir.join("out.csv");
    let o = run(&[
        "monitor",
        &format!("pid:{}", h.pid()),
        "--duration",
        "3s",
        "--interval",
        "1s",
        "--csv",
        csv.to_str().unwrap(),
        "--threshold",
        "monitor_rss_bytes:slope<5MB/h",
    ]);
    assert_eq!(o.status.code(), Some(0), "stderr:\n{}", stderr(&o));
    assert!(stderr(&o).contains("✓ monitor_rss_bytes"), "{}", stderr(&o));
    let rows = csv_rows(&csv);
    assert!((3..=4).contains(&rows.len()), "{} rows", rows.len());
    for r in &rows {
        assert_eq!(r["target"], format!("pid:{}", h.pid()));
        assert!(r["rss_bytes"].parse::<f64>().unwrap() > 0.0);
        assert!(r["threads"].parse::<f64>().unwrap() >= 1.0);
        assert_eq!(r["gone"], "0");
    }
    // The live table shows one line per sample.
    assert_eq!(
        stdout(&o).lines().filter(|l| l.contains(" rss ")).count(),
        rows.len()
    );
}

/// CPU seconds (user + system) a process has used so far, straight from /proc.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .collect();
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
}

/// Tests that put load on the machine take turns, so a CPU reading is not starved by them.
static CPU_HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn cpu_heavy() -> std::sync::MutexGuard<'static, ()> {
    CPU_HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn busy_loop_reads_about_one_core() {
    let _turn = cpu_heavy();
    let Some(h) = python("import time\nt=time.time()\nwhile time.time()-t<8: pass") else {
        return;
    };
    let dir = scratch("mon-cpu");
    let csv = dir.join("cpu.csv");
    let (c0, t0) = (cpu_seconds(h.pid()), std::time::Instant::now());
    let o = run(&[
        "monitor",
        &format!("busy=pid:{}", h.pid()),
        "--duration",
        "3s",
        "--csv",
        csv.to_str().unwrap(),
        "--quiet",
    ]);
    let truth = (cpu_seconds(h.pid()) - c0) / t0.elapsed().as_secs_f64() * 100.0;
    assert_eq!(o.status.code(), Some(0), "stderr:\n{}", stderr(&o));
    let cpu: Vec<f64> = csv_rows(&csv)
        .iter()
        .filter_map(|r| r["cpu_percent"].parse().ok())
        .collect();
    assert!(cpu.len() >= 2, "{cpu:?}");
    let mean = cpu.iter().sum::<f64>() / cpu.len() as f64;
    // The reading matches what the process really got over the same time...
    assert!(
        (mean - truth).abs() <= 20.0,
        "cpu {cpu:?}, truth {truth:.1}%"
    );
    // ...which is one full core unless the (shared) machine starved it.
    if truth >= 85.0 {
        assert!((80.0..=120.0).contains(&mean), "cpu {cpu:?}");
    } else {
        eprintln!("busy helper only got {truth:.0}% of a core on this machine");
    }
}

#[test]
fn process_exiting_mid_run_is_reported_gone_and_the_run_completes() {
    let _turn = cpu_heavy();
    let t = target();
    let Some(h) = spawn("sleep", &["1.5"]) else {
        return;
    };
    let o = run(&[
        "http",
        &format!("{}/", t.url()),
        "-z",
        "3s",
        "-c",
        "2",
        "--threads",
        "1",
        "--json",
        "--monitor",
        &format!("short=pid:{}", h.pid()),
    ]);
    assert_eq!(o.status.code(), Some(0), "stderr:\n{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("volley: monitor: short is gone at"), "{err}");
    let j = json(&o);
    assert!(j["duration_s"].as_f64().unwrap() >= 2.9, "{j}");
    let gone = j["monitor"]["short"]["gone_at_s"]
        .as_f64()
        .expect("gone_at_s");
    assert!((1.0..=3.0).contains(&gone), "{gone}");
    assert!(
        j["monitor"]["short"]["memory_start_bytes"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    drop(h);
}

/// `volley target` as its own process (so it has its own pid); returns it and its URL.
fn target_process() -> (Helper, String) {
    let mut c = volley()
        .args(["target", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = c.stdout.take().unwrap();
    let h = Helper(c);
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line).unwrap();
    let url = line
        .trim()
        .rsplit(' ')
        .next()
        .expect("listening line")
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    (h, url)
}

#[test]
fn http_monitor_puts_target_gauges_into_the_result_files_series() {
    let _turn = cpu_heavy();
    let (srv, url) = target_process();
    let dir = scratch("mon-http");
    let save = dir.join("run.json");
    let o = run(&[
        "http",
        &format!("{url}/"),
        "-z",
        "3s",
        "-c",
        "2",
        "--threads",
        "1",
        "--monitor",
        &format!("api=pid:{}", srv.pid()),
        "--monitor",
        &format!("prom=url:{url}/metrics#volley_target_requests_total"),
        "--save",
        save.to_str().unwrap(),
        "--threshold",
        "monitor_rss_bytes{target:api}:max<4GB",
    ]);
    assert_eq!(o.status.code(), Some(0), "stderr:\n{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("\nTarget\n"), "{text}");
    assert!(text.contains("  api: RSS start"), "{text}");
    let r = volley_metrics::RunResult::read(&save).unwrap();
    let api: volley_metrics::TagSet = [("target".to_string(), "api".to_string())].into();
    for m in [
        "monitor_rss_bytes",
        "monitor_cpu_percent",
        "monitor_threads",
        "monitor_fds",
        "monitor_gone",
    ] {
        assert!(r.metric(m, &api).is_some(), "missing total {m}");
    }
    let with_rss = r
        .series
        .points
        .iter()
        .filter(|p| p.get("monitor_rss_bytes", &api).is_some())
        .count();
    assert!(with_rss >= 3, "{with_rss} points carry RSS");
    // The scraped counter grows with the load, on the same timeline.
    let prom: volley_metrics::TagSet = [("target".to_string(), "prom".to_string())].into();
    match &r
        .metric("monitor_volley_target_requests_total", &prom)
        .expect("scraped series")
        .value
    {
        volley_metrics::TotalValue::Gauge { max, .. } => assert!(*max > 100.0, "{max}"),
        v => panic!("{v:?}"),
    }
    // And the CPU of a server under load is visible.
    match &r.metric("monitor_cpu_percent", &api).unwrap().value {
        volley_metrics::TotalValue::Gauge { max, .. } => assert!(*max > 1.0, "{max}"),
        v => panic!("{v:?}"),
    }
}

#[test]
fn scraping_the_built_in_target_writes_its_series_to_csv() {
    let t = target();
    let dir = scratch("mon-prom");
    let csv = dir.join("prom.csv");
    let o = run(&[
        "monitor",
        &format!("url:{}/metrics", t.url()),
        "--duration",
        "1s",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "stderr:\n{}", stderr(&o));
    let rows = csv_rows(&csv);
    assert!(!rows.is_empty());
    assert!(
        rows[0].contains_key("volley_target_requests_total"),
        "{rows:?}"
    );
    assert!(stdout(&o).contains("volley_target_requests_total="));
}

#[test]
fn bad_specs_are_usage_errors_and_missing_pids_failures() {
    let o = run(&["monitor", "nonsense", "--duration", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("expected pid:N"), "{}", stderr(&o));
    let o = run(&["monitor", "pid:4294967294", "--duration", "1s"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = run(&[
        "monitor",
        "pid:1",
        "--duration",
        "1s",
        "--threshold",
        "monitor_rss_bytes:slope<5XB/h",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = run(&[
        "http",
        "http://127.0.0.1:9/",
        "--monitor",
        "pid:4294967294",
        "-z",
        "1s",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

/// `tests/k6/monitor_drift.js`.
fn drift_script() -> String {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/k6/monitor_drift.js")
        .to_string_lossy()
        .into_owned()
}

/// ~5 MB/s for `secs` seconds, then idle; pages really touched.
fn leaker(secs: u32) -> Option<Helper> {
    python(&format!(
        "import time\na=[]\nfor i in range({}):\n    a.append(b'x'*2500000)\n    time.sleep(0.5)\ntime.sleep(30)",
        secs * 2
    ))
}

fn threshold<'a>(
    r: &'a volley_metrics::RunResult,
    metric: &str,
    expr: &str,
) -> &'a volley_metrics::ThresholdResult {
    r.thresholds
        .iter()
        .find(|t| t.metric == metric && t.expression == expr)
        .unwrap_or_else(|| panic!("no threshold {metric} {expr} in {:?}", r.thresholds))
}

#[test]
fn script_slope_threshold_fails_on_a_leaking_target_with_99() {
    let Some(h) = leaker(30) else {
        return;
    };
    let t = target();
    let dir = scratch("run-mon-leak");
    let save = dir.join("run.json");
    let o = run(&[
        "run",
        &drift_script(),
        "-e",
        &format!("BASE={}", t.url()),
        "--monitor",
        &format!("app=pid:{}", h.pid()),
        "--save",
        save.to_str().unwrap(),
        "--summary-mode",
        "legacy",
    ]);
    assert_eq!(o.status.code(), Some(99), "stderr:\n{}", stderr(&o));
    assert!(
        stderr(&o).contains("thresholds on metrics 'monitor_rss_bytes' have been crossed"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("monitor_rss_bytes slope<1MB/h: observed "),
        "{}",
        stderr(&o)
    );
    let text = stdout(&o);
    assert!(text.contains("✗ monitor_rss_bytes"), "{text}");
    assert!(
        text.contains("\nTarget\n") && text.contains("  app: RSS start"),
        "{text}"
    );
    let r = volley_metrics::RunResult::read(&save).unwrap();
    let slope = threshold(&r, "monitor_rss_bytes", "slope<1MB/h");
    assert!(!slope.ok && !slope.aborted, "{slope:?}");
    // 5 MB/s is 18 GB/h.
    assert!(slope.observed.unwrap() > 5e9, "{slope:?}");
    assert!(threshold(&r, "monitor_rss_bytes{target:app}", "max<2GB").ok);
    assert!(threshold(&r, "http_req_duration", "drift(p95)<1000%").ok);
}

#[test]
fn script_drift_thresholds_pass_on_a_steady_target_and_series_are_saved() {
    let Some(h) = spawn("sleep", &["30"]) else {
        return;
    };
    std::thread::sleep(Duration::from_millis(200));
    let t = target();
    let dir = scratch("run-mon-steady");
    let (save, export) = (dir.join("run.json"), dir.join("export.json"));
    let o = run(&[
        "run",
        &drift_script(),
        "-e",
        &format!("BASE={}", t.url()),
        "--monitor",
        &format!("app=pid:{}", h.pid()),
        "--monitor-interval",
        "1s",
        // The CLI form adds to options.thresholds.
        "--threshold",
        "monitor_threads{target:app}:max<=1",
        "--threshold",
        "http_req_duration:drift(p99)<1000%",
        "--save",
        save.to_str().unwrap(),
        "--summary-export",
        export.to_str().unwrap(),
        "--summary-mode",
        "legacy",
    ]);
    assert_eq!(o.status.code(), Some(0), "stderr:\n{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("✓ monitor_rss_bytes"), "{text}");
    assert!(text.contains("✓ http_req_duration"), "{text}");
    assert!(text.contains("  app: RSS start"), "{text}");
    let r = volley_metrics::RunResult::read(&save).unwrap();
    assert!(r.thresholds.iter().all(|t| t.ok), "{:?}", r.thresholds);
    assert_eq!(r.thresholds.len(), 6, "{:?}", r.thresholds);
    let slope = threshold(&r, "monitor_rss_bytes", "slope<1MB/h");
    assert_eq!(slope.observed, Some(0.0), "{slope:?}");
    assert!(threshold(&r, "http_req_duration", "drift(p95)<1000%")
        .observed
        .is_some());
    assert!(threshold(&r, "monitor_threads{target:app}", "max<=1").ok);
    // The monitor_* gauges are in the totals and on the series' timeline.
    let app: volley_metrics::TagSet = [("target".to_string(), "app".to_string())].into();
    for m in ["monitor_rss_bytes", "monitor_threads", "monitor_fds"] {
        assert!(r.metric(m, &app).is_some(), "missing total {m}");
    }
    let with_rss = r
        .series
        .points
        .iter()
        .filter(|p| p.get("monitor_rss_bytes", &app).is_some())
        .count();
    assert!(with_rss >= 5, "{with_rss} points carry RSS");
    // ... and in the k6 summary export, as gauges.
    let e: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    assert!(
        e["metrics"]["monitor_rss_bytes"]["value"].as_f64().unwrap() > 0.0,
        "{e}"
    );
    assert_eq!(
        e["metrics"]["monitor_rss_bytes"]["thresholds"]["slope<1MB/h"],
        false
    );
}

#[test]
fn script_slope_with_abort_on_fail_stops_the_run_after_the_warm_up() {
    let Some(h) = leaker(45) else {
        return;
    };
    let t = target();
    let dir = scratch("run-mon-abort");
    let save = dir.join("run.json");
    let started = std::time::Instant::now();
    let o = run(&[
        "run",
        &drift_script(),
        "-e",
        &format!("BASE={}", t.url()),
        "-e",
        "ABORT=1",
        "-e",
        "DURATION=40s",
        "--monitor",
        &format!("app=pid:{}", h.pid()),
        "--save",
        save.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(99), "stderr:\n{}", stderr(&o));
    // Warm-up: a tenth of 40 s, at least 10 s; then 10 samples.
    assert!(
        started.elapsed() < Duration::from_secs(35),
        "the 40 s test was not stopped ({:?})",
        started.elapsed()
    );
    assert!(stderr(&o).contains("abortOnFail"), "{}", stderr(&o));
    let r = volley_metrics::RunResult::read(&save).unwrap();
    assert!(
        r.meta.duration_s >= 15.0,
        "judged before the warm-up: {}",
        r.meta.duration_s
    );
    let slope = threshold(&r, "monitor_rss_bytes", "slope<1MB/h");
    assert!(!slope.ok && slope.aborted, "{slope:?}");
}

#[test]
fn script_monitor_thresholds_need_a_monitor() {
    let t = target();
    let o = run(&["run", &drift_script(), "-e", &format!("BASE={}", t.url())]);
    assert_eq!(o.status.code(), Some(104), "stderr:\n{}", stderr(&o));
    assert!(stderr(&o).contains("add --monitor"), "{}", stderr(&o));
    let o = run(&[
        "run",
        &drift_script(),
        "--monitor",
        "pid:1",
        "--threshold",
        "monitor_rss_bytes:slope<5XB/h",
    ]);
    assert_eq!(o.status.code(), Some(104), "stderr:\n{}", stderr(&o));
    assert!(stderr(&o).contains("unknown unit 'XB'"), "{}", stderr(&o));
}
