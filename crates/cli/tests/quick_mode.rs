//! `volley http` end to end: accounting, latency, TLS, faults, interruption, bad input.

mod common;
use common::*;
use std::io::Write;
use std::time::Duration;

#[test]
fn exact_request_accounting_matches_the_server() {
    let _serial = exclusive();
    let t = target();
    let url = format!("{}/", t.url());
    let o = run(&["http", &url, "-n", "10000", "-c", "20", "--json"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let j = json(&o);
    let s = t.stats();
    assert_eq!(j["requests"], 10000);
    assert_eq!(s.requests, 10000, "server saw exactly what was asked");
    assert_eq!(j["status"]["200"], 10000);
    assert_eq!(
        j["bytes_sent"].as_u64().unwrap(),
        s.bytes_received,
        "request bytes on the wire"
    );
    assert_eq!(
        j["bytes_received"].as_u64().unwrap(),
        s.bytes_sent,
        "response bytes on the wire"
    );
    assert_eq!(j["success_rate"], 1.0);
    assert_eq!(j["errors"].as_object().unwrap().len(), 0);
    t.shutdown();
}

#[test]
fn download_bytes_are_counted_on_the_wire() {
    let _serial = exclusive();
    let t = target();
    let url = format!("{}/bytes/1048576", t.url());
    let o = run(&["http", &url, "-n", "20", "-c", "4", "--json"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let j = json(&o);
    let s = t.stats();
    let received = j["bytes_received"].as_u64().unwrap();
    assert_eq!(received, s.bytes_sent, "Volley's count equals the server's");
    let headers = received - 20 * 1_048_576;
    assert!(
        headers > 20 * 30 && headers < 20 * 400,
        "20 bodies of 1 MiB plus 20 response heads, got {headers} head bytes"
    );
    t.shutdown();
}

#[test]
fn delay_latency_is_reported_faithfully() {
    let _serial = exclusive();
    let t = target();
    let url = format!("{}/delay/10", t.url());
    let o = run(&["http", &url, "-n", "200", "-c", "2", "--json"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let j = json(&o);
    let p50 = j["latency_ms"]["p50"].as_f64().unwrap();
    assert!(
        (10.0..=12.0).contains(&p50),
        "p50 {p50} ms should be within 10..12 ms"
    );
    assert!(j["latency_ms"]["min"].as_f64().unwrap() >= 10.0);
    t.shutdown();
}

#[test]
fn refused_connections_are_counted_and_exit_3() {
    let _serial = exclusive();
    let port = closed_port();
    let url = format!("http://127.0.0.1:{port}/");
    let o = run(&["http", &url, "-n", "50", "-c", "5", "--json"]);
    assert_eq!(o.status.code(), Some(3), "stderr: {}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["errors"]["refused"], 50);
    assert_eq!(j["requests"], 50);
    assert_eq!(j["success_rate"], 0.0);
}

#[test]
fn reset_mid_response_is_classified() {
    let _serial = exclusive();
    let port = raw_server(20, Duration::from_secs(20), |mut s| {
        if read_head(&mut s) {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n");
            let _ = s.write_all(&[b'x'; 100]);
        }
        // Dropping the socket mid-body: the client sees the connection end early.
    });
    let url = format!("http://127.0.0.1:{port}/");
    let o = run(&["http", &url, "-n", "10", "-c", "2", "--json"]);
    assert_eq!(o.status.code(), Some(3), "stderr: {}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["errors"]["reset"], 10, "{j}");
    assert!(
        j["bytes_received"].as_u64().unwrap() >= 10 * 100,
        "partial bytes still counted"
    );
}

#[test]
fn silent_server_times_out() {
    let _serial = exclusive();
    let port = raw_server(10, Duration::from_secs(20), |mut s| {
        read_head(&mut s);
        std::thread::sleep(Duration::from_secs(3));
    });
    let url = format!("http://127.0.0.1:{port}/");
    let o = run(&[
        "http",
        &url,
        "-n",
        "4",
        "-c",
        "2",
        "--timeout",
        "300ms",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(3), "stderr: {}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["errors"]["timeout"], 4, "{j}");
    assert!(
        j["duration_s"].as_f64().unwrap() < 2.5,
        "each request gave up after ~300 ms"
    );
}

/// `volley http` with `args` against a server that never answers: (exit code, --json, wall).
fn against_silent(url: &str, args: &[&str]) -> (Option<i32>, serde_json::Value, Duration) {
    let start = std::time::Instant::now();
    let mut all = vec!["http", url, "--json"];
    all.extend_from_slice(args);
    let o = run(&all);
    let wall = start.elapsed();
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    (o.status.code(), json(&o), wall)
}

#[test]
fn z_deadline_cuts_requests_a_silent_server_never_answers() {
    let _serial = exclusive();
    let (_l, port) = silent_listener();
    let url = format!("http://127.0.0.1:{port}/");
    // The request timeout (30 s) is far beyond -z: the deadline, not the timeout, ends it.
    let (code, j, wall) = against_silent(&url, &["-z", "2s", "-c", "4"]);
    assert!(wall < Duration::from_secs(5), "ran {wall:?} for -z 2s");
    assert_eq!(code, Some(0), "cut requests are not errors: {j}");
    assert_eq!(j["interrupted_requests"], 4, "{j}");
    assert_eq!(j["requests"], 0, "{j}");
    assert_eq!(j["errors"].as_object().unwrap().len(), 0, "{j}");
    let d = j["duration_s"].as_f64().unwrap();
    assert!(
        (1.9..2.2).contains(&d),
        "rates are over -z, not the overrun: {d}"
    );
}

#[test]
fn z_deadline_cuts_a_tls_handshake_the_server_never_answers() {
    let _serial = exclusive();
    let (_l, port) = silent_listener();
    let url = format!("https://127.0.0.1:{port}/");
    // The connect timeout (10 s) is beyond -z; a handshake still pending is a connect timeout.
    let (code, j, wall) = against_silent(&url, &["-z", "2s", "-c", "2", "--insecure"]);
    assert!(wall < Duration::from_secs(5), "ran {wall:?} for -z 2s");
    assert_eq!(code, Some(3), "{j}");
    assert_eq!(j["errors"]["timeout"], 2, "{j}");
    assert_eq!(j["interrupted_requests"], 0, "{j}");
}

#[test]
fn z_deadline_holds_in_the_open_model() {
    let _serial = exclusive();
    let (_l, port) = silent_listener();
    let url = format!("http://127.0.0.1:{port}/");
    let args = ["-z", "2s", "-c", "2", "-q", "20", "--max-connections", "4"];
    let (code, j, wall) = against_silent(&url, &args);
    assert!(wall < Duration::from_secs(5), "ran {wall:?} for -z 2s");
    assert_eq!(code, Some(0), "{j}");
    // Each connection hangs on its first request (the pool grows only when a free connection
    // claims a late arrival); every other arrival due in the 2 s was dropped.
    let cut = j["interrupted_requests"].as_u64().unwrap();
    assert_eq!(cut, j["connections_opened"].as_u64().unwrap(), "{j}");
    assert!((2..=4).contains(&cut), "{j}");
    let dropped = j["open_model"]["dropped"].as_u64().unwrap();
    assert!((38..=41).contains(&(cut + dropped)), "40 due in all: {j}");
}

#[test]
fn z_deadline_holds_for_each_side_of_an_ab_run() {
    let _serial = exclusive();
    let t = target();
    let (_l, port) = silent_listener();
    let (a, b) = (format!("{}/", t.url()), format!("http://127.0.0.1:{port}/"));
    let start = std::time::Instant::now();
    let o = run(&[
        "http", &a, "--vs", &b, "--rounds", "1", "-z", "1s", "-c", "2",
    ]);
    assert!(
        start.elapsed() < Duration::from_secs(6),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    t.shutdown();
}

#[test]
fn z_deadline_keeps_a_healthy_servers_count_exact() {
    let _serial = exclusive();
    let t = target();
    let url = format!("{}/delay/5", t.url());
    let o = run(&["http", &url, "-z", "1s", "-c", "8", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["interrupted_requests"], 0, "the grace let them land: {j}");
    assert_eq!(j["requests"].as_u64().unwrap(), t.stats().requests);
    t.shutdown();
}

#[test]
fn mixed_statuses_are_distributed() {
    let _serial = exclusive();
    let t = target();
    let url = format!("{}/status/503", t.url());
    let o = run(&["http", &url, "-n", "30", "-c", "3", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "a status is a response, not a transport error"
    );
    let j = json(&o);
    assert_eq!(j["status"]["503"], 30);
    assert_eq!(j["success_rate"], 0.0);
    t.shutdown();
}

#[test]
fn post_body_from_flag_and_file_reach_the_server() {
    let _serial = exclusive();
    let t = target();
    let dir = scratch("body");
    let file = dir.join("payload.bin");
    std::fs::write(&file, vec![7u8; 3 * 1024 * 1024]).unwrap();
    let url = format!("{}/upload", t.url());
    let before = t.stats().bytes_received;
    let o = run(&[
        "http",
        &url,
        "-n",
        "4",
        "-c",
        "2",
        "-D",
        file.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["status"]["200"], 4);
    let sent = j["bytes_sent"].as_u64().unwrap();
    assert!(sent > 4 * 3 * 1024 * 1024, "body bytes counted: {sent}");
    assert_eq!(t.stats().bytes_received - before, sent);

    let o = run(&[
        "http",
        &format!("{}/echo", t.url()),
        "-n",
        "1",
        "-c",
        "1",
        "-d",
        "hello=1",
        "-H",
        "X-Test: yes",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(json(&o)["status"]["200"], 1);
    std::fs::remove_dir_all(dir).ok();
    t.shutdown();
}

#[test]
fn save_then_summary_reprints_from_the_file() {
    let _serial = exclusive();
    let t = target();
    let dir = scratch("save");
    let file = dir.join("run.json");
    let url = format!("{}/", t.url());
    let o = run(&[
        "http",
        &url,
        "-n",
        "500",
        "-c",
        "5",
        "--json",
        "--save",
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let live = json(&o);
    let again = run(&["summary", file.to_str().unwrap(), "--json"]);
    assert_eq!(again.status.code(), Some(0), "stderr: {}", stderr(&again));
    let replay = json(&again);
    for k in [
        "requests",
        "rps",
        "bytes_sent",
        "bytes_received",
        "latency_ms",
        "status",
        "success_rate",
    ] {
        assert_eq!(
            live[k], replay[k],
            "key {k} differs between the run and the file"
        );
    }
    let text = run(&["summary", file.to_str().unwrap()]);
    let out = stdout(&text);
    assert!(out.contains("500 in") && out.contains("[200] 500"), "{out}");
    let raw: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(raw["format"], "volley-result");
    assert_eq!(raw["version"], 2);
    assert!(raw["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["name"] == "http_req_duration"
            && m["hist"].as_str().unwrap().starts_with("HISTF")));
    std::fs::remove_dir_all(dir).ok();
    t.shutdown();
}

#[test]
fn sigint_stops_gracefully_and_still_writes_everything() {
    let _serial = exclusive();
    let t = target_with(None, Some(Duration::from_millis(5)));
    let dir = scratch("sigint");
    let file = dir.join("run.json");
    let url = format!("{}/", t.url());
    let child = volley()
        .args([
            "http",
            &url,
            "-z",
            "30s",
            "-c",
            "4",
            "--json",
            "--save",
            file.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let st = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let start = std::time::Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "graceful stop is quick"
    );
    assert_eq!(o.status.code(), Some(105), "stderr: {}", stderr(&o));
    // Quick mode runs on the VU scheduler, but has no k6 lifecycle to describe.
    assert!(
        stderr(&o).contains("stopping: waiting for in-flight requests"),
        "{}",
        stderr(&o)
    );
    let j = json(&o);
    assert_eq!(j["interrupted"], true);
    let n = j["requests"].as_u64().unwrap();
    assert!(n > 0);
    assert_eq!(
        t.stats().requests,
        n,
        "in-flight requests finished and were counted"
    );
    let saved = run(&["summary", file.to_str().unwrap(), "--json"]);
    assert_eq!(
        saved.status.code(),
        Some(0),
        "result file is valid: {}",
        stderr(&saved)
    );
    assert_eq!(json(&saved)["requests"], n);
    std::fs::remove_dir_all(dir).ok();
    t.shutdown();
}

#[test]
fn bad_input_gets_a_clear_error_not_a_panic() {
    let _serial = exclusive();
    let cases: &[(&[&str], &str)] = &[
        (&["http", "ftp://example.com/"], "scheme"),
        (&["http", "not a url"], ""),
        (&["http", "http://127.0.0.1:99999/"], "port"),
        (&["http", "http://127.0.0.1:1/", "-c", "0"], "connections"),
        (&["http", "http://127.0.0.1:1/", "-z", "ten"], "duration"),
        (
            &["http", "http://127.0.0.1:1/", "-H", "NoColon"],
            "Name: value",
        ),
        (
            &["http", "http://127.0.0.1:1/", "-D", "/nonexistent/file"],
            "/nonexistent/file",
        ),
        (
            &[
                "http",
                "http://127.0.0.1:1/",
                "--cacert",
                "/nonexistent/ca.pem",
            ],
            "ca.pem",
        ),
        (&["http", "http://127.0.0.1:1/", "--bogus"], "--bogus"),
        (&["summary", "/nonexistent/run.json"], "run.json"),
    ];
    for (args, needle) in cases {
        let o = run(args);
        let err = stderr(&o);
        assert_eq!(
            o.status.code(),
            Some(if args[0] == "summary" { 1 } else { 2 }),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: error should mention {needle:?}: {err}"
        );
    }
}

#[test]
fn summary_rejects_files_that_are_not_results() {
    let _serial = exclusive();
    let dir = scratch("notresult");
    let f = dir.join("x.json");
    std::fs::write(&f, "{\"hello\": 1}").unwrap();
    let o = run(&["summary", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("not a Volley result file"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn version_and_help() {
    let _serial = exclusive();
    let o = run(&["--version"]);
    assert!(stdout(&o).contains(env!("CARGO_PKG_VERSION")));
    let o = run(&["http", "--help"]);
    let h = stdout(&o);
    for f in [
        "--connections",
        "--duration",
        "--requests",
        "--json",
        "--save",
        "--cacert",
        "--insecure",
    ] {
        assert!(h.contains(f), "help lacks {f}");
    }
}

/// `docker stop` sends SIGTERM and kills 10 s later: requests a silent server never answers
/// get the short interrupt grace, not their 30 s timeout, and the result file is written.
#[test]
fn sigterm_cuts_requests_a_silent_server_never_answers_within_the_grace() {
    let _serial = exclusive();
    let (_l, port) = silent_listener();
    let dir = scratch("sigterm-silent");
    let file = dir.join("run.json");
    let url = format!("http://127.0.0.1:{port}/");
    let child = volley()
        .args(["http", &url, "-z", "60s", "-c", "4", "--json", "--save"])
        .arg(&file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let start = std::time::Instant::now();
    let st = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let o = child.wait_with_output().unwrap();
    let took = start.elapsed();
    // The grace is 2 s; before the fix this waited for the 30 s request timeout.
    assert!(took < Duration::from_secs(6), "SIGTERM took {took:?}");
    assert_eq!(o.status.code(), Some(105), "stderr: {}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["interrupted_requests"], 4, "{j}");
    assert!(file.exists(), "the result file is written");
}

/// `volley http` takes k6's threshold grammar (sub-metrics too) and writes k6's
/// `--summary-export` shape and JUnit from the run layer's shared code; today's drift checks
/// still work beside them.
#[test]
fn k6_thresholds_summary_export_and_junit_in_quick_mode() {
    let _serial = exclusive();
    let t = target();
    let dir = scratch("quick-k6");
    let (export, junit, save) = (
        dir.join("export.json"),
        dir.join("junit.xml"),
        dir.join("run.json"),
    );
    let url = format!("{}/", t.url());
    let o = run(&[
        "http",
        &url,
        "-n",
        "40",
        "-c",
        "2",
        "--quiet",
        "--threshold",
        "http_req_duration:p(95)<0.000001",
        "--threshold",
        "http_reqs{status:200}:count==40",
        "--threshold",
        "http_req_failed:rate<0.01",
        "--threshold",
        "http_reqs:count==40",
        "--summary-export",
        export.to_str().unwrap(),
        "--out",
        &format!("junit={}", junit.display()),
        "--save",
        save.to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(99), "{err}");
    assert!(err.contains("✗ http_req_duration p(95)<0.000001"), "{err}");
    assert!(
        err.contains("thresholds on metrics 'http_req_duration' have been crossed"),
        "{err}"
    );
    // k6's export: metrics by name, trend stats, counter count/rate, rate value/passes/fails,
    // each threshold's verdict as `true` when crossed (k6's "failed" flag).
    let e: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    let d = &e["metrics"]["http_req_duration"];
    for k in ["avg", "min", "med", "max", "p(90)", "p(95)"] {
        assert!(d[k].is_number(), "{k}: {d}");
    }
    assert_eq!(d["thresholds"]["p(95)<0.000001"], true, "{d}");
    assert_eq!(e["metrics"]["http_reqs"]["count"], 40.0);
    assert!(e["metrics"]["http_reqs"]["rate"].is_number());
    assert_eq!(e["metrics"]["http_reqs"]["thresholds"]["count==40"], false);
    let f = &e["metrics"]["http_req_failed"];
    assert_eq!(f["value"], 0.0, "{f}");
    assert_eq!(f["thresholds"]["rate<0.01"], false, "{f}");
    let sub = &e["metrics"]["http_reqs{status:200}"];
    assert_eq!(sub["count"], 40.0, "{sub}");
    assert_eq!(sub["thresholds"]["count==40"], false, "{sub}");
    assert_eq!(e["root_group"]["id"], "d41d8cd98f00b204e9800998ecf8427e");
    // The verdicts are in the result file, and JUnit names the crossed one.
    let r = volley_metrics::RunResult::read(&save).unwrap();
    assert_eq!(r.thresholds.len(), 4, "{:?}", r.thresholds);
    assert_eq!(r.thresholds.iter().filter(|t| !t.ok).count(), 1);
    let x = std::fs::read_to_string(&junit).unwrap();
    assert!(
        x.contains("<testsuite") && x.contains("failures=\"1\""),
        "{x}"
    );

    // Passing k6 thresholds and a drift check (today's form, judged per series): exit 0.
    let o = run(&[
        "http",
        &url,
        "-z",
        "3s",
        "-q",
        "20",
        "-c",
        "1",
        "--quiet",
        "--threshold",
        "http_req_failed:rate==0",
        "--threshold",
        "http_req_duration:drift(p95)<100000%",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // A metric quick mode does not record, or a tag it does not set, is a usage error.
    for bad in [
        "iterations:count>1",
        "http_req_duration{status:200}:avg<100",
        "http_req_duration:p(95)<",
    ] {
        let o = run(&["http", &url, "-n", "1", "--threshold", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("--threshold"), "{bad}: {}", stderr(&o));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn quick_mode_on_the_vu_scheduler_records_no_k6_iteration_metrics() {
    // Quick mode runs as VUs of the scheduler (one per connection); its result stays quick
    // mode's: no iterations, iteration_duration, vus or vus_max.
    let _serial = exclusive();
    let t = target();
    let dir = scratch("no_iterations");
    let file = dir.join("run.json");
    let url = format!("{}/", t.url());
    let o = run(&[
        "http",
        &url,
        "-n",
        "300",
        "-c",
        "3",
        "--quiet",
        "--save",
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&file).unwrap();
    for name in ["iterations", "iteration_duration", "vus", "vus_max"] {
        assert!(
            !text.contains(&format!("\"{name}\"")),
            "{name} in the result"
        );
    }
    assert!(text.contains("\"http_req_duration\""));
    assert_eq!(t.stats().requests, 300);
    std::fs::remove_dir_all(dir).ok();
    t.shutdown();
}
