//! Open-model pacing: when the k-th request of a run is *supposed* to start.
//!
//! A schedule is a start rate followed by linear ramps (`target:duration`, as k6 users write
//! stages). The k-th arrival is where the integral of the rate reaches k, so arrivals are
//! exact however late the sender runs: a slow server delays sends, never the schedule.

use std::time::Duration;

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RateSchedule {
    /// Rate at t = 0 (requests per second).
    start_rate: f64,
    /// (target rate at the end of the stage, stage length in seconds)
    stages: Vec<(f64, f64)>,
    /// k6's ramping-arrival-rate counts from one: arrival k (0-based) is due where the
    /// integral reaches k + 1, and the one due exactly at the end still starts, so a schedule
    /// whose integral is 34.5 runs 34 iterations, not 35 (lib/executor/ramping_arrival_rate.go).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    from_one: bool,
}

impl RateSchedule {
    /// A constant rate with no end of its own (the run's -z/-n ends it).
    pub fn constant(rate: f64) -> RateSchedule {
        RateSchedule {
            start_rate: rate,
            stages: Vec::new(),
            from_one: false,
        }
    }

    /// From a start rate and (target rate, stage length in seconds) ramps (arrival-rate
    /// executors).
    pub fn new(start_rate: f64, stages: Vec<(f64, f64)>) -> RateSchedule {
        RateSchedule {
            start_rate,
            stages,
            from_one: false,
        }
    }

    /// As [`RateSchedule::new`], with k6's ramping-arrival-rate counting: the first arrival is
    /// where the integral reaches 1 (not at t = 0) and one due exactly at the end still runs.
    pub fn counted_from_one(start_rate: f64, stages: Vec<(f64, f64)>) -> RateSchedule {
        RateSchedule {
            from_one: true,
            ..RateSchedule::new(start_rate, stages)
        }
    }

    /// Whether an arrival due exactly at the schedule's end is still started.
    pub fn starts_at_end(&self) -> bool {
        self.from_one
    }

    /// `100:10s,2000:30s,0:10s`: ramp linearly from `start_rate` to each target over each
    /// duration.
    pub fn parse_stages(start_rate: f64, spec: &str) -> Result<RateSchedule, String> {
        let mut stages = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (rate, dur) = part.split_once(':').ok_or_else(|| {
                format!("rate stage '{part}' should be RATE:DURATION, e.g. 100:10s")
            })?;
            let rate: f64 = rate
                .trim()
                .parse()
                .ok()
                .filter(|r: &f64| r.is_finite() && *r >= 0.0)
                .ok_or_else(|| {
                    format!("rate stage '{part}': '{rate}' is not a rate (requests/s ≥ 0)")
                })?;
            let dur =
                crate::parse_duration(dur).map_err(|e| format!("rate stage '{part}': {e}"))?;
            stages.push((rate, dur.as_secs_f64()));
        }
        if stages.is_empty() {
            return Err("--rate-stages is empty: give e.g. 100:10s,2000:30s,0:10s".into());
        }
        let total: f64 = stages.iter().map(|s| s.1).sum();
        crate::duration_from_secs(total).map_err(|e| format!("--rate-stages in all: {e}"))?;
        Ok(RateSchedule::new(start_rate, stages))
    }

    /// The mean rate it asks for (the constant rate, or arrivals / length for stages).
    pub fn mean_rate(&self) -> f64 {
        match (self.total_arrivals(), self.duration()) {
            (Some(n), Some(d)) if d > Duration::ZERO => n / d.as_secs_f64(),
            _ => self.start_rate,
        }
    }

    /// How long the schedule lasts; None for a constant rate.
    pub fn duration(&self) -> Option<Duration> {
        if self.stages.is_empty() {
            None
        } else {
            // Clamped: a schedule read back from a result file is not trusted to fit.
            Some(crate::clamp_secs(self.stages.iter().map(|s| s.1).sum()))
        }
    }

    /// Expected number of arrivals over the whole schedule (None if unbounded).
    pub fn total_arrivals(&self) -> Option<f64> {
        if self.stages.is_empty() {
            return None;
        }
        let mut r0 = self.start_rate;
        let mut n = 0.0;
        for &(r1, d) in &self.stages {
            n += (r0 + r1) / 2.0 * d;
            r0 = r1;
        }
        Some(n)
    }

    /// How many arrivals are due strictly before `t` seconds.
    pub fn arrivals_before(&self, t: f64) -> u64 {
        let n = self.integral_ceil(t);
        if self.from_one {
            n.saturating_sub(1)
        } else {
            n
        }
    }

    /// ⌈∫₀ᵗ rate⌉ (0 for t ≤ 0).
    fn integral_ceil(&self, t: f64) -> u64 {
        if t <= 0.0 {
            return 0;
        }
        let n = if self.stages.is_empty() {
            self.start_rate * t
        } else {
            let (mut t0, mut n0, mut r0) = (0.0, 0.0, self.start_rate);
            for &(r1, d) in &self.stages {
                if t < t0 + d {
                    let x = t - t0;
                    let a = if d > 0.0 { (r1 - r0) / (2.0 * d) } else { 0.0 };
                    return (n0 + r0 * x + a * x * x).ceil().max(0.0) as u64;
                }
                n0 += (r0 + r1) / 2.0 * d;
                t0 += d;
                r0 = r1;
            }
            n0
        };
        n.ceil().max(0.0) as u64
    }

    /// Seconds from the start at which arrival `k` (0-based) is due, or None if the schedule
    /// ends first.
    pub fn arrival(&self, k: u64) -> Option<f64> {
        let k = k as f64 + if self.from_one { 1.0 } else { 0.0 };
        if self.stages.is_empty() {
            return (self.start_rate > 0.0).then(|| k / self.start_rate);
        }
        let (mut t0, mut n0, mut r0) = (0.0, 0.0, self.start_rate);
        let last = self.stages.len() - 1;
        for (i, &(r1, d)) in self.stages.iter().enumerate() {
            // Arrivals in this stage: N(x) = n0 + r0 x + a x², a = (r1 - r0) / 2d.
            let n1 = n0 + (r0 + r1) / 2.0 * d;
            // Counted from one, the arrival landing on the end is k6's `i <= endCount`
            // (with slack for the float sum of the stages).
            let at_end = self.from_one && i == last && k <= n1 + n1.abs() * 1e-12;
            if k < n1 || at_end {
                let m = k - n0;
                if m <= 0.0 {
                    return Some(t0);
                }
                let a = if d > 0.0 { (r1 - r0) / (2.0 * d) } else { 0.0 };
                let disc = r0 * r0 + 4.0 * a * m;
                // Stable root of a x² + r0 x - m = 0 that is valid for a of either sign.
                let x = if disc > 0.0 {
                    2.0 * m / (r0 + disc.sqrt())
                } else {
                    d
                };
                return Some(t0 + x.clamp(0.0, d));
            }
            t0 += d;
            n0 = n1;
            r0 = r1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_rate_is_evenly_spaced() {
        let s = RateSchedule::constant(1000.0);
        assert_eq!(s.arrival(0), Some(0.0));
        assert!((s.arrival(1000).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(RateSchedule::constant(0.0).arrival(0), None);
    }

    #[test]
    fn ramps_deliver_the_integral() {
        let s = RateSchedule::parse_stages(0.0, "100:10s,100:10s,0:10s").unwrap();
        assert_eq!(s.duration(), Some(Duration::from_secs(30)));
        assert_eq!(s.total_arrivals(), Some(2000.0));
        // Count arrivals per window: the ramp-up delivers 500, the plateau 1000, the ramp-down 500.
        let mut counts = [0u32; 3];
        let mut k = 0;
        while let Some(t) = s.arrival(k) {
            counts[(t / 10.0).min(2.0) as usize] += 1;
            k += 1;
        }
        assert_eq!(k, 2000);
        assert_eq!(counts, [500, 1000, 500]);
        // Arrivals never go back in time.
        let mut prev = 0.0;
        for k in 0..2000 {
            let t = s.arrival(k).unwrap();
            assert!(t >= prev, "arrival {k} at {t} before {prev}");
            prev = t;
        }
        // Halfway up a 0→100/s ramp over 10 s, 125 arrivals have happened (∫ = 5²·10/2).
        assert!((s.arrival(125).unwrap() - 5.0).abs() < 1e-9);
    }

    #[test]
    fn arrivals_before_agrees_with_arrival() {
        for s in [
            RateSchedule::constant(333.0),
            RateSchedule::parse_stages(10.0, "100:3s,0:2s").unwrap(),
        ] {
            for k in [0u64, 1, 5, 77, 150] {
                if let Some(t) = s.arrival(k) {
                    assert_eq!(s.arrivals_before(t + 1e-9), k + 1, "{s:?} k={k}");
                }
            }
        }
    }

    /// Regression (#15): ramping-arrival-rate started its first iteration at t = 0 and ran
    /// ⌈∫rate⌉ iterations; k6 starts iteration n where the integral reaches n, so 4→9/s over
    /// 3 s then →1/s over 3 s (∫ = 34.5) runs 34 under k6 and ran 35.
    #[test]
    fn counted_from_one_as_k6s_ramping_arrival_rate() {
        let s = RateSchedule::counted_from_one(4.0, vec![(9.0, 3.0), (1.0, 3.0)]);
        assert!(s.starts_at_end());
        let n = (0..).take_while(|&k| s.arrival(k).is_some()).count();
        assert_eq!(n, 34);
        // The first arrival is where ∫ = 1: 4t + (5/6)t² = 1.
        let t = s.arrival(0).unwrap();
        assert!((4.0 * t + 5.0 / 6.0 * t * t - 1.0).abs() < 1e-9, "{t}");
        // An integer integral: the last arrival lands exactly on the end and is kept.
        let s = RateSchedule::counted_from_one(0.0, vec![(10.0, 5.0), (10.0, 10.0), (0.0, 5.0)]);
        assert_eq!(s.arrival(0), Some(1.0));
        assert!((s.arrival(149).unwrap() - 20.0).abs() < 1e-6);
        assert_eq!(s.arrival(150), None);
        assert_eq!(s.arrivals_before(1.0 + 1e-9), 1);
        // Quick mode and constant-arrival-rate still start at t = 0 and stop before the end.
        let c = RateSchedule::new(10.0, vec![(10.0, 2.0)]);
        assert!(!c.starts_at_end());
        assert_eq!(c.arrival(0), Some(0.0));
        assert_eq!(c.arrival(20), None);
    }

    #[test]
    fn stage_syntax_errors_say_what_is_wrong() {
        assert!(RateSchedule::parse_stages(0.0, "100")
            .unwrap_err()
            .contains("RATE:DURATION"));
        assert!(RateSchedule::parse_stages(0.0, "x:10s")
            .unwrap_err()
            .contains("'x'"));
        assert!(RateSchedule::parse_stages(0.0, "10:forever")
            .unwrap_err()
            .contains("duration"));
        assert!(RateSchedule::parse_stages(0.0, "").is_err());
    }
}
