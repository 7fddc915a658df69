//! Natives of `k6/experimental/fs` (JS half: `shims/k6_experimental_fs.js`).
//!
//! `fs.open(path)` reads a file once per process (through the same cache as `open()`) and
//! keeps it here behind an `Arc`; every VU's `File` is an id into this list plus its own
//! offset in JS, so VUs share one read-only copy and `read()` copies only the chunk asked for.

use super::throw;
use crate::vu::VuState;
use rquickjs::{Ctx, Function, Object, Value};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

/// Every file `fs.open` opened in this run, by id.
#[derive(Default)]
pub(crate) struct Files {
    list: Mutex<Vec<(PathBuf, Arc<Vec<u8>>)>>,
}

impl Files {
    fn id_of(&self, path: PathBuf, data: impl FnOnce() -> Arc<Vec<u8>>) -> usize {
        let mut list = self.list.lock().unwrap();
        if let Some(i) = list.iter().position(|(p, _)| *p == path) {
            return i;
        }
        list.push((path, data()));
        list.len() - 1
    }

    /// The contents of file `id`.
    pub(crate) fn data(&self, id: usize) -> Option<Arc<Vec<u8>>> {
        self.list.lock().unwrap().get(id).map(|(_, d)| d.clone())
    }
}

/// An error for the shim to turn into k6's `FsError` (`name` is k6's error kind).
fn fs_error<'js>(ctx: &Ctx<'js>, name: &str, message: String) -> rquickjs::Result<Value<'js>> {
    let o = Object::new(ctx.clone())?;
    o.set("error", name)?;
    o.set("message", message)?;
    Ok(o.into_value())
}

fn open<'js>(ctx: Ctx<'js>, st: &VuState, path: String) -> rquickjs::Result<Value<'js>> {
    if !st.in_init.get() {
        let m = "open() failed; reason: opening a file is allowed only in the Init context";
        return fs_error(&ctx, "ForbiddenError", m.into());
    }
    let path = path.strip_prefix("file://").unwrap_or(&path);
    let requiring = st.ext.requiring.borrow().last().cloned();
    let module = crate::script::calling_module(&ctx, requiring, &st.shared.main);
    let rel = crate::script::open_path(&module, path);
    let full = std::path::absolute(&rel).unwrap_or(rel);
    match std::fs::metadata(&full) {
        Err(_) => {
            let m = format!("no such file or directory {:?}", full.display().to_string());
            return fs_error(&ctx, "NotFoundError", m);
        }
        Ok(md) if md.is_dir() => {
            let m = format!(
                "cannot open {:?}: opening a directory is not supported",
                full.display().to_string()
            );
            return fs_error(&ctx, "InvalidResourceError", m);
        }
        Ok(_) => {}
    }
    // One copy per process, shared with `open()`'s cache.
    let bytes = {
        let mut files = st.shared.files.lock().unwrap();
        match files.get(&full) {
            Some(b) => b.clone(),
            None => {
                let b = crate::script::read_capped(&full, crate::script::MAX_OPEN_BYTES)
                    .map_err(|e| throw(&ctx, &format!("open({}): {e}", full.display())))?;
                let b = Arc::new(b);
                files.insert(full.clone(), b.clone());
                b
            }
        }
    };
    let id = st.shared.ext.files.id_of(full.clone(), || bytes);
    let o = Object::new(ctx.clone())?;
    o.set("id", id)?;
    o.set("path", full.to_string_lossy().into_owned())?;
    Ok(o.into_value())
}

pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    v: &Object<'js>,
    st: &Rc<VuState>,
) -> rquickjs::Result<()> {
    {
        let st = st.clone();
        v.set(
            "fsOpen",
            Function::new(ctx.clone(), move |ctx: Ctx<'js>, path: String| {
                open(ctx, &st, path)
            })?,
        )?;
    }
    {
        let st = st.clone();
        v.set(
            "fsSize",
            Function::new(ctx.clone(), move |id: usize| {
                st.shared.ext.files.data(id).map_or(0, |d| d.len())
            })?,
        )?;
    }
    let st = st.clone();
    v.set(
        "fsChunk",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, id: usize, offset: usize, len: usize| {
                let d = st.shared.ext.files.data(id).unwrap_or_default();
                let start = offset.min(d.len());
                let end = start.saturating_add(len).min(d.len());
                super::array_buffer(&ctx, &d[start..end])
            },
        )?,
    )?;
    Ok(())
}
