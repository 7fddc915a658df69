//! `volley run script.js`: flags → [`volley_js::prepare`] → the run layer
//! ([`fn@volley_run::execute`]) → k6's summary (or the script's `handleSummary`) → the shared
//! after-run chain ([`volley_run::after`]) → k6's exit code ([`volley_run::Outcome`]).

use crate::args::RunArgs;
use crate::{exit, signals};
use std::io::IsTerminal;
use volley_engine::{log, RunControl};
use volley_js::CliOptions;
use volley_run::after::AfterRun;
use volley_run::{Outcome, Summary, SummaryMode};

/// The logger's settings: each flag, else its `K6_*` variable (k6's precedence).
fn log_config(a: &crate::args::LogArgs) -> Result<log::Config, String> {
    let var = |k: &str| std::env::var(k).ok();
    let pick = |flag: &Option<String>, k: &str| flag.clone().or_else(|| var(k));
    let format = pick(&a.log_format, "K6_LOG_FORMAT").unwrap_or_default();
    let output = pick(&a.log_output, "K6_LOG_OUTPUT").unwrap_or_default();
    Ok(log::Config {
        format: log::Format::parse(&format).map_err(|e| format!("--log-format: {e}"))?,
        output: log::Output::parse(&output).map_err(|e| format!("--log-output: {e}"))?,
        console_output: a.console_output.clone().or_else(|| {
            var("K6_CONSOLE_OUTPUT")
                .filter(|v| !v.is_empty())
                .map(Into::into)
        }),
        verbose: a.verbose,
        // k6: NO_COLOR set (even empty) or K6_NO_COLOR non-empty.
        no_color: a.no_color
            || var("NO_COLOR").is_some()
            || var("K6_NO_COLOR").is_some_and(|v| !v.is_empty()),
    })
}

/// `--summary-mode`, else `K6_SUMMARY_MODE` (k6's precedence), else k6 v1's `compact`.
pub(crate) fn summary_mode(flag: Option<&str>) -> Result<SummaryMode, String> {
    let Some(v) = flag
        .map(str::to_string)
        .or_else(|| std::env::var("K6_SUMMARY_MODE").ok())
    else {
        return Ok(SummaryMode::default());
    };
    SummaryMode::parse(v.trim())
        .ok_or_else(|| format!("K6_SUMMARY_MODE='{v}': expected compact, full or legacy"))
}

pub fn run(mut a: RunArgs) -> i32 {
    // `volley run --coordinator ADDR`: the other spelling of `volley agent`.
    if let Some(addr) = a.coordinator.take() {
        return crate::agent_cmd::run(crate::agent_cmd::AgentArgs::of_coordinator(addr, a.threads));
    }
    let Some(script) = a.script.take() else {
        return exit::usage("volley run: give the SCRIPT (or --coordinator HOST:PORT)");
    };
    match log_config(&a.log) {
        Err(e) => return exit::usage(&e),
        Ok(cfg) => {
            if let Err(e) = log::init(&cfg) {
                return exit::fail(&e);
            }
        }
    }
    if let Err(e) = crate::history_cmd::check_labels(&a.labels) {
        return exit::usage(&e);
    }
    let summary_mode = match summary_mode(a.summary_mode.as_deref()) {
        Ok(m) => m,
        Err(e) => return exit::usage(&e),
    };
    let mut pairs = Vec::new();
    for kv in &a.env {
        match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => pairs.push((k.to_string(), v.to_string())),
            _ => return exit::usage(&format!("-e/--env '{kv}': expected KEY=VALUE")),
        }
    }
    // k6's flags, `K6_*` environment and `--config` file (docs/k6-cli.md).
    let sys_env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
    let mut k6 =
        match crate::k6_flags::setup(&a.k6, a.no_system_env, !a.output.out.is_empty(), &sys_env) {
            Ok(s) => s,
            Err(crate::k6_flags::K6Error::Usage(e)) => return exit::usage(&e),
            Err(crate::k6_flags::K6Error::Config(e)) => {
                return exit::outcome(&Outcome::ConfigError(e));
            }
        };
    if a.output.out.is_empty() {
        a.output.out = std::mem::take(&mut k6.out);
    }
    if a.output.summary_export.is_none() {
        a.output.summary_export = k6.summary_export.take();
    }
    a.output.out.retain(|o| {
        let cloud = o == "cloud" || o.starts_with("cloud=");
        if cloud {
            k6.notes.push(format!(
                "volley: note: --out {o} is accepted for k6 compatibility and ignored: Volley \
                 does not stream to Grafana Cloud"
            ));
        }
        !cloud
    });
    for n in &k6.notes {
        eprintln!("{n}");
    }
    let (out_json, outputs) = match volley_run::outputs::OutSpec::parse_all(&a.output.out) {
        Ok(o) => o,
        Err(e) => return exit::outcome(&Outcome::ConfigError(e)),
    };
    let mut thresholds = Vec::new();
    for t in &a.thresholds {
        match volley_run::checks::split_flag(t) {
            Some(kv) => thresholds.push(kv),
            None => {
                return exit::usage(&format!(
                    "--threshold '{t}': expected METRIC:EXPR, e.g. monitor_rss_bytes:slope<5MB/h, \
                     monitor_rss_bytes{{target:api}}:max<2GB or http_req_duration:drift(p95)<10%"
                ))
            }
        }
    }
    let monitor = match crate::monitor_cmd::plan(&a.monitor, a.monitor_interval) {
        Err(e) => return exit::usage(&e),
        Ok(Err(e)) => return exit::fail(&e),
        Ok(Ok(p)) => p,
    };
    // Every output written after the run must be writable before it starts.
    let after = AfterRun {
        save: a.output.save.clone(),
        summary_export: a.output.summary_export.clone(),
        report: a.output.report.clone(),
        history: a.history.clone(),
        labels: a.labels.clone(),
        quiet: a.quiet,
    };
    let mut files: Vec<(&str, &std::path::Path)> = Vec::new();
    if let Some(p) = &out_json {
        files.push(("--out", p));
    }
    if let Some(p) = &a.dashboard.dashboard_export {
        files.push(("--dashboard-export", p));
    }
    for o in &outputs {
        if let volley_run::outputs::OutSpec::Csv(p) | volley_run::outputs::OutSpec::Junit(p) = o {
            files.push(("--out", p));
        }
    }
    if let Err(e) = after.preflight(&files) {
        return exit::fail(&e);
    }
    let observers = match crate::dashboard_cmd::start(&a.dashboard) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let mut armed = match crate::fault_flags::arm(&a.faults, a.quiet, true) {
        Ok(f) => f,
        Err(code) => return code,
    };
    pairs.extend(armed.env());
    let env = volley_js::environment(&pairs, k6.system_env);
    let cli = CliOptions {
        vus: a.vus,
        duration: a.duration,
        iterations: a.iterations,
        out_json,
        outputs,
        monitor,
        thresholds,
        summary_trend_stats: a
            .summary_trend_stats
            .as_deref()
            .map(|s| s.split(',').map(|x| x.trim().to_string()).collect()),
        summary_time_unit: a.summary_time_unit.clone(),
        max_series: a.max_series,
        show_progress: !a.quiet,
        live_progress: !a.quiet && std::io::stderr().is_terminal(),
        max_response_body: a.max_response_body,
        config_file: k6.config_file.take(),
        env_options: std::mem::take(&mut k6.env_options),
        flag_options: std::mem::take(&mut k6.flag_options),
        no_thresholds: k6.no_thresholds,
    };
    let ctl = RunControl::new();
    signals::install(ctl.clone());
    let show_progress = cli.show_progress;
    if a.capacity.active() {
        if !a.output.out.is_empty() || a.dashboard.dashboard.is_some() {
            return exit::usage(
                "--out and --dashboard follow one run; not with --find-max-rate or --sweep",
            );
        }
        // A capacity test: the script prepared afresh for each step, scaled to its load.
        let prepare = || {
            volley_js::prepare(
                &script,
                env.clone(),
                &cli,
                a.threads,
                std::env::args().collect(),
                &ctl,
            )
            .map(|p| p.spec)
            .map_err(|e| e.to_string())
        };
        return crate::capacity_cmd::run_script(
            &a.capacity,
            Box::new(prepare),
            &ctl,
            after,
            a.quiet,
        );
    }
    let prepared = volley_js::prepare(
        &script,
        env,
        &cli,
        a.threads,
        std::env::args().collect(),
        &ctl,
    );
    let mut p = match prepared {
        Ok(p) => p,
        Err(e) => return exit::outcome(&e.outcome()),
    };
    volley_run::progress::attach(&mut p.spec, show_progress, cli.live_progress);
    p.spec.observers.extend(observers);
    armed.attach(&mut p.spec);
    let mut fin = match volley_run::execute(p.spec, &ctl) {
        Ok(f) => f,
        Err(o) => return exit::outcome(&o),
    };
    if let Some(m) = &fin.threshold_abort {
        log::error(m);
    }
    let fault_lines = armed.finish(&mut fin.result);
    let summary = match Summary::from_result(&fin.result) {
        Ok(s) => s,
        Err(e) => return exit::fail(&e),
    };
    // handleSummary replaces the default summary; if it fails, the default is printed.
    let tty = (
        std::io::stdout().is_terminal(),
        std::io::stderr().is_terminal(),
    );
    // --no-summary: neither handleSummary nor the text summary (as k6).
    let handled = k6.no_summary || handle_summary(&p.script, &summary, tty);
    if !a.quiet && !handled {
        exit::print(&summary.render(summary_mode));
    }
    crate::fault_flags::print(&fault_lines, a.quiet);
    let env = volley_js::environment(&pairs, k6.system_env);
    let verified = crate::fault_flags::verify_after(&a.faults, &script, env, a.threads, &ctl);
    // A signal while the summary and outputs were written counts too.
    let outcome = after.finish(&fin.result, fin.outcome, ctl.was_interrupted());
    if matches!(outcome, Outcome::Failure(_)) {
        return exit::outcome(&outcome);
    }
    if crate::dashboard_cmd::after_run(&fin.result, &a.dashboard, a.quiet, exit::OK) != exit::OK {
        return exit::FAILURE;
    }
    // Crossed thresholds are reported when they decide the exit code or lose only to an
    // interruption (as k6: 105 even with thresholds crossed).
    let interrupted = matches!(outcome, Outcome::Interrupted);
    let crossed = matches!(
        outcome,
        Outcome::ThresholdsFailed(_) | Outcome::ThresholdsAborted(_)
    );
    if crossed || interrupted {
        if let Some(m) = volley_run::execute::thresholds_message(&fin.result) {
            for t in fin.result.thresholds.iter().filter(|t| !t.ok) {
                if let Some(note) = volley_run::checks::drift_note(t) {
                    log::error(&note);
                }
            }
            if interrupted {
                log::error(&m);
            }
        }
    }
    // A loss found by --verify decides the exit code over the run's own verdict.
    match verified {
        Some(code) if code != exit::OK => {
            exit::outcome(&outcome);
            code
        }
        _ => exit::outcome(&outcome),
    }
}

/// The script's `handleSummary` on `summary`, its outputs written: true when it replaced the
/// text summary (a failing one is logged, and the default summary is printed).
pub(crate) fn handle_summary(
    script: &volley_js::ScriptView,
    summary: &Summary,
    tty: (bool, bool),
) -> bool {
    match script.handle_summary(summary, tty.0, tty.1) {
        Ok(Some(outs)) => {
            if let Err(e) = volley_js::handle_summary::write_outputs(&outs) {
                log::error(&e);
            }
            true
        }
        Ok(None) => false,
        Err(e) => {
            log::error(&format!("handleSummary: {e}"));
            false
        }
    }
}
