//! A scenario as k6 writes its config (`volley inspect`): the executor's own fields and the
//! common ones, durations in Go's form ("30s", "1m30s").

use serde_json::{json, Map, Value};
use volley_engine::executor::{fmt_duration, Executor, Scenario, Stage};

fn stages(s: &[Stage]) -> Value {
    s.iter()
        .map(|s| json!({"duration": fmt_duration(s.duration), "target": s.target}))
        .collect()
}

/// A rate as k6 prints it: whole numbers without a fraction.
fn rate(r: f64) -> Value {
    if r.fract() == 0.0 && r.abs() < 9e15 {
        json!(r as i64)
    } else {
        json!(r)
    }
}

pub(super) fn to_json(s: &Scenario) -> Value {
    let d = fmt_duration;
    let mut o = match &s.executor {
        Executor::ConstantVus(e) => json!({"vus": e.vus, "duration": d(e.duration)}),
        Executor::RampingVus(e) => json!({
            "startVUs": e.start_vus,
            "stages": stages(&e.stages),
            "gracefulRampDown": d(e.graceful_ramp_down),
        }),
        Executor::SharedIterations(e) => json!({
            "vus": e.vus, "iterations": e.iterations, "maxDuration": d(e.max_duration),
        }),
        Executor::PerVuIterations(e) => json!({
            "vus": e.vus, "iterations": e.iterations, "maxDuration": d(e.max_duration),
        }),
        Executor::ConstantArrivalRate(e) => json!({
            "rate": rate(e.rate),
            "timeUnit": d(e.time_unit),
            "duration": d(e.duration),
            "preAllocatedVUs": e.pre_allocated_vus,
            "maxVUs": e.max_vus,
        }),
        Executor::RampingArrivalRate(e) => json!({
            "startRate": rate(e.start_rate),
            "timeUnit": d(e.time_unit),
            "stages": stages(&e.stages),
            "preAllocatedVUs": e.pre_allocated_vus,
            "maxVUs": e.max_vus,
        }),
    };
    let m: &mut Map<String, Value> = o.as_object_mut().expect("built as an object");
    m.insert("executor".into(), s.executor.name().into());
    m.insert("startTime".into(), d(s.start_time).into());
    m.insert("gracefulStop".into(), d(s.graceful_stop).into());
    m.insert("exec".into(), s.exec_name().into());
    m.insert("env".into(), json!(s.env));
    m.insert("tags".into(), json!(s.tags));
    o
}
