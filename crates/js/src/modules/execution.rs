//! Natives of `k6/execution`: ids and counters of the VU, the scenario and the instance,
//! VU tags, and `test.abort()`.
//!
//! One scenario ("default") runs per process until scenarios are supported, so the
//! instance-level and test-level counters are the same. `instance.vusActive` counts VUs that
//! are inside an iteration at the moment it is read.

use super::throw;
use rquickjs::{Ctx, Function, Object, Value};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Instant, SystemTime};

use crate::vu::{ScriptShared, VuState};
use volley_engine::vus::Executor;

/// What the executor is, as `exec.scenario` reports it.
#[derive(Clone, Debug)]
pub(crate) struct PlanInfo {
    pub(crate) executor: String,
    pub(crate) duration_s: f64,
    /// Shared-iterations: the total.
    pub(crate) iterations: Option<u64>,
    /// The script's `options` as JSON (`exec.test.options`).
    pub(crate) options: String,
}

/// Run-wide counters.
#[derive(Default)]
pub(crate) struct RunInfo {
    started: AtomicU64,
    completed: AtomicU64,
    active: AtomicU64,
    initialized: AtomicU64,
    /// `exec.test.abort()` was called (in any phase).
    aborted: AtomicBool,
    start: OnceLock<(Instant, SystemTime)>,
    pub(crate) plan: OnceLock<PlanInfo>,
}

impl RunInfo {
    /// An iteration begins; returns its index across the run.
    pub(crate) fn iteration_started(&self) -> u64 {
        self.start
            .get_or_init(|| (Instant::now(), SystemTime::now()));
        self.active.fetch_add(1, Ordering::Relaxed);
        self.started.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn iteration_done(&self) {
        self.completed.fetch_add(1, Ordering::Relaxed);
        let _ = self
            .active
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    pub(crate) fn vu_initialized(&self) {
        self.initialized.fetch_add(1, Ordering::Relaxed);
    }

    /// Record how the run is planned (called once, before VUs start).
    pub(crate) fn set_plan(&self, plan: PlanInfo) {
        let _ = self.plan.set(plan);
    }
}

/// Record the resolved executor and the script's options (before VUs start).
pub(crate) fn set_plan(shared: &ScriptShared, ex: &Executor, options: &serde_json::Value) {
    let iterations = match ex {
        Executor::SharedIterations { iterations, .. } => Some(*iterations),
        _ => None,
    };
    shared.ext.exec.set_plan(PlanInfo {
        executor: ex.name().to_string(),
        duration_s: ex.duration().as_secs_f64(),
        iterations,
        options: options.to_string(),
    });
}

/// Did the script call `exec.test.abort()`?
pub(crate) fn script_aborted(shared: &ScriptShared) -> bool {
    shared.ext.exec.aborted.load(Ordering::Relaxed)
}

fn info<'js>(ctx: &Ctx<'js>, st: &VuState) -> rquickjs::Result<Object<'js>> {
    let run = &st.shared.ext.exec;
    let o = Object::new(ctx.clone())?;
    let in_iteration = !st.in_init.get();
    let vu_iter = st.ext.iter.get().saturating_sub(1);
    o.set("vuId", st.id)?;
    o.set("vuIter", if in_iteration { vu_iter } else { 0 })?;
    o.set("scenarioIter", st.ext.scenario_iter.get())?;
    o.set("completed", run.completed.load(Ordering::Relaxed))?;
    o.set("active", run.active.load(Ordering::Relaxed))?;
    o.set("initialized", run.initialized.load(Ordering::Relaxed))?;
    let (elapsed_ms, start_ms) = match run.start.get() {
        Some((i, s)) => (
            i.elapsed().as_secs_f64() * 1000.0,
            s.duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_millis() as f64),
        ),
        None => (0.0, 0.0),
    };
    o.set("elapsedMs", elapsed_ms)?;
    o.set("startTime", start_ms)?;
    let plan = run.plan.get();
    o.set(
        "executor",
        plan.map_or("shared-iterations", |p| p.executor.as_str()),
    )?;
    let progress = match plan {
        Some(PlanInfo {
            iterations: Some(n),
            ..
        }) if *n > 0 => run.completed.load(Ordering::Relaxed) as f64 / *n as f64,
        Some(p) if p.duration_s > 0.0 => elapsed_ms / 1000.0 / p.duration_s,
        _ => 0.0,
    };
    o.set("progress", progress.clamp(0.0, 1.0))?;
    Ok(o)
}

pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    v: &Object<'js>,
    st: &Rc<VuState>,
) -> rquickjs::Result<()> {
    {
        let st = st.clone();
        v.set(
            "execInfo",
            Function::new(ctx.clone(), move |ctx: Ctx<'js>| info(&ctx, &st))?,
        )?;
    }
    {
        let st = st.clone();
        v.set(
            "testOptions",
            Function::new(
                ctx.clone(),
                move |ctx: Ctx<'js>| -> rquickjs::Result<Value<'js>> {
                    match st.shared.ext.exec.plan.get() {
                        Some(p) => ctx.json_parse(p.options.clone()),
                        None => Ok(Value::new_undefined(ctx.clone())),
                    }
                },
            )?,
        )?;
    }
    {
        let st = st.clone();
        v.set(
            "setVuTag",
            Function::new(
                ctx.clone(),
                move |ctx: Ctx<'js>, k: String, val: Value<'js>| -> rquickjs::Result<()> {
                    let mut tags = st.ext.tags.borrow_mut();
                    if val.is_undefined() || val.is_null() {
                        tags.remove(&k);
                        return Ok(());
                    }
                    if val.is_object() {
                        return Err(throw(
                            &ctx,
                            "exec.vu.tags values must be strings, numbers or booleans",
                        ));
                    }
                    let s = val.get::<rquickjs::Coerced<String>>()?.0;
                    tags.insert(k, s);
                    Ok(())
                },
            )?,
        )?;
    }
    {
        let st = st.clone();
        v.set(
            "abort",
            Function::new(
                ctx.clone(),
                move |ctx: Ctx<'js>, msg: rquickjs::function::Opt<String>| {
                    let msg = msg.0.unwrap_or_else(|| "test aborted".into());
                    *st.ext.abort.borrow_mut() = Some(msg.clone());
                    st.shared.ext.exec.aborted.store(true, Ordering::Relaxed);
                    // Unwind the script; the VU reports the abort instead of this error.
                    Err::<(), _>(throw(&ctx, &format!("test aborted: {msg}")))
                },
            )?,
        )?;
    }
    Ok(())
}
