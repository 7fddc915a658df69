//! Natives of `k6/data`'s `SharedArray`: one copy of the data per process.
//!
//! `new SharedArray(name, fn)` runs `fn` only if no array of that name exists yet — in
//! practice during the init run that reads `options`, before any VU starts. Its result is
//! serialised to JSON once and kept here as one JSON string per element behind an `Arc`.
//! Each VU gets a read-only `Proxy` whose index reads parse only the element asked for (as
//! k6 does), so a VU holds no copy of the array: the memory cost is one set of element
//! strings per process, plus whatever elements a VU currently holds parsed.

use super::throw;
use rquickjs::{Ctx, Function, Object, Value};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use crate::vu::VuState;

/// One array's elements, each as JSON.
type Elements = Arc<Vec<Box<str>>>;

/// Every SharedArray of the run, by name.
#[derive(Default)]
pub(crate) struct Arrays {
    list: Mutex<Vec<(String, Elements)>>,
}

impl Arrays {
    fn lookup(&self, name: &str) -> Option<usize> {
        self.list
            .lock()
            .unwrap()
            .iter()
            .position(|(n, _)| n == name)
    }

    fn store(&self, name: &str, json: &str) -> Result<usize, String> {
        let items: Vec<serde_json::Value> = serde_json::from_str(json)
            .map_err(|_| "SharedArray: the function must return an array".to_string())?;
        let elems: Vec<Box<str>> = items.iter().map(|v| v.to_string().into()).collect();
        let mut list = self.list.lock().unwrap();
        if let Some(i) = list.iter().position(|(n, _)| n == name) {
            return Ok(i);
        }
        list.push((name.to_string(), Arc::new(elems)));
        Ok(list.len() - 1)
    }

    fn get(&self, id: usize) -> Option<Elements> {
        self.list.lock().unwrap().get(id).map(|(_, a)| a.clone())
    }
}

pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    v: &Object<'js>,
    st: &Rc<VuState>,
) -> rquickjs::Result<()> {
    {
        let st = st.clone();
        v.set(
            "saLookup",
            Function::new(ctx.clone(), move |name: String| {
                st.shared.ext.arrays.lookup(&name).map_or(-1, |i| i as i64)
            })?,
        )?;
    }
    {
        let st = st.clone();
        v.set(
            "saStore",
            Function::new(
                ctx.clone(),
                move |ctx: Ctx<'js>, name: String, json: String| {
                    if !st.in_init.get() {
                        return Err(throw(
                            &ctx,
                            "SharedArray can only be created in the init context",
                        ));
                    }
                    st.shared
                        .ext
                        .arrays
                        .store(&name, &json)
                        .map(|i| i as i64)
                        .map_err(|e| throw(&ctx, &e))
                },
            )?,
        )?;
    }
    // A VU keeps the Arc of each array it opened: no lock on the read path.
    let opened: Rc<std::cell::RefCell<Vec<Option<Elements>>>> = Rc::default();
    let array = {
        let st = st.clone();
        move |id: usize| -> Option<Elements> {
            let mut o = opened.borrow_mut();
            if o.len() <= id {
                o.resize(id + 1, None);
            }
            if o[id].is_none() {
                o[id] = st.shared.ext.arrays.get(id);
            }
            o[id].clone()
        }
    };
    let array = Rc::new(array);
    {
        let array = array.clone();
        v.set(
            "saLen",
            Function::new(ctx.clone(), move |id: usize| {
                array(id).map_or(0, |a| a.len())
            })?,
        )?;
    }
    v.set(
        "saGet",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, id: usize, i: usize| -> rquickjs::Result<Value<'js>> {
                match array(id).as_ref().and_then(|a| a.get(i).cloned()) {
                    Some(s) => ctx.json_parse(s.as_bytes().to_vec()),
                    None => Ok(Value::new_undefined(ctx.clone())),
                }
            },
        )?,
    )?;
    Ok(())
}
