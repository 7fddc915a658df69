//! `volley run` with k6's command line, `K6_*` environment and `--config` file
//! (docs/k6-cli.md): each flag's effect, the precedence flag > env > script > config, and the
//! flags accepted with a note.

mod common;

use common::{scratch, stderr, stdout, target, volley};
use std::path::PathBuf;
use std::process::Output;

fn script() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/k6/k6_cli.js")
        .to_string_lossy()
        .into_owned()
}

/// `volley run tests/k6/k6_cli.js -q -e BASE=... ARGS` with `envs` set.
fn run_k6(t: &volley_testserver::RunningTarget, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let base = format!("BASE=http://{}", t.local_addr());
    let mut c = volley();
    c.args(["run", &script(), "-q", "-e", &base]).args(args);
    for (k, v) in envs {
        c.env(k, v);
    }
    c.output().expect("volley runs")
}

/// The `K6CLI {...}` lines the script logged, as JSON.
fn reports(o: &Output) -> Vec<serde_json::Value> {
    stderr(o)
        .lines()
        .filter_map(|l| l.split_once("K6CLI ").map(|(_, j)| j))
        .map(|j| {
            // The log line may be logfmt (msg="...") or the terminal form: the JSON object
            // ends at the last '}', with quotes escaped in logfmt.
            let j = &j[..=j.rfind('}').unwrap_or(j.len() - 1)];
            let j = j.replace("\\\"", "\"");
            serde_json::from_str(&j).unwrap_or_else(|e| panic!("{e}: {j}"))
        })
        .collect()
}

fn one(o: &Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    let r = reports(o);
    assert!(!r.is_empty(), "no report line:\n{}", stderr(o));
    r[0].clone()
}

#[test]
fn stage_flag_runs_the_stages_instead_of_a_usage_error() {
    let t = target();
    let o = run_k6(&t, &["-s", "1s:2", "--stage", "500ms:0"], &[]);
    let r = one(&o);
    assert_eq!(
        r["stages"],
        serde_json::json!([{"duration": "1s", "target": 2}, {"duration": "500ms", "target": 0}])
    );
    let o = run_k6(&t, &["-s", "30s"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("expected DURATION:TARGET"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn user_agent_precedence_is_flag_then_env_then_script_then_config() {
    let t = target();
    let dir = scratch("k6cli-precedence");
    let config = dir.join("config.json");
    std::fs::write(&config, r#"{"userAgent": "from-config", "iterations": 1}"#).unwrap();
    let cfg = config.to_str().unwrap();
    let ua = |args: &[&str], envs: &[(&str, &str)]| -> serde_json::Value {
        one(&run_k6(&t, args, envs))["ua"].clone()
    };
    assert_eq!(ua(&["--config", cfg], &[]), "from-config");
    assert_eq!(
        ua(&["-c", cfg, "-e", "SCRIPT_UA=from-script"], &[]),
        "from-script"
    );
    let env = [("K6_USER_AGENT", "from-env")];
    assert_eq!(
        ua(&["-c", cfg, "-e", "SCRIPT_UA=from-script"], &env),
        "from-env"
    );
    assert_eq!(
        ua(
            &["-c", cfg, "-e", "SCRIPT_UA=s", "--user-agent", "from-flag"],
            &env
        ),
        "from-flag"
    );
    // K6_CONFIG names the file when --config is not given.
    assert_eq!(ua(&[], &[("K6_CONFIG", cfg)]), "from-config");
}

#[test]
fn k6_env_sets_the_execution_shortcuts_and_the_flags_win() {
    let t = target();
    let o = run_k6(&t, &[], &[("K6_ITERATIONS", "3"), ("K6_VUS", "1")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(reports(&o).len(), 3, "{}", stderr(&o));
    let o = run_k6(&t, &["-i", "2"], &[("K6_ITERATIONS", "3")]);
    assert_eq!(reports(&o).len(), 2, "{}", stderr(&o));
    let o = run_k6(&t, &[], &[("K6_STAGES", "600ms:1")]);
    assert_eq!(one(&o)["stages"][0]["target"], 1);
}

#[test]
fn tag_flag_replaces_k6_tags_env() {
    let t = target();
    let o = run_k6(
        &t,
        &["-i", "1", "--tag", "team=api", "--tag", "env=ci"],
        &[],
    );
    assert_eq!(
        one(&o)["tags"],
        serde_json::json!({"team": "api", "env": "ci"})
    );
    let o = run_k6(&t, &["-i", "1"], &[("K6_TAGS", "env:staging")]);
    assert_eq!(one(&o)["tags"], serde_json::json!({"env": "staging"}));
    let o = run_k6(
        &t,
        &["-i", "1", "--tag", "env=ci"],
        &[("K6_TAGS", "env:staging")],
    );
    assert_eq!(one(&o)["tags"], serde_json::json!({"env": "ci"}));
}

#[test]
fn max_redirects_flag_beats_the_script() {
    let t = target();
    let status = |args: &[&str], envs: &[(&str, &str)]| {
        one(&run_k6(&t, args, envs))["redirect_status"].clone()
    };
    assert_eq!(status(&["-i", "1"], &[]), 200);
    assert_eq!(status(&["-i", "1", "-e", "SCRIPT_REDIRECTS=0"], &[]), 302);
    assert_eq!(status(&["-i", "1", "--max-redirects", "0"], &[]), 302);
    assert_eq!(status(&["-i", "1"], &[("K6_MAX_REDIRECTS", "0")]), 302);
    assert_eq!(
        status(
            &["-i", "1", "--max-redirects", "5"],
            &[("K6_MAX_REDIRECTS", "0")]
        ),
        200
    );
}

#[test]
fn no_thresholds_from_flag_or_env_exits_0() {
    let t = target();
    let fail = ["-i", "1", "-e", "FAIL_THRESHOLD=1"];
    let o = run_k6(&t, &fail, &[]);
    assert_eq!(o.status.code(), Some(99), "{}", stderr(&o));
    let o = run_k6(&t, &[&fail[..], &["--no-thresholds"]].concat(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run_k6(&t, &fail, &[("K6_NO_THRESHOLDS", "true")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn no_summary_and_k6_summary_export_env() {
    let t = target();
    let base = format!("BASE=http://{}", t.local_addr());
    let dir = scratch("k6cli-summary");
    let export = dir.join("export.json");
    let out = dir.join("out.json");
    let run = |extra: &[&str]| {
        volley()
            .args(["run", &script(), "-i", "1", "-e", &base])
            .args(extra)
            .env("K6_SUMMARY_EXPORT", &export)
            .env("K6_OUT", format!("json={}", out.display()))
            .output()
            .unwrap()
    };
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("http_reqs"), "{}", stdout(&o));
    assert!(export.exists(), "K6_SUMMARY_EXPORT was not written");
    assert!(out.exists(), "K6_OUT was not written");
    let o = run(&["--no-summary"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains("http_reqs"), "{}", stdout(&o));
}

#[test]
fn system_env_follows_include_system_env_vars_and_its_env() {
    let t = target();
    let probe = |args: &[&str], envs: &[(&str, &str)]| {
        let mut e = vec![("K6CLI_PROBE", "seen")];
        e.extend_from_slice(envs);
        one(&run_k6(&t, &[&["-i", "1"], args].concat(), &e))["probe"].clone()
    };
    assert_eq!(probe(&[], &[]), "seen");
    assert_eq!(probe(&["--no-system-env"], &[]), serde_json::Value::Null);
    let off = [("K6_INCLUDE_SYSTEM_ENV_VARS", "false")];
    assert_eq!(probe(&[], &off), serde_json::Value::Null);
    assert_eq!(probe(&["--include-system-env-vars"], &off), "seen");
}

#[test]
fn k6_flags_volley_cannot_honour_exit_0_with_a_note() {
    let t = target();
    let o = run_k6(
        &t,
        &[
            "-i",
            "1",
            "--linger",
            "--paused",
            "-a",
            "localhost:6565",
            "--profiling-enabled",
            "--no-usage-report",
            "--execution-segment",
            "0:1",
            "--rps",
            "10",
            "--local-ips",
            "127.0.0.1",
            "--dns",
            "ttl=5m",
            "--blacklist-ip",
            "10.0.0.0/8",
            "--discard-response-bodies",
            "--no-connection-reuse",
            "--no-vu-connection-reuse",
            "--batch",
            "5",
            "--batch-per-host",
            "2",
            "--insecure-skip-tls-verify",
            "--system-tags",
            "status,method",
            "-o",
            "cloud",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    for flag in [
        "--linger",
        "--paused",
        "--address",
        "--profiling-enabled",
        "--out cloud",
    ] {
        assert!(
            err.lines()
                .any(|l| l.starts_with(&format!("volley: note: {flag} is accepted"))),
            "no note for {flag}:\n{err}"
        );
    }
    for opt in ["localIPs", "dns"] {
        assert!(
            err.contains(&format!("option '{opt}' is not supported by volley yet")),
            "no note for {opt}:\n{err}"
        );
    }
}

#[test]
fn bad_config_file_and_bad_k6_env_exit_104_saying_where() {
    let t = target();
    let dir = scratch("k6cli-bad");
    let config = dir.join("bad.json");
    std::fs::write(&config, "{\n  \"vus\": 2,\n  oops\n}").unwrap();
    let o = run_k6(&t, &["--config", config.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(104), "{}", stderr(&o));
    assert!(stderr(&o).contains("bad.json:3:"), "{}", stderr(&o));
    let o = run_k6(&t, &[], &[("K6_VUS", "lots")]);
    assert_eq!(o.status.code(), Some(104), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("K6_VUS='lots': expected a whole number"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn http_debug_logs_each_request_and_response_head_and_full_adds_bodies() {
    let t = target();
    let o = run_k6(
        &t,
        &["-i", "1", "--max-redirects", "0", "--http-debug"],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // stderr is not a terminal: logfmt, the multi-line message escaped as k6 writes it.
    let err = stderr(&o);
    assert_eq!(
        err.matches(r#"level=info msg="Request:\nGET /headers HTTP/1.1\n"#)
            .count(),
        1,
        "{err}"
    );
    assert_eq!(
        err.matches(r#"level=info msg="Request:\nGET /redirect/3 HTTP/1.1\n"#)
            .count(),
        1,
        "{err}"
    );
    assert!(
        err.contains(r#"msg="Response:\nHTTP/1.1 302 Found\n"#),
        "{err}"
    );
    assert!(err.contains(r"location: /redirect/2\n"), "{err}");
    assert_eq!(err.matches("source=http-debug vu=1").count(), 4, "{err}");
    assert!(
        !err.contains(r#"\"headers\""#),
        "a body without full:\n{err}"
    );
    let o = run_k6(&t, &["-i", "1"], &[("K6_HTTP_DEBUG", "full")]);
    assert!(
        stderr(&o).contains(r#"\"headers\""#),
        "no body with full:\n{}",
        stderr(&o)
    );
}

#[test]
fn throw_flag_makes_a_failed_request_throw() {
    let t = target();
    let closed = format!("CLOSED=http://127.0.0.1:{}/", common::closed_port());
    let o = run_k6(&t, &["-i", "1", "-e", &closed], &[]);
    assert_eq!(
        reports(&o).len(),
        1,
        "without --throw the iteration goes on:\n{}",
        stderr(&o)
    );
    for (args, envs) in [
        (&["--throw"][..], &[][..]),
        (&["-w"], &[]),
        (&[], &[("K6_THROW", "true")]),
    ] {
        let o = run_k6(&t, &[&["-i", "1", "-e", &closed], args].concat(), envs);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(
            reports(&o).is_empty(),
            "the request did not throw:\n{}",
            stderr(&o)
        );
        assert!(stderr(&o).contains("refused"), "{}", stderr(&o));
    }
}

#[test]
fn no_setup_and_no_teardown_skip_them_from_flags_and_env() {
    let t = target();
    let ran = |o: &Output| {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
        let e = stderr(o);
        (
            e.contains("K6CLI_SETUP ran"),
            e.contains("K6CLI_TEARDOWN ran"),
        )
    };
    assert_eq!(ran(&run_k6(&t, &["-i", "1"], &[])), (true, true));
    assert_eq!(
        ran(&run_k6(&t, &["-i", "1", "--no-setup"], &[])),
        (false, true)
    );
    assert_eq!(
        ran(&run_k6(&t, &["-i", "1", "--no-teardown"], &[])),
        (true, false)
    );
    let env = [("K6_NO_SETUP", "true"), ("K6_NO_TEARDOWN", "1")];
    assert_eq!(ran(&run_k6(&t, &["-i", "1"], &env)), (false, false));
}

#[test]
fn block_hostnames_refuses_matching_hosts_with_k6s_error() {
    let t = target();
    let port = t.local_addr().port();
    let url = format!("BLOCKED=http://Blocked.localhost:{port}/");
    let o = run_k6(
        &t,
        &["-i", "1", "-e", &url, "--block-hostnames", "*.localhost"],
        &[],
    );
    let b = &one(&o)["blocked"];
    assert_eq!(b["code"], 1111, "{b}");
    assert_eq!(
        b["error"],
        "hostname (Blocked.localhost) is in a blocked pattern (*.localhost)"
    );
    let o = run_k6(
        &t,
        &["-i", "1", "-e", &url],
        &[("K6_BLOCK_HOSTNAMES", "other.test,*.localhost")],
    );
    assert_eq!(one(&o)["blocked"]["code"], 1111);
}

#[test]
fn blacklist_ip_refuses_requests_to_the_range_with_k6s_error() {
    let t = target();
    let port = t.local_addr().port();
    let url = format!("BLOCKED=http://127.0.0.1:{port}/");
    let o = run_k6(
        &t,
        &[
            "-i",
            "1",
            "-e",
            &url,
            "--blacklist-ip",
            "10.0.0.0/8,127.0.0.0/8",
        ],
        &[],
    );
    let b = &one(&o)["blocked"];
    assert_eq!(b["code"], 1110, "{b}");
    let e = b["error"].as_str().unwrap_or_default();
    assert!(
        e.contains("IP (127.0.0.1) is in a blacklisted range (127.0.0.0/8)"),
        "{e}"
    );
    let o = run_k6(
        &t,
        &["-i", "1", "-e", &url],
        &[("K6_BLACKLIST_IPS", "192.168.0.0/16")],
    );
    assert_eq!(one(&o)["blocked"]["code"], 0);
    let o = run_k6(&t, &["-i", "1", "--blacklist-ip", "10.0.0.0/99"], &[]);
    assert_eq!(o.status.code(), Some(104), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("options.blacklistIPs[0]: '10.0.0.0/99' is not an IP range"),
        "{}",
        stderr(&o)
    );
}

/// A lower bound only: 10 requests at 10/s cannot take less than 0.9 s (the first is sent at
/// once), however fast the machine; without --rps the same run is not held back.
#[test]
fn rps_flag_and_env_pace_requests_across_vus() {
    let t = target();
    for (args, envs) in [(&["--rps", "10"][..], &[][..]), (&[], &[("K6_RPS", "10")])] {
        let start = std::time::Instant::now();
        // 2 iterations on 2 VUs, 5 requests each (/headers and /redirect/3's four hops).
        let o = run_k6(&t, &[&["-i", "2", "-u", "2"], args].concat(), envs);
        let took = start.elapsed();
        assert_eq!(reports(&o).len(), 2, "{}", stderr(&o));
        assert!(
            took >= std::time::Duration::from_millis(880),
            "{took:?} for 10 requests at 10/s"
        );
    }
}

/// A lower bound only: two iterations of one VU cannot end before 2 × the minimum.
#[test]
fn min_iteration_duration_holds_fast_iterations() {
    let t = target();
    for (args, envs) in [
        (&["--min-iteration-duration", "500ms"][..], &[][..]),
        (&[], &[("K6_MIN_ITERATION_DURATION", "500ms")]),
    ] {
        let start = std::time::Instant::now();
        let o = run_k6(&t, &[&["-i", "2", "-u", "1"], args].concat(), envs);
        let took = start.elapsed();
        assert_eq!(reports(&o).len(), 2, "{}", stderr(&o));
        assert!(
            took >= std::time::Duration::from_millis(980),
            "{took:?} for 2 × 500ms"
        );
    }
}

#[test]
fn k6_no_cookies_reset_keeps_the_jar_between_iterations() {
    let t = target();
    let second = |envs: &[(&str, &str)]| {
        let o = run_k6(&t, &["-i", "2", "-u", "1", "-e", "COOKIES=1"], envs);
        let r = reports(&o);
        assert_eq!(r.len(), 2, "{}", stderr(&o));
        r.into_iter().find(|r| r["vu_iter"] == 1).unwrap()["cookies"].clone()
    };
    assert_eq!(second(&[]), serde_json::json!({}));
    assert_eq!(
        second(&[("K6_NO_COOKIES_RESET", "true")]),
        serde_json::json!({"k6cli": "1"})
    );
}

#[test]
fn config_file_out_is_used_unless_k6_out_or_the_flag_is_given() {
    let t = target();
    let dir = scratch("k6cli-config-out");
    let (from_config, from_env) = (dir.join("config.ndjson"), dir.join("env.ndjson"));
    let config = dir.join("k6.json");
    let text = serde_json::json!({"out": [format!("json={}", from_config.display())]});
    std::fs::write(&config, text.to_string()).unwrap();
    let cfg = config.to_str().unwrap();
    let o = run_k6(&t, &["-i", "1", "-c", cfg], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        from_config.exists(),
        "the config file's out was not written"
    );
    std::fs::remove_file(&from_config).unwrap();
    let env_out = format!("json={}", from_env.display());
    let o = run_k6(&t, &["-i", "1", "-c", cfg], &[("K6_OUT", &env_out)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        from_env.exists() && !from_config.exists(),
        "K6_OUT must replace the config's out"
    );
}
