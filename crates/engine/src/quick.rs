//! Quick mode: one request template, fired over N connections for a duration or a count.
//!
//! Threads: one worker per core (at most one per connection), each a single-threaded tokio
//! runtime whose connection tasks share a `Recorder` through `Rc<RefCell<_>>`: recording is
//! a plain memory write, and nothing crosses threads except one snapshot per worker per
//! second. A `-n` budget is split between workers up front, so counting needs no atomics.
//!
//! Pacing: closed model (each connection sends its next request when the previous answer
//! arrived, optionally `pipeline` at a time in one write) or open model (requests are due at
//! times set by a [`RateSchedule`], whatever the server does). In the open model a request that
//! starts late because every connection was busy is a *missed start*; its latency is also
//! measured from the time it was due (`http_req_corrected`, coordinated omission corrected, as
//! wrk2 does) beside the service time from the actual send (`http_req_duration`).

use crate::control::RunControl;
use crate::rate::RateSchedule;
use crate::sys;
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use volley_http::{Body, H2Request, PipelineBatch, Request, Scheme, Target, TlsOptions};
use volley_metrics::{Aggregator, RunMeta, RunResult, Snapshot};

/// The metrics a quick run records (besides `monitor_*` with `--monitor`): what `--threshold`
/// may name.
pub const METRICS: &[&str] = &[
    "http_reqs",
    "http_req_duration",
    "http_req_waiting",
    "http_req_corrected",
    "http_req_connecting",
    "http_req_tls_handshaking",
    "http_req_failed",
    "data_sent",
    "data_received",
    "connections_opened",
    "missed_starts",
    "dropped_requests",
    "interrupted_requests",
];

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
    /// HTTP/1.1 pipelining depth (1 = none); closed model only.
    pub pipeline: usize,
    /// Open model: when requests are due. None = closed model.
    pub rate: Option<RateSchedule>,
    /// Open model: connections may grow up to this many when all are busy.
    pub max_connections: usize,
    /// HTTP/2 (h2 over TLS via ALPN, h2c with prior knowledge for http://).
    pub http2: bool,
    /// HTTP/2: concurrent streams per connection.
    pub h2_streams: usize,
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
    pipeline: usize,
    rate: Option<&'a RateSchedule>,
    max_connections: Option<usize>,
    http2: bool,
    h2_streams: Option<usize>,
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
        /// When this worker's last request ended (response or error), if any did.
        last_end: Option<Instant>,
    },
}

/// Run the load and return its result. Errors are setup failures (bad TLS files, unresolvable
/// host); request failures are counted in the result instead.
pub fn run_quick(
    cfg: &QuickConfig,
    user_ctl: &RunControl,
    on_progress: impl FnMut(&Progress),
) -> Result<RunResult, String> {
    run_quick_monitored(cfg, &MonitorPlan::default(), user_ctl, on_progress)
}

/// Targets to watch during a run (`--monitor`): sampled on their own thread, which reports to
/// the coordinator as one more worker, so the `monitor_*` gauges share the run's timeline.
#[derive(Clone, Debug, Default)]
pub struct MonitorPlan {
    pub specs: Vec<volley_monitor::MonitorSpec>,
    /// Sampling interval (whole seconds; 1 s when zero).
    pub interval: Duration,
}

/// [`run_quick`] while watching the `monitor` targets.
pub fn run_quick_monitored(
    cfg: &QuickConfig,
    monitor: &MonitorPlan,
    user_ctl: &RunControl,
    mut on_progress: impl FnMut(&Progress),
) -> Result<RunResult, String> {
    // The run's own deadline stops this child; Ctrl-C on the caller's control stops it too.
    let ctl = &user_ctl.child();
    let target = Target::parse(&cfg.url).map_err(|e| e.to_string())?;
    let addrs = resolve(&target)?;
    let alpn: &[&[u8]] = if cfg.http2 { &[b"h2"] } else { &[b"http/1.1"] };
    let tls = match target.scheme {
        Scheme::Https => Some(volley_http::tls_config(&cfg.tls, alpn)?),
        Scheme::Http => None,
    };
    let h2_request = if cfg.http2 {
        if cfg.pipeline > 1 {
            return Err("--pipeline is for HTTP/1.1; with --http2 use --h2-streams".into());
        }
        Some(H2Request::new(
            &cfg.method,
            &target,
            &cfg.headers,
            cfg.body.clone(),
        )?)
    } else {
        None
    };
    let request = Request::new(
        &cfg.method,
        &target,
        &cfg.headers,
        cfg.body.clone(),
        cfg.keepalive,
    )?;
    let pipeline = cfg.pipeline.max(1);
    if pipeline > 1 && cfg.rate.is_some() {
        return Err(
            "--pipeline cannot be combined with an open-model rate (-q/--rate-stages)".into(),
        );
    }
    // One batch per depth, so the tail of a -n budget can still go out in one write.
    let batches = if pipeline > 1 {
        (1..=pipeline)
            .map(|d| PipelineBatch::new(&request, d))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    let connections = cfg.connections.max(1);
    let threads = match cfg.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .min(connections);

    let mut shared = Shared {
        target,
        addrs,
        tls,
        request,
        batches,
        h2_request,
        h2_streams: cfg.h2_streams.max(1),
        rate: cfg.rate.clone(),
        workers: threads,
        max_conns_per_worker: 0,
        timeout: cfg.timeout,
        connect_timeout: cfg.connect_timeout,
        keepalive: cfg.keepalive,
        ctl: ctl.clone(),
        start: Instant::now(),
        end: None,
    };
    shared.max_conns_per_worker = cfg.max_connections.max(connections).div_ceil(threads);

    let started_wall = SystemTime::now();
    let start = Instant::now();
    // The schedule's own end (rate stages) and -z both end the run; whichever is first.
    let duration = match (cfg.duration, cfg.rate.as_ref().and_then(|r| r.duration())) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    shared.start = start;
    shared.end = duration.map(|d| start + d);
    let shared = Arc::new(shared);
    let (tx, rx) = mpsc::channel();
    let mut joins = Vec::new();
    for w in 0..threads {
        let conns = split(connections as u64, threads, w) as usize;
        let quota = cfg.requests.map(|n| split(n, threads, w));
        let (shared, tx) = (shared.clone(), tx.clone());
        let j = std::thread::Builder::new()
            .name(format!("volley-worker-{w}"))
            .spawn(move || worker::worker(w, shared, conns, quota, tx))
            .map_err(|e| format!("cannot start worker thread: {e}"))?;
        joins.push(j);
    }
    // The monitor is worker number `threads`; it stops once every load worker is done.
    let monitor_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut sampler = None;
    if !monitor.specs.is_empty() {
        let tx = tx.clone();
        let send = move |interval, snap, tick: Option<volley_monitor::Tick>| {
            for n in tick.iter().flat_map(|t| &t.notes) {
                eprintln!("volley: monitor: {n}");
            }
            let _ = tx.send(Msg::Snapshot {
                worker: threads,
                interval,
                snap,
            });
        };
        let (specs, every, stop) = (monitor.specs.clone(), monitor.interval, &monitor_stop);
        sampler = Some(
            volley_monitor::spawn_sampler(specs, every, start, stop.clone(), send)
                .map_err(|e| format!("cannot start the monitor thread: {e}"))?,
        );
    }
    drop(tx);

    let deadline = shared.end;
    let workers = threads + usize::from(sampler.is_some());
    let mut agg = Aggregator::new(workers, volley_metrics::series::DEFAULT_MAX_POINTS);
    let mut done = 0;
    let mut last_reported = 0;
    let mut last_end: Option<Instant> = None;
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
            Ok(Msg::Done {
                worker,
                last_end: t,
            }) => {
                last_end = last_end.max(t);
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
            on_progress(&progress(&agg, start, duration));
        }
    }
    // The load ends when the last in-flight request ended, not when the coordinator noticed;
    // past a -z deadline, requests cut at it do not stretch the time the rates are over.
    let elapsed = match duration {
        Some(d) if start.elapsed() > d => last_end
            .map_or(d, |t| (t - start).max(d))
            .min(start.elapsed()),
        _ => start.elapsed(),
    };
    for j in joins {
        let _ = j.join();
    }
    if let Some(s) = sampler {
        // Its last snapshot (the end value) is in the channel once the thread is gone.
        monitor_stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = s.join();
        while let Ok(Msg::Snapshot {
            worker,
            interval,
            snap,
        }) = rx.try_recv()
        {
            agg.add(worker, interval, snap);
        }
        agg.worker_done(threads);
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
        pipeline: cfg.pipeline.max(1),
        rate: cfg.rate.as_ref(),
        max_connections: cfg
            .rate
            .as_ref()
            .map(|_| cfg.max_connections.max(connections)),
        http2: cfg.http2,
        h2_streams: cfg.http2.then_some(cfg.h2_streams.max(1)),
    };
    let meta = RunMeta::new("http", cfg.url.clone(), cfg.command.clone())
        .timed(started_wall, ended_wall, elapsed, ctl.was_interrupted())
        .with_peak_rss(sys::peak_rss_bytes());
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
        // The message already names the host ("cannot resolve 'x': ...").
        .map_err(|e| e.message)?;
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
    /// `batches[d - 1]` pipelines `d` requests; empty without pipelining.
    batches: Vec<PipelineBatch>,
    /// Set in HTTP/2 mode.
    h2_request: Option<H2Request>,
    h2_streams: usize,
    rate: Option<RateSchedule>,
    workers: usize,
    max_conns_per_worker: usize,
    timeout: Duration,
    connect_timeout: Duration,
    keepalive: bool,
    ctl: RunControl,
    start: Instant,
    /// No request may be *due* at or after this instant (-z or the end of the stages).
    end: Option<Instant>,
}

mod worker;
pub use worker::DEADLINE_GRACE;

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
