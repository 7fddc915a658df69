//! One judged result from the results of a test's instances: [`volley_metrics::merge`]'s
//! exact merge, then the thresholds judged again on the merged figures (a threshold that only
//! the combined load crosses fails here, as it would have on one big instance). `volley
//! merge` and a coordinator of distributed runs use it.

use crate::thresholds;
use volley_metrics::{MetricKind, RunResult};

/// Merge `inputs` (label, result) and judge the thresholds the instances had on the merged
/// totals. `force` merges results of different tests too (see [`volley_metrics::merge`]).
pub fn merge(inputs: &[(&str, &RunResult)], force: bool) -> Result<RunResult, String> {
    let mut merged = volley_metrics::merge::merge(inputs, force).map_err(|e| e.0)?;
    rejudge(&mut merged, inputs)?;
    Ok(merged)
}

/// The thresholds as the first instance recorded them (script options and `--threshold`
/// flags alike), judged on `merged`. A threshold that stopped any instance (`abortOnFail`)
/// stays failed.
fn rejudge(merged: &mut RunResult, inputs: &[(&str, &RunResult)]) -> Result<(), String> {
    let Some((_, first)) = inputs.first() else {
        return Ok(());
    };
    let mut spec = serde_json::Map::new();
    for t in &first.thresholds {
        let list = spec
            .entry(t.metric.clone())
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let Some(a) = list.as_array_mut() {
            a.push(t.expression.clone().into());
        }
    }
    let kinds: std::collections::HashMap<&str, MetricKind> = merged
        .metrics
        .iter()
        .map(|m| (m.name.as_str(), m.kind()))
        .collect();
    let ths = thresholds::parse(&serde_json::Value::Object(spec), |name| {
        kinds
            .get(name)
            .copied()
            .or_else(|| volley_metrics::names::builtin_kind(name))
            .or(Some(MetricKind::Counter))
    })
    .map_err(|e| format!("cannot judge the thresholds again: {e}"))?;
    let aborted: Vec<bool> = (0..ths.len())
        .map(|i| {
            inputs
                .iter()
                .any(|(_, r)| r.thresholds.get(i).is_some_and(|t| t.aborted))
        })
        .collect();
    crate::execute::judge(&ths, &aborted, merged);
    Ok(())
}
