//! Quick mode: one request template, fired over N connections for a duration or a count.
//!
//! Threads: one worker per core (at most one per connection), each a single-threaded tokio
//! runtime whose connection tasks share a `Recorder` through `Rc<RefCell<_>>`: recording is
//! a plain memory write, and nothing crosses threads except one snapshot per worker per
//! second. A `-n` budget is split between workers up front, so counting needs no atomics.

use crate::control::RunControl;
use crate::sys;
use serde::Serialize;
use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use volley_http::{
    Body, BodyMode, ConnectTimings, Connection, HttpError, Request, Response, Scheme, Target,
    TlsOptions,
};
use volley_metrics::{
    time, Aggregator, Handle, MetricKey, MetricKind, Recorder, RunMeta, RunResult, Snapshot, Unit,
};

/// Everything a quick run needs; built by the CLI from its flags.
#[derive(Clone, Debug)]
pub struct QuickConfig {
    pub url: String,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Body,
    pub connections: usize,
    /// Stop after this long (whichever of duration/requests comes first).
    pub duration: Option<Duration>,
    /// Stop after this many requests in total.
    pub requests: Option<u64>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub keepalive: bool,
    pub tls: TlsOptions,
    /// Worker threads; 0 = one per available core.
    pub threads: usize,
    /// The command line, for the result file.
    pub command: Vec<String>,
}

/// What the resolved options look like in the result file.
#[derive(Serialize)]
struct ResolvedOptions<'a> {
    url: &'a str,
    method: &'a str,
    headers: &'a [(String, String)],
    body_bytes: u64,
    connections: usize,
    duration_s: Option<f64>,
    requests: Option<u64>,
    timeout_s: f64,
    connect_timeout_s: f64,
    keepalive: bool,
    insecure: bool,
    cacert: Option<String>,
    threads: usize,
}

/// Live numbers, passed to the progress callback once per finished second.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    pub elapsed: Duration,
    /// Time left of `-z`, if one was given.
    pub remaining: Option<Duration>,
    pub requests: u64,
    /// Requests per second in the last interval.
    pub rate: f64,
    /// p99 of the last interval, in ms.
    pub p99_ms: f64,
    pub errors: u64,
}

enum Msg {
    Snapshot {
        worker: usize,
        interval: u64,
        snap: Snapshot,
    },
    Done {
        worker: usize,
    },
}

/// Run the load and return its result. Errors are setup failures (bad TLS files, unresolvable
/// host); request failures are counted in the result instead.
pub fn run_quick(
    cfg: &QuickConfig,
    ctl: &RunControl,
    mut on_progress: impl FnMut(&Progress),
) -> Result<RunResult, String> {
    let target = Target::parse(&cfg.url).map_err(|e| e.to_string())?;
    let addrs = resolve(&target)?;
    let tls = match target.scheme {
        Scheme::Https => Some(volley_http::tls_config(&cfg.tls, &[b"http/1.1"])?),
        Scheme::Http => None,
    };
    let request = Request::new(
        &cfg.method,
        &target,
        &cfg.headers,
        cfg.body.clone(),
        cfg.keepalive,
    )?;
    let connections = cfg.connections.max(1);
    let threads = match cfg.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .min(connections);

    let shared = Arc::new(Shared {
        target,
        addrs,
        tls,
        request,
        timeout: cfg.timeout,
        connect_timeout: cfg.connect_timeout,
        keepalive: cfg.keepalive,
        ctl: ctl.clone(),
    });

    let started_wall = SystemTime::now();
    let start = Instant::now();
    let (tx, rx) = mpsc::channel();
    let mut joins = Vec::new();
    for w in 0..threads {
        let conns = split(connections as u64, threads, w) as usize;
        let quota = cfg.requests.map(|n| split(n, threads, w));
        let (shared, tx) = (shared.clone(), tx.clone());
        let j = std::thread::Builder::new()
            .name(format!("volley-worker-{w}"))
            .spawn(move || worker(w, shared, conns, quota, start, tx))
            .map_err(|e| format!("cannot start worker thread: {e}"))?;
        joins.push(j);
    }
    drop(tx);

    let deadline = cfg.duration.map(|d| start + d);
    let mut agg = Aggregator::new(threads, volley_metrics::series::DEFAULT_MAX_POINTS);
    let mut done = 0;
    let mut last_reported = 0;
    while done < threads {
        let wait = deadline
            .filter(|_| !ctl.is_stopped())
            .map(|d| d.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_millis(200))
            .min(Duration::from_millis(200));
        match rx.recv_timeout(wait) {
            Ok(Msg::Snapshot {
                worker,
                interval,
                snap,
            }) => agg.add(worker, interval, snap),
            Ok(Msg::Done { worker }) => {
                agg.worker_done(worker);
                done += 1;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            ctl.stop();
        }
        let points = agg.series().points.len();
        if points != last_reported {
            last_reported = points;
            on_progress(&progress(&agg, start, cfg.duration));
        }
    }
    // The load ends when the last in-flight request ended, not when the coordinator noticed.
    let elapsed = start.elapsed();
    for j in joins {
        let _ = j.join();
    }

    let ended_wall = SystemTime::now();
    let (metrics, series) = agg.finish();
    let opts = ResolvedOptions {
        url: &cfg.url,
        method: &cfg.method,
        headers: &cfg.headers,
        body_bytes: match &cfg.body {
            Body::Empty => 0,
            Body::Bytes(b) => b.len() as u64,
            Body::File { len, .. } => *len,
        },
        connections,
        duration_s: cfg.duration.map(|d| d.as_secs_f64()),
        requests: cfg.requests,
        timeout_s: cfg.timeout.as_secs_f64(),
        connect_timeout_s: cfg.connect_timeout.as_secs_f64(),
        keepalive: cfg.keepalive,
        insecure: cfg.tls.insecure,
        cacert: cfg.tls.cacert.as_ref().map(|p| p.display().to_string()),
        threads,
    };
    let (s_ms, e_ms) = (time::unix_ms(started_wall), time::unix_ms(ended_wall));
    let meta = RunMeta {
        volley_version: env!("CARGO_PKG_VERSION").to_string(),
        mode: "http".to_string(),
        command: cfg.command.clone(),
        name: cfg.url.clone(),
        started_at: time::rfc3339_ms(s_ms),
        ended_at: time::rfc3339_ms(e_ms),
        started_unix_ms: s_ms,
        ended_unix_ms: e_ms,
        duration_s: elapsed.as_secs_f64(),
        interrupted: ctl.was_interrupted(),
        instances: 1,
        host: volley_metrics::result::HostInfo::current(),
        peak_rss_bytes: sys::peak_rss_bytes(),
    };
    let options = serde_json::to_value(opts).unwrap_or_default();
    Ok(RunResult::new(meta, options, metrics, series))
}

/// Share `total` between `parts` as evenly as possible; part `i` gets its slice.
fn split(total: u64, parts: usize, i: usize) -> u64 {
    let parts = parts as u64;
    total / parts + u64::from((i as u64) < total % parts)
}

fn resolve(target: &Target) -> Result<Vec<SocketAddr>, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    let addrs = rt
        .block_on(target.resolve())
        .map_err(|e| format!("cannot resolve '{}': {}", target.host, e.message))?;
    if addrs.is_empty() {
        return Err(format!("'{}' resolved to no address", target.host));
    }
    Ok(addrs)
}

fn progress(agg: &Aggregator, start: Instant, duration: Option<Duration>) -> Progress {
    let elapsed = start.elapsed();
    let (rate, p99_ms) = match agg.last_point() {
        Some(p) => {
            let rate = p.counter_sum("http_reqs") / p.w.max(1) as f64;
            let p99 = match p.get("http_req_duration", &Default::default()) {
                Some(volley_metrics::series::Stat::Trend { p99, .. }) => *p99,
                _ => 0.0,
            };
            (rate, p99)
        }
        None => (0.0, 0.0),
    };
    let errors = agg
        .totals()
        .filter(|(d, _)| d.key.name == "http_reqs" && d.key.tags.contains_key("error"))
        .map(|(_, a)| a.samples())
        .sum();
    Progress {
        elapsed,
        remaining: duration.map(|d| d.saturating_sub(elapsed)),
        requests: agg.counter_sum("http_reqs") as u64,
        rate,
        p99_ms,
        errors,
    }
}

/// Read-only state all workers share.
struct Shared {
    target: Target,
    addrs: Vec<SocketAddr>,
    tls: Option<Arc<rustls::ClientConfig>>,
    request: Request,
    timeout: Duration,
    connect_timeout: Duration,
    keepalive: bool,
    ctl: RunControl,
}

/// Per-worker state: the shared config plus this thread's recorder and budget.
struct Worker {
    shared: Arc<Shared>,
    rec: RefCell<Recorder>,
    h: Handles,
    /// Responses by status code, resolved on first use (index = status).
    status: RefCell<Vec<Option<Handle>>>,
    /// Requests this worker may still start (`-n`), or None for unbounded.
    quota: Cell<Option<u64>>,
    next_addr: Cell<usize>,
}

/// Handles of the series every request records into, resolved once per worker.
struct Handles {
    duration: Handle,
    waiting: Handle,
    connecting: Handle,
    tls: Handle,
    failed: Handle,
    sent: Handle,
    received: Handle,
    conns: Handle,
}

impl Worker {
    fn new(shared: Arc<Shared>, quota: Option<u64>, first_addr: usize) -> Worker {
        let mut rec = Recorder::new();
        let mut t = |name: &str| rec.handle(MetricKey::new(name), MetricKind::Trend, Unit::Time);
        let (duration, waiting, connecting, tls) = (
            t("http_req_duration"),
            t("http_req_waiting"),
            t("http_req_connecting"),
            t("http_req_tls_handshaking"),
        );
        let failed = rec.handle(
            MetricKey::new("http_req_failed"),
            MetricKind::Rate,
            Unit::Default,
        );
        let sent = rec.handle(MetricKey::new("data_sent"), MetricKind::Counter, Unit::Data);
        let received = rec.handle(
            MetricKey::new("data_received"),
            MetricKind::Counter,
            Unit::Data,
        );
        let conns = rec.handle(
            MetricKey::new("connections_opened"),
            MetricKind::Counter,
            Unit::Default,
        );
        Worker {
            shared,
            rec: RefCell::new(rec),
            h: Handles {
                duration,
                waiting,
                connecting,
                tls,
                failed,
                sent,
                received,
                conns,
            },
            status: RefCell::new(vec![None; 1000]),
            quota: Cell::new(quota),
            next_addr: Cell::new(first_addr),
        }
    }

    /// Claim the right to start one more request.
    #[inline]
    fn take_one(&self) -> bool {
        if self.shared.ctl.is_stopped() {
            return false;
        }
        match self.quota.get() {
            None => true,
            Some(0) => false,
            Some(n) => {
                self.quota.set(Some(n - 1));
                true
            }
        }
    }

    fn addr(&self) -> SocketAddr {
        let i = self.next_addr.get();
        self.next_addr.set(i.wrapping_add(1));
        self.shared.addrs[i % self.shared.addrs.len()]
    }

    fn record_connect(&self, t: &ConnectTimings) {
        let mut rec = self.rec.borrow_mut();
        rec.add(self.h.conns, 1.0);
        rec.trend_us(self.h.connecting, t.connecting.as_micros() as u64);
        if self.shared.tls.is_some() {
            rec.trend_us(self.h.tls, t.tls_handshaking.as_micros() as u64);
        }
    }

    fn record_response(&self, r: &Response) {
        let status = self.status_handle(r.status);
        let mut rec = self.rec.borrow_mut();
        rec.add(status, 1.0);
        rec.trend_us(self.h.duration, r.timings.duration().as_micros() as u64);
        rec.trend_us(self.h.waiting, r.timings.waiting.as_micros() as u64);
        // k6's default expected statuses: 200..=399.
        rec.rate(self.h.failed, !(200..400).contains(&r.status));
        rec.add(self.h.sent, r.bytes_sent as f64);
        rec.add(self.h.received, r.bytes_received as f64);
    }

    fn record_error(&self, e: &HttpError) {
        let mut rec = self.rec.borrow_mut();
        // Errors are few; resolving their handle by key here keeps the success path lean.
        let h = rec.handle(
            MetricKey::tagged("http_reqs", &[("error", e.class.as_str())]),
            MetricKind::Counter,
            Unit::Default,
        );
        rec.add(h, 1.0);
        rec.rate(self.h.failed, true);
        rec.add(self.h.sent, e.bytes_sent as f64);
        rec.add(self.h.received, e.bytes_received as f64);
    }

    fn status_handle(&self, status: u16) -> Handle {
        let i = usize::from(status).min(999);
        if let Some(h) = self.status.borrow()[i] {
            return h;
        }
        let code = status.to_string();
        let h = self.rec.borrow_mut().handle(
            MetricKey::tagged("http_reqs", &[("status", &code)]),
            MetricKind::Counter,
            Unit::Default,
        );
        self.status.borrow_mut()[i] = Some(h);
        h
    }
}

fn worker(
    id: usize,
    shared: Arc<Shared>,
    conns: usize,
    quota: Option<u64>,
    start: Instant,
    tx: mpsc::Sender<Msg>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("volley: worker {id}: cannot start a runtime: {e}");
            let _ = tx.send(Msg::Done { worker: id });
            return;
        }
    };
    let w = Rc::new(Worker::new(shared, quota, id));
    let ticks = Rc::new(Cell::new(0u64));
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let ticker = {
            let (w, ticks, tx) = (w.clone(), ticks.clone(), tx.clone());
            tokio::task::spawn_local(async move {
                let mut iv = tokio::time::interval_at(
                    (start + Duration::from_secs(1)).into(),
                    Duration::from_secs(1),
                );
                iv.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    iv.tick().await;
                    let snap = w.rec.borrow_mut().snapshot();
                    let interval = ticks.get();
                    ticks.set(interval + 1);
                    let _ = tx.send(Msg::Snapshot {
                        worker: id,
                        interval,
                        snap,
                    });
                }
            })
        };
        let tasks: Vec<_> = (0..conns)
            .map(|_| tokio::task::spawn_local(connection_loop(w.clone())))
            .collect();
        let all = async {
            for t in tasks {
                let _ = t.await;
            }
        };
        let hard = async {
            while !w.shared.ctl.is_hard_stopped() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::select! {
            _ = all => {}
            _ = hard => {}
        }
        ticker.abort();
    });
    // Whatever was recorded after the last tick (including abandoned tasks' partial work).
    let snap = w.rec.borrow_mut().snapshot();
    let _ = tx.send(Msg::Snapshot {
        worker: id,
        interval: ticks.get(),
        snap,
    });
    let _ = tx.send(Msg::Done { worker: id });
}

/// One connection's life: connect when needed, send, record, repeat until stopped.
async fn connection_loop(w: Rc<Worker>) {
    let s = &w.shared;
    let mut conn: Option<Connection> = None;
    while w.take_one() {
        if conn.is_none() {
            match Connection::connect(w.addr(), &s.target, s.tls.as_ref(), s.connect_timeout).await
            {
                Ok((c, t)) => {
                    w.record_connect(&t);
                    conn = Some(c);
                }
                Err(e) => {
                    w.record_error(&e);
                    continue;
                }
            }
        }
        let Some(c) = conn.as_mut() else { continue };
        match c.send(&s.request, BodyMode::Discard, s.timeout).await {
            Ok(r) => {
                w.record_response(&r);
                if !r.keep_alive || !s.keepalive {
                    conn = None;
                }
            }
            Err(e) => {
                w.record_error(&e);
                conn = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_shares_exactly() {
        for total in [0u64, 1, 7, 10_000, 10_001] {
            for parts in 1..5 {
                let sum: u64 = (0..parts).map(|i| split(total, parts, i)).sum();
                assert_eq!(sum, total);
            }
        }
    }
}
