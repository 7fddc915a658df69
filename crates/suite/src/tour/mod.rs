//! `volley demo`, part two: the example suites against the demo service. It starts the demo
//! service in-process on a free loopback port with a scratch data directory, seeds the
//! reduced data set, runs every script of `examples/` in one profile (smoke by default) the
//! way `volley run` does, and prints one baseline table. Each run's result file and HTML
//! report are saved; `results/tour.json` holds the table for machines (CI, the tests).
//!
//! The tour is also an end-to-end check: a crossed threshold or any failed check fails it
//! (99), a script error fails it with `volley run`'s code, and the body bytes a script
//! counted must equal what the service reports on `/metrics` (else 1: Volley miscounted).
//!
//! Layout: this file plans and runs the tour; `table` turns its rows into the table, the
//! verdicts, `tour.json` and the exit code.

pub(crate) mod table;

use crate::code;
use crate::examples::{names, Example, EXAMPLES, LIB};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use volley_engine::RunControl;
use volley_metrics::names::CHECKS;
use volley_metrics::{Agg, RunResult};
use volley_report::view::{self, Figure, Sel};

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

/// The examples' load profile (`PROFILE`); soak and stress are left to `volley run`: an hour,
/// or 100 VUs, per example is not a tour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    Smoke,
    Load,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Smoke => "smoke",
            Profile::Load => "load",
        }
    }
}

/// What the tour will do, checked before anything runs (bad flags are exit 2 up front, not
/// after the intro has already taken its time).
pub struct Plan {
    examples: Vec<&'static Example>,
    env: Vec<(String, String)>,
    profile: Profile,
    duration: Option<Duration>,
}

impl Plan {
    /// `only`: example names (`search` or `search.js`; empty: all); `env`: `KEY=VALUE` for
    /// the scripts; `duration`: each example's length instead of the profile's. An error is
    /// a usage error, worded for `--only` and `-e`.
    pub fn new(
        only: &[String],
        env: &[String],
        profile: Profile,
        duration: Option<Duration>,
    ) -> Result<Plan, String> {
        let mut examples = Vec::new();
        for want in only {
            let name = want.trim().trim_end_matches(".js");
            match EXAMPLES.iter().find(|e| e.name == name) {
                Some(e) if !examples.iter().any(|x: &&Example| x.name == e.name) => {
                    examples.push(e)
                }
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
        let mut pairs = Vec::new();
        for kv in env {
            match kv.split_once('=') {
                Some(("BASE_URL", _)) => {
                    return Err(
                        "-e BASE_URL: the tour runs against its own demo service on loopback; \
                         use `volley run` for another service"
                            .into(),
                    )
                }
                Some(("PROFILE", _)) => return Err("-e PROFILE: use --profile smoke|load".into()),
                Some((k, v)) if !k.is_empty() => pairs.push((k.to_string(), v.to_string())),
                _ => return Err(format!("-e/--env '{kv}': expected KEY=VALUE")),
            }
        }
        Ok(Plan {
            examples,
            env: pairs,
            profile,
            duration,
        })
    }
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
/// Returns the exit code (see `table::finish`).
pub fn run(p: &Plan, dir: &Path, ctl: &RunControl) -> i32 {
    let scripts = dir.join("examples");
    let results = dir.join("results");
    if let Err(e) = write_scripts(&scripts, &results, &p.examples) {
        return crate::fail(&e);
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return crate::fail(&format!("cannot start a runtime: {e}")),
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
            return crate::fail(&format!("cannot start the demo service: {e}"));
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
        Err(e) => return crate::fail(&format!("seeding the demo service failed: {e}")),
    };
    let files: i64 = seeded.folders.values().map(|f| f.files).sum();
    outln!(
        "seeded in {:.1}s: {files} files in {} folders, a {} fixture, {} WebDAV files\n",
        seeded.took_ms as f64 / 1000.0,
        seeded.folders.len(),
        volley_metrics::fmt::bytes(seeded.fixture_size as f64),
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
            table::verdict(&row)
        );
        rows.push(row);
    }
    drop(service);

    outln!("");
    crate::print(&table::table(&rows));
    let code = table::finish(&rows, ctl);
    let tour = table::tour_json(p, &base, &results, &rows, code);
    let tour_path = results.join("tour.json");
    if let Err(e) = std::fs::write(
        &tour_path,
        serde_json::to_string_pretty(&tour).unwrap_or_default() + "\n",
    ) {
        return crate::fail(&format!("cannot write {}: {e}", tour_path.display()));
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
    let mut command = crate::script::command_line(&script, &pairs);
    if let Some(d) = p.duration {
        command.extend(["-d".to_string(), format!("{}ms", d.as_millis())]);
    }
    let before = rt.block_on(service_counters(base));
    let start = Instant::now();
    let out = crate::script::run_script(&script, &pairs, p.duration, command, &ctl.child());
    let took = start.elapsed();
    let mut row = Row {
        name: ex.name,
        code: code::OK,
        error: None,
        took,
        result: None,
        checks: (0, 0),
        thresholds: (0, 0),
        bytes: Vec::new(),
    };
    let out = match out {
        Ok(o) => o,
        Err((c, e)) => {
            row.code = c;
            row.error = Some(e);
            return row;
        }
    };
    let after = rt.block_on(service_counters(base));
    let r = &out.result;
    if let Some((Agg::Rate { trues, total }, _)) = view::total(r, &Sel::all(CHECKS)) {
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
    row.code = crate::script::outcome_code(&out);
    if row.code == code::OK && row.checks.0 < row.checks.1 {
        row.code = code::THRESHOLDS_FAILED;
    }
    // The after-run chain of every command: result file and HTML report (quietly: the
    // tour prints its own table).
    let after = volley_run::after::AfterRun {
        save: Some(results.join(format!("{}.json", ex.name))),
        report: Some(results.join(format!("{}.html", ex.name))),
        quiet: true,
        ..Default::default()
    };
    if let volley_run::Outcome::Failure(e) = after.finish(&out.result, out.outcome.clone(), false) {
        row.error = Some(e);
        row.code = code::FAILURE;
    }
    row.result = Some(out.result);
    row
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

    fn plan(only: &[&str], env: &[&str]) -> Result<Plan, String> {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Plan::new(&s(only), &s(env), Profile::Smoke, None)
    }

    #[test]
    fn only_keeps_the_tour_order_and_refuses_unknown_names() {
        let p = plan(&["search.js", "auth-login", "search"], &[]).unwrap();
        let got: Vec<&str> = p.examples.iter().map(|e| e.name).collect();
        assert_eq!(got, ["auth-login", "search"]);
        assert_eq!(plan(&[], &[]).unwrap().examples.len(), EXAMPLES.len());
        let e = plan(&["serach"], &[]).err().unwrap();
        assert!(e.contains("'serach'") && e.contains("search"), "{e}");
    }

    #[test]
    fn env_must_be_key_value_and_cannot_redirect_the_tour() {
        assert_eq!(
            plan(&[], &["P95_MS=50"]).unwrap().env,
            [("P95_MS".to_string(), "50".to_string())]
        );
        for bad in [
            "P95_MS",
            "=1",
            "BASE_URL=http://example.com",
            "PROFILE=load",
        ] {
            assert!(plan(&[], &[bad]).is_err(), "{bad}");
        }
    }
}
