//! Userdata per *context* (rquickjs keeps its userdata per runtime).
//!
//! Several VUs' contexts can share one runtime (`crate::vu::shared`), and what the natives
//! keep between calls (response atoms and templates, timers, check caches, the WebSocket
//! dispatcher) belongs to one VU: it hangs off the context's opaque pointer instead. The
//! same code serves both runtime modes.

use rquickjs::{Ctx, JsLifetime};
use std::any::{Any, TypeId};
use std::cell::RefCell;

/// What a context's opaque pointer points to: a few values by type (≤ 5 today, so a list).
#[derive(Default)]
struct CtxData(RefCell<Vec<(TypeId, Box<dyn Any>)>>);

/// `Ctx` methods like rquickjs's `userdata`/`store_userdata`, but per context.
pub(crate) trait VuData<'js> {
    /// The value of type `U` stored in this context, if any.
    fn vu_userdata<U>(&self) -> Option<&U>
    where
        U: JsLifetime<'js>,
        U::Changed<'static>: Any;

    /// Store `data` unless a value of its type is there already (then `data` is dropped).
    fn store_vu_userdata<U>(&self, data: U)
    where
        U: JsLifetime<'js>,
        U::Changed<'static>: Any;
}

fn data_of(ctx: &Ctx<'_>) -> *mut CtxData {
    // SAFETY: the opaque pointer is null or set by `store_vu_userdata` below.
    unsafe { rquickjs::qjs::JS_GetContextOpaque(ctx.as_raw().as_ptr()) as *mut CtxData }
}

impl<'js> VuData<'js> for Ctx<'js> {
    fn vu_userdata<U>(&self) -> Option<&U>
    where
        U: JsLifetime<'js>,
        U::Changed<'static>: Any,
    {
        let d = data_of(self);
        if d.is_null() {
            return None;
        }
        let id = TypeId::of::<U::Changed<'static>>();
        // SAFETY: `d` lives until `drop_vu_data` (after the last use of this context's
        // natives); entries are never removed before that and each is boxed, so the
        // reference stays valid while the list grows. The stored value is a `U` with its
        // lifetime renamed to 'static (`JsLifetime::Changed` only renames it).
        unsafe {
            let list = (*d).0.borrow();
            let b = list.iter().find(|(t, _)| *t == id)?;
            let p = b.1.downcast_ref::<U::Changed<'static>>()? as *const U::Changed<'static>;
            Some(&*(p as *const U))
        }
    }

    fn store_vu_userdata<U>(&self, data: U)
    where
        U: JsLifetime<'js>,
        U::Changed<'static>: Any,
    {
        let mut d = data_of(self);
        if d.is_null() {
            d = Box::into_raw(Box::default());
            // SAFETY: a live context; freed again by `drop_vu_data`.
            unsafe { rquickjs::qjs::JS_SetContextOpaque(self.as_raw().as_ptr(), d.cast()) };
        }
        let id = TypeId::of::<U::Changed<'static>>();
        // SAFETY: as above; `U` and `U::Changed<'static>` differ only in a lifetime.
        unsafe {
            let mut list = (*d).0.borrow_mut();
            if list.iter().any(|(t, _)| *t == id) {
                return;
            }
            let raw = Box::into_raw(Box::new(data)) as *mut U::Changed<'static>;
            list.push((id, Box::from_raw(raw) as Box<dyn Any>));
        }
    }
}

/// Drop the context's userdata (its JS values with it). Call before the context is freed,
/// where its JS may run (the VU's own stack when runtimes are shared).
fn drop_vu_data(ctx: &Ctx<'_>) {
    let d = data_of(ctx);
    if d.is_null() {
        return;
    }
    // SAFETY: made by `store_vu_userdata`; the opaque is cleared first, so nothing finds
    // it while its values are dropped (a value's destructor cannot reach it either).
    unsafe {
        rquickjs::qjs::JS_SetContextOpaque(ctx.as_raw().as_ptr(), std::ptr::null_mut());
        drop(Box::from_raw(d));
    }
}

/// Drops the context's userdata when it goes out of scope (declare it first in a
/// `Context::with` closure: it is then dropped after the closure's other JS values).
pub(crate) struct DropVuData<'a, 'js>(pub(crate) &'a Ctx<'js>);

impl Drop for DropVuData<'_, '_> {
    fn drop(&mut self) {
        drop_vu_data(self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rquickjs::{Context, Object, Runtime};

    struct Held<'js>(Object<'js>);
    // SAFETY: only a `'js` value inside.
    unsafe impl<'js> JsLifetime<'js> for Held<'js> {
        type Changed<'to> = Held<'to>;
    }

    /// Two contexts of one runtime each see only their own value; dropping one's data
    /// leaves the other's.
    #[test]
    fn userdata_is_per_context() {
        let rt = Runtime::new().unwrap();
        let (a, b) = (Context::full(&rt).unwrap(), Context::full(&rt).unwrap());
        a.with(|ctx| {
            assert!(ctx.vu_userdata::<Held>().is_none());
            let o = Object::new(ctx.clone()).unwrap();
            o.set("who", "a").unwrap();
            ctx.store_vu_userdata(Held(o));
        });
        b.with(|ctx| {
            assert!(ctx.vu_userdata::<Held>().is_none(), "b sees a's data");
            let o = Object::new(ctx.clone()).unwrap();
            o.set("who", "b").unwrap();
            ctx.store_vu_userdata(Held(o));
            // A second store keeps the first value.
            ctx.store_vu_userdata(Held(Object::new(ctx.clone()).unwrap()));
            let who: String = ctx.vu_userdata::<Held>().unwrap().0.get("who").unwrap();
            assert_eq!(who, "b");
        });
        a.with(|ctx| {
            let who: String = ctx.vu_userdata::<Held>().unwrap().0.get("who").unwrap();
            assert_eq!(who, "a");
            drop_vu_data(&ctx);
            assert!(ctx.vu_userdata::<Held>().is_none());
        });
        b.with(|ctx| {
            assert!(ctx.vu_userdata::<Held>().is_some());
            drop_vu_data(&ctx);
        });
    }
}
