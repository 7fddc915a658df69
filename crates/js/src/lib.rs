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
//! - `check`: `check()` native from end to end (conditions read as atoms, series cached).
//! - `event_loop`: k6's event loop per call (iteration, setup, teardown, init, handleSummary):
//!   timers (`setTimeout` & co., `k6/timers`), asynchronous operations (`http.asyncRequest`),
//!   unhandled promise rejections; nothing on the hot path when a script uses none of them.
//! - [`http`]: `k6/http`'s bindings: script arguments → a request description for
//!   volley-http's JS-free per-VU client (`volley_http::client`: connections, DNS, redirects,
//!   k6's `http_req_*` recording) → a k6 Response object.
//! - `shims/*.js`: the JS half of the `k6`, `k6/http` and `k6/metrics` modules.
//! - `modules`: `k6/encoding`, `k6/crypto`, `k6/execution`, `k6/data`, CommonJS `require`,
//!   the jslib.k6.io stand-ins and the `k6/http` extras' state (cookie jars, response
//!   callbacks); their JS halves are `shims/k6_*.js`, `shims/jslib_*.js`.
//! - [`options`]: `options.scenarios` or k6's shortcut options (`vus`, `duration`,
//!   `iterations`, `stages`) and CLI overrides → the engine's
//!   [`Scenario`](volley_engine::executor::Scenario)s.
//! - [`handle_summary`]: calling the script's `handleSummary(data)` and writing its outputs.

mod check;
pub(crate) mod event_loop;
pub mod handle_summary;
pub mod http;
pub(crate) mod modules;
pub mod options;
mod rt;
pub mod script;
pub mod vu;

pub use options::CliOptions;
pub use script::{Script, ScriptError};

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use volley_engine::vus::{run_vus_with, VuPlan};
use volley_engine::RunControl;
use volley_metrics::{MetricKind, RunMeta, RunResult, TagSet};
use volley_run::{out_json, outputs, progress, thresholds, Summary};

/// Why a run could not start or finish (each maps to one of k6's exit codes).
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

/// k6's message for a setup/teardown timeout (`volley run` maps it to exit 100/101).
pub fn timeout_message(phase: &str, d: Duration) -> String {
    format!(
        "{phase}() execution timed out after {} seconds",
        d.as_secs_f64()
    )
}

/// Is `e` a teardown timeout ([`timeout_message`])?
pub fn is_teardown_timeout(e: &str) -> bool {
    e.starts_with("teardown() execution timed out")
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

/// A finished run.
pub struct RunOutput {
    pub result: RunResult,
    /// An exception in teardown (the run itself completed).
    pub teardown_error: Option<String>,
    /// An abort during iterations (`Outcome::Abort`).
    pub aborted: Option<String>,
    /// Crossed thresholds with `abortOnFail` stopped the test (k6's message).
    pub threshold_abort: Option<String>,
    shared: Arc<vu::ScriptShared>,
    /// Ctrl-C during `handleSummary` interrupts it.
    ctl: RunControl,
}

impl RunOutput {
    /// Did any threshold fail?
    pub fn thresholds_failed(&self) -> bool {
        self.result.thresholds.iter().any(|t| !t.ok)
    }

    /// k6's message for failed thresholds, if any failed.
    pub fn thresholds_message(&self) -> Option<String> {
        let mut names: Vec<&str> = Vec::new();
        for t in self.result.thresholds.iter().filter(|t| !t.ok) {
            if !names.contains(&t.metric.as_str()) {
                names.push(&t.metric);
            }
        }
        (!names.is_empty()).then(|| {
            format!(
                "thresholds on metrics '{}' have been crossed",
                names.join(", ")
            )
        })
    }

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
    ctl.status()
        .set_phase(volley_engine::control::RunPhase::Init);
    let mut script = script::load_interruptible(path, env, Some(ctl)).map_err(|e| {
        if ctl.was_interrupted() {
            RunError::Interrupted("interrupted while the script's init code ran".into())
        } else {
            RunError::Script(e.0)
        }
    })?;
    // k6's tiers: --config file < script options < K6_* environment < k6 flags.
    script.options = options::env::consolidate(
        cli.config_file.as_ref(),
        &script.options,
        &cli.env_options,
        &cli.flag_options,
    );
    if cli.no_thresholds {
        if let Some(o) = script.options.as_object_mut() {
            o.remove("thresholds");
        }
    }
    // k6's summary flags replace the script's options (validated with them by `resolve`).
    for (key, v) in [
        (
            "summaryTrendStats",
            cli.summary_trend_stats.as_ref().map(|s| s.clone().into()),
        ),
        (
            "summaryTimeUnit",
            cli.summary_time_unit.as_ref().map(|u| u.clone().into()),
        ),
    ] {
        if let Some(v) = v {
            if !script.options.is_object() {
                script.options = serde_json::Value::Object(Default::default());
            }
            script.options[key] = v;
        }
    }
    let mut resolved = options::resolve(&script.options, cli).map_err(RunError::Config)?;
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
    if let Some(path) = &cli.out_json {
        let mut out = out_json::JsonOut::create(path).map_err(RunError::Other)?;
        out.set_thresholds(&ths);
        resolved.settings.json_out = Some(Arc::new(out));
    }
    // Series keys (issue #13): a named request's URL keys its series only when a threshold
    // selects by `url`; every metric's tag sets are capped by one guard shared by the workers.
    resolved.settings.url_keys_series = ths.iter().any(|t| t.tags.iter().any(|(k, _)| k == "url"));
    let started = std::time::Instant::now();
    resolved.settings.series_guard = Some(Arc::new(volley_metrics::SeriesGuard::new(
        resolved.settings.max_series,
        Box::new(move |m| eprintln!("WARN[{:04}] {m}", started.elapsed().as_secs())),
    )));
    let json_out = resolved.settings.json_out.clone();
    let mut outs = outputs::Outputs::start(&cli.outputs).map_err(RunError::Other)?;
    resolved.settings.csv_out = outs.csv.clone();
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
    if cli.show_progress {
        eprint!("{}", progress::header(&script.main, &resolved.scenarios));
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
    };
    let factory = Arc::new(vu::JsFactory {
        shared: script.shared.clone(),
        http: Arc::new(resolved.http.clone()),
    });
    // Once a second: abortOnFail thresholds, and the vus gauges for --out json.
    let mut threshold_abort: Option<String> = None;
    let mut aborted_at: Vec<bool> = vec![false; ths.len()];
    let abort_ths: Vec<usize> = (0..ths.len()).filter(|i| ths[*i].abort_on_fail).collect();
    let warmup_s = volley_monitor::drift::live_warmup(plan.max_duration().as_secs_f64());
    let mut live = progress::Live::new(cli.show_progress && cli.live_progress);
    let mut hook = |tick: &volley_engine::vus::Tick<'_>| -> bool {
        let (agg, elapsed) = (tick.agg, tick.elapsed);
        live.draw(tick);
        outs.tick(agg, elapsed);
        if let Some(out) = &json_out {
            for name in ["vus", "vus_max"] {
                if let Some(volley_metrics::Agg::Gauge { last, .. }) =
                    agg.total(&volley_metrics::MetricKey::new(name))
                {
                    out.point(name, MetricKind::Gauge, &TagSet::new(), *last);
                }
            }
        }
        if abort_ths.is_empty() || threshold_abort.is_some() {
            return false;
        }
        let mut crossed = Vec::new();
        for &i in &abort_ths {
            let th = &ths[i];
            if elapsed < th.delay_abort_eval {
                continue;
            }
            if th.drift.is_some() {
                if th.check_live(agg, elapsed.as_secs_f64(), warmup_s) == Some(false) {
                    aborted_at[i] = true;
                    if !crossed.contains(&th.metric) {
                        crossed.push(th.metric.clone());
                    }
                }
                continue;
            }
            let merged = thresholds::merged(
                th,
                agg.totals()
                    .map(|(d, a)| (d.key.name.as_str(), &d.key.tags, a)),
            );
            // As k6: during the run, a metric without samples is not judged yet.
            let Some(m) = merged.filter(|m| m.samples() > 0) else {
                continue;
            };
            if !th.check(Some(&m), elapsed.as_secs_f64()).0 {
                aborted_at[i] = true;
                if !crossed.contains(&th.metric) {
                    crossed.push(th.metric.clone());
                }
            }
        }
        if crossed.is_empty() {
            return false;
        }
        threshold_abort = Some(format!(
            "thresholds on metrics '{}' were crossed; at least one has abortOnFail enabled, \
             stopping test prematurely",
            crossed.join(", ")
        ));
        true
    };
    let r = run_vus_with(&plan, factory, ctl, Some(&mut hook)).map_err(RunError::Other)?;
    live.clear();
    if cli.show_progress {
        eprint!("{}", progress::finished(&r, &resolved.scenarios));
    }
    if let Some((phase, e)) = &r.aborted {
        if phase == "setup" && e.starts_with("setup() execution timed out") {
            return Err(RunError::SetupTimeout(e.clone()));
        }
        // exec.test.abort() in setup is an abort (exit 108), not a script error.
        if (phase == "init" || phase == "setup")
            && !modules::execution::script_aborted(&script.shared)
        {
            return Err(RunError::Script(e.clone()));
        }
    }
    let meta = RunMeta::new("run", script.main.clone(), command)
        .timed(r.started, r.ended, r.elapsed, r.interrupted)
        .with_peak_rss(volley_engine::sys::peak_rss_bytes());
    let mut opts: HashMap<&str, serde_json::Value> = HashMap::new();
    opts.insert("script", script.options.clone());
    let first = &resolved.scenarios[0].executor;
    let executor = if resolved.scenarios.len() == 1 {
        first.name()
    } else {
        "scenarios"
    };
    opts.insert("executor", executor.into());
    opts.insert("vus_max", plan.max_vus().into());
    opts.insert("duration_s", plan.max_duration().as_secs_f64().into());
    if let (1, Some(n)) = (resolved.scenarios.len(), first.total_iterations()) {
        opts.insert("iterations", n.into());
    }
    opts.insert(
        "scenarios",
        r.scenarios
            .iter()
            .zip(&resolved.scenarios)
            .map(|(st, sc)| {
                serde_json::json!({
                    "name": st.name,
                    "executor": st.executor,
                    "description": sc.describe(),
                    "completed_iterations": st.completed,
                    "interrupted_iterations": st.interrupted,
                    "dropped_iterations": st.dropped,
                })
            })
            .collect::<Vec<_>>()
            .into(),
    );
    // First-seen order of checks, for k6 v1's summary (the totals are sorted by key).
    let order: Vec<[String; 2]> = script
        .shared
        .check_order
        .lock()
        .map(|o| {
            o.order
                .iter()
                .map(|(g, n)| [g.clone(), n.clone()])
                .collect()
        })
        .unwrap_or_default();
    opts.insert("check_order", serde_json::json!(order));
    let groups = (script.shared.check_order.lock())
        .map(|o| o.groups.clone())
        .unwrap_or_default();
    opts.insert("group_order", serde_json::json!(groups));
    let options = serde_json::to_value(opts).unwrap_or_default();
    let mut result = RunResult::new(meta, options, r.metrics, r.series);
    // The verdict, on the final totals (a metric without samples counts as zeros, as k6).
    let aggs: Vec<(String, TagSet, volley_metrics::Agg)> = result
        .metrics
        .iter()
        .filter_map(|m| Some((m.name.clone(), m.tags.clone(), m.to_agg().ok()?)))
        .collect();
    let mut verdicts = thresholds::evaluate(
        &ths,
        || aggs.iter().map(|(n, t, a)| (n.as_str(), t, a)),
        result.meta.duration_s,
    );
    thresholds::evaluate_drift(&ths, &result, &mut verdicts);
    result.thresholds = ths
        .iter()
        .zip(&verdicts)
        .zip(&aborted_at)
        .map(|((t, v), ab)| volley_metrics::ThresholdResult {
            metric: t.metric.clone(),
            expression: t.source.clone(),
            ok: v.ok && !ab,
            // Drift thresholds without data observe nothing (NaN).
            observed: v.observed.is_finite().then_some(v.observed),
            aborted: *ab,
        })
        .collect();
    for e in outs.finish(&result) {
        volley_engine::log::warn(&e);
    }
    if let Some(e) = json_out.as_ref().and_then(|o| o.error()) {
        volley_engine::log::warn(&e);
    }
    Ok(RunOutput {
        result,
        teardown_error: r.teardown_error,
        aborted: r.aborted.map(|(_, e)| e),
        threshold_abort,
        shared: script.shared.clone(),
        ctl: ctl.clone(),
    })
}
