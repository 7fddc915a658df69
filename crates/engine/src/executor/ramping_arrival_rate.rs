//! `ramping-arrival-rate`: like `constant-arrival-rate`, with the rate following linear stages
//! from `startRate`. As in k6, the n-th iteration (from 1) is due where the integral of the rate
//! reaches n, up to and including the end ([`RateSchedule::counted_from_one`]), so the schedule
//! holds however late iterations run.

use super::{arrival_vus, fmt_duration, fmt_rate, per_second, time_unit, Fields, Stage};
use crate::rate::RateSchedule;
use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
pub struct RampingArrivalRate {
    /// Iterations per `time_unit` at the start.
    pub start_rate: f64,
    pub time_unit: Duration,
    /// Targets in iterations per `time_unit`.
    pub stages: Vec<Stage>,
    pub pre_allocated_vus: u64,
    pub max_vus: u64,
}

impl RampingArrivalRate {
    pub(crate) fn from_json(f: &Fields<'_>) -> Result<RampingArrivalRate, String> {
        let stages = f.stages("stages")?.unwrap_or_default();
        if stages.is_empty() {
            return Err(format!(
                "{}: at least one stage has to be specified",
                f.at("stages")
            ));
        }
        let start_rate = f.count("startRate")?.unwrap_or(0) as f64;
        let time_unit = time_unit(f)?;
        let (pre_allocated_vus, max_vus) = arrival_vus(f)?;
        let e = RampingArrivalRate {
            start_rate,
            time_unit,
            stages,
            pre_allocated_vus,
            max_vus,
        };
        if e.duration().is_zero() {
            return Err(format!(
                "{}: the stages' total duration must be more than 0",
                f.at("stages")
            ));
        }
        Ok(e)
    }

    pub fn duration(&self) -> Duration {
        self.stages.iter().map(|s| s.duration).sum()
    }

    /// Arrivals per second along the stages.
    pub fn schedule(&self) -> RateSchedule {
        let stages = self
            .stages
            .iter()
            .map(|s| {
                (
                    per_second(s.target as f64, self.time_unit),
                    s.duration.as_secs_f64(),
                )
            })
            .collect();
        RateSchedule::counted_from_one(per_second(self.start_rate, self.time_unit), stages)
    }

    pub(crate) fn describe(&self) -> (String, Vec<String>) {
        let top = self
            .stages
            .iter()
            .map(|s| s.target as f64)
            .fold(self.start_rate, f64::max);
        (
            format!(
                "Up to {} for {} over {} stages",
                fmt_rate(top, self.time_unit),
                fmt_duration(self.duration()),
                self.stages.len()
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
    use crate::executor::Scenario;
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn stages_deliver_their_integral() {
        let s = Scenario::from_json(
            "r",
            &json!({"executor": "ramping-arrival-rate", "startRate": 0, "timeUnit": "1s",
                     "preAllocatedVUs": 1, "maxVUs": 4,
                     "stages": [{"duration": "10s", "target": 100}, {"duration": "10s", "target": 100}]}),
        )
        .unwrap();
        let sched = s.executor.arrivals().unwrap();
        // Ramp 0→100/s over 10 s (500) + plateau 100/s for 10 s (1000).
        assert_eq!(sched.total_arrivals(), Some(1500.0));
        assert_eq!(s.executor.duration(), Duration::from_secs(20));
        assert_eq!((s.executor.initial_vus(), s.executor.max_vus()), (1, 4));
        assert_eq!(
            s.describe(),
            "Up to 100.00 iterations/s for 20s over 2 stages (maxVUs: 1-4, gracefulStop: 30s)"
        );
    }

    #[test]
    fn needs_stages_and_vus() {
        let e = Scenario::from_json(
            "r",
            &json!({"executor": "ramping-arrival-rate", "preAllocatedVUs": 1}),
        )
        .unwrap_err();
        assert!(e.contains("at least one stage"), "{e}");
        let e = Scenario::from_json(
            "r",
            &json!({"executor": "ramping-arrival-rate", "preAllocatedVUs": 0,
                     "stages": [{"duration": "1s", "target": 1}]}),
        )
        .unwrap_err();
        assert!(e.contains("at least one VU"), "{e}");
    }
}
