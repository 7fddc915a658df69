//! Quick mode as a plan for the one scheduler: [`plan`] turns a [`QuickConfig`] into a
//! [`VuPlan`] (one self-paced `per-vu-iterations` scenario: a VU per connection, one
//! iteration each) and a [`QuickFactory`] that makes the bodies; the factory then turns the
//! scheduler's [`VuRunResult`] into quick mode's [`RunResult`] (its options, its elapsed-time
//! rule) and a tick into [`Progress`].

use super::worker::{QuickBody, QuickWorker};
use super::{MonitorPlan, Progress, QuickConfig};
use crate::executor::{Executor, PerVuIterations, Scenario};
use crate::rate::RateSchedule;
use crate::sys;
use crate::vus::{Tick, VuFactory, VuPlan, VuRunResult, WorkerEnv};
use serde::Serialize;
use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use volley_http::{Body, H2Request, PipelineBatch, Request, Scheme, Target};
use volley_metrics::{names, RunMeta, RunResult};

/// The run's name in its [`RunMeta`] (and the result file's `meta.kind`).
pub const RUN_KIND: &str = "http";

/// The iteration limit of a run without `-z` (a `-n` count or Ctrl-C ends it): the longest
/// duration Volley accepts anywhere.
const NO_DEADLINE: Duration = Duration::from_secs(8760 * 3600);

/// Makes quick mode's bodies (see [`plan`]), and turns the scheduler's result into quick
/// mode's.
pub struct QuickFactory {
    s: Arc<Shared>,
    /// Tells this run's workers from an earlier run's on the same thread.
    run: u64,
}

/// What every worker reads: the resolved target, the prepared requests, the pacing.
pub(super) struct Shared {
    cfg: QuickConfig,
    pub(super) target: Target,
    pub(super) addrs: Vec<SocketAddr>,
    pub(super) tls: Option<Arc<rustls::ClientConfig>>,
    pub(super) request: Request,
    /// `batches[d - 1]` pipelines `d` requests; empty without pipelining.
    pub(super) batches: Vec<PipelineBatch>,
    /// Set in HTTP/2 mode.
    pub(super) h2_request: Option<H2Request>,
    pub(super) h2_streams: usize,
    pub(super) rate: Option<RateSchedule>,
    pub(super) workers: usize,
    pub(super) max_conns_per_worker: usize,
    pub(super) timeout: Duration,
    pub(super) connect_timeout: Duration,
    pub(super) keepalive: bool,
    connections: usize,
    /// -z or the end of the rate stages, whichever is first: no request is due after it.
    pub(super) duration: Option<Duration>,
    /// When the load started (the scenario's start, set by the first iteration).
    pub(super) begin: OnceLock<Instant>,
    /// When the last request that ended after the stop ended (for [`QuickFactory::elapsed`]).
    pub(super) last_end: Mutex<Option<Instant>>,
}

static RUNS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's [`QuickWorker`] of the run going on (weak: it ends with its last VU).
    static WORKER: RefCell<Option<(u64, Weak<QuickWorker>)>> = const { RefCell::new(None) };
}

impl VuFactory for QuickFactory {
    type Body = QuickBody;

    fn create(
        &self,
        env: &WorkerEnv,
        _id: u64,
        _scenario: Option<usize>,
    ) -> Result<QuickBody, String> {
        let found = WORKER.with(|c| match &*c.borrow() {
            Some((run, w)) if *run == self.run => w.upgrade(),
            _ => None,
        });
        let w = match found {
            Some(w) => w,
            None => {
                let quota = self
                    .s
                    .cfg
                    .requests
                    .map(|n| split(n, self.s.workers, env.worker));
                let w = Rc::new(QuickWorker::new(
                    env.worker,
                    self.s.clone(),
                    env.ctl().clone(),
                    env.recorder.clone(),
                    env.scenarios.clone(),
                    quota,
                ));
                WORKER.with(|c| *c.borrow_mut() = Some((self.run, Rc::downgrade(&w))));
                w
            }
        };
        Ok(QuickBody { w })
    }
}

/// Worker threads for `connections` (0 asked: one per available core); never more threads
/// than connections.
pub(crate) fn worker_threads(asked: usize, connections: usize) -> usize {
    match asked {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .min(connections)
}

/// When the load ends: the schedule's own end (rate stages) and -z both end it, whichever is
/// first.
pub(crate) fn load_end(
    duration: Option<Duration>,
    rate: Option<&RateSchedule>,
) -> Option<Duration> {
    match (duration, rate.and_then(|r| r.duration())) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A quick mode's plan: one self-paced `per-vu-iterations` scenario, a VU per connection
/// whose one iteration drives it until `max_duration` at most.
pub(crate) fn self_paced_plan(
    name: &str,
    connections: usize,
    max_duration: Duration,
    threads: usize,
    monitor: &MonitorPlan,
) -> VuPlan {
    let mut scenario = Scenario::new(
        name,
        Executor::PerVuIterations(PerVuIterations {
            vus: connections as u64,
            iterations: 1,
            max_duration,
        }),
    );
    scenario.self_paced = true;
    // The token's grace after Ctrl-C (the -z deadline's shorter grace is the body's own).
    scenario.graceful_stop = crate::control::INTERRUPT_GRACE;
    VuPlan {
        scenarios: vec![scenario],
        threads,
        iteration_tags: Default::default(),
        scenario_tag: false,
        monitor: monitor.clone(),
        ..Default::default()
    }
}

/// A self-paced quick run's result from the scheduler's (an init failure is an error): meta
/// `kind` and `name`, rates over `load` (the load's length, to `-z` at most: the grace after
/// it only collects answers), the resolved `options`.
pub(crate) fn self_paced_result(
    (kind, name, command): (&str, String, Vec<String>),
    load: Option<Duration>,
    options: serde_json::Value,
    r: VuRunResult,
) -> Result<RunResult, String> {
    if let Some((_, e)) = &r.aborted {
        return Err(e.clone());
    }
    let elapsed = load.map_or(r.elapsed, |d| r.elapsed.min(d));
    let meta = RunMeta::new(kind, name, command)
        .timed(r.started, r.ended, elapsed, r.interrupted)
        .with_peak_rss(sys::peak_rss_bytes());
    Ok(RunResult::new(meta, options, r.metrics, r.series))
}

/// Share `total` between `parts` as evenly as possible; part `i` gets its slice.
pub(crate) fn split(total: u64, parts: usize, i: usize) -> u64 {
    let parts = parts as u64;
    total / parts + u64::from((i as u64) < total % parts)
}

/// Quick mode as a plan and a body factory for [`crate::vus::run_vus_with`]. Errors are setup
/// failures (bad TLS files, unresolvable host, incompatible flags).
pub fn plan(
    cfg: &QuickConfig,
    monitor: &MonitorPlan,
) -> Result<(VuPlan, Arc<QuickFactory>), String> {
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
    // One batch per depth, so the tail of a -n budget (or the requests due now, in the open
    // model) can still go out in one write.
    let batches = if pipeline > 1 {
        (1..=pipeline)
            .map(|d| PipelineBatch::new(&request, d))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    let connections = cfg.connections.max(1);
    let threads = worker_threads(cfg.threads, connections);
    let duration = load_end(cfg.duration, cfg.rate.as_ref());
    let shared = Arc::new(Shared {
        cfg: cfg.clone(),
        target,
        addrs,
        tls,
        request,
        batches,
        h2_request,
        h2_streams: cfg.h2_streams.max(1),
        rate: cfg.rate.clone(),
        workers: threads,
        max_conns_per_worker: cfg.max_connections.max(connections).div_ceil(threads),
        timeout: cfg.timeout,
        connect_timeout: cfg.connect_timeout,
        keepalive: cfg.keepalive,
        connections,
        duration,
        begin: OnceLock::new(),
        last_end: Mutex::new(None),
    });
    let factory = Arc::new(QuickFactory {
        s: shared,
        run: RUNS.fetch_add(1, Ordering::Relaxed),
    });
    let plan = self_paced_plan(
        "quick",
        connections,
        duration.unwrap_or(NO_DEADLINE),
        threads,
        monitor,
    );
    Ok((plan, factory))
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

impl QuickFactory {
    /// The options as resolved, for the result file (`options`).
    pub fn options(&self) -> serde_json::Value {
        let (cfg, s) = (&self.s.cfg, &self.s);
        let opts = ResolvedOptions {
            url: &cfg.url,
            method: &cfg.method,
            headers: &cfg.headers,
            body_bytes: match &cfg.body {
                Body::Empty => 0,
                Body::Bytes(b) => b.len() as u64,
                Body::File { len, .. } => *len,
            },
            connections: s.connections,
            duration_s: cfg.duration.map(|d| d.as_secs_f64()),
            requests: cfg.requests,
            timeout_s: cfg.timeout.as_secs_f64(),
            connect_timeout_s: cfg.connect_timeout.as_secs_f64(),
            keepalive: cfg.keepalive,
            insecure: cfg.tls.insecure,
            cacert: cfg.tls.cacert.as_ref().map(|p| p.display().to_string()),
            threads: s.workers,
            pipeline: cfg.pipeline.max(1),
            rate: cfg.rate.as_ref(),
            max_connections: cfg
                .rate
                .as_ref()
                .map(|_| cfg.max_connections.max(s.connections)),
            http2: cfg.http2,
            h2_streams: cfg.http2.then_some(cfg.h2_streams.max(1)),
        };
        serde_json::to_value(opts).unwrap_or_default()
    }

    /// The time the rates are over: past a -z deadline, requests cut at it do not stretch it
    /// (the load ends when the last request in flight ended, not when the cut came).
    pub fn elapsed(&self, r: &VuRunResult) -> Duration {
        let last_end = *self.s.last_end.lock().unwrap_or_else(|e| e.into_inner());
        match (self.s.duration, self.s.begin.get()) {
            (Some(d), Some(begin)) if r.elapsed > d => last_end
                .map_or(d, |t| t.saturating_duration_since(*begin).max(d))
                .min(r.elapsed),
            _ => r.elapsed,
        }
    }

    /// The run's metadata (`kind` "http", the URL as its name).
    pub fn meta(&self, r: &VuRunResult) -> RunMeta {
        RunMeta::new(RUN_KIND, self.s.cfg.url.clone(), self.s.cfg.command.clone())
            .timed(r.started, r.ended, self.elapsed(r), r.interrupted)
            .with_peak_rss(sys::peak_rss_bytes())
    }

    /// Quick mode's result from the scheduler's (an init failure is an error).
    pub fn result(&self, r: VuRunResult) -> Result<RunResult, String> {
        if let Some((_, e)) = &r.aborted {
            return Err(e.clone());
        }
        let meta = self.meta(&r);
        Ok(RunResult::new(meta, self.options(), r.metrics, r.series))
    }

    /// The live numbers of a tick (the last complete second's rate and p99).
    pub fn progress(&self, tick: &Tick<'_>) -> Progress {
        let agg = tick.agg;
        let (rate, p99_ms) = match agg.last_point() {
            Some(p) => {
                let rate = p.counter_sum(names::HTTP_REQS) / p.w.max(1) as f64;
                let p99 = match p.get(names::HTTP_REQ_DURATION, &Default::default()) {
                    Some(volley_metrics::series::Stat::Trend { p99, .. }) => *p99,
                    _ => 0.0,
                };
                (rate, p99)
            }
            None => (0.0, 0.0),
        };
        let errors = agg
            .totals()
            .filter(|(d, _)| d.key.name == names::HTTP_REQS && d.key.tags.contains_key("error"))
            .map(|(_, a)| a.samples())
            .sum();
        Progress {
            elapsed: tick.elapsed,
            remaining: self.s.duration.map(|d| d.saturating_sub(tick.elapsed)),
            requests: agg.counter_sum(names::HTTP_REQS) as u64,
            rate,
            p99_ms,
            errors,
        }
    }
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
