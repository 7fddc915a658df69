//! k6 modules beyond the core (`k6/encoding`, `k6/crypto`, `k6/execution`, `k6/data`,
//! `k6/html`, `k6/ws`, `k6/websockets`, `k6/net/grpc`, `k6/experimental/fs`, `k6/experimental/csv`),
//! Volley's `volley/ledger`, the `jslib.k6.io` stand-ins, CommonJS `require`, and the state
//! behind the `k6/http` extras (cookie jars, response callbacks).
//!
//! Each module is a JS shim (`src/shims/`) over natives installed here on the hidden
//! `__volley` object. Per-run state lives in [`SharedExt`] (inside `ScriptShared`), per-VU
//! state in [`VuExt`] (inside `VuState`), so the core VU code only calls
//! [`begin_iteration`] / [`end_iteration`] and [`install`].

pub(crate) mod commonjs;
pub(crate) mod cookies;
pub(crate) mod crypto;
pub(crate) mod csv;
pub(crate) mod data;
pub(crate) mod execution;
pub(crate) mod fs;
pub(crate) mod grpc;
pub(crate) mod html;
pub(crate) mod http_ext;
pub(crate) mod ledger;
pub(crate) mod ws;

use crate::rt::VuData;
use crate::vu::VuState;
use rquickjs::{ArrayBuffer, Ctx, Object, Value};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use volley_metrics::TagSet;

/// Module name `https://jslib.k6.io/k6-utils/<any version>/index.js` is served as.
pub(crate) const JSLIB_UTILS: &str = "jslib.k6.io/k6-utils";
/// Module name `https://jslib.k6.io/k6-summary/<any version>/index.js` is served as.
pub(crate) const JSLIB_SUMMARY: &str = "jslib.k6.io/k6-summary";

/// The built-in module a remote jslib URL stands for (any version in the path).
pub(crate) fn jslib(url: &str) -> Option<&'static str> {
    let rest = url
        .strip_prefix("https://jslib.k6.io/")
        .or_else(|| url.strip_prefix("http://jslib.k6.io/"))?;
    let (lib, rest) = rest.split_once('/')?;
    // "<version>/index.js" (or a bare version directory).
    let file = rest.split_once('/').map_or("", |(_, f)| f);
    if !(file.is_empty() || file == "index.js") {
        return None;
    }
    match lib {
        "k6-utils" => Some(JSLIB_UTILS),
        "k6-summary" => Some(JSLIB_SUMMARY),
        _ => None,
    }
}

/// Per-run state of these modules (shared by every VU, `Send + Sync`).
#[derive(Default)]
pub(crate) struct SharedExt {
    pub(crate) arrays: data::Arrays,
    pub(crate) exec: execution::RunInfo,
    pub(crate) cjs: commonjs::CjsModules,
    pub(crate) files: fs::Files,
    /// `.proto` sets compiled by `k6/net/grpc`'s `client.load()`, shared by every VU.
    pub(crate) grpc: grpc::Protos,
}

/// What a response callback counts as expected (k6 `expectedStatuses`): status ranges.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Expected(pub(crate) Vec<(u16, u16)>);

impl Expected {
    pub(crate) fn k6_default() -> Expected {
        Expected(vec![(200, 399)])
    }

    pub(crate) fn matches(&self, status: u16) -> bool {
        self.0.iter().any(|(lo, hi)| (*lo..=*hi).contains(&status))
    }
}

/// Per-VU state of these modules.
pub(crate) struct VuExt {
    /// `exec.vu.tags` set by the script: added to every sample of this VU.
    pub(crate) tags: RefCell<TagSet>,
    /// `exec.test.abort(msg)` was called.
    pub(crate) abort: RefCell<Option<String>>,
    /// Iterations this VU started (`exec.vu.iterationInInstance` of the current one).
    pub(crate) iter: Cell<u64>,
    /// Cookie jars; `[0]` is the VU's own (reset every iteration), others `new CookieJar()`.
    pub(crate) jars: RefCell<Vec<Rc<RefCell<cookies::Jar>>>>,
    /// `http.setResponseCallback`: `None` = no callback (no `http_req_failed`).
    pub(crate) expected: RefCell<Option<Expected>>,
    /// Files being `require()`d, innermost last: what `open()` is relative to (as k6).
    pub(crate) requiring: RefCell<Vec<String>>,
    /// Open WebSockets (`k6/ws`, `k6/websockets`).
    pub(crate) ws: RefCell<ws::Sockets>,
    /// `k6/net/grpc` clients and streams.
    pub(crate) grpc: RefCell<grpc::Clients>,
}

impl Default for VuExt {
    fn default() -> Self {
        VuExt {
            tags: RefCell::default(),
            abort: RefCell::default(),
            iter: Cell::new(0),
            jars: RefCell::new(vec![Rc::default()]),
            expected: RefCell::new(Some(Expected::k6_default())),
            requiring: RefCell::default(),
            ws: RefCell::default(),
            grpc: RefCell::default(),
        }
    }
}

/// Called by the VU before each iteration.
pub(crate) fn begin_iteration(st: &VuState) {
    let ext = &st.ext;
    ext.iter.set(ext.iter.get() + 1);
    ext.ws.borrow_mut().clear();
    // k6 resets the VU's cookie jar at the start of every iteration (unless noCookiesReset).
    if st.shared.settings().no_cookies_reset {
        return;
    }
    if let Some(jar) = ext.jars.borrow().first() {
        jar.borrow_mut().clear();
    }
}

/// Called by the VU after each iteration: `Some(message)` when the script aborted the test.
pub(crate) fn end_iteration(st: &VuState) -> Option<String> {
    st.ext.abort.borrow_mut().take()
}

/// `exec.test.abort()` was called during setup (or init).
pub(crate) fn take_abort(st: &VuState) -> Option<String> {
    st.ext.abort.borrow_mut().take()
}

/// A module's JS event handler (`__volley.wsOnEvent(f)`, `grpcOnEvent`), kept in the
/// context's userdata (`crate::rt::VuData`) because `__volley` is gone from the globals once init is over. `M`
/// tells the modules' handlers apart.
pub(crate) struct EventHandler<'js, M: 'static>(
    RefCell<Option<rquickjs::Function<'js>>>,
    std::marker::PhantomData<M>,
);

// SAFETY: only `'js` values inside; `Changed` just renames the lifetime.
unsafe impl<'js, M: 'static> rquickjs::JsLifetime<'js> for EventHandler<'js, M> {
    type Changed<'to> = EventHandler<'to, M>;
}

impl<'js, M: 'static> EventHandler<'js, M> {
    /// Install (or replace) the handler.
    pub(crate) fn set(ctx: &Ctx<'js>, f: rquickjs::Function<'js>) {
        match ctx.vu_userdata::<Self>() {
            Some(d) => *d.0.borrow_mut() = Some(f),
            None => {
                ctx.store_vu_userdata(EventHandler::<M>(
                    RefCell::new(Some(f)),
                    std::marker::PhantomData,
                ));
            }
        }
    }

    /// Call the handler with `args`; `module` names the module in the error when there is none.
    pub(crate) fn call<A: rquickjs::function::IntoArgs<'js>>(
        ctx: &Ctx<'js>,
        module: &str,
        args: A,
    ) -> rquickjs::Result<()> {
        let f = ctx
            .vu_userdata::<Self>()
            .and_then(|d| d.0.borrow().clone())
            .ok_or_else(|| throw(ctx, &format!("{module} is not loaded")))?;
        f.call::<_, ()>(args)
    }
}

pub(crate) fn throw(ctx: &Ctx<'_>, msg: &str) -> rquickjs::Error {
    rquickjs::Exception::throw_message(ctx, msg)
}

/// The bytes of a string or an `ArrayBuffer` (the shims turn views and arrays into buffers).
pub(crate) fn bytes_of(v: &Value<'_>) -> Option<Vec<u8>> {
    if let Some(s) = v.as_string() {
        return s.to_string().ok().map(String::into_bytes);
    }
    let ab = ArrayBuffer::from_value(v.clone())?;
    // SAFETY: copied at once, no JS runs while the slice is alive.
    unsafe { ab.as_bytes().map(<[u8]>::to_vec) }
}

pub(crate) fn array_buffer<'js>(ctx: &Ctx<'js>, b: &[u8]) -> rquickjs::Result<Value<'js>> {
    Ok(ArrayBuffer::new_copy(ctx.clone(), b)?.into_value())
}

/// `k6/http`'s rarely used parts, made per VU on first use (`__volley.httpMore(V, flat)`).
static HTTP_MORE: crate::vu::SharedScript = crate::vu::SharedScript::new(
    c"volley:http-more",
    c"volley/http-more",
    include_str!("../shims/k6_http_more.js"),
);

/// Install every native of these modules on `v` (the `__volley` object) and the
/// `require`/`module` globals.
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    v: &Object<'js>,
    st: &Rc<VuState>,
) -> rquickjs::Result<()> {
    // A module's natives only where a shim that calls them was imported: each native is
    // two objects per VU (~250 bytes), and most scripts import two or three modules.
    let uses = |modules: &[&str]| imports_any(st, modules);
    crypto::install(ctx, v)?;
    if uses(&["k6/execution", JSLIB_UTILS]) {
        execution::install(ctx, v, st)?;
    }
    if uses(&["k6/data", "k6/experimental/csv"]) {
        data::install(ctx, v, st)?;
    }
    if uses(&["volley/http-ext"]) {
        cookies::install(ctx, v, st)?;
        crate::rt::native(
            ctx,
            v,
            "httpMore",
            |ctx: Ctx<'js>, v: Object<'js>, flat: Value<'js>| {
                let f: rquickjs::Function = HTTP_MORE.eval(&ctx)?;
                f.call::<_, Value<'js>>((v, flat))
            },
        )?;
    }
    if !crate::rt::lazy_shims(ctx) {
        v.set("eagerShims", true)?;
    }
    commonjs::install(ctx, v, st)?;
    if uses(&["k6/http", "k6/html"]) {
        html::install(ctx, v)?;
    }
    if uses(&["volley/ledger"]) {
        ledger::install(ctx, v)?;
    }
    if uses(&["k6/ws", "k6/websockets", "k6/experimental/websockets"]) {
        ws::install(ctx, v, st)?;
    }
    if uses(&["k6/net/grpc"]) {
        grpc::install(ctx, v, st)?;
    }
    if uses(&["k6/experimental/fs"]) {
        fs::install(ctx, v, st)?;
    }
    if uses(&["k6/experimental/csv"]) {
        csv::install(ctx, v, st)?;
    }
    if st.id > 0 && st.env.is_some() {
        st.shared.ext.exec.vu_initialized();
    }
    Ok(())
}

/// Does the script import one of `modules` (built-in module names)? While the script is
/// compiled (the init run of VU 0) nothing is known yet: every module counts as imported.
fn imports_any(st: &VuState, modules: &[&str]) -> bool {
    match st.shared.bytecode.get() {
        Some(compiled) => modules.iter().any(|m| compiled.contains_key(*m)),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jslib_urls_map_to_built_ins_for_any_version() {
        assert_eq!(
            jslib("https://jslib.k6.io/k6-utils/1.4.0/index.js"),
            Some(JSLIB_UTILS)
        );
        assert_eq!(
            jslib("https://jslib.k6.io/k6-summary/0.0.2/index.js"),
            Some(JSLIB_SUMMARY)
        );
        assert_eq!(
            jslib("https://jslib.k6.io/k6-utils/1.2.0/"),
            Some(JSLIB_UTILS)
        );
        assert_eq!(jslib("https://jslib.k6.io/papaparse/5.1.1/index.js"), None);
        assert_eq!(jslib("https://example.com/k6-utils/1.0/index.js"), None);
    }

    #[test]
    fn expected_ranges() {
        let e = Expected::k6_default();
        assert!(e.matches(200) && e.matches(302) && !e.matches(404));
    }
}
