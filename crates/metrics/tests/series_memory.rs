//! Memory per distinct series (issue #4): a script that requests thousands of distinct URLs
//! makes ~11 series per URL (http_reqs, seven http_req_* trends, http_req_failed, data_sent,
//! data_received), each recorded a few times at most. What such a series costs in the
//! recorder, the aggregator's totals and pending intervals and the per-second series is
//! measured here with a counting global allocator, so a regression to a per-series HDR array
//! (16-64 KiB each, per copy) fails.
//!
//! One test per binary: the counter is per thread, and nothing else runs in this process.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use volley_metrics::{Aggregator, MetricKey, MetricKind, Recorder, TagSet, Unit};

struct Counting;

thread_local! {
    static LIVE: Cell<i64> = const { Cell::new(0) };
}

fn live() -> i64 {
    LIVE.with(|c| c.get())
}

fn count(d: i64) {
    // try_with: the thread-local may be gone while a thread exits.
    let _ = LIVE.try_with(|c| c.set(c.get() + d));
}

// SAFETY: delegates to the system allocator; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count(l.size() as i64);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        count(-(l.size() as i64));
        System.dealloc(p, l)
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        count(l.size() as i64);
        System.alloc_zeroed(l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        count(new as i64 - l.size() as i64);
        System.realloc(p, l, new)
    }
}

#[global_allocator]
static A: Counting = Counting;

const TRENDS: [&str; 7] = [
    "http_req_duration",
    "http_req_blocked",
    "http_req_connecting",
    "http_req_tls_handshaking",
    "http_req_sending",
    "http_req_waiting",
    "http_req_receiving",
];

/// Record `urls` distinct URLs, `per_url` requests each, spread over `urls / 100` one-second
/// intervals and `workers` workers, through recorders and an aggregator, as a k6 script would.
/// Returns (bytes still held by recorders + aggregator, number of distinct series).
fn run(urls: usize, per_url: usize, workers: usize) -> (i64, usize) {
    let before = live();
    let mut recs: Vec<Recorder> = (0..workers).map(|_| Recorder::new()).collect();
    let mut agg = Aggregator::new(workers, volley_metrics::series::DEFAULT_MAX_POINTS);
    let mut interval = 0;
    for u in 0..urls {
        let url = format!("http://127.0.0.1:18281/?u={u}");
        let tags: TagSet = [
            ("expected_response", "true"),
            ("method", "GET"),
            ("name", &url),
            ("proto", "HTTP/1.1"),
            ("scenario", "default"),
            ("status", "200"),
            ("url", &url),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for r in 0..per_url {
            let rec = &mut recs[(u + r) % workers];
            let key = |n: &str| MetricKey {
                name: n.to_string(),
                tags: tags.clone(),
            };
            let reqs = rec.handle(key("http_reqs"), MetricKind::Counter, Unit::Default);
            rec.add(reqs, 1.0);
            for (i, t) in TRENDS.iter().enumerate() {
                let h = rec.handle(key(t), MetricKind::Trend, Unit::Time);
                rec.trend_us(h, 150 + (u * 7 + i * 13 + r * 101) as u64 % 90_000);
            }
            let failed = rec.handle(key("http_req_failed"), MetricKind::Rate, Unit::Default);
            rec.rate(failed, false);
            for n in ["data_sent", "data_received"] {
                let h = rec.handle(key(n), MetricKind::Counter, Unit::Data);
                rec.add(h, 100.0);
            }
        }
        if u % 100 == 99 {
            for (w, rec) in recs.iter_mut().enumerate() {
                agg.add(w, interval, rec.snapshot());
            }
            interval += 1;
        }
    }
    for (w, rec) in recs.iter_mut().enumerate() {
        agg.add(w, interval, rec.snapshot());
    }
    let series = agg.totals().count();
    assert_eq!(series, urls * 11);
    assert_eq!(agg.counter_sum("http_reqs"), (urls * per_url) as f64);
    let held = live() - before;
    drop(recs);
    drop(agg);
    (held, series)
}

#[test]
fn distinct_series_cost_a_few_kilobytes_each() {
    // A warm-up run: thread-locals, hash seeds and the like are not per-series costs.
    run(10, 1, 1);

    let (held, series) = run(2000, 1, 1);
    let per = held as f64 / series as f64;
    eprintln!("1 worker, 1 request per URL: {per:.0} bytes per series ({series} series)");
    // The name and seven tags are held twice per series (recorder key, series point),
    // ~1 KiB each; the aggregates themselves must be small. An HDR array per trend was
    // ~30 KiB per series.
    assert!(per < 3.0 * 1024.0, "{per:.0} bytes per series");

    // Two workers both recording each URL a few times: two recorders hold every series.
    let (held, series) = run(1000, 4, 2);
    let per = held as f64 / series as f64;
    eprintln!("2 workers, 4 requests per URL: {per:.0} bytes per series ({series} series)");
    assert!(per < 5.0 * 1024.0, "{per:.0} bytes per series");
}
