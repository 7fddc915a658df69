//! The metrics a command prints: `key=value` pairs anywhere on a line (`--parse kv`) or JSON
//! objects, one per line (`--parse json`). Each numeric value becomes a metric of the run
//! with its unit ([`crate::units`]); non-numeric values are labels (`backend=file`).
//!
//! Within one run a key printed again replaces the earlier value (the last one counts) and
//! is counted; a line that looks like it carries pairs but has a broken one (`ops=`,
//! `x=1.2.3`, a JSON line that does not parse, a line over [`MAX_LINE`]) is counted as
//! malformed and the first one is kept to show. Memory is bounded: one line buffer and at
//! most [`MAX_KEYS`] keys per run.

use crate::units::{self, Quantity};
use std::collections::BTreeMap;

/// Longest line read whole; the rest of a longer line is skipped (and the line counted as
/// malformed).
pub const MAX_LINE: usize = 64 * 1024;
/// Most distinct keys kept per run; further keys are counted, not kept.
pub const MAX_KEYS: usize = 256;
/// Longest malformed line kept to show (characters).
const SHOW_MAX: usize = 120;

/// How the command's stdout is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Kv,
    Json,
}

impl Format {
    pub fn parse(s: &str) -> Result<Format, String> {
        match s {
            "kv" => Ok(Format::Kv),
            "json" => Ok(Format::Json),
            _ => Err(format!(
                "--parse '{s}': expected kv (key=value pairs) or json (one JSON object per line)"
            )),
        }
    }
}

/// What one run printed, parsed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// The last value of every numeric key, in first-seen order.
    pub values: Vec<(String, Quantity)>,
    /// Non-numeric values (`backend=file`), the last of each.
    pub labels: BTreeMap<String, String>,
    /// Keys printed more than once, with how many times.
    pub repeated: BTreeMap<String, u32>,
    /// Lines with a broken pair or JSON.
    pub malformed: u64,
    /// The first malformed line (1-based line number and its text, shortened).
    pub first_malformed: Option<(u64, String)>,
    /// Keys beyond [`MAX_KEYS`], not kept.
    pub dropped_keys: u64,
    pub lines: u64,
}

/// An incremental parser over a run's stdout bytes.
pub struct OutputParser {
    format: Format,
    line: Vec<u8>,
    overlong: bool,
    out: Parsed,
    index: BTreeMap<String, usize>,
}

impl OutputParser {
    pub fn new(format: Format) -> Self {
        OutputParser {
            format,
            line: Vec::new(),
            overlong: false,
            out: Parsed::default(),
            index: BTreeMap::new(),
        }
    }

    /// Feed bytes as they arrive (any split).
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while let Some(nl) = bytes.iter().position(|&b| b == b'\n') {
            self.push(&bytes[..nl]);
            self.end_line();
            bytes = &bytes[nl + 1..];
        }
        self.push(bytes);
    }

    fn push(&mut self, b: &[u8]) {
        let room = MAX_LINE - self.line.len();
        if b.len() > room {
            self.overlong = true;
        }
        self.line.extend_from_slice(&b[..b.len().min(room)]);
    }

    fn end_line(&mut self) {
        self.out.lines += 1;
        let raw = std::mem::take(&mut self.line);
        let text = String::from_utf8_lossy(&raw);
        let text = text.trim_end_matches('\r');
        let ok = if std::mem::take(&mut self.overlong) {
            false
        } else {
            match self.format {
                Format::Kv => self.kv_line(text),
                Format::Json => self.json_line(text),
            }
        };
        if !ok {
            self.out.malformed += 1;
            if self.out.first_malformed.is_none() {
                let shown: String = text.chars().take(SHOW_MAX).collect();
                self.out.first_malformed = Some((self.out.lines, shown));
            }
        }
        self.line = raw;
        self.line.clear();
    }

    /// The result; a last line without a newline counts.
    pub fn finish(mut self) -> Parsed {
        if !self.line.is_empty() || self.overlong {
            self.end_line();
        }
        self.out
    }

    fn set(&mut self, key: &str, q: Quantity) {
        if let Some(&i) = self.index.get(key) {
            self.out.values[i].1 = q;
            *self.out.repeated.entry(key.to_string()).or_insert(1) += 1;
        } else if self.index.len() + self.out.labels.len() < MAX_KEYS {
            self.index.insert(key.to_string(), self.out.values.len());
            self.out.values.push((key.to_string(), q));
        } else {
            self.out.dropped_keys += 1;
        }
    }

    fn label(&mut self, key: &str, v: &str) {
        let known = self.out.labels.contains_key(key);
        if known || self.index.len() + self.out.labels.len() < MAX_KEYS {
            if known {
                *self.out.repeated.entry(key.to_string()).or_insert(1) += 1;
            }
            self.out.labels.insert(key.to_string(), v.to_string());
        } else {
            self.out.dropped_keys += 1;
        }
    }

    /// `key=value` tokens anywhere on the line; false when one of them is broken.
    fn kv_line(&mut self, line: &str) -> bool {
        let words: Vec<&str> = line.split_whitespace().collect();
        let mut ok = true;
        let mut i = 0;
        while i < words.len() {
            let w = words[i];
            i += 1;
            let Some((key, value)) = w.split_once('=') else {
                continue;
            };
            if !is_key(key) {
                // `--flag=x`, URLs, `a==b`: not a metric pair.
                continue;
            }
            let value = value
                .trim_end_matches([',', ';'])
                .trim_matches(|c| c == '"' || c == '\'');
            if value.is_empty() {
                ok = false;
                continue;
            }
            let starts_numeric = value
                .trim_start_matches(['-', '+'])
                .starts_with(|c: char| c.is_ascii_digit() || c == '.');
            if !starts_numeric {
                self.label(key, value);
                continue;
            }
            let Some((v, rest)) = units::split_number(value) else {
                ok = false;
                continue;
            };
            let next = words.get(i).copied().filter(|n| !n.contains('='));
            match units::apply_unit(v, rest, next) {
                Some((q, used_next)) => {
                    if used_next {
                        i += 1;
                    }
                    self.set(key, q);
                }
                None => ok = false,
            }
        }
        ok
    }

    /// One JSON object per line; other lines are not metrics and are skipped.
    fn json_line(&mut self, line: &str) -> bool {
        let t = line.trim();
        if !t.starts_with('{') {
            return true;
        }
        match serde_json::from_str::<serde_json::Value>(t) {
            Ok(serde_json::Value::Object(m)) => {
                self.json_object("", &m, 0);
                true
            }
            _ => false,
        }
    }

    fn json_object(
        &mut self,
        prefix: &str,
        m: &serde_json::Map<String, serde_json::Value>,
        depth: usize,
    ) {
        for (k, v) in m {
            let key = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            match v {
                serde_json::Value::Number(n) => {
                    if let Some(x) = n.as_f64().filter(|x| x.is_finite()) {
                        let class = units::Class::Plain;
                        self.set(&key, Quantity { value: x, class });
                    }
                }
                serde_json::Value::String(s) => match units::parse(s) {
                    Some(q) => self.set(&key, q),
                    None => self.label(&key, s),
                },
                // Nested objects flatten to `a.b` (a few levels: metrics are shallow).
                serde_json::Value::Object(inner) if depth < 4 => {
                    self.json_object(&key, inner, depth + 1)
                }
                _ => {}
            }
        }
    }
}

/// A metric key: a letter or `_` first, then letters, digits, `_`, `.`, `-`.
fn is_key(k: &str) -> bool {
    let mut c = k.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || matches!(x, '_' | '.' | '-'))
        && k.len() <= 128
}

/// Parse a whole output at once (tests, and commands whose output is already in memory).
pub fn parse_all(format: Format, text: &[u8]) -> Parsed {
    let mut p = OutputParser::new(format);
    p.feed(text);
    p.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Class;

    fn val(p: &Parsed, k: &str) -> (f64, Class) {
        let q = &p
            .values
            .iter()
            .find(|(n, _)| n == k)
            .unwrap_or_else(|| panic!("{k}"))
            .1;
        (q.value, q.class.clone())
    }

    #[test]
    fn the_seeds_stream_line_parses_with_units_and_labels() {
        let text = b"stream_1gb backend=file bytes=1073741824 write_seconds=13.882 \
            write_mib_per_s=73.76 read_seconds=0.074 read_mib_per_s=13824.01 chunk_size=65536\n\
            maximum resident set size: 2.5 MiB\npeak=2.5MiB lat=12ms tput=3.1k ops/s";
        let p = parse_all(Format::Kv, text);
        assert_eq!(val(&p, "write_mib_per_s"), (73.76, Class::Plain));
        assert_eq!(val(&p, "bytes"), (1073741824.0, Class::Plain));
        assert_eq!(val(&p, "peak"), (2.5 * 1048576.0, Class::Bytes));
        assert_eq!(val(&p, "lat"), (12.0, Class::Time));
        assert_eq!(val(&p, "tput"), (3100.0, Class::Other("ops/s".into())));
        assert_eq!(p.labels.get("backend").map(String::as_str), Some("file"));
        assert_eq!((p.malformed, p.lines), (0, 3));
        assert_eq!(p.values.len(), 9);
    }

    #[test]
    fn a_repeated_key_keeps_the_last_value_and_is_counted() {
        let p = parse_all(Format::Kv, b"ops=1\nops=2 x=5\nops=3\n");
        assert_eq!(val(&p, "ops").0, 3.0);
        assert_eq!(p.repeated.get("ops"), Some(&3));
        assert_eq!(p.repeated.get("x"), None);
    }

    #[test]
    fn malformed_lines_are_counted_and_the_first_is_kept() {
        let text = b"ok=1\nops=\nplain text, no pairs\nx=1.2.3 y=4\n--flag=3 https://h/?a=1\n";
        let p = parse_all(Format::Kv, text);
        assert_eq!(p.malformed, 2);
        assert_eq!(p.first_malformed, Some((2, "ops=".to_string())));
        assert_eq!(
            val(&p, "y").0,
            4.0,
            "the good pair of a bad line still counts"
        );
        assert_eq!(p.values.len(), 2);
    }

    #[test]
    fn json_lines_flatten_and_read_units_in_strings() {
        let text = b"starting\n{\"ops\": 3500, \"rss\": \"2.5MiB\", \"io\": {\"write\": 1.5}, \"b\": \"file\"}\n{broken\n";
        let p = parse_all(Format::Json, text);
        assert_eq!(val(&p, "ops").0, 3500.0);
        assert_eq!(val(&p, "rss"), (2.5 * 1048576.0, Class::Bytes));
        assert_eq!(val(&p, "io.write").0, 1.5);
        assert_eq!(p.labels.get("b").map(String::as_str), Some("file"));
        assert_eq!(p.malformed, 1);
    }

    #[test]
    fn memory_is_bounded_by_line_and_key_limits() {
        let mut p = OutputParser::new(Format::Kv);
        let long = vec![b'a'; MAX_LINE * 3];
        p.feed(&long);
        p.feed(b"\n");
        for i in 0..MAX_KEYS + 10 {
            p.feed(format!("k{i}=1\n").as_bytes());
        }
        let out = p.finish();
        assert_eq!(out.malformed, 1, "the overlong line");
        assert_eq!(out.values.len(), MAX_KEYS);
        assert_eq!(out.dropped_keys, 10);
    }
}
