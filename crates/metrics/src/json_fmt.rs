//! The layout of the JSON files Volley writes: indented like `serde_json`'s pretty printer,
//! except that an array of plain values (numbers, strings) stays on one line.
//!
//! Why: a result file's series table holds its statistics as arrays of numbers (one per
//! second of the run); pretty-printed, every number took a line of its own plus its
//! indentation — an hour-long run wrote more whitespace than data, and nobody reads
//! 3,600 lines of one column. Objects, and arrays of objects, keep one member per line.

use serde_json::ser::{CompactFormatter, Formatter};
use std::io::{self, Write};

/// How the current array is laid out, known once its first element starts.
#[derive(Clone, Copy, PartialEq)]
enum Layout {
    /// No element yet.
    Open,
    /// Plain values: `[1, 2, 3]`.
    Inline,
    /// Objects or arrays: one per line.
    Lines,
}

#[derive(Default)]
pub struct Layouted {
    indent: usize,
    /// One entry per open array (objects are always laid out in lines).
    arrays: Vec<Layout>,
    /// An array's first element was announced and its layout is not decided yet.
    pending: bool,
    /// Per open container: whether it got a member (to close it on its own line).
    has_value: Vec<bool>,
}

impl Layouted {
    fn newline<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..self.indent {
            w.write_all(b"  ")?;
        }
        Ok(())
    }

    /// Before a value: an array's first element decides the array's layout.
    fn value<W: ?Sized + Write>(&mut self, w: &mut W, container: bool) -> io::Result<()> {
        if !std::mem::take(&mut self.pending) {
            return Ok(());
        }
        if let Some(l) = self.arrays.last_mut() {
            *l = if container {
                Layout::Lines
            } else {
                Layout::Inline
            };
            if container {
                self.newline(w)?;
            }
        }
        Ok(())
    }
}

macro_rules! scalar {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        fn $name<W: ?Sized + Write>(&mut self, w: &mut W, v: $t) -> io::Result<()> {
            self.value(w, false)?;
            CompactFormatter.$name(w, v)
        }
    )*};
}

impl Formatter for Layouted {
    scalar!(
        write_bool: bool,
        write_i8: i8,
        write_i16: i16,
        write_i32: i32,
        write_i64: i64,
        write_i128: i128,
        write_u8: u8,
        write_u16: u16,
        write_u32: u32,
        write_u64: u64,
        write_u128: u128,
        write_f32: f32,
        write_f64: f64,
        write_number_str: &str,
    );

    fn write_null<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.value(w, false)?;
        w.write_all(b"null")
    }

    fn begin_string<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.value(w, false)?;
        w.write_all(b"\"")
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.value(w, true)?;
        self.indent += 1;
        self.arrays.push(Layout::Open);
        self.has_value.push(false);
        w.write_all(b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.indent -= 1;
        self.pending = false;
        let layout = self.arrays.pop();
        if self.has_value.pop() == Some(true) && layout == Some(Layout::Lines) {
            self.newline(w)?;
        }
        w.write_all(b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        match self.arrays.last() {
            Some(Layout::Lines) => {
                w.write_all(b",")?;
                self.newline(w)
            }
            Some(Layout::Inline) => w.write_all(b", "),
            _ => {
                self.pending = first;
                Ok(())
            }
        }
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        if let Some(h) = self.has_value.last_mut() {
            *h = true;
        }
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.value(w, true)?;
        self.indent += 1;
        self.has_value.push(false);
        // An object inside is laid out in lines: its own array frame does not apply.
        self.arrays.push(Layout::Lines);
        w.write_all(b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.indent -= 1;
        self.arrays.pop();
        if self.has_value.pop() == Some(true) {
            self.newline(w)?;
        }
        w.write_all(b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.newline(w)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        if let Some(h) = self.has_value.last_mut() {
            *h = true;
        }
        Ok(())
    }
}

/// Write `value` in this layout.
pub fn to_writer<W: Write>(w: W, value: &impl serde::Serialize) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(w, Layouted::default());
    value.serialize(&mut ser)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    fn show(v: &serde_json::Value) -> String {
        let mut out = Vec::new();
        super::to_writer(&mut out, v).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn plain_arrays_stay_on_one_line_and_the_rest_is_indented() {
        let v = json!({"a": [1, 2.5, 3], "b": [{"x": ["p", "q"], "e": []}, {}], "c": [[1], [2]], "d": null});
        let text = show(&v);
        assert_eq!(
            text,
            "{\n  \"a\": [1, 2.5, 3],\n  \"b\": [\n    {\n      \"e\": [],\n      \"x\": [\"p\", \"q\"]\n    },\n    {}\n  ],\n  \"c\": [\n    [1],\n    [2]\n  ],\n  \"d\": null\n}"
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
    }
}
