//! Merging the results of instances that ran one test side by side (execution segments on
//! several machines, `volley merge`, a future coordinator) into one result of the whole test.
//!
//! What is exact: counters and rates add; trends add their histograms (and their exact
//! samples while they fit), so merged percentiles are a single histogram's of all samples;
//! checks are rates, so they add too. The per-second series are aligned on wall-clock
//! seconds: each instance's bucket goes to the wall-clock second it began in, so instances
//! started a moment apart still line up. `vus` and `vus_max` (gauges of one instance each)
//! add across instances, per interval and in the totals; other gauges keep the last value and
//! the extremes.
//!
//! The inputs must be results of the same test (same mode, script and options apart from the
//! execution segment, and distinct segments) unless the caller forces the merge.

use crate::agg::{Agg, Unit};
use crate::recorder::MetricDesc;
use crate::result::{MergeError, MetricTotal, RunMeta, RunResult};
use crate::series::{Interner, Point, Series, SeriesKey, SeriesValue, Stat};
use crate::text::escape_control;
use crate::MetricKey;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Gauges that belong to one instance each: parallel instances add them.
const PER_INSTANCE: &[&str] = &["vus", "vus_max"];

/// Option keys that differ between the instances of one test.
const SEGMENT_KEYS: &[&str] = &["executionSegment", "executionSegmentSequence"];

/// Merge `inputs` (a label for messages, such as the file name, and the result) into one
/// result. `force` skips the same-test checks (never the mode check).
pub fn merge(inputs: &[(&str, &RunResult)], force: bool) -> Result<RunResult, MergeError> {
    let Some(&(first_label, first)) = inputs.first() else {
        return Err(MergeError(
            "nothing to merge: give at least one result".into(),
        ));
    };
    for &(label, r) in &inputs[1..] {
        if r.meta.mode != first.meta.mode {
            return Err(MergeError(format!(
                "cannot merge a '{}' run ({}) with a '{}' run ({})",
                escape_control(&first.meta.mode),
                escape_control(first_label),
                escape_control(&r.meta.mode),
                escape_control(label)
            )));
        }
        if !force {
            same_test((first_label, first), (label, r))?;
        }
    }
    if !force {
        distinct_segments(inputs)?;
    }
    let metrics = merge_totals(inputs.iter().map(|i| i.1))?;
    let series = merge_series(inputs.iter().map(|i| i.1));
    let meta = merge_meta(inputs.iter().map(|i| &i.1.meta));
    let options = merge_options(inputs.iter().map(|i| &i.1.options));
    let mut merged = RunResult::new(meta, options, metrics, series);
    // Instances share one timeline: each one's events (faults), as each saw them.
    merged.events = inputs
        .iter()
        .flat_map(|i| i.1.events.iter().cloned())
        .collect();
    merged.capacity = one_capacity(inputs)?;
    Ok(merged)
}

/// The `capacity` section (a sweep's or a breaking-point search's steps) of the one input
/// that has it. Several are refused: each step is a run judged on one instance's load (its
/// knee, its SLO verdict), and steps of different instances do not add into a step.
fn one_capacity(
    inputs: &[(&str, &RunResult)],
) -> Result<Option<crate::capacity::Capacity>, MergeError> {
    let with: Vec<&str> = inputs
        .iter()
        .filter(|i| i.1.capacity.is_some())
        .map(|i| i.0)
        .collect();
    match with[..] {
        [] => Ok(None),
        [label] => Ok(inputs
            .iter()
            .find(|i| i.0 == label)
            .and_then(|i| i.1.capacity.clone())),
        [a, b, ..] => Err(MergeError(format!(
            "{} and {} both hold a capacity sweep or search: its steps are runs judged on one \
             instance's load, and steps of different instances cannot be merged into one\n  \
             hint: read each one's with volley summary, or compare them with volley compare",
            escape_control(a),
            escape_control(b)
        ))),
    }
}

/// The script's options without the segment keys (what must agree between instances).
fn test_options(r: &RunResult) -> Value {
    let mut o = r.options.get("script").cloned().unwrap_or(Value::Null);
    if let Some(m) = o.as_object_mut() {
        for k in SEGMENT_KEYS {
            m.remove(*k);
        }
    }
    o
}

fn same_test(a: (&str, &RunResult), b: (&str, &RunResult)) -> Result<(), MergeError> {
    let differ = |what: String| {
        Err(MergeError(format!(
            "cannot merge results of different tests: {} and {} {what}\n  hint: merge the \
             results of one test's instances (the same script and options, each with its own \
             --execution-segment), or pass --force to merge anyway",
            escape_control(a.0),
            escape_control(b.0)
        )))
    };
    let hash = |r: &RunResult| r.options.get("script_hash").cloned();
    match (hash(a.1), hash(b.1)) {
        (Some(x), Some(y)) if x != y => {
            return differ("ran different scripts (their script_hash differs)".into())
        }
        (Some(_), Some(_)) => {}
        // Older files have no hash: the test's name (URL or script path) must agree.
        _ if a.1.meta.name != b.1.meta.name => {
            return differ(format!(
                "ran '{}' and '{}'",
                escape_control(&a.1.meta.name),
                escape_control(&b.1.meta.name)
            ))
        }
        _ => {}
    }
    if test_options(a.1) != test_options(b.1) {
        return differ("ran with different options".into());
    }
    Ok(())
}

/// Two instances that ran the same segment would count its work twice.
fn distinct_segments(inputs: &[(&str, &RunResult)]) -> Result<(), MergeError> {
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    for &(label, r) in inputs {
        let seg = r
            .options
            .pointer("/script/executionSegment")
            .and_then(Value::as_str);
        let Some(seg) = seg.filter(|s| !s.is_empty()) else {
            continue;
        };
        if let Some(other) = seen.insert(seg.to_string(), label) {
            return Err(MergeError(format!(
                "{} and {} both ran execution segment {}: merging them would count its work \
                 twice\n  hint: give each instance its own segment, or pass --force",
                escape_control(other),
                escape_control(label),
                escape_control(seg)
            )));
        }
    }
    Ok(())
}

/// Add two gauges of parallel instances (the sums of their last values and extremes).
fn add_gauge(a: &mut Agg, b: &Agg) {
    if let (
        Agg::Gauge { last, min, max, n },
        &Agg::Gauge {
            last: l,
            min: lo,
            max: hi,
            n: k,
        },
    ) = (a, b)
    {
        (*last, *min, *max, *n) = (*last + l, *min + lo, *max + hi, *n + k);
    }
}

/// Fold a parallel instance's total of metric `name` into `x`: per-instance gauges (`vus`,
/// `vus_max`) add, everything else merges. The coordinator's live totals use it too.
pub fn combine_instance(name: &str, x: &mut Agg, a: &Agg) {
    if PER_INSTANCE.contains(&name) {
        add_gauge(x, a)
    } else {
        x.merge(a)
    }
}

fn merge_totals<'a>(
    results: impl Iterator<Item = &'a RunResult>,
) -> Result<Vec<MetricTotal>, MergeError> {
    let mut by_key: BTreeMap<MetricKey, (Unit, Agg)> = BTreeMap::new();
    for m in results.flat_map(|r| &r.metrics) {
        let a = m.to_agg().map_err(MergeError)?;
        match by_key.get_mut(&m.key()) {
            Some((_, x)) if x.kind() != a.kind() => {
                return Err(MergeError(format!(
                    "metric {} is a {:?} in one file and a {:?} in another",
                    escape_control(&m.name),
                    x.kind(),
                    a.kind()
                )))
            }
            Some((_, x)) => combine_instance(&m.name, x, &a),
            None => {
                by_key.insert(m.key(), (m.unit, a));
            }
        }
    }
    Ok(by_key
        .into_iter()
        .map(|(key, (unit, a))| {
            let d = MetricDesc {
                key,
                kind: a.kind(),
                unit,
            };
            MetricTotal::from_agg(&d, &a)
        })
        .collect())
}

/// Fold a parallel instance's point into `p` (same interval): stats merge, the per-instance
/// gauges (`vus`, `vus_max`) add. A coordinator merging live series uses it too.
pub fn absorb_instance(p: &mut Point, o: &Point) {
    absorb_keyed(p, o, |k| k.clone())
}

/// [`absorb_instance`] with `o`'s keys seen through `key` (to the merged series' shared ones).
fn absorb_keyed(p: &mut Point, o: &Point, mut key: impl FnMut(&SeriesKey) -> SeriesKey) {
    for (i, v) in o.values.iter().enumerate() {
        let k = key(&v.key);
        // Instances of one test list their series in the same order: look there first (a
        // search per series made merging hour-long files quadratic in the series count).
        // Keys compare by pointer first, so shared ones cost no string comparison.
        let at = match p.values.get(i) {
            Some(x) if x.key == k => Some(i),
            _ => p.values.iter().position(|x| x.key == k),
        };
        match at.map(|i| &mut p.values[i]) {
            Some(x) if PER_INSTANCE.contains(&v.name()) => {
                if let (
                    Stat::Gauge { last, min, max },
                    Stat::Gauge {
                        last: l,
                        min: mi,
                        max: ma,
                    },
                ) = (&mut x.stat, &v.stat)
                {
                    *last += l;
                    *min += mi;
                    *max += ma;
                }
            }
            Some(x) => x.stat.merge(&v.stat),
            None => p.values.push(SeriesValue {
                key: k,
                stat: v.stat.clone(),
            }),
        }
    }
    p.w = p.w.max(o.w);
}

fn merge_series<'a>(results: impl Iterator<Item = &'a RunResult> + Clone) -> Series {
    let first_s = results
        .clone()
        .map(|r| r.meta.started_unix_ms / 1000)
        .min()
        .unwrap_or(0);
    let max_points = results
        .clone()
        .map(|r| r.series.max_points)
        .max()
        .unwrap_or(crate::series::DEFAULT_MAX_POINTS);
    let width = results
        .clone()
        .map(|r| r.series.bucket_s)
        .max()
        .unwrap_or(1);
    let mut out = Series::new(max_points);
    while out.bucket_s < width {
        out.bucket_s *= 2;
    }
    let mut points: BTreeMap<u64, Point> = BTreeMap::new();
    // Each file's keys point at one shared key per series, so the merged series holds each
    // name once and the absorbs above compare pointers.
    let mut keys = Interner::default();
    for r in results {
        // Copied only when it must be coarsened to the common width.
        let coarse;
        let s = if r.series.bucket_s < out.bucket_s {
            let mut c = r.series.clone();
            while c.bucket_s < out.bucket_s {
                c.coarsen();
            }
            coarse = c;
            &coarse
        } else {
            &r.series
        };
        // The wall-clock second each bucket began in, from the earliest start; kept on the
        // bucket grid when buckets are wider than a second.
        let shift = (r.meta.started_unix_ms / 1000 - first_s) / out.bucket_s * out.bucket_s;
        // A file's keys are one allocation per series: map each to the shared one once.
        let mut canon: HashMap<*const MetricKey, SeriesKey> = HashMap::new();
        let mut key = |k: &SeriesKey| {
            canon
                .entry(Arc::as_ptr(k))
                .or_insert_with(|| keys.key(k))
                .clone()
        };
        for p in &s.points {
            let t = p.t + shift;
            match points.get_mut(&t) {
                Some(x) => absorb_keyed(x, p, &mut key),
                None => {
                    let mut p = p.clone();
                    p.t = t;
                    p.values.iter_mut().for_each(|v| v.key = key(&v.key));
                    points.insert(t, p);
                }
            }
        }
    }
    out.points = points.into_values().collect();
    while out.points.len() > out.max_points {
        out.coarsen();
    }
    out
}

fn merge_meta<'a>(metas: impl Iterator<Item = &'a RunMeta> + Clone) -> RunMeta {
    let a = metas.clone().next().cloned().unwrap_or_default();
    let started = metas.clone().map(|m| m.started_unix_ms).min().unwrap_or(0);
    let ended = metas.clone().map(|m| m.ended_unix_ms).max().unwrap_or(0);
    RunMeta {
        started_at: crate::time::rfc3339_ms(started),
        ended_at: crate::time::rfc3339_ms(ended),
        started_unix_ms: started,
        ended_unix_ms: ended,
        // Instances ran side by side: the load lasted as long as the longest one.
        duration_s: metas.clone().map(|m| m.duration_s).fold(0.0, f64::max),
        interrupted: metas.clone().any(|m| m.interrupted),
        instances: metas.clone().map(|m| m.instances).sum(),
        peak_rss_bytes: metas.clone().filter_map(|m| m.peak_rss_bytes).max(),
        ..a
    }
}

/// The first instance's options for the whole test: no segment, and the per-instance counts
/// (`vus_max`, `iterations`, each scenario's iterations) added up.
fn merge_options<'a>(all: impl Iterator<Item = &'a Value> + Clone) -> Value {
    let mut out = all.clone().next().cloned().unwrap_or(Value::Null);
    let Some(o) = out.as_object_mut() else {
        return out;
    };
    let segments: Vec<Value> = all
        .clone()
        .filter_map(|v| v.pointer("/script/executionSegment").cloned())
        .collect();
    if let Some(script) = o.get_mut("script").and_then(Value::as_object_mut) {
        for k in SEGMENT_KEYS {
            script.remove(*k);
        }
    }
    if !segments.is_empty() {
        o.insert("merged_segments".into(), segments.into());
    }
    for key in ["vus_max", "iterations"] {
        if o.contains_key(key) {
            let sum: u64 = all.clone().filter_map(|v| v.get(key)?.as_u64()).sum();
            o.insert(key.into(), sum.into());
        }
    }
    let Some(Value::Array(scenarios)) = o.get_mut("scenarios") else {
        return out;
    };
    for (i, sc) in scenarios.iter_mut().enumerate() {
        let Some(sc) = sc.as_object_mut() else {
            continue;
        };
        for key in [
            "completed_iterations",
            "interrupted_iterations",
            "dropped_iterations",
        ] {
            let sum: u64 = all
                .clone()
                .filter_map(|v| v.get("scenarios")?.get(i)?.get(key)?.as_u64())
                .sum();
            sc.insert(key.into(), sum.into());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agg::MetricKind;
    use crate::TagSet;
    use serde_json::json;

    /// An instance of segment `seg` that started at `start_ms` with `vus` VUs and made `reqs`
    /// requests in each of its first three seconds.
    fn instance(seg: &str, start_ms: u64, vus: f64, reqs: f64) -> RunResult {
        let total = |name: &str, kind, a: Agg| {
            MetricTotal::from_agg(
                &MetricDesc {
                    key: MetricKey::new(name),
                    kind,
                    unit: Unit::Default,
                },
                &a,
            )
        };
        let gauge = |v: f64| Agg::Gauge {
            last: v,
            min: v,
            max: v,
            n: 3,
        };
        let metrics = vec![
            total(
                "http_reqs",
                MetricKind::Counter,
                Agg::Counter {
                    sum: 3.0 * reqs,
                    n: 3,
                },
            ),
            total("vus", MetricKind::Gauge, gauge(vus)),
        ];
        let mut series = Series::new(100);
        for t in 0..3 {
            series.push(Point {
                t,
                w: 1,
                values: vec![
                    SeriesValue::new("http_reqs", TagSet::new(), Stat::Counter { sum: reqs }),
                    SeriesValue::new(
                        "vus",
                        TagSet::new(),
                        Stat::Gauge {
                            last: vus,
                            min: vus,
                            max: vus,
                        },
                    ),
                ],
            });
        }
        let meta = RunMeta {
            mode: "run".into(),
            name: "s.js".into(),
            started_unix_ms: start_ms,
            ended_unix_ms: start_ms + 3000,
            duration_s: 3.0,
            instances: 1,
            ..Default::default()
        };
        let options = json!({
            "script": {"vus": 4, "executionSegment": seg},
            "vus_max": vus as u64,
            "scenarios": [{"name": "default", "completed_iterations": reqs as u64 * 3}],
        });
        RunResult::new(meta, options, metrics, series)
    }

    #[test]
    fn series_align_on_wall_clock_seconds_and_vus_add() {
        // b starts 1.3 s after a, in the next wall-clock second but one.
        let a = instance("0:1/2", 10_900, 2.0, 10.0);
        let b = instance("1/2:1", 12_200, 3.0, 5.0);
        let m = merge(&[("a.json", &a), ("b.json", &b)], false).unwrap();
        let at = |t: u64| m.series.points.iter().find(|p| p.t == t).unwrap();
        // a's seconds 0..3 are wall seconds 10..13; b's are 12..15: seconds 2 overlap.
        assert_eq!(m.series.points.len(), 5);
        assert_eq!(at(0).counter_sum("http_reqs"), 10.0);
        assert_eq!(at(2).counter_sum("http_reqs"), 15.0);
        assert_eq!(at(4).counter_sum("http_reqs"), 5.0);
        assert_eq!(
            at(2).get("vus", &TagSet::new()),
            Some(&Stat::Gauge {
                last: 5.0,
                min: 5.0,
                max: 5.0
            })
        );
        assert_eq!(m.counter_sum("http_reqs"), 45.0);
        match m.metric("vus", &TagSet::new()).unwrap().to_agg().unwrap() {
            Agg::Gauge { max, .. } => assert_eq!(max, 5.0),
            other => panic!("{other:?}"),
        }
        assert_eq!(m.meta.instances, 2);
        assert_eq!(m.options["vus_max"], 5);
        assert_eq!(m.options["scenarios"][0]["completed_iterations"], 45);
        assert_eq!(m.options["merged_segments"], json!(["0:1/2", "1/2:1"]));
        assert!(m.options["script"].get("executionSegment").is_none());
    }

    #[test]
    fn different_tests_and_repeated_segments_are_refused_unless_forced() {
        let a = instance("0:1/2", 1000, 1.0, 1.0);
        let mut b = instance("1/2:1", 1000, 1.0, 1.0);
        b.options["script"]["vus"] = json!(8);
        let e = merge(&[("a.json", &a), ("b.json", &b)], false).unwrap_err();
        assert!(
            e.0.contains("a.json and b.json ran with different options"),
            "{e}"
        );
        assert!(e.0.contains("--force"), "{e}");
        assert!(merge(&[("a.json", &a), ("b.json", &b)], true).is_ok());
        let e = merge(&[("a.json", &a), ("c.json", &a)], false).unwrap_err();
        assert!(e.0.contains("both ran execution segment 0:1/2"), "{e}");
        let mut q = a.clone();
        q.meta.mode = "http".into();
        assert!(merge(&[("a.json", &a), ("q.json", &q)], true)
            .unwrap_err()
            .0
            .contains("cannot merge a 'run' run"));
        assert!(merge(&[], false).is_err());
    }

    /// Regression: the merged result dropped the inputs' `capacity` section.
    #[test]
    fn one_inputs_capacity_section_is_kept_and_several_are_refused() {
        let cap = crate::capacity::Capacity {
            kind: "search".into(),
            variable: "rate".into(),
            slo: Some("p99<50ms".into()),
            steps: Vec::new(),
            knee: None,
            max_rate: Some(1200.0),
            failed_rate: Some(1400.0),
            confirmed: Some(true),
            finding: "capacity".into(),
            message: "max rate 1200/s".into(),
        };
        let a = instance("0:1/2", 1000, 1.0, 1.0);
        let mut b = instance("1/2:1", 1000, 1.0, 1.0);
        b.capacity = Some(cap.clone());
        let m = merge(&[("a.json", &a), ("b.json", &b)], false).unwrap();
        assert_eq!(m.capacity, Some(cap));
        let mut a2 = a.clone();
        a2.capacity = b.capacity.clone();
        for force in [false, true] {
            let e = merge(&[("a.json", &a2), ("b.json", &b)], force).unwrap_err();
            assert!(
                e.0.contains("a.json and b.json both hold a capacity"),
                "{e}"
            );
            assert!(e.0.contains("hint:"), "{e}");
        }
    }
}
