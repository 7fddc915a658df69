//! The native of `k6/experimental/csv` (JS half: `shims/k6_experimental_csv.js`): one record
//! of an `fs.open`ed file, read at a byte offset with the `csv` crate.
//!
//! Stateless on purpose: each `Parser` (and `csv.parse`, which fills a SharedArray once per
//! process) keeps its offset, line count and header in JS, so a VU holds no Rust state and
//! the file stays the one shared copy of [`super::fs::Files`].

use super::throw;
use crate::vu::VuState;
use rquickjs::{Array, Ctx, Function, Object, Value};
use std::rc::Rc;

/// The record that starts at `offset` of `data` and where the next one starts; `None` at the
/// end. Blank lines are skipped (as Go's encoding/csv, which k6 uses).
pub(crate) fn record_at(
    data: &[u8],
    offset: usize,
    delimiter: u8,
) -> Result<Option<(Vec<String>, usize)>, String> {
    let rest = data.get(offset..).unwrap_or_default();
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .buffer_capacity(4096)
        .from_reader(rest);
    let mut rec = csv::ByteRecord::new();
    match r.read_byte_record(&mut rec) {
        Ok(false) => Ok(None),
        Ok(true) => {
            let fields = rec
                .iter()
                .map(|f| String::from_utf8_lossy(f).into_owned())
                .collect();
            Ok(Some((fields, offset + r.position().byte() as usize)))
        }
        Err(e) => Err(e.to_string()),
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
            "csvInInit",
            Function::new(ctx.clone(), move || st.in_init.get())?,
        )?;
    }
    let st = st.clone();
    v.set(
        "csvNext",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, id: usize, offset: usize, delimiter: String| {
                let data = st.shared.ext.files.data(id).unwrap_or_default();
                let d = match delimiter.as_bytes() {
                    [b] => *b,
                    _ => return Err(throw(&ctx, "delimiter must be a single character")),
                };
                match record_at(&data, offset, d) {
                    Ok(None) => Ok(Value::new_null(ctx.clone())),
                    Ok(Some((fields, next))) => {
                        let out = Array::new(ctx.clone())?;
                        out.set(0, fields)?;
                        out.set(1, next)?;
                        Ok(out.into_value())
                    }
                    Err(e) => Err(throw(&ctx, &format!("csv: {e}"))),
                }
            },
        )?,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_in_turn_with_quotes_and_blank_lines() {
        let data = b"a,b\n\n\"x,1\",\"say \"\"hi\"\"\"\r\nlast;1\n";
        let (r1, o1) = record_at(data, 0, b',').unwrap().unwrap();
        assert_eq!(r1, ["a", "b"]);
        let (r2, o2) = record_at(data, o1, b',').unwrap().unwrap();
        assert_eq!(r2, ["x,1", "say \"hi\""]);
        let (r3, o3) = record_at(data, o2, b';').unwrap().unwrap();
        assert_eq!(r3, ["last", "1"]);
        assert_eq!(record_at(data, o3, b',').unwrap(), None);
        // An offset past the end is the end, not a panic.
        assert_eq!(record_at(data, 10_000, b',').unwrap(), None);
    }
}
