//! k6's `K6_*` environment variables → option keys, and k6's tiers: `--config` file <
//! script `options` < `K6_*` environment < command-line flags (k6's `getConsolidatedConfig`).
//!
//! Each tier is a JSON object with the keys of `options`; a higher tier replaces a key of a
//! lower one, and (as k6's `Options.Apply`) a tier that sets any of `duration`, `iterations`,
//! `stages` or `scenarios` drops all four from the tiers below it.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// The options k6 reads from the environment, with the kind of value each takes.
const ENV_OPTIONS: &[(&str, &str, Kind)] = &[
    ("K6_VUS", "vus", Kind::Int),
    ("K6_DURATION", "duration", Kind::Str),
    ("K6_ITERATIONS", "iterations", Kind::Int),
    ("K6_STAGES", "stages", Kind::Stages),
    ("K6_MAX_REDIRECTS", "maxRedirects", Kind::Int),
    ("K6_BATCH", "batch", Kind::Int),
    ("K6_BATCH_PER_HOST", "batchPerHost", Kind::Int),
    ("K6_RPS", "rps", Kind::Int),
    ("K6_USER_AGENT", "userAgent", Kind::Str),
    ("K6_HTTP_DEBUG", "httpDebug", Kind::Str),
    (
        "K6_INSECURE_SKIP_TLS_VERIFY",
        "insecureSkipTLSVerify",
        Kind::Bool,
    ),
    ("K6_NO_CONNECTION_REUSE", "noConnectionReuse", Kind::Bool),
    (
        "K6_NO_VU_CONNECTION_REUSE",
        "noVUConnectionReuse",
        Kind::Bool,
    ),
    (
        "K6_DISCARD_RESPONSE_BODIES",
        "discardResponseBodies",
        Kind::Bool,
    ),
    ("K6_THROW", "throw", Kind::Bool),
    (
        "K6_MIN_ITERATION_DURATION",
        "minIterationDuration",
        Kind::Str,
    ),
    ("K6_SETUP_TIMEOUT", "setupTimeout", Kind::Str),
    ("K6_TEARDOWN_TIMEOUT", "teardownTimeout", Kind::Str),
    ("K6_TAGS", "tags", Kind::Map),
    ("K6_SYSTEM_TAGS", "systemTags", Kind::List),
    ("K6_SUMMARY_TREND_STATS", "summaryTrendStats", Kind::List),
    ("K6_SUMMARY_TIME_UNIT", "summaryTimeUnit", Kind::Str),
    ("K6_BLACKLIST_IPS", "blacklistIPs", Kind::List),
    ("K6_BLOCK_HOSTNAMES", "blockHostnames", Kind::List),
    ("K6_LOCAL_IPS", "localIPs", Kind::Str),
    ("K6_DNS", "dns", Kind::Str),
    ("K6_NO_SETUP", "noSetup", Kind::Bool),
    ("K6_NO_TEARDOWN", "noTeardown", Kind::Bool),
    ("K6_NO_COOKIES_RESET", "noCookiesReset", Kind::Bool),
    ("K6_EXECUTION_SEGMENT", "executionSegment", Kind::Str),
    (
        "K6_EXECUTION_SEGMENT_SEQUENCE",
        "executionSegmentSequence",
        Kind::Str,
    ),
];

/// The `K6_*` names read by [`from_env`] (for the docs and `--help`).
pub fn names() -> impl Iterator<Item = &'static str> {
    ENV_OPTIONS.iter().map(|(n, _, _)| *n)
}

#[derive(Clone, Copy)]
enum Kind {
    Int,
    Str,
    Bool,
    List,
    Map,
    Stages,
}

/// A boolean as Go's `strconv.ParseBool` reads it (what k6's envconfig uses).
pub fn parse_bool(s: &str) -> Option<bool> {
    match s.trim() {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// k6's `-s`/`K6_STAGES` form: `DURATION:TARGET[,DURATION:TARGET...]`, e.g. `30s:10,1m:0`.
pub fn parse_stages(s: &str) -> Result<Value, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (d, t) = part.split_once(':').ok_or_else(|| {
            format!(
                "stage '{part}': expected DURATION:TARGET, e.g. 30s:10 (ramp to 10 VUs in 30 s)"
            )
        })?;
        let target: u64 = t.trim().parse().map_err(|_| {
            format!("stage '{part}': the target '{t}' is not a whole number of VUs (e.g. 30s:10)")
        })?;
        out.push(json!({"duration": d.trim(), "target": target}));
    }
    Ok(Value::Array(out))
}

fn value(name: &str, raw: &str, kind: Kind) -> Result<Value, String> {
    let list = || -> Vec<Value> {
        raw.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| Value::String(s.into()))
            .collect()
    };
    Ok(match kind {
        Kind::Str => Value::String(raw.to_string()),
        Kind::Int => Value::from(
            raw.trim()
                .parse::<u64>()
                .map_err(|_| format!("{name}='{raw}': expected a whole number"))?,
        ),
        Kind::Bool => Value::Bool(
            parse_bool(raw).ok_or_else(|| format!("{name}='{raw}': expected true or false"))?,
        ),
        Kind::List => Value::Array(list()),
        Kind::Map => {
            let mut m = Map::new();
            for pair in raw.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let (k, v) = pair.split_once(':').ok_or_else(|| {
                    format!("{name}='{raw}': expected NAME:VALUE pairs, e.g. env:staging,team:api")
                })?;
                m.insert(k.trim().to_string(), Value::String(v.trim().to_string()));
            }
            Value::Object(m)
        }
        Kind::Stages => parse_stages(raw).map_err(|e| format!("{name}: {e}"))?,
    })
}

/// The option tier of k6's environment: every `K6_*` variable k6 reads for `options`.
pub fn from_env(env: &BTreeMap<String, String>) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for (name, key, kind) in ENV_OPTIONS {
        if let Some(raw) = env.get(*name) {
            out.insert(key.to_string(), value(name, raw, *kind)?);
        }
    }
    Ok(out)
}

/// Lay `higher` over `lower` as k6's `Options.Apply` does.
pub fn layer(lower: &mut Map<String, Value>, higher: &Map<String, Value>) {
    const EXECUTION: [&str; 4] = ["duration", "iterations", "stages", "scenarios"];
    if EXECUTION
        .iter()
        .any(|k| higher.get(*k).is_some_and(|v| !v.is_null()))
    {
        for k in EXECUTION {
            lower.remove(k);
        }
    }
    // null is "not set" (a script's `userAgent: __ENV.UA || null`), never a reset.
    for (k, v) in higher.iter().filter(|(_, v)| !v.is_null()) {
        lower.insert(k.clone(), v.clone());
    }
}

/// The script's `options` with the config file below and the environment and flags above.
pub fn consolidate(
    config: Option<&Map<String, Value>>,
    script: &Value,
    env: &Map<String, Value>,
    flags: &Map<String, Value>,
) -> Value {
    let mut all = config.cloned().unwrap_or_default();
    if let Some(s) = script.as_object() {
        layer(&mut all, s);
    }
    layer(&mut all, env);
    layer(&mut all, flags);
    if all.is_empty() && config.is_none() && !script.is_object() {
        return script.clone();
    }
    Value::Object(all)
}

/// A run's options: k6's tiers around the script's `options`, then `--no-thresholds` and
/// k6's summary flags (which replace the script's options and are validated with them).
pub fn for_run(script: &Value, cli: &super::CliOptions) -> Value {
    let mut all = consolidate(
        cli.config_file.as_ref(),
        script,
        &cli.env_options,
        &cli.flag_options,
    );
    if cli.no_thresholds {
        if let Some(o) = all.as_object_mut() {
            o.remove("thresholds");
        }
    }
    for (key, v) in [
        (
            "summaryTrendStats",
            cli.summary_trend_stats.as_ref().map(|s| json!(s)),
        ),
        (
            "summaryTimeUnit",
            cli.summary_time_unit.as_ref().map(|u| json!(u)),
        ),
    ] {
        if let Some(v) = v {
            if !all.is_object() {
                all = Value::Object(Default::default());
            }
            all[key] = v;
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn k6_env_names_map_to_option_keys() {
        let env: BTreeMap<String, String> = [
            ("K6_VUS", "7"),
            ("K6_STAGES", "1s:3,2s:0"),
            ("K6_TAGS", "env:ci,team:api"),
            ("K6_INSECURE_SKIP_TLS_VERIFY", "true"),
            ("K6_SYSTEM_TAGS", "status,method"),
            ("HOME", "/x"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let m = from_env(&env).unwrap();
        assert_eq!(m["vus"], json!(7));
        assert_eq!(
            m["stages"],
            json!([{"duration": "1s", "target": 3}, {"duration": "2s", "target": 0}])
        );
        assert_eq!(m["tags"], json!({"env": "ci", "team": "api"}));
        assert_eq!(m["insecureSkipTLSVerify"], json!(true));
        assert_eq!(m["systemTags"], json!(["status", "method"]));
        assert_eq!(m.len(), 5);
        let bad: BTreeMap<String, String> = [("K6_VUS".to_string(), "many".to_string())].into();
        assert_eq!(
            from_env(&bad).unwrap_err(),
            "K6_VUS='many': expected a whole number"
        );
    }

    #[test]
    fn higher_tiers_win_and_execution_keys_replace_as_a_group() {
        let config = obj(json!({"vus": 1, "duration": "9s", "userAgent": "config", "batch": 3}));
        let script = json!({"userAgent": "script", "iterations": 4, "batch": null});
        let env = obj(json!({"userAgent": "env"}));
        let flags = obj(json!({"stages": [{"duration": "1s", "target": 2}]}));
        let all = consolidate(Some(&config), &script, &env, &flags);
        assert_eq!(
            all,
            json!({"vus": 1, "userAgent": "env", "batch": 3,
                   "stages": [{"duration": "1s", "target": 2}]})
        );
        let none = Map::new();
        assert_eq!(consolidate(None, &Value::Null, &none, &none), Value::Null);
    }
}
