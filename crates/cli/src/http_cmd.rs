//! `volley http URL`: flags → [`QuickConfig`], live progress, summary, result file, exit code.

use crate::args::HttpArgs;
use crate::{exit, signals};
use std::io::{IsTerminal, Write};
use std::time::Duration;
use volley_engine::{run_quick, Progress, QuickConfig, QuickSummary, RunControl};
use volley_http::{Body, Target, TlsOptions};

/// Default load length when neither -z nor -n is given (as wrk).
const DEFAULT_DURATION: Duration = Duration::from_secs(10);

pub fn run(a: HttpArgs) -> i32 {
    let cfg = match config(&a) {
        Ok(c) => c,
        Err(e) => return exit::usage(&e),
    };
    let ctl = RunControl::new();
    signals::install(ctl.clone());
    let live = !a.quiet && std::io::stderr().is_terminal();
    let result = run_quick(&cfg, &ctl, |p| {
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
    finish(&result, a.json, a.quiet, a.save.as_deref())
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
        println!(
            "{}",
            serde_json::to_string_pretty(&summary.to_json()).unwrap_or_default()
        );
    } else if !quiet {
        print!("{}", summary.render_text(exit::stdout_is_tty()));
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
        if !p.is_file() {
            return Err(format!("--cacert {}: no such file", p.display()));
        }
    }
    let duration = match (a.duration, a.requests) {
        (None, None) => Some(DEFAULT_DURATION),
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
        connections: a.connections as usize,
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

/// `10s`, `1m30s`, `500ms`, `2h`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let hint = || format!("invalid duration '{s}': use e.g. 30s, 1m30s, 500ms or 2h");
    if s.is_empty() {
        return Err(hint());
    }
    if let Ok(secs) = s.parse::<f64>() {
        return if secs.is_finite() && secs >= 0.0 {
            Ok(Duration::from_secs_f64(secs))
        } else {
            Err(hint())
        };
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(hint)?;
        if num_len == 0 {
            return Err(hint());
        }
        let n: f64 = rest[..num_len].parse().map_err(|_| hint())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let mult = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "us" | "µs" => 0.000_001,
            _ => return Err(hint()),
        };
        total += n * mult;
        rest = &rest[unit_len..];
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        for bad in ["", "s", "10x", "-1", "1m30", "ten"] {
            assert!(parse_duration(bad).is_err(), "{bad} should fail");
        }
    }
}
