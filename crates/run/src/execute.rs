//! Running a plan to a finished, judged result: [`execute`] hands the plan and the body
//! factory to the engine's scheduler with one per-second hook (observers, aggregated outputs,
//! NDJSON gauges, `abortOnFail` thresholds), then builds the [`RunResult`], judges the
//! thresholds, finishes the outputs and says how the run ended ([`Outcome`]).
//!
//! Nothing here knows what a body is: script VUs (volley-js) and any other
//! [`VuFactory`] run the same way.

use crate::out_json::JsonOut;
use crate::outcome::{is_setup_timeout, Outcome};
use crate::outputs::{self, Outputs};
use crate::thresholds::{self, Threshold};
use crate::Observer;
use serde_json::{Map, Value};
use std::sync::Arc;
use volley_engine::vus::{run_vus_with, SinkMaker, Tick, VuFactory, VuPlan, VuRunResult};
use volley_engine::RunControl;
use volley_metrics::{Agg, MetricKey, MetricKind, RunMeta, RunResult, TagSet, ThresholdResult};

/// Adds what is known only once the run is over (e.g. the order checks first ran in) to the
/// options stored in the result.
pub type LateOptions = Box<dyn FnOnce(&mut Map<String, Value>)>;

/// A body's own way to turn the scheduler's result into its result file (quick mode: its
/// options, its `-z` rule for the rate denominator); `Err` means the run could not start.
pub type ResultOf = Box<dyn FnOnce(VuRunResult) -> Result<RunResult, String>>;

/// Everything a run needs.
pub struct RunSpec<F: VuFactory> {
    /// The scenarios, threads, tags and monitors (its sample sink is set here from the
    /// outputs; its series guard is the caller's).
    pub plan: VuPlan,
    pub factory: Arc<F>,
    pub thresholds: Vec<Threshold>,
    /// The started `--out`s besides `json=`.
    pub outputs: Outputs,
    /// `--out json=FILE`.
    pub json_out: Option<Arc<JsonOut>>,
    /// The progress line, a live dashboard ...
    pub observers: Vec<Box<dyn Observer>>,
    /// Made with [`RunMeta::new`]; the times and peak RSS are set here.
    pub meta: RunMeta,
    /// Options to store in the result; `executor`, `vus_max`, `duration_s`, `iterations` and
    /// `scenarios` (with their iteration counts) are added here.
    pub options: Map<String, Value>,
    pub late_options: Option<LateOptions>,
    /// Replaces the meta/options assembly above for bodies with their own result shape.
    pub result_of: Option<ResultOf>,
}

/// A run that produced a result.
#[derive(Debug)]
pub struct Finished {
    pub result: RunResult,
    pub outcome: Outcome,
    /// k6's message when crossed `abortOnFail` thresholds stopped the test.
    pub threshold_abort: Option<String>,
    /// An error in teardown (the run itself completed).
    pub teardown_error: Option<String>,
    /// Why the test stopped early during its iterations (a script abort).
    pub aborted: Option<String>,
}

/// Run `spec` to its end. `Err` when there is no result to show: the run could not start,
/// init or setup failed (script error, setup timeout).
pub fn execute<F: VuFactory>(mut spec: RunSpec<F>, ctl: &RunControl) -> Result<Finished, Outcome> {
    let json_out = spec.json_out.clone();
    let csv = spec.outputs.csv.clone();
    if json_out.is_some() || csv.is_some() {
        spec.plan.sample_sink = Some(SinkMaker(Arc::new(move || {
            outputs::sample_sink(json_out.as_ref(), csv.as_ref())
        })));
    }
    let plan = &spec.plan;
    let ths = &spec.thresholds;
    let mut watch = AbortWatch::new(ths, plan.max_duration().as_secs_f64());
    let (outs, observers) = (&mut spec.outputs, &mut spec.observers);
    let json_out = spec.json_out.as_ref();
    let mut hook = |tick: &Tick<'_>| -> bool {
        for o in observers.iter_mut() {
            o.tick(tick);
        }
        outs.tick(tick.agg, tick.elapsed);
        if let Some(out) = json_out {
            for name in [volley_metrics::names::VUS, volley_metrics::names::VUS_MAX] {
                if let Some(Agg::Gauge { last, .. }) = tick.agg.total(&MetricKey::new(name)) {
                    out.point(name, MetricKind::Gauge, &TagSet::new(), *last);
                }
            }
        }
        watch.tick(ths, tick)
    };
    let r =
        run_vus_with(plan, spec.factory.clone(), ctl, Some(&mut hook)).map_err(Outcome::Failure)?;
    for o in spec.observers.iter_mut() {
        o.ended(&r, plan);
    }
    let teardown_error = r.teardown_error.clone();
    let aborted = r.aborted.as_ref().map(|(_, e)| e.clone());
    let mut result = match spec.result_of {
        Some(result_of) => result_of(r).map_err(Outcome::Failure)?,
        None => {
            if let Some((phase, e)) = &r.aborted {
                if phase == "setup" && is_setup_timeout(e) {
                    return Err(Outcome::SetupTimeout(e.clone()));
                }
                // An abort asked for by the body in setup (k6: exec.test.abort) is an abort
                // (108).
                if (phase == "init" || phase == "setup") && !spec.factory.aborted_by_body() {
                    return Err(Outcome::ScriptError(e.clone()));
                }
            }
            let meta = spec
                .meta
                .timed(r.started, r.ended, r.elapsed, r.interrupted)
                .with_peak_rss(volley_engine::sys::peak_rss_bytes());
            let mut opts = spec.options;
            plan_options(plan, &r, &mut opts);
            if let Some(late) = spec.late_options {
                late(&mut opts);
            }
            RunResult::new(meta, Value::Object(opts), r.metrics, r.series)
        }
    };
    judge(ths, &watch.aborted, &mut result);
    for o in spec.observers.iter_mut() {
        o.finish(&result);
    }
    for e in spec.outputs.finish(&result) {
        volley_engine::log::warn(&e);
    }
    if let Some(e) = spec.json_out.as_ref().and_then(|o| o.error()) {
        volley_engine::log::warn(&e);
    }
    let outcome = match Outcome::of_run(
        teardown_error.as_deref(),
        aborted.as_deref(),
        thresholds_message(&result),
        result.meta.interrupted,
        false,
    ) {
        Outcome::ThresholdsFailed(m) if watch.message.is_some() => Outcome::ThresholdsAborted(m),
        o => o,
    };
    Ok(Finished {
        result,
        outcome,
        threshold_abort: watch.message,
        teardown_error,
        aborted,
    })
}

/// What the plan was and how each scenario went, for the result's options.
fn plan_options(plan: &VuPlan, r: &volley_engine::vus::VuRunResult, opts: &mut Map<String, Value>) {
    let first = &plan.scenarios[0].executor;
    let executor = if plan.scenarios.len() == 1 {
        first.name()
    } else {
        "scenarios"
    };
    opts.insert("executor".into(), executor.into());
    opts.insert("vus_max".into(), plan.max_vus().into());
    opts.insert(
        "duration_s".into(),
        plan.max_duration().as_secs_f64().into(),
    );
    if let (1, Some(n)) = (plan.scenarios.len(), first.total_iterations()) {
        opts.insert("iterations".into(), n.into());
    }
    let scenarios: Vec<Value> = r
        .scenarios
        .iter()
        .zip(&plan.scenarios)
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
        .collect();
    opts.insert("scenarios".into(), scenarios.into());
}

/// `abortOnFail` thresholds, judged once a second on the running totals (of this process, or
/// merged from a distributed run's agents by its coordinator).
pub struct AbortWatch {
    /// Indexes of the thresholds with `abortOnFail`.
    watched: Vec<usize>,
    /// Per threshold: did it stop the test?
    aborted: Vec<bool>,
    warmup_s: f64,
    message: Option<String>,
}

impl AbortWatch {
    pub fn new(ths: &[Threshold], max_duration_s: f64) -> AbortWatch {
        AbortWatch {
            watched: (0..ths.len()).filter(|i| ths[*i].abort_on_fail).collect(),
            aborted: vec![false; ths.len()],
            warmup_s: volley_monitor::drift::live_warmup(max_duration_s),
            message: None,
        }
    }

    /// True when the test must stop now.
    fn tick(&mut self, ths: &[Threshold], tick: &Tick<'_>) -> bool {
        let (agg, elapsed) = (tick.agg, tick.elapsed);
        let warmup_s = self.warmup_s;
        self.judge(ths, elapsed, |th| {
            if th.drift.is_some() {
                th.check_live(agg, elapsed.as_secs_f64(), warmup_s) != Some(false)
            } else {
                holds_now(
                    th,
                    agg.totals()
                        .map(|(d, a)| (d.key.name.as_str(), &d.key.tags, a)),
                    elapsed,
                )
            }
        })
    }

    /// Judge the watched thresholds `elapsed` into the run (`holds(th)`: does it hold now?);
    /// true when the test must stop now.
    pub fn judge(
        &mut self,
        ths: &[Threshold],
        elapsed: std::time::Duration,
        holds: impl Fn(&Threshold) -> bool,
    ) -> bool {
        if self.watched.is_empty() || self.message.is_some() {
            return false;
        }
        let mut crossed: Vec<String> = Vec::new();
        for &i in &self.watched {
            let th = &ths[i];
            if elapsed < th.delay_abort_eval || holds(th) {
                continue;
            }
            self.aborted[i] = true;
            if !crossed.contains(&th.metric) {
                crossed.push(th.metric.clone());
            }
        }
        if crossed.is_empty() {
            return false;
        }
        self.message = Some(format!(
            "thresholds on metrics '{}' were crossed; at least one has abortOnFail enabled, \
             stopping test prematurely",
            crossed.join(", ")
        ));
        true
    }

    /// When a slope starts being judged during the run (see [`Threshold::check_live`]).
    pub fn warmup_s(&self) -> f64 {
        self.warmup_s
    }

    /// Per threshold: did it stop the test?
    pub fn aborted(&self) -> &[bool] {
        &self.aborted
    }

    /// k6's message when crossed thresholds stopped the test.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }
}

/// Does a (non-drift) threshold hold on the running totals `series`, `elapsed` into the run?
/// As k6: during the run, a metric without samples is not judged yet.
pub fn holds_now<'a>(
    th: &Threshold,
    series: impl Iterator<Item = (&'a str, &'a TagSet, &'a Agg)>,
    elapsed: std::time::Duration,
) -> bool {
    match thresholds::merged(th, series).filter(|m| m.samples() > 0) {
        Some(m) => th.check(Some(&m), elapsed.as_secs_f64()).0,
        None => true,
    }
}

/// The verdicts on a finished result's totals (a metric without samples counts as zeros, as
/// k6), stored in `result.thresholds`; `aborted[i]`: threshold `i` stopped the test (empty:
/// none did).
pub fn judge(ths: &[Threshold], aborted: &[bool], result: &mut RunResult) {
    let aggs: Vec<(String, TagSet, Agg)> = result
        .metrics
        .iter()
        .filter_map(|m| Some((m.name.clone(), m.tags.clone(), m.to_agg().ok()?)))
        .collect();
    let mut verdicts = thresholds::evaluate(
        ths,
        || aggs.iter().map(|(n, t, a)| (n.as_str(), t, a)),
        result.meta.duration_s,
    );
    thresholds::evaluate_drift(ths, result, &mut verdicts);
    result.thresholds = ths
        .iter()
        .zip(&verdicts)
        .enumerate()
        .map(|(i, (t, v))| {
            let ab = aborted.get(i).copied().unwrap_or(false);
            ThresholdResult {
                metric: t.metric.clone(),
                expression: t.source.clone(),
                ok: v.ok && !ab,
                // Drift thresholds without data observe nothing (NaN).
                observed: v.observed.is_finite().then_some(v.observed),
                aborted: ab,
            }
        })
        .collect();
}

/// k6's message for failed thresholds, if any failed.
pub fn thresholds_message(result: &RunResult) -> Option<String> {
    let mut names: Vec<&str> = Vec::new();
    for t in result.thresholds.iter().filter(|t| !t.ok) {
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
