//! `volley demo`: the guided tour, with no server of the user's own. The intro starts the
//! built-in target on a free loopback port, then (1) blasts one URL in quick mode and checks
//! that Volley counted exactly the requests the target served, and (2) runs an example k6
//! script with checks, custom metrics and thresholds against it — through the caller, as
//! `volley run` — saving result files and HTML reports for each step; then a short
//! breaking-point search against a target of known capacity ([`crate::demo_capacity`]).
//! Then (3) the tour proper ([`crate::tour`]). `quick` stops after step 1. Documented in docs/demo.md.

use crate::{code, examples::QUICKSTART, tour};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;
use volley_engine::{run_quick, QuickSummary, RunControl};
use volley_metrics::{names::HTTP_REQS, RunResult};

/// The intro's load steps when `-z` is not given.
pub const INTRO_DURATION: Duration = Duration::from_secs(5);

/// What `volley demo` does, from its flags.
pub struct DemoConfig {
    /// Concurrent connections of the quick blast (at least 1).
    pub connections: usize,
    /// Length of each intro step (more than 0).
    pub duration: Duration,
    /// Where the scripts, result files and reports go (default: `volley-demo` in the
    /// system's temporary directory).
    pub out_dir: Option<PathBuf>,
    /// Only the quick blast.
    pub quick: bool,
    pub tour: tour::Plan,
}

/// Step 2 as the caller runs it: `volley run SCRIPT -e ENV... --no-system-env --save SAVE
/// --report REPORT` against the built-in target; it returns that command's exit code.
pub struct IntroScript {
    pub script: PathBuf,
    /// `KEY=VALUE` pairs: BASE_URL, VUS, DURATION.
    pub env: Vec<String>,
    pub save: PathBuf,
    pub report: PathBuf,
}

/// A duration as `-z` takes it: `5s`, or `1500ms` when not whole seconds (so `-z 500ms`
/// is not shown as `0s`). k6 parses both forms too (the intro's script gets it as DURATION).
pub fn flag_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis().max(1))
    }
}

/// Runs the whole demo; returns its exit code: the first step that failed decides (README
/// and docs/demo.md, "Exit codes").
pub fn run(
    cfg: &DemoConfig,
    ctl: &RunControl,
    run_script: impl FnOnce(&IntroScript) -> i32,
) -> i32 {
    let dir = cfg
        .out_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("volley-demo"));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return crate::fail(&format!("cannot create {}: {e}", dir.display()));
    }
    let target = match volley_testserver::spawn(volley_testserver::TargetConfig {
        listen: "127.0.0.1:0".parse().expect("static address"),
        threads: 1,
        tls: None,
        delay_all: None,
    }) {
        Ok(t) => t,
        Err(e) => return crate::fail(&format!("cannot start the built-in target: {e}")),
    };
    let base = target.url();
    outln!("volley demo: built-in target listening on {base}");

    let quick_json = dir.join("quick.json");
    let blast_code = match blast(cfg, &target, &dir, ctl) {
        Ok(c) => c,
        Err(e) => return crate::fail(&e),
    };

    // Step 2: a k6 script.
    let mut script_code = code::OK;
    if !cfg.quick && !ctl.is_stopped() {
        let script = dir.join("quickstart.js");
        outln!(
            "\n== 2. A k6 script: login, work, download — checks, custom metrics, thresholds\n   (same as: volley run {} -e BASE_URL={base})\n",
            script.display()
        );
        if let Err(e) = std::fs::write(&script, QUICKSTART) {
            return crate::fail(&format!("cannot write {}: {e}", script.display()));
        }
        script_code = run_script(&IntroScript {
            script,
            env: vec![
                format!("BASE_URL={base}"),
                "VUS=10".into(),
                format!("DURATION={}", flag_duration(cfg.duration)),
            ],
            save: dir.join("quickstart.json"),
            report: dir.join("quickstart.html"),
        });
    }
    target.shutdown();
    let mut capacity_code = code::OK;
    if !cfg.quick && !ctl.is_stopped() {
        capacity_code = crate::demo_capacity::run(&dir, ctl);
    }

    // Step 3: the example suites against the demo service.
    let mut tour_code = code::OK;
    if !cfg.quick && !ctl.was_interrupted() {
        tour_code = tour::run(&cfg.tour, &dir, ctl);
    }

    outln!("\nResults in {}:", dir.display());
    let files: Vec<PathBuf> = [
        "quick.json",
        "quick.html",
        "quickstart.js",
        "quickstart.json",
        "quickstart.html",
        "capacity.json",
        "capacity.html",
        "examples",
        "results",
    ]
    .iter()
    .map(|f| dir.join(f))
    // An earlier tour's folders are not this run's results.
    .filter(|p| p.exists() && (!cfg.quick || p.extension().is_some()))
    .collect();
    for f in &files {
        outln!("  {}", f.display());
    }
    outln!(
        "Next: open the .html reports; `volley compare {} <another run>.json`; `volley http URL` against your own service; `volley run your-script.js`.",
        quick_json.display()
    );
    outln!("A whole environment (PostgreSQL, the demo service, seed, profiles, teardown) in one command: volley suite run examples/suites/drive --profile smoke");
    [blast_code, script_code, capacity_code, tour_code]
        .into_iter()
        .find(|c| *c != code::OK)
        .unwrap_or(code::OK)
}

/// Step 1: quick mode against the built-in target, as `volley http -c N -z D URL --save
/// quick.json --report quick.html`, then the target's count against Volley's. `Err`: the
/// blast could not run at all.
fn blast(
    cfg: &DemoConfig,
    target: &volley_testserver::RunningTarget,
    dir: &Path,
    ctl: &RunControl,
) -> Result<i32, String> {
    let url = format!("{}/", target.url());
    outln!(
        "\n== 1. Quick mode: {} connections for {} against {url}\n   (same as: volley http -c {} -z {} {url})\n",
        cfg.connections,
        flag_duration(cfg.duration),
        cfg.connections,
        flag_duration(cfg.duration)
    );
    let quick = crate::steps::quick_defaults(url.clone(), cfg.connections, Some(cfg.duration));
    let live = std::io::stderr().is_terminal();
    let before = target.stats().requests;
    let result = run_quick(&quick, ctl, |p| {
        if live {
            eprint!(
                "\r\x1b[2K{:>4.0}s  {} requests  {:.0} req/s",
                p.elapsed.as_secs_f64(),
                p.requests,
                p.rate
            );
        }
    });
    if live {
        eprint!("\r\x1b[2K");
    }
    let served = target.stats().requests - before;
    let result = result?;
    let code = finish_blast(&result, &dir.join("quick.json"), &dir.join("quick.html"));
    let counted = result.counter_sum(HTTP_REQS) as u64;
    outln!(
        "\nThe target served {served} requests; Volley counted {counted}{}.",
        if served == counted {
            " (exact match)"
        } else {
            ""
        }
    );
    Ok(code)
}

/// Prints the blast's summary, then `volley http`'s after-run chain (result file, HTML
/// report); returns `volley http`'s exit code (1 cannot save, 105 interrupted, 3 requests
/// without response).
fn finish_blast(result: &RunResult, save: &Path, report: &Path) -> i32 {
    let summary = match QuickSummary::from_result(result) {
        Ok(s) => s,
        Err(e) => return crate::fail(&format!("cannot summarise the run: {e}")),
    };
    crate::print(&summary.render_text(std::io::stdout().is_terminal()));
    let _ = std::io::stdout().flush();
    let after = volley_run::after::AfterRun {
        save: Some(save.to_path_buf()),
        report: Some(report.to_path_buf()),
        ..Default::default()
    };
    let outcome = volley_run::Outcome::of_run(
        None,
        None,
        None,
        result.meta.interrupted,
        summary.transport_errors() > 0,
    );
    match after.finish(result, outcome, false) {
        volley_run::Outcome::Failure(e) => crate::fail(&e),
        o => o.exit_code(),
    }
}
