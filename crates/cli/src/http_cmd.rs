//! `volley http URL`: flags → [`QuickConfig`], live progress, summary, k6's thresholds
//! ([`volley_run::thresholds`]), then the shared after-run chain ([`volley_run::after`]) and
//! the exit code ([`volley_run::Outcome`]).

use crate::args::HttpArgs;
use crate::{exit, signals};
use std::io::{IsTerminal, Write};
use std::time::Duration;
use volley_engine::{run_quick, Progress, QuickConfig, QuickSummary, RateSchedule, RunControl};
use volley_http::{Body, Target};
use volley_run::Outcome;

/// Default load length when neither -z nor -n is given (as wrk).
const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// Most connections (`-c`, `--max-connections`): one client address has no more ports.
const MAX_CONNECTIONS: usize = 65_535;

/// Most requests in flight at once over HTTP/2 (`-c` × `--h2-streams`): each stream is a task
/// of a few KiB, created up front.
const MAX_H2_IN_FLIGHT: u64 = 1_000_000;

pub fn run(mut a: HttpArgs) -> i32 {
    let o = &a.outputs;
    let mut armed = match crate::fault_flags::arm(&a.faults, o.quiet || o.json, false) {
        Ok(f) => f,
        Err(code) => return code,
    };
    a.url = armed.expand(&a.url);
    let o = &a.outputs;
    let cfg = match config(&a) {
        Ok(c) => c,
        Err(e) => return exit::usage(&e),
    };
    let mut files: Vec<(&str, &std::path::Path)> = Vec::new();
    if let Some(p) = &a.dashboard.dashboard_export {
        files.push(("--dashboard-export", p));
    }
    let chain = match o.prepare(&volley_run::checks::HTTP_QUICK, &files) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let ctl = RunControl::new();
    signals::install(ctl.clone());
    let live = !o.quiet && std::io::stderr().is_terminal();
    if a.capacity.active() {
        return crate::capacity_cmd::run(&a, cfg, &chain.monitor, &ctl, chain.after);
    }
    if let Some(b) = &o.vs {
        if !a.faults.faults.is_empty() {
            return exit::usage(
                "--fault does not apply to --vs rounds: inject faults in a plain run",
            );
        }
        if let Err(e) = Target::parse(b) {
            return exit::usage(&format!("--vs: {e}"));
        }
        return ab(&a, cfg, b, &ctl, live);
    }
    let observers = match crate::dashboard_cmd::start(&a.dashboard) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let spec = match spec(&cfg, &chain, live) {
        Ok(mut s) => {
            s.observers.extend(observers);
            armed.attach(&mut s);
            s
        }
        Err(e) => return exit::fail(&e),
    };
    // The one run layer: the scheduler, the per-second hook (progress, dashboard, outputs,
    // abortOnFail), the result, k6's verdicts.
    let (mut result, aborted) = match crate::quick_flags::Chain::execute(spec, &ctl) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let fault_lines = armed.finish(&mut result);
    // k6's thresholds were judged by the run layer (the verdicts are saved with the result);
    // then the per-series checks.
    let summary = match QuickSummary::from_result(&result) {
        Ok(s) => s,
        Err(e) => return exit::fail(&format!("cannot summarise the run: {e}")),
    };
    print_summary(&summary, o.json, o.quiet);
    crate::fault_flags::print(&fault_lines, o.quiet || o.json);
    let outcome = chain.finish(&result, aborted, summary.transport_errors() > 0, o.quiet);
    if matches!(outcome, Outcome::Failure(_)) {
        return exit::outcome(&outcome);
    }
    if crate::dashboard_cmd::after_run(&result, &a.dashboard, o.quiet, exit::OK) != exit::OK {
        return exit::FAILURE;
    }
    exit::outcome(&outcome)
}

/// Quick mode as the run layer's input: its plan and body factory (one VU per connection),
/// k6's thresholds, the outputs, the progress line, and its own result shape.
fn spec(
    cfg: &QuickConfig,
    chain: &crate::quick_flags::Chain,
    live: bool,
) -> Result<volley_run::RunSpec<volley_engine::quick::QuickFactory>, String> {
    let (plan, factory) = volley_engine::quick::plan(cfg, &chain.monitor)?;
    // Raw outputs show k6's request tags; quick mode's series keys leave out the constant ones.
    let base: volley_metrics::TagSet = [
        ("method", cfg.method.clone()),
        ("url", cfg.url.clone()),
        ("name", cfg.url.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let (json_out, outputs) = chain.outputs(base)?;
    let shaper = factory.clone();
    Ok(volley_run::RunSpec {
        plan,
        factory: factory.clone(),
        thresholds: chain.thresholds.clone(),
        outputs,
        json_out,
        observers: vec![Box::new(volley_run::progress::QuickLine::new(
            factory, live,
        ))],
        meta: volley_metrics::RunMeta::new(volley_engine::quick::RUN_KIND, cfg.url.clone(), vec![]),
        options: Default::default(),
        late_options: None,
        result_of: Some(Box::new(move |r| shaper.result(r))),
    })
}

/// The text (or `--json`) summary on stdout.
fn print_summary(summary: &QuickSummary, json: bool, quiet: bool) {
    print_doc(
        json,
        quiet,
        || summary.to_json(),
        |c| summary.render_text(c),
    );
}

/// A quick mode's summary on stdout: the `--json` document or (unless quiet) the text,
/// coloured on a terminal (also `volley ws`'s).
pub(crate) fn print_doc(
    json: bool,
    quiet: bool,
    doc: impl FnOnce() -> serde_json::Value,
    text: impl FnOnce(bool) -> String,
) {
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&doc()).unwrap_or_default()
        );
    } else if !quiet {
        exit::print(&text(exit::stdout_is_tty()));
    }
    let _ = std::io::stdout().flush();
}

/// `--vs`: alternate A and B for `--rounds` rounds, then print one comparison.
fn ab(a: &HttpArgs, cfg_a: QuickConfig, url_b: &str, ctl: &RunControl, live: bool) -> i32 {
    let mut cfg_b = cfg_a.clone();
    cfg_b.url = url_b.to_string();
    let cfgs = [cfg_a, cfg_b];
    let names = [cfgs[0].url.as_str(), cfgs[1].url.as_str()];
    crate::quick_flags::ab(
        &a.outputs,
        names,
        ctl,
        |i| {
            let r = run_quick(&cfgs[i], ctl, |p| {
                if live {
                    progress_line(p);
                }
            });
            if live {
                eprint!("\r\x1b[2K");
            }
            r.map_err(|e| exit::fail(&e))
        },
        |r| {
            let s = QuickSummary::from_result(r)?;
            Ok((s.to_json(), s.transport_errors() > 0))
        },
    )
}

fn config(a: &HttpArgs) -> Result<QuickConfig, String> {
    // Parse the URL now so a bad one is a usage error with a hint, not a run failure.
    Target::parse(&a.url).map_err(|e| e.to_string())?;
    let headers = parse_headers(&a.headers)?;
    let body = if let Some(b) = &a.body {
        Body::Bytes(b.clone().into_bytes().into())
    } else if let Some(p) = &a.body_file {
        let meta = std::fs::metadata(p).map_err(|e| format!("--body-file {}: {e}", p.display()))?;
        if !meta.is_file() {
            return Err(format!("--body-file {}: not a regular file", p.display()));
        }
        Body::File {
            path: p.clone(),
            len: meta.len(),
        }
    } else {
        Body::Empty
    };
    let method = match &a.method {
        Some(m) => {
            let m = m.to_ascii_uppercase();
            if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(format!(
                    "--method '{m}' is not an HTTP method (e.g. GET, POST, PUT)"
                ));
            }
            m
        }
        None if !matches!(body, Body::Empty) => "POST".to_string(),
        None => "GET".to_string(),
    };
    a.tls.check()?;
    if a.pipeline > 1 && a.http2 {
        return Err("--pipeline is for HTTP/1.1; with --http2 use --h2-streams".into());
    }
    if a.http2 && a.body_file.is_some() {
        return Err("--body-file is not supported over HTTP/2 yet; use -d or HTTP/1.1".into());
    }
    // Never more connections than requests: each costs a task and a socket up front.
    let connections = a.connections.min(a.requests.unwrap_or(u64::MAX));
    if a.http2 && connections.saturating_mul(a.h2_streams) > MAX_H2_IN_FLIGHT {
        return Err(format!(
            "-c {connections} × --h2-streams {} is more than {MAX_H2_IN_FLIGHT} streams in \
             flight: lower one of them",
            a.h2_streams
        ));
    }
    let (duration, rate) = crate::quick_flags::pacing(&a.load, a.requests, "requests")?;
    Ok(QuickConfig {
        url: a.url.clone(),
        method,
        headers,
        body,
        connections: connections as usize,
        duration,
        requests: a.requests,
        timeout: a.timeout,
        connect_timeout: a.connect_timeout,
        keepalive: !a.no_keepalive,
        tls: a.tls.options(),
        threads: a.load.threads,
        pipeline: a.pipeline as usize,
        http2: a.http2,
        h2_streams: a.h2_streams as usize,
        rate,
        max_connections: a.max_connections.unwrap_or(
            (a.connections as usize)
                .saturating_mul(10)
                .clamp(100, MAX_CONNECTIONS),
        ),
        command: std::env::args().collect(),
    })
}

/// `-H 'Name: value'` flags → header pairs (also `volley ws`'s handshake headers).
pub(crate) fn parse_headers(flags: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut headers = Vec::with_capacity(flags.len());
    for h in flags {
        let (name, value) = h
            .split_once(':')
            .ok_or_else(|| format!("header '{h}' has no ':'; write it as -H 'Name: value'"))?;
        let name = name.trim();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(format!("header '{h}' has an invalid name"));
        }
        if value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
            return Err(format!(
                "header '{name}' has CR, LF or NUL in its value; give each header its own -H"
            ));
        }
        headers.push((name.to_string(), value.trim().to_string()));
    }
    Ok(headers)
}

/// `-z` as given, else [`DEFAULT_DURATION`] unless `-n` or the rate stages end the run.
pub(crate) fn load_length(
    duration: Option<Duration>,
    count: Option<u64>,
    rate: Option<&RateSchedule>,
) -> Result<Option<Duration>, String> {
    let staged = rate.is_some_and(|r| r.duration().is_some());
    let duration = match (duration, count) {
        (None, None) if !staged => Some(DEFAULT_DURATION),
        (d, _) => d,
    };
    if duration == Some(Duration::ZERO) {
        return Err("--duration must be more than 0".into());
    }
    Ok(duration)
}

/// `-q`/`--rate-stages` → the open model's schedule (None: closed model). `what` names the
/// unit in the error ("requests", "messages").
pub(crate) fn parse_rate(
    rate: Option<f64>,
    stages: Option<&str>,
    what: &str,
) -> Result<Option<RateSchedule>, String> {
    Ok(match (rate, stages) {
        (Some(r), _) if !(r.is_finite() && r >= 0.0) => {
            return Err(format!(
                "--rate {r} is not a rate: give {what} per second, e.g. -q 1000"
            ))
        }
        (Some(0.0), None) => return Err("--rate must be more than 0".into()),
        (r, Some(spec)) => Some(RateSchedule::parse_stages(r.unwrap_or(0.0), spec)?),
        (Some(r), None) => Some(RateSchedule::constant(r)),
        (None, None) => None,
    })
}

fn progress_line(p: &Progress) {
    eprint!("\r\x1b[2K{}", volley_run::progress::quick_line(p));
    let _ = std::io::stderr().flush();
}
