//! `volley demo`: the guided tour, with no server of the user's own. The intro starts the
//! built-in target on a free loopback port, then (1) blasts one URL in quick mode and (2)
//! runs an example k6 script with checks, custom metrics and thresholds against it, saving
//! result files and HTML reports for each step. Then (3) the tour proper ([`demo_tour`]):
//! the demo service, seeded, with every example suite in a smoke (or load) profile and one
//! baseline table. `--quick` stops after step 1. Documented in docs/demo.md.

use crate::args::{DemoArgs, RunArgs};
use crate::{demo_tour, exit, http_cmd, report_cmd, run_cmd};
use std::io::IsTerminal;
use std::path::PathBuf;
use volley_engine::{run_quick, QuickConfig, RunControl};
use volley_http::{Body, TlsOptions};

/// The example script shipped in `examples/`, embedded so the demo needs no checkout.
const QUICKSTART: &str = include_str!("../../../examples/quickstart.js");

/// The intro's load steps when `-z` is not given.
const INTRO_DURATION: std::time::Duration = std::time::Duration::from_secs(5);

/// A duration as `-z` takes it: `5s`, or `1500ms` when not whole seconds (so `-z 500ms`
/// is not shown as `0s`). k6 parses both forms too (the intro's script gets it as DURATION).
fn flag_duration(d: std::time::Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis().max(1))
    }
}

pub fn run(a: DemoArgs) -> i32 {
    let tour = match demo_tour::plan(&a) {
        Ok(p) => p,
        Err(e) => return exit::usage(&e),
    };
    let duration = a.duration.unwrap_or(INTRO_DURATION);
    if duration.is_zero() {
        return exit::usage("-z/--duration must be longer than 0");
    }
    if a.connections == 0 {
        return exit::usage("-c/--connections must be at least 1");
    }
    let dir = a
        .out_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("volley-demo"));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return exit::fail(&format!("cannot create {}: {e}", dir.display()));
    }
    let target = match volley_testserver::spawn(volley_testserver::TargetConfig {
        listen: "127.0.0.1:0".parse().expect("static address"),
        threads: 1,
        tls: None,
        delay_all: None,
    }) {
        Ok(t) => t,
        Err(e) => return exit::fail(&format!("cannot start the built-in target: {e}")),
    };
    let base = target.url();
    outln!("volley demo: built-in target listening on {base}");

    // Step 1: quick mode.
    let url = format!("{base}/");
    outln!(
        "\n== 1. Quick mode: {} connections for {} against {url}\n   (same as: volley http -c {} -z {} {url})\n",
        a.connections,
        flag_duration(duration),
        a.connections,
        flag_duration(duration)
    );
    let cfg = QuickConfig {
        url: url.clone(),
        method: "GET".into(),
        headers: Vec::new(),
        body: Body::Empty,
        connections: a.connections,
        duration: Some(duration),
        requests: None,
        timeout: std::time::Duration::from_secs(10),
        connect_timeout: std::time::Duration::from_secs(5),
        keepalive: true,
        tls: TlsOptions {
            insecure: false,
            cacert: None,
        },
        threads: 0,
        pipeline: 1,
        http2: false,
        h2_streams: 1,
        rate: None,
        max_connections: a.connections,
        command: std::env::args().collect(),
    };
    let ctl = RunControl::new();
    crate::signals::install(ctl.clone());
    let live = std::io::stderr().is_terminal();
    let before = target.stats().requests;
    let result = run_quick(&cfg, &ctl, |p| {
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
    let result = match result {
        Ok(r) => r,
        Err(e) => return exit::fail(&e),
    };
    let quick_json = dir.join("quick.json");
    let quick_html = dir.join("quick.html");
    let mut code = http_cmd::finish(&result, false, false, Some(&quick_json));
    code = report_cmd::after_run(&result, Some(&quick_html), false, code);
    let counted = result.counter_sum("http_reqs") as u64;
    outln!(
        "\nThe target served {served} requests; Volley counted {counted}{}.",
        if served == counted {
            " (exact match)"
        } else {
            ""
        }
    );

    // Step 2: a k6 script.
    let mut script_code = exit::OK;
    let (script, script_json) = (dir.join("quickstart.js"), dir.join("quickstart.json"));
    if !a.quick && !ctl.is_stopped() {
        outln!(
            "\n== 2. A k6 script: login, work, download — checks, custom metrics, thresholds\n   (same as: volley run {} -e BASE_URL={base})\n",
            script.display()
        );
        if let Err(e) = std::fs::write(&script, QUICKSTART) {
            return exit::fail(&format!("cannot write {}: {e}", script.display()));
        }
        script_code = run_cmd::run(RunArgs {
            script: script.clone(),
            vus: None,
            duration: None,
            iterations: None,
            env: vec![
                format!("BASE_URL={base}"),
                "VUS=10".into(),
                format!("DURATION={}", flag_duration(duration)),
            ],
            no_system_env: true,
            save: Some(script_json.clone()),
            summary_export: None,
            report: Some(dir.join("quickstart.html")),
            out: Vec::new(),
            threads: 0,
            monitor: Vec::new(),
            monitor_interval: std::time::Duration::from_secs(1),
            thresholds: Vec::new(),
            summary_trend_stats: None,
            summary_time_unit: None,
            summary_mode: None,
            max_response_body: None,
            max_series: None,
            history: None,
            labels: Vec::new(),
            quiet: false,
            log: Default::default(),
            dashboard: Default::default(),
            k6: Default::default(),
        });
    }
    target.shutdown();

    // Step 3: the example suites against the demo service.
    let mut tour_code = exit::OK;
    if !a.quick && !ctl.was_interrupted() {
        tour_code = demo_tour::run(&tour, &dir, &ctl);
    }

    outln!("\nResults in {}:", dir.display());
    let files: Vec<PathBuf> = [
        "quick.json",
        "quick.html",
        "quickstart.js",
        "quickstart.json",
        "quickstart.html",
        "examples",
        "results",
    ]
    .iter()
    .map(|f| dir.join(f))
    // An earlier tour's folders are not this run's results.
    .filter(|p| p.exists() && (!a.quick || p.extension().is_some()))
    .collect();
    for f in &files {
        outln!("  {}", f.display());
    }
    outln!(
        "Next: open the .html reports; `volley compare {} <another run>.json`; `volley http URL` against your own service; `volley run your-script.js`.",
        quick_json.display()
    );
    // The first step that failed decides (README and docs/demo.md, "Exit codes").
    [code, script_code, tour_code]
        .into_iter()
        .find(|c| *c != exit::OK)
        .unwrap_or(exit::OK)
}
