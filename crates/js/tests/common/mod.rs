//! Helpers shared by the k6 conformance tests: the scripts under `tests/k6/`, a built-in
//! target to run them against, and readers for the result's totals.
#![allow(dead_code)]

use std::path::PathBuf;
use volley_metrics::{RunResult, TotalValue};

pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/k6")
        .join(name)
}

pub fn target() -> volley_testserver::RunningTarget {
    volley_testserver::spawn(volley_testserver::TargetConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        tls: None,
        delay_all: None,
    })
    .expect("target starts")
}

/// Run `tests/k6/NAME` against `t` (`BASE` in `__ENV`, plus `extra`), 2 threads.
pub fn run_script(
    name: &str,
    t: &volley_testserver::RunningTarget,
    extra: &[(&str, &str)],
) -> Result<volley_js::RunOutput, volley_js::RunError> {
    run_script_at(name, &format!("http://{}", t.local_addr()), extra)
}

/// [`run_script`] against a target at `base` (`http://host:port`), 2 threads.
pub fn run_script_at(
    name: &str,
    base: &str,
    extra: &[(&str, &str)],
) -> Result<volley_js::RunOutput, volley_js::RunError> {
    let mut env = std::collections::BTreeMap::new();
    env.insert("BASE".to_string(), base.to_string());
    for (k, v) in extra {
        env.insert(k.to_string(), v.to_string());
    }
    volley_js::run(
        &script(name),
        env,
        &volley_js::CliOptions::default(),
        2,
        vec![],
        &volley_engine::RunControl::new(),
    )
}

/// The series of metric `name` whose tags include every `(key, value)` of `filter`.
pub fn matching<'a>(
    r: &'a RunResult,
    name: &'a str,
    filter: &'a [(&'a str, &'a str)],
) -> impl Iterator<Item = &'a volley_metrics::MetricTotal> + 'a {
    r.metrics_named(name).filter(move |m| {
        filter
            .iter()
            .all(|(k, v)| m.tags.get(*k).map(String::as_str) == Some(v))
    })
}

/// Sum of a counter over the tag sets matching `filter`.
pub fn counter(r: &RunResult, name: &str, filter: &[(&str, &str)]) -> f64 {
    matching(r, name, filter)
        .map(|m| match m.value {
            TotalValue::Counter { sum, .. } => sum,
            _ => panic!("{name} is not a counter"),
        })
        .sum()
}

/// (trues, total) of a rate over the tag sets matching `filter`.
pub fn rate(r: &RunResult, name: &str, filter: &[(&str, &str)]) -> (u64, u64) {
    matching(r, name, filter)
        .map(|m| match m.value {
            TotalValue::Rate { trues, total } => (trues, total),
            _ => panic!("{name} is not a rate"),
        })
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

/// Samples of a trend over the tag sets matching `filter`.
pub fn trend_count(r: &RunResult, name: &str, filter: &[(&str, &str)]) -> u64 {
    matching(r, name, filter)
        .map(|m| match m.value {
            TotalValue::Trend { count, .. } => count,
            _ => panic!("{name} is not a trend"),
        })
        .sum()
}

/// Every check passed; their names, sorted and deduplicated.
pub fn check_names(out: &volley_js::RunOutput) -> Vec<String> {
    let mut names: Vec<String> = all_checks_pass(out).into_iter().map(|c| c.0).collect();
    names.dedup();
    names
}

pub fn trend(r: &RunResult, name: &str) -> (u64, f64, f64, f64) {
    let m = r.metrics_named(name).next().expect(name);
    match m.value {
        TotalValue::Trend {
            count,
            sum,
            min,
            max,
            ..
        } => (count, sum, min, max),
        _ => panic!("{name} is not a trend"),
    }
}

/// Every `checks` series passed: (passes, total) per check name.
pub fn all_checks_pass(out: &volley_js::RunOutput) -> Vec<(String, u64, u64)> {
    let mut seen = Vec::new();
    for m in out.result.metrics_named("checks") {
        let TotalValue::Rate { trues, total } = m.value else {
            panic!("checks is a rate")
        };
        let name = m.tags.get("check").cloned().unwrap_or_default();
        assert_eq!(trues, total, "check '{name}' failed");
        seen.push((name, trues, total));
    }
    seen.sort();
    seen
}
