//! `--out prometheus=http://host:9090/api/v1/write`: Prometheus remote write (protocol 1.0:
//! a protobuf `WriteRequest`, snappy block-compressed), one request per second.
//!
//! The schema is small enough to encode by hand:
//!
//! ```text
//! message WriteRequest { repeated TimeSeries timeseries = 1; }
//! message TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
//! message Label        { string name = 1; string value = 2; }
//! message Sample       { double value = 1; int64 timestamp = 2; }   // Unix ms
//! ```
//!
//! What is sent per second, with the metric's tags as labels (names prefixed `volley_`):
//! counters as monotonic totals `volley_<name>_total`; gauges `volley_<name>` (last value);
//! rates `volley_<name>_rate` (the share of true samples in that second); trends
//! `volley_<name>` with a `stat` label of `p50`, `p90`, `p95`, `p99`, `max` and `mean`
//! (milliseconds for time trends) and `volley_<name>_count_total`.

use super::Aggregated;
use std::collections::BTreeMap;
use volley_metrics::series::Stat;
use volley_metrics::{Point, TagSet};

pub const HEADERS: &[(&str, &str)] = &[
    ("Content-Type", "application/x-protobuf"),
    ("Content-Encoding", "snappy"),
    ("X-Prometheus-Remote-Write-Version", "0.1.0"),
];

/// One time series with its samples: labels sorted by name, `__name__` among them.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeSeries {
    pub labels: Vec<(String, String)>,
    pub samples: Vec<(f64, i64)>,
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, ((field as u64) << 3) | wire as u64);
}

fn bytes_field(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(out, field, 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Encode a `WriteRequest` (uncompressed protobuf).
pub fn encode(series: &[TimeSeries]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut ts = Vec::new();
    let mut tmp = Vec::new();
    for s in series {
        ts.clear();
        for (n, v) in &s.labels {
            tmp.clear();
            bytes_field(&mut tmp, 1, n.as_bytes());
            bytes_field(&mut tmp, 2, v.as_bytes());
            bytes_field(&mut ts, 1, &tmp);
        }
        for (v, t) in &s.samples {
            tmp.clear();
            key(&mut tmp, 1, 1);
            tmp.extend_from_slice(&v.to_le_bytes());
            key(&mut tmp, 2, 0);
            varint(&mut tmp, *t as u64);
            bytes_field(&mut ts, 2, &tmp);
        }
        bytes_field(&mut out, 1, &ts);
    }
    out
}

/// Prometheus metric names: `[a-zA-Z_:][a-zA-Z0-9_:]*`; label names without `:`.
pub fn sanitize(s: &str, colon: bool) -> String {
    let mut o: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if o.is_empty() || o.starts_with(|c: char| c.is_ascii_digit()) {
        o.insert(0, '_');
    }
    o
}

/// The labels of a series: `__name__`, the metric's tags (empty values left out, as
/// Prometheus drops them) and extras, sorted by name.
fn labels(name: &str, tags: &TagSet, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut m: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in tags {
        let k = sanitize(k, false);
        if !v.is_empty() && !k.starts_with("__") {
            m.insert(k, v.clone());
        }
    }
    for (k, v) in extra {
        m.insert(k.to_string(), v.to_string());
    }
    m.insert("__name__".into(), name.to_string());
    m.into_iter().collect()
}

/// Remote write from one-second points; counters are carried as running totals.
#[derive(Default)]
pub struct RemoteWrite {
    totals: BTreeMap<(String, TagSet), f64>,
    batch: Vec<TimeSeries>,
}

impl RemoteWrite {
    pub fn new() -> RemoteWrite {
        RemoteWrite::default()
    }

    fn push(&mut self, labels: Vec<(String, String)>, v: f64, ts: i64) {
        if !v.is_finite() {
            return;
        }
        // One request holds a series once, its samples in time order.
        if let Some(s) = self.batch.iter_mut().find(|s| s.labels == labels) {
            s.samples.push((v, ts));
        } else {
            self.batch.push(TimeSeries {
                labels,
                samples: vec![(v, ts)],
            });
        }
    }
}

impl Aggregated for RemoteWrite {
    fn point(&mut self, start_ms: u64, p: &Point) {
        let ts = (start_ms + p.t * 1000) as i64;
        for v in &p.values {
            let base = format!("volley_{}", sanitize(v.name(), true));
            match &v.stat {
                Stat::Counter { sum } => {
                    let t = self
                        .totals
                        .entry((v.name().to_string(), v.tags().clone()))
                        .or_insert(0.0);
                    *t += sum;
                    let total = *t;
                    self.push(labels(&format!("{base}_total"), v.tags(), &[]), total, ts);
                }
                Stat::Gauge { last, .. } => self.push(labels(&base, v.tags(), &[]), *last, ts),
                Stat::Rate { trues, total } if *total > 0 => self.push(
                    labels(&format!("{base}_rate"), v.tags(), &[]),
                    *trues as f64 / *total as f64,
                    ts,
                ),
                Stat::Rate { .. } => {}
                Stat::Trend {
                    count,
                    max,
                    mean,
                    p50,
                    p90,
                    p95,
                    p99,
                    ..
                } if *count > 0 => {
                    for (stat, x) in [
                        ("p50", p50),
                        ("p90", p90),
                        ("p95", p95),
                        ("p99", p99),
                        ("max", max),
                        ("mean", mean),
                    ] {
                        self.push(labels(&base, v.tags(), &[("stat", stat)]), *x, ts);
                    }
                    let t = self
                        .totals
                        .entry((format!("{}#count", v.name()), v.tags().clone()))
                        .or_insert(0.0);
                    *t += *count as f64;
                    let total = *t;
                    self.push(
                        labels(&format!("{base}_count_total"), v.tags(), &[]),
                        total,
                        ts,
                    );
                }
                Stat::Trend { .. } => {}
            }
        }
    }

    fn take_batch(&mut self) -> Option<Vec<u8>> {
        if self.batch.is_empty() {
            return None;
        }
        let body = encode(&std::mem::take(&mut self.batch));
        snap::raw::Encoder::new().compress_vec(&body).ok()
    }
}

/// Decoding, for tests: snappy block → protobuf → series (strict: any malformed byte fails).
pub mod decode {
    use super::TimeSeries;

    fn varint(b: &[u8], at: &mut usize) -> Result<u64, String> {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let byte = *b.get(*at).ok_or("truncated varint")?;
            *at += 1;
            v |= ((byte & 0x7f) as u64) << shift;
            if byte < 0x80 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err("varint too long".into());
            }
        }
    }

    /// One field: (field number, wire type, payload, varint value).
    type Field = (u64, u8, Vec<u8>, u64);

    /// The fields of one message.
    fn fields(b: &[u8]) -> Result<Vec<Field>, String> {
        let mut at = 0;
        let mut out = Vec::new();
        while at < b.len() {
            let k = varint(b, &mut at)?;
            let (field, wire) = (k >> 3, (k & 7) as u8);
            match wire {
                0 => {
                    let v = varint(b, &mut at)?;
                    out.push((field, wire, Vec::new(), v));
                }
                1 => {
                    let s = b.get(at..at + 8).ok_or("truncated fixed64")?;
                    at += 8;
                    out.push((field, wire, s.to_vec(), 0));
                }
                2 => {
                    let n = varint(b, &mut at)? as usize;
                    let s = b.get(at..at + n).ok_or("truncated bytes")?;
                    at += n;
                    out.push((field, wire, s.to_vec(), 0));
                }
                w => return Err(format!("unexpected wire type {w}")),
            }
        }
        Ok(out)
    }

    pub fn write_request(snappy: &[u8]) -> Result<Vec<TimeSeries>, String> {
        let raw = snap::raw::Decoder::new()
            .decompress_vec(snappy)
            .map_err(|e| format!("snappy: {e}"))?;
        let mut series = Vec::new();
        for (f, w, ts, _) in fields(&raw)? {
            if (f, w) != (1, 2) {
                return Err(format!("WriteRequest: unexpected field {f}"));
            }
            let mut s = TimeSeries {
                labels: Vec::new(),
                samples: Vec::new(),
            };
            for (f, w, body, _) in fields(&ts)? {
                match (f, w) {
                    (1, 2) => {
                        let (mut n, mut v) = (String::new(), String::new());
                        for (lf, _, lb, _) in fields(&body)? {
                            let text = String::from_utf8(lb).map_err(|e| e.to_string())?;
                            match lf {
                                1 => n = text,
                                2 => v = text,
                                x => return Err(format!("Label: unexpected field {x}")),
                            }
                        }
                        s.labels.push((n, v));
                    }
                    (2, 2) => {
                        let (mut v, mut t) = (0.0, 0i64);
                        for (sf, sw, sb, sv) in fields(&body)? {
                            match (sf, sw) {
                                (1, 1) => v = f64::from_le_bytes(sb.try_into().map_err(|_| "f64")?),
                                (2, 0) => t = sv as i64,
                                x => return Err(format!("Sample: unexpected field {x:?}")),
                            }
                        }
                        s.samples.push((v, t));
                    }
                    x => return Err(format!("TimeSeries: unexpected field {x:?}")),
                }
            }
            series.push(s);
        }
        Ok(series)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_metrics::SeriesValue;

    type Value<'a> = (&'a str, &'a [(&'a str, &'a str)], Stat);

    fn point(t: u64, values: Vec<Value>) -> Point {
        Point {
            t,
            w: 1,
            values: values
                .into_iter()
                .map(|(n, tags, stat)| {
                    let tags = tags
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect();
                    SeriesValue::new(n, tags, stat)
                })
                .collect(),
        }
    }

    #[test]
    fn write_request_decodes_to_what_was_sent() {
        let mut rw = RemoteWrite::new();
        let tags: &[(&str, &str)] = &[("status", "200"), ("group", "")];
        rw.point(
            1_000_000,
            &point(
                0,
                vec![
                    ("http_reqs", tags, Stat::Counter { sum: 5.0 }),
                    (
                        "vus",
                        &[],
                        Stat::Gauge {
                            last: 3.0,
                            min: 1.0,
                            max: 3.0,
                        },
                    ),
                ],
            ),
        );
        rw.point(
            1_000_000,
            &point(
                1,
                vec![
                    ("http_reqs", tags, Stat::Counter { sum: 7.0 }),
                    ("checks", &[], Stat::Rate { trues: 3, total: 4 }),
                    (
                        "http_req_duration",
                        &[("status", "200")],
                        Stat::Trend {
                            count: 4,
                            min: 1.0,
                            max: 9.0,
                            mean: 3.0,
                            p50: 2.0,
                            p90: 8.0,
                            p95: 8.5,
                            p99: 9.0,
                        },
                    ),
                ],
            ),
        );
        let body = rw.take_batch().unwrap();
        assert!(rw.take_batch().is_none());
        let got = decode::write_request(&body).unwrap();
        let find = |name: &str, extra: Option<(&str, &str)>| {
            got.iter()
                .find(|s| {
                    s.labels.contains(&("__name__".into(), name.into()))
                        && extra.is_none_or(|(k, v)| s.labels.contains(&(k.into(), v.into())))
                })
                .unwrap_or_else(|| panic!("{name} missing in {got:?}"))
        };
        let reqs = find("volley_http_reqs_total", None);
        assert_eq!(reqs.samples, vec![(5.0, 1_000_000), (12.0, 1_001_000)]);
        assert_eq!(
            reqs.labels,
            vec![
                ("__name__".to_string(), "volley_http_reqs_total".to_string()),
                ("status".to_string(), "200".to_string())
            ],
            "sorted, empty tag values left out"
        );
        assert_eq!(find("volley_vus", None).samples, vec![(3.0, 1_000_000)]);
        assert_eq!(
            find("volley_checks_rate", None).samples,
            vec![(0.75, 1_001_000)]
        );
        assert_eq!(
            find("volley_http_req_duration", Some(("stat", "p95"))).samples,
            vec![(8.5, 1_001_000)]
        );
        assert_eq!(
            find("volley_http_req_duration_count_total", None).samples,
            vec![(4.0, 1_001_000)]
        );
    }

    #[test]
    fn names_are_sanitized() {
        assert_eq!(sanitize("my-metric.x", true), "my_metric_x");
        assert_eq!(sanitize("9lives", false), "_9lives");
    }
}
