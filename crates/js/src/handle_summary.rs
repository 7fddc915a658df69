//! `handleSummary(data)`: as k6, called once after the test on a fresh VU (init code runs
//! again), with k6's data object ([`crate::Summary::data`]). Its return value maps outputs to
//! contents: `stdout`, `stderr`, or a file path (relative to the current directory).

use crate::script::{self, BytecodeLoader, ModResolver};
use crate::vu::{install_globals, ScriptShared, VuState};
use rquickjs::{Context, Function, Module, Object, Runtime, Value};
use std::sync::Arc;

/// What `handleSummary` asked for: (output key, contents), in the object's order.
pub type Outputs = Vec<(String, Vec<u8>)>;

/// Run the script's `handleSummary` with `data`. `Ok(None)`: the script has none.
pub(crate) fn call(
    shared: &Arc<ScriptShared>,
    data: &serde_json::Value,
    ctl: &volley_engine::RunControl,
) -> Result<Option<Outputs>, String> {
    let rt = Runtime::new().map_err(|e| format!("cannot start QuickJS: {e}"))?;
    rt.set_max_stack_size(crate::vu::JS_STACK);
    rt.set_interrupt_handler(Some(stop_on_signal(ctl)));
    rt.set_loader(
        ModResolver,
        BytecodeLoader {
            shared: shared.clone(),
        },
    );
    let ctx = Context::full(&rt).map_err(|e| format!("cannot start QuickJS: {e}"))?;
    let state = VuState::new_init(shared.clone());
    *state.halt.borrow_mut() = Some(stop_on_signal(ctl));
    crate::event_loop::track_rejections(&rt, Some(state.clone()));
    let out = ctx.with(|ctx| -> Result<Option<Outputs>, String> {
        let _data = crate::rt::DropVuData(&ctx);
        install_globals(&ctx, &state).map_err(|e| script::describe(&ctx, e))?;
        let main = &shared.main;
        let bc = shared
            .bytecode
            .get()
            .and_then(|m| m.get(main))
            .ok_or_else(|| format!("{main} was not compiled"))?;
        // SAFETY: bytecode written by JS_WriteObject in this process.
        let m = unsafe { Module::load(ctx.clone(), bc) }.map_err(|e| script::describe(&ctx, e))?;
        let (m, promise) = m.eval().map_err(|e| script::describe(&ctx, e))?;
        crate::event_loop::settle_module(&ctx, &state, &promise)
            .map_err(|e| script::describe(&ctx, e))?;
        promise
            .finish::<Value>()
            .map_err(|e| script::describe(&ctx, e))?;
        let _ = ctx.globals().remove("__volley");
        let ns = m.namespace().map_err(|e| script::describe(&ctx, e))?;
        let Some(f) = ns
            .get::<_, Option<Function>>("handleSummary")
            .ok()
            .flatten()
        else {
            return Ok(None);
        };
        state.in_init.set(false);
        let arg = ctx
            .json_parse(data.to_string())
            .map_err(|e| script::describe(&ctx, e))?;
        // An async handleSummary returns a promise: its value (timers run, as in k6).
        let r: Value = crate::event_loop::settle(&ctx, &state, f.call((arg,)))
            .map_err(|e| script::describe(&ctx, e))?;
        if state.interrupted.get() {
            return Err("interrupted while waiting for a timer".into());
        }
        if r.is_undefined() || r.is_null() {
            return Ok(Some(Vec::new()));
        }
        let obj: Object = r
            .into_object()
            .ok_or("handleSummary() must return an object mapping outputs to contents")?;
        let mut outs = Vec::new();
        for kv in obj.props::<String, Value>() {
            let (k, v) = kv.map_err(|e| script::describe(&ctx, e))?;
            outs.push((k.clone(), contents(&k, &v)?));
        }
        Ok(Some(outs))
    });
    drop(ctx);
    drop(rt);
    out
}

/// One output's contents: as k6, only a string or an `ArrayBuffer` (or a byte view of one);
/// anything else fails the whole result before a byte is written.
fn contents(key: &str, v: &Value<'_>) -> Result<Vec<u8>, String> {
    if let Some(s) = v.as_string() {
        return Ok(s.to_string().unwrap_or_default().into_bytes());
    }
    // SAFETY (both): copied at once; no JS runs while the slice is alive.
    if let Some(ab) = rquickjs::ArrayBuffer::from_value(v.clone()) {
        return Ok(unsafe { ab.as_bytes() }
            .map(<[u8]>::to_vec)
            .unwrap_or_default());
    }
    if let Ok(view) = rquickjs::TypedArray::<u8>::from_value(v.clone()) {
        return Ok(unsafe { view.as_bytes() }
            .map(<[u8]>::to_vec)
            .unwrap_or_default());
    }
    let kind = if v.is_undefined() {
        "undefined"
    } else if v.is_null() {
        "null"
    } else if v.is_number() {
        "number"
    } else if v.is_bool() {
        "boolean"
    } else if v.is_array() {
        "array"
    } else if v.is_function() {
        "function"
    } else if v.is_object() {
        "object"
    } else {
        "value"
    };
    Err(format!(
        "error handling summary object {key}: invalid type {kind}, it needs to be a string \
         or ArrayBuffer (use JSON.stringify(...) or textSummary(...) to make one)"
    ))
}

/// Write `handleSummary`'s outputs: `stdout`, `stderr`, else a file path. As k6, an output
/// that cannot be written does not stop the others: every failure is in the one error.
pub fn write_outputs(outs: &Outputs) -> Result<(), String> {
    use std::io::Write;
    let mut errs = Vec::new();
    for (k, v) in outs {
        let written = match k.as_str() {
            "stdout" => {
                let mut o = std::io::stdout().lock();
                o.write_all(v).and_then(|_| o.flush())
            }
            "stderr" => std::io::stderr().lock().write_all(v),
            path => {
                let p = std::path::Path::new(path);
                match p.parent().filter(|d| !d.as_os_str().is_empty()) {
                    Some(dir) => std::fs::create_dir_all(dir),
                    None => Ok(()),
                }
                .and_then(|_| std::fs::write(p, v))
            }
        };
        if let Err(e) = written {
            errs.push(format!("could not write '{k}': {e}"));
        }
    }
    if errs.is_empty() {
        return Ok(());
    }
    Err(format!(
        "handleSummary: could not save some summary information:\n\t- {}",
        errs.join("\n\t- ")
    ))
}

/// The interrupt handler of `handleSummary`: a Ctrl-C that comes while it runs stops it (the
/// default summary is printed instead); after a second Ctrl-C during the run it gets 0.5 s.
fn stop_on_signal(ctl: &volley_engine::RunControl) -> Box<dyn Fn() -> bool + Send> {
    let ctl = ctl.clone();
    let (was_int, was_hard) = (ctl.was_interrupted(), ctl.is_hard_stopped());
    let began = std::time::Instant::now();
    Box::new(move || {
        (ctl.was_interrupted() && !was_int)
            || (ctl.is_hard_stopped() && !was_hard)
            || (was_hard && began.elapsed() > std::time::Duration::from_millis(500))
    })
}
