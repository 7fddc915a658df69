//! `volley run --out`: CSV (one row per sample, k6's columns), JUnit (valid XML, a test case
//! per threshold and check), InfluxDB line protocol and Prometheus remote write received by
//! loopback servers started here, and a real Prometheus where Debian's package is installed.

mod common;

use common::{closed_port, recorder, scratch, stderr, target};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use volley_metrics::{RunResult, TotalValue};

const SCRIPT: &str = r#"
import http from "k6/http";
import { check, group, sleep } from "k6";

export const options = {
  thresholds: {
    http_req_duration: ["p(95)<10000"],
    checks: ["rate>0.99"],
    "http_reqs{status:200}": ["count>0"],
  },
};

export default function () {
  const r = http.get(`${__ENV.BASE}/?q=a,b`);
  check(r, { "status is 200": (r) => r.status === 200, "always <fails>": () => false });
  group("g", () => {
    check(r, { "in group": () => true });
  });
  sleep(__ENV.SLEEP ? Number(__ENV.SLEEP) : 0);
}
"#;

fn script(dir: &Path) -> PathBuf {
    let p = dir.join("out.js");
    std::fs::write(&p, SCRIPT).unwrap();
    p
}

fn run_script(dir: &Path, extra: &[&str]) -> (std::process::Output, RunResult) {
    let t = target();
    let save = dir.join("run.json");
    let o = common::volley()
        .arg("run")
        .arg(script(dir))
        .args(["-e", &format!("BASE=http://{}", t.local_addr()), "-q"])
        .args(["--save", save.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    // The checks threshold is crossed on purpose.
    assert_eq!(o.status.code(), Some(99), "{}", stderr(&o));
    let r = RunResult::read(&save).unwrap();
    (o, r)
}

/// RFC 4180 fields of one line (quoted fields may hold commas and doubled quotes).
fn csv_fields(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut q) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, q) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            ('"', _) => q = !q,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

#[test]
fn csv_has_k6_columns_and_a_row_per_sample() {
    let dir = scratch("out-csv");
    let csv = dir.join("points.csv");
    let (_, r) = run_script(
        &dir,
        &[
            "-u",
            "2",
            "-i",
            "10",
            "-o",
            &format!("csv={}", csv.display()),
        ],
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert_eq!(
        header,
        "metric_name,timestamp,metric_value,check,error,error_code,expected_response,group,\
         method,name,proto,scenario,service,status,subproto,tls_version,url,extra_tags,metadata"
    );
    let cols: Vec<String> = csv_fields(header);
    let mut rows: BTreeMap<String, u64> = BTreeMap::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for l in lines {
        let f = csv_fields(l);
        assert_eq!(f.len(), cols.len(), "{l}");
        let ts: u64 = f[1].parse().unwrap();
        assert!(ts <= now && ts + 600 > now, "{l}");
        f[2].parse::<f64>().unwrap();
        *rows.entry(f[0].clone()).or_default() += 1;
        if f[0] == "http_reqs" {
            assert_eq!(f[13], "200", "status column: {l}");
            assert_eq!(f[8], "GET", "method column: {l}");
            assert!(f[16].ends_with("/?q=a,b"), "url column: {l}");
        }
        if f[0] == "checks" && f[3] == "in group" {
            assert_eq!(f[7], "::g", "group column: {l}");
        }
    }
    // Every sample is one row: counters' additions, rates' and trends' counts.
    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    for m in &r.metrics {
        let n = match &m.value {
            TotalValue::Counter { n, .. } => *n,
            TotalValue::Rate { total, .. } => *total,
            TotalValue::Trend { count, .. } => *count,
            TotalValue::Gauge { .. } => continue, // vus: once a second from the coordinator
        };
        *expected.entry(m.name.clone()).or_default() += n;
    }
    rows.retain(|k, _| !k.starts_with("vus"));
    assert_eq!(rows, expected);
    assert_eq!(rows["http_reqs"], 10);
    assert_eq!(rows["checks"], 30);
}

/// A small strict XML well-formedness check: balanced tags, quoted attributes, known
/// entities. Returns (element name, attributes) in document order.
fn xml_elements(doc: &str) -> Vec<(String, BTreeMap<String, String>)> {
    let body = doc
        .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        .expect("XML declaration");
    let mut stack: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let mut rest = body;
    let check_text = |t: &str| {
        let mut s = t;
        while let Some(i) = s.find('&') {
            let e = &s[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
                    .iter()
                    .any(|x| e.starts_with(x)),
                "bad entity in {t:?}"
            );
            s = &s[i + 1..];
        }
        assert!(!t.contains('>') && !t.contains('<'), "raw markup in {t:?}");
    };
    while let Some(i) = rest.find('<') {
        check_text(&rest[..i]);
        let end = rest[i..].find('>').expect("unclosed tag") + i;
        let tag = &rest[i + 1..end];
        rest = &rest[end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "mismatched </{name}>");
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let (name, mut attrs_s) = tag.split_once(' ').unwrap_or((tag, ""));
        assert!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric()),
            "{name}"
        );
        let mut attrs = BTreeMap::new();
        loop {
            attrs_s = attrs_s.trim_start();
            if attrs_s.is_empty() {
                break;
            }
            let (k, v) = attrs_s.split_once("=\"").expect("attribute k=\"v\"");
            let close = v.find('"').expect("closing quote");
            check_text(&v[..close]);
            assert!(attrs
                .insert(k.to_string(), v[..close].to_string())
                .is_none());
            attrs_s = &v[close + 1..];
        }
        out.push((name.to_string(), attrs));
        if !self_closing {
            stack.push(name.to_string());
        }
    }
    assert!(rest.trim().is_empty());
    assert!(stack.is_empty(), "unclosed {stack:?}");
    out
}

#[test]
fn junit_is_valid_xml_with_a_case_per_threshold_and_check() {
    let dir = scratch("out-junit");
    let xml = dir.join("junit.xml");
    run_script(
        &dir,
        &[
            "-u",
            "1",
            "-i",
            "4",
            "-o",
            &format!("junit={}", xml.display()),
        ],
    );
    let doc = std::fs::read_to_string(&xml).unwrap();
    let els = xml_elements(&doc);
    let cases: Vec<&BTreeMap<String, String>> = els
        .iter()
        .filter(|(n, _)| n == "testcase")
        .map(|(_, a)| a)
        .collect();
    assert_eq!(cases.len(), 6, "3 thresholds + 3 checks:\n{doc}");
    let failures = els.iter().filter(|(n, _)| n == "failure").count();
    assert_eq!(failures, 2, "checks rate>0.99 and 'always <fails>':\n{doc}");
    assert_eq!(els[0].0, "testsuites");
    assert_eq!(els[0].1["tests"], "6");
    assert_eq!(els[0].1["failures"], "2");
    assert!(doc.contains("name=\"always &lt;fails&gt;\""), "{doc}");
    assert!(doc.contains("name=\"::g::in group\""), "{doc}");
    assert!(doc.contains("4 of 4 failed"), "{doc}");
}

#[test]
fn influxdb_line_protocol_reaches_the_write_endpoint() {
    let dir = scratch("out-influx");
    let (port, got) = recorder(Duration::from_secs(60));
    let (_, r) = run_script(
        &dir,
        &[
            "-u",
            "1",
            "-d",
            "2500ms",
            "-e",
            "SLEEP=0.05",
            "-o",
            &format!("influxdb=http://127.0.0.1:{port}/volley db"),
        ],
    );
    let reqs = got.lock().unwrap().clone();
    assert!(reqs.len() >= 2, "one batch a second, got {}", reqs.len());
    let (mut http_reqs, mut lines) = (0.0, 0);
    for (line, headers, body) in &reqs {
        assert_eq!(line, "POST /write?db=volley%20db HTTP/1.1");
        assert!(headers.contains("content-type: text/plain"), "{headers}");
        for l in String::from_utf8(body.clone()).unwrap().lines() {
            let (m, tags, fields, ts) =
                volley_run::outputs::influx::parse::line(l).unwrap_or_else(|e| panic!("{e}"));
            lines += 1;
            assert!(ts > 1_600_000_000_000_000_000, "ns timestamps: {l}");
            if m == "http_reqs" {
                assert_eq!(tags.get("status").map(String::as_str), Some("200"), "{l}");
                let url = tags.get("url").unwrap();
                assert!(url.ends_with("/?q=a,b"), "escaped comma round-trips: {l}");
                match fields.get("value") {
                    Some(volley_run::outputs::influx::parse::Field::Float(v)) => http_reqs += v,
                    f => panic!("{f:?} in {l}"),
                }
            }
            if m == "http_req_duration" {
                assert!(
                    fields.contains_key("p95") && fields.contains_key("count"),
                    "{l}"
                );
            }
        }
    }
    assert!(lines > 0);
    // Every second is sent once: the sums add up to the run's total.
    assert_eq!(http_reqs, r.counter_sum("http_reqs"));
}

fn prom_series(body: &[u8]) -> Vec<volley_run::outputs::prom::TimeSeries> {
    volley_run::outputs::prom::decode::write_request(body).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn prometheus_remote_write_decodes_to_the_run() {
    let dir = scratch("out-prom");
    let (port, got) = recorder(Duration::from_secs(60));
    let (_, r) = run_script(
        &dir,
        &[
            "-u",
            "1",
            "-d",
            "2500ms",
            "-e",
            "SLEEP=0.05",
            "-o",
            &format!("prometheus=http://127.0.0.1:{port}/api/v1/write"),
        ],
    );
    let reqs = got.lock().unwrap().clone();
    assert!(reqs.len() >= 2, "one request a second, got {}", reqs.len());
    let mut last_total = 0.0;
    let mut last_ts = 0;
    let mut p95 = false;
    for (line, headers, body) in &reqs {
        assert_eq!(line, "POST /api/v1/write HTTP/1.1");
        assert!(headers.contains("content-encoding: snappy"), "{headers}");
        assert!(headers.contains("content-type: application/x-protobuf"));
        assert!(headers.contains("x-prometheus-remote-write-version: 0.1.0"));
        for s in prom_series(body) {
            let mut names: Vec<&String> = s.labels.iter().map(|(k, _)| k).collect();
            let sorted = {
                let mut n = names.clone();
                n.sort();
                n
            };
            assert_eq!(names, sorted, "labels sorted");
            names.dedup();
            assert_eq!(names.len(), s.labels.len());
            let name = &s.labels.iter().find(|(k, _)| k == "__name__").unwrap().1;
            if name == "volley_http_reqs_total" {
                for (v, ts) in &s.samples {
                    assert!(*v >= last_total, "monotonic");
                    assert!(*ts > last_ts);
                    last_total = *v;
                    last_ts = *ts;
                }
            }
            if name == "volley_http_req_duration"
                && s.labels.contains(&("stat".into(), "p95".into()))
            {
                p95 = true;
            }
        }
    }
    assert!(p95, "trends carry stat=\"p95\"");
    assert_eq!(last_total, r.counter_sum("http_reqs"));
}

/// GET `path` on 127.0.0.1:`port`; the body, or None.
fn get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.starts_with("HTTP/1.1 200")
        .then(|| out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()))?
}

/// A Prometheus child process, killed when dropped.
struct Prom(std::process::Child);

impl Drop for Prom {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn prometheus_server_receives_volley_series() {
    let bin = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
    let Some(bin) = bin else {
        println!("SKIP: no prometheus binary (Debian's prometheus package)");
        return;
    };
    let dir = scratch("out-prom-real");
    let cfg = dir.join("prometheus.yml");
    std::fs::write(&cfg, "global:\n  scrape_interval: 1m\n").unwrap();
    let port = closed_port();
    let child = std::process::Command::new(bin)
        .arg(format!("--config.file={}", cfg.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--web.enable-remote-write-receiver")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.join("prom.log")).unwrap())
        .spawn();
    let Ok(child) = child else {
        println!("SKIP: prometheus did not start");
        return;
    };
    let _prom = Prom(child);
    let ready_by = Instant::now() + Duration::from_secs(30);
    while get(port, "/-/ready").is_none() {
        if Instant::now() > ready_by {
            println!(
                "SKIP: prometheus not ready: {}",
                std::fs::read_to_string(dir.join("prom.log")).unwrap_or_default()
            );
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let (o, r) = run_script(
        &dir,
        &[
            "-u",
            "1",
            "-d",
            "2s",
            "-e",
            "SLEEP=0.05",
            "-o",
            &format!("prometheus=http://127.0.0.1:{port}/api/v1/write"),
        ],
    );
    assert!(!stderr(&o).contains("--out prometheus"), "{}", stderr(&o));
    let q = "/api/v1/query?query=sum(volley_http_reqs_total)";
    let body = get(port, q).expect("query answers");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], "success", "{body}");
    let result = &v["data"]["result"];
    assert_eq!(result.as_array().map(Vec::len), Some(1), "{body}");
    let total: f64 = result[0]["value"][1].as_str().unwrap().parse().unwrap();
    assert_eq!(total, r.counter_sum("http_reqs"), "{body}");
    let q = "/api/v1/query?query=volley_http_req_duration%7Bstat%3D%22p95%22%7D";
    let body = get(port, q).expect("query answers");
    assert!(body.contains("\"stat\":\"p95\""), "{body}");
}
