//! gRPC quick mode as a plan for the one scheduler: [`plan`] turns a [`GrpcConfig`] into a
//! [`VuPlan`] (one self-paced `per-vu-iterations` scenario: a VU per connection, one
//! iteration each) and a [`GrpcFactory`] that makes the bodies; the factory then turns the
//! scheduler's [`VuRunResult`] into the run's [`RunResult`] (meta `kind` "grpc").
//!
//! The `-n` budget and the open model's arrivals are run-wide atomics: callers on every
//! worker claim from them, so the count is exact and calls due go to whichever caller is free.

use super::conn::GrpcBody;
use super::{GrpcConfig, METRICS};
use crate::quick::MonitorPlan;
use crate::vus::{VuFactory, VuPlan, VuRunResult, WorkerEnv};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use volley_metrics::RunResult;

/// The run's name in its [`RunMeta`] (and the result file's `meta.mode`).
pub const RUN_KIND: &str = "grpc";

/// The iteration limit of a run without `-z` (a `-n` count or Ctrl-C ends it).
const NO_DEADLINE: Duration = Duration::from_secs(8760 * 3600);

/// What every connection and caller reads (and the run-wide counters they share).
pub(super) struct Shared {
    pub(super) cfg: GrpcConfig,
    pub(super) connect: volley_grpc::call::ConnectOptions,
    /// -z or the end of the rate stages, whichever is first.
    pub(super) duration: Option<Duration>,
    /// When the load started (the scenario's start, set by the first connection).
    pub(super) begin: OnceLock<Instant>,
    /// Calls that may still start (`-n`; `u64::MAX` without one).
    pub(super) budget: AtomicU64,
    /// Open model: the next arrival to claim.
    pub(super) next_arrival: AtomicU64,
    /// Open model: arrivals that started.
    pub(super) started: AtomicU64,
    /// Open model: when claiming stopped for the deadline or a stop (for dropped calls).
    pub(super) stopped_at: Mutex<Option<Instant>>,
    /// Connections whose iteration has not ended (the last one records dropped calls).
    pub(super) live: AtomicUsize,
}

impl Shared {
    /// Take one call from the budget; false when it is spent.
    #[inline]
    pub(super) fn take(&self) -> bool {
        self.budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }

    pub(super) fn mark_stopped(&self, at: Instant) {
        let mut s = self.stopped_at.lock().unwrap_or_else(|e| e.into_inner());
        if s.is_none_or(|t| at < t) {
            *s = Some(at);
        }
    }

    /// Open model: arrivals due before the stop that never started.
    pub(super) fn dropped(&self) -> u64 {
        let (Some(rate), Some(begin)) = (&self.cfg.rate, self.begin.get()) else {
            return 0;
        };
        let Some(at) = *self.stopped_at.lock().unwrap_or_else(|e| e.into_inner()) else {
            return 0;
        };
        let due = rate.arrivals_before(at.saturating_duration_since(*begin).as_secs_f64());
        due.saturating_sub(self.started.load(Ordering::Relaxed))
    }
}

/// Makes the connections' bodies and shapes the result.
pub struct GrpcFactory {
    pub(super) s: Arc<Shared>,
}

impl VuFactory for GrpcFactory {
    type Body = GrpcBody;

    fn create(
        &self,
        env: &WorkerEnv,
        id: u64,
        _scenario: Option<usize>,
    ) -> Result<GrpcBody, String> {
        Ok(GrpcBody::new(
            self.s.clone(),
            env,
            id.saturating_sub(1) as usize,
        ))
    }
}

/// gRPC quick mode as a plan and a body factory for [`crate::vus::run_vus_with`].
pub fn plan(cfg: &GrpcConfig, monitor: &MonitorPlan) -> Result<(VuPlan, Arc<GrpcFactory>), String> {
    if cfg.concurrency == 0 || cfg.connections == 0 {
        return Err("concurrency and connections must be at least 1".into());
    }
    // Never more connections than callers: a connection without one would idle.
    let connections = cfg.connections.min(cfg.concurrency);
    let mut cfg = cfg.clone();
    cfg.connections = connections;
    let threads = crate::quick::worker_threads(cfg.threads, connections);
    let duration = crate::quick::load_end(cfg.duration, cfg.rate.as_ref());
    let connect = volley_grpc::call::ConnectOptions {
        tls: cfg.tls.clone(),
        timeout: cfg.connect_timeout,
        authority: cfg.authority.clone(),
        user_agent: Some(concat!("volley/", env!("CARGO_PKG_VERSION")).to_owned()),
        ..Default::default()
    };
    let shared = Arc::new(Shared {
        budget: AtomicU64::new(cfg.requests.unwrap_or(u64::MAX)),
        cfg,
        connect,
        duration,
        begin: OnceLock::new(),
        next_arrival: AtomicU64::new(0),
        started: AtomicU64::new(0),
        stopped_at: Mutex::new(None),
        live: AtomicUsize::new(connections),
    });
    // Past -z the body's own grace cuts what is left; the scheduler's limit only backs it.
    let max = duration.map_or(NO_DEADLINE, |d| d + crate::quick::DEADLINE_GRACE);
    let plan = crate::quick::self_paced_plan("grpc", connections, max, threads, monitor);
    Ok((plan, Arc::new(GrpcFactory { s: shared })))
}

/// The options as resolved, in the result file.
#[derive(Serialize)]
struct ResolvedOptions<'a> {
    addr: &'a str,
    call: &'a str,
    metadata: Vec<&'a str>,
    message_bytes: usize,
    request: &'a serde_json::Value,
    concurrency: usize,
    connections: usize,
    duration_s: Option<f64>,
    requests: Option<u64>,
    rate: Option<&'a crate::RateSchedule>,
    deadline_s: f64,
    connect_timeout_s: f64,
    tls: bool,
    metrics: &'a [&'a str],
}

impl GrpcFactory {
    pub fn options(&self) -> serde_json::Value {
        let c = &self.s.cfg;
        serde_json::to_value(ResolvedOptions {
            addr: &c.addr,
            call: &c.path,
            metadata: c.metadata.iter().map(|(k, _)| k.as_str()).collect(),
            message_bytes: c.message.len(),
            request: &c.describe,
            concurrency: c.concurrency,
            connections: c.connections,
            duration_s: c.duration.map(|d| d.as_secs_f64()),
            requests: c.requests,
            rate: c.rate.as_ref(),
            deadline_s: c.deadline.as_secs_f64(),
            connect_timeout_s: c.connect_timeout.as_secs_f64(),
            tls: c.tls.is_some(),
            metrics: METRICS,
        })
        .unwrap_or_default()
    }

    /// The run's name: `ADDR/pkg.Service/Method`.
    pub fn name(&self) -> String {
        format!("{}{}", self.s.cfg.addr, self.s.cfg.path)
    }

    /// The run's result (an init failure is an error).
    pub fn result(&self, r: VuRunResult) -> Result<RunResult, String> {
        let c = &self.s.cfg;
        let who = (RUN_KIND, self.name(), c.command.clone());
        crate::quick::self_paced_result(who, self.s.duration, self.options(), r)
    }
}
