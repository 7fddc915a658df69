//! volley-dashboard: `--dashboard [ADDR]`, a live web page of a run, fed once a second from
//! the run's own aggregates (no JavaScript engine here; the page's script is a static asset).
//!
//! [`Dashboard::start`] binds the address and serves, on a thread of its own:
//! `GET /` (the page, its `app.js` and `app.css`, all compiled in with `include_str!`: no
//! network, no CDN), `GET /events` (server-sent events: `hello`, one `snapshot` per second of
//! run time, `end`) and, once the run is over, `GET /report` (the HTML report of `volley
//! report`). As a [`volley_run::Observer`] it turns each tick into a snapshot; [`export`]
//! writes the final report to a file (`--dashboard-export`).
//!
//! # Layout
//!
//! - [`feed`]: the snapshot's figures from the aggregator (points of the per-second series,
//!   run totals) and the bounded history a browser connecting late gets first.
//! - `server`: the hyper server, routes, and the event streams (bounded per browser; a
//!   browser that falls behind is dropped, the run never waits).
//! - `assets/`: the page (HTML, CSS, and a small script drawing SVG charts).
//!
//! # Data flow
//!
//! run coordinator → [`Observer::tick`] → new series points + totals → JSON, once → history
//! and every browser's channel (`try_send`) → `/events`. [`Observer::finish`] → final
//! snapshot, `end` (run name, thresholds' verdicts) and the report.

pub mod feed;
mod server;

use feed::{Cursor, History, Totals, MAX_POINTS};
use server::Hub;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use volley_metrics::RunResult;
use volley_run::Observer;

pub use server::{CLIENT_BUFFER, MAX_CLIENTS};

/// k6's web dashboard default.
pub const DEFAULT_ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 5665);

/// `--dashboard` values: `HOST:PORT` (an IP address or `localhost`), `:PORT` or `PORT` (both on
/// 127.0.0.1: the page never leaves this host unless an address says so).
pub fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(DEFAULT_ADDR);
    }
    let port = |p: &str| {
        p.parse::<u16>()
            .map_err(|_| format!("'{s}': '{p}' is not a port (0 to 65535)"))
    };
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    if let Some(p) = s
        .strip_prefix(':')
        .or(s.bytes().all(|b| b.is_ascii_digit()).then_some(s))
    {
        return Ok(SocketAddr::new(DEFAULT_ADDR.ip(), port(p)?));
    }
    match s.rsplit_once(':') {
        Some((h, p)) if h.eq_ignore_ascii_case("localhost") => {
            Ok(SocketAddr::new(DEFAULT_ADDR.ip(), port(p)?))
        }
        _ => Err(format!(
            "'{s}': expected an address such as 127.0.0.1:5665, [::1]:5665, :5665 or 5665"
        )),
    }
}

/// A live dashboard: the server thread runs while this value lives.
pub struct Dashboard {
    hub: Arc<Hub>,
    addr: SocketAddr,
    cursor: Cursor,
    stop: Arc<Notify>,
    /// The run-wide latency last computed, and when it is due again (see [`LATENCY_SHARE`]).
    latency: (u64, [f64; 6]),
    latency_due: Instant,
}

/// The run-wide percentiles merge every tag set's histogram: with many tag sets that takes
/// milliseconds, so once it takes 1 ms or more they are recomputed only after this many times
/// their own cost has passed (the dashboard takes at most ~1 % of the run's coordinator; the
/// per-second figures are always fresh).
const LATENCY_SHARE: u32 = 100;

impl Dashboard {
    /// Bind `addr` and serve on a thread of its own. A bind failure (port in use, an address
    /// this host does not have) is an error naming the address.
    pub fn start(addr: SocketAddr) -> Result<Dashboard, String> {
        let listener = std::net::TcpListener::bind(addr).map_err(|e| {
            let hint = match e.kind() {
                std::io::ErrorKind::AddrInUse => {
                    "; another program uses that port: pick another, or port 0 for any free one"
                }
                std::io::ErrorKind::AddrNotAvailable => "; that address is not one of this host's",
                std::io::ErrorKind::PermissionDenied => "; ports below 1024 need privileges",
                _ => "",
            };
            format!("dashboard: cannot listen on {addr}: {e}{hint}")
        })?;
        let fail = |e: std::io::Error| format!("dashboard: cannot start: {e}");
        listener.set_nonblocking(true).map_err(fail)?;
        let addr = listener.local_addr().map_err(fail)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(fail)?;
        let command: Vec<String> = std::env::args().collect();
        let hello = serde_json::json!({ "command": command.join(" ") }).to_string();
        let hub = Arc::new(Hub::new(addr.ip().is_loopback(), hello));
        let stop = Arc::new(Notify::new());
        let (h, s) = (hub.clone(), stop.clone());
        std::thread::Builder::new()
            .name("volley-dashboard".into())
            .spawn(move || {
                rt.block_on(async move {
                    let Ok(l) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::select! {
                        _ = server::serve(l, h) => {}
                        _ = s.notified() => {}
                    }
                });
                // Dropping the runtime closes every connection.
            })
            .map_err(fail)?;
        Ok(Dashboard {
            hub,
            addr,
            cursor: Cursor::default(),
            stop,
            latency: (0, [0.0; 6]),
            latency_due: Instant::now(),
        })
    }

    /// The address it listens on (the port chosen when it was 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The page's URL.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Browsers following the events now.
    pub fn clients(&self) -> usize {
        self.hub.lock().clients()
    }

    /// New points and totals → one `snapshot` event, into the history and every browser.
    fn publish(&mut self, series: &volley_metrics::Series, head: String) {
        let pts = self.cursor.new_points(series);
        let jsons: Vec<Arc<str>> = pts.iter().map(feed::point_json).collect();
        let msg = server::snapshot(&head, &jsons.join(","));
        let mut st = self.hub.lock();
        let history = st.history.get_or_insert_with(|| History::new(MAX_POINTS));
        for (p, j) in pts.into_iter().zip(jsons) {
            history.push(p, j);
        }
        st.head = Some(head);
        st.broadcast(&msg);
    }
}

/// The start of a snapshot's JSON (the points follow).
fn head(elapsed_s: f64, vus: u64, vus_max: u64, totals: &Totals) -> String {
    format!(
        "{{\"elapsed\":{elapsed_s:.3},\"vus\":{vus},\"vus_max\":{vus_max},\"total\":{}",
        serde_json::to_string(totals).unwrap_or_else(|_| "{}".into())
    )
}

impl Observer for Dashboard {
    fn tick(&mut self, tick: &volley_engine::vus::Tick<'_>) {
        let started = Instant::now();
        let fresh = started >= self.latency_due;
        let mut totals = Totals::from_agg(tick.agg, fresh);
        if fresh {
            self.latency = (totals.lat_n, totals.lat);
            let cost = started.elapsed();
            if cost >= Duration::from_millis(1) {
                self.latency_due = Instant::now() + cost * LATENCY_SHARE;
            }
        } else {
            (totals.lat_n, totals.lat) = self.latency;
        }
        let h = head(tick.elapsed.as_secs_f64(), tick.vus, tick.vus_max, &totals);
        self.publish(tick.agg.series(), h);
    }

    fn finish(&mut self, result: &RunResult) {
        // The last seconds (flushed after the last tick) and the exact final totals.
        let h = head(result.meta.duration_s, 0, 0, &Totals::from_result(result));
        self.publish(&result.series, h);
        let thresholds: Vec<serde_json::Value> = result
            .thresholds
            .iter()
            .map(|t| {
                serde_json::json!({
                    "metric": t.metric, "expression": t.expression, "ok": t.ok,
                    "observed": t.observed,
                })
            })
            .collect();
        let end = serde_json::json!({
            "name": result.meta.name,
            "mode": result.meta.mode,
            "duration_s": result.meta.duration_s,
            "interrupted": result.meta.interrupted,
            "thresholds": thresholds,
            "report": "/report",
        })
        .to_string();
        let html: Arc<str> = report_html(result, "dashboard").into();
        let mut st = self.hub.lock();
        st.broadcast(&server::sse("end", &end));
        st.end = Some(end);
        st.report = Some(html);
        st.close_all();
    }
}

/// After the run, how long open event streams get to deliver the `end` event before the
/// server stops (a browser that reads nothing costs the process at most this).
const DRAIN: Duration = Duration::from_secs(1);

impl Drop for Dashboard {
    fn drop(&mut self) {
        let until = Instant::now() + DRAIN;
        let ended = self.hub.lock().end.is_some();
        while ended && self.hub.streams.load(Ordering::Relaxed) > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.stop.notify_one();
    }
}

/// The HTML report of a finished run, as `volley report` writes it.
fn report_html(result: &RunResult, label: &str) -> String {
    let raw = serde_json::to_value(result).ok();
    volley_report::render_report(&[volley_report::Labeled {
        label: label.to_string(),
        run: result,
        raw: raw.as_ref(),
    }])
}

/// `--dashboard-export FILE`: write the finished run's HTML report (the page `/report` serves).
pub fn export(result: &RunResult, path: &Path) -> Result<(), String> {
    let label = path
        .file_stem()
        .map_or_else(|| "run".into(), |s| s.to_string_lossy().into_owned());
    std::fs::write(path, report_html(result, &label)).map_err(|e| {
        format!(
            "cannot write the dashboard export to {}: {e}",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_default_to_loopback() {
        let ok = |s: &str, want: &str| assert_eq!(parse_addr(s), Ok(want.parse().unwrap()), "{s}");
        ok("", "127.0.0.1:5665");
        ok("6000", "127.0.0.1:6000");
        ok(":6000", "127.0.0.1:6000");
        ok("localhost:7", "127.0.0.1:7");
        ok("[::1]:5665", "[::1]:5665");
        ok("0.0.0.0:80", "0.0.0.0:80");
        for bad in [
            "script.js",
            "host.example:80",
            "1.2.3.4",
            ":99999",
            "localhost:x",
        ] {
            let e = parse_addr(bad).unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }
}
