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
use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use volley_http::{
    Body, BodyMode, ConnectTimings, Connection, H2Connection, H2Request, HttpError, PipelineBatch,
    Request, Response, Scheme, Target, TlsOptions,
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
            .spawn(move || worker(w, shared, conns, quota, tx))
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
            on_progress(&progress(&agg, start, duration));
        }
    }
    // The load ends when the last in-flight request ended, not when the coordinator noticed.
    let elapsed = start.elapsed();
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

/// Per-worker state: the shared config plus this thread's recorder and budget.
struct Worker {
    id: usize,
    shared: Arc<Shared>,
    rec: RefCell<Recorder>,
    h: Handles,
    /// Responses by status code, resolved on first use (index = status).
    status: RefCell<Vec<Option<Handle>>>,
    /// Requests this worker may still start (`-n`), or None for unbounded.
    quota: Cell<Option<u64>>,
    next_addr: Cell<usize>,
    /// Open model: this worker's next arrival index (it owns every `workers`-th one).
    next_arrival: Cell<u64>,
    /// Open model: live connection tasks, to grow the pool when all are busy.
    live_conns: Cell<usize>,
    /// Signalled when the last connection task ends.
    all_done: tokio::sync::Notify,
    /// Open model: when this worker stopped claiming arrivals (for counting dropped ones).
    stopped_at: Cell<Option<Instant>>,
}

/// Handles of the series every request records into, resolved once per worker.
struct Handles {
    duration: Handle,
    waiting: Handle,
    corrected: Handle,
    connecting: Handle,
    tls: Handle,
    failed: Handle,
    sent: Handle,
    received: Handle,
    conns: Handle,
    missed: Handle,
}

/// When (and whether) the next request may start.
#[derive(Clone, Copy)]
struct Slot {
    /// Open model: the instant it was due.
    due: Option<Instant>,
    /// Open model: the slot was claimed after it was due (no connection was free).
    late: bool,
}

/// Lateness we forgive as timer granularity (tokio's timer wheel ticks in milliseconds)
/// rather than count as a missed start.
const TIMER_SLACK: Duration = Duration::from_millis(2);

impl Worker {
    fn new(id: usize, shared: Arc<Shared>, quota: Option<u64>) -> Worker {
        let mut rec = Recorder::new();
        let mut t = |name: &str| rec.handle(MetricKey::new(name), MetricKind::Trend, Unit::Time);
        let (duration, waiting, corrected, connecting, tls) = (
            t("http_req_duration"),
            t("http_req_waiting"),
            t("http_req_corrected"),
            t("http_req_connecting"),
            t("http_req_tls_handshaking"),
        );
        let mut c = |name: &str, kind, unit| rec.handle(MetricKey::new(name), kind, unit);
        let failed = c("http_req_failed", MetricKind::Rate, Unit::Default);
        let sent = c("data_sent", MetricKind::Counter, Unit::Data);
        let received = c("data_received", MetricKind::Counter, Unit::Data);
        let conns = c("connections_opened", MetricKind::Counter, Unit::Default);
        let missed = c("missed_starts", MetricKind::Counter, Unit::Default);
        Worker {
            id,
            shared,
            rec: RefCell::new(rec),
            h: Handles {
                duration,
                waiting,
                corrected,
                connecting,
                tls,
                failed,
                sent,
                received,
                conns,
                missed,
            },
            status: RefCell::new(vec![None; 1000]),
            quota: Cell::new(quota),
            next_addr: Cell::new(id),
            next_arrival: Cell::new(0),
            live_conns: Cell::new(0),
            all_done: tokio::sync::Notify::new(),
            stopped_at: Cell::new(None),
        }
    }

    /// Claim up to `want` requests from the `-n` budget; 0 means stop.
    #[inline]
    fn take(&self, want: u64) -> u64 {
        if self.shared.ctl.is_stopped() {
            return 0;
        }
        match self.quota.get() {
            None => want,
            Some(n) => {
                let k = n.min(want);
                self.quota.set(Some(n - k));
                k
            }
        }
    }

    /// Wait for this connection's next start. Closed model: now, while budget and time are
    /// left. Open model: claim the next due arrival and sleep until it is due.
    async fn next_slot(&self) -> Option<Slot> {
        let s = &self.shared;
        let Some(rate) = &s.rate else {
            return (self.take(1) == 1).then_some(Slot {
                due: None,
                late: false,
            });
        };
        if s.ctl.is_stopped() {
            // Noticed a little after the deadline: nothing due after it counts as dropped.
            let now = Instant::now();
            self.mark_stopped(s.end.map_or(now, |end| now.min(end)));
            return None;
        }
        let local = self.next_arrival.get();
        let at = rate.arrival(local * s.workers as u64 + self.id as u64)?;
        let due = s.start + Duration::from_secs_f64(at);
        if let Some(end) = s.end.filter(|end| due >= *end) {
            self.mark_stopped(end);
            return None;
        }
        if self.take(1) == 0 {
            return None;
        }
        self.next_arrival.set(local + 1);
        let now = Instant::now();
        let late = now > due + TIMER_SLACK;
        if due > now {
            tokio::time::sleep_until(due.into()).await;
        }
        Some(Slot {
            due: Some(due),
            late,
        })
    }

    fn mark_stopped(&self, at: Instant) {
        if self.stopped_at.get().is_none_or(|t| at < t) {
            self.stopped_at.set(Some(at));
        }
    }

    /// Open model: arrivals of this worker that fell due before it stopped but never started
    /// (k6's dropped_iterations); recorded once, when the worker ends.
    fn record_dropped(&self) {
        let (Some(rate), Some(at)) = (&self.shared.rate, self.stopped_at.get()) else {
            return;
        };
        let due_total = rate.arrivals_before((at - self.shared.start).as_secs_f64());
        let (w, n) = (self.id as u64, self.shared.workers as u64);
        let mine = if due_total > w {
            (due_total - w).div_ceil(n)
        } else {
            0
        };
        let dropped = mine.saturating_sub(self.next_arrival.get());
        let mut rec = self.rec.borrow_mut();
        let h = rec.handle(
            MetricKey::new("dropped_requests"),
            MetricKind::Counter,
            Unit::Default,
        );
        rec.add(h, dropped as f64);
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

    /// Wire bytes measured on a socket rather than per request (HTTP/2 multiplexing).
    fn record_wire(&self, sent: u64, received: u64) {
        let mut rec = self.rec.borrow_mut();
        rec.add(self.h.sent, sent as f64);
        rec.add(self.h.received, received as f64);
    }

    /// `sent_at`: when this request's send began (for the corrected latency).
    fn record_response(&self, r: &Response, slot: Slot, sent_at: Instant) {
        self.record_exchange(r, slot, sent_at);
        let mut rec = self.rec.borrow_mut();
        rec.add(self.h.sent, r.bytes_sent as f64);
        rec.add(self.h.received, r.bytes_received as f64);
    }

    /// Everything about a response except its bytes.
    fn record_exchange(&self, r: &Response, slot: Slot, sent_at: Instant) {
        let status = self.status_handle(r.status);
        let mut rec = self.rec.borrow_mut();
        rec.add(status, 1.0);
        rec.trend_us(self.h.duration, r.timings.duration().as_micros() as u64);
        rec.trend_us(self.h.waiting, r.timings.waiting.as_micros() as u64);
        if let Some(due) = slot.due {
            // Measured from when it was due if it started late for want of a connection;
            // a request sent on time (within timer slack) is measured from its send.
            let from = if slot.late { due } else { sent_at };
            rec.trend_us(
                self.h.corrected,
                (sent_at - from + r.timings.duration()).as_micros() as u64,
            );
            if slot.late {
                rec.add(self.h.missed, 1.0);
            }
        }
        // k6's default expected statuses: 200..=399.
        rec.rate(self.h.failed, !(200..400).contains(&r.status));
    }

    fn record_error(&self, e: &HttpError, slot: Slot) {
        self.record_failure(e, slot);
        self.record_wire(e.bytes_sent, e.bytes_received);
    }

    /// Everything about a failed request except its bytes.
    fn record_failure(&self, e: &HttpError, slot: Slot) {
        let mut rec = self.rec.borrow_mut();
        // Errors are few; resolving their handle by key here keeps the success path lean.
        let h = rec.handle(
            MetricKey::tagged("http_reqs", &[("error", e.class.as_str())]),
            MetricKind::Counter,
            Unit::Default,
        );
        rec.add(h, 1.0);
        rec.rate(self.h.failed, true);
        if slot.late {
            rec.add(self.h.missed, 1.0);
        }
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

fn worker(id: usize, shared: Arc<Shared>, conns: usize, quota: Option<u64>, tx: mpsc::Sender<Msg>) {
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
    let start = shared.start;
    let w = Rc::new(Worker::new(id, shared, quota));
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
        for _ in 0..conns {
            spawn_connection(&w);
        }
        // Connection tasks may spawn more (open model), so wait until the live count drops to
        // zero (the last task to end wakes us) or a hard stop; the slow poll only serves the
        // latter, so an idle worker costs almost no CPU.
        while w.live_conns.get() > 0 && !w.shared.ctl.is_hard_stopped() {
            let _ = tokio::time::timeout(Duration::from_millis(250), w.all_done.notified()).await;
        }
        ticker.abort();
        w.record_dropped();
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

fn spawn_connection(w: &Rc<Worker>) {
    w.live_conns.set(w.live_conns.get() + 1);
    let w = w.clone();
    tokio::task::spawn_local(async move {
        if w.shared.h2_request.is_some() {
            h2_connection(&w).await;
        } else if w.shared.batches.is_empty() {
            connection_loop(&w).await;
        } else {
            pipelined_loop(&w).await;
        }
        w.live_conns.set(w.live_conns.get() - 1);
        if w.live_conns.get() == 0 {
            w.all_done.notify_one();
        }
    });
}

/// Make sure `conn` is open; on failure the error is recorded against `slot`.
async fn ensure_connected(w: &Worker, conn: &mut Option<Connection>, slot: Slot) -> bool {
    if conn.as_ref().is_some_and(|c| c.is_reusable()) {
        return true;
    }
    let s = &w.shared;
    match Connection::connect(w.addr(), &s.target, s.tls.as_ref(), s.connect_timeout).await {
        Ok((c, t)) => {
            w.record_connect(&t);
            *conn = Some(c);
            true
        }
        Err(e) => {
            w.record_error(&e, slot);
            *conn = None;
            false
        }
    }
}

/// One connection, one request at a time: connect when needed, send, record, repeat.
async fn connection_loop(w: &Rc<Worker>) {
    let s = &w.shared;
    let mut conn: Option<Connection> = None;
    while let Some(slot) = w.next_slot().await {
        // Every connection busy when this one claimed a late slot: grow the pool.
        if slot.late && w.live_conns.get() < s.max_conns_per_worker {
            spawn_connection(w);
        }
        let sent_at = Instant::now();
        if !ensure_connected(w, &mut conn, slot).await {
            continue;
        }
        let Some(c) = conn.as_mut() else { continue };
        match c.send(&s.request, BodyMode::Discard, s.timeout).await {
            Ok(r) => {
                w.record_response(&r, slot, sent_at);
                if !r.keep_alive || !s.keepalive {
                    conn = None;
                }
            }
            Err(e) => {
                w.record_error(&e, slot);
                conn = None;
            }
        }
    }
}

/// HTTP/2: one connection carrying `h2_streams` concurrent request loops. Bytes come from the
/// socket's counters (exact, including connection-level frames), since multiplexed frames
/// cannot be attributed to single requests.
async fn h2_connection(w: &Rc<Worker>) {
    let s = &w.shared;
    let Some(req) = s.h2_request.as_ref() else {
        return;
    };
    while !s.ctl.is_stopped() {
        let (conn, t, driver) =
            match H2Connection::connect(w.addr(), &s.target, s.tls.as_ref(), s.connect_timeout)
                .await
            {
                Ok(c) => c,
                Err(e) => {
                    // A failed connect costs one request of the budget, as in HTTP/1.1.
                    match w.next_slot().await {
                        Some(slot) => w.record_error(&e, slot),
                        None => return,
                    }
                    continue;
                }
            };
        let driver = tokio::task::spawn_local(driver);
        w.record_connect(&t);
        let meter = conn.wire_meter();
        // From zero: the preface and SETTINGS exchange are wire bytes too.
        let seen = Rc::new(Cell::new((0, 0)));
        let flush = |seen: &Cell<(u64, u64)>| {
            let (s1, r1) = meter.get();
            let (s0, r0) = seen.replace((s1, r1));
            w.record_wire(s1 - s0, r1 - r0);
        };
        let streams: Vec<_> = (0..s.h2_streams)
            .map(|_| {
                let (w, conn, seen, meter) = (w.clone(), conn.clone(), seen.clone(), meter.clone());
                let req = req.clone();
                tokio::task::spawn_local(async move {
                    while let Some(slot) = w.next_slot().await {
                        let sent_at = Instant::now();
                        let res = conn.send(&req, BodyMode::Discard, w.shared.timeout).await;
                        let (s1, r1) = meter.get();
                        let (s0, r0) = seen.replace((s1, r1));
                        w.record_wire(s1 - s0, r1 - r0);
                        match res {
                            Ok(r) => w.record_exchange(&r, slot, sent_at),
                            Err(e) => {
                                w.record_failure(&e, slot);
                                if conn.is_closed() {
                                    return;
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        for st in streams {
            let _ = st.await;
        }
        let closed = conn.is_closed();
        // Dropping the last handle closes the connection (GOAWAY); count those bytes too.
        drop(conn);
        let _ = tokio::time::timeout(Duration::from_secs(1), driver).await;
        flush(&seen);
        if !closed {
            // Every stream loop ended because the run is over.
            return;
        }
    }
}

/// HTTP/1.1 pipelining, as wrk does it: write a batch of requests in one syscall, read their
/// responses in order, repeat. Each response's latency runs from the batch's write.
async fn pipelined_loop(w: &Rc<Worker>) {
    let s = &w.shared;
    let depth = s.batches.len() as u64;
    let none = Slot {
        due: None,
        late: false,
    };
    let mut conn: Option<Connection> = None;
    loop {
        let n = w.take(depth) as usize;
        if n == 0 {
            break;
        }
        if !ensure_connected(w, &mut conn, none).await {
            // The whole batch failed to start: count every request in it.
            for _ in 1..n {
                w.record_error(
                    &HttpError::new(volley_http::ErrorClass::Other, "connect failed"),
                    none,
                );
            }
            continue;
        }
        let Some(c) = conn.as_mut() else { continue };
        let sent_at = Instant::now();
        let batch = &s.batches[n - 1];
        let exchange = async {
            c.write_batch(batch).await.map_err(|e| (e, 0usize))?;
            for i in 0..n {
                let r = c
                    .read_response(batch.is_head(), BodyMode::Discard)
                    .await
                    .map_err(|e| (e, i))?;
                w.record_response(&r, none, sent_at);
                if !r.keep_alive && i + 1 < n {
                    let e = HttpError::new(
                        volley_http::ErrorClass::Reset,
                        "server closed a pipelined connection",
                    );
                    return Err((e, i + 1));
                }
            }
            Ok(())
        };
        match tokio::time::timeout(s.timeout, exchange).await {
            Ok(Ok(())) => {
                if !c.is_reusable() || !s.keepalive {
                    conn = None;
                }
            }
            Ok(Err((e, done))) => {
                // The failing request carries the bytes; the rest of the batch failed with it.
                w.record_error(&e, none);
                let rest = HttpError::new(e.class, e.message.clone());
                for _ in done + 1..n {
                    w.record_error(&rest, none);
                }
                conn = None;
            }
            Err(_) => {
                let e = HttpError::new(
                    volley_http::ErrorClass::Timeout,
                    "pipelined batch timed out",
                );
                // Which responses arrived was recorded already; count the missing ones.
                let answered = c.requests_sent() as usize - c.in_flight();
                let missing = n.saturating_sub(answered % n.max(1)).max(1);
                for _ in 0..missing.min(n) {
                    w.record_error(&e, none);
                }
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
