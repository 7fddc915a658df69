//! Statistics over the runs of one benchmark: mean ± σ, median, min/max, outliers, and the
//! ratio between two benchmarks with its uncertainty.
//!
//! Outliers use the modified z-score (Iglewicz and Hoaglin): `0.6745 · |x − median| / MAD`
//! above 3.5. It is robust where a plain z-score is not: one very slow run inflates σ and
//! hides itself, but cannot move the median or the MAD much.

use serde::Serialize;

/// Modified z-score above which a run is an outlier.
pub const OUTLIER_Z: f64 = 3.5;
/// Relative standard deviation above which the spread is worth a warning.
pub const NOISY_CV: f64 = 0.10;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for one value.
    pub stddev: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Indices (run order) of the outliers.
    pub outliers: Vec<usize>,
}

impl Stats {
    pub fn of(v: &[f64]) -> Option<Stats> {
        if v.is_empty() {
            return None;
        }
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        let stddev = if n > 1 {
            (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let median = median(v);
        let mad = self::median(&v.iter().map(|x| (x - median).abs()).collect::<Vec<_>>());
        let outliers = if mad > 0.0 {
            v.iter()
                .enumerate()
                .filter(|(_, x)| 0.6745 * (*x - median).abs() / mad > OUTLIER_Z)
                .map(|(i, _)| i)
                .collect()
        } else {
            Vec::new()
        };
        Some(Stats {
            n,
            mean,
            stddev,
            median,
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            outliers,
        })
    }

    /// σ / mean (0 for a zero mean).
    pub fn cv(&self) -> f64 {
        if self.mean != 0.0 {
            self.stddev / self.mean.abs()
        } else {
            0.0
        }
    }
}

/// The median (`volley_report::stats::median`, the one `volley compare` uses); 0 for none.
pub fn median(v: &[f64]) -> f64 {
    volley_report::stats::median(v).unwrap_or(0.0)
}

/// `slow.mean / fast.mean` and its standard uncertainty by first-order error propagation
/// (relative errors add in quadrature).
pub fn ratio(slow: &Stats, fast: &Stats) -> Option<(f64, f64)> {
    if fast.mean <= 0.0 || slow.mean <= 0.0 {
        return None;
    }
    let r = slow.mean / fast.mean;
    let rel = ((slow.stddev / slow.mean).powi(2) + (fast.stddev / fast.mean).powi(2)).sqrt();
    Some((r, r * rel))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_sigma_median_and_range() {
        let s = Stats::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.mean, 5.0);
        assert!((s.stddev - 2.138).abs() < 1e-3, "{}", s.stddev);
        assert_eq!((s.median, s.min, s.max), (4.5, 2.0, 9.0));
        // MAD = 0.5, so 9 is 6.1 robust deviations out.
        assert_eq!(s.outliers, vec![7]);
        assert_eq!(Stats::of(&[3.0]).unwrap().stddev, 0.0);
        assert_eq!(Stats::of(&[]), None);
    }

    #[test]
    fn one_slow_run_is_flagged_as_an_outlier() {
        let mut v = vec![10.0, 10.2, 9.9, 10.1, 10.0, 9.8, 10.1, 10.0];
        v.push(30.0);
        let s = Stats::of(&v).unwrap();
        assert_eq!(s.outliers, vec![8]);
        assert!(s.cv() > NOISY_CV);
    }

    #[test]
    fn ratios_carry_their_uncertainty() {
        let a = Stats::of(&[20.0, 20.0, 20.0]).unwrap();
        let b = Stats::of(&[39.0, 40.0, 41.0]).unwrap();
        let (r, e) = ratio(&b, &a).unwrap();
        assert_eq!(r, 2.0);
        assert!((e - 2.0 * 1.0 / 40.0).abs() < 1e-9, "{e}");
    }
}
