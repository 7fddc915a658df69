//! Pipelining and the open model, end to end against loopback servers.

mod common;
use common::*;
use std::io::{Read, Write};
use std::time::Duration;

/// A server that answers only once it holds `DEPTH` complete requests on a connection: if the
/// client did not really keep DEPTH requests in flight, nothing would ever be answered.
const DEPTH: usize = 8;

fn batch_server(mut s: std::net::TcpStream) {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = Vec::new();
    let mut b = [0u8; 4096];
    for _ in 0..100 {
        while buf.windows(4).filter(|w| *w == b"\r\n\r\n").count() < DEPTH {
            match s.read(&mut b) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&b[..n]),
            }
        }
        // Consume exactly DEPTH request heads (GET, no bodies).
        let mut cut = 0;
        for _ in 0..DEPTH {
            let at = buf[cut..]
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .unwrap();
            cut += at + 4;
        }
        buf.drain(..cut);
        if !answer(&mut s, DEPTH) {
            return;
        }
    }
}

/// Answer `n` pipelined requests with one write of `n` small 200s.
fn answer(s: &mut std::net::TcpStream, n: usize) -> bool {
    let one = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let all: Vec<u8> = one.iter().copied().cycle().take(one.len() * n).collect();
    s.write_all(&all).is_ok()
}

#[test]
fn pipelining_keeps_depth_requests_in_flight() {
    let _serial = exclusive();
    let port = raw_server(2, Duration::from_secs(20), batch_server);
    let url = format!("http://127.0.0.1:{port}/");
    let o = run(&[
        "http",
        &url,
        "-p",
        "8",
        "-c",
        "1",
        "-n",
        "64",
        "--timeout",
        "3s",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["status"]["200"], 64, "{j}");
    assert_eq!(j["connections_opened"], 1);
}

#[test]
fn pipelined_counts_stay_exact_against_the_target() {
    let _serial = exclusive();
    let t = target();
    let url = format!("{}/", t.url());
    let o = run(&["http", &url, "-p", "16", "-c", "4", "-n", "10001", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["requests"], 10001);
    assert_eq!(t.stats().requests, 10001);
    assert_eq!(j["bytes_received"].as_u64().unwrap(), t.stats().bytes_sent);
    assert_eq!(j["bytes_sent"].as_u64().unwrap(), t.stats().bytes_received);
    t.shutdown();
}

#[test]
fn open_model_reports_corrected_latency_and_missed_starts() {
    let _serial = exclusive();
    let t = target();
    // 2 connections × 50 ms = at most ~40 req/s, asked for 100 req/s.
    let url = format!("{}/delay/50", t.url());
    let o = run(&[
        "http",
        &url,
        "-q",
        "100",
        "-c",
        "2",
        "--max-connections",
        "2",
        "-z",
        "2s",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    let corrected = j["latency_ms"]["p99"].as_f64().unwrap();
    let service = j["service_latency_ms"]["p99"].as_f64().unwrap();
    // The target delays 50 ms; no upper bound (a loaded machine stretches it), the ratio
    // below is what shows the queueing.
    assert!(
        service >= 49.0,
        "service time includes the 50 ms delay: {service}"
    );
    assert!(
        corrected > service * 3.0,
        "queueing shows in the corrected p99: {corrected} vs {service}"
    );
    let om = &j["open_model"];
    assert_eq!(om["target_rps"], 100.0);
    assert!(om["missed_starts"].as_u64().unwrap() > 10, "{om}");
    // Everything due was either sent, counted as dropped, or cut at the deadline.
    let due = 200;
    let sent = j["requests"].as_u64().unwrap();
    let cut = j["interrupted_requests"].as_u64().unwrap();
    assert_eq!(sent + cut + om["dropped"].as_u64().unwrap(), due, "{j}");
    assert_eq!(t.stats().requests, sent);
    t.shutdown();
}

#[test]
fn open_model_grows_connections_when_all_are_busy() {
    let _serial = exclusive();
    let t = target();
    let url = format!("{}/delay/50", t.url());
    let o = run(&[
        "http",
        &url,
        "-q",
        "100",
        "-c",
        "1",
        "--max-connections",
        "20",
        "-z",
        "2s",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    let opened = j["connections_opened"].as_u64().unwrap();
    assert!(
        opened > 1 && opened <= 20,
        "pool grew within bounds: {opened}"
    );
    let sent = j["requests"].as_u64().unwrap();
    assert!(
        sent >= 190,
        "with enough connections the rate is met: {sent}"
    );
    t.shutdown();
}

#[test]
fn open_model_hits_an_easy_rate_within_one_percent() {
    let _serial = exclusive();
    let t = target();
    let url = format!("{}/", t.url());
    let o = run(&["http", &url, "-q", "500", "-c", "10", "-z", "10s", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    let sent = j["requests"].as_u64().unwrap();
    // Assert on counts, not on the test's own wall clock: 10 s at 500/s is 5000 requests due.
    assert!(
        (4950..=5000).contains(&sent),
        "sent {sent}, expected 5000 ± 1%"
    );
    assert_eq!(sent + j["open_model"]["dropped"].as_u64().unwrap(), 5000);
    assert_eq!(t.stats().requests, sent);
    t.shutdown();
}

#[test]
fn rate_stages_deliver_their_integral() {
    let _serial = exclusive();
    let t = target();
    let url = format!("{}/", t.url());
    // Ramp 0→200/s over 1 s (100 requests), then 200/s for 1 s (200 requests).
    let o = run(&[
        "http",
        &url,
        "--rate-stages",
        "200:1s,200:1s",
        "-c",
        "5",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(
        j["requests"].as_u64().unwrap() + j["open_model"]["dropped"].as_u64().unwrap(),
        300,
        "{j}"
    );
    assert!(j["requests"].as_u64().unwrap() >= 297);
    t.shutdown();
}

#[test]
fn pacing_flags_are_validated() {
    let _serial = exclusive();
    for (args, needle) in [
        (vec!["--rate-stages", "fast"], "RATE:DURATION"),
        (vec!["-q", "-5"], ""),
        (vec!["-p", "0"], "pipeline"),
    ] {
        let mut a = vec!["http", "http://127.0.0.1:1/"];
        a.extend(args.iter());
        let o = run(&a);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{a:?}: {}", stderr(&o));
    }
}

#[test]
fn ab_comparison_shows_the_slower_side() {
    let _serial = exclusive();
    let fast = target();
    let slow = target_with(None, Some(Duration::from_millis(5)));
    let (a, b) = (format!("{}/", fast.url()), format!("{}/", slow.url()));
    let dir = scratch("ab");
    let file = dir.join("ab.json");
    let o = run(&[
        "http",
        &a,
        "--vs",
        &b,
        "--rounds",
        "2",
        "-c",
        "4",
        // 2 rounds of 2 s: 4 whole seconds per side, the fewest the rank test can judge.
        "-z",
        "2s",
        "--json",
        "--save",
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    let row = |m: &str| {
        j["comparison"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["metric"] == m)
            .unwrap()
            .clone()
    };
    let p95 = row("p95 ms");
    assert!(p95["ratio"].as_f64().unwrap() > 2.0, "B is slower: {p95}");
    assert_eq!(p95["verdict"], "B worse");
    let rps = row("requests/s");
    assert!(rps["ratio"].as_f64().unwrap() < 0.8, "{rps}");
    assert_eq!(rps["verdict"], "B worse");
    assert_eq!(j["a"]["rounds"].as_array().unwrap().len(), 2);
    assert_eq!(j["b"]["rounds"].as_array().unwrap().len(), 2);
    // The table's figures are the quick summary's: A's requests/s is the median (here the
    // mean) of its two rounds' rps.
    let rps_a: Vec<f64> = (0..2)
        .map(|i| j["a"]["rounds"][i]["rps"].as_f64().unwrap())
        .collect();
    let median = (rps_a[0] + rps_a[1]) / 2.0;
    assert!(
        (rps["a"].as_f64().unwrap() - median).abs() < 1e-6 * median,
        "{rps} {rps_a:?}"
    );
    // The saved file reads back through the library's validated reader.
    let saved = volley_report::AbFile::read(&file).unwrap();
    assert_eq!(saved.format, "volley-ab");
    assert_eq!((saved.a.len(), saved.b.len()), (2, 2), "all rounds kept");
    assert_eq!(saved.a[0].meta.name, a);
    assert_eq!(
        serde_json::to_value(&saved.comparison).unwrap(),
        j["comparison"],
        "the file keeps the printed table"
    );
    // The text table names both sides and the ratio column.
    let o = run(&[
        "http", &a, "--vs", &b, "--rounds", "1", "-c", "2", "-n", "200",
    ]);
    let out = stdout(&o);
    assert!(
        out.contains("B/A") && out.contains("n/a (1 round)"),
        "{out}"
    );
    std::fs::remove_dir_all(dir).ok();
    fast.shutdown();
    slow.shutdown();
}

/// Pipelining under a rate cap: the most request heads the slow server below found in one
/// read, and how many requests it answered.
static MOST_AT_ONCE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static ANSWERED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A server that takes 20 ms per read and answers every complete request head it holds: the
/// heads found in one read are a batch the client wrote back to back.
fn slow_batch_server(mut s: std::net::TcpStream) {
    use std::sync::atomic::Ordering;
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = Vec::new();
    let mut b = [0u8; 4096];
    for _ in 0..10_000 {
        match s.read(&mut b) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&b[..n]),
        }
        let mut heads = 0;
        let mut cut = 0;
        while let Some(at) = buf[cut..].windows(4).position(|w| w == b"\r\n\r\n") {
            cut += at + 4;
            heads += 1;
        }
        buf.drain(..cut);
        if heads == 0 {
            continue;
        }
        MOST_AT_ONCE.fetch_max(heads, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(20));
        if !answer(&mut s, heads) {
            return;
        }
        ANSWERED.fetch_add(heads as u64, Ordering::Relaxed);
    }
}

#[test]
fn pipelining_under_a_rate_cap_sends_the_due_requests_in_batches() {
    use std::sync::atomic::Ordering;
    let _serial = exclusive();
    let port = raw_server(1, Duration::from_secs(20), slow_batch_server);
    let url = format!("http://127.0.0.1:{port}/");
    // One connection of ≤ 8 requests per 20 ms (≤ 400/s) asked for 600/s: requests fall due
    // while a batch is out, and the next write carries up to 8 of them.
    let o = run(&[
        "http",
        &url,
        "-q",
        "600",
        "-p",
        "8",
        "-c",
        "1",
        "--max-connections",
        "1",
        "-z",
        "2s",
        "--timeout",
        "3s",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    let most = MOST_AT_ONCE.load(Ordering::Relaxed);
    assert!(
        (2..=8).contains(&most),
        "batches of up to the depth: {most}"
    );
    let sent = j["requests"].as_u64().unwrap();
    assert_eq!(ANSWERED.load(Ordering::Relaxed), sent, "{j}");
    assert_eq!(j["connections_opened"], 1);
    // Everything due was either sent, counted as dropped, or cut at the deadline.
    let cut = j["interrupted_requests"].as_u64().unwrap();
    let dropped = j["open_model"]["dropped"].as_u64().unwrap();
    assert_eq!(sent + cut + dropped, 1200, "{j}");
    // Queued behind the slow batches: latency from the due time dwarfs the service time.
    let corrected = j["latency_ms"]["p50"].as_f64().unwrap();
    let service = j["service_latency_ms"]["p50"].as_f64().unwrap();
    assert!(
        corrected > service * 2.0,
        "corrected p50 {corrected} vs service p50 {service}"
    );
    assert!(
        j["open_model"]["missed_starts"].as_u64().unwrap() > 10,
        "{j}"
    );
}

#[test]
fn pipelining_under_a_rate_cap_hits_the_rate_against_the_target() {
    let _serial = exclusive();
    let t = target();
    let url = format!("{}/", t.url());
    let o = run(&[
        "http", &url, "-q", "2000", "-p", "8", "-c", "4", "-z", "3s", "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    let sent = j["requests"].as_u64().unwrap();
    // 3 s at 2000/s is 6000 requests due; an easy rate is met within 1 %.
    assert!((5940..=6000).contains(&sent), "sent {sent}: {j}");
    let cut = j["interrupted_requests"].as_u64().unwrap();
    assert_eq!(
        sent + cut + j["open_model"]["dropped"].as_u64().unwrap(),
        6000
    );
    assert_eq!(t.stats().requests, sent);
    assert_eq!(j["bytes_sent"].as_u64().unwrap(), t.stats().bytes_received);
    let opts = &j["open_model"];
    assert_eq!(opts["target_rps"], 2000.0);
    t.shutdown();
}

#[test]
fn pipelining_under_a_rate_cap_corrects_a_slow_targets_latency() {
    let _serial = exclusive();
    let t = target();
    // The target answers a connection's pipelined requests one after another, 20 ms each:
    // one connection serves 50/s, asked for 200/s.
    let url = format!("{}/delay/20", t.url());
    let o = run(&[
        "http",
        &url,
        "-q",
        "200",
        "-p",
        "4",
        "-c",
        "1",
        "--max-connections",
        "1",
        "-z",
        "2s",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    let sent = j["requests"].as_u64().unwrap();
    assert_eq!(t.stats().requests, sent);
    for p in ["p50", "p99"] {
        let corrected = j["latency_ms"][p].as_f64().unwrap();
        let service = j["service_latency_ms"][p].as_f64().unwrap();
        assert!(
            corrected >= service,
            "{p}: corrected {corrected} < service {service}"
        );
    }
    let corrected = j["latency_ms"]["p99"].as_f64().unwrap();
    let service = j["service_latency_ms"]["p99"].as_f64().unwrap();
    assert!(corrected > service * 2.0, "{corrected} vs {service}");
    t.shutdown();
}
