//! `--dashboard [ADDR]` and `--dashboard-export FILE` on `volley run`: bind errors, and the
//! live page end to end in headless Chromium (skipped when it is not installed).

mod common;
use common::*;
use std::io::BufRead;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn script(dir: &Path, base: &str, duration: &str) -> String {
    let path = dir.join("load.js");
    std::fs::write(
        &path,
        format!(
            "import http from 'k6/http';\nimport {{ sleep }} from 'k6';\n\
             export const options = {{ vus: 2, duration: '{duration}',\n\
               thresholds: {{ http_req_duration: ['p(95)<5000'] }} }};\n\
             export default function () {{ http.get('{base}/'); sleep(0.02); }}\n"
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_dashboard_address_in_use_is_a_usage_error_before_the_run() {
    let dir = scratch("dashboard-bind");
    let (_held, port) = silent_listener();
    let s = script(&dir, "http://127.0.0.1:1", "1s");
    let addr = format!("--dashboard=127.0.0.1:{port}");
    let o = run(&["run", &s, &addr]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("cannot listen on 127.0.0.1:{port}")) && err.contains("port"),
        "{err}"
    );
    assert!(
        !err.contains("execution: local"),
        "the run did not start: {err}"
    );

    // Not an address: clap's usage error names the value.
    let o = run(&["run", &s, "--dashboard=dash.example:80"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("dash.example:80"), "{}", stderr(&o));
    // The export is the dashboard's.
    let o = run(&["run", &s, "--dashboard-export", "x.html"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--dashboard"), "{}", stderr(&o));
}

/// Loads the page in headless Chromium while the run goes on; the page follows the events
/// until the `end` event closes them, then Chromium prints the DOM.
fn chromium_dom(url: &str, dir: &Path) -> Option<String> {
    let bin = Path::new("/usr/bin/chromium");
    if !bin.exists() {
        println!("skipped: /usr/bin/chromium is not installed (apt-get install chromium)");
        return None;
    }
    let dom = dir.join("dom.html");
    let mut child = std::process::Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--virtual-time-budget=5000",
            "--dump-dom",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(url)
        .stdout(std::fs::File::create(&dom).unwrap())
        .stderr(std::fs::File::create(dir.join("chromium.log")).unwrap())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(90);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish in 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = std::fs::read_to_string(dir.join("chromium.log")).unwrap_or_default();
    for bad in ["Uncaught", "Content Security Policy", "Refused to"] {
        assert!(!log.contains(bad), "the page's console: {log}");
    }
    Some(std::fs::read_to_string(&dom).unwrap())
}

/// Follows `/events` over raw TCP (HTTP/1.0: no chunked framing) until a snapshot carries
/// points with requests; returns their sum (0 if none came within 20 s).
fn live_requests(port: u16) -> f64 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET /events HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut buf = String::new();
    let mut chunk = [0u8; 16384];
    while Instant::now() < deadline {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.push_str(&String::from_utf8_lossy(&chunk[..n])),
        }
        for data in buf.split("event: snapshot\ndata: ").skip(1) {
            let Some(line) = data.split('\n').next().filter(|_| data.contains('\n')) else {
                continue;
            };
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let reqs: f64 = v["points"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["reqs"].as_f64().unwrap())
                .sum();
            if reqs > 0.0 {
                return reqs;
            }
        }
    }
    0.0
}

/// The text of the element with `id` in a DOM dump.
fn text_of<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in {dom}"));
    let rest = &dom[at..];
    let start = rest.find('>').unwrap() + 1;
    let end = rest[start..].find('<').unwrap() + start;
    &rest[start..end]
}

#[test]
fn the_live_page_shows_the_run_in_headless_chromium() {
    let t = target();
    let dir = scratch("dashboard-live");
    // Long enough for Chromium to start on a busy machine before the run (and its server) ends:
    // under a loaded CI run Chromium took 10 s to load its first page (its D-Bus probes time
    // out), and a 10 s run had ended by then (ERR_CONNECTION_REFUSED, an empty DOM).
    let s = script(&dir, &t.url().to_string(), "30s");
    let port = closed_port();
    let export = dir.join("final.html");
    let mut child = volley()
        .args(["run", &s, "--dashboard", &format!("127.0.0.1:{port}")])
        .arg("--dashboard-export")
        .arg(&export)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its stderr, line by line, on a thread (the run must never block on a full pipe).
    let (tx, rx) = std::sync::mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let want = format!("dashboard: http://127.0.0.1:{port}/");
    let mut seen = Vec::new();
    while !seen.contains(&want) {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(l) => seen.push(l),
            Err(_) => panic!("no '{want}' on stderr: {seen:#?}"),
        }
    }
    // The events themselves (whether or not Chromium is installed): requests arrive live.
    let live = live_requests(port);
    assert!(live > 0.0, "no requests in the live snapshots");
    let dom = chromium_dom(&want["dashboard: ".len()..], &dir);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "volley run did not end");
        std::thread::sleep(Duration::from_millis(50));
    };
    seen.extend(rx.try_iter());
    assert_eq!(status.code(), Some(0), "{seen:#?}");
    let html = std::fs::read_to_string(&export).expect("--dashboard-export wrote the report");
    assert!(html.contains("<svg") && html.contains("http_req_duration"));

    let Some(dom) = dom else { return };
    assert_eq!(text_of(&dom, "status"), "finished", "the end event arrived");
    let reqs: f64 = text_of(&dom, "run-reqs").parse().unwrap_or(0.0);
    let rate: f64 = text_of(&dom, "run-rate").parse().unwrap_or(0.0);
    assert!(reqs > 10.0 && rate > 1.0, "requests {reqs}, rate {rate}");
    assert!(text_of(&dom, "run-p95").ends_with("ms") || text_of(&dom, "run-p95").ends_with("µs"));
    // The request-rate chart has points, drawn as a polyline.
    let chart = &dom[dom.find("id=\"chart-rate\"").expect("rate chart")..];
    let drawn: usize = chart
        .split("data-points=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        drawn >= 4 && chart.contains("<polyline"),
        "{drawn} points drawn"
    );
    assert!(
        dom.contains("http_req_duration: p(95)&lt;5000"),
        "threshold verdicts shown"
    );
}
