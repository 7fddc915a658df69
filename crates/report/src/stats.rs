//! The statistics behind `volley compare`'s verdicts (method: `docs/compare.md`).
//!
//! Per-interval values of a run (one per second) are not normally distributed (latency
//! percentiles are skewed, rates drift), so the comparison uses a rank test: the
//! Mann-Whitney U test, two-sided: exact for small samples without ties (where the normal
//! approximation is too eager: it calls 3 against 3 fully separated values significant at
//! p = 0.0495, while the exact p is 0.1), otherwise the normal approximation with the tie
//! correction.
//!
//! [`judge`] is the one rule that turns two samples into "they differ" or "within noise":
//! `volley compare` applies it to two runs' per-second values, the A/B comparison of
//! `volley http --vs` ([`crate::ab`]) to the pooled per-second values of each side's rounds.

/// Largest total sample size for which the exact distribution is used.
pub const EXACT_MAX: usize = 40;

/// Two-sided p-value of the Mann-Whitney U test of `a` against `b`; `None` when either side
/// is empty. All values equal (zero variance of ranks) gives 1.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<f64> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&v| (v, true))
        .chain(b.iter().map(|&v| (v, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    // Average ranks over ties; accumulate the tie term Σ(t³ - t).
    let mut r1 = 0.0;
    let mut ties = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        let rank = (i + j) as f64 / 2.0 + 1.0;
        r1 += rank * all[i..=j].iter().filter(|x| x.1).count() as f64;
        ties += t * t * t - t;
        i = j + 1;
    }
    let (n1f, n2f, nf) = (n1 as f64, n2 as f64, n as f64);
    let u1 = r1 - n1f * (n1f + 1.0) / 2.0;
    if ties == 0.0 && n <= EXACT_MAX {
        let u = u1.min(n1f * n2f - u1).round() as usize;
        return Some((2.0 * exact_cdf(n1, n2, u)).min(1.0));
    }
    let mu = n1f * n2f / 2.0;
    let var = n1f * n2f / 12.0 * ((nf + 1.0) - ties / (nf * (nf - 1.0)));
    if var <= 0.0 || !var.is_finite() {
        return Some(1.0);
    }
    let z = (u1 - mu) / var.sqrt();
    Some(erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0))
}

/// P(U ≤ u) under the null hypothesis, for sample sizes `n1`, `n2` without ties: the number
/// of orderings with U = k follows c(m, n, k) = c(m-1, n, k-n) + c(m, n-1, k).
fn exact_cdf(n1: usize, n2: usize, u: usize) -> f64 {
    // prev[m] is the distribution of U for sizes (m, n - 1); start from n = 0 (U = 0).
    let mut prev: Vec<Vec<f64>> = (0..=n1).map(|_| vec![1.0]).collect();
    for n in 1..=n2 {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(n1 + 1);
        cur.push(vec![1.0]);
        for m in 1..=n1 {
            let d: Vec<f64> = (0..=m * n)
                .map(|k| {
                    let a = k.checked_sub(n).and_then(|j| cur[m - 1].get(j)).copied();
                    a.unwrap_or(0.0) + prev[m].get(k).copied().unwrap_or(0.0)
                })
                .collect();
            cur.push(d);
        }
        prev = cur;
    }
    let d = &prev[n1];
    let total: f64 = d.iter().sum();
    d.iter().take(u + 1).sum::<f64>() / total
}

/// Complementary error function (Numerical Recipes' Chebyshev fit, |relative error| < 1.2e-7),
/// enough for p-values.
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    Some(if s.len().is_multiple_of(2) {
        (s[m - 1] + s[m]) / 2.0
    } else {
        s[m]
    })
}

/// Robust relative spread of `v`: 1.4826 × MAD / |median| (the MAD scaled to estimate a
/// standard deviation), or with `absolute` the scaled MAD itself. `None` for fewer than 2
/// values or a zero median in relative mode.
pub fn robust_spread(v: &[f64], absolute: bool) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let m = median(v)?;
    let dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    let mad = 1.4826 * median(&dev)?;
    if absolute {
        Some(mad)
    } else if m != 0.0 {
        Some(mad / m.abs())
    } else {
        None
    }
}

/// Hodges-Lehmann estimate of the shift `b - a`: the median of all pairwise differences. Its
/// sign says which way the rank test's difference goes.
pub fn hodges_lehmann(a: &[f64], b: &[f64]) -> Option<f64> {
    let d: Vec<f64> = a
        .iter()
        .flat_map(|x| b.iter().map(move |y| y - x))
        .collect();
    median(&d)
}

/// The thresholds of [`judge`].
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// Significance level of the two-sided rank test.
    pub alpha: f64,
    /// Smallest change that can count: relative (0.05 = 5 %), or in the values' own unit
    /// when `points` (percentage points of an error rate).
    pub floor: f64,
    /// Changes are differences (`new - base`, e.g. percentage points), not ratios.
    pub points: bool,
    /// Fewest values per side for the test to be run at all.
    pub min_n: usize,
}

/// What [`judge`] found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Judgement {
    /// `new / base - 1`, or `new - base` with [`Rule::points`]; `None` from a zero base.
    pub change: Option<f64>,
    /// Two-sided Mann-Whitney p of the samples; `None` with fewer than `min_n` on a side.
    pub p_value: Option<f64>,
    /// The larger robust spread of the two samples (and of `extra_noise`), in the change's
    /// unit: a change must exceed it to count.
    pub noise: Option<f64>,
    /// The samples differ: significant, beyond the floor and the noise, and the rank test's
    /// direction (Hodges-Lehmann shift) agrees with `new` against `base`.
    pub differs: bool,
}

/// Judge whether `new` differs from `base` beyond noise, from samples `xs` (base side) and
/// `ys` (new side). `extra_noise` is a further spread the change must exceed (the A/B
/// comparison's round-to-round spread). Method: `docs/compare.md`.
pub fn judge(
    xs: &[f64],
    ys: &[f64],
    base: f64,
    new: f64,
    rule: Rule,
    extra_noise: Option<f64>,
) -> Judgement {
    let change = if rule.points {
        Some(new - base)
    } else if base != 0.0 {
        Some(new / base - 1.0)
    } else {
        None
    };
    let enough = xs.len() >= rule.min_n && ys.len() >= rule.min_n;
    let p_value = if enough { mann_whitney(xs, ys) } else { None };
    let noise = [
        robust_spread(xs, rule.points),
        robust_spread(ys, rule.points),
        extra_noise,
    ]
    .into_iter()
    .flatten()
    .reduce(f64::max);
    let big = match change {
        Some(c) => c.abs() >= rule.floor.max(noise.unwrap_or(0.0)),
        None => new != base,
    };
    let shift = hodges_lehmann(xs, ys).unwrap_or(0.0);
    let agree = (shift > 0.0 && new > base) || (shift < 0.0 && new < base);
    Judgement {
        change,
        p_value,
        noise,
        differs: p_value.is_some_and(|p| p < rule.alpha) && big && agree,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfc_matches_known_values() {
        assert!((erfc(0.0) - 1.0).abs() < 1e-6);
        assert!((erfc(1.0) - 0.157_299_2).abs() < 1e-6);
        assert!((erfc(-1.0) - 1.842_700_8).abs() < 1e-6);
        // Two-sided p for z = 1.96 is 0.05.
        assert!((erfc(1.96 / std::f64::consts::SQRT_2) - 0.05).abs() < 1e-3);
    }

    #[test]
    fn separated_samples_are_significant() {
        let a = [1.0, 1.1, 0.9, 1.05, 0.95];
        let b = [2.0, 2.1, 1.9, 2.05, 1.95];
        let p = mann_whitney(&a, &b).unwrap();
        // U = 0, n1 = n2 = 5, exact: 2 / C(10, 5) = 2 / 252.
        assert!((p - 2.0 / 252.0).abs() < 1e-12, "{p}");
        assert_eq!(mann_whitney(&b, &a).unwrap(), p);
    }

    #[test]
    fn small_samples_use_the_exact_distribution() {
        // 3 against 3, fully separated: exact p = 2 / C(6, 3) = 0.1, not significant.
        let p = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!((p - 0.1).abs() < 1e-12, "{p}");
        // 4 against 4 with one swap: U = 1, P(U ≤ 1) = 2 / 70, two-sided 0.0571.
        let p = mann_whitney(&[1.0, 2.0, 3.0, 5.0], &[4.0, 6.0, 7.0, 8.0]).unwrap();
        assert!((p - 4.0 / 70.0).abs() < 1e-12, "{p}");
        // Exact and normal approximation agree for larger samples (n = 40 vs 60 in total).
        let a: Vec<f64> = (0..30).map(|i| i as f64).collect();
        let b: Vec<f64> = (0..30).map(|i| i as f64 + 10.5).collect();
        let exact = mann_whitney(&a[..20], &b[..20]).unwrap();
        let approx = mann_whitney(&a, &b).unwrap();
        assert!(exact < 0.01 && approx < 0.001, "{exact} {approx}");
    }

    #[test]
    fn interleaved_samples_are_not() {
        let a = [1.0, 3.0, 5.0, 7.0];
        let b = [2.0, 4.0, 6.0, 8.0];
        assert!(mann_whitney(&a, &b).unwrap() > 0.5);
    }

    #[test]
    fn ties_are_corrected_and_constant_samples_give_one() {
        assert_eq!(mann_whitney(&[0.0; 4], &[0.0; 5]), Some(1.0));
        // R1 = 13, U = 3, tie term Σ(t³-t) = 12: σ² = 16/12 · (9 - 12/56), z = -1.518,
        // p = 0.1292.
        let p = mann_whitney(&[1.0, 2.0, 2.0, 3.0], &[2.0, 3.0, 3.0, 4.0]).unwrap();
        assert!((p - 0.1292).abs() < 1e-3, "{p}");
        assert_eq!(mann_whitney(&[], &[1.0]), None);
    }

    #[test]
    fn medians_and_shift() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(hodges_lehmann(&[1.0, 2.0], &[11.0, 12.0]), Some(10.0));
        // Deviations from 10: 1, 0, 1, 2 → MAD 1 → 1.4826 / 10.
        let s = robust_spread(&[9.0, 10.0, 11.0, 12.0, 10.0], false).unwrap();
        assert!((s - 0.14826).abs() < 1e-9, "{s}");
        assert_eq!(robust_spread(&[1.0], false), None);
        assert_eq!(robust_spread(&[0.0, 0.0], true), Some(0.0));
    }

    #[test]
    fn judge_needs_significance_size_and_agreement() {
        let rule = Rule {
            alpha: 0.05,
            floor: 0.05,
            points: false,
            min_n: 4,
        };
        let a = [10.0, 10.1, 9.9, 10.05, 9.95];
        let b = [12.0, 12.1, 11.9, 12.05, 11.95];
        let j = judge(&a, &b, 10.0, 12.0, rule, None);
        assert!(j.differs, "{j:?}");
        assert!((j.change.unwrap() - 0.2).abs() < 1e-12);
        // Separated but only 1 % apart: below the 5 % floor.
        let c = [10.1, 10.11, 10.12, 10.13, 10.14];
        assert!(!judge(&a, &c, 10.0, 10.1, rule, None).differs);
        // A round-to-round spread larger than the change keeps it within noise.
        assert!(!judge(&a, &b, 10.0, 12.0, rule, Some(0.3)).differs);
        // Too few values: no test, no verdict.
        let j = judge(&a[..3], &b[..3], 10.0, 12.0, rule, None);
        assert_eq!(j.p_value, None);
        assert!(!j.differs);
        // The totals say "up" while the samples say "down": no verdict.
        assert!(!judge(&b, &a, 10.0, 12.0, rule, None).differs);
    }
}
