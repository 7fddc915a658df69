//! `ramping-vus`: the number of looping VUs follows linear stages from `startVUs`.
//!
//! The VU count at time `t` follows k6's execution steps: the stage's linear interpolation,
//! rounded down while ramping up and up while ramping down. A VU with (1-based) index `i` in
//! the scenario is active while the count is ≥ `i`; when the ramp takes it away mid-iteration,
//! the iteration gets `gracefulRampDown` to finish.

use super::{fmt_duration, Fields, Stage};
use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
pub struct RampingVus {
    pub start_vus: u64,
    pub stages: Vec<Stage>,
    pub graceful_ramp_down: Duration,
}

impl RampingVus {
    /// The shortcut form (`stages` in options): starts from 1 VU as k6's does.
    pub fn new(start_vus: u64, stages: Vec<Stage>) -> RampingVus {
        RampingVus {
            start_vus,
            stages,
            graceful_ramp_down: super::GRACEFUL_STOP,
        }
    }

    pub(crate) fn from_json(f: &Fields<'_>) -> Result<RampingVus, String> {
        let stages = f.stages("stages")?.unwrap_or_default();
        if stages.is_empty() {
            return Err(format!(
                "{}: at least one stage has to be specified",
                f.at("stages")
            ));
        }
        let e = RampingVus {
            start_vus: f.count("startVUs")?.unwrap_or(1),
            stages,
            graceful_ramp_down: f
                .duration("gracefulRampDown")?
                .unwrap_or(super::GRACEFUL_STOP),
        };
        if e.max_vus() == 0 {
            return Err(format!(
                "{}: either startVUs or one of the stages' targets must be more than 0",
                f.at("stages")
            ));
        }
        if e.duration().is_zero() {
            return Err(format!(
                "{}: the stages' total duration must be more than 0",
                f.at("stages")
            ));
        }
        Ok(e)
    }

    pub fn max_vus(&self) -> u64 {
        self.stages
            .iter()
            .map(|s| s.target)
            .max()
            .unwrap_or(0)
            .max(self.start_vus)
    }

    pub fn duration(&self) -> Duration {
        self.stages.iter().map(|s| s.duration).sum()
    }

    pub(crate) fn describe(&self) -> (String, Vec<String>) {
        (
            format!(
                "Up to {} looping VUs for {} over {} stages",
                self.max_vus(),
                fmt_duration(self.duration()),
                self.stages.len()
            ),
            vec![format!(
                "gracefulRampDown: {}",
                fmt_duration(self.graceful_ramp_down)
            )],
        )
    }

    /// The VU count at `t` since the scenario's start, as k6's raw execution steps give it
    /// (lib/executor/ramping_vus.go): a ramp up adds VU `n` when the line reaches `n` (the line
    /// rounded down), a ramp down removes VU `n` only when the line reaches `n - 1` (rounded
    /// up), so a leaving VU keeps its slot until the next integer. Exact integer nanoseconds,
    /// as k6 computes the step times.
    pub fn target_at(&self, t: Duration) -> u64 {
        let mut from = self.start_vus;
        let mut at = Duration::ZERO;
        for s in &self.stages {
            if t < at + s.duration {
                let (e, d) = ((t - at).as_nanos(), s.duration.as_nanos());
                return if s.target >= from {
                    from + (e.saturating_mul(u128::from(s.target - from)) / d) as u64
                } else {
                    s.target
                        + ((d - e).saturating_mul(u128::from(from - s.target))).div_ceil(d) as u64
                };
            }
            at += s.duration;
            from = s.target;
        }
        from
    }

    /// The first time at or after `t` when VU `id` (1-based) is active, if any.
    pub fn next_active(&self, id: u64, t: Duration) -> Option<Duration> {
        if t < self.duration() && self.target_at(t) >= id {
            return Some(t);
        }
        let mut from = self.start_vus;
        let mut at = Duration::ZERO;
        for (i, s) in self.stages.iter().enumerate() {
            let end = at + s.duration;
            if end > t && s.target >= id && s.target > from {
                // Ramp up: from + e·(target - from)/D ≥ id  ⇔  e ≥ D·(id - from)/(target - from).
                let e = nanos_ceil(s.duration, id.saturating_sub(from), s.target - from);
                let when = (at + e).max(t);
                // The top VU of a ramp is reached exactly at the stage's end, which is where
                // the next stage (a plateau or ramp-down) starts with that many VUs; only the
                // end of the last stage is the end of the scenario.
                if when < end || (when == end && i + 1 < self.stages.len()) {
                    return Some(when);
                }
            }
            at = end;
            from = s.target;
        }
        None
    }

    /// When VU `id`, active at `t`, is ramped down (None: it stays until the end). A VU the
    /// last stage ramps down leaves at the very end, where k6 gives it the shorter of
    /// `gracefulRampDown` and `gracefulStop`.
    pub fn next_inactive(&self, id: u64, t: Duration) -> Option<Duration> {
        if self.target_at(t) < id {
            return Some(t);
        }
        let mut from = self.start_vus;
        let mut at = Duration::ZERO;
        for s in &self.stages {
            let end = at + s.duration;
            if end > t && s.target < id && s.target < from {
                // Ramp down: gone once target + ⌈(D - e)·(from - target)/D⌉ < id, that is
                // e ≥ D·(from - id + 1)/(from - target).
                let e = nanos_ceil(s.duration, (from + 1).saturating_sub(id), from - s.target);
                let when = (at + e).max(t);
                if when <= end {
                    return Some(when);
                }
            }
            at = end;
            from = s.target;
        }
        None
    }
}

/// ⌈d·num/den⌉ in whole nanoseconds (den > 0).
fn nanos_ceil(d: Duration, num: u64, den: u64) -> Duration {
    // Saturates rather than panics on absurd stage lengths.
    let n = (d.as_nanos().saturating_mul(u128::from(num))).div_ceil(u128::from(den));
    Duration::from_nanos(u64::try_from(n).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::{Executor, Scenario};
    use serde_json::json;

    fn stage(secs: u64, target: u64) -> Stage {
        Stage {
            duration: Duration::from_secs(secs),
            target,
        }
    }

    fn ramp() -> RampingVus {
        RampingVus::new(0, vec![stage(10, 10), stage(10, 10), stage(10, 0)])
    }

    #[test]
    fn targets_are_linear_and_truncated() {
        let e = ramp();
        assert_eq!(e.max_vus(), 10);
        assert_eq!(e.duration(), Duration::from_secs(30));
        assert_eq!(e.target_at(Duration::ZERO), 0);
        assert_eq!(e.target_at(Duration::from_millis(5500)), 5);
        assert_eq!(e.target_at(Duration::from_secs(15)), 10);
        assert_eq!(e.target_at(Duration::from_secs(25)), 5);
        assert_eq!(e.target_at(Duration::from_secs(40)), 0);
    }

    #[test]
    fn next_activation_is_when_the_ramp_reaches_the_vu() {
        let e = ramp();
        assert_eq!(
            e.next_active(5, Duration::ZERO),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            e.next_active(10, Duration::from_secs(12)),
            Some(Duration::from_secs(12))
        );
        // Past the ramp-down point of VU 8 nothing brings it back.
        assert_eq!(e.next_active(8, Duration::from_secs(29)), None);
        assert_eq!(e.next_active(1, Duration::from_secs(31)), None);
    }

    #[test]
    fn ramp_down_deactivates_the_highest_vus_first() {
        let e = ramp();
        // 10 → 0 over 20..30 s (k6's steps): VU 10 leaves at 21 s, VU 5 at 26 s, VU 1 at the
        // very end.
        assert_eq!(
            e.next_inactive(10, Duration::from_secs(15)),
            Some(Duration::from_secs(21))
        );
        assert_eq!(
            e.next_inactive(5, Duration::from_secs(15)),
            Some(Duration::from_secs(26))
        );
        assert_eq!(
            e.next_inactive(1, Duration::ZERO.max(Duration::from_secs(21))),
            Some(Duration::from_secs(30))
        );
        // Not active at all: inactive now.
        assert_eq!(
            e.next_inactive(9, Duration::from_secs(1)),
            Some(Duration::from_secs(1))
        );
        // A plateau to the end keeps its VUs.
        let flat = RampingVus::new(2, vec![stage(5, 2)]);
        assert_eq!(flat.next_inactive(2, Duration::ZERO), None);
    }

    /// Regression (#15): a ramp down removed each VU when the line reached its index, one step
    /// before k6 (which keeps it until the line reaches the next integer below), so the
    /// 5s→10, 10s@10, 5s→0 profile of `sleep(5.5)` ran 32 iterations where k6 runs 33.
    #[test]
    fn ramp_down_keeps_a_vu_until_the_line_reaches_the_next_integer() {
        let ms = Duration::from_millis;
        let ns = Duration::from_nanos;
        let e = RampingVus::new(1, vec![stage(5, 10), stage(10, 10), stage(5, 0)]);
        // Ramp up 1 → 10 over 5 s: VU n comes in when the line reaches n, at (n-1)·5/9 s.
        assert_eq!(e.target_at(ns(555_555_555)), 1);
        assert_eq!(e.target_at(ns(555_555_556)), 2);
        assert_eq!(e.next_active(4, Duration::ZERO), Some(ns(1_666_666_667)));
        // Ramp down 10 → 0 over 15..20 s: the count is the line rounded up, so VU n leaves
        // when the line reaches n - 1, at 15 + (11 - n)/2 s.
        assert_eq!(e.target_at(ms(15_499)), 10);
        assert_eq!(e.target_at(ms(15_500)), 9);
        assert_eq!(e.target_at(ms(17_250)), 6); // line at 5.5
        assert_eq!(e.target_at(ms(17_500)), 5); // line at 5
        assert_eq!(e.target_at(ms(19_999)), 1);
        assert_eq!(e.next_inactive(10, ms(6_000)), Some(ms(15_500)));
        assert_eq!(e.next_inactive(4, ms(6_000)), Some(ms(18_500)));
        assert_eq!(e.next_inactive(1, ms(6_000)), Some(ms(20_000)));
        // VU 4 starts at 1.667 s and, leaving at 18.5 s, starts a 4th 5.5 s iteration at
        // 18.17 s: 4 iterations as in k6 (3 when it left at 18 s).
        assert!(ns(1_666_666_667) + ms(3 * 5_500) < ms(18_500));
        // A ramp down straight from startVUs follows the same rule.
        let down = RampingVus::new(5, vec![stage(5, 0)]);
        assert_eq!(down.target_at(ms(999)), 5);
        assert_eq!(down.target_at(ms(1_000)), 4);
        assert_eq!(down.next_inactive(5, Duration::ZERO), Some(ms(1_000)));
        // A ramp down that is not the last stage: its bottom VU + 1 leaves at the stage's end.
        let dip = RampingVus::new(4, vec![stage(2, 2), stage(2, 2)]);
        assert_eq!(dip.next_inactive(3, Duration::ZERO), Some(ms(2_000)));
        assert_eq!(dip.target_at(ms(1_999)), 3);
        assert_eq!(dip.target_at(ms(2_000)), 2);
    }

    /// Regression: `4:2s,4:3s` ran 3 VUs (k6 runs 4): the top VU of a ramp is reached exactly
    /// at the stage's end, which was rejected, and the plateau after it was skipped.
    #[test]
    fn the_top_vu_of_a_ramp_starts_when_a_plateau_follows() {
        assert_eq!(
            ramp().next_active(10, Duration::ZERO),
            Some(Duration::from_secs(10))
        );
        let short = RampingVus::new(0, vec![stage(2, 4), stage(3, 4)]);
        assert_eq!(
            short.next_active(4, Duration::ZERO),
            Some(Duration::from_secs(2))
        );
        // A ramp that ends the test brings no VU in at its very end.
        let last = RampingVus::new(0, vec![stage(2, 4)]);
        assert_eq!(last.next_active(4, Duration::ZERO), None);
    }

    #[test]
    fn parses_and_validates() {
        let s = Scenario::from_json(
            "r",
            &json!({"executor": "ramping-vus", "stages": [{"duration": "5s", "target": 8}],
                     "gracefulRampDown": "2s"}),
        )
        .unwrap();
        let Executor::RampingVus(e) = &s.executor else {
            panic!("{s:?}")
        };
        assert_eq!(e.start_vus, 1);
        assert_eq!(e.graceful_ramp_down, Duration::from_secs(2));
        assert_eq!(s.executor.max_vus(), 8);
        assert_eq!(
            s.describe(),
            "Up to 8 looping VUs for 5s over 1 stages (gracefulRampDown: 2s, gracefulStop: 30s)"
        );
        let e = Scenario::from_json("r", &json!({"executor": "ramping-vus"})).unwrap_err();
        assert!(e.contains("at least one stage"), "{e}");
        let e = Scenario::from_json(
            "r",
            &json!({"executor": "ramping-vus", "startVUs": 0, "stages": [{"duration": "5s", "target": 0}]}),
        )
        .unwrap_err();
        assert!(e.contains("more than 0"), "{e}");
        let e = Scenario::from_json(
            "r",
            &json!({"executor": "ramping-vus", "stages": [{"duration": "5s"}]}),
        )
        .unwrap_err();
        assert!(e.contains("missing target"), "{e}");
    }
}
