//! The VU's global natives: `sleep`, `open`, `__ENV`/`__VU`/`__ITER`, console and the
//! other functions k6 scripts call without an import.

use super::*;
use rquickjs::qjs;
use std::ffi::CStr;

fn throw(ctx: &Ctx<'_>, msg: &str) -> rquickjs::Error {
    rquickjs::Exception::throw_message(ctx, msg)
}

/// Copy a JS object's own enumerable string-keyed properties into `tags`.
pub(crate) fn add_tags<'js>(tags: &mut TagSet, obj: Option<Value<'js>>) -> rquickjs::Result<()> {
    let Some(o) = obj.and_then(|v| v.into_object()) else {
        return Ok(());
    };
    for kv in o.props::<String, rquickjs::Coerced<String>>() {
        let (k, v) = kv?;
        tags.insert(k, v.0);
    }
    Ok(())
}

/// Define `__ENV`, `__VU`, `__ITER`, `open`, `console` and the hidden `__volley` natives.
pub(crate) fn install_globals<'js>(ctx: &Ctx<'js>, st: &Rc<VuState>) -> rquickjs::Result<()> {
    let g = ctx.globals();
    let env = Object::new(ctx.clone())?;
    // Each value is an atom's string: QuickJS keeps one atom per distinct string per
    // runtime, so a shared runtime's VUs share the values (`__ENV` holds the whole process
    // environment, as k6's: ~40 strings, 2.7 KB per VU on a quiet shell, more in CI).
    let value = |v: &str| rquickjs::Atom::from_str(ctx.clone(), v)?.to_js_string();
    for (k, v) in &st.shared.env {
        env.set(k.as_str(), value(v)?)?;
    }
    // A scenario's `env` is added to the process's for its VUs (as k6).
    if let Some(spec) = st.scenario_spec() {
        for (k, v) in &spec.env {
            env.set(k.as_str(), value(v)?)?;
        }
    }
    g.set("__ENV", env)?;
    g.set("__VU", st.id)?;
    g.set("__ITER", 0)?;

    let v = Object::new(ctx.clone())?;
    {
        let st = st.clone();
        crate::rt::native(ctx, &v, "log", move |level: String, msg: String| {
            st.shared.log(&level, &msg)
        })?;
    }
    {
        let st = st.clone();
        crate::rt::native(ctx, &v, "sleep", move |ctx: Ctx<'js>, secs: f64| {
            if st.in_init.get() {
                return Err(throw(&ctx, "sleep() is not allowed in the init context"));
            }
            // sleep(Infinity) is a long sleep (k6), not a panic; NaN is none.
            let d = volley_engine::clamp_secs(secs);
            match st.wait_idle(tokio::time::sleep(d)) {
                Some(()) => Ok(()),
                None => Err(throw(&ctx, "test interrupted")),
            }
        })?;
    }
    crate::rt::native(
        ctx,
        &v,
        "consoleFormat",
        |ctx: Ctx<'js>| -> rquickjs::Result<Value<'js>> {
            let f: Function = CONSOLE_FORMAT.eval(&ctx)?;
            f.call(())
        },
    )?;
    crate::check::install(ctx, &v, st)?;
    {
        let st = st.clone();
        crate::rt::native(ctx, &v, "groupEnter", move |ctx: Ctx<'js>, name: String| {
            if st.in_init.get() {
                return Err(throw(&ctx, "group() is not allowed in the init context"));
            }
            if name.contains("::") {
                return Err(throw(&ctx, "group names may not contain '::'"));
            }
            {
                let mut g = st.group.borrow_mut();
                g.push_str("::");
                g.push_str(&name);
            }
            st.group_changed();
            st.group_starts.borrow_mut().push(Instant::now());
            Ok(())
        })?;
    }
    {
        let st = st.clone();
        crate::rt::native(ctx, &v, "groupLeave", move || {
            let Some(t0) = st.group_starts.borrow_mut().pop() else {
                return;
            };
            let took = t0.elapsed();
            let tags = st.base_tags();
            // An interrupted group has no duration (k6 drops samples of a cut iteration).
            if !st.interrupted.get() {
                let mut rec = st.rec.borrow_mut();
                let key = MetricKey {
                    name: volley_metrics::names::GROUP_DURATION.into(),
                    tags,
                };
                rec.record_keyed(key, MetricKind::Trend, Unit::Time, |r, h| {
                    r.trend_us(h, took.as_micros() as u64)
                });
            }
            {
                let mut g = st.group.borrow_mut();
                let cut = g.rfind("::").unwrap_or(0);
                g.truncate(cut);
            }
            st.group_changed();
        })?;
    }
    {
        let st = st.clone();
        crate::rt::native(
            ctx,
            &v,
            "metric",
            move |ctx: Ctx<'js>, name: String, kind: u32, is_time: bool| {
                if !st.in_init.get() {
                    return Err(throw(
                        &ctx,
                        "metrics must be declared in the init context (outside functions)",
                    ));
                }
                let valid = !name.is_empty()
                    && name.len() <= 128
                    && name
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !valid {
                    return Err(throw(
                        &ctx,
                        &format!(
                            "invalid metric name '{name}': use letters, digits and _, \
                                 starting with a letter or _, at most 128 characters"
                        ),
                    ));
                }
                let kind = match kind {
                    0 => MetricKind::Counter,
                    1 => MetricKind::Gauge,
                    2 => MetricKind::Rate,
                    _ => MetricKind::Trend,
                };
                let unit = if is_time && kind == MetricKind::Trend {
                    Unit::Time
                } else {
                    Unit::Default
                };
                if let Some(builtin) = volley_metrics::names::BUILTIN
                    .iter()
                    .find(|(n, _)| *n == name)
                {
                    if builtin.1 != kind {
                        return Err(throw(
                            &ctx,
                            &format!("metric '{name}' is built in with another type"),
                        ));
                    }
                }
                let mut reg = st.shared.metrics.lock().unwrap();
                match reg.get(&name) {
                    Some((k, _)) if *k != kind => {
                        return Err(throw(
                            &ctx,
                            &format!("metric '{name}' was already declared with another type"),
                        ))
                    }
                    Some(_) => {}
                    None => {
                        reg.insert(name.clone(), (kind, unit));
                    }
                }
                let mut m = st.metrics.borrow_mut();
                m.push((name, kind, unit));
                Ok(m.len() as u32 - 1)
            },
        )?;
    }
    {
        let st = st.clone();
        crate::rt::native(
            ctx,
            &v,
            "metricAdd",
            move |ctx: Ctx<'js>, id: u32, value: f64, tags: Opt<Value<'js>>| {
                if st.in_init.get() {
                    return Err(throw(
                        &ctx,
                        "metrics cannot be added to in the init context",
                    ));
                }
                if !value.is_finite() {
                    return Err(throw(&ctx, "metric values must be finite numbers"));
                }
                let (name, kind, unit) = match st.metrics.borrow().get(id as usize) {
                    Some(m) => m.clone(),
                    None => return Err(throw(&ctx, "unknown metric")),
                };
                let mut t = st.base_tags();
                add_tags(&mut t, tags.0)?;
                let mut rec = st.rec.borrow_mut();
                let key = MetricKey { name, tags: t };
                rec.record_keyed(key, kind, unit, |r, h| r.add(h, value));
                Ok(())
            },
        )?;
    }
    crate::http::install(ctx, &v, st)?;
    crate::modules::install(ctx, &v, st)?;
    crate::event_loop::install(ctx, st)?;
    g.set("__volley", v)?;

    {
        let st = st.clone();
        g.set(
            "open",
            Function::new(
                ctx.clone(),
                move |ctx: Ctx<'js>, path: String, mode: Opt<String>| {
                    if !st.in_init.get() {
                        return Err(throw(
                            &ctx,
                            "open() can only be called in the init context (outside functions)",
                        ));
                    }
                    // Relative to the calling module, as k6 (not the main script's dir).
                    let requiring = st.ext.requiring.borrow().last().cloned();
                    let module = script::calling_module(&ctx, requiring, &st.shared.main);
                    let full = script::open_path(&module, &path);
                    let bytes = {
                        let mut files = st.shared.files.lock().unwrap();
                        match files.get(&full) {
                            Some(b) => b.clone(),
                            // An archive holds every file its init opened; no disk lookups.
                            None if st.shared.archived.get().is_some() => {
                                return Err(throw(
                                    &ctx,
                                    &format!(
                                        "open({path}): {}: {}",
                                        full.display(),
                                        crate::archive::NOT_ARCHIVED
                                    ),
                                ));
                            }
                            None => {
                                let cap = crate::script::MAX_OPEN_BYTES;
                                let b = crate::script::read_capped(&full, cap).map_err(|e| {
                                    throw(&ctx, &format!("open({path}): {}: {e}", full.display()))
                                })?;
                                let b = Arc::new(b);
                                files.insert(full.clone(), b.clone());
                                b
                            }
                        }
                    };
                    if mode.0.as_deref() == Some("b") {
                        let ab = rquickjs::ArrayBuffer::new_copy(ctx.clone(), bytes.as_slice())?;
                        return Ok(ab.into_value());
                    }
                    let s = String::from_utf8_lossy(&bytes);
                    Ok(rquickjs::String::from_str(ctx.clone(), &s)?.into_value())
                },
            )?,
        )?;
    }
    CONSOLE.eval::<()>(ctx)
}

/// The console shim: globals, not a module.
static CONSOLE: SharedScript =
    SharedScript::new(c"volley:console", c"eval_script", script::CONSOLE_JS);

/// The console's formatting, made per VU on its first call (`__volley.consoleFormat()`).
static CONSOLE_FORMAT: SharedScript = SharedScript::new(
    c"volley:console-format",
    c"volley/console-format",
    include_str!("../shims/console_format.js"),
);

extern "C" {
    // Added to the vendored QuickJS (vendor/rquickjs-sys/VOLLEY.md, "Code shared by a
    // runtime's contexts").
    fn JS_VolleyReadShared(
        ctx: *mut qjs::JSContext,
        buf: *const u8,
        len: usize,
        name: *const std::ffi::c_char,
    ) -> qjs::JSValue;
}

/// A built-in script that VUs evaluate (not a module: the console shim, k6/html's API).
/// It is compiled once per process, and a shared runtime reads its bytecode once for all
/// its VUs: parsing it per VU cost VU start-up CPU, and its functions' bytecode was per VU
/// memory.
pub(crate) struct SharedScript {
    /// The runtime's name for its code (distinct from every module name).
    key: &'static CStr,
    /// The file name in its error positions.
    file: &'static CStr,
    src: &'static str,
    bytecode: OnceLock<Option<Vec<u8>>>,
}

impl SharedScript {
    pub(crate) const fn new(key: &'static CStr, file: &'static CStr, src: &'static str) -> Self {
        SharedScript {
            key,
            file,
            src,
            bytecode: OnceLock::new(),
        }
    }

    /// Run it in `ctx`; its completion value as `T`.
    pub(crate) fn eval<'js, T: rquickjs::FromJs<'js>>(
        &self,
        ctx: &Ctx<'js>,
    ) -> rquickjs::Result<T> {
        let Some(bc) = self.bytecode.get_or_init(|| self.compile(ctx)) else {
            // (cannot happen with the shims as shipped; their errors show this way)
            let mut opts = rquickjs::context::EvalOptions::default();
            opts.filename = self.file.to_str().ok().map(String::from);
            return ctx.eval_with_options(self.src, opts);
        };
        let raw = ctx.as_raw().as_ptr();
        // SAFETY: bytecode this process wrote with JS_WriteObject; JS_EvalFunction takes
        // the function's reference, the returned value is owned by `Value`.
        let v = unsafe {
            let f = JS_VolleyReadShared(raw, bc.as_ptr(), bc.len(), self.key.as_ptr());
            if qjs::JS_IsException(f) {
                return Err(rquickjs::Error::Exception);
            }
            let r = qjs::JS_EvalFunction(raw, f);
            if qjs::JS_IsException(r) {
                return Err(rquickjs::Error::Exception);
            }
            Value::from_raw(ctx.clone(), r)
        };
        T::from_js(ctx, v)
    }

    fn compile(&self, ctx: &Ctx<'_>) -> Option<Vec<u8>> {
        let raw = ctx.as_raw().as_ptr();
        let src = std::ffi::CString::new(self.src).ok()?;
        // SAFETY: a live context; the compiled function and the written buffer are freed
        // here, in that context.
        unsafe {
            // Strict, as `Ctx::eval` evaluates.
            let flags = qjs::JS_EVAL_TYPE_GLOBAL
                | qjs::JS_EVAL_FLAG_STRICT
                | qjs::JS_EVAL_FLAG_COMPILE_ONLY;
            let f = qjs::JS_Eval(
                raw,
                src.as_ptr(),
                self.src.len() as _,
                self.file.as_ptr(),
                flags as i32,
            );
            if qjs::JS_IsException(f) {
                let _ = ctx.catch();
                return None;
            }
            let mut len: qjs::size_t = 0;
            let buf = qjs::JS_WriteObject(raw, &mut len, f, qjs::JS_WRITE_OBJ_BYTECODE as i32);
            qjs::JS_FreeValue(raw, f);
            if buf.is_null() {
                let _ = ctx.catch();
                return None;
            }
            let v = std::slice::from_raw_parts(buf, len as usize).to_vec();
            qjs::js_free(raw, buf.cast());
            Some(v)
        }
    }
}
