//! k6's six executors and the scenarios that use them.
//!
//! A *scenario* is a named load shape: an [`Executor`] (when iterations start and how many VUs
//! run them) plus the fields every executor shares (`startTime`, `gracefulStop`, `exec`, `env`,
//! `tags`). Each executor lives in its own file with its config, its validation (worded as
//! k6 words it, so users recognise the messages) and the pure timing logic the VU scheduler
//! in [`crate::vus`] asks about; each file carries its own tests. Nothing here runs anything.
//!
//! Configs come as JSON (the script's `options.scenarios` after the JS runtime evaluated it),
//! which keeps the engine free of JavaScript.

pub mod constant_arrival_rate;
pub mod constant_vus;
pub mod per_vu_iterations;
pub mod ramping_arrival_rate;
pub mod ramping_vus;
pub mod shared_iterations;

pub use constant_arrival_rate::ConstantArrivalRate;
pub use constant_vus::ConstantVus;
pub use per_vu_iterations::PerVuIterations;
pub use ramping_arrival_rate::RampingArrivalRate;
pub use ramping_vus::RampingVus;
pub use shared_iterations::SharedIterations;

use crate::rate::RateSchedule;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;
use volley_metrics::TagSet;

/// One stage of a ramp: move linearly to `target` (VUs, or iterations per time unit) over
/// `duration`.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    pub duration: Duration,
    pub target: u64,
}

/// When a scenario's iterations start and how many VUs run them.
#[derive(Clone, Debug, PartialEq)]
pub enum Executor {
    ConstantVus(ConstantVus),
    RampingVus(RampingVus),
    SharedIterations(SharedIterations),
    PerVuIterations(PerVuIterations),
    ConstantArrivalRate(ConstantArrivalRate),
    RampingArrivalRate(RampingArrivalRate),
}

/// k6's executor names, for messages.
pub const EXECUTORS: &[&str] = &[
    "constant-vus",
    "ramping-vus",
    "shared-iterations",
    "per-vu-iterations",
    "constant-arrival-rate",
    "ramping-arrival-rate",
];

impl Executor {
    /// k6's name of the executor.
    pub fn name(&self) -> &'static str {
        match self {
            Executor::ConstantVus(_) => "constant-vus",
            Executor::RampingVus(_) => "ramping-vus",
            Executor::SharedIterations(_) => "shared-iterations",
            Executor::PerVuIterations(_) => "per-vu-iterations",
            Executor::ConstantArrivalRate(_) => "constant-arrival-rate",
            Executor::RampingArrivalRate(_) => "ramping-arrival-rate",
        }
    }

    /// The most VUs the executor may use at once.
    pub fn max_vus(&self) -> u64 {
        match self {
            Executor::ConstantVus(e) => e.vus,
            Executor::RampingVus(e) => e.max_vus(),
            Executor::SharedIterations(e) => e.vus,
            Executor::PerVuIterations(e) => e.vus,
            Executor::ConstantArrivalRate(e) => e.max_vus,
            Executor::RampingArrivalRate(e) => e.max_vus,
        }
    }

    /// VUs created before the test starts (arrival-rate executors create the rest up to
    /// [`Executor::max_vus`] when they need them, as k6 does).
    pub fn initial_vus(&self) -> u64 {
        match self {
            Executor::ConstantArrivalRate(e) => e.pre_allocated_vus,
            Executor::RampingArrivalRate(e) => e.pre_allocated_vus,
            other => other.max_vus(),
        }
    }

    /// How long after the scenario's start iterations may begin (`maxDuration` for the
    /// iteration-based executors).
    pub fn duration(&self) -> Duration {
        match self {
            Executor::ConstantVus(e) => e.duration,
            Executor::RampingVus(e) => e.duration(),
            Executor::SharedIterations(e) => e.max_duration,
            Executor::PerVuIterations(e) => e.max_duration,
            Executor::ConstantArrivalRate(e) => e.duration,
            Executor::RampingArrivalRate(e) => e.duration(),
        }
    }

    /// Iterations the executor runs in total, when it says (iteration-based executors).
    pub fn total_iterations(&self) -> Option<u64> {
        match self {
            Executor::SharedIterations(e) => Some(e.iterations),
            Executor::PerVuIterations(e) => Some(e.vus.saturating_mul(e.iterations)),
            _ => None,
        }
    }

    /// Arrival-rate executors: when iterations are due, in iterations per second.
    pub fn arrivals(&self) -> Option<RateSchedule> {
        match self {
            Executor::ConstantArrivalRate(e) => Some(e.schedule()),
            Executor::RampingArrivalRate(e) => Some(e.schedule()),
            _ => None,
        }
    }

    /// What k6 prints before a run: the load ("10 looping VUs for 30s") and the
    /// executor's own settings ("maxVUs: 10-50").
    pub fn describe(&self) -> (String, Vec<String>) {
        match self {
            Executor::ConstantVus(e) => e.describe(),
            Executor::RampingVus(e) => e.describe(),
            Executor::SharedIterations(e) => e.describe(),
            Executor::PerVuIterations(e) => e.describe(),
            Executor::ConstantArrivalRate(e) => e.describe(),
            Executor::RampingArrivalRate(e) => e.describe(),
        }
    }
}

/// A named load shape with its executor and the fields all executors share.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub executor: Executor,
    /// When the scenario starts, after the test's start (k6 `startTime`).
    pub start_time: Duration,
    /// How long iterations still running at the scenario's end get to finish.
    pub graceful_stop: Duration,
    /// The exported function iterations call (k6 `exec`; None: `default`).
    pub exec: Option<String>,
    /// Added to `__ENV` for this scenario's VUs.
    pub env: BTreeMap<String, String>,
    /// Added to every sample of this scenario's iterations.
    pub tags: TagSet,
    /// The body drives its own load in one long iteration per VU (quick mode: a VU is a
    /// connection): the scheduler records none of k6's iteration metrics (`iterations`,
    /// `iteration_duration`, `iteration_errors`, `dropped_iterations`; `vus`/`vus_max` when
    /// every scenario is self-paced) and starts its VUs at once, without the start spread.
    pub self_paced: bool,
}

/// k6's default `gracefulStop`.
pub const GRACEFUL_STOP: Duration = Duration::from_secs(30);
/// k6's default `maxDuration` of the iteration-based executors.
pub const MAX_DURATION: Duration = Duration::from_secs(600);

/// The most VUs one run may use, over all its scenarios (`vus`, stage targets, `maxVUs`):
/// 100,000. A VU costs about 200 KiB (its JS runtime and stack), so that is ~20 GB, more than
/// one load generator has; bigger tests are split across machines. Checked before any VU is
/// created, so an absurd number fails at once instead of after eating the memory.
pub const MAX_VUS: u64 = 100_000;

/// Refuse a run whose scenarios would need more than [`MAX_VUS`] VUs.
pub fn check_vus(scenarios: &[Scenario]) -> Result<(), String> {
    let total = scenarios
        .iter()
        .fold(0u64, |n, s| n.saturating_add(s.executor.max_vus()));
    if total > MAX_VUS {
        let which = match scenarios {
            [one] => format!("options.scenarios.{}", one.name),
            _ => "options.scenarios (all together)".to_string(),
        };
        return Err(format!(
            "{which}: {total} VUs is more than the limit of {MAX_VUS} per run (a VU costs \
             about 200 KiB); split the load across machines"
        ));
    }
    Ok(())
}

impl Scenario {
    /// A scenario with the common fields at k6's defaults (the shortcuts `vus`, `duration`,
    /// `iterations` and `stages` make one named `default`).
    pub fn new(name: &str, executor: Executor) -> Scenario {
        Scenario {
            name: name.to_string(),
            executor,
            start_time: Duration::ZERO,
            graceful_stop: GRACEFUL_STOP,
            exec: None,
            env: BTreeMap::new(),
            tags: TagSet::new(),
            self_paced: false,
        }
    }

    /// The function iterations call.
    pub fn exec_name(&self) -> &str {
        self.exec.as_deref().unwrap_or("default")
    }

    /// From the start of the test to the latest moment this scenario can still run
    /// (start + duration + graceful stop, and the ramp-down grace of ramping VUs).
    pub fn max_end(&self) -> Duration {
        let extra = match &self.executor {
            Executor::RampingVus(r) => r.graceful_ramp_down.max(self.graceful_stop),
            _ => self.graceful_stop,
        };
        self.start_time + self.executor.duration() + extra
    }

    /// k6's line for the run's header:
    /// "10 iterations shared among 2 VUs (maxDuration: 10m0s, exec: read, gracefulStop: 30s)".
    pub fn describe(&self) -> String {
        let (load, mut extras) = self.executor.describe();
        if let Some(e) = &self.exec {
            extras.push(format!("exec: {e}"));
        }
        if !self.start_time.is_zero() {
            extras.push(format!("startTime: {}", fmt_duration(self.start_time)));
        }
        extras.push(format!(
            "gracefulStop: {}",
            fmt_duration(self.graceful_stop)
        ));
        format!("{load} ({})", extras.join(", "))
    }

    /// Parse `options.scenarios[name]` as k6 does (defaults, validation, k6's wording).
    pub fn from_json(name: &str, v: &Value) -> Result<Scenario, String> {
        validate_name(name)?;
        let what = format!("scenarios.{name}");
        let obj = v
            .as_object()
            .ok_or_else(|| format!("options.{what}: expected an object with an executor"))?;
        let executor_name = match obj.get("executor") {
            Some(Value::String(s)) => s.as_str(),
            Some(other) => {
                return Err(format!(
                    "options.{what}.executor: expected a string, got {other}"
                ))
            }
            None => {
                return Err(format!(
                    "options.{what}: executor is required (one of {})",
                    EXECUTORS.join(", ")
                ))
            }
        };
        let f = Fields::new(obj, &what);
        let executor = match executor_name {
            "constant-vus" => Executor::ConstantVus(ConstantVus::from_json(&f)?),
            "ramping-vus" => Executor::RampingVus(RampingVus::from_json(&f)?),
            "shared-iterations" => Executor::SharedIterations(SharedIterations::from_json(&f)?),
            "per-vu-iterations" => Executor::PerVuIterations(PerVuIterations::from_json(&f)?),
            "constant-arrival-rate" => {
                Executor::ConstantArrivalRate(ConstantArrivalRate::from_json(&f)?)
            }
            "ramping-arrival-rate" => {
                Executor::RampingArrivalRate(RampingArrivalRate::from_json(&f)?)
            }
            other => {
                return Err(format!(
                    "options.{what}: executor type '{other}' is not supported (expected one of {})",
                    EXECUTORS.join(", ")
                ))
            }
        };
        let mut s = Scenario::new(name, executor);
        if let Some(d) = f.duration("startTime")? {
            s.start_time = d;
        }
        if let Some(d) = f.duration("gracefulStop")? {
            s.graceful_stop = d;
        }
        match obj.get("exec") {
            None | Some(Value::Null) => {}
            Some(Value::String(e)) if !e.is_empty() => s.exec = Some(e.clone()),
            Some(other) => {
                return Err(format!(
                    "options.{what}.exec: expected the name of an exported function, got {other}"
                ))
            }
        }
        if let Some(env) = obj.get("env") {
            s.env = string_map(env, &format!("{what}.env"))?
                .into_iter()
                .collect();
        }
        if let Some(tags) = obj.get("tags") {
            s.tags = string_map(tags, &format!("{what}.tags"))?
                .into_iter()
                .collect();
        }
        f.reject_unknown(executor_name)?;
        Ok(s)
    }
}

/// k6 accepts scenario names of letters, digits, `_` and `-` only.
pub fn validate_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "options.scenarios: invalid scenario name '{name}': names may contain only numbers, \
             latin letters, underscores and dashes"
        ))
    }
}

/// Parse `options.scenarios` (an object of name → config), in k6's order: by start time,
/// then by name.
pub fn parse_scenarios(v: &Value) -> Result<Vec<Scenario>, String> {
    let obj = v
        .as_object()
        .ok_or("options.scenarios: expected an object mapping scenario names to configs")?;
    if obj.is_empty() {
        return Err("options.scenarios: no scenarios are defined".into());
    }
    let mut out = obj
        .iter()
        .map(|(k, v)| Scenario::from_json(k, v))
        .collect::<Result<Vec<_>, _>>()?;
    out.sort_by(|a, b| a.start_time.cmp(&b.start_time).then(a.name.cmp(&b.name)));
    Ok(out)
}

/// A scenario config's fields, with the executor's allowed keys remembered so that unknown
/// ones can be reported (a typo like `duraton` would otherwise silently run another test).
pub struct Fields<'a> {
    obj: &'a Map<String, Value>,
    what: &'a str,
    seen: std::cell::RefCell<Vec<&'static str>>,
}

/// Keys every scenario may have.
const COMMON: &[&str] = &[
    "executor",
    "startTime",
    "gracefulStop",
    "exec",
    "env",
    "tags",
];

impl<'a> Fields<'a> {
    pub fn new(obj: &'a Map<String, Value>, what: &'a str) -> Fields<'a> {
        Fields {
            obj,
            what,
            seen: Default::default(),
        }
    }

    fn get(&self, key: &'static str) -> Option<&'a Value> {
        self.seen.borrow_mut().push(key);
        self.obj.get(key).filter(|v| !v.is_null())
    }

    /// Where a field is, for messages: `options.scenarios.read.vus`.
    pub fn at(&self, key: &str) -> String {
        format!("options.{}.{key}", self.what)
    }

    pub fn duration(&self, key: &'static str) -> Result<Option<Duration>, String> {
        self.get(key)
            .map(|v| json_duration(v, &self.at(key)))
            .transpose()
    }

    pub fn count(&self, key: &'static str) -> Result<Option<u64>, String> {
        self.get(key)
            .map(|v| json_count(v, &self.at(key)))
            .transpose()
    }

    pub fn stages(&self, key: &'static str) -> Result<Option<Vec<Stage>>, String> {
        self.get(key)
            .map(|v| json_stages(v, &self.at(key)))
            .transpose()
    }

    fn reject_unknown(&self, executor: &str) -> Result<(), String> {
        let seen = self.seen.borrow();
        for k in self.obj.keys() {
            if !COMMON.contains(&k.as_str()) && !seen.contains(&k.as_str()) {
                let mut allowed: Vec<&str> = seen.clone();
                allowed.extend_from_slice(COMMON);
                return Err(format!(
                    "options.{}: unknown option '{k}' for executor {executor} (allowed: {})",
                    self.what,
                    allowed.join(", ")
                ));
            }
        }
        Ok(())
    }
}

/// A duration as k6 reads it: a string such as "30s" or "1m30s", or a number of milliseconds.
pub fn json_duration(v: &Value, at: &str) -> Result<Duration, String> {
    match v {
        Value::String(s) => crate::parse_duration(s).map_err(|e| format!("{at}: {e}")),
        Value::Number(n) => match n.as_f64() {
            Some(ms) => crate::duration_from_secs(ms / 1000.0).map_err(|e| format!("{at}: {e}")),
            None => Err(format!("{at}: a duration cannot be negative, got {n}")),
        },
        _ => Err(format!(
            "{at}: expected a duration such as \"30s\", got {v}"
        )),
    }
}

/// A whole number ≥ 0.
pub fn json_count(v: &Value, at: &str) -> Result<u64, String> {
    v.as_u64()
        .or_else(|| {
            v.as_f64()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < u64::MAX as f64)
                .map(|f| f as u64)
        })
        .ok_or_else(|| format!("{at}: expected a whole number ≥ 0, got {v}"))
}

/// `[{duration, target}, ...]`.
pub fn json_stages(v: &Value, at: &str) -> Result<Vec<Stage>, String> {
    let arr = v
        .as_array()
        .ok_or_else(|| format!("{at}: expected an array of {{duration, target}}"))?;
    let mut out = Vec::with_capacity(arr.len());
    for (i, s) in arr.iter().enumerate() {
        let d = s
            .get("duration")
            .ok_or_else(|| format!("{at}[{i}]: missing duration"))?;
        let t = s
            .get("target")
            .ok_or_else(|| format!("{at}[{i}]: missing target"))?;
        out.push(Stage {
            duration: json_duration(d, &format!("{at}[{i}].duration"))?,
            target: json_count(t, &format!("{at}[{i}].target"))?,
        });
    }
    Ok(out)
}

/// An object of names to strings (numbers and booleans are written as text, as k6 does).
pub fn string_map(v: &Value, what: &str) -> Result<Vec<(String, String)>, String> {
    let o = v
        .as_object()
        .ok_or_else(|| format!("options.{what}: expected an object of names to strings"))?;
    o.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            Value::Number(n) => Ok((k.clone(), n.to_string())),
            Value::Bool(b) => Ok((k.clone(), b.to_string())),
            _ => Err(format!("options.{what}.{k}: expected a string, got {v}")),
        })
        .collect()
}

/// k6's way of printing durations ("30s", "1m30s", "500ms"): one implementation, in the
/// formatting module.
pub use volley_metrics::fmt::k6::go_duration as fmt_duration;

/// Arrival-rate stages in iterations per second: (`rate` per `time_unit`) → per second.
pub(crate) fn per_second(rate: f64, time_unit: Duration) -> f64 {
    rate / time_unit.as_secs_f64().max(1e-9)
}

/// `rate/unit` as k6 prints it ("10.00 iterations/s", "2.00 iterations/m").
pub(crate) fn fmt_rate(rate: f64, time_unit: Duration) -> String {
    let unit = match time_unit.as_millis() {
        1_000 => "s".to_string(),
        60_000 => "m".to_string(),
        3_600_000 => "h".to_string(),
        _ => fmt_duration(time_unit),
    };
    format!("{rate:.2} iterations/{unit}")
}

/// Arrival-rate `maxVUs` / `preAllocatedVUs` as k6 validates them.
pub(crate) fn arrival_vus(f: &Fields<'_>) -> Result<(u64, u64), String> {
    let pre = f.count("preAllocatedVUs")?.ok_or_else(|| {
        format!(
            "{}: the number of preAllocatedVUs is required",
            f.at("preAllocatedVUs")
        )
    })?;
    let max = f.count("maxVUs")?.unwrap_or(pre);
    if max < pre {
        return Err(format!(
            "{}: maxVUs ({max}) can't be less than preAllocatedVUs ({pre})",
            f.at("maxVUs")
        ));
    }
    if max == 0 {
        return Err(format!(
            "{}: at least one VU is needed (preAllocatedVUs or maxVUs must be more than 0)",
            f.at("maxVUs")
        ));
    }
    Ok((pre, max))
}

/// `vus` (1, > 0), `iterations` (1) and `maxDuration` (10m, ≥ 1s) of the iteration-based
/// executors.
pub(crate) fn iteration_fields(f: &Fields<'_>) -> Result<(u64, u64, Duration), String> {
    let vus = f.count("vus")?.unwrap_or(1);
    let iterations = f.count("iterations")?.unwrap_or(1);
    let max_duration = f.duration("maxDuration")?.unwrap_or(MAX_DURATION);
    if vus == 0 {
        return Err(format!(
            "{}: the number of VUs must be more than 0",
            f.at("vus")
        ));
    }
    if max_duration < Duration::from_secs(1) {
        return Err(format!(
            "{}: the maxDuration must be at least 1s",
            f.at("maxDuration")
        ));
    }
    Ok((vus, iterations, max_duration))
}

/// `timeUnit`, default 1s, must be more than 0.
pub(crate) fn time_unit(f: &Fields<'_>) -> Result<Duration, String> {
    let u = f.duration("timeUnit")?.unwrap_or(Duration::from_secs(1));
    if u.is_zero() {
        return Err(format!(
            "{}: the timeUnit must be more than 0",
            f.at("timeUnit")
        ));
    }
    Ok(u)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn common_fields_and_defaults() {
        let s = Scenario::from_json(
            "read",
            &json!({"executor": "constant-vus", "vus": 5, "duration": "10s",
                     "startTime": "2s", "exec": "read", "env": {"A": "1", "N": 2},
                     "tags": {"kind": "r"}}),
        )
        .unwrap();
        assert_eq!(s.name, "read");
        assert_eq!(s.start_time, Duration::from_secs(2));
        assert_eq!(s.graceful_stop, GRACEFUL_STOP);
        assert_eq!(s.exec_name(), "read");
        assert_eq!(s.env.get("N").map(String::as_str), Some("2"));
        assert_eq!(s.tags.get("kind").map(String::as_str), Some("r"));
        assert_eq!(s.max_end(), Duration::from_secs(2 + 10 + 30));
        assert_eq!(
            s.describe(),
            "5 looping VUs for 10s (exec: read, startTime: 2s, gracefulStop: 30s)"
        );
    }

    #[test]
    fn bad_configs_are_refused_with_k6s_words() {
        let e = Scenario::from_json("x", &json!({"executor": "warp-speed"})).unwrap_err();
        assert!(
            e.contains("executor type 'warp-speed' is not supported"),
            "{e}"
        );
        let e = Scenario::from_json("bad name!", &json!({"executor": "constant-vus"})).unwrap_err();
        assert!(e.contains("invalid scenario name"), "{e}");
        let e = Scenario::from_json("x", &json!({"vus": 1})).unwrap_err();
        assert!(e.contains("executor is required"), "{e}");
        let e = Scenario::from_json(
            "x",
            &json!({"executor": "constant-vus", "vus": 1, "duration": "1s", "duraton": "2s"}),
        )
        .unwrap_err();
        assert!(e.contains("unknown option 'duraton'"), "{e}");
        let e = Scenario::from_json(
            "x",
            &json!({"executor": "constant-vus", "duration": "1s", "exec": 3}),
        )
        .unwrap_err();
        assert!(e.contains("exec"), "{e}");
        assert!(parse_scenarios(&json!({})).is_err());
    }

    #[test]
    fn scenarios_are_ordered_by_start_time_then_name() {
        let v = json!({
            "b": {"executor": "constant-vus", "duration": "1s"},
            "late": {"executor": "constant-vus", "duration": "1s", "startTime": "5s"},
            "a": {"executor": "constant-vus", "duration": "1s"},
        });
        let names: Vec<String> = parse_scenarios(&v)
            .unwrap()
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, ["a", "b", "late"]);
    }
}
