//! k6/html: `tests/k6/html.js` (parseHTML on a literal document) and `tests/k6/html_forms.js`
//! (`res.html()`, `submitForm`, `clickLink`) against a small HTML server on 127.0.0.1 that
//! records every request it answers, since the built-in target serves no HTML.

mod common;
use common::*;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use volley_metrics::{RunResult, TotalValue};

const LOGIN_PAGE: &str = r#"<!DOCTYPE html>
<html><head><title>Login</title></head><body>
<h1>Log in</h1>
<form class="search" action="search?old=1">
  <input type="hidden" name="lang" value="en"><input name="q">
</form>
<form id="login" method="post" action="session?from=form">
  <input type="hidden" name="csrf_token" value="t0k">
  <input type="text" name="user" value="ann">
  <input type="checkbox" name="remember" checked>
  <input type="submit" name="go" value="Sign in">
</form>
<a href="/home">Home</a> <a class="next" href="../next/page?n=2">Next</a>
</body></html>"#;

/// What the server received: (method, request target, body).
type Seen = Arc<Mutex<Vec<(String, String, String)>>>;

/// Serves `LOGIN_PAGE` at `/app/login` and echoes every other request as JSON
/// (`method`, `target`, `body`, `content_type`, `x_test`). Keep-alive, one thread per
/// connection, at most 100 connections.
fn html_server() -> (String, Seen) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let s = seen.clone();
    std::thread::spawn(move || {
        for conn in l.incoming().take(100) {
            let Ok(conn) = conn else { continue };
            let s = s.clone();
            std::thread::spawn(move || serve(conn, s));
        }
    });
    (format!("http://{addr}"), seen)
}

fn serve(conn: TcpStream, seen: Seen) {
    let mut w = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    for _ in 0..1000 {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, target) = (
            parts.next().unwrap_or("").to_string(),
            parts.next().unwrap_or("").to_string(),
        );
        let mut headers = BTreeMap::new();
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
        let len: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let body = String::from_utf8_lossy(&body).into_owned();
        seen.lock()
            .unwrap()
            .push((method.clone(), target.clone(), body.clone()));
        let (ctype, out) = if target == "/app/login" {
            ("text/html; charset=utf-8", LOGIN_PAGE.to_string())
        } else {
            let j = serde_json::json!({
                "method": method,
                "target": target,
                "body": body,
                "content_type": headers.get("content-type"),
                "x_test": headers.get("x-test"),
            });
            ("application/json", j.to_string())
        };
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\r\n",
            out.len()
        );
        if w.write_all(head.as_bytes()).is_err() || w.write_all(out.as_bytes()).is_err() {
            return;
        }
    }
}

fn run(name: &str, base: &str) -> volley_js::RunOutput {
    let mut env = BTreeMap::new();
    env.insert("BASE".to_string(), base.to_string());
    volley_js::run(
        &script(name),
        env,
        &volley_js::CliOptions::default(),
        1,
        vec![],
        &volley_engine::RunControl::new(),
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Every check by name: (passes, total).
fn checks(r: &RunResult) -> BTreeMap<String, (u64, u64)> {
    let mut out = BTreeMap::new();
    for m in r.metrics_named("checks") {
        let name = m.tags.get("check").cloned().unwrap_or_default();
        if let TotalValue::Rate { trues, total } = m.value {
            let e = out.entry(name).or_insert((0, 0));
            e.0 += trues;
            e.1 += total;
        }
    }
    out
}

fn assert_all_pass(r: &RunResult, expected_names: usize, times: u64) {
    let c = checks(r);
    let failed: Vec<_> = c.iter().filter(|(_, (t, n))| t != n).collect();
    assert!(failed.is_empty(), "failed checks: {failed:?}");
    assert_eq!(c.len(), expected_names, "{:?}", c.keys());
    for (name, (_, n)) in &c {
        assert_eq!(*n, times, "{name}");
    }
}

#[test]
fn parse_html_selections_traversal_forms_and_elements_match_k6() {
    // No network: BASE is unused.
    let out = run("html.js", "http://127.0.0.1:9");
    let r = &out.result;
    assert_all_pass(r, 23, 2);
    assert_eq!(counter(r, "iterations", &[]), 3.0);
    assert_eq!(
        counter(r, "iteration_errors", &[]),
        1.0,
        "an invalid selector fails the iteration"
    );
}

#[test]
fn submit_form_and_click_link_build_k6s_requests() {
    let (base, seen) = html_server();
    let out = run("html_forms.js", &base);
    let r = &out.result;
    assert_all_pass(r, 8, 2);
    assert_eq!(counter(r, "iteration_errors", &[]), 0.0);
    let seen = seen.lock().unwrap();
    // Per iteration: page, POST form, GET form, two links.
    assert_eq!(seen.len(), 10, "{seen:?}");
    let post = &seen[1];
    assert_eq!(post.0, "POST");
    assert_eq!(post.1, "/app/session?from=form");
    assert_eq!(
        post.2,
        "csrf_token=t0k&extra=1&go=Sign+in&remember=on&user=bob+smith"
    );
    assert_eq!(
        (seen[2].0.as_str(), seen[2].1.as_str()),
        ("GET", "/app/search?lang=en&q=a%26b")
    );
    assert_eq!(seen[3].1, "/next/page?n=2");
    assert_eq!(seen[4].1, "/home");
    // The POST carries the tag given in params.
    assert_eq!(counter(r, "http_reqs", &[("name", "login")]), 2.0);
}
