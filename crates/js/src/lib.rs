//! volley-js: Volley's k6-compatible script runtime (`volley run script.js`).
//!
//! Scripts run unmodified on QuickJS-ng (via rquickjs): a JS context per VU (in a runtime
//! shared by up to 32 VUs of a worker thread, `vu::shared`), each VU on a
//! stackful coroutine that the per-core current-thread tokio runtime resumes when a request
//! or `sleep` it waits on is done (see DESIGN.md, "VU execution model"). VU scheduling is the
//! engine's ([`volley_engine::vus`]); this crate only supplies the iteration body.
//!
//! # Layout
//!
//! - [`script`]: module resolution (relative paths, k6 built-ins, clear errors for remote or
//!   unsupported modules), compiling every module to bytecode once, running init once to read
//!   `options`, and error messages with `file:line:column`.
//! - `typescript`: `.ts` modules compiled to JavaScript (swc), error positions mapped back.
//! - [`vu`]: the VU — coroutine, QuickJS runtime, the lifecycle loop (init → setup →
//!   default(data) → teardown), the native `__volley` functions behind `k6` and
//!   `k6/metrics`, `open`, `console`, `__ENV`/`__VU`/`__ITER`.
//! - `check`: `check()` native from end to end (conditions read as atoms, series cached).
//! - `event_loop`: k6's event loop per call (iteration, setup, teardown, init, handleSummary):
//!   timers (`setTimeout` & co., `k6/timers`), asynchronous operations (`http.asyncRequest`),
//!   unhandled promise rejections; nothing on the hot path when a script uses none of them.
//! - [`http`]: `k6/http`'s bindings: script arguments → a request description for
//!   volley-http's JS-free per-VU client (`volley_http::client`: connections, DNS, redirects,
//!   k6's `http_req_*` recording) → a k6 Response object.
//! - `shims/*.js`: the JS half of the `k6`, `k6/http` and `k6/metrics` modules.
//! - `modules`: `k6/encoding`, `k6/crypto`, `k6/execution`, `k6/data`, `k6/ws` and
//!   `k6/websockets` (`modules/ws.rs`, over volley-http's WebSocket client), CommonJS `require`,
//!   the jslib.k6.io stand-ins and the `k6/http` extras' state (cookie jars, response
//!   callbacks); their JS halves are `shims/k6_*.js`, `shims/jslib_*.js`.
//! - [`options`]: `options.scenarios` or k6's shortcut options (`vus`, `duration`,
//!   `iterations`, `stages`) and CLI overrides → the engine's
//!   [`Scenario`](volley_engine::executor::Scenario)s.
//! - [`verify`]: `--verify`: the script's `verify(entries)` run once after the load.
//! - [`archive`]: k6's archive (`volley archive`, `volley run test.tar`) and `volley inspect`.
//! - [`handle_summary`]: calling the script's `handleSummary(data)` and writing its outputs.
//! - this file: [`prepare`] (script → options → a [`volley_run::RunSpec`] of the plan, the
//!   [`vu::JsFactory`], thresholds and outputs, which the caller runs with
//!   [`volley_run::execute`]), and [`run`], both in one call for tests and the demo tour.

pub mod archive;
mod check;
pub(crate) mod event_loop;
pub mod handle_summary;
pub mod http;
pub(crate) mod modules;
pub mod options;
mod rt;
pub mod script;
mod typescript;
pub mod verify;
pub mod vu;

pub use options::CliOptions;
pub use script::{Script, ScriptError};

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use volley_engine::vus::VuPlan;
use volley_engine::RunControl;
use volley_metrics::{MetricKind, RunMeta, RunResult};
use volley_run::{out_json, outputs, thresholds, Outcome, RunSpec, Summary};

pub use volley_run::outcome::{is_teardown_timeout, timeout_message};

/// Why a run could not start or finish (each maps to one of k6's exit codes through
/// [`RunError::outcome`]).
#[derive(Debug)]
pub enum RunError {
    /// A script exception or syntax error in init or setup (k6 exit code 107).
    Script(String),
    /// Invalid options (k6 exit code 104).
    Config(String),
    /// Anything else (cannot start threads...).
    Other(String),
    /// `setup()` ran past `setupTimeout` (k6 exit code 100).
    SetupTimeout(String),
    /// Ctrl-C/SIGTERM before the test started (while the script's init code ran): nothing
    /// was recorded (k6 exit code 105).
    Interrupted(String),
}

impl RunError {
    /// The run layer's ending for this error (and so its exit code).
    pub fn outcome(self) -> Outcome {
        match self {
            RunError::Script(s) => Outcome::ScriptError(s),
            RunError::Config(s) => Outcome::ConfigError(s),
            RunError::Other(s) => Outcome::Failure(s),
            RunError::SetupTimeout(s) => Outcome::SetupTimeout(s),
            RunError::Interrupted(s) => Outcome::InterruptedBeforeStart(s),
        }
    }

    /// The error for a run layer's ending without a result.
    pub fn from_outcome(o: Outcome) -> RunError {
        match o {
            Outcome::ScriptError(s) => RunError::Script(s),
            Outcome::ConfigError(s) => RunError::Config(s),
            Outcome::SetupTimeout(s) => RunError::SetupTimeout(s),
            Outcome::InterruptedBeforeStart(s) => RunError::Interrupted(s),
            o => RunError::Other(format!("{o:?}")),
        }
    }
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Script(s)
            | RunError::Config(s)
            | RunError::Other(s)
            | RunError::SetupTimeout(s)
            | RunError::Interrupted(s) => f.write_str(s),
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

/// The script's side of a run, kept after [`volley_run::execute`] consumed the spec: what
/// only the script can do with the result (`handleSummary`).
#[derive(Clone)]
pub struct ScriptView {
    shared: Arc<vu::ScriptShared>,
    /// Ctrl-C during `handleSummary` interrupts it.
    ctl: RunControl,
}

impl ScriptView {
    /// Call the script's `handleSummary(data)`: `Ok(None)` when it has none.
    pub fn handle_summary(
        &self,
        summary: &Summary,
        stdout_tty: bool,
        stderr_tty: bool,
    ) -> Result<Option<handle_summary::Outputs>, String> {
        handle_summary::call(
            &self.shared,
            &summary.data(stdout_tty, stderr_tty),
            &self.ctl,
        )
    }

    /// `setup()`'s return value as JSON, once setup ran (a distributed run hands it from
    /// the agent that ran setup to the others).
    pub fn setup_data(&self) -> Option<String> {
        self.shared.setup_data.lock().unwrap().clone()
    }

    /// What the VUs get as setup data when this instance runs no `setup()` itself (set before
    /// the first iteration: each VU reads it once).
    pub fn set_setup_data(&self, json: Option<String>) {
        *self.shared.setup_data.lock().unwrap() = json;
    }
}

/// A script ready to run: the run layer's input, and the script's view for after the run.
pub struct Prepared {
    pub spec: RunSpec<vu::JsFactory>,
    pub script: ScriptView,
}

/// A finished run.
pub struct RunOutput {
    pub result: RunResult,
    /// How it ended (the exit code).
    pub outcome: Outcome,
    /// An exception in teardown (the run itself completed).
    pub teardown_error: Option<String>,
    /// An abort during iterations (`Outcome::Abort`).
    pub aborted: Option<String>,
    /// Crossed thresholds with `abortOnFail` stopped the test (k6's message).
    pub threshold_abort: Option<String>,
    pub script: ScriptView,
}

impl RunOutput {
    /// Did any threshold fail?
    pub fn thresholds_failed(&self) -> bool {
        self.result.thresholds.iter().any(|t| !t.ok)
    }

    /// k6's message for failed thresholds, if any failed.
    pub fn thresholds_message(&self) -> Option<String> {
        volley_run::execute::thresholds_message(&self.result)
    }

    /// Call the script's `handleSummary(data)`: `Ok(None)` when it has none.
    pub fn handle_summary(
        &self,
        summary: &Summary,
        stdout_tty: bool,
        stderr_tty: bool,
    ) -> Result<Option<handle_summary::Outputs>, String> {
        self.script.handle_summary(summary, stdout_tty, stderr_tty)
    }
}

/// [`prepare`] and [`volley_run::execute`] in one call (no observers but k6's progress when
/// `cli.show_progress`): for tests and the demo tour.
pub fn run(
    path: &Path,
    env: BTreeMap<String, String>,
    cli: &CliOptions,
    threads: usize,
    command: Vec<String>,
    ctl: &RunControl,
) -> Result<RunOutput, RunError> {
    let mut p = prepare(path, env, cli, threads, command, ctl)?;
    volley_run::progress::attach(&mut p.spec, cli.show_progress, cli.live_progress);
    let f = volley_run::execute(p.spec, ctl).map_err(RunError::from_outcome)?;
    Ok(RunOutput {
        result: f.result,
        outcome: f.outcome,
        teardown_error: f.teardown_error,
        aborted: f.aborted,
        threshold_abort: f.threshold_abort,
        script: p.script,
    })
}

/// Compile `path`, resolve its options with the CLI's, and build the run (mode "run"):
/// the plan, the VU factory, thresholds and outputs. Nothing is sent yet.
pub fn prepare(
    path: &Path,
    env: BTreeMap<String, String>,
    cli: &CliOptions,
    threads: usize,
    command: Vec<String>,
    ctl: &RunControl,
) -> Result<Prepared, RunError> {
    ctl.status()
        .set_phase(volley_engine::control::RunPhase::Init);
    let archive = archive::open_if_archive(path).map_err(RunError::Script)?;
    let loaded = match &archive {
        Some(a) => script::load_with(
            Path::new(&a.main),
            a.env_under(env),
            Some(ctl),
            Some(a.files.clone()),
        ),
        None => script::load_interruptible(path, env, Some(ctl)),
    };
    let mut script = loaded.map_err(|e| {
        if ctl.was_interrupted() {
            RunError::Interrupted("interrupted while the script's init code ran".into())
        } else {
            RunError::Script(e.0)
        }
    })?;
    if let Some(a) = &archive {
        // The archive's options were resolved when it was made; this run's tiers go on top.
        script.options = a.options.clone();
    }
    script.options = options::env::for_run(&script.options, cli);
    let mut resolved = options::resolve(&script.options, cli).map_err(RunError::Config)?;
    // options.ledger: the volley/ledger file (`--ledger FILE`, opened before, wins).
    if let Some(l) = script.options.get("ledger").filter(|l| !l.is_null()) {
        let p = l
            .as_str()
            .ok_or_else(|| RunError::Config("options.ledger: expected a file path".into()))?;
        match volley_faults::ledger::global() {
            None => {
                volley_faults::ledger::open_global(Path::new(p)).map_err(RunError::Config)?;
            }
            // One ledger per process: say where the acknowledgements go instead of dropping
            // this script's file silently (a suite's second step naming another file).
            Some(open) if open.path() != Path::new(p) => {
                volley_engine::log::warn(&format!(
                    "options.ledger {p} ignored: acknowledgements go to {}, opened first                      (--ledger, or an earlier run in this process)",
                    open.path().display()
                ));
            }
            Some(_) => {}
        }
    }
    // `--threshold METRIC:EXPR` adds to options.thresholds[METRIC].
    if !cli.thresholds.is_empty() && !cli.no_thresholds {
        let all = resolved
            .thresholds
            .get_or_insert_with(|| serde_json::Value::Object(Default::default()));
        let Some(map) = all.as_object_mut() else {
            return Err(RunError::Config(
                "options.thresholds: expected an object mapping metric names to arrays".into(),
            ));
        };
        for (key, expr) in &cli.thresholds {
            let list = map
                .entry(key.clone())
                .or_insert_with(|| serde_json::Value::Array(Vec::new()));
            if !list.is_array() {
                *list = serde_json::Value::Array(vec![list.take()]);
            }
            if let Some(a) = list.as_array_mut() {
                a.push(expr.clone().into());
            }
        }
    }
    let ths = match &resolved.thresholds {
        Some(v) => {
            let custom = script.shared.metrics.lock().unwrap().clone();
            thresholds::parse(v, |name| {
                volley_metrics::names::builtin_kind(name)
                    .or_else(|| custom.get(name).map(|(k, _)| *k))
                    // `--monitor`'s gauges (checked against the plan below).
                    .or_else(|| name.starts_with("monitor_").then_some(MetricKind::Gauge))
            })
            .map_err(RunError::Config)?
        }
        None => Vec::new(),
    };
    if let Some(t) = ths.iter().find(|t| {
        t.name.starts_with("monitor_")
            && cli.monitor.specs.is_empty()
            && !script.shared.metrics.lock().unwrap().contains_key(&t.name)
    }) {
        return Err(RunError::Config(format!(
            "options.thresholds[\"{}\"]: monitor_* metrics are recorded only while watching a \
             target; add --monitor pid:N (or cmd:NAME, cgroup:/path, url:...)",
            t.metric
        )));
    }
    let json_out = match &cli.out_json {
        Some(path) => {
            let mut out = out_json::JsonOut::create(path).map_err(RunError::Other)?;
            out.set_thresholds(&ths);
            Some(Arc::new(out))
        }
        None => None,
    };
    // Series keys (issue #13): a named request's URL keys its series only when a threshold
    // selects by `url`; every metric's tag sets are capped by one guard shared by the workers.
    resolved.settings.url_keys_series = ths.iter().any(|t| t.tags.iter().any(|(k, _)| k == "url"));
    let started = std::time::Instant::now();
    let series_guard = Arc::new(volley_metrics::SeriesGuard::new(
        resolved.settings.max_series,
        Box::new(move |m| eprintln!("WARN[{:04}] {m}", started.elapsed().as_secs())),
    ));
    let outs = outputs::Outputs::start(&cli.outputs).map_err(RunError::Other)?;
    let _ = script.shared.settings.set(resolved.settings.clone());
    modules::execution::set_options(&script.shared, &script.options);
    for o in &resolved.ignored {
        volley_engine::log::warn(&format!(
            "option '{o}' is not supported by volley yet and is ignored"
        ));
    }
    for sc in &resolved.scenarios {
        let exec = sc.exec_name();
        if !script.functions.iter().any(|f| f == exec) {
            return Err(if sc.exec.is_none() {
                RunError::Script(format!(
                    "{}: the script must export a default function (or give each scenario an \
                     `exec` naming an exported function)",
                    script.main
                ))
            } else {
                RunError::Config(format!(
                    "options.scenarios.{}.exec: function '{exec}' not found in exports (exported \
                     functions: {})",
                    sc.name,
                    script.functions.join(", ")
                ))
            });
        }
    }
    let mut tags = resolved.settings.tags.clone();
    tags.insert("group".into(), String::new());
    resolved.settings.filter_system_tags(&mut tags);
    let plan = VuPlan {
        scenarios: resolved.scenarios.clone(),
        threads,
        iteration_tags: tags,
        scenario_tag: resolved.settings.keeps_system_tag("scenario"),
        monitor: cli.monitor.clone(),
        sample_sink: None,
        series_guard: Some(series_guard),
        segment: None,
        gates: None,
    };
    let plan = match &resolved.segment {
        Some(t) => plan.segmented(t.clone()),
        None => plan,
    };
    let factory = Arc::new(vu::JsFactory {
        shared: script.shared.clone(),
        http: Arc::new(resolved.http.clone()),
    });
    let mut options = serde_json::Map::new();
    options.insert("script".into(), script.options.clone());
    if let Some(h) = archive::script_hash(&script) {
        options.insert("script_hash".into(), h.into());
    }
    // First-seen order of checks and groups, for k6 v1's summary (the totals are sorted by
    // key): known once the run is over.
    let shared = script.shared.clone();
    let late: volley_run::execute::LateOptions = Box::new(move |opts| {
        let (order, groups) = match shared.check_order.lock() {
            Ok(o) => (
                o.order
                    .iter()
                    .map(|(g, n)| [g.clone(), n.clone()])
                    .collect::<Vec<_>>(),
                o.groups.clone(),
            ),
            Err(_) => Default::default(),
        };
        opts.insert("check_order".into(), serde_json::json!(order));
        opts.insert("group_order".into(), serde_json::json!(groups));
    });
    Ok(Prepared {
        spec: RunSpec {
            plan,
            factory,
            thresholds: ths,
            outputs: outs,
            json_out,
            observers: Vec::new(),
            meta: RunMeta::new("run", script.main.clone(), command),
            options,
            late_options: Some(late),
            result_of: None,
        },
        script: ScriptView {
            shared: script.shared.clone(),
            ctl: ctl.clone(),
        },
    })
}
