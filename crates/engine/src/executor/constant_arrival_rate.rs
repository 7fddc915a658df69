//! `constant-arrival-rate`: iterations start at a fixed rate whatever the response times (an
//! open model). VUs come from a pool of `preAllocatedVUs`, grown up to `maxVUs` when all are
//! busy; an iteration that finds no VU is dropped and counted (`dropped_iterations`).

use super::{arrival_vus, fmt_duration, fmt_rate, per_second, time_unit, Fields};
use crate::rate::RateSchedule;
use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
pub struct ConstantArrivalRate {
    /// Iterations per `time_unit`.
    pub rate: f64,
    pub time_unit: Duration,
    pub duration: Duration,
    pub pre_allocated_vus: u64,
    pub max_vus: u64,
}

impl ConstantArrivalRate {
    pub(crate) fn from_json(f: &Fields<'_>) -> Result<ConstantArrivalRate, String> {
        let rate = match f.count("rate") {
            Ok(Some(r)) if r > 0 => r as f64,
            Ok(_) => {
                return Err(format!(
                    "{}: the iteration rate must be more than 0",
                    f.at("rate")
                ))
            }
            Err(e) => return Err(e),
        };
        let duration = f
            .duration("duration")?
            .ok_or_else(|| format!("{}: the duration is required", f.at("duration")))?;
        if duration < Duration::from_secs(1) {
            return Err(format!(
                "{}: the duration must be at least 1s",
                f.at("duration")
            ));
        }
        let time_unit = time_unit(f)?;
        let (pre_allocated_vus, max_vus) = arrival_vus(f)?;
        Ok(ConstantArrivalRate {
            rate,
            time_unit,
            duration,
            pre_allocated_vus,
            max_vus,
        })
    }

    /// Arrivals: `rate / time_unit` per second from the start, for `duration`.
    pub fn schedule(&self) -> RateSchedule {
        let r = per_second(self.rate, self.time_unit);
        RateSchedule::new(r, vec![(r, self.duration.as_secs_f64())])
    }

    pub(crate) fn describe(&self) -> (String, Vec<String>) {
        (
            format!(
                "{} for {}",
                fmt_rate(self.rate, self.time_unit),
                fmt_duration(self.duration)
            ),
            vec![format!(
                "maxVUs: {}-{}",
                self.pre_allocated_vus, self.max_vus
            )],
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::executor::{Executor, Scenario};
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn rate_per_time_unit_becomes_arrivals_per_second() {
        let s = Scenario::from_json(
            "c",
            &json!({"executor": "constant-arrival-rate", "rate": 30, "timeUnit": "1m",
                     "duration": "10s", "preAllocatedVUs": 2}),
        )
        .unwrap();
        let Executor::ConstantArrivalRate(e) = &s.executor else {
            panic!("{s:?}")
        };
        assert_eq!(e.max_vus, 2, "maxVUs defaults to preAllocatedVUs");
        let sched = s.executor.arrivals().unwrap();
        // 30/min = 0.5/s: 5 arrivals in 10 s, the first at 0, then every 2 s.
        assert_eq!(sched.total_arrivals(), Some(5.0));
        assert_eq!(sched.arrival(0), Some(0.0));
        assert_eq!(sched.arrival(1), Some(2.0));
        assert_eq!(sched.arrival(5), None);
        assert_eq!(s.executor.initial_vus(), 2);
        assert_eq!(s.executor.duration(), Duration::from_secs(10));
        assert_eq!(
            s.describe(),
            "30.00 iterations/m for 10s (maxVUs: 2-2, gracefulStop: 30s)"
        );
    }

    #[test]
    fn refuses_bad_vus_and_rates() {
        let base = |extra: serde_json::Value| {
            let mut v = json!({"executor": "constant-arrival-rate", "rate": 10, "duration": "5s",
                                "preAllocatedVUs": 5});
            for (k, x) in extra.as_object().unwrap() {
                v[k] = x.clone();
            }
            Scenario::from_json("c", &v)
        };
        assert!(base(json!({})).is_ok());
        let e = base(json!({"maxVUs": 2})).unwrap_err();
        assert!(
            e.contains("maxVUs (2) can't be less than preAllocatedVUs (5)"),
            "{e}"
        );
        let e = base(json!({"rate": 0})).unwrap_err();
        assert!(e.contains("rate must be more than 0"), "{e}");
        let e = base(json!({"timeUnit": "0s"})).unwrap_err();
        assert!(e.contains("timeUnit must be more than 0"), "{e}");
        let e = Scenario::from_json(
            "c",
            &json!({"executor": "constant-arrival-rate", "rate": 1, "duration": "5s"}),
        )
        .unwrap_err();
        assert!(e.contains("preAllocatedVUs is required"), "{e}");
    }
}
