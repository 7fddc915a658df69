//! `volley demo`, part two: the example suites against the demo service. It starts the demo
//! service in-process on a free loopback port with a scratch data directory, seeds the
//! reduced data set, runs every script of `examples/` in one profile (smoke by default) the
//! way `volley run` does, and prints one baseline table. Each run's result file and HTML
//! report are saved; `results/tour.json` holds the table for machines (CI, the tests).
//!
//! The tour is also an end-to-end check: a crossed threshold or any failed check fails it
//! (99), a script error fails it with `volley run`'s code, and the body bytes a script
//! counted must equal what the service reports on `/metrics` (else 1: Volley miscounted).
//! The scripts are embedded, so the tour needs no checkout; they are written to the output
//! directory first, because the runtime loads a script and its `./lib` imports from disk.

use crate::args::{DemoArgs, DemoProfile};
use crate::{exit, report_cmd, run_cmd};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use volley_engine::RunControl;
use volley_js::{CliOptions, RunError, RunOutput};
use volley_metrics::{Agg, RunResult};
use volley_report::view::{self, Figure, Sel};

/// One example suite, embedded so `volley demo` works from an installed binary.
struct Example {
    /// The script's file name without `.js`: the row in the table.
    name: &'static str,
    source: &'static str,
}

macro_rules! example {
    ($name:literal) => {
        Example {
            name: $name,
            source: include_str!(concat!("../../../examples/", $name, ".js")),
        }
    };
}

/// In the order of `docs/examples.md`: single scenarios first, the mixes last.
static EXAMPLES: [Example; 11] = [
    example!("auth-login"),
    example!("auth-refresh"),
    example!("folder-list"),
    example!("search"),
    example!("download"),
    example!("upload-direct"),
    example!("upload-chunked"),
    example!("batch-move"),
    example!("webdav-rw"),
    example!("mixed-ramp"),
    example!("soak-mixed"),
];

/// `examples/lib/`, which every example imports.
const LIB: [(&str, &str); 3] = [
    ("config.js", include_str!("../../../examples/lib/config.js")),
    ("api.js", include_str!("../../../examples/lib/api.js")),
    ("mix.js", include_str!("../../../examples/lib/mix.js")),
];

/// Script counters of file body bytes, by direction, and the service counter each must
/// equal. A script is held to a direction only when it declares one of the counters (e.g.
/// upload-direct.js reads files back to verify them without counting those bytes).
const BYTE_CHECKS: [(&str, &[&str], &str); 2] = [
    (
        "downloaded",
        &["bytes_downloaded", "dav_bytes_read"],
        "volley_demo_download_bytes_total",
    ),
    (
        "uploaded",
        &["bytes_uploaded", "dav_bytes_written"],
        "volley_demo_upload_bytes_total",
    ),
];

/// What the tour will do, checked before anything runs (bad flags are exit 2 up front, not
/// after the intro has already taken its time).
pub struct Plan {
    examples: Vec<&'static Example>,
    env: Vec<(String, String)>,
    profile: DemoProfile,
    duration: Option<Duration>,
}

pub fn plan(a: &DemoArgs) -> Result<Plan, String> {
    let mut examples = Vec::new();
    for want in &a.only {
        let name = want.trim().trim_end_matches(".js");
        match EXAMPLES.iter().find(|e| e.name == name) {
            Some(e) if !examples.iter().any(|x: &&Example| x.name == e.name) => examples.push(e),
            Some(_) => {}
            None => {
                return Err(format!(
                    "--only '{want}': no such example; the tour has {}",
                    names().join(", ")
                ))
            }
        }
    }
    if examples.is_empty() {
        examples = EXAMPLES.iter().collect();
    } else {
        // Keep the table in the tour's order, whatever order the flag named them in.
        examples.sort_by_key(|e| EXAMPLES.iter().position(|x| x.name == e.name));
    }
    let mut env = Vec::new();
    for kv in &a.env {
        match kv.split_once('=') {
            Some(("BASE_URL", _)) => {
                return Err(
                    "-e BASE_URL: the tour runs against its own demo service on loopback; \
                     use `volley run` for another service"
                        .into(),
                )
            }
            Some(("PROFILE", _)) => return Err("-e PROFILE: use --profile smoke|load".into()),
            Some((k, v)) if !k.is_empty() => env.push((k.to_string(), v.to_string())),
            _ => return Err(format!("-e/--env '{kv}': expected KEY=VALUE")),
        }
    }
    Ok(Plan {
        examples,
        env,
        profile: a.profile,
        duration: a.duration,
    })
}

fn names() -> Vec<&'static str> {
    EXAMPLES.iter().map(|e| e.name).collect()
}

/// One example's outcome: the table row and `tour.json` entry.
struct Row {
    name: &'static str,
    /// `volley run`'s exit code for this run, or 99 for failed checks alone.
    code: i32,
    /// Why the run produced no figures (script error, ...).
    error: Option<String>,
    took: Duration,
    result: Option<RunResult>,
    checks: (u64, u64),
    thresholds: (usize, usize),
    /// (direction, script's count, service's count); `None`: /metrics could not be read.
    bytes: Vec<(&'static str, f64, Option<f64>)>,
}

impl Row {
    fn figure(&self, metric: &str, f: Figure) -> Option<f64> {
        view::total_figure(self.result.as_ref()?, &Sel::all(metric), f)
    }

    fn bytes_ok(&self) -> bool {
        self.bytes.iter().all(|(_, s, v)| Some(*s) == *v)
    }
}

/// The service and its scratch data directory; both go away when this is dropped, on
/// every path out of the tour.
struct Service {
    demo: Option<volley_demo_service::RunningDemo>,
    data: PathBuf,
}

impl Drop for Service {
    fn drop(&mut self) {
        if let Some(d) = self.demo.take() {
            d.shutdown();
        }
        let _ = std::fs::remove_dir_all(&self.data);
    }
}

/// Runs the tour; `dir` is the demo's output directory, `ctl` the demo's control (Ctrl-C).
pub fn run(p: &Plan, dir: &Path, ctl: &RunControl) -> i32 {
    let scripts = dir.join("examples");
    let results = dir.join("results");
    if let Err(e) = write_scripts(&scripts, &results, &p.examples) {
        return exit::fail(&e);
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return exit::fail(&format!("cannot start a runtime: {e}")),
    };

    // A fresh data directory every time: the seed and the byte counts start from zero.
    let data = dir.join("service-data");
    let _ = std::fs::remove_dir_all(&data);
    let mut cfg = volley_demo_service::DemoConfig::new(&data);
    cfg.threads = 2;
    let service = match volley_demo_service::spawn(cfg) {
        Ok(d) => Service {
            demo: Some(d),
            data,
        },
        Err(e) => {
            let _ = std::fs::remove_dir_all(&data);
            return exit::fail(&format!("cannot start the demo service: {e}"));
        }
    };
    let base = service.demo.as_ref().map(|d| d.url()).unwrap_or_default();
    let profile = p.profile.name();
    outln!(
        "\n== 3. The example suites against the demo service ({profile} profile)\n   (same as: volley demo serve; volley demo seed --small; then per example:\n    volley run {}/NAME.js -e BASE_URL={base} -e PROFILE={profile} --save {}/NAME.json)\n",
        scripts.display(),
        results.display()
    );
    outln!("demo service listening on {base}; seeding the reduced data set ...");
    let seeded = match rt.block_on(volley_demo_service::seed::seed(&base, true)) {
        Ok(r) => r,
        Err(e) => return exit::fail(&format!("seeding the demo service failed: {e}")),
    };
    let files: i64 = seeded.folders.values().map(|f| f.files).sum();
    outln!(
        "seeded in {:.1}s: {files} files in {} folders, a {} fixture, {} WebDAV files\n",
        seeded.took_ms as f64 / 1000.0,
        seeded.folders.len(),
        volley_report::fmt::bytes(seeded.fixture_size as f64),
        seeded.webdav_files
    );

    let mut rows = Vec::new();
    let n = p.examples.len();
    for (i, ex) in p.examples.iter().enumerate() {
        if ctl.was_interrupted() {
            break;
        }
        let label = format!("[{:>2}/{n}] {}", i + 1, ex.name);
        let ticker = Ticker::start(label.clone());
        let row = run_example(&rt, ex, p, &base, &scripts, &results, ctl);
        drop(ticker);
        outln!(
            "  {label:<24} {:>5.1}s  {}",
            row.took.as_secs_f64(),
            verdict(&row)
        );
        rows.push(row);
    }
    drop(service);

    outln!("");
    exit::print(&table(&rows));
    let code = finish(&rows, ctl);
    let tour = tour_json(p, &base, &results, &rows, code);
    let tour_path = results.join("tour.json");
    if let Err(e) = std::fs::write(
        &tour_path,
        serde_json::to_string_pretty(&tour).unwrap_or_default() + "\n",
    ) {
        return exit::fail(&format!("cannot write {}: {e}", tour_path.display()));
    }
    outln!(
        "\nSaved in {}: NAME.json (result file: volley summary, report, compare), NAME.html \
         (report), tour.json (this table)",
        results.display()
    );
    code
}

/// Writes the scripts (and `lib/`) the runs load, and clears the results of an earlier tour
/// so the directory never mixes two runs. Only files the tour writes are removed.
fn write_scripts(scripts: &Path, results: &Path, examples: &[&Example]) -> Result<(), String> {
    let lib = scripts.join("lib");
    for d in [&lib, results] {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    let mut files: Vec<(PathBuf, &str)> = LIB.iter().map(|(f, s)| (lib.join(f), *s)).collect();
    files.extend(
        examples
            .iter()
            .map(|e| (scripts.join(format!("{}.js", e.name)), e.source)),
    );
    for (path, text) in files {
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    for e in &EXAMPLES {
        for ext in ["json", "html"] {
            let _ = std::fs::remove_file(results.join(format!("{}.{ext}", e.name)));
        }
    }
    let _ = std::fs::remove_file(results.join("tour.json"));
    Ok(())
}

fn run_example(
    rt: &tokio::runtime::Runtime,
    ex: &Example,
    p: &Plan,
    base: &str,
    scripts: &Path,
    results: &Path,
    ctl: &RunControl,
) -> Row {
    let script = scripts.join(format!("{}.js", ex.name));
    let mut pairs = vec![
        ("BASE_URL".to_string(), base.to_string()),
        ("PROFILE".to_string(), p.profile.name().to_string()),
    ];
    pairs.extend(p.env.iter().cloned());
    // The command line that repeats this run, recorded in the result file.
    let mut command = vec![
        "volley".to_string(),
        "run".into(),
        script.display().to_string(),
    ];
    for (k, v) in &pairs {
        command.extend(["-e".to_string(), format!("{k}={v}")]);
    }
    if let Some(d) = p.duration {
        command.extend(["-d".to_string(), format!("{}ms", d.as_millis())]);
    }
    let cli = CliOptions {
        duration: p.duration,
        ..CliOptions::default()
    };
    let before = rt.block_on(service_counters(base));
    let start = Instant::now();
    // The process environment stays out (`--no-system-env`): a PROFILE or P95_MS exported
    // in the user's shell must not change what the tour measures.
    let out = volley_js::run(
        &script,
        volley_js::environment(&pairs, false),
        &cli,
        0,
        command,
        &ctl.child(),
    );
    let took = start.elapsed();
    let mut row = Row {
        name: ex.name,
        code: exit::OK,
        error: None,
        took,
        result: None,
        checks: (0, 0),
        thresholds: (0, 0),
        bytes: Vec::new(),
    };
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            // The codes `volley run` gives for the same failures.
            row.code = match &e {
                RunError::Script(_) => run_cmd::SCRIPT_EXCEPTION,
                RunError::Config(_) => run_cmd::INVALID_CONFIG,
                RunError::SetupTimeout(_) => run_cmd::SETUP_TIMEOUT,
                RunError::Other(_) => exit::FAILURE,
                RunError::Interrupted(_) => exit::INTERRUPTED,
            };
            row.error = Some(e.to_string());
            return row;
        }
    };
    let after = rt.block_on(service_counters(base));
    let r = &out.result;
    if let Some((Agg::Rate { trues, total }, _)) = view::total(r, &Sel::all("checks")) {
        row.checks = (trues, total);
    }
    row.thresholds = (
        r.thresholds.iter().filter(|t| t.ok).count(),
        r.thresholds.len(),
    );
    for (what, counters, service) in BYTE_CHECKS {
        if !counters.iter().any(|c| r.metrics_named(c).next().is_some()) {
            continue;
        }
        let script: f64 = counters.iter().map(|c| r.counter_sum(c)).sum();
        let served = match (&before, &after) {
            (Ok(b), Ok(a)) => Some(counter(a, service) - counter(b, service)),
            _ => None,
        };
        row.bytes.push((what, script, served));
    }
    row.code = outcome_code(&out);
    if row.code == exit::OK && row.checks.0 < row.checks.1 {
        row.code = run_cmd::THRESHOLDS_FAILED;
    }
    if let Err(e) = out.result.write(&results.join(format!("{}.json", ex.name))) {
        row.error = Some(format!("cannot save the result file: {e}"));
        row.code = exit::FAILURE;
    }
    let html = results.join(format!("{}.html", ex.name));
    if report_cmd::after_run(&out.result, Some(&html), true, exit::OK) != exit::OK {
        row.code = exit::FAILURE;
    }
    row.result = Some(out.result);
    row
}

/// `volley run`'s exit code for a run that completed (see run_cmd.rs, same order).
fn outcome_code(out: &RunOutput) -> i32 {
    if let Some(e) = &out.teardown_error {
        return if volley_js::is_teardown_timeout(e) {
            run_cmd::TEARDOWN_TIMEOUT
        } else {
            run_cmd::SCRIPT_EXCEPTION
        };
    }
    if out.aborted.is_some() {
        return run_cmd::ABORTED;
    }
    if out.thresholds_failed() {
        return run_cmd::THRESHOLDS_FAILED;
    }
    if out.result.meta.interrupted {
        return exit::INTERRUPTED;
    }
    exit::OK
}

/// The service's unlabelled counters from `/metrics`: what it reports to anyone scraping it.
async fn service_counters(base: &str) -> Result<Vec<(String, f64)>, String> {
    let mut c = volley_demo_service::client::Client::new(base)?;
    c.timeout = Duration::from_secs(10);
    let r = c
        .request("GET", "/metrics", &[], "")
        .await
        .map_err(|e| format!("GET /metrics: {e}"))?;
    if r.status != 200 {
        return Err(format!("GET /metrics: HTTP {}", r.status));
    }
    Ok(r.text()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.contains('{'))
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect())
}

fn counter(all: &[(String, f64)], name: &str) -> f64 {
    all.iter().find(|(k, _)| k == name).map_or(0.0, |(_, v)| *v)
}

/// The progress line's verdict for one example.
fn verdict(r: &Row) -> String {
    if let Some(e) = &r.error {
        return format!("✗ error (exit {}): {}", r.code, first_line(e));
    }
    let mut bad = Vec::new();
    if r.checks.0 < r.checks.1 {
        bad.push(format!("{} failed checks", r.checks.1 - r.checks.0));
    }
    if r.thresholds.0 < r.thresholds.1 {
        bad.push(format!(
            "{} crossed thresholds",
            r.thresholds.1 - r.thresholds.0
        ));
    }
    if !r.bytes_ok() {
        bad.push("body bytes differ from the service's".into());
    }
    if r.code == exit::INTERRUPTED {
        bad.push("interrupted".into());
    }
    if bad.is_empty() && r.code == exit::OK {
        "✓".into()
    } else if bad.is_empty() {
        format!("✗ exit {}", r.code)
    } else {
        format!("✗ {}", bad.join(", "))
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// Checks as `passed/total pct%`, the percentage truncated as k6 does (99.99 % never shows
/// as 100 %).
fn checks_cell(c: (u64, u64)) -> String {
    let pct = if c.1 == 0 {
        0.0
    } else {
        (c.0 as f64 / c.1 as f64 * 10000.0).trunc() / 100.0
    };
    if pct.fract() == 0.0 {
        format!("{}/{} {pct:.0}%", c.0, c.1)
    } else {
        format!("{}/{} {pct:.2}%", c.0, c.1)
    }
}

fn table(rows: &[Row]) -> String {
    use volley_report::fmt::{bytes, ms, num};
    let head = [
        "scenario",
        "avg",
        "p95",
        "req/s",
        "recv/s",
        "checks",
        "thresholds",
        "bytes = service",
    ];
    let mut cells: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for r in rows {
        let mut line = vec![r.name.to_string()];
        if let Some(e) = &r.error {
            line.push(format!("error, exit {}: {}", r.code, first_line(e)));
            cells.push(line);
            continue;
        }
        let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".into(), f);
        line.push(opt(r.figure("http_req_duration", Figure::Avg), &ms));
        line.push(opt(r.figure("http_req_duration", Figure::P95), &ms));
        line.push(opt(r.figure("http_reqs", Figure::Rate), &num));
        line.push(opt(r.figure("data_received", Figure::Rate), &|v| {
            format!("{}/s", bytes(v))
        }));
        line.push(checks_cell(r.checks));
        let (ok, all) = r.thresholds;
        line.push(format!("{} {ok}/{all}", if ok == all { "✓" } else { "✗" }));
        line.push(if r.bytes.is_empty() {
            "-".into()
        } else if r.bytes_ok() {
            "✓".into()
        } else {
            "✗".into()
        });
        cells.push(line);
    }
    let cols = head.len();
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            cells
                .iter()
                .filter(|l| l.len() == cols)
                .map(|l| l[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for l in &cells {
        let mut s = String::new();
        for (c, v) in l.iter().enumerate() {
            let pad = width.get(c).copied().unwrap_or(0);
            // Names and verdicts left-aligned, numbers right-aligned.
            if c == 0 || c >= 5 || l.len() < cols {
                s.push_str(&format!("{v:<pad$}  "));
            } else {
                s.push_str(&format!("{v:>pad$}  "));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    }
    out
}

/// Prints what failed (one line each) and returns the tour's exit code: the first failing
/// example's code; 1 when only the byte counts disagree (Volley miscounted, or the service
/// could not be read); 105 when interrupted.
fn finish(rows: &[Row], ctl: &RunControl) -> i32 {
    let mut code = exit::OK;
    let mut first = |c: i32| {
        if code == exit::OK {
            code = c;
        }
    };
    for r in rows {
        if let Some(e) = &r.error {
            eprintln!("volley demo: {}: {e}", r.name);
        }
        if let Some(res) = &r.result {
            for t in res.thresholds.iter().filter(|t| !t.ok) {
                let seen = t.observed.map_or("no data".into(), |v| format!("{v:.2}"));
                eprintln!(
                    "volley demo: {}: threshold {} {} crossed (observed {seen})",
                    r.name, t.metric, t.expression
                );
            }
        }
        if r.checks.0 < r.checks.1 {
            eprintln!(
                "volley demo: {}: {} of {} checks failed (see {}.html)",
                r.name,
                r.checks.1 - r.checks.0,
                r.checks.1,
                r.name
            );
        }
        for (what, script, served) in &r.bytes {
            match served {
                Some(v) if v == script => {}
                Some(v) => eprintln!(
                    "volley demo: {}: the script counted {script} bytes {what}, the service reports {v}",
                    r.name
                ),
                None => eprintln!(
                    "volley demo: {}: could not read the service's /metrics to check the bytes {what}",
                    r.name
                ),
            }
        }
        if r.code != exit::OK {
            first(r.code);
        } else if !r.bytes_ok() {
            first(exit::FAILURE);
        }
    }
    if ctl.was_interrupted() {
        return exit::INTERRUPTED;
    }
    // Per example, e.g. "webdav-rw 116.28 MiB down + 57.69 MiB up".
    let matched: Vec<String> = rows
        .iter()
        .filter(|r| !r.bytes.is_empty() && r.bytes_ok())
        .map(|r| {
            let parts: Vec<String> = r
                .bytes
                .iter()
                .map(|(what, n, _)| {
                    let dir = if *what == "downloaded" { "down" } else { "up" };
                    format!("{} {dir}", volley_report::fmt::bytes(*n))
                })
                .collect();
            format!("{} {}", r.name, parts.join(" + "))
        })
        .collect();
    if !matched.is_empty() {
        outln!(
            "\nBody bytes counted by the scripts equal the service's /metrics: {}.",
            matched.join("; ")
        );
    }
    if code == exit::OK {
        outln!(
            "Every example passed: all checks, all thresholds{}.",
            if matched.is_empty() {
                ""
            } else {
                ", exact byte counts"
            }
        );
    }
    code
}

fn tour_json(p: &Plan, base: &str, results: &Path, rows: &[Row], code: i32) -> serde_json::Value {
    use serde_json::json;
    let examples: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            let bytes: serde_json::Map<String, serde_json::Value> = r
                .bytes
                .iter()
                .map(|(what, s, v)| (what.to_string(), json!({"script": s, "service": v})))
                .collect();
            json!({
                "name": r.name,
                "exit_code": r.code,
                "error": r.error,
                "took_s": r.took.as_secs_f64(),
                "result": r.result.as_ref().map(|_| results.join(format!("{}.json", r.name))),
                "report": r.result.as_ref().map(|_| results.join(format!("{}.html", r.name))),
                "http_req_duration_avg_ms": r.figure("http_req_duration", Figure::Avg),
                "http_req_duration_p95_ms": r.figure("http_req_duration", Figure::P95),
                "http_reqs_per_s": r.figure("http_reqs", Figure::Rate),
                "data_received_per_s": r.figure("data_received", Figure::Rate),
                "checks": {"passed": r.checks.0, "total": r.checks.1},
                "thresholds": {"passed": r.thresholds.0, "total": r.thresholds.1},
                "body_bytes": bytes,
            })
        })
        .collect();
    json!({
        "profile": p.profile.name(),
        "service": base,
        "exit_code": code,
        "examples": examples,
    })
}

/// The live progress line of the running example on a terminal: the runs are quiet, so this
/// shows the tour is moving (elapsed seconds; no figures until the run ends).
struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    fn start(label: String) -> Ticker {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::io::stderr().is_terminal().then(|| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let start = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    eprint!(
                        "\r\x1b[2K  {label}  running {:.0}s",
                        start.elapsed().as_secs_f64()
                    );
                    let _ = std::io::stderr().flush();
                    std::thread::sleep(Duration::from_millis(250));
                }
                eprint!("\r\x1b[2K");
            })
        });
        Ticker { stop, thread }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_example_of_the_repository_is_in_the_tour() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter_map(|n| n.strip_suffix(".js").map(str::to_owned))
            // The intro's script, written for the built-in target.
            .filter(|n| n != "quickstart")
            .collect();
        on_disk.sort();
        let mut tour: Vec<String> = names().iter().map(|s| s.to_string()).collect();
        tour.sort();
        assert_eq!(on_disk, tour);
    }

    #[test]
    fn checks_percentages_never_round_up_to_100() {
        assert_eq!(checks_cell((9999, 10000)), "9999/10000 99.99%");
        assert_eq!(checks_cell((99999, 100000)), "99999/100000 99.99%");
        assert_eq!(checks_cell((12, 12)), "12/12 100%");
        assert_eq!(checks_cell((1, 2)), "1/2 50%");
        assert_eq!(checks_cell((1, 3)), "1/3 33.33%");
        assert_eq!(checks_cell((0, 0)), "0/0 0%");
    }

    fn args(only: &[&str], env: &[&str]) -> DemoArgs {
        DemoArgs {
            action: None,
            duration: None,
            connections: 1,
            out_dir: None,
            quick: false,
            profile: DemoProfile::Smoke,
            only: only.iter().map(|s| s.to_string()).collect(),
            env: env.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn only_keeps_the_tour_order_and_refuses_unknown_names() {
        let p = plan(&args(&["search.js", "auth-login", "search"], &[])).unwrap();
        let got: Vec<&str> = p.examples.iter().map(|e| e.name).collect();
        assert_eq!(got, ["auth-login", "search"]);
        assert_eq!(
            plan(&args(&[], &[])).unwrap().examples.len(),
            EXAMPLES.len()
        );
        let e = plan(&args(&["serach"], &[])).err().unwrap();
        assert!(e.contains("'serach'") && e.contains("search"), "{e}");
    }

    #[test]
    fn env_must_be_key_value_and_cannot_redirect_the_tour() {
        assert_eq!(
            plan(&args(&[], &["P95_MS=50"])).unwrap().env,
            [("P95_MS".to_string(), "50".to_string())]
        );
        for bad in [
            "P95_MS",
            "=1",
            "BASE_URL=http://example.com",
            "PROFILE=load",
        ] {
            assert!(plan(&args(&[], &[bad])).is_err(), "{bad}");
        }
    }
}
