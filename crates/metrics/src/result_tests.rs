//! Tests of the run result file: round trips, exact merges, validation of what files hold.

use super::*;
use crate::{Aggregator, Recorder};

fn run(seed: u64, n: u64) -> RunResult {
    let mut rec = Recorder::new();
    let reqs = rec.handle(
        MetricKey::tagged("http_reqs", &[("status", "200")]),
        MetricKind::Counter,
        Unit::Default,
    );
    let dur = rec.handle(
        MetricKey::new("http_req_duration"),
        MetricKind::Trend,
        Unit::Time,
    );
    let failed = rec.handle(
        MetricKey::new("http_req_failed"),
        MetricKind::Rate,
        Unit::Default,
    );
    let mut agg = Aggregator::new(1, 100);
    for i in 0..n {
        rec.add(reqs, 1.0);
        rec.trend_us(dur, 1000 + (i * 37 + seed) % 5000);
        rec.rate(failed, i % 10 == 0);
        if i % 100 == 99 {
            agg.add(0, i / 100, rec.snapshot());
        }
    }
    agg.add(0, n / 100, rec.snapshot());
    let (metrics, series) = agg.finish();
    let meta = RunMeta {
        mode: "http".into(),
        name: "http://127.0.0.1/".into(),
        started_unix_ms: 1000 + seed,
        ended_unix_ms: 5000 + seed,
        duration_s: 4.0,
        instances: 1,
        ..Default::default()
    };
    RunResult::new(meta, serde_json::json!({"connections": 1}), metrics, series)
}

#[test]
fn file_round_trip_is_lossless() {
    let r = run(1, 1000);
    let text = serde_json::to_string(&r).unwrap();
    let back = RunResult::from_json(&text).unwrap();
    assert_eq!(back.metrics, r.metrics);
    assert_eq!(back.series, r.series);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let reqs = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "http_reqs")
        .unwrap();
    assert_eq!(reqs["kind"], "counter");
    assert_eq!(reqs["tags"]["status"], "200");
    assert_eq!(reqs["sum"], 1000.0);
}

#[test]
fn merge_is_exact() {
    let a = run(1, 1000);
    let b = run(7, 500);
    let m = a.merge(&b).unwrap();
    assert_eq!(m.counter_sum("http_reqs"), 1500.0);
    assert_eq!(m.meta.instances, 2);
    let get = |r: &RunResult, n: &str| r.metric(n, &TagSet::new()).unwrap().to_agg().unwrap();
    let (Agg::Trend(ta), Agg::Trend(tb), Agg::Trend(tm)) = (
        get(&a, "http_req_duration"),
        get(&b, "http_req_duration"),
        get(&m, "http_req_duration"),
    ) else {
        panic!()
    };
    assert_eq!(tm.count, 1500);
    assert_eq!(tm.min, ta.min.min(tb.min));
    assert_eq!(tm.max, ta.max.max(tb.max));
    // Histograms add exactly: merged percentile equals one from recording both runs.
    let mut both = ta.clone();
    both.merge(&tb);
    assert_eq!(tm.percentile(99.0), both.percentile(99.0));
    assert_eq!(tm.hist.len(), 1500);
    match &m.metric("http_req_failed", &TagSet::new()).unwrap().value {
        TotalValue::Rate { trues, total } => assert_eq!((*trues, *total), (150, 1500)),
        _ => panic!(),
    }
    // Series: interval 0 holds 100 requests from each run.
    assert_eq!(m.series.points[0].counter_sum("http_reqs"), 200.0);
}

#[test]
fn merge_is_exact_when_one_side_has_few_values() {
    // 1000 spread values: an HDR array; 10 values: the short sparse form.
    let (a, b) = (run(1, 1000), run(7, 10));
    let m = a.merge(&b).unwrap();
    let hist_of =
        |r: &RunResult| match &r.metric("http_req_duration", &TagSet::new()).unwrap().value {
            TotalValue::Trend { hist, .. } => hist::decode(hist).unwrap(),
            _ => panic!(),
        };
    let mut both = hist_of(&a);
    both.add(hist_of(&b)).unwrap();
    let merged = hist_of(&m);
    assert_eq!(merged.len(), 1010);
    for p in [0.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
        assert_eq!(
            merged.value_at_percentile(p),
            both.value_at_percentile(p),
            "p{p}"
        );
    }
    // The same in the other order, and both sparse.
    let m2 = b.merge(&a).unwrap();
    assert_eq!(
        hist_of(&m2).value_at_percentile(99.0),
        both.value_at_percentile(99.0)
    );
    let m3 = b.merge(&b).unwrap();
    assert_eq!(hist_of(&m3).len(), 20);
    assert_eq!(
        hist_of(&m3).value_at_percentile(50.0),
        hist_of(&b).value_at_percentile(50.0)
    );
}

#[test]
fn merge_rejects_different_tests() {
    let a = run(1, 10);
    let mut b = run(1, 10);
    b.meta.name = "other".into();
    assert!(a.merge(&b).unwrap_err().0.contains("different tests"));
}

#[test]
fn reading_wrong_files_says_why() {
    assert!(RunResult::from_json("{").unwrap_err().contains("line 1"));
    assert!(RunResult::from_json("{\"x\":1}")
        .unwrap_err()
        .contains("not a Volley result file"));
    assert!(
        RunResult::from_json("{\"format\":\"volley-result\",\"version\":99}")
            .unwrap_err()
            .contains("version")
    );
}

#[test]
fn write_is_atomic_and_readable() {
    let dir = std::env::temp_dir().join(format!("volley-metrics-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("run.json");
    let r = run(3, 300);
    r.write(&p).unwrap();
    let back = RunResult::read(&p).unwrap();
    assert_eq!(back.counter_sum("http_reqs"), 300.0);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
    // A failed rename (the target is a directory) reports the error and cleans up.
    let taken = dir.join("taken");
    std::fs::create_dir_all(taken.join("x")).unwrap();
    assert!(r.write(&taken).is_err());
    let leftovers = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .count();
    assert_eq!(leftovers, 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A run whose custom trend got `values`, as a result file.
fn trend_run(values: &[f64]) -> RunResult {
    let mut rec = Recorder::new();
    let t = rec.handle(MetricKey::new("waiting"), MetricKind::Trend, Unit::Time);
    let mut agg = Aggregator::new(1, 100);
    for (i, &v) in values.iter().enumerate() {
        rec.add(t, v);
        if i % 10 == 9 {
            agg.add(0, i as u64 / 10, rec.snapshot());
        }
    }
    agg.add(0, values.len() as u64 / 10, rec.snapshot());
    let (metrics, series) = agg.finish();
    let meta = RunMeta {
        mode: "run".into(),
        name: "t.js".into(),
        duration_s: 1.0,
        ..Default::default()
    };
    RunResult::new(meta, serde_json::json!({}), metrics, series)
}

fn trend_of(r: &RunResult) -> TrendAgg {
    match r
        .metric("waiting", &TagSet::new())
        .unwrap()
        .to_agg()
        .unwrap()
    {
        Agg::Trend(t) => *t,
        _ => panic!(),
    }
}

fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x * 48_271 % 2_147_483_647;
            (x % 3_000_000) as f64 / 1_000.0 + 0.1
        })
        .collect()
}

#[test]
fn exact_samples_survive_the_result_file_and_merge_exactly() {
    let (a, b) = (trend_run(&values(32, 3)), trend_run(&values(1_000, 5)));
    let (ta, tb) = (trend_of(&a), trend_of(&b));
    assert_eq!(ta.samples, values(32, 3), "arrival order, every value");
    let text = serde_json::to_string(&a).unwrap();
    let back = RunResult::from_json(&text).unwrap();
    assert_eq!(back.metrics, a.metrics);
    let tback = trend_of(&back);
    for p in [50.0, 90.0, 95.0, 99.0] {
        assert_eq!(tback.percentile(p), ta.percentile(p), "p({p}) read back");
    }
    assert_eq!(tback.mean(), ta.mean());
    // Merged files: the buffers concatenate, so percentiles are those of all 1,032 values.
    let m = RunResult::from_json(&serde_json::to_string(&a.merge(&b).unwrap()).unwrap()).unwrap();
    let tm = trend_of(&m);
    let mut both = ta.clone();
    both.merge(&tb);
    assert_eq!(tm.exact().map(<[f64]>::len), Some(1_032));
    for p in [0.0, 50.0, 95.0, 99.9, 100.0] {
        assert_eq!(tm.percentile(p), both.percentile(p), "p({p}) merged");
    }
    // Past the buffer the file carries the histogram only.
    let big = trend_run(&values(crate::agg::EXACT_MAX + 1, 9));
    match &big.metric("waiting", &TagSet::new()).unwrap().value {
        TotalValue::Trend { samples, count, .. } => {
            assert!(samples.is_empty());
            assert_eq!(*count, crate::agg::EXACT_MAX as u64 + 1);
        }
        _ => panic!(),
    }
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(v["metrics"][0]["samples"].is_array());
    // An older file (no samples) still reads, with percentiles from the histogram.
    v["metrics"][0].as_object_mut().unwrap().remove("samples");
    let old = RunResult::from_json(&v.to_string()).unwrap();
    assert!(trend_of(&old).exact().is_none());
    let (old_med, med) = (trend_of(&old).percentile(50.0), ta.percentile(50.0));
    assert!((old_med - med).abs() <= med * 0.001, "{old_med} vs {med}");
}

#[test]
fn a_files_trend_samples_are_checked() {
    let r = trend_run(&values(32, 3));
    let text = serde_json::to_string(&r).unwrap();
    let bad = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        edit(&mut v["metrics"][0]);
        RunResult::from_json(&v.to_string()).unwrap_err()
    };
    let e = bad(&|m| {
        m["samples"].as_array_mut().unwrap().pop();
    });
    assert!(
        e.contains("metrics[0] (waiting).samples: holds 31 values but count is 32"),
        "{e}"
    );
    assert!(e.contains("hint:"), "{e}");
    let e = bad(&|m| m["samples"][3] = serde_json::json!(1e9));
    assert!(
        e.contains(".samples: [3]: 1000000000 is outside min"),
        "{e}"
    );
    let e = bad(&|m| m["samples"] = serde_json::json!(vec![1.0; crate::agg::EXACT_MAX + 1]));
    assert!(e.contains("2049 values, more than the 2048"), "{e}");
    let e = bad(&|m| m["samples"] = serde_json::json!("x"));
    assert!(e.contains("invalid result file at line"), "{e}");
}

/// Version 1 files (every value with its name and tags) read into the same series a version 2
/// file (the series table) holds, and are written back as version 2.
#[test]
fn version_1_files_read_and_write_back_as_version_2() {
    for text in [
        include_str!("../../../fuzz/seeds/result_file/quick.json"),
        include_str!("../../../fuzz/seeds/result_file/script.json"),
    ] {
        assert!(text.contains("\"version\":1"));
        let r = RunResult::from_json(text).unwrap();
        assert_eq!(r.version, VERSION);
        assert!(r.series.points.iter().any(|p| !p.values.is_empty()));
        let v2 = serde_json::to_string(&r).unwrap();
        assert!(
            v2.contains("\"table\"") && !v2.contains("\"points\""),
            "{v2}"
        );
        let back = RunResult::from_json(&v2).unwrap();
        assert_eq!(back.series, r.series);
        assert_eq!(back.metrics, r.metrics);
    }
}
