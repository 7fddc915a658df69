//! Log lines as k6 writes them: logfmt on a stderr that is not a terminal, `--log-format
//! json|raw`, `--log-output`, `--console-output`, `-v`, and their `K6_*` variables (the flag
//! wins). The script is tests/k6/logs.js.

mod common;

use common::{stderr, volley};
use std::path::PathBuf;
use std::process::Output;

fn script() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/k6/logs.js")
        .to_string_lossy()
        .into_owned()
}

/// `volley run -q logs.js ARGS` with `env` set and no K6_* log variables inherited.
fn run_logs(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = volley();
    c.args(["run", "-q", "--no-system-env"])
        .args(args)
        .arg(script());
    for k in [
        "K6_LOG_FORMAT",
        "K6_LOG_OUTPUT",
        "K6_CONSOLE_OUTPUT",
        "K6_NO_COLOR",
        "NO_COLOR",
    ] {
        c.env_remove(k);
    }
    c.envs(env.iter().copied());
    let o = c.output().expect("volley runs");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    o
}

/// The lines that are log lines (logfmt), with the `time="..." ` prefix checked and dropped.
fn logfmt_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("time="))
        .map(|l| {
            let (time, rest) = l.split_once(' ').unwrap();
            let t = time.trim_start_matches("time=\"").trim_end_matches('"');
            // Go's RFC 3339 in seconds: 2026-11-25T14:00:00Z or ...+01:00.
            let b = t.as_bytes();
            assert!(
                t.len() >= 20 && b[4] == b'-' && b[10] == b'T' && b[13] == b':' && b[19] != b'.',
                "time {t:?} in {l:?}"
            );
            rest.to_string()
        })
        .collect()
}

#[test]
fn non_tty_stderr_is_logfmt_in_k6_field_order() {
    let o = run_logs(&[], &[]);
    let err = stderr(&o);
    let lines = logfmt_lines(&err);
    assert_eq!(
        &lines[..6],
        [
            "level=info msg=\"hello world\" source=console",
            "level=info msg=plain_value source=console",
            "level=warning msg=\"with \\\"quotes\\\" and\\nnewline\" source=console",
            "level=error msg=\"a<b & c>d\" source=console",
            // An empty message has no msg field (logrus).
            "level=info source=console",
            // Objects as k6's console writes them (not JSON).
            "level=info msg=\"obj { a: 1, s: \\\"x\\\", n: null, arr: [ 1, \\\"two\\\", [] ], f: \
             [object Function] } Uint8Array(2) [ 1, 2 ] Error: e1\" source=console",
        ],
        "{err}"
    );
    // The exception: k6's fields, sorted by key.
    assert!(lines[6].starts_with("level=error msg=\""), "{err}");
    assert!(
        lines[6].ends_with("\" executor=shared-iterations scenario=default source=stacktrace"),
        "{err}"
    );
    assert!(lines[6].contains("Error: boom"), "{err}");
    // Nothing in the terminal form, and console.debug only with -v.
    assert!(!err.contains("INFO[") && !err.contains("ERRO["), "{err}");
    assert!(!err.contains("only with -v"), "{err}");
    let v = stderr(&run_logs(&["-v"], &[]));
    assert!(
        logfmt_lines(&v).contains(&"level=debug msg=\"only with -v\" source=console".into()),
        "{v}"
    );
}

#[test]
fn log_format_json_lines_parse_with_level_msg_source_time() {
    let o = run_logs(&["--log-format", "json"], &[]);
    let err = stderr(&o);
    let lines: Vec<serde_json::Value> = err
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lines.len(), 7, "{err}");
    assert_eq!(lines[2]["level"], "warning");
    assert_eq!(lines[2]["msg"], "with \"quotes\" and\nnewline");
    assert_eq!(lines[2]["source"], "console");
    assert!(lines[2]["time"].as_str().unwrap().len() >= 20);
    assert_eq!(lines[4]["msg"], "", "json keeps an empty msg");
    assert_eq!(lines[6]["scenario"], "default");
    // Keys sorted and HTML escaped, as Go's encoder writes them.
    let raw = err.lines().find(|l| l.contains("a\\u003cb")).expect(&err);
    assert!(
        raw.starts_with(
            r#"{"level":"error","msg":"a\u003cb \u0026 c\u003ed","source":"console","time":""#
        ),
        "{raw}"
    );
    // raw: the message alone.
    let r = stderr(&run_logs(&["--log-format", "raw"], &[]));
    assert!(r.lines().any(|l| l == "hello world"), "{r}");
}

#[test]
fn console_output_writes_console_lines_to_the_file_and_not_stderr() {
    let dir = common::scratch("logs-console");
    let file = dir.join("console.log");
    let o = run_logs(&["--console-output", file.to_str().unwrap()], &[]);
    let err = stderr(&o);
    assert!(!err.contains("hello world"), "{err}");
    // The exception is no console line: it stays in the log.
    assert!(err.contains("source=stacktrace"), "{err}");
    let text = std::fs::read_to_string(&file).unwrap();
    let lines = logfmt_lines(&text);
    // k6's console file logger has no source field.
    assert_eq!(lines[0], "level=info msg=\"hello world\"", "{text}");
    assert_eq!(lines.len(), 6, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn log_output_none_silences_and_file_keeps_its_level() {
    let o = run_logs(&["--log-output", "none"], &[]);
    assert!(!stderr(&o).contains("level="), "{}", stderr(&o));
    let dir = common::scratch("logs-file");
    let file = dir.join("k6.log");
    let spec = format!("file={},level=warning", file.display());
    let o = run_logs(&["--log-output", &spec], &[]);
    assert!(!stderr(&o).contains("level="), "{}", stderr(&o));
    let lines = logfmt_lines(&std::fs::read_to_string(&file).unwrap());
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(
        lines.iter().all(|l| !l.starts_with("level=info")),
        "{lines:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn k6_log_env_vars_apply_and_the_flag_wins() {
    let json = |o: &Output| stderr(o).lines().filter(|l| l.starts_with('{')).count();
    assert_eq!(json(&run_logs(&[], &[("K6_LOG_FORMAT", "json")])), 7);
    let o = run_logs(&["--log-format", "text"], &[("K6_LOG_FORMAT", "json")]);
    assert_eq!((json(&o), logfmt_lines(&stderr(&o)).len()), (0, 7));
    let o = run_logs(&[], &[("K6_LOG_OUTPUT", "none")]);
    assert!(!stderr(&o).contains("level="), "{}", stderr(&o));
    let o = run_logs(&["--log-output", "stderr"], &[("K6_LOG_OUTPUT", "none")]);
    assert_eq!(logfmt_lines(&stderr(&o)).len(), 7);
    let dir = common::scratch("logs-env");
    let (a, b) = (dir.join("a.log"), dir.join("b.log"));
    let ap = a.to_str().unwrap();
    run_logs(
        &["--console-output", ap],
        &[("K6_CONSOLE_OUTPUT", b.to_str().unwrap())],
    );
    assert!(a.exists() && !b.exists());
    run_logs(&[], &[("K6_CONSOLE_OUTPUT", b.to_str().unwrap())]);
    assert!(std::fs::read_to_string(&b).unwrap().contains("hello world"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_log_flags_are_usage_errors_with_a_hint() {
    for (flag, val, hint) in [
        ("--log-format", "xml", "text, json or raw"),
        ("--log-output", "syslog", "file=PATH"),
        (
            "--log-output",
            "file=x.log,level=loud",
            "unknown log level 'loud'",
        ),
    ] {
        let o = volley()
            .args(["run", flag, val, &script()])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(hint), "{}", stderr(&o));
    }
    let o = volley()
        .args([
            "run",
            "--console-output",
            "/nonexistent-dir/c.log",
            &script(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--console-output: cannot open"),
        "{}",
        stderr(&o)
    );
}

fn k6() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("K6") {
        return Some(p.into());
    }
    let peers = PathBuf::from(std::env::var_os("HOME")?).join(".cache/volley-peers/bin/k6");
    peers.exists().then_some(peers)
}

/// The console lines of logs.js as k6 v1 writes them, time aside (skipped without k6).
#[test]
fn console_lines_match_k6s() {
    let Some(k6) = k6() else {
        eprintln!("k6 not found (set K6=/path/to/k6): skipped");
        return;
    };
    let dir = common::scratch("logs-k6");
    for format in ["text", "json"] {
        let k = std::process::Command::new(&k6)
            .current_dir(&dir)
            .args(["run", "-q", "--no-summary", "--log-format", format])
            .arg(script())
            .env("K6_NO_USAGE_REPORT", "true")
            .output()
            .unwrap();
        let v = run_logs(&["--log-format", format], &[]);
        let console = |o: &Output| -> Vec<String> {
            stderr(o)
                .lines()
                .filter(|l| l.contains("source=console") || l.contains("\"source\":\"console\""))
                .map(|l| match format {
                    "json" => {
                        let mut j: serde_json::Value = serde_json::from_str(l).unwrap();
                        j["time"] = "".into();
                        j.to_string()
                    }
                    _ => l.split_once(' ').unwrap().1.to_string(),
                })
                .collect()
        };
        assert_eq!(
            console(&v),
            console(&k),
            "{format}: volley (left) vs k6 (right)"
        );
        assert_eq!(console(&v).len(), 6);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
