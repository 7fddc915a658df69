//! `check(val, sets, tags)` (the `k6` module's), native from end to end.
//!
//! Nearly every k6 iteration calls `check` with an object literal of named conditions. Done
//! in the shim it cost an `Object.keys` array, an interpreted loop and, per condition, a call
//! into Rust that turned the name into a Rust `String` and compared it with the cached ones.
//! Here the names are read as atoms (QuickJS's interned property names): a condition already
//! seen in the same group finds its series by comparing two integers.

use crate::rt::VuData;
use crate::vu::VuState;
use rquickjs::function::Opt;
use rquickjs::qjs;
use rquickjs::{Ctx, Function, Object, Value};
use std::cell::RefCell;
use std::rc::Rc;
use volley_metrics::{Handle, MetricKey, MetricKind, Unit};

/// Series of checks without extra tags, resolved once per (name, group).
const CACHE_MAX: usize = 64;

/// The VU's resolved check series: (name atom, group id, series, the name as a JS string).
/// The string holds the atom alive: a freed atom's number could be reused for another name.
struct Cache<'js>(RefCell<Vec<(qjs::JSAtom, u32, Handle, Value<'js>)>>);

// SAFETY: only `'js` values inside; the lifetime is only renamed.
unsafe impl<'js> rquickjs::JsLifetime<'js> for Cache<'js> {
    type Changed<'to> = Cache<'to>;
}

/// The own enumerable string keys of an object, in `Object.keys` order, freed on drop.
struct Keys<'a, 'js> {
    ctx: &'a Ctx<'js>,
    tab: *mut qjs::JSPropertyEnum,
    len: u32,
}

impl<'a, 'js> Keys<'a, 'js> {
    fn of(ctx: &'a Ctx<'js>, obj: &Object<'js>) -> rquickjs::Result<Keys<'a, 'js>> {
        let mut k = Keys {
            ctx,
            tab: std::ptr::null_mut(),
            len: 0,
        };
        let flags = (qjs::JS_GPN_STRING_MASK | qjs::JS_GPN_ENUM_ONLY) as _;
        // SAFETY: `obj` belongs to this context; on success QuickJS hands us `len` entries.
        let r = unsafe {
            qjs::JS_GetOwnPropertyNames(
                ctx.as_raw().as_ptr(),
                &mut k.tab,
                &mut k.len,
                obj.as_raw(),
                flags,
            )
        };
        if r < 0 {
            k.tab = std::ptr::null_mut();
            k.len = 0;
            return Err(rquickjs::Error::Exception);
        }
        Ok(k)
    }

    fn atom(&self, i: u32) -> qjs::JSAtom {
        // SAFETY: `i < len`, checked by the caller's loop.
        unsafe { (*self.tab.add(i as usize)).atom }
    }
}

impl Drop for Keys<'_, '_> {
    fn drop(&mut self) {
        if !self.tab.is_null() {
            // SAFETY: the table and its atoms came from JS_GetOwnPropertyNames.
            unsafe { qjs::JS_FreePropertyEnum(self.ctx.as_raw().as_ptr(), self.tab, self.len) }
        }
    }
}

/// `obj[atom]`.
fn get<'js>(ctx: &Ctx<'js>, obj: &Object<'js>, atom: qjs::JSAtom) -> rquickjs::Result<Value<'js>> {
    // SAFETY: `obj` belongs to this context and `atom` is alive (held by `Keys`).
    let v = unsafe { qjs::JS_GetProperty(ctx.as_raw().as_ptr(), obj.as_raw(), atom) };
    // SAFETY: JS_GetProperty returned an owned value (or the exception marker).
    let v = unsafe { Value::from_raw(ctx.clone(), v) };
    if v.is_exception() {
        return Err(rquickjs::Error::Exception);
    }
    Ok(v)
}

/// JavaScript truthiness.
fn truthy<'js>(ctx: &Ctx<'js>, v: &Value<'js>) -> bool {
    if let Some(b) = v.as_bool() {
        return b;
    }
    // SAFETY: `v` belongs to this context; JS_ToBool does not take it over.
    unsafe { qjs::JS_ToBool(ctx.as_raw().as_ptr(), v.as_raw()) > 0 }
}

/// Record one condition's outcome in `checks`, tagged as k6 does.
fn record<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    atom: qjs::JSAtom,
    pass: bool,
    tags: Option<&Value<'js>>,
) -> rquickjs::Result<()> {
    // Without extra tags (and VU tags, which may change) the series is resolved once per
    // check name and group.
    let plain =
        tags.is_none_or(|t| t.is_null() || t.is_undefined()) && st.ext.tags.borrow().is_empty();
    let group = st.group_id.get();
    let cache = ctx.vu_userdata::<Cache>();
    if plain {
        if let Some(c) = &cache {
            let hit =
                c.0.borrow()
                    .iter()
                    .find(|e| e.0 == atom && e.1 == group)
                    .map(|e| e.2);
            if let Some(h) = hit {
                st.rec.borrow_mut().rate(h, pass);
                return Ok(());
            }
        }
    }
    // SAFETY: `atom` is alive; JS_AtomToString returns an owned string value.
    let name_js = unsafe {
        Value::from_raw(
            ctx.clone(),
            qjs::JS_AtomToString(ctx.as_raw().as_ptr(), atom),
        )
    };
    if name_js.is_exception() {
        return Err(rquickjs::Error::Exception);
    }
    let name: String = name_js.get::<rquickjs::Coerced<String>>()?.0;
    if let Ok(mut o) = st.shared.check_order.lock() {
        o.note(&st.group.borrow(), &name);
    }
    let mut t = st.base_tags();
    t.insert("check".into(), name);
    crate::vu::add_tags(&mut t, tags.cloned())?;
    let h = {
        let mut rec = st.rec.borrow_mut();
        let key = MetricKey {
            name: "checks".into(),
            tags: t,
        };
        let h = rec.record_keyed(key, MetricKind::Rate, Unit::Default, |r, h| r.rate(h, pass));
        // A folded check keeps resolving (its raw tags differ from the overflow series').
        (!rec.is_overflow(h)).then_some(h)
    };
    if let (true, Some(c), Some(h)) = (plain, &cache, h) {
        let mut entries = c.0.borrow_mut();
        if entries.len() < CACHE_MAX {
            entries.push((atom, group, h, name_js));
        }
    }
    Ok(())
}

/// Distinct checks kept in first-seen order; later ones are listed by name.
pub(crate) const CHECK_ORDER_MAX: usize = 10_000;

/// First-seen order of (group path, check name).
#[derive(Default)]
pub(crate) struct CheckOrder {
    /// group → check names seen: looked up by `&str`, no allocation once a check is known
    /// (checks with tags come here on every call).
    seen: std::collections::HashMap<String, std::collections::HashSet<String>>,
    pub(crate) order: Vec<(String, String)>,
    /// Group paths in the order they were first entered (k6 v1 lists groups that way).
    pub(crate) groups: Vec<String>,
}

impl CheckOrder {
    /// Called once per VU and group, when the VU first enters it.
    pub(crate) fn note_group(&mut self, path: &str) {
        if self.groups.len() < CHECK_ORDER_MAX && !self.groups.iter().any(|g| g == path) {
            self.groups.push(path.to_string());
        }
    }

    pub(crate) fn note(&mut self, group: &str, name: &str) {
        if self.order.len() >= CHECK_ORDER_MAX
            || self.seen.get(group).is_some_and(|s| s.contains(name))
        {
            return;
        }
        self.seen
            .entry(group.to_string())
            .or_default()
            .insert(name.to_string());
        self.order.push((group.to_string(), name.to_string()));
    }
}

/// `check(val, sets, tags)`: each of `sets`' conditions (a function is called with `val`),
/// recorded in `checks`; true when all passed. An exception in a condition propagates.
fn check<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    val: Value<'js>,
    sets: Value<'js>,
    tags: Option<Value<'js>>,
) -> rquickjs::Result<bool> {
    if st.in_init.get() {
        return Err(rquickjs::Exception::throw_message(
            ctx,
            "check() is not allowed in the init context",
        ));
    }
    let Some(sets) = sets.into_object() else {
        return Ok(true);
    };
    let keys = Keys::of(ctx, &sets)?;
    let mut all = true;
    for i in 0..keys.len {
        let atom = keys.atom(i);
        let c = get(ctx, &sets, atom)?;
        let pass = match c.as_function() {
            Some(f) => {
                let r: Value<'js> = f.call((val.clone(),))?;
                truthy(ctx, &r)
            }
            None => truthy(ctx, &c),
        };
        record(ctx, st, atom, pass, tags.as_ref())?;
        all &= pass;
    }
    Ok(all)
}

/// Define `__volley.check(val, sets, tags)` (the shim exports it as `check`).
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    v: &Object<'js>,
    st: &Rc<VuState>,
) -> rquickjs::Result<()> {
    if ctx.vu_userdata::<Cache>().is_none() {
        ctx.store_vu_userdata(Cache(RefCell::new(Vec::new())));
    }
    let st = st.clone();
    let f = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, val: Opt<Value<'js>>, sets: Opt<Value<'js>>, tags: Opt<Value<'js>>| {
            let val = val.0.unwrap_or_else(|| Value::new_undefined(ctx.clone()));
            match sets.0 {
                Some(sets) => check(&ctx, &st, val, sets, tags.0),
                None => Ok(true),
            }
        },
    )?
    .with_name("check")?;
    v.set("check", f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_order_keeps_first_seen_and_is_bounded() {
        let mut o = CheckOrder::default();
        for (g, n) in [("", "z"), ("::g", "a"), ("", "z"), ("", "a")] {
            o.note(g, n);
        }
        let got: Vec<(&str, &str)> = o
            .order
            .iter()
            .map(|(g, n)| (g.as_str(), n.as_str()))
            .collect();
        assert_eq!(got, [("", "z"), ("::g", "a"), ("", "a")]);
        for i in 0..CHECK_ORDER_MAX + 10 {
            o.note("", &i.to_string());
        }
        assert_eq!(o.order.len(), CHECK_ORDER_MAX);
    }
}
