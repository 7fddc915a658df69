//! volley-js: Volley's k6-compatible script runtime (`volley run script.js`).
//!
//! Scripts run unmodified on QuickJS-ng (via rquickjs): one JS runtime per VU, each VU on a
//! stackful coroutine that the per-core current-thread tokio runtime resumes when a request
//! or `sleep` it waits on is done (see DESIGN.md, "VU execution model"). VU scheduling is the
//! engine's ([`volley_engine::vus`]); this crate only supplies the iteration body.
//!
//! # Layout
//!
//! - [`script`]: module resolution (relative paths, k6 built-ins, clear errors for remote or
//!   unsupported modules), compiling every module to bytecode once, running init once to read
//!   `options`, and error messages with `file:line:column`.
//! - [`vu`]: the VU — coroutine, QuickJS runtime, the lifecycle loop (init → setup →
//!   default(data) → teardown), the native `__volley` functions behind `k6` and
//!   `k6/metrics`, `open`, `console`, `__ENV`/`__VU`/`__ITER`.
//! - [`http`]: the native half of `k6/http` on `volley-http` connections, recording k6's
//!   `http_req_*` metrics with k6's system tags.
//! - `shims/*.js`: the JS half of the `k6`, `k6/http` and `k6/metrics` modules.
//! - [`options`]: k6 shortcut options (`vus`, `duration`, `iterations`, `stages`) and CLI
//!   overrides → an engine [`Executor`](volley_engine::vus::Executor).
//! - [`summary`]: k6's end-of-test text summary and `--summary-export` JSON from a result file.

pub mod http;
pub mod options;
pub mod script;
pub mod summary;
pub mod vu;

pub use options::CliOptions;
pub use script::{Script, ScriptError};
pub use summary::Summary;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use volley_engine::vus::{run_vus, VuPlan};
use volley_engine::RunControl;
use volley_metrics::{time, MetricKind, RunMeta, RunResult, TagSet};

/// k6's built-in metrics and their kinds (custom metrics may not reuse a name with another kind).
pub const BUILTIN_METRICS: &[(&str, MetricKind)] = &[
    ("http_reqs", MetricKind::Counter),
    ("http_req_duration", MetricKind::Trend),
    ("http_req_blocked", MetricKind::Trend),
    ("http_req_connecting", MetricKind::Trend),
    ("http_req_tls_handshaking", MetricKind::Trend),
    ("http_req_sending", MetricKind::Trend),
    ("http_req_waiting", MetricKind::Trend),
    ("http_req_receiving", MetricKind::Trend),
    ("http_req_failed", MetricKind::Rate),
    ("iterations", MetricKind::Counter),
    ("iteration_duration", MetricKind::Trend),
    ("vus", MetricKind::Gauge),
    ("vus_max", MetricKind::Gauge),
    ("checks", MetricKind::Rate),
    ("group_duration", MetricKind::Trend),
    ("data_sent", MetricKind::Counter),
    ("data_received", MetricKind::Counter),
];

/// Why a run could not start or finish (each maps to one of k6's exit codes).
#[derive(Debug)]
pub enum RunError {
    /// A script exception or syntax error in init or setup (k6 exit code 107).
    Script(String),
    /// Invalid options (k6 exit code 104).
    Config(String),
    /// Anything else (cannot start threads...).
    Other(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Script(s) | RunError::Config(s) | RunError::Other(s) => f.write_str(s),
        }
    }
}

/// Build `__ENV`: the process environment, then `-e K=V` pairs on top (as k6).
pub fn environment(pairs: &[(String, String)], include_system: bool) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = if include_system {
        std::env::vars().collect()
    } else {
        BTreeMap::new()
    };
    for (k, v) in pairs {
        env.insert(k.clone(), v.clone());
    }
    env
}

/// A finished run.
pub struct RunOutput {
    pub result: RunResult,
    /// An exception in teardown (the run itself completed).
    pub teardown_error: Option<String>,
    /// An abort during iterations (`Outcome::Abort`).
    pub aborted: Option<String>,
}

/// Compile `path`, resolve options, run, and return the result (mode "run").
pub fn run(
    path: &Path,
    env: BTreeMap<String, String>,
    cli: &CliOptions,
    threads: usize,
    command: Vec<String>,
    ctl: &RunControl,
) -> Result<RunOutput, RunError> {
    let script = script::load(path, env).map_err(|e| RunError::Script(e.0))?;
    let resolved = options::resolve(&script.options, cli).map_err(RunError::Config)?;
    for o in &resolved.ignored {
        eprintln!("WARN[0000] option '{o}' is not supported by volley yet and is ignored");
    }
    if !script.has_default {
        return Err(RunError::Script(format!(
            "{}: the script must export a default function",
            script.main
        )));
    }
    script
        .shared
        .http
        .insecure
        .store(resolved.insecure, Ordering::Relaxed);
    let mut tags = TagSet::new();
    tags.insert("scenario".into(), "default".into());
    tags.insert("group".into(), String::new());
    let plan = VuPlan {
        executor: resolved.executor.clone(),
        threads,
        graceful_stop: Duration::from_secs(30),
        iteration_tags: tags,
    };
    let factory = Arc::new(vu::JsFactory {
        shared: script.shared.clone(),
    });
    let r = run_vus(&plan, factory, ctl).map_err(RunError::Other)?;
    if let Some((phase, e)) = &r.aborted {
        if phase == "init" || phase == "setup" {
            return Err(RunError::Script(e.clone()));
        }
    }
    let (s_ms, e_ms) = (time::unix_ms(r.started), time::unix_ms(r.ended));
    let meta = RunMeta {
        volley_version: env!("CARGO_PKG_VERSION").to_string(),
        mode: "run".into(),
        command,
        name: script.main.clone(),
        started_at: time::rfc3339_ms(s_ms),
        ended_at: time::rfc3339_ms(e_ms),
        started_unix_ms: s_ms,
        ended_unix_ms: e_ms,
        duration_s: r.elapsed.as_secs_f64(),
        interrupted: r.interrupted,
        instances: 1,
        host: volley_metrics::result::HostInfo::current(),
        peak_rss_bytes: volley_engine::sys::peak_rss_bytes(),
    };
    let mut opts: HashMap<&str, serde_json::Value> = HashMap::new();
    opts.insert("script", script.options.clone());
    opts.insert("executor", resolved.executor.name().into());
    opts.insert("vus_max", resolved.executor.max_vus().into());
    opts.insert(
        "duration_s",
        resolved.executor.duration().as_secs_f64().into(),
    );
    if let volley_engine::vus::Executor::SharedIterations { iterations, .. } = &resolved.executor {
        opts.insert("iterations", (*iterations).into());
    }
    let options = serde_json::to_value(opts).unwrap_or_default();
    Ok(RunOutput {
        result: RunResult::new(meta, options, r.metrics, r.series),
        teardown_error: r.teardown_error,
        aborted: r.aborted.map(|(_, e)| e),
    })
}
