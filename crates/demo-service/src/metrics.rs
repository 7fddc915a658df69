//! `/metrics` in Prometheus text format: requests by route, method and status; a latency
//! histogram per route (time to the response head); file bytes uploaded and downloaded;
//! live sessions; process RSS.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Histogram bucket upper bounds, in seconds.
const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Default)]
struct Hist {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Default)]
pub(crate) struct Metrics {
    requests: Mutex<BTreeMap<(&'static str, &'static str, u16), u64>>,
    latency: Mutex<BTreeMap<&'static str, Hist>>,
    /// File content bytes served by downloads (API and WebDAV, after Range).
    pub(crate) download_bytes: Arc<AtomicU64>,
    /// File content bytes accepted by uploads (direct, chunks, WebDAV PUT).
    pub(crate) upload_bytes: AtomicU64,
}

impl Metrics {
    pub(crate) fn observe(
        &self,
        route: &'static str,
        method: &'static str,
        status: u16,
        took: Duration,
    ) {
        *self
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry((route, method, status))
            .or_default() += 1;
        let secs = took.as_secs_f64();
        let mut lat = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        let h = lat.entry(route).or_default();
        for (i, le) in BUCKETS.iter().enumerate() {
            if secs <= *le {
                h.counts[i] += 1;
            }
        }
        h.count += 1;
        h.sum += secs;
    }

    pub(crate) fn render(&self, sessions: usize) -> String {
        let mut out = String::with_capacity(4096);
        out.push_str("# HELP volley_demo_http_requests_total Requests answered, by route, method and status.\n# TYPE volley_demo_http_requests_total counter\n");
        for ((route, method, status), n) in self
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let _ = writeln!(
                out,
                "volley_demo_http_requests_total{{route=\"{route}\",method=\"{method}\",status=\"{status}\"}} {n}"
            );
        }
        out.push_str("# HELP volley_demo_http_request_duration_seconds Time from request head to response head.\n# TYPE volley_demo_http_request_duration_seconds histogram\n");
        for (route, h) in self
            .latency
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            for (i, le) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "volley_demo_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"{le}\"}} {}",
                    h.counts[i]
                );
            }
            let _ = writeln!(out, "volley_demo_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(
                out,
                "volley_demo_http_request_duration_seconds_sum{{route=\"{route}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "volley_demo_http_request_duration_seconds_count{{route=\"{route}\"}} {}",
                h.count
            );
        }
        let _ = write!(
            out,
            "# HELP volley_demo_download_bytes_total File content bytes sent by downloads.\n# TYPE volley_demo_download_bytes_total counter\nvolley_demo_download_bytes_total {}\n",
            self.download_bytes.load(Ordering::Relaxed)
        );
        let _ = write!(
            out,
            "# HELP volley_demo_upload_bytes_total File content bytes received by uploads.\n# TYPE volley_demo_upload_bytes_total counter\nvolley_demo_upload_bytes_total {}\n",
            self.upload_bytes.load(Ordering::Relaxed)
        );
        let _ = write!(
            out,
            "# HELP volley_demo_sessions Live login sessions.\n# TYPE volley_demo_sessions gauge\nvolley_demo_sessions {sessions}\n"
        );
        if let Some(rss) = rss_bytes() {
            let _ = write!(
                out,
                "# HELP process_resident_memory_bytes Resident memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {rss}\n"
            );
        }
        out
    }
}

/// Resident set size from `/proc/self/status` (Linux); `None` elsewhere.
fn rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
