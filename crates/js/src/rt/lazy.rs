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
    // A placeholder is found again by its name alone: a second native of the same name (on
    // another object) is made at once rather than risk handing out the wrong closure.
    let Some(pending) =
        pending(ctx).filter(|p| p.lazy && !p.list.borrow().iter().any(|(n, _)| *n == name))
    else {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::DropVuData;
    use rquickjs::{Context, Runtime};

    /// The objects of `ctx`'s runtime.
    fn objects(ctx: &Ctx<'_>) -> i64 {
        // SAFETY: a live context; JSMemoryUsage is plain data QuickJS fills in.
        unsafe {
            let mut m: qjs::JSMemoryUsage = std::mem::zeroed();
            qjs::JS_ComputeMemoryUsage(qjs::JS_GetRuntime(ctx.as_raw().as_ptr()), &mut m);
            m.obj_count
        }
    }

    /// Two natives of one name on different objects each call their own closure.
    #[test]
    fn natives_sharing_a_name_keep_their_own_closures() {
        let rt = Runtime::new().unwrap();
        let c = Context::full(&rt).unwrap();
        c.with(|ctx| {
            let _data = DropVuData(&ctx);
            for tag in ["x", "y"] {
                let o = Object::new(ctx.clone()).unwrap();
                native(&ctx, &o, "f", move || tag.to_string()).unwrap();
                ctx.globals().set(tag.to_uppercase(), o).unwrap();
            }
            let out: String = ctx.eval("Y.f() + X.f()").unwrap();
            assert_eq!(out, "yx");
        });
    }

    /// A native defined with `native` is a placeholder until first used: it costs no
    /// object, lists and describes as the plain property `Object::set` makes, and is made
    /// by a read, an assignment (then replaced) or a descriptor; `delete` before use drops
    /// it; each context makes its own, from its own closure.
    #[test]
    fn natives_are_made_on_first_use_and_look_as_if_made_at_once() {
        let rt = Runtime::new().unwrap();
        let (a, b) = (Context::full(&rt).unwrap(), Context::full(&rt).unwrap());
        for (c, tag) in [(&a, "a"), (&b, "b")] {
            c.with(|ctx| {
                let v = Object::new(ctx.clone()).unwrap();
                let before = objects(&ctx);
                for name in ["one", "two", "three", "four"] {
                    native(&ctx, &v, name, move |x: i32| format!("{tag}:{name}:{x}")).unwrap();
                }
                assert_eq!(objects(&ctx), before, "a native was made at once");
                ctx.globals().set("V", v).unwrap();
            });
        }
        a.with(|ctx| {
            let _data = DropVuData(&ctx);
            // The same listing of a plain object first: it makes the builtins it uses.
            let list = |o: &str| {
                format!(
                    r#"JSON.stringify([Object.keys({o}), Object.getOwnPropertyNames({o}),
                        {o}.hasOwnProperty("two"), "three" in {o}])"#
                )
            };
            let w: String = ctx
                .eval(format!("globalThis.W = {{ one: 1, two: 2, three: 3, four: 4 }}; {}", list("W")))
                .unwrap();
            let before = objects(&ctx);
            let listed: String = ctx.eval(list("V")).unwrap();
            assert_eq!(listed, w);
            assert_eq!(
                listed,
                r#"[["one","two","three","four"],["one","two","three","four"],true,true]"#
            );
            assert_eq!(objects(&ctx), before, "listing made a native");
            let out: String = ctx
                .eval(
                    r#"const d = Object.getOwnPropertyDescriptor(V, "one");
                    const r = [typeof d.value, d.writable, d.enumerable, d.configurable,
                               V.two(2), V.two === V.two];
                    delete V.three;
                    V.four = "replaced";
                    r.push(Object.keys(V).join(), V.four, V.three, V.one(1));
                    JSON.stringify(r)"#,
                )
                .unwrap();
            assert_eq!(
                out,
                r#"["function",true,true,true,"a:two:2",true,"one,two,four","replaced",null,"a:one:1"]"#
            );
        });
        b.with(|ctx| {
            let _data = DropVuData(&ctx);
            let out: String = ctx.eval(r#"[V.three(3), typeof V.four].join()"#).unwrap();
            assert_eq!(out, "b:three:3,function", "b's natives are its own");
        });
    }
}
