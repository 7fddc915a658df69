//! How a [`Series`] is stored in the result file (docs/result-file.md, "series").
//!
//! Version 2 (written since 0.1): a **series table**. The timeline is two arrays (`t`, each
//! bucket's start; `w`, its width); each series appears once in `table` with its name, tags and
//! kind, the starts of the buckets it has a value in (`t`) and one array per statistic:
//!
//! ```json
//! {"interval_s": 1, "bucket_s": 1, "max_points": 3600, "t": [0, 1], "w": [1, 1],
//!  "table": [{"name": "http_reqs", "kind": "counter", "t": [0, 1], "sum": [41, 40]}]}
//! ```
//!
//! Why: version 1 repeated every series' name and tag map in every point, so reading an
//! hour-long file allocated a string and a map per value, and its internally tagged values
//! went through serde's buffering; arrays of numbers parse without either, and the file is a
//! fraction of the size. Version 1's point lists (`points`) still read; a value alone (a live
//! snapshot's points) keeps version 1's self-describing shape.

use crate::agg::MetricKind;
use crate::series::{Interner, Point, Series, SeriesKey, SeriesValue, Stat};
use crate::{MetricKey, TagSet};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// One statistic's column: its name and whether it holds counts (written as integers).
struct Column {
    name: &'static str,
    count: bool,
}

const fn col(name: &'static str) -> Column {
    Column { name, count: false }
}

const fn cnt(name: &'static str) -> Column {
    Column { name, count: true }
}

const COUNTER: &[Column] = &[col("sum")];
const GAUGE: &[Column] = &[col("last"), col("min"), col("max")];
const RATE: &[Column] = &[cnt("trues"), cnt("total")];
const TREND: &[Column] = &[
    cnt("count"),
    col("min"),
    col("max"),
    col("mean"),
    col("p50"),
    col("p90"),
    col("p95"),
    col("p99"),
];

fn columns(kind: MetricKind) -> &'static [Column] {
    match kind {
        MetricKind::Counter => COUNTER,
        MetricKind::Gauge => GAUGE,
        MetricKind::Rate => RATE,
        MetricKind::Trend => TREND,
    }
}

fn kind_name(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Counter => "counter",
        MetricKind::Gauge => "gauge",
        MetricKind::Rate => "rate",
        MetricKind::Trend => "trend",
    }
}

/// A stat's values in its kind's column order (one row per kind, kept on one line each).
#[rustfmt::skip]
fn values(s: &Stat) -> [f64; 8] {
    match *s {
        Stat::Counter { sum } => [sum, 0., 0., 0., 0., 0., 0., 0.],
        Stat::Gauge { last, min, max } => [last, min, max, 0., 0., 0., 0., 0.],
        Stat::Rate { trues, total } => [trues as f64, total as f64, 0., 0., 0., 0., 0., 0.],
        Stat::Trend { count, min, max, mean, p50, p90, p95, p99 } =>
            [count as f64, min, max, mean, p50, p90, p95, p99],
    }
}

/// One series of the table being written: its key and kind, and its (bucket start, stat)s.
struct Entry<'a> {
    key: &'a MetricKey,
    kind: MetricKind,
    at: Vec<(u64, &'a Stat)>,
}

/// The table of `s` (keys looked up by pointer first, since they are interned, then by value).
fn table(s: &Series) -> Vec<Entry<'_>> {
    let mut out: Vec<Entry> = Vec::new();
    let mut by_ptr: HashMap<(*const MetricKey, MetricKind), usize> = HashMap::new();
    let mut by_key: HashMap<(&MetricKey, MetricKind), usize> = HashMap::new();
    for p in &s.points {
        for v in &p.values {
            let kind = v.stat.kind();
            let i = *by_ptr
                .entry((Arc::as_ptr(&v.key), kind))
                .or_insert_with(|| {
                    *by_key.entry((&*v.key, kind)).or_insert_with(|| {
                        out.push(Entry {
                            key: &v.key,
                            kind,
                            at: Vec::new(),
                        });
                        out.len() - 1
                    })
                });
            out[i].at.push((p.t, &v.stat));
        }
    }
    // In key order, as the aggregator lists a point's values: a run's series reads back
    // exactly as it was.
    out.sort_by(|a, b| (a.key, a.kind as u8).cmp(&(b.key, b.kind as u8)));
    out
}

/// A JSON array from an iterator made on demand.
struct Seq<F>(F);

impl<F, I> Serialize for Seq<F>
where
    F: Fn() -> I,
    I: Iterator,
    I::Item: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq((self.0)())
    }
}

impl Serialize for Entry<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let cols = columns(self.kind);
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("name", &self.key.name)?;
        if !self.key.tags.is_empty() {
            m.serialize_entry("tags", &self.key.tags)?;
        }
        m.serialize_entry("kind", kind_name(self.kind))?;
        m.serialize_entry("t", &Seq(|| self.at.iter().map(|a| a.0)))?;
        for (i, c) in cols.iter().enumerate() {
            let at = &self.at;
            if c.count {
                m.serialize_entry(
                    c.name,
                    &Seq(|| at.iter().map(move |a| values(a.1)[i] as u64)),
                )?;
            } else {
                m.serialize_entry(c.name, &Seq(|| at.iter().map(move |a| values(a.1)[i])))?;
            }
        }
        m.end()
    }
}

impl Serialize for Series {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("Series", 6)?;
        m.serialize_field("interval_s", &self.interval_s)?;
        m.serialize_field("bucket_s", &self.bucket_s)?;
        m.serialize_field("max_points", &self.max_points)?;
        m.serialize_field("t", &Seq(|| self.points.iter().map(|p| p.t)))?;
        m.serialize_field("w", &Seq(|| self.points.iter().map(|p| p.w)))?;
        m.serialize_field("table", &table(self))?;
        m.end()
    }
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum KindIn {
    Counter,
    Gauge,
    Rate,
    Trend,
}

/// A table entry as read: every column optional, checked against the kind when building.
#[derive(Deserialize)]
struct EntryIn {
    name: String,
    #[serde(default)]
    tags: TagSet,
    kind: KindIn,
    t: Vec<u64>,
    #[serde(default)]
    sum: Vec<f64>,
    #[serde(default)]
    last: Vec<f64>,
    #[serde(default)]
    min: Vec<f64>,
    #[serde(default)]
    max: Vec<f64>,
    #[serde(default)]
    trues: Vec<u64>,
    #[serde(default)]
    total: Vec<u64>,
    #[serde(default)]
    count: Vec<u64>,
    #[serde(default)]
    mean: Vec<f64>,
    #[serde(default)]
    p50: Vec<f64>,
    #[serde(default)]
    p90: Vec<f64>,
    #[serde(default)]
    p95: Vec<f64>,
    #[serde(default)]
    p99: Vec<f64>,
}

impl EntryIn {
    /// The columns its kind needs, each as long as `t` (`at` names the entry in errors).
    fn check(&self, at: &str) -> Result<(), String> {
        let n = self.t.len();
        let cols: &[(&str, usize)] = match self.kind {
            KindIn::Counter => &[("sum", self.sum.len())],
            KindIn::Gauge => &[
                ("last", self.last.len()),
                ("min", self.min.len()),
                ("max", self.max.len()),
            ],
            KindIn::Rate => &[("trues", self.trues.len()), ("total", self.total.len())],
            KindIn::Trend => &[
                ("count", self.count.len()),
                ("min", self.min.len()),
                ("max", self.max.len()),
                ("mean", self.mean.len()),
                ("p50", self.p50.len()),
                ("p90", self.p90.len()),
                ("p95", self.p95.len()),
                ("p99", self.p99.len()),
            ],
        };
        for (c, len) in cols {
            if *len != n {
                return Err(format!(
                    "{at}.{c}: {len} values, but its t lists {n} buckets"
                ));
            }
        }
        Ok(())
    }

    fn stat(&self, j: usize) -> Stat {
        match self.kind {
            KindIn::Counter => Stat::Counter { sum: self.sum[j] },
            KindIn::Gauge => Stat::Gauge {
                last: self.last[j],
                min: self.min[j],
                max: self.max[j],
            },
            KindIn::Rate => Stat::Rate {
                trues: self.trues[j],
                total: self.total[j],
            },
            KindIn::Trend => Stat::Trend {
                count: self.count[j],
                min: self.min[j],
                max: self.max[j],
                mean: self.mean[j],
                p50: self.p50[j],
                p90: self.p90[j],
                p95: self.p95[j],
                p99: self.p99[j],
            },
        }
    }
}

/// Points from a version 2 timeline and table: each entry's values go to the buckets its `t`
/// names, which must be starts in the timeline, in increasing order.
fn build(t: Vec<u64>, w: Vec<u64>, table: Vec<EntryIn>) -> Result<Vec<Point>, String> {
    if t.len() != w.len() {
        return Err(format!(
            "series.w: {} widths for {} bucket starts in series.t",
            w.len(),
            t.len()
        ));
    }
    if let Some(i) = (1..t.len()).find(|&i| t[i] <= t[i - 1]) {
        return Err(format!(
            "series.t[{i}]: {} does not follow {} (bucket starts increase)",
            t[i],
            t[i - 1]
        ));
    }
    // Where each entry's values go, found first so every point's list is allocated once.
    let mut slots: Vec<Vec<u32>> = Vec::with_capacity(table.len());
    let mut per_point = vec![0usize; t.len()];
    for (e, entry) in table.iter().enumerate() {
        let at = format!("series.table[{e}]");
        entry.check(&at)?;
        let mut idx = Vec::with_capacity(entry.t.len());
        let mut c = 0usize;
        for (j, &start) in entry.t.iter().enumerate() {
            while c < t.len() && t[c] < start {
                c += 1;
            }
            if c == t.len() || t[c] != start || idx.last() == Some(&(c as u32)) {
                return Err(format!(
                    "{at}.t[{j}]: {start} is not the start of a later bucket in series.t"
                ));
            }
            per_point[c] += 1;
            idx.push(c as u32);
        }
        slots.push(idx);
    }
    let mut points: Vec<Point> = t
        .iter()
        .zip(&w)
        .zip(&per_point)
        .map(|((&t, &w), &n)| Point {
            t,
            w,
            values: Vec::with_capacity(n),
        })
        .collect();
    for (entry, idx) in table.into_iter().zip(slots) {
        let key: SeriesKey = Arc::new(MetricKey {
            name: entry.name.clone(),
            tags: entry.tags.clone(),
        });
        for (j, &c) in idx.iter().enumerate() {
            points[c as usize].values.push(SeriesValue {
                key: key.clone(),
                stat: entry.stat(j),
            });
        }
    }
    Ok(points)
}

/// A version 1 value: name, tags and the stat's fields side by side.
#[derive(Serialize)]
struct ValueOut<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "TagSet::is_empty")]
    tags: &'a TagSet,
    #[serde(flatten)]
    stat: &'a Stat,
}

#[derive(Deserialize)]
struct ValueIn {
    name: String,
    #[serde(default)]
    tags: TagSet,
    #[serde(flatten)]
    stat: Stat,
}

impl Serialize for SeriesValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ValueOut {
            name: &self.key.name,
            tags: &self.key.tags,
            stat: &self.stat,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for SeriesValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = ValueIn::deserialize(d)?;
        Ok(SeriesValue::new(&v.name, v.tags, v.stat))
    }
}

impl<'de> Deserialize<'de> for Series {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(SeriesVisitor)
    }
}

struct SeriesVisitor;

impl<'de> Visitor<'de> for SeriesVisitor {
    type Value = Series;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a series object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Series, A::Error> {
        let (mut interval_s, mut bucket_s, mut max_points) = (None, None, None);
        let (mut points, mut t, mut w, mut table) = (None, None, None, None);
        while let Some(k) = m.next_key::<String>()? {
            match k.as_str() {
                "interval_s" => interval_s = Some(m.next_value()?),
                "bucket_s" => bucket_s = Some(m.next_value()?),
                "max_points" => max_points = Some(m.next_value()?),
                "points" => points = Some(m.next_value::<Vec<Point>>()?),
                "t" => t = Some(m.next_value::<Vec<u64>>()?),
                "w" => w = Some(m.next_value::<Vec<u64>>()?),
                "table" => table = Some(m.next_value::<Vec<EntryIn>>()?),
                _ => {
                    m.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        let points = match (points, t, table) {
            // Version 1: each value carries its own key; share equal ones.
            (Some(mut points), None, None) => {
                let mut keys = Interner::default();
                points.iter_mut().for_each(|p| keys.point(p));
                points
            }
            (None, t, table) => build(
                t.unwrap_or_default(),
                w.unwrap_or_default(),
                table.unwrap_or_default(),
            )
            .map_err(de::Error::custom)?,
            (Some(_), ..) => {
                return Err(de::Error::custom(
                    "series: holds both \"points\" (version 1) and \"t\"/\"table\" (version 2)",
                ))
            }
        };
        Ok(Series {
            interval_s: interval_s.ok_or_else(|| de::Error::missing_field("interval_s"))?,
            bucket_s: bucket_s.ok_or_else(|| de::Error::missing_field("bucket_s"))?,
            max_points: max_points.unwrap_or(crate::series::DEFAULT_MAX_POINTS),
            points,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Series {
        let mut s = Series::new(100);
        let reqs = |sum| SeriesValue::new("http_reqs", TagSet::new(), Stat::Counter { sum });
        let mut tags = TagSet::new();
        tags.insert("name".into(), "a".into());
        let dur = SeriesValue::new(
            "http_req_duration",
            tags,
            Stat::Trend {
                count: 3,
                min: 1.0,
                max: 3.0,
                mean: 2.0,
                p50: 2.0,
                p90: 2.8,
                p95: 2.9,
                p99: 3.0,
            },
        );
        let failed = SeriesValue::new(
            "http_req_failed",
            TagSet::new(),
            Stat::Rate { trues: 1, total: 3 },
        );
        let vus = SeriesValue::new(
            "vus",
            TagSet::new(),
            Stat::Gauge {
                last: 2.0,
                min: 1.0,
                max: 2.0,
            },
        );
        s.push(Point {
            t: 0,
            w: 1,
            values: vec![reqs(3.0), dur.clone(), failed, vus],
        });
        s.push(Point::empty(1, 1));
        s.push(Point {
            t: 2,
            w: 1,
            values: vec![dur, reqs(5.0)],
        });
        s
    }

    #[test]
    fn a_series_round_trips_through_its_table_with_each_key_once() {
        let s = sample();
        let j = serde_json::to_value(&s).unwrap();
        assert_eq!(j["t"], json!([0, 1, 2]));
        assert_eq!(j["w"], json!([1, 1, 1]));
        let table = j["table"].as_array().unwrap();
        assert_eq!(table.len(), 4, "{j}");
        // In key order: http_req_duration, http_req_failed, http_reqs, vus.
        assert_eq!(
            table[2],
            json!({"name": "http_reqs", "kind": "counter", "t": [0, 2], "sum": [3.0, 5.0]})
        );
        assert_eq!(table[0]["tags"], json!({"name": "a"}));
        assert_eq!(table[0]["count"], json!([3, 3]), "counts are integers");
        assert_eq!(table[1]["trues"], json!([1]));
        let back: Series = serde_json::from_value(j).unwrap();
        // Values come back in table order within a point: compare as sets.
        assert_eq!(back.points.len(), 3);
        for (a, b) in back.points.iter().zip(&s.points) {
            assert_eq!((a.t, a.w, a.values.len()), (b.t, b.w, b.values.len()));
            for v in &b.values {
                assert_eq!(a.get(v.name(), v.tags()), Some(&v.stat));
            }
        }
        // One key allocation per series, shared by its points.
        let k0 = &back.points[0].values[0].key;
        assert!(back.points[2]
            .values
            .iter()
            .any(|v| Arc::ptr_eq(&v.key, k0)));
    }

    #[test]
    fn version_1_point_lists_still_read_with_shared_keys() {
        let v1 = json!({"interval_s": 1, "bucket_s": 1, "max_points": 10, "points": [
            {"t": 0, "w": 1, "values": [{"name": "http_reqs", "tags": {"status": "200"}, "kind": "counter", "sum": 4.0}]},
            {"t": 1, "w": 1, "values": [{"name": "http_reqs", "tags": {"status": "200"}, "kind": "counter", "sum": 6.0}]}
        ]});
        let s: Series = serde_json::from_value(v1).unwrap();
        assert_eq!(s.points[1].counter_sum("http_reqs"), 6.0);
        assert!(Arc::ptr_eq(
            &s.points[0].values[0].key,
            &s.points[1].values[0].key
        ));
    }

    #[test]
    fn a_table_that_does_not_fit_its_timeline_is_refused_with_its_path() {
        let bad = |table: serde_json::Value| {
            let j =
                json!({"interval_s": 1, "bucket_s": 1, "t": [0, 1], "w": [1, 1], "table": table});
            serde_json::from_value::<Series>(j).unwrap_err().to_string()
        };
        let e = bad(json!([{"name": "x", "kind": "counter", "t": [0, 1], "sum": [1.0]}]));
        assert!(
            e.contains("series.table[0].sum: 1 values, but its t lists 2"),
            "{e}"
        );
        let e = bad(json!([{"name": "x", "kind": "counter", "t": [5], "sum": [1.0]}]));
        assert!(
            e.contains("series.table[0].t[0]: 5 is not the start"),
            "{e}"
        );
        let e = bad(json!([{"name": "x", "kind": "counter", "t": [1, 1], "sum": [1.0, 2.0]}]));
        assert!(e.contains("series.table[0].t[1]"), "{e}");
        let e = bad(json!([{"name": "x", "kind": "histogram", "t": [], "sum": []}]));
        assert!(e.contains("unknown variant"), "{e}");
        let j = json!({"interval_s": 1, "bucket_s": 1, "t": [0, 1], "w": [1], "table": []});
        let e = serde_json::from_value::<Series>(j).unwrap_err().to_string();
        assert!(e.contains("series.w: 1 widths for 2"), "{e}");
    }
}
