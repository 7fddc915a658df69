//! WebSocket quick mode as a plan for the one scheduler: [`plan`] turns a [`WsConfig`] into
//! a [`VuPlan`] (one self-paced `per-vu-iterations` scenario: a VU per connection, one
//! iteration each) and a [`WsFactory`] that makes the bodies; the factory then turns the
//! scheduler's [`VuRunResult`] into the run's [`RunResult`] (meta `kind` "ws").

use super::conn::WsBody;
use super::{WsConfig, METRICS};
use crate::quick::MonitorPlan;
use crate::sys;
use crate::vus::{VuFactory, VuPlan, VuRunResult, WorkerEnv};
use serde::Serialize;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use volley_http::client::settings::TlsCache;
use volley_http::client::ClientSettings;
use volley_http::ws::WsRequest;
use volley_metrics::{RunMeta, RunResult};

/// The run's name in its [`RunMeta`] (and the result file's `meta.kind`).
pub const RUN_KIND: &str = "ws";

/// The iteration limit of a run without `-z` (a `-n` count or Ctrl-C ends it).
const NO_DEADLINE: Duration = Duration::from_secs(8760 * 3600);

/// What every connection reads.
pub(super) struct Shared {
    pub(super) cfg: WsConfig,
    pub(super) request: WsRequest,
    pub(super) settings: ClientSettings,
    /// -z or the end of the rate stages, whichever is first.
    pub(super) duration: Option<Duration>,
    /// When the load started (the scenario's start, set by the first connection).
    pub(super) begin: OnceLock<Instant>,
}

/// Makes the connections' bodies and shapes the result.
pub struct WsFactory {
    pub(super) s: Arc<Shared>,
}

impl VuFactory for WsFactory {
    type Body = WsBody;

    fn create(&self, env: &WorkerEnv, id: u64, _scenario: Option<usize>) -> Result<WsBody, String> {
        Ok(WsBody::new(
            self.s.clone(),
            env,
            id.saturating_sub(1) as usize,
        ))
    }
}

/// WebSocket quick mode as a plan and a body factory for [`crate::vus::run_vus_with`].
/// Errors are setup failures (bad URL, unreadable `--cacert`).
pub fn plan(cfg: &WsConfig, monitor: &MonitorPlan) -> Result<(VuPlan, Arc<WsFactory>), String> {
    volley_http::ws::http_target(&cfg.url)?;
    let mut settings = ClientSettings {
        insecure: cfg.insecure,
        ..Default::default()
    };
    if cfg.cacert.is_some() {
        // The settings' own TLS has no CA option: build it here with the file's roots.
        let opts = volley_http::TlsOptions {
            insecure: cfg.insecure,
            cacert: cfg.cacert.clone(),
        };
        settings.tls_ws = TlsCache::preset(volley_http::tls_config(&opts, &[b"http/1.1"])?);
    }
    let connections = cfg.connections.max(1);
    let threads = crate::quick::worker_threads(cfg.threads, connections);
    let duration = crate::quick::load_end(cfg.duration, cfg.rate.as_ref());
    let shared = Arc::new(Shared {
        cfg: cfg.clone(),
        request: WsRequest {
            url: cfg.url.clone(),
            headers: cfg.headers.clone(),
            protocols: cfg.subprotocols.clone(),
            compression: cfg.compression,
        },
        settings,
        duration,
        begin: OnceLock::new(),
    });
    // Past -z the body's own grace cuts what is left; the scheduler's limit only backs it.
    let max = duration.map_or(NO_DEADLINE, |d| d + super::DEADLINE_GRACE);
    let plan = crate::quick::self_paced_plan("ws", connections, max, threads, monitor);
    Ok((plan, Arc::new(WsFactory { s: shared })))
}

/// The options as resolved, in the result file.
#[derive(Serialize)]
struct ResolvedOptions<'a> {
    url: &'a str,
    headers: &'a [(String, String)],
    subprotocols: &'a [String],
    compression: bool,
    message_bytes: Option<usize>,
    generated_bytes: Option<usize>,
    binary: bool,
    connections: usize,
    duration_s: Option<f64>,
    messages: Option<u64>,
    rate: Option<&'a crate::RateSchedule>,
    inflight: Option<usize>,
    timeout_s: f64,
    connect_timeout_s: f64,
    insecure: bool,
    metrics: &'a [&'a str],
}

impl WsFactory {
    pub fn options(&self) -> serde_json::Value {
        let c = &self.s.cfg;
        let (fixed, generated) = match &c.payload {
            super::Payload::Fixed(b) => (Some(b.len()), None),
            super::Payload::Generated { size } => (None, Some(*size)),
        };
        serde_json::to_value(ResolvedOptions {
            url: &c.url,
            headers: &c.headers,
            subprotocols: &c.subprotocols,
            compression: c.compression,
            message_bytes: fixed,
            generated_bytes: generated,
            binary: c.binary,
            connections: c.connections,
            duration_s: c.duration.map(|d| d.as_secs_f64()),
            messages: c.messages,
            rate: c.rate.as_ref(),
            inflight: c.inflight,
            timeout_s: c.timeout.as_secs_f64(),
            connect_timeout_s: c.connect_timeout.as_secs_f64(),
            insecure: c.insecure,
            metrics: METRICS,
        })
        .unwrap_or_default()
    }

    /// The rate denominator: the load's length (to `-z` at most: the grace after it only
    /// collects echoes, it sends nothing).
    pub fn elapsed(&self, r: &VuRunResult) -> Duration {
        match self.s.duration {
            Some(d) => r.elapsed.min(d),
            None => r.elapsed,
        }
    }

    /// The run's result (an init failure is an error).
    pub fn result(&self, r: VuRunResult) -> Result<RunResult, String> {
        if let Some((_, e)) = &r.aborted {
            return Err(e.clone());
        }
        let meta = RunMeta::new(RUN_KIND, self.s.cfg.url.clone(), self.s.cfg.command.clone())
            .timed(r.started, r.ended, self.elapsed(&r), r.interrupted)
            .with_peak_rss(sys::peak_rss_bytes());
        Ok(RunResult::new(meta, self.options(), r.metrics, r.series))
    }
}
