//! The knee of a sweep: where the target stops absorbing more load gracefully. Definition
//! (docs/capacity.md has the math): with steps in order of load `L`, throughput `X` and p99
//! latency `P`, step *i* bends when
//!
//! - (open model) `X_i < 0.9 · L_i`: the target no longer follows the offered rate. Its
//!   saturated throughput `X_i` is then the capacity, and the knee is the step whose offered
//!   load is nearest to it; or
//! - latency grows much faster than throughput: `P_i / P_{i-1} − 1 > K · max(X_i / X_{i-1} − 1,
//!   0.01)` with `K` = 3, `P_i ≥ 2 · P_0` (well above the unloaded latency) and `P_i /
//!   P_{i-1} − 1 > 0.25`, and the next step (if any) keeps it (`P_{i+1} ≥ 0.8 · P_i`), so a
//!   single noisy second cannot make a knee. The knee is that step.

use volley_metrics::capacity::Step;

/// How many times faster (relatively) p99 must grow than throughput.
pub const K: f64 = 3.0;

/// The knee's index, if the steps bend at all. `open`: the load is an offered rate.
pub fn knee(steps: &[Step], open: bool) -> Option<usize> {
    let p0 = steps.first()?.p99_ms;
    for i in 1..steps.len() {
        let (a, b) = (&steps[i - 1], &steps[i]);
        if open && b.throughput < super::judge::SUSTAINED * b.load {
            let sat = b.throughput;
            return (0..=i).min_by(|x, y| {
                let d = |j: usize| (steps[j].load - sat).abs();
                d(*x).total_cmp(&d(*y))
            });
        }
        if a.p99_ms <= 0.0 || a.throughput <= 0.0 {
            continue;
        }
        let dp = b.p99_ms / a.p99_ms - 1.0;
        let dx = b.throughput / a.throughput - 1.0;
        let kept = steps.get(i + 1).is_none_or(|c| c.p99_ms >= 0.8 * b.p99_ms);
        if dp > 0.25 && b.p99_ms >= 2.0 * p0 && dp > K * dx.max(0.01) && kept {
            return Some(i);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::tests::step;

    /// An M/D/c-like target of capacity `cap`: latency flat, then climbing.
    fn open_sweep(cap: f64, loads: &[f64]) -> Vec<Step> {
        loads
            .iter()
            .map(|&l| {
                let x = l.min(cap);
                let p99 = if l < cap * 0.95 {
                    11.0
                } else {
                    11.0 + (l - cap * 0.95) * 3.0
                };
                step(l, x, p99, 0.0)
            })
            .collect()
    }

    #[test]
    fn an_open_sweep_bends_where_throughput_stops_following_the_offered_rate() {
        let loads: Vec<f64> = (1..=8).map(|i| i as f64 * 100.0).collect();
        let k = knee(&open_sweep(390.0, &loads), true).unwrap();
        assert_eq!(loads[k], 400.0);
        let k = knee(&open_sweep(420.0, &loads), true).unwrap();
        assert_eq!(loads[k], 400.0);
        assert_eq!(knee(&open_sweep(10_000.0, &loads), true), None);
    }

    #[test]
    fn a_latency_spike_that_falls_back_is_noise_not_a_knee() {
        let mut s: Vec<Step> = (1..=5)
            .map(|i| step(i as f64 * 10.0, i as f64 * 100.0, 10.0, 0.0))
            .collect();
        s[2].p99_ms = 40.0;
        assert_eq!(knee(&s, false), None);
        // Closed model: throughput flattens while latency grows with the connections.
        let mut c: Vec<Step> = (1..=6)
            .map(|i| step(i as f64 * 10.0, i as f64 * 100.0, 10.0, 0.0))
            .collect();
        for (i, st) in c.iter_mut().enumerate().skip(3) {
            st.throughput = 300.0;
            st.p99_ms = 10.0 * (i as f64 - 1.0);
        }
        assert_eq!(knee(&c, false), Some(3));
    }
}
