//! The runs of a benchmark as a Volley result file (`meta.mode = "bench"`).
//!
//! Every metric of every benchmark is a trend tagged `bench=NAME` (plus one tag per
//! `--param`), holding each successful run's value exactly, in run order (up to
//! [`crate::MAX_RUNS`]): `volley compare` tests those per-run values against each other, and
//! `volley summary` recomputes the tables from them. `run_failed` is a rate (failed runs of
//! all runs). `options` holds the spec, each benchmark's command, failures and parser notes,
//! and per metric its unit and which way is better (docs/bench.md, "Result file").

use crate::runner::{Done, Values};
use crate::units::Class;
use crate::BenchSpec;
use serde_json::json;
use volley_metrics::agg::TrendAgg;
use volley_metrics::{
    Agg, MetricDesc, MetricKey, MetricKind, MetricTotal, RunMeta, RunResult, Unit,
};

pub const WALL_TIME: &str = "wall_time";
pub const PEAK_RSS: &str = "peak_rss";
pub const RUN_FAILED: &str = "run_failed";

/// The metrics every run has, in display order.
pub const BUILTIN: [(&str, Class); 8] = [
    (WALL_TIME, Class::Time),
    ("user_time", Class::Time),
    ("system_time", Class::Time),
    ("cpu_time", Class::Time),
    // The whole tree's peak (sampled sum, at least ru_maxrss).
    (PEAK_RSS, Class::Bytes),
    // wait4's ru_maxrss: the largest single process.
    ("max_rss_single", Class::Bytes),
    ("ctx_switches_voluntary", Class::Plain),
    ("ctx_switches_involuntary", Class::Plain),
];

/// A printed key as a metric name: one that collides with a built-in metric gets `out_`.
pub fn metric_name(key: &str) -> String {
    if BUILTIN.iter().any(|(n, _)| *n == key) || key == RUN_FAILED {
        format!("out_{key}")
    } else {
        key.to_string()
    }
}

/// Is a higher value better for this metric? Throughput is (`*_per_s`, `ops/s`, `MiB/s`),
/// anything else (times, sizes, counts of trouble) is not.
pub fn higher_is_better(name: &str, unit_label: &str) -> bool {
    unit_label.ends_with("/s") || volley_report::view::is_throughput_name(name)
}

fn class_name(c: &Class) -> &'static str {
    match c {
        Class::Plain => "plain",
        Class::Bytes => "bytes",
        Class::Time => "time",
        Class::Other(_) => "other",
    }
}

fn total(name: &str, tags: &volley_metrics::TagSet, unit: Unit, agg: Agg) -> MetricTotal {
    let desc = MetricDesc {
        key: MetricKey {
            name: name.to_string(),
            tags: tags.clone(),
        },
        kind: agg.kind(),
        unit,
    };
    MetricTotal::from_agg(&desc, &agg)
}

fn values_agg(v: &Values) -> Agg {
    let mut t = TrendAgg::new();
    for x in &v.values {
        t.add(*x);
    }
    Agg::Trend(Box::new(t))
}

/// The result file of a finished (or interrupted) benchmark set.
pub fn to_result(spec: &BenchSpec, done: &Done) -> RunResult {
    let mut metrics = Vec::new();
    let mut units = serde_json::Map::new();
    let mut benches = Vec::new();
    for c in &done.collected {
        let tags = c.bench.tags();
        for v in c.metrics.iter().filter(|v| !v.values.is_empty()) {
            metrics.push(total(&v.name, &tags, v.class.unit(), values_agg(v)));
            units.entry(v.name.clone()).or_insert_with(|| {
                json!({
                    "class": class_name(&v.class),
                    "unit": v.class.label(),
                    "better": if higher_is_better(&v.name, v.class.label()) { "higher" } else { "lower" },
                })
            });
        }
        let failed = Agg::Rate {
            trues: u64::from(c.failed),
            total: u64::from(c.runs),
        };
        debug_assert_eq!(failed.kind(), MetricKind::Rate);
        metrics.push(total(RUN_FAILED, &tags, Unit::Default, failed));
        benches.push(json!({
            "name": c.bench.name,
            "tags": tags,
            "argv": c.bench.argv,
            "params": c.bench.params.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
            "runs": c.runs,
            "failed": c.failed,
            "failures": c.failures,
            "warmup_failed": c.warmup_failed,
            "output": c.output,
            "notes": c.notes,
        }));
    }
    let runs = match &spec.runs {
        crate::Runs::Exact(n) => json!({ "exact": n }),
        crate::Runs::Until { min_time, min, max } => {
            json!({ "min_time_s": min_time.as_secs_f64(), "min": min, "max": max })
        }
    };
    let options = json!({
        "runs": runs,
        "warmup": spec.warmup,
        "prepare": spec.prepare,
        "cleanup": spec.cleanup,
        "shell": spec.shell,
        "shell_correction": done.correction,
        "timeout_s": spec.timeout.map(|t| t.as_secs_f64()),
        "parse": spec.parse,
        "benches": benches,
        "metrics": units,
    });
    let name = done
        .collected
        .iter()
        .map(|c| c.bench.name.as_str())
        .collect::<Vec<_>>()
        .join(" | ");
    let meta = RunMeta::new("bench", name, spec.command_line.clone()).timed(
        done.started,
        done.ended,
        done.elapsed,
        done.interrupted,
    );
    RunResult::new(meta, options, metrics, Default::default())
}
