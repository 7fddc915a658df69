//! Objects of a known layout made in one step, for gRPC responses: property names are atoms
//! made once per VU (a string key is hashed and looked up in the runtime's atom table on
//! every define) and each layout has a template object whose shape a new object adopts
//! (`JS_VolleyAdoptShape`, vendor/rquickjs-sys/VOLLEY.md) instead of walking QuickJS's shape
//! transitions property by property — and rebuilding them when the last object that had
//! them is freed, as happens between two calls.

use rquickjs::qjs::{JSAtom, JSValue};
use rquickjs::{Atom, Ctx, Object, Value};

extern "C" {
    // Added to the vendored QuickJS (vendor/rquickjs-sys/VOLLEY.md).
    fn JS_VolleyAdoptShape(
        ctx: *mut rquickjs::qjs::JSContext,
        obj: JSValue,
        tmpl: JSValue,
        vals: *mut JSValue,
        count: std::ffi::c_int,
    ) -> std::ffi::c_int;
}

/// A property name kept alive as an atom, with its raw id for QuickJS's own calls.
pub(super) struct Key<'js> {
    _keep: Atom<'js>,
    pub(super) raw: JSAtom,
}

impl<'js> Key<'js> {
    pub(super) fn new(ctx: &Ctx<'js>, name: &str) -> rquickjs::Result<Self> {
        let keep = Atom::from_str(ctx.clone(), name)?;
        let c = ctx.as_raw().as_ptr();
        // SAFETY: a live context and a valid UTF-8 buffer of that length. Atoms are
        // interned: this is `keep`'s id; its reference is given back at once, `keep` holds
        // the atom alive.
        let raw = unsafe {
            let id = rquickjs::qjs::JS_NewAtomLen(c, name.as_ptr().cast(), name.len() as _);
            rquickjs::qjs::JS_FreeAtom(c, id);
            id
        };
        Ok(Key { _keep: keep, raw })
    }
}

/// `obj[atom] = v` as `JSON.parse` makes it: own, writable, enumerable, configurable.
pub(super) fn define<'js>(
    ctx: &Ctx<'js>,
    obj: &Object<'js>,
    atom: JSAtom,
    v: &Value<'js>,
) -> rquickjs::Result<()> {
    // SAFETY: `v` belongs to this live context; the property takes over this reference.
    let raw = unsafe { rquickjs::qjs::JS_DupValue(ctx.as_raw().as_ptr(), v.as_raw()) };
    crate::http::define_raw(ctx, obj, atom, raw)
}

/// A plain object with `keys` in this order (values null): the template of that layout.
pub(super) fn template<'js>(ctx: &Ctx<'js>, keys: &[JSAtom]) -> rquickjs::Result<Object<'js>> {
    let o = Object::new(ctx.clone())?;
    let null = Value::new_null(ctx.clone());
    for &k in keys {
        define(ctx, &o, k, &null)?;
    }
    Ok(o)
}

/// A new plain object with `vals` under `keys`: `tmpl`'s shape adopted when given (made by
/// [`template`] from the same keys), else property by property.
pub(super) fn make<'js>(
    ctx: &Ctx<'js>,
    tmpl: Option<&Object<'js>>,
    keys: &[JSAtom],
    vals: &[Value<'js>],
) -> rquickjs::Result<Object<'js>> {
    let o = Object::new(ctx.clone())?;
    if let Some(t) = tmpl {
        let c = ctx.as_raw().as_ptr();
        // SAFETY: every value belongs to this context; the function takes over the
        // references made here (and frees them if it refuses).
        let mut raw: Vec<JSValue> = vals
            .iter()
            .map(|v| unsafe { rquickjs::qjs::JS_DupValue(c, v.as_raw()) })
            .collect();
        let n = raw.len() as std::ffi::c_int;
        if unsafe { JS_VolleyAdoptShape(c, o.as_raw(), t.as_raw(), raw.as_mut_ptr(), n) } == 0 {
            return Ok(o);
        }
    }
    for (&k, v) in keys.iter().zip(vals) {
        define(ctx, &o, k, v)?;
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_objects_have_the_keys_in_order_with_or_without_a_template() {
        let rt = rquickjs::Runtime::new().unwrap();
        let cx = rquickjs::Context::full(&rt).unwrap();
        cx.with(|ctx| {
            let keys: Vec<Key> = ["b", "a", "__proto__", "1"]
                .iter()
                .map(|n| Key::new(&ctx, n).unwrap())
                .collect();
            let raw: Vec<JSAtom> = keys.iter().map(|k| k.raw).collect();
            let t = template(&ctx, &raw).unwrap();
            let vals = [
                Value::new_int(ctx.clone(), 1),
                Value::new_bool(ctx.clone(), true),
                Value::new_int(ctx.clone(), 3),
                Value::new_null(ctx.clone()),
            ];
            for tmpl in [Some(&t), None] {
                let o = make(&ctx, tmpl, &raw, &vals).unwrap();
                let text = ctx.json_stringify(o.clone()).unwrap().unwrap();
                // Insertion order kept ("1" is an array index: JS lists it first).
                assert_eq!(
                    text.to_string().unwrap(),
                    r#"{"1":null,"b":1,"a":true,"__proto__":3}"#
                );
                // An own property, the prototype untouched; the template unchanged.
                assert!(o.get_prototype().is_some());
                let again: Value = t.get("b").unwrap();
                assert!(again.is_null());
            }
        });
    }
}
