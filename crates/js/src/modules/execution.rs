//! Natives of `k6/execution`: ids and counters of the VU, its scenario, the instance, VU
//! tags, `test.options` and `test.abort()`.
//!
//! Scenario and instance figures come from the engine's live [`ScenarioState`]s. One instance
//! runs per process, so the instance-level and test-level figures are the same.
//! `instance.vusActive` counts VUs that are inside an iteration at the moment it is read.
//! With an execution segment, `vu.idInTest` and `scenario.iterationInTest` are the test-wide
//! numbers (the segment's stripe, as k6), and `instance.executionSegment` /
//! `instance.executionSegmentSequence` (Volley's additions) name the share this process runs.

use super::throw;
use rquickjs::{Ctx, Function, Object, Value};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::vu::{ScriptShared, VuState};
use volley_engine::vus::ScenarioState;

/// Run-wide state of the module.
#[derive(Default)]
pub(crate) struct RunInfo {
    initialized: AtomicU64,
    /// `exec.test.abort()` was called (in any phase).
    aborted: AtomicBool,
    /// The script's `options` as JSON (`exec.test.options`).
    options: OnceLock<String>,
}

impl RunInfo {
    pub(crate) fn vu_initialized(&self) {
        self.initialized.fetch_add(1, Ordering::Relaxed);
    }
}

/// Record the script's options (before VUs start).
pub(crate) fn set_options(shared: &ScriptShared, options: &serde_json::Value) {
    let _ = shared.ext.exec.options.set(options.to_string());
}

/// Did the script call `exec.test.abort()`?
pub(crate) fn script_aborted(shared: &ScriptShared) -> bool {
    shared.ext.exec.aborted.load(Ordering::Relaxed)
}

fn unix_ms(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64)
}

fn info<'js>(ctx: &Ctx<'js>, st: &VuState) -> rquickjs::Result<Object<'js>> {
    let run = &st.shared.ext.exec;
    let o = Object::new(ctx.clone())?;
    let in_iteration = !st.in_init.get();
    let vu_iter = st.ext.iter.get().saturating_sub(1);
    o.set("vuId", st.id)?;
    // A segment's ids and iterations are test-wide through its stripe (k6's segmented index).
    let wenv = st.env.as_ref();
    o.set("vuIdInTest", wenv.map_or(st.id, |e| e.vu_id_in_test(st.id)))?;
    let seg = wenv.and_then(|e| e.segment.as_ref());
    o.set(
        "segment",
        seg.map_or("0:1".to_string(), |s| s.tuple.segment.to_string()),
    )?;
    o.set(
        "sequence",
        seg.map_or(String::new(), |s| s.tuple.sequence.to_string()),
    )?;
    o.set("vuIter", if in_iteration { vu_iter } else { 0 })?;
    o.set("initialized", run.initialized.load(Ordering::Relaxed))?;
    let all: &[ScenarioState] = st.env.as_ref().map_or(&[], |e| e.scenarios.as_slice());
    let sum = |f: fn(&ScenarioState) -> u64| all.iter().map(f).sum::<u64>();
    o.set("completed", sum(ScenarioState::completed))?;
    o.set("interrupted", sum(ScenarioState::interrupted))?;
    o.set("active", sum(ScenarioState::active))?;
    // The test's clock starts with its first scenario.
    let first = all
        .iter()
        .filter_map(ScenarioState::started)
        .min_by_key(|s| s.0);
    o.set(
        "elapsedMs",
        first.map_or(0.0, |(t, _)| t.elapsed().as_secs_f64() * 1000.0),
    )?;
    if let Some(sc) = st.scenario.and_then(|i| all.get(i)) {
        o.set("scenario", sc.spec.name.as_str())?;
        o.set("executor", sc.spec.executor.name())?;
        o.set("startTime", sc.started().map_or(0.0, |(_, s)| unix_ms(s)))?;
        o.set("progress", sc.progress())?;
        o.set("scenarioIter", st.iteration.get())?;
        let it = st.iteration.get();
        o.set(
            "scenarioIterInTest",
            wenv.map_or(it, |e| e.iteration_in_test(it)),
        )?;
    } else {
        // Setup and teardown run outside any scenario.
        o.set("scenario", "")?;
        o.set("executor", "")?;
        o.set("startTime", 0.0)?;
        o.set("progress", 0.0)?;
        o.set("scenarioIter", 0)?;
        o.set("scenarioIterInTest", 0)?;
    }
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
                    match st.shared.ext.exec.options.get() {
                        Some(p) => ctx.json_parse(p.clone()),
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
