//! k6 options (from `export const options` and the CLI) → the engine's executor plan.
//!
//! Only k6's shortcut options are understood here (`vus`, `duration`, `iterations`,
//! `stages`), plus `insecureSkipTLSVerify`; every other option is reported as not supported
//! yet and ignored. `scenarios` is refused, since ignoring it would run a different test.

use std::time::Duration;
use volley_engine::vus::{Executor, Stage};

/// Options given on the command line; they override the script's.
#[derive(Clone, Debug, Default)]
pub struct CliOptions {
    pub vus: Option<u64>,
    pub duration: Option<Duration>,
    pub iterations: Option<u64>,
}

/// What the options resolve to.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    pub executor: Executor,
    pub insecure: bool,
    /// Options present in the script but not supported yet (ignored, with a warning).
    pub ignored: Vec<String>,
}

/// k6's default `maxDuration` for iteration-based executors.
const MAX_DURATION: Duration = Duration::from_secs(600);

fn duration(v: &serde_json::Value, what: &str) -> Result<Duration, String> {
    match v {
        serde_json::Value::String(s) => {
            volley_engine::parse_duration(s).map_err(|e| format!("options.{what}: {e}"))
        }
        // k6 reads bare numbers as milliseconds.
        serde_json::Value::Number(n) => Ok(Duration::from_secs_f64(
            n.as_f64().unwrap_or(0.0).max(0.0) / 1000.0,
        )),
        _ => Err(format!(
            "options.{what}: expected a duration such as \"30s\""
        )),
    }
}

fn count(v: &serde_json::Value, what: &str) -> Result<u64, String> {
    v.as_u64()
        .or_else(|| {
            v.as_f64()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                .map(|f| f as u64)
        })
        .ok_or_else(|| format!("options.{what}: expected a whole number ≥ 0, got {v}"))
}

/// Resolve the script's `options` (JSON, may be null) with CLI overrides.
pub fn resolve(script: &serde_json::Value, cli: &CliOptions) -> Result<Resolved, String> {
    let empty = serde_json::Map::new();
    let opts = script.as_object().unwrap_or(&empty);
    let mut ignored = Vec::new();
    let mut vus = None;
    let mut dur = None;
    let mut iterations = None;
    let mut stages = None;
    let mut insecure = false;
    for (k, v) in opts {
        match k.as_str() {
            "vus" => vus = Some(count(v, "vus")?),
            "duration" => dur = Some(duration(v, "duration")?),
            "iterations" => iterations = Some(count(v, "iterations")?),
            "stages" => {
                let arr = v
                    .as_array()
                    .ok_or("options.stages: expected an array of {duration, target}")?;
                let mut out = Vec::new();
                for (i, s) in arr.iter().enumerate() {
                    let d = s
                        .get("duration")
                        .ok_or(format!("options.stages[{i}]: missing duration"))?;
                    let t = s
                        .get("target")
                        .ok_or(format!("options.stages[{i}]: missing target"))?;
                    out.push(Stage {
                        duration: duration(d, &format!("stages[{i}].duration"))?,
                        target: count(t, &format!("stages[{i}].target"))?,
                    });
                }
                stages = Some(out);
            }
            "insecureSkipTLSVerify" => insecure = v.as_bool().unwrap_or(false),
            "scenarios" => {
                return Err(
                    "options.scenarios is not supported by volley yet: use vus/duration, \
                     iterations or stages"
                        .into(),
                )
            }
            other => ignored.push(other.to_string()),
        }
    }
    if cli.duration.is_some() || cli.iterations.is_some() {
        stages = None;
    }
    if let Some(v) = cli.vus {
        vus = Some(v);
    }
    if let Some(d) = cli.duration {
        dur = Some(d);
    }
    if let Some(i) = cli.iterations {
        iterations = Some(i);
    }
    let dur = dur.filter(|d| !d.is_zero());
    let executor = if let Some(iterations) = iterations {
        let vus = vus.unwrap_or(1);
        if vus == 0 {
            return Err("vus must be at least 1".into());
        }
        if iterations < vus {
            return Err(format!(
                "shared-iterations: the number of iterations ({iterations}) can't be less than \
                 the number of VUs ({vus})"
            ));
        }
        Executor::SharedIterations {
            vus,
            iterations,
            max_duration: dur.unwrap_or(MAX_DURATION),
        }
    } else if let Some(duration) = dur {
        let vus = vus.unwrap_or(1);
        if vus == 0 {
            return Err("vus must be at least 1".into());
        }
        Executor::ConstantVus { vus, duration }
    } else if let Some(stages) = stages.filter(|s| !s.is_empty()) {
        Executor::RampingVus {
            start_vus: vus.unwrap_or(1),
            stages,
        }
    } else {
        let vus = vus.unwrap_or(1).max(1);
        Executor::SharedIterations {
            vus,
            iterations: vus,
            max_duration: MAX_DURATION,
        }
    };
    Ok(Resolved {
        executor,
        insecure,
        ignored,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shortcuts_pick_the_k6_executor() {
        let none = CliOptions::default();
        let r = resolve(&json!({"vus": 3, "duration": "2s"}), &none).unwrap();
        assert_eq!(
            r.executor,
            Executor::ConstantVus {
                vus: 3,
                duration: Duration::from_secs(2)
            }
        );
        let r = resolve(&json!({"vus": 2, "iterations": 10}), &none).unwrap();
        assert!(matches!(
            r.executor,
            Executor::SharedIterations {
                vus: 2,
                iterations: 10,
                ..
            }
        ));
        let r = resolve(
            &json!({"stages": [{"duration": "1s", "target": 5}, {"duration": 500, "target": 0}]}),
            &none,
        )
        .unwrap();
        assert_eq!(r.executor.max_vus(), 5);
        assert_eq!(r.executor.duration(), Duration::from_millis(1500));
        let r = resolve(&serde_json::Value::Null, &none).unwrap();
        assert!(matches!(
            r.executor,
            Executor::SharedIterations {
                vus: 1,
                iterations: 1,
                ..
            }
        ));
    }

    #[test]
    fn cli_overrides_and_errors() {
        let cli = CliOptions {
            vus: Some(4),
            duration: None,
            iterations: Some(8),
        };
        let r = resolve(
            &json!({"vus": 1, "stages": [{"duration": "1s", "target": 5}], "thresholds": {}}),
            &cli,
        )
        .unwrap();
        assert!(matches!(
            r.executor,
            Executor::SharedIterations {
                vus: 4,
                iterations: 8,
                ..
            }
        ));
        assert_eq!(r.ignored, vec!["thresholds".to_string()]);
        assert!(resolve(&json!({"vus": 5, "iterations": 2}), &CliOptions::default()).is_err());
        assert!(resolve(&json!({"scenarios": {}}), &CliOptions::default()).is_err());
        assert!(resolve(&json!({"duration": "soon"}), &CliOptions::default()).is_err());
    }
}
