//! A response's headers and trailers as k6 shows them: `{key: [values...]}` in the order keys
//! first come. A server sends the same keys call after call, so each key list seen (a few
//! per VU) keeps its names as atoms and a template (`shape`): the object is made in one
//! step instead of one atom lookup and one shape transition per key.

use super::shape::{self, Key};
use crate::rt::VuData;
use rquickjs::object::Property;
use rquickjs::qjs::JSAtom;
use rquickjs::{Array, Ctx, Object, Value};
use std::cell::RefCell;
use volley_grpc::call::Metadata;

/// Key lists kept per VU (more go property by property).
const MAX_LAYOUTS: usize = 8;

struct Layout<'js> {
    names: Vec<String>,
    _keys: Vec<Key<'js>>,
    raw: Vec<JSAtom>,
    tmpl: Object<'js>,
}

#[derive(Default)]
struct Layouts<'js>(RefCell<Vec<Layout<'js>>>);

// SAFETY: `Layouts` holds only `'js` values; `Changed` just renames the lifetime.
unsafe impl<'js> rquickjs::JsLifetime<'js> for Layouts<'js> {
    type Changed<'to> = Layouts<'to>;
}

/// `md` as an object of arrays. Properties are defined, as `JSON.parse` does (a
/// `constructor` or `__proto__` key is an own one).
pub(super) fn object<'js>(ctx: &Ctx<'js>, md: &Metadata) -> rquickjs::Result<Object<'js>> {
    // (key, its array, length): a key's values come together from a HeaderMap, but a key
    // seen again later still joins its array. No allocation for an empty list.
    let mut arrays: Vec<(&str, Array<'js>, usize)> = Vec::new();
    for (k, v) in md {
        let text = match std::str::from_utf8(v) {
            Ok(s) => rquickjs::String::from_str(ctx.clone(), s)?,
            Err(_) => rquickjs::String::from_str(ctx.clone(), &String::from_utf8_lossy(v))?,
        };
        if let Some(e) = arrays.iter_mut().find(|e| e.0 == k) {
            e.1.set(e.2, text)?;
            e.2 += 1;
            continue;
        }
        let a = Array::new(ctx.clone())?;
        a.set(0, text)?;
        arrays.push((k, a, 1));
    }
    if ctx.vu_userdata::<Layouts>().is_none() {
        ctx.store_vu_userdata(Layouts::default());
    }
    let layouts = &ctx.vu_userdata::<Layouts>().expect("stored above").0;
    let same = |l: &Layout| {
        l.names.len() == arrays.len() && l.names.iter().zip(&arrays).all(|(n, a)| n == a.0)
    };
    let mut list = layouts.borrow_mut();
    let i = match list.iter().position(same) {
        Some(i) => i,
        None if list.len() < MAX_LAYOUTS => {
            let keys = arrays
                .iter()
                .map(|a| Key::new(ctx, a.0))
                .collect::<rquickjs::Result<Vec<_>>>()?;
            let raw: Vec<JSAtom> = keys.iter().map(|k| k.raw).collect();
            list.push(Layout {
                names: arrays.iter().map(|a| a.0.to_owned()).collect(),
                tmpl: shape::template(ctx, &raw)?,
                _keys: keys,
                raw,
            });
            list.len() - 1
        }
        None => {
            let o = Object::new(ctx.clone())?;
            for (k, a, _) in arrays {
                let p = Property::from(a).writable().enumerable().configurable();
                o.prop(k, p)?;
            }
            return Ok(o);
        }
    };
    let l = &list[i];
    let vals: Vec<Value<'js>> = arrays.into_iter().map(|a| a.1.into_value()).collect();
    shape::make(ctx, Some(&l.tmpl), &l.raw, &vals)
}
