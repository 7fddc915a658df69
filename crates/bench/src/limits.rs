//! `--threshold METRIC[{tag:value}]:EXPR` on a bench result: k6's grammar
//! (`volley_run::thresholds`: `avg`, `min`, `max`, `med`, `p(N)` on the per-run values;
//! `rate` on `run_failed`) with units on the limit, converted to the metric's own unit
//! (`peak_rss:max<3MiB` → bytes, `wall_time:p(95)<20ms` → ms). A threshold on a metric no
//! run recorded fails with "no data" rather than passing on zeros.

use crate::record::RUN_FAILED;
use crate::units;
use volley_metrics::{Agg, MetricKind, RunResult, TagSet, ThresholdResult};
use volley_run::thresholds::{self, Threshold};

const OPS: [&str; 7] = ["===", "==", "!=", "<=", ">=", "<", ">"];

/// `max<3MiB` → `max<3145728` (the limit in the metric class's base unit).
fn normalise(expr: &str) -> Result<String, String> {
    let (at, op) = OPS
        .iter()
        .filter_map(|op| expr.find(op).map(|i| (i, *op)))
        .min_by_key(|(i, op)| (*i, usize::MAX - op.len()))
        .ok_or_else(|| format!("'{expr}': no comparison operator"))?;
    let rhs = expr[at + op.len()..].trim();
    let q = units::parse(rhs).ok_or_else(|| {
        format!("'{expr}': '{rhs}' is not a number with an optional unit (e.g. 60, 3MiB, 20ms)")
    })?;
    Ok(format!("{}{op}{}", expr[..at].trim(), q.value))
}

/// Parse the flags (usage errors name the flag and show an example).
pub fn parse_flags(flags: &[String]) -> Result<Vec<Threshold>, String> {
    let hint = "\n  hint: e.g. --threshold 'wall_time:p(95)<20ms', 'peak_rss:max<3MiB', 'write_mib_per_s:min>60', 'run_failed:rate==0'";
    let mut out = Vec::new();
    for f in flags {
        let (key, expr) = volley_run::checks::split_flag(f)
            .ok_or_else(|| format!("--threshold '{f}': expected METRIC:EXPR{hint}"))?;
        let plain = normalise(&expr).map_err(|e| format!("--threshold '{f}': {e}{hint}"))?;
        let map = serde_json::json!({ key.clone(): [plain] });
        let mut parsed = thresholds::parse(&map, |name| {
            Some(if name == RUN_FAILED {
                MetricKind::Rate
            } else {
                MetricKind::Trend
            })
        })
        .map_err(|e| format!("--threshold '{f}': {e}{hint}"))?;
        for t in &mut parsed {
            t.source = expr.clone();
        }
        out.extend(parsed);
    }
    Ok(out)
}

/// Judge `ths` on `r`'s metrics, store the verdicts in `r.thresholds`, and return k6's
/// message when some are crossed.
pub fn judge(ths: &[Threshold], r: &mut RunResult) -> Option<String> {
    if ths.is_empty() {
        return None;
    }
    let series: Vec<(String, TagSet, Agg)> = r
        .metrics
        .iter()
        .filter_map(|m| Some((m.name.clone(), m.tags.clone(), m.to_agg().ok()?)))
        .collect();
    let iter = || series.iter().map(|(n, t, a)| (n.as_str(), t, a));
    let verdicts = thresholds::evaluate(ths, iter, r.meta.duration_s);
    let mut failed: Vec<String> = Vec::new();
    r.thresholds = ths
        .iter()
        .zip(verdicts)
        .map(|(th, v)| {
            let seen = iter().any(|(n, t, _)| th.matches(n, t));
            let ok = v.ok && seen;
            if !ok && !failed.contains(&th.metric) {
                failed.push(th.metric.clone());
            }
            ThresholdResult {
                metric: th.metric.clone(),
                expression: th.source.clone(),
                ok,
                observed: seen.then_some(v.observed),
                aborted: false,
            }
        })
        .collect();
    (!failed.is_empty()).then(|| {
        format!(
            "thresholds on metrics '{}' have been crossed",
            failed.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_take_units_and_keep_the_expression_as_written() {
        let t = parse_flags(&[
            "peak_rss:max<3MiB".into(),
            "wall_time{bench:a}:p(95)<=0.5s".into(),
        ])
        .unwrap();
        assert_eq!(t[0].target, 3.0 * 1048576.0);
        assert_eq!(t[0].source, "max<3MiB");
        assert_eq!(t[1].target, 500.0);
        assert_eq!(t[1].tags, [("bench".to_string(), "a".to_string())]);
        let r = parse_flags(&["run_failed:rate==0".into()]).unwrap();
        assert_eq!(r[0].target, 0.0);
    }

    #[test]
    fn malformed_thresholds_are_usage_errors_with_an_example() {
        for bad in [
            "peak_rss",
            "peak_rss:max",
            "peak_rss:max<lots",
            "x:count>1",
            "run_failed:avg<1",
        ] {
            let e = parse_flags(&[bad.into()]).unwrap_err();
            assert!(
                e.contains("--threshold") && e.contains("hint"),
                "{bad}: {e}"
            );
        }
    }
}
