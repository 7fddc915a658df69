//! Natives made on first use: `__volley`'s functions as QuickJS placeholders whose
//! function is created the first time a shim reads (or writes, defines, describes) them.
//!
//! Layout: [`native`] (define one, or make it at once with `VOLLEY_LAZY_SHIMS=0`),
//! [`Pending`] (the VU's not yet made natives, in its context's userdata) and `make` (the
//! callback the vendored QuickJS calls, vendor/rquickjs-sys/VOLLEY.md, "Lazy natives").
//!
//! Why: a native is two QuickJS objects (242 bytes per VU) and a k6 script's VU touches a
//! handful of the ~26 it gets; what is left here until then is a boxed Rust closure (its
//! captures, usually one `Rc`) in a list.

use super::VuData;
use rquickjs::function::IntoJsFunc;
use rquickjs::{qjs, Ctx, Function, JsLifetime, Object};
use std::cell::RefCell;
use std::sync::Once;

extern "C" {
    // Added to the vendored QuickJS (vendor/rquickjs-sys/VOLLEY.md, "Lazy natives").
    fn JS_VolleySetLazyCall(
        f: unsafe extern "C" fn(*mut qjs::JSContext, qjs::JSValue, qjs::JSAtom) -> qjs::JSValue,
    );
    fn JS_VolleyDefineLazy(
        ctx: *mut qjs::JSContext,
        obj: qjs::JSValue,
        prop: qjs::JSAtom,
        flags: std::ffi::c_int,
    ) -> std::ffi::c_int;
}

/// Are the shims' natives (and the shims' rarely used parts) made on first use in this
/// VU's context (the default), or at once (`VOLLEY_LAZY_SHIMS=0`, to measure the
/// difference)? Read once per context (tests switch it between runs).
pub(crate) fn lazy_shims(ctx: &Ctx<'_>) -> bool {
    pending(ctx).is_some_and(|p| p.lazy)
}

type Make<'js> = Box<dyn FnOnce(Ctx<'js>) -> rquickjs::Result<Function<'js>> + 'js>;

/// A context's natives not made yet, by name (each name is defined on one object).
pub(crate) struct Pending<'js> {
    lazy: bool,
    list: RefCell<Vec<(&'static str, Make<'js>)>>,
}

fn pending<'a, 'js>(ctx: &'a Ctx<'js>) -> Option<&'a Pending<'js>> {
    if ctx.vu_userdata::<Pending>().is_none() {
        let lazy = std::env::var_os("VOLLEY_LAZY_SHIMS").is_none_or(|v| v != "0");
        ctx.store_vu_userdata(Pending {
            lazy,
            list: RefCell::default(),
        });
    }
    ctx.vu_userdata::<Pending>()
}

// SAFETY: only `'js` values inside; `Changed` just renames the lifetime.
unsafe impl<'js> JsLifetime<'js> for Pending<'js> {
    type Changed<'to> = Pending<'to>;
}

/// Define `obj[name]` (writable, enumerable, configurable, as `Object::set`) as the
/// native `f`, made when it is first used.
pub(crate) fn native<'js, F, P>(
    ctx: &Ctx<'js>,
    obj: &Object<'js>,
    name: &'static str,
    f: F,
) -> rquickjs::Result<()>
where
    F: IntoJsFunc<'js, P> + 'js,
    P: 'js,
{
    let Some(pending) = pending(ctx).filter(|p| p.lazy) else {
        return obj.set(name, Function::new(ctx.clone(), f)?);
    };
    static HANDLER: Once = Once::new();
    // SAFETY: sets a process-wide function pointer once.
    HANDLER.call_once(|| unsafe { JS_VolleySetLazyCall(make) });
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: a live context and object; the placeholder takes its own atom reference.
    let r = unsafe {
        let atom = qjs::JS_NewAtomLen(raw, name.as_ptr().cast(), name.len() as _);
        if atom == qjs::JS_ATOM_NULL {
            return Err(rquickjs::Error::Exception);
        }
        let r = JS_VolleyDefineLazy(raw, obj.as_raw(), atom, qjs::JS_PROP_C_W_E as _);
        qjs::JS_FreeAtom(raw, atom);
        r
    };
    if r < 0 {
        // Defined already (or out of memory): a plain property, as before.
        let _ = ctx.catch();
        return obj.set(name, Function::new(ctx.clone(), f)?);
    }
    let make: Make<'js> = Box::new(move |ctx| Function::new(ctx, f));
    pending.list.borrow_mut().push((name, make));
    Ok(())
}

/// QuickJS's callback: the value of the placeholder `prop` of `ctx` (the realm that
/// defined it), or an exception.
unsafe extern "C" fn make(
    ctx: *mut qjs::JSContext,
    _obj: qjs::JSValue,
    prop: qjs::JSAtom,
) -> qjs::JSValue {
    let Some(raw) = std::ptr::NonNull::new(ctx) else {
        return qjs::JS_EXCEPTION;
    };
    // SAFETY: QuickJS calls this with a live context, on the thread running it.
    let ctx = unsafe { Ctx::from_raw(raw) };
    // SAFETY: a live context and atom; the C string is freed at once.
    let name = unsafe {
        let mut len: qjs::size_t = 0;
        let p = qjs::JS_AtomToCStringLen(raw.as_ptr(), &mut len, prop);
        if p.is_null() {
            return qjs::JS_EXCEPTION;
        }
        let s = std::slice::from_raw_parts(p.cast::<u8>(), len as usize).to_vec();
        qjs::JS_FreeCString(raw.as_ptr(), p);
        s
    };
    let f = ctx.vu_userdata::<Pending>().and_then(|p| {
        let mut list = p.list.borrow_mut();
        let i = list.iter().position(|(n, _)| n.as_bytes() == name)?;
        Some(list.swap_remove(i).1)
    });
    // Made outside the borrow: making a function can run a GC, not JS, but stay simple.
    let r = match f {
        Some(f) => f(ctx.clone()),
        None => Err(rquickjs::Exception::throw_internal(
            &ctx,
            &format!(
                "native {} is gone (the VU has ended)",
                String::from_utf8_lossy(&name)
            ),
        )),
    };
    match r {
        // SAFETY: the returned value is owned by QuickJS's property.
        Ok(f) => unsafe { qjs::JS_DupValue(ctx.as_raw().as_ptr(), f.as_raw()) },
        Err(rquickjs::Error::Exception) => qjs::JS_EXCEPTION,
        Err(e) => {
            let _ = rquickjs::Exception::throw_internal(&ctx, &e.to_string());
            qjs::JS_EXCEPTION
        }
    }
}
