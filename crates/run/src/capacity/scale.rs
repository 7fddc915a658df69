//! A plan's load scaled by a common factor, so a k6 script becomes a capacity test without
//! edits: `--find-max-rate` scales the arrival-rate scenarios' rates (and their VU pools),
//! `--sweep vus=…` the VU executors' VUs. Operates on the engine's scenarios, never on
//! JavaScript.

use volley_engine::executor::{check_vus, Executor, Scenario};

/// What to scale.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Knob {
    /// Arrival-rate scenarios: iterations per second.
    Rate,
    /// VU executors: VUs.
    Vus,
}

impl Knob {
    pub fn variable(self) -> &'static str {
        match self {
            Knob::Rate => "rate",
            Knob::Vus => "vus",
        }
    }
}

fn per_second(v: f64, unit: std::time::Duration) -> f64 {
    v / unit.as_secs_f64().max(1e-9)
}

/// The load the scenarios offer: the sum of the arrival-rate scenarios' peak rates per
/// second, or of the VU executors' most VUs.
pub fn load(scenarios: &[Scenario], knob: Knob) -> f64 {
    scenarios
        .iter()
        .map(|s| match (&s.executor, knob) {
            (Executor::ConstantArrivalRate(e), Knob::Rate) => per_second(e.rate, e.time_unit),
            (Executor::RampingArrivalRate(e), Knob::Rate) => {
                let peak = e
                    .stages
                    .iter()
                    .map(|s| s.target as f64)
                    .fold(e.start_rate, f64::max);
                per_second(peak, e.time_unit)
            }
            (Executor::ConstantVus(e), Knob::Vus) => e.vus as f64,
            (Executor::RampingVus(e), Knob::Vus) => {
                e.stages
                    .iter()
                    .map(|s| s.target)
                    .fold(e.start_vus, u64::max) as f64
            }
            (Executor::PerVuIterations(e), Knob::Vus) => e.vus as f64,
            (Executor::SharedIterations(e), Knob::Vus) => e.vus as f64,
            _ => 0.0,
        })
        .sum()
}

/// Scale the scenarios so their [`load`] becomes `target`. Arrival-rate scenarios get VU
/// pools grown by the same factor (k6 drops iterations when `maxVUs` run out). Errors name
/// what the script lacks, or the VU limit.
pub fn scale_to(scenarios: &mut [Scenario], knob: Knob, target: f64) -> Result<(), String> {
    let base = load(scenarios, knob);
    if base <= 0.0 {
        return Err(match knob {
            Knob::Rate => "the script has no arrival-rate scenario to scale (--find-max-rate \
                           scales constant-arrival-rate and ramping-arrival-rate scenarios)"
                .into(),
            Knob::Vus => "the script has no VU executor to scale (--sweep vus scales \
                          constant-vus, ramping-vus, per-vu-iterations and shared-iterations)"
                .into(),
        });
    }
    let f = target / base;
    // Past MAX_VUS the check below refuses the plan (the cast saturates).
    let vus = |v: u64| ((v as f64 * f).round() as u64).max(1);
    let pool = |v: u64| ((v as f64 * f.max(1.0)).ceil() as u64).max(1);
    for s in scenarios.iter_mut() {
        match (&mut s.executor, knob) {
            (Executor::ConstantArrivalRate(e), Knob::Rate) => {
                e.rate *= f;
                e.pre_allocated_vus = pool(e.pre_allocated_vus);
                e.max_vus = pool(e.max_vus).max(e.pre_allocated_vus);
            }
            (Executor::RampingArrivalRate(e), Knob::Rate) => {
                e.start_rate *= f;
                for st in &mut e.stages {
                    st.target = (st.target as f64 * f).round() as u64;
                }
                e.pre_allocated_vus = pool(e.pre_allocated_vus);
                e.max_vus = pool(e.max_vus).max(e.pre_allocated_vus);
            }
            (Executor::ConstantVus(e), Knob::Vus) => e.vus = vus(e.vus),
            (Executor::RampingVus(e), Knob::Vus) => {
                e.start_vus = (e.start_vus as f64 * f).round() as u64;
                for st in &mut e.stages {
                    st.target = (st.target as f64 * f).round() as u64;
                }
            }
            (Executor::PerVuIterations(e), Knob::Vus) => e.vus = vus(e.vus),
            (Executor::SharedIterations(e), Knob::Vus) => {
                e.vus = vus(e.vus).min(e.iterations.max(1))
            }
            _ => {}
        }
    }
    check_vus(scenarios)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use volley_engine::executor::{ConstantArrivalRate, ConstantVus};

    fn car(rate: f64, unit_s: u64, max_vus: u64) -> Scenario {
        Scenario::new(
            "a",
            Executor::ConstantArrivalRate(ConstantArrivalRate {
                rate,
                time_unit: Duration::from_secs(unit_s),
                duration: Duration::from_secs(10),
                pre_allocated_vus: max_vus / 2,
                max_vus,
            }),
        )
    }

    #[test]
    fn arrival_rates_scale_by_one_factor_and_their_vu_pools_grow_with_them() {
        let mut s = vec![
            car(100.0, 1, 20),
            car(60.0, 60, 4),
            Scenario::new(
                "v",
                Executor::ConstantVus(ConstantVus {
                    vus: 5,
                    duration: Duration::from_secs(5),
                }),
            ),
        ];
        assert_eq!(load(&s, Knob::Rate), 101.0);
        scale_to(&mut s, Knob::Rate, 404.0).unwrap();
        assert!((load(&s, Knob::Rate) - 404.0).abs() < 1e-9);
        let Executor::ConstantArrivalRate(e) = &s[0].executor else {
            panic!()
        };
        assert_eq!((e.rate, e.max_vus, e.pre_allocated_vus), (400.0, 80, 40));
        // VU executors are left alone by a rate search, and scaled by a VU sweep.
        assert_eq!(load(&s, Knob::Vus), 5.0);
        scale_to(&mut s, Knob::Vus, 50.0).unwrap();
        assert_eq!(load(&s, Knob::Vus), 50.0);
    }

    #[test]
    fn a_script_without_the_scaled_kind_of_scenario_is_told_so() {
        let mut s = vec![car(10.0, 1, 2)];
        let e = scale_to(&mut s, Knob::Vus, 10.0).unwrap_err();
        assert!(e.contains("no VU executor"), "{e}");
        let e = scale_to(&mut s, Knob::Rate, 1e12).unwrap_err();
        assert!(e.contains("more than the limit"), "{e}");
    }
}
