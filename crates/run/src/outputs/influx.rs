//! `--out influxdb=http://host:8086/DB`: one-second aggregates as InfluxDB line protocol,
//! POSTed to `/write?db=DB` once a second.
//!
//! One line per series and second; the measurement is the metric's name, its tags are the
//! metric's tags, the fields depend on the kind, the timestamp (ns) is the second's start:
//!
//! ```text
//! http_reqs,method=GET,status=200 value=41 1767323045000000000
//! http_req_failed,method=GET rate=0,trues=0i,total=41i 1767323045000000000
//! vus value=10,min=10,max=10 1767323045000000000
//! http_req_duration,method=GET count=41i,min=0.8,mean=1.1,p50=1,p90=1.6,p95=1.9,p99=2.9,max=4.1 1767323045000000000
//! ```
//!
//! Escaping follows the line protocol: in measurements `,` and space are escaped with `\`; in
//! tag keys, tag values and field keys also `=`. Empty tag values are left out (InfluxDB
//! rejects them) and line breaks in tags become spaces.

use super::Aggregated;
use volley_metrics::series::Stat;
use volley_metrics::Point;

pub const HEADERS: &[(&str, &str)] = &[("Content-Type", "text/plain; charset=utf-8")];

pub fn escape_measurement(s: &str) -> String {
    escape(s, &[',', ' '])
}

/// Tag keys, tag values and field keys.
pub fn escape_key(s: &str) -> String {
    escape(s, &[',', '=', ' '])
}

fn escape(s: &str, special: &[char]) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        let c = if c == '\n' || c == '\r' { ' ' } else { c };
        if special.contains(&c) {
            o.push('\\');
        }
        o.push(c);
    }
    // A trailing backslash would escape the separator after it.
    if o.ends_with('\\') && !o.ends_with("\\\\") {
        o.push('\\');
    }
    o
}

/// A float field value (finite; InfluxDB has no NaN or infinity).
fn float(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "0".into()
    }
}

/// One line (with its newline) for a series' statistics in one second.
pub fn line(name: &str, tags: &volley_metrics::TagSet, stat: &Stat, ts_ns: u128) -> String {
    let mut l = escape_measurement(name);
    for (k, v) in tags {
        if k.is_empty() || v.is_empty() {
            continue;
        }
        l.push(',');
        l.push_str(&escape_key(k));
        l.push('=');
        l.push_str(&escape_key(v));
    }
    l.push(' ');
    let fields = match stat {
        Stat::Counter { sum } => format!("value={}", float(*sum)),
        Stat::Gauge { last, min, max } => format!(
            "value={},min={},max={}",
            float(*last),
            float(*min),
            float(*max)
        ),
        Stat::Rate { trues, total } => format!(
            "rate={},trues={trues}i,total={total}i",
            float(if *total > 0 {
                *trues as f64 / *total as f64
            } else {
                0.0
            })
        ),
        Stat::Trend {
            count,
            min,
            max,
            mean,
            p50,
            p90,
            p95,
            p99,
        } => format!(
            "count={count}i,min={},mean={},p50={},p90={},p95={},p99={},max={}",
            float(*min),
            float(*mean),
            float(*p50),
            float(*p90),
            float(*p95),
            float(*p99),
            float(*max)
        ),
    };
    l.push_str(&fields);
    l.push(' ');
    l.push_str(&ts_ns.to_string());
    l.push('\n');
    l
}

#[derive(Default)]
pub struct Influx {
    batch: String,
}

impl Influx {
    pub fn new() -> Influx {
        Influx::default()
    }
}

impl Aggregated for Influx {
    fn point(&mut self, start_ms: u64, p: &Point) {
        let ts_ns = (start_ms as u128 + p.t as u128 * 1000) * 1_000_000;
        for v in &p.values {
            if matches!(
                v.stat,
                Stat::Trend { count: 0, .. } | Stat::Rate { total: 0, .. }
            ) {
                continue;
            }
            self.batch
                .push_str(&line(v.name(), v.tags(), &v.stat, ts_ns));
        }
    }

    fn take_batch(&mut self) -> Option<Vec<u8>> {
        (!self.batch.is_empty()).then(|| std::mem::take(&mut self.batch).into_bytes())
    }
}

/// A strict line-protocol parser, for tests (here and in the CLI's): one line →
/// (measurement, tags, fields, timestamp), unescaped; an error for anything malformed.
pub mod parse {
    use std::collections::BTreeMap;

    /// A parsed field value.
    #[derive(Clone, Debug, PartialEq)]
    pub enum Field {
        Float(f64),
        Int(i64),
        Str(String),
        Bool(bool),
    }

    pub type Line = (
        String,
        BTreeMap<String, String>,
        BTreeMap<String, Field>,
        i64,
    );

    /// Split at the first unescaped `stop` character outside double quotes (when
    /// `quotes`); returns the unescaped part and the rest after the separator.
    fn take(s: &str, stops: &[char], quotes: bool) -> (String, Option<char>, String) {
        split(s, stops, quotes, true)
    }

    /// [`take`] that keeps escapes in the part (for a part split again later).
    fn raw(s: &str, stops: &[char], quotes: bool) -> (String, Option<char>, String) {
        split(s, stops, quotes, false)
    }

    fn split(
        s: &str,
        stops: &[char],
        quotes: bool,
        unescape: bool,
    ) -> (String, Option<char>, String) {
        let mut out = String::new();
        let mut chars = s.char_indices();
        let mut in_q = false;
        while let Some((i, c)) = chars.next() {
            if c == '\\' {
                match chars.clone().next() {
                    Some((_, n)) if stops.contains(&n) || n == '\\' || (in_q && n == '"') => {
                        chars.next();
                        if !unescape {
                            out.push('\\');
                        }
                        out.push(n);
                        continue;
                    }
                    _ => {
                        out.push(c);
                        continue;
                    }
                }
            }
            if quotes && c == '"' {
                in_q = !in_q;
                out.push(c);
                continue;
            }
            if !in_q && stops.contains(&c) {
                return (out, Some(c), s[i + c.len_utf8()..].to_string());
            }
            out.push(c);
        }
        (out, None, String::new())
    }

    pub fn line(l: &str) -> Result<Line, String> {
        let bad = |why: &str| Err(format!("{why}: {l:?}"));
        if l.is_empty() || l.starts_with(' ') {
            return bad("empty measurement");
        }
        let (measurement, sep, mut rest) = take(l, &[',', ' '], false);
        if measurement.is_empty() {
            return bad("empty measurement");
        }
        let mut tags = BTreeMap::new();
        let mut sep = sep;
        while sep == Some(',') {
            let (kv, s, r) = raw(&rest, &[',', ' '], false);
            let (k, eq, v) = take(&kv, &[',', '=', ' '], false);
            let v = take(&v, &[',', '=', ' '], false).0;
            if k.is_empty() || eq.is_none() || v.is_empty() {
                return bad("bad tag");
            }
            tags.insert(k, v);
            sep = s;
            rest = r;
        }
        if sep != Some(' ') {
            return bad("no fields");
        }
        let (fields_s, sep2, ts_s) = raw(&rest, &[' '], true);
        let mut fields = BTreeMap::new();
        let mut fs = fields_s;
        loop {
            let (kv, s, r) = raw(&fs, &[','], true);
            let (k, eq, v) = take(&kv, &[',', '=', ' '], false);
            if k.is_empty() || eq.is_none() || v.is_empty() {
                return bad("bad field");
            }
            let val = if let Some(i) = v.strip_suffix('i') {
                Field::Int(i.parse().map_err(|_| format!("bad integer field: {l:?}"))?)
            } else if v.starts_with('"') && v.ends_with('"') && v.len() >= 2 {
                Field::Str(v[1..v.len() - 1].to_string())
            } else if ["t", "T", "true", "True", "TRUE"].contains(&v.as_str()) {
                Field::Bool(true)
            } else if ["f", "F", "false", "False", "FALSE"].contains(&v.as_str()) {
                Field::Bool(false)
            } else {
                let f: f64 = v.parse().map_err(|_| format!("bad float field: {l:?}"))?;
                if !f.is_finite()
                    || v.chars()
                        .any(|c| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
                {
                    return bad("bad float field");
                }
                Field::Float(f)
            };
            fields.insert(k, val);
            if s.is_none() {
                break;
            }
            fs = r;
        }
        if sep2 != Some(' ') || ts_s.is_empty() {
            return bad("no timestamp");
        }
        let ts = ts_s
            .parse::<i64>()
            .map_err(|_| format!("bad timestamp: {l:?}"))?;
        Ok((measurement, tags, fields, ts))
    }
}

#[cfg(test)]
mod tests {
    use super::parse::{line as parse_line, Field};
    use super::*;

    #[test]
    fn escaping_round_trips_through_a_strict_parser() {
        let mut tags = volley_metrics::TagSet::new();
        tags.insert("name".into(), "GET /a,b=c d".into());
        tags.insert("group".into(), String::new());
        tags.insert("we ird=".into(), "x\ny".into());
        let stat = Stat::Trend {
            count: 3,
            min: 0.5,
            max: 4.0,
            mean: 1.25,
            p50: 1.0,
            p90: 3.0,
            p95: 3.5,
            p99: 4.0,
        };
        let l = line("my metric,x", &tags, &stat, 1_700_000_000_000_000_000);
        assert!(l.ends_with('\n'));
        let (m, t, f, ts) = parse_line(l.trim_end()).unwrap();
        assert_eq!(m, "my metric,x");
        assert_eq!(t.get("name").unwrap(), "GET /a,b=c d");
        assert_eq!(t.get("we ird=").unwrap(), "x y");
        assert!(!t.contains_key("group"), "empty tag values are left out");
        assert_eq!(f.get("count"), Some(&Field::Int(3)));
        assert_eq!(f.get("p95"), Some(&Field::Float(3.5)));
        assert_eq!(ts, 1_700_000_000_000_000_000);
    }

    #[test]
    fn strict_parser_rejects_malformed_lines() {
        for bad in [
            "m value=1",         // no timestamp
            "m,t= value=1 1",    // empty tag value
            "m value= 1",        // empty field
            "m value=1x 1",      // not a number
            "m value=1 1.5",     // fractional timestamp
            " m value=1 1",      // no measurement
            "m,a=b value=1i2 1", // bad integer
            "m,a=b value=NaN 1", // not finite
        ] {
            assert!(parse_line(bad).is_err(), "{bad}");
        }
        assert!(parse_line("m,a=b value=1,s=\"x y,z\" 5").is_ok());
    }

    #[test]
    fn kinds_have_their_fields() {
        let t = volley_metrics::TagSet::new();
        let r = line("checks", &t, &Stat::Rate { trues: 1, total: 4 }, 1);
        assert_eq!(r, "checks rate=0.25,trues=1i,total=4i 1\n");
        let c = line("http_reqs", &t, &Stat::Counter { sum: 41.0 }, 2);
        assert_eq!(c, "http_reqs value=41 2\n");
    }
}
