//! `volley http URL`: flags → [`QuickConfig`], live progress, summary, result file, exit code.

use crate::args::HttpArgs;
use crate::{exit, signals};
use std::io::{IsTerminal, Write};
use std::time::Duration;
use volley_engine::{run_quick, Progress, QuickConfig, QuickSummary, RateSchedule, RunControl};
use volley_http::{Body, Target, TlsOptions};

/// Default load length when neither -z nor -n is given (as wrk).
const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// Most connections (`-c`, `--max-connections`): one client address has no more ports.
const MAX_CONNECTIONS: usize = 65_535;

/// Most requests in flight at once over HTTP/2 (`-c` × `--h2-streams`): each stream is a task
/// of a few KiB, created up front.
const MAX_H2_IN_FLIGHT: u64 = 1_000_000;

pub fn run(a: HttpArgs) -> i32 {
    let cfg = match config(&a) {
        Ok(c) => c,
        Err(e) => return exit::usage(&e),
    };
    if let Err(e) = crate::history_cmd::check_labels(&a.labels) {
        return exit::usage(&e);
    }
    let (monitor, thresholds) =
        match crate::monitor_cmd::http_setup(&a.monitor, a.monitor_interval, &a.thresholds) {
            Ok(m) => m,
            Err(code) => return code,
        };
    // Every output written after the run must be writable before it starts.
    let files: Vec<(&str, &std::path::Path)> = [("--save", &a.save), ("--report", &a.report)]
        .into_iter()
        .filter_map(|(f, p)| Some((f, p.as_deref()?)))
        .collect();
    if let Err(e) = volley_history::preflight::check(&files, a.history.as_deref()) {
        return exit::fail(&e);
    }
    let ctl = RunControl::new();
    signals::install(ctl.clone());
    let live = !a.quiet && std::io::stderr().is_terminal();
    if let Some(b) = &a.vs {
        if let Err(e) = Target::parse(b) {
            return exit::usage(&format!("--vs: {e}"));
        }
        return ab(&a, cfg, b, &ctl, live);
    }
    let result = volley_engine::run_quick_monitored(&cfg, &monitor, &ctl, |p| {
        if live {
            progress_line(p);
        }
    });
    if live {
        eprint!("\r\x1b[2K");
    }
    let result = match result {
        Ok(r) => r,
        Err(e) => return exit::fail(&e),
    };
    let code = finish(&result, a.json, a.quiet, a.save.as_deref());
    let code = crate::monitor_cmd::apply_thresholds(&result, &thresholds, a.quiet, code);
    let code = crate::report_cmd::after_run(&result, a.report.as_deref(), a.quiet || a.json, code);
    crate::history_cmd::after_run(
        &result,
        a.history.as_deref(),
        &a.labels,
        a.quiet || a.json,
        code,
    )
}

/// `--vs`: alternate A and B for `--rounds` rounds, then print one comparison.
fn ab(a: &HttpArgs, cfg_a: QuickConfig, url_b: &str, ctl: &RunControl, live: bool) -> i32 {
    let mut cfg_b = cfg_a.clone();
    cfg_b.url = url_b.to_string();
    let (mut ra, mut rb) = (Vec::new(), Vec::new());
    'rounds: for round in 1..=a.rounds {
        for (side, cfg, out) in [("A", &cfg_a, &mut ra), ("B", &cfg_b, &mut rb)] {
            if ctl.is_stopped() {
                break 'rounds;
            }
            if !a.quiet {
                eprintln!("round {round}/{}: {side} = {}", a.rounds, cfg.url);
            }
            match run_quick(cfg, ctl, |p| {
                if live {
                    progress_line(p);
                }
            }) {
                Ok(r) => out.push(r),
                Err(e) => return exit::fail(&e),
            }
            if live {
                eprint!("\r\x1b[2K");
            }
        }
    }
    let n = ra.len().min(rb.len());
    if n == 0 {
        return exit::fail("interrupted before a full A/B round completed");
    }
    ra.truncate(n);
    rb.truncate(n);
    let report = match volley_engine::AbReport::new(&ra, &rb) {
        Ok(r) => r,
        Err(e) => return exit::fail(&e),
    };
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&report.to_json()).unwrap_or_default()
        );
    } else if !a.quiet {
        exit::print(&report.render_text());
    }
    if let Some(path) = &a.save {
        let doc = serde_json::json!({
            "format": "volley-ab",
            "version": 1,
            "a": ra,
            "b": rb,
            "comparison": report.rows,
        });
        let text = serde_json::to_vec_pretty(&doc).unwrap_or_default();
        if let Err(e) = std::fs::write(path, text) {
            return exit::fail(&format!("cannot save to {}: {e}", path.display()));
        }
    }
    let errors = report
        .a
        .iter()
        .chain(&report.b)
        .any(|s| s.transport_errors() > 0);
    if ctl.was_interrupted() {
        exit::INTERRUPTED
    } else if errors {
        exit::REQUEST_ERRORS
    } else {
        exit::OK
    }
}

/// Print and save a finished run; returns the exit code. Shared with `volley demo`.
pub fn finish(
    result: &volley_metrics::RunResult,
    json: bool,
    quiet: bool,
    save: Option<&std::path::Path>,
) -> i32 {
    let mut code = exit::OK;
    let summary = match QuickSummary::from_result(result) {
        Ok(s) => s,
        Err(e) => return exit::fail(&format!("cannot summarise the run: {e}")),
    };
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&summary.to_json()).unwrap_or_default()
        );
    } else if !quiet {
        exit::print(&summary.render_text(exit::stdout_is_tty()));
    }
    let _ = std::io::stdout().flush();
    if let Some(path) = save {
        match result.write(path) {
            Ok(()) if !quiet && !json => eprintln!("result saved to {}", path.display()),
            Ok(()) => {}
            Err(e) => {
                code = exit::fail(&format!(
                    "cannot save the result to {}: {e}",
                    path.display()
                ))
            }
        }
    }
    if code == exit::OK {
        if result.meta.interrupted {
            code = exit::INTERRUPTED;
        } else if summary.transport_errors() > 0 {
            code = exit::REQUEST_ERRORS;
        }
    }
    code
}

fn config(a: &HttpArgs) -> Result<QuickConfig, String> {
    // Parse the URL now so a bad one is a usage error with a hint, not a run failure.
    Target::parse(&a.url).map_err(|e| e.to_string())?;
    let mut headers = Vec::with_capacity(a.headers.len());
    for h in &a.headers {
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
    if let Some(p) = &a.cacert {
        if p.is_dir() {
            return Err(format!(
                "--cacert {}: is a directory; give a PEM file of certificates",
                p.display()
            ));
        }
        if !p.is_file() {
            return Err(format!("--cacert {}: no such file", p.display()));
        }
    }
    let rate = match (a.rate, &a.rate_stages) {
        (Some(r), _) if !(r.is_finite() && r >= 0.0) => {
            return Err(format!(
                "--rate {r} is not a rate: give requests per second, e.g. -q 1000"
            ))
        }
        (Some(0.0), None) => return Err("--rate must be more than 0".into()),
        (r, Some(spec)) => Some(RateSchedule::parse_stages(r.unwrap_or(0.0), spec)?),
        (Some(r), None) => Some(RateSchedule::constant(r)),
        (None, None) => None,
    };
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
    let staged = rate.as_ref().is_some_and(|r| r.duration().is_some());
    let duration = match (a.duration, a.requests) {
        (None, None) if !staged => Some(DEFAULT_DURATION),
        (d, _) => d,
    };
    if duration == Some(Duration::ZERO) {
        return Err("--duration must be more than 0".into());
    }
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
        tls: TlsOptions {
            insecure: a.insecure,
            cacert: a.cacert.clone(),
        },
        threads: a.threads,
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

fn progress_line(p: &Progress) {
    let left = p
        .remaining
        .map(|r| format!("  {:.0}s left", r.as_secs_f64().ceil()))
        .unwrap_or_default();
    eprint!(
        "\r\x1b[2K{:>5.0}s  {} requests  {:.0} req/s  p99 {}  errors {}{left}",
        p.elapsed.as_secs_f64(),
        p.requests,
        p.rate,
        volley_engine::summary::ms(p.p99_ms),
        p.errors,
    );
    let _ = std::io::stderr().flush();
}
