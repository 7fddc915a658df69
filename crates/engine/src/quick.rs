//! Quick mode: one request template, fired over N connections for a duration or a count —
//! one more body on the VU scheduler ([`crate::vus`]), not an engine of its own.
//!
//! Each connection is a VU whose one long iteration drives its connection until the `-n`
//! budget, the `-z` deadline or a stop ends it, so a request costs what it costs in a
//! hand-written loop: VUs of a worker share one `worker` state through an `Rc` (recording
//! is a plain memory write; a `-n` budget is split between workers up front, so counting
//! needs no atomics), and the scheduler only sees one iteration per connection. Its
//! scenario is *self-paced*: no k6 iteration or VU metrics, no start spread.
//!
//! Pacing: closed model (each connection sends its next request when the previous answer
//! arrived, optionally `pipeline` at a time in one write) or open model (requests are due at
//! times set by a [`RateSchedule`], whatever the server does; a pipelined connection sends
//! the requests due by then in one write, up to the depth). In the open model a request that
//! starts late because every connection was busy is a *missed start*; its latency is also
//! measured from the time it was due (`http_req_corrected`, coordinated omission corrected,
//! as wrk2 does) beside the service time from the actual send (`http_req_duration`).
//!
//! Files: this one (config, progress, the `run_quick` wrappers), `plan` (config → plan +
//! factory, result assembly), `worker` (per-worker state, recording, the body), `conn` (the
//! connection loops: plain, pipelined, HTTP/2).
//!
//! A run layer runs quick mode like any plan: `let (plan, factory) = quick::plan(&cfg,
//! &monitor)?`, then [`crate::vus::run_vus_with`], then [`QuickFactory::result`] (and
//! [`QuickFactory::progress`] from each tick).

use crate::control::RunControl;
use crate::rate::RateSchedule;
use crate::vus::Tick;
use std::time::Duration;
use volley_http::{Body, TlsOptions};
use volley_metrics::{names, RunResult};

/// The metrics a quick run records (besides `monitor_*` with `--monitor`): what `--threshold`
/// may name.
pub const METRICS: &[&str] = &[
    names::HTTP_REQS,
    names::HTTP_REQ_DURATION,
    names::HTTP_REQ_WAITING,
    HTTP_REQ_CORRECTED,
    names::HTTP_REQ_CONNECTING,
    names::HTTP_REQ_TLS_HANDSHAKING,
    names::HTTP_REQ_FAILED,
    names::DATA_SENT,
    names::DATA_RECEIVED,
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
    /// HTTP/1.1 pipelining depth (1 = none); in the open model, the most due requests one
    /// write carries.
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
/// the scheduler's coordinator as one more worker, so the `monitor_*` gauges share the run's
/// timeline.
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
    let (plan, factory) = plan(cfg, monitor)?;
    let mut hook = |tick: &Tick<'_>| {
        on_progress(&factory.progress(tick));
        false
    };
    let r = crate::vus::run_vus_with(&plan, factory.clone(), user_ctl, Some(&mut hook))?;
    factory.result(r)
}

/// The open model's corrected latency (from each request's due time): quick mode's own
/// metric beside k6's built-in names.
pub const HTTP_REQ_CORRECTED: &str = "http_req_corrected";

mod conn;
mod plan;
mod worker;
pub(crate) use plan::self_paced_result;
pub(crate) use plan::{load_end, self_paced_plan, split as split_budget, worker_threads};
pub use plan::{plan, QuickFactory, RUN_KIND};
pub(crate) use worker::run_to_cut;
pub use worker::{QuickBody, DEADLINE_GRACE};

#[cfg(test)]
mod tests;
