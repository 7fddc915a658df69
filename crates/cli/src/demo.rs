//! `volley demo`: flags → [`volley_suite::demo::DemoConfig`]; the intro and the tour run in
//! volley-suite, the intro's k6 step through `volley run` itself (same output, same codes).
//! Documented in docs/demo.md.

use crate::args::{DemoArgs, RunArgs};
use crate::{exit, run_cmd};
use volley_engine::RunControl;
use volley_suite::demo::{DemoConfig, IntroScript, INTRO_DURATION};

pub fn run(a: DemoArgs) -> i32 {
    let tour = match volley_suite::tour::Plan::new(&a.only, &a.env, a.profile.into(), a.duration) {
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
    let cfg = DemoConfig {
        connections: a.connections,
        duration,
        out_dir: a.out_dir,
        quick: a.quick,
        tour,
    };
    let ctl = RunControl::new();
    crate::signals::install(ctl.clone());
    volley_suite::demo::run(&cfg, &ctl, intro_script)
}

/// Step 2 of the intro: `volley run SCRIPT -e ... --no-system-env --save ... --report ...`.
fn intro_script(s: &IntroScript) -> i32 {
    run_cmd::run(RunArgs {
        script: Some(s.script.clone()),
        coordinator: None,
        vus: None,
        duration: None,
        iterations: None,
        env: s.env.clone(),
        no_system_env: true,
        output: crate::output_flags::OutputFlags {
            save: Some(s.save.clone()),
            report: Some(s.report.clone()),
            ..Default::default()
        },
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
        k6: Default::default(),
        dashboard: Default::default(),
        faults: Default::default(),
        capacity: Default::default(),
    })
}
