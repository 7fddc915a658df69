//! The dashboard against raw TCP clients, fed ticks from a real `Aggregator` (recorded through
//! a `Recorder`, snapshotted and merged as a run does).

use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use volley_dashboard::Dashboard;
use volley_engine::vus::Tick;
use volley_metrics::{
    names, Aggregator, MetricKey, MetricKind, Recorder, RunMeta, RunResult, Unit,
};
use volley_run::Observer;

fn start() -> Dashboard {
    Dashboard::start("127.0.0.1:0".parse().unwrap()).expect("dashboard starts")
}

/// One worker recording a second of load: `reqs` requests taking 1..=reqs ms, `failed` of
/// them failed, and the `vus` gauge.
struct Run {
    agg: Aggregator,
    rec: Recorder,
    second: u64,
}

impl Run {
    fn new() -> Run {
        Run {
            agg: Aggregator::new(1, volley_metrics::series::DEFAULT_MAX_POINTS),
            rec: Recorder::new(),
            second: 0,
        }
    }

    fn record(&mut self, reqs: u64, failed: u64, vus: f64, monitors: usize) {
        let r = &mut self.rec;
        let h_reqs = r.handle(
            MetricKey::new(names::HTTP_REQS),
            MetricKind::Counter,
            Unit::Default,
        );
        let h_dur = r.handle(
            MetricKey::tagged(names::HTTP_REQ_DURATION, &[("status", "200")]),
            MetricKind::Trend,
            Unit::Time,
        );
        let h_fail = r.handle(
            MetricKey::new(names::HTTP_REQ_FAILED),
            MetricKind::Rate,
            Unit::Default,
        );
        let h_vus = r.handle(MetricKey::new(names::VUS), MetricKind::Gauge, Unit::Default);
        let h_recv = r.handle(
            MetricKey::new(names::DATA_RECEIVED),
            MetricKind::Counter,
            Unit::Data,
        );
        for i in 1..=reqs {
            r.add(h_reqs, 1.0);
            r.add(h_dur, i as f64);
            r.add(h_fail, if i <= failed { 1.0 } else { 0.0 });
            r.add(h_recv, 100.0);
        }
        r.add(h_vus, vus);
        for m in 0..monitors {
            let target = format!("a-target-with-a-long-name-for-a-big-history-{m}");
            let h = r.handle(
                MetricKey::tagged("monitor_rss_bytes", &[("target", &target)]),
                MetricKind::Gauge,
                Unit::Data,
            );
            r.add(h, 1e9 + m as f64);
        }
        self.agg.add(0, self.second, r.snapshot());
        self.second += 1;
    }

    fn tick(&self, d: &mut Dashboard, vus: u64) {
        d.tick(&Tick {
            agg: &self.agg,
            elapsed: Duration::from_secs(self.second),
            scenarios: &[],
            vus,
            vus_max: 10,
        });
    }

    fn finish(self) -> RunResult {
        let (metrics, series) = self.agg.finish();
        let meta = RunMeta::new("http", "http://127.0.0.1/", vec!["volley".into()]);
        let mut r = RunResult::new(meta, Value::Null, metrics, series);
        r.thresholds.push(volley_metrics::ThresholdResult {
            metric: "http_req_duration".into(),
            expression: "p(95)<50".into(),
            ok: false,
            observed: Some(95.05),
            aborted: false,
        });
        r
    }
}

/// A client of `/events` over HTTP/1.0 (no chunked framing: the body is the event stream).
struct Events {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Events {
    fn connect(addr: SocketAddr) -> Events {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(s, "GET /events HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let mut e = Events { s, buf: Vec::new() };
        let head = e.block(b"\r\n\r\n").expect("response head");
        assert!(head.starts_with("HTTP/1.0 200"), "{head}");
        assert!(head.contains("text/event-stream"), "{head}");
        e
    }

    /// Bytes up to `sep`, reading as needed; None at the end of the stream.
    fn block(&mut self, sep: &[u8]) -> Option<String> {
        loop {
            if let Some(i) = self.buf.windows(sep.len()).position(|w| w == sep) {
                let b: Vec<u8> = self.buf.drain(..i + sep.len()).collect();
                return Some(String::from_utf8(b).unwrap());
            }
            let mut chunk = [0u8; 65536];
            match self.s.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => panic!("reading events: {e}"),
            }
        }
    }

    /// The next event with a name: (name, data as JSON).
    fn next(&mut self) -> Option<(String, Value)> {
        loop {
            let block = self.block(b"\n\n")?;
            let name = block.lines().find_map(|l| l.strip_prefix("event: "));
            let data = block.lines().find_map(|l| l.strip_prefix("data: "));
            if let (Some(n), Some(d)) = (name, data) {
                return Some((n.to_string(), serde_json::from_str(d).unwrap()));
            }
        }
    }

    fn expect(&mut self, name: &str) -> Value {
        let (n, v) = self
            .next()
            .unwrap_or_else(|| panic!("stream ended before '{name}'"));
        assert_eq!(n, name, "{v}");
        v
    }
}

fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head[9..12].parse().unwrap(), body.to_string())
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn each_tick_sends_the_seconds_figures_as_recorded() {
    let mut d = start();
    let mut ev = Events::connect(d.addr());
    assert!(ev.expect("hello")["command"].is_string());
    let mut run = Run::new();
    run.record(100, 5, 7.0, 1);
    run.tick(&mut d, 7);
    let s = ev.expect("snapshot");
    assert_eq!(s["vus"], 7);
    assert_eq!(s["vus_max"], 10);
    assert_eq!(s["elapsed"], 1.0);
    let p = &s["points"][0];
    assert_eq!(
        (p["t"].as_u64(), p["w"].as_u64()),
        (Some(0), Some(1)),
        "{s}"
    );
    assert_eq!(p["reqs"], 100.0);
    assert_eq!(
        (p["fail_t"].as_u64(), p["fail_n"].as_u64()),
        (Some(5), Some(100))
    );
    assert_eq!(p["recv"], 10_000.0);
    assert_eq!(p["vus"], 7.0);
    assert_eq!(p["lat_n"], 100);
    // k6's percentiles of 1, 2, ..., 100 ms.
    let lat: Vec<f64> = serde_json::from_value(p["lat"].clone()).unwrap();
    for (got, want) in lat.iter().zip([50.5, 90.1, 95.05, 99.01, 100.0]) {
        assert!(close(*got, want), "{lat:?}");
    }
    assert_eq!(
        p["mon"]["monitor_rss_bytes{target=a-target-with-a-long-name-for-a-big-history-0}"],
        1e9
    );
    assert_eq!(s["total"]["reqs"], 100.0);
    let lat: Vec<f64> = serde_json::from_value(s["total"]["lat"].clone()).unwrap();
    for (got, want) in lat.iter().zip([50.5, 90.1, 95.05, 99.01, 100.0, 50.5]) {
        assert!(close(*got, want), "run-wide {lat:?}");
    }

    // The second second: only its own point; totals over both.
    run.record(10, 0, 3.0, 0);
    run.tick(&mut d, 3);
    let s = ev.expect("snapshot");
    let pts = s["points"].as_array().unwrap();
    assert_eq!(pts.len(), 1, "{s}");
    assert_eq!(
        (pts[0]["t"].as_u64(), pts[0]["reqs"].as_f64()),
        (Some(1), Some(10.0))
    );
    assert_eq!(s["total"]["reqs"], 110.0);
    assert_eq!(s["total"]["fail_t"], 5);
    assert_eq!(d.clients(), 1);

    // The end: the final totals, run-wide latency over both seconds (always recomputed).
    d.finish(&run.finish());
    let s = ev.expect("snapshot");
    assert_eq!(s["total"]["lat_n"], 110);
    let lat: Vec<f64> = serde_json::from_value(s["total"]["lat"].clone()).unwrap();
    assert!(
        close(lat[4], 100.0) && lat[0] > 40.0 && lat[0] < 50.0,
        "{lat:?}"
    );
    ev.expect("end");
}

#[test]
fn a_late_client_gets_the_history_then_the_end() {
    let mut d = start();
    let mut run = Run::new();
    for s in 0..3 {
        run.record(10 * (s + 1), 0, 1.0, 0);
        run.tick(&mut d, 1);
    }
    let mut ev = Events::connect(d.addr());
    ev.expect("hello");
    let s = ev.expect("snapshot");
    let reqs: Vec<f64> = s["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["reqs"].as_f64().unwrap())
        .collect();
    assert_eq!(reqs, [10.0, 20.0, 30.0]);
    assert_eq!(s["total"]["reqs"], 60.0);

    // /report is there once the run is over, and the stream ends with `end`.
    let (status, body) = get(d.addr(), "/report");
    assert_eq!(status, 404, "{body}");
    let result = run.finish();
    d.finish(&result);
    ev.expect("snapshot");
    let end = ev.expect("end");
    assert_eq!(end["mode"], "http");
    assert_eq!(end["thresholds"][0]["ok"], false);
    assert_eq!(end["thresholds"][0]["expression"], "p(95)<50");
    assert!(ev.next().is_none(), "the stream ends after `end`");
    let (status, body) = get(d.addr(), "/report");
    assert_eq!(status, 200);
    assert!(
        body.contains("<svg") && body.contains("http://127.0.0.1/"),
        "{body:.300}"
    );

    // A client after the end gets it all at once and the stream closes.
    let mut ev = Events::connect(d.addr());
    ev.expect("hello");
    let s = ev.expect("snapshot");
    assert_eq!(s["points"].as_array().unwrap().len(), 3);
    ev.expect("end");
    assert!(ev.next().is_none());

    let dir = volley_testkit::scratch("volley-dashboard", "t");
    let file = dir.join("final.html");
    volley_dashboard::export(&result, &file).unwrap();
    let html = std::fs::read_to_string(&file).unwrap();
    assert!(html.contains("<svg"));
    let e = volley_dashboard::export(&result, &dir.join("no/such/dir.html")).unwrap_err();
    assert!(e.contains("no/such/dir.html"), "{e}");
}

#[test]
fn the_page_and_its_assets_are_built_in() {
    let d = start();
    let (status, page) = get(d.addr(), "/");
    assert_eq!(status, 200);
    assert!(page.contains("/app.js") && page.contains("/app.css"));
    for forbidden in ["https://", "http://", "@import"] {
        assert!(!page.contains(forbidden), "{forbidden} in the page");
    }
    let (status, js) = get(d.addr(), "/app.js");
    assert_eq!(status, 200);
    assert!(js.contains("EventSource(\"/events\")"));
    assert!(!js.contains("innerHTML"), "run data is set as text only");
    assert_eq!(get(d.addr(), "/app.css").0, 200);
    assert_eq!(get(d.addr(), "/nope").0, 404);

    // A page elsewhere that rebinds its host name to 127.0.0.1 is refused.
    let mut s = TcpStream::connect(d.addr()).unwrap();
    write!(s, "GET / HTTP/1.0\r\nHost: evil.example:5665\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.0 403"), "{out:.100}");
}

#[test]
fn a_browser_that_never_reads_never_slows_the_run() {
    let mut d = start();
    let mut run = Run::new();
    // A big history (a few MB of catch-up) so the silent client's socket fills up.
    for _ in 0..800 {
        run.record(2, 0, 1.0, 60);
        run.tick(&mut d, 1);
    }
    let mut silent = TcpStream::connect(d.addr()).unwrap();
    write!(silent, "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while d.clients() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(d.clients(), 1, "the silent client is connected");
    let t = Instant::now();
    for _ in 0..100 {
        run.record(2, 0, 1.0, 60);
        run.tick(&mut d, 1);
    }
    // Generous: this is about never waiting on the client, not about speed.
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    assert_eq!(d.clients(), 0, "the client fell behind and was dropped");
    drop(silent);
}
