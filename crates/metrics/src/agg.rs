//! The four k6 metric kinds as aggregates that can be recorded into and merged exactly.

use crate::hist::{self, TrendHist};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricKind {
    Counter,
    Gauge,
    Rate,
    Trend,
}

/// What a metric's numbers mean, for display: k6's `isTime` and `data` contains.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Milliseconds (trends store microseconds).
    Time,
    /// Bytes.
    Data,
    #[default]
    Default,
}

/// One metric's aggregate over some span of time.
#[derive(Clone, Debug)]
pub enum Agg {
    Counter {
        sum: f64,
        n: u64,
    },
    Gauge {
        last: f64,
        min: f64,
        max: f64,
        n: u64,
    },
    Rate {
        trues: u64,
        total: u64,
    },
    Trend(Box<TrendAgg>),
}

/// Most samples a trend keeps exactly ([`TrendAgg::samples`]): 2,048 values are 16 KiB, the
/// size of the smallest HDR array a busy series holds anyway, and enough for the small
/// samples where k6's interpolated percentiles and a histogram's differ most.
pub const EXACT_MAX: usize = 2048;

/// A trend keeps an HDR histogram for percentiles plus exact min, max and sum. The histogram
/// stays a short sorted list while the trend has few distinct values ([`TrendHist`]), so
/// rarely-hit series (one per URL, say) cost bytes rather than an HDR array each.
///
/// While a trend has at most [`EXACT_MAX`] samples it also keeps them, in arrival order, so
/// its percentiles and mean are k6's to the last bit (k6 keeps every sample); past that the
/// buffer is dropped and percentiles come from the histogram.
#[derive(Clone, Debug)]
pub struct TrendAgg {
    pub hist: TrendHist,
    pub count: u64,
    pub sum: f64,
    pub min: f64,
    pub max: f64,
    /// Every sample, in arrival order, while `samples.len() == count` (at most
    /// [`EXACT_MAX`]); empty once the trend outgrew it (or saw a non-finite value).
    pub samples: Vec<f64>,
}

impl TrendAgg {
    pub fn new() -> Self {
        TrendAgg {
            hist: TrendHist::new(),
            count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            samples: Vec::new(),
        }
    }

    /// Keep `v` while the trend is still exact and small; drop the buffer when it outgrows
    /// [`EXACT_MAX`]. Called before `count` is incremented.
    #[inline]
    fn keep(&mut self, v: f64) {
        if self.samples.len() as u64 == self.count {
            if self.samples.len() < EXACT_MAX && v.is_finite() {
                self.samples.push(v);
            } else {
                self.samples = Vec::new();
            }
        }
    }

    /// The exact samples (arrival order), when the trend still has them all.
    pub fn exact(&self) -> Option<&[f64]> {
        (self.samples.len() as u64 == self.count).then_some(&self.samples[..])
    }

    /// Record a time in microseconds: the engine's hot path, no float parsing of units.
    #[inline]
    pub fn record_us(&mut self, us: u64) {
        self.hist.record(us);
        let v = us as f64 / hist::SCALE;
        self.keep(v);
        self.count += 1;
        self.sum += v;
        if v < self.min {
            self.min = v;
        }
        if v > self.max {
            self.max = v;
        }
    }

    pub fn add(&mut self, v: f64) {
        self.hist.record(hist::to_stored(v));
        self.keep(v);
        self.count += 1;
        self.sum += v;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Add a later or parallel span: exact samples concatenate while both sides have theirs
    /// and the total fits [`EXACT_MAX`].
    pub fn merge(&mut self, o: &TrendAgg) {
        match (self.exact(), o.exact()) {
            (Some(a), Some(b)) if a.len() + b.len() <= EXACT_MAX => {
                self.samples.extend_from_slice(b)
            }
            _ => self.samples = Vec::new(),
        }
        self.hist.add(&o.hist);
        self.count += o.count;
        self.sum += o.sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    /// The mean; from the exact samples summed in arrival order while there are few, as k6
    /// sums them (partial sums per interval and worker can differ in the last bit).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        match self.exact() {
            Some(s) => s.iter().sum::<f64>() / self.count as f64,
            None => self.sum / self.count as f64,
        }
    }

    /// Percentile `p` (0..=100) as k6 computes it: linear interpolation between the sorted
    /// samples at ranks ⌊q(n−1)⌋ and ⌈q(n−1)⌉ (q = p/100). Exact while the trend keeps its
    /// samples; past that, the same formula over the histogram with each bucket's samples
    /// spread evenly across it (within 0.05 % of the exact value).
    pub fn percentile(&self, p: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let q = (p / 100.0).clamp(0.0, 1.0);
        match self.exact() {
            Some(s) => k6_percentile(s, q),
            // Buckets have a width; clamp into the exact observed range. Not `f64::clamp`: it
            // panics when min > max, which a hand-edited or corrupt result file can say.
            None => (hist::interpolated(&self.hist, q) / hist::SCALE)
                .max(self.min)
                .min(self.max),
        }
    }

    /// Several percentiles at once (as [`TrendAgg::percentile`]): the exact samples are
    /// sorted once, not selected per percentile (the per-second series asks for four).
    pub fn percentiles<const N: usize>(&self, ps: [f64; N]) -> [f64; N] {
        match self.exact() {
            Some(s) if self.count > 1 => {
                let mut v = s.to_vec();
                v.sort_unstable_by(f64::total_cmp);
                ps.map(|p| {
                    let i = (p / 100.0).clamp(0.0, 1.0) * (v.len() as f64 - 1.0);
                    let (j, k) = (v[i.floor() as usize], v[i.ceil() as usize]);
                    j + (k - j) * (i - i.floor())
                })
            }
            _ => ps.map(|p| self.percentile(p)),
        }
    }

    /// How many recorded values fall into each display bucket, given the buckets' upper bounds
    /// in ms (from [`display_bounds`]); values above the last bound count in the last bucket.
    pub fn bucket_counts(&self, bounds: &[f64]) -> Vec<u64> {
        let mut counts = vec![0u64; bounds.len()];
        let Some(last) = bounds.len().checked_sub(1) else {
            return counts;
        };
        for v in self.hist.iter_recorded() {
            let x = v.value_iterated_to() as f64 / crate::hist::SCALE;
            let i = bounds.iter().position(|b| x <= *b).unwrap_or(last);
            counts[i] += v.count_since_last_iteration();
        }
        counts
    }
}

/// Upper bounds of `n` display buckets of a latency histogram from `lo` to `hi` (ms), and
/// whether they are log-spaced: they are when the range spans a decade or more, so a long tail
/// does not squash everything into the first bucket. The quick summary's and the HTML report's
/// histograms both use it.
pub fn display_bounds(lo: f64, hi: f64, n: usize) -> (Vec<f64>, bool) {
    let log = hi / lo >= 10.0;
    let bounds = (1..=n)
        .map(|i| {
            let f = i as f64 / n as f64;
            if log {
                lo * (hi / lo).powf(f)
            } else {
                lo + (hi - lo) * f
            }
        })
        .collect();
    (bounds, log)
}

/// k6's `TrendSink.P` over unsorted samples (`q` in 0..=1): the two order statistics around
/// rank q(n−1), found by selection (O(n)) on a copy, so reading needs no `&mut`.
pub fn k6_percentile(samples: &[f64], q: f64) -> f64 {
    match samples {
        [] => 0.0,
        [v] => *v,
        _ => {
            let i = q.clamp(0.0, 1.0) * (samples.len() as f64 - 1.0);
            let lo = (i.floor() as usize).min(samples.len() - 1);
            let mut v = samples.to_vec();
            let (_, j, above) = v.select_nth_unstable_by(lo, f64::total_cmp);
            let j = *j;
            let k = if i.ceil() as usize > lo {
                above.iter().copied().fold(f64::INFINITY, f64::min)
            } else {
                j
            };
            j + (k - j) * (i - i.floor())
        }
    }
}

impl Default for TrendAgg {
    fn default() -> Self {
        Self::new()
    }
}

impl Agg {
    pub fn empty(kind: MetricKind) -> Agg {
        match kind {
            MetricKind::Counter => Agg::Counter { sum: 0.0, n: 0 },
            MetricKind::Gauge => Agg::Gauge {
                last: 0.0,
                min: f64::INFINITY,
                max: f64::NEG_INFINITY,
                n: 0,
            },
            MetricKind::Rate => Agg::Rate { trues: 0, total: 0 },
            MetricKind::Trend => Agg::Trend(Box::default()),
        }
    }

    pub fn kind(&self) -> MetricKind {
        match self {
            Agg::Counter { .. } => MetricKind::Counter,
            Agg::Gauge { .. } => MetricKind::Gauge,
            Agg::Rate { .. } => MetricKind::Rate,
            Agg::Trend(_) => MetricKind::Trend,
        }
    }

    /// Number of samples recorded; 0 means the aggregate carries nothing.
    pub fn samples(&self) -> u64 {
        match self {
            Agg::Counter { n, .. } | Agg::Gauge { n, .. } => *n,
            Agg::Rate { total, .. } => *total,
            Agg::Trend(t) => t.count,
        }
    }

    /// Record one sample of any kind (rates take 0 / non-0).
    pub fn add(&mut self, v: f64) {
        match self {
            Agg::Counter { sum, n } => {
                *sum += v;
                *n += 1;
            }
            Agg::Gauge { last, min, max, n } => {
                *last = v;
                *min = min.min(v);
                *max = max.max(v);
                *n += 1;
            }
            Agg::Rate { trues, total } => {
                *trues += (v != 0.0) as u64;
                *total += 1;
            }
            Agg::Trend(t) => t.add(v),
        }
    }

    /// Merge `o` (a later or parallel span) into `self`. Kinds must match; a mismatch is
    /// ignored rather than corrupting either side.
    pub fn merge(&mut self, o: &Agg) {
        match (self, o) {
            (Agg::Counter { sum, n }, Agg::Counter { sum: s2, n: n2 }) => {
                *sum += s2;
                *n += n2;
            }
            (
                Agg::Gauge { last, min, max, n },
                Agg::Gauge {
                    last: l2,
                    min: mi2,
                    max: ma2,
                    n: n2,
                },
            ) if *n2 > 0 => {
                *last = *l2;
                *min = min.min(*mi2);
                *max = max.max(*ma2);
                *n += n2;
            }
            (
                Agg::Rate { trues, total },
                Agg::Rate {
                    trues: t2,
                    total: n2,
                },
            ) => {
                *trues += t2;
                *total += n2;
            }
            (Agg::Trend(a), Agg::Trend(b)) => a.merge(b),
            _ => {}
        }
    }

    /// Empty the aggregate in place, keeping a histogram's HDR counts array if it has one.
    pub fn reset(&mut self) {
        match self {
            Agg::Trend(t) => {
                t.hist.reset();
                t.samples.clear();
                t.count = 0;
                t.sum = 0.0;
                t.min = f64::INFINITY;
                t.max = f64::NEG_INFINITY;
            }
            other => *other = Agg::empty(other.kind()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_buckets_are_linear_or_log_and_count_every_value() {
        let (b, log) = display_bounds(1.0, 5.0, 4);
        assert!(!log);
        assert_eq!(b, vec![2.0, 3.0, 4.0, 5.0]);
        let (b, log) = display_bounds(1.0, 100.0, 2);
        assert!(log);
        assert!(
            (b[0] - 10.0).abs() < 1e-9 && (b[1] - 100.0).abs() < 1e-9,
            "{b:?}"
        );
        let mut t = TrendAgg::new();
        for v in [1.0, 1.5, 2.5, 9.0, 50.0] {
            t.add(v);
        }
        // 9 and 50 lie past 5: they count in the last bucket.
        assert_eq!(t.bucket_counts(&[2.0, 3.0, 4.0, 5.0]), vec![2, 1, 0, 2]);
        assert_eq!(t.bucket_counts(&[]), Vec::<u64>::new());
    }

    /// Found by fuzz/fuzz_targets/result_file.rs: a result file whose trend says
    /// `"min": 5.025, "max": 1.425` made `volley summary` panic in `f64::clamp`.
    #[test]
    fn percentile_of_a_trend_with_min_above_max_does_not_panic() {
        let mut t = TrendAgg::new();
        t.add(2.0);
        t.add(3.0);
        (t.min, t.max) = (5.025, 1.425);
        for p in [0.0, 50.0, 99.9, 100.0] {
            assert!(t.percentile(p).is_finite());
        }
    }

    #[test]
    fn merging_two_halves_equals_recording_all() {
        let mut all = Agg::empty(MetricKind::Trend);
        let mut a = Agg::empty(MetricKind::Trend);
        let mut b = Agg::empty(MetricKind::Trend);
        for i in 0..1000 {
            let v = (i as f64) * 0.37 + 0.5;
            all.add(v);
            if i % 2 == 0 {
                a.add(v)
            } else {
                b.add(v)
            }
        }
        a.merge(&b);
        let (Agg::Trend(x), Agg::Trend(y)) = (&a, &all) else {
            panic!()
        };
        assert_eq!(x.count, y.count);
        assert_eq!(x.min, y.min);
        assert_eq!(x.max, y.max);
        assert!((x.sum - y.sum).abs() < 1e-6);
        assert_eq!(x.percentile(95.0), y.percentile(95.0));
    }

    #[test]
    fn rate_counter_gauge_merge() {
        let mut r = Agg::empty(MetricKind::Rate);
        r.add(1.0);
        r.add(0.0);
        let mut r2 = Agg::empty(MetricKind::Rate);
        r2.add(1.0);
        r.merge(&r2);
        assert!(matches!(r, Agg::Rate { trues: 2, total: 3 }));

        let mut c = Agg::empty(MetricKind::Counter);
        c.add(5.0);
        c.merge(&c.clone());
        assert!(matches!(c, Agg::Counter { sum, n: 2 } if sum == 10.0));

        let mut g = Agg::empty(MetricKind::Gauge);
        g.add(3.0);
        g.add(1.0);
        let empty = Agg::empty(MetricKind::Gauge);
        g.merge(&empty);
        assert!(
            matches!(g, Agg::Gauge { last, min, max, n: 2 } if last == 1.0 && min == 1.0 && max == 3.0)
        );
    }

    #[test]
    fn reset_empties_but_keeps_kind() {
        let mut t = Agg::empty(MetricKind::Trend);
        t.add(4.0);
        t.reset();
        assert_eq!(t.samples(), 0);
        assert_eq!(t.kind(), MetricKind::Trend);
    }

    #[test]
    fn percentile_is_clamped_to_observed_range() {
        let mut t = TrendAgg::new();
        t.record_us(10_000);
        assert_eq!(t.percentile(99.0), 10.0);
        assert_eq!(t.percentile(0.0), 10.0);
    }

    /// k6's `TrendSink.P` (metrics/sink.go), written out as k6 has it: sort, then interpolate
    /// between the values at ⌊pct(n−1)⌋ and ⌈pct(n−1)⌉.
    fn k6_p(values: &[f64], pct: f64) -> f64 {
        let mut v = values.to_vec();
        if v.len() == 1 {
            return v[0];
        }
        v.sort_by(f64::total_cmp);
        let i = pct * (v.len() as f64 - 1.0);
        let (j, k) = (v[i.floor() as usize], v[i.ceil() as usize]);
        j + (k - j) * (i - i.floor())
    }

    /// Latency-like values in ms with microsecond and finer digits (an LCG, exact in f64).
    fn samples(n: usize, seed: u64) -> Vec<f64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x * 48_271 % 2_147_483_647;
                (x % 5_000_000) as f64 / 1_000.0 + 0.000_25
            })
            .collect()
    }

    const PS: [f64; 10] = [0.0, 1.0, 25.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0];

    #[test]
    fn percentiles_of_32_and_1032_samples_equal_k6s_exactly() {
        for n in [1, 2, 32, 1_032] {
            let vs = samples(n, 7);
            let mut t = TrendAgg::new();
            for &v in &vs {
                t.add(v);
            }
            for p in PS {
                assert_eq!(t.percentile(p), k6_p(&vs, p / 100.0), "n={n} p({p})");
            }
            assert_eq!(
                t.percentiles(PS).to_vec(),
                PS.map(|p| k6_p(&vs, p / 100.0)).to_vec(),
                "n={n}, several at once"
            );
            let k6_avg = vs.iter().fold(0.0, |s, v| s + v) / n as f64;
            assert_eq!(t.mean(), k6_avg, "n={n} avg");
        }
        // The case the issue measured: nearest-rank HDR buckets were -1.35 % on the median.
        let vs = samples(32, 7);
        let mut t = TrendAgg::new();
        vs.iter().for_each(|&v| t.add(v));
        let hdr_median = hist::percentile(&t.hist, 50.0);
        assert_ne!(hdr_median, t.percentile(50.0), "the old answer differs");
    }

    #[test]
    fn time_trends_recorded_in_microseconds_are_exact_too() {
        let us: Vec<u64> = (0..32u64).map(|i| 1_000 + i * i * 977).collect();
        let mut t = TrendAgg::new();
        us.iter().for_each(|&u| t.record_us(u));
        let ms: Vec<f64> = us.iter().map(|&u| u as f64 / 1000.0).collect();
        for p in PS {
            assert_eq!(t.percentile(p), k6_p(&ms, p / 100.0), "p({p})");
        }
    }

    #[test]
    fn merging_two_buffers_is_exact_and_past_the_limit_drops_to_the_histogram() {
        let (a_vs, b_vs) = (samples(700, 3), samples(900, 5));
        let (mut a, mut b) = (TrendAgg::new(), TrendAgg::new());
        a_vs.iter().for_each(|&v| a.add(v));
        b_vs.iter().for_each(|&v| b.add(v));
        a.merge(&b);
        let all: Vec<f64> = a_vs.iter().chain(&b_vs).copied().collect();
        assert_eq!(a.exact().map(<[f64]>::len), Some(1_600));
        for p in PS {
            assert_eq!(a.percentile(p), k6_p(&all, p / 100.0), "p({p})");
        }
        // 1,600 + 900 > EXACT_MAX: the buffer goes, the histogram answers.
        a.merge(&b);
        assert!(a.exact().is_none());
        assert!(a.samples.capacity() == 0, "the buffer's memory is released");
        assert_eq!(a.count, 2_500);
        // Recording past the limit drops it too, and an emptied trend is exact again.
        let mut t = TrendAgg::new();
        samples(EXACT_MAX, 9).iter().for_each(|&v| t.add(v));
        assert_eq!(t.exact().map(<[f64]>::len), Some(EXACT_MAX));
        t.add(1.0);
        assert!(t.exact().is_none());
        let mut g = Agg::Trend(Box::new(t));
        g.reset();
        g.add(2.5);
        let Agg::Trend(t) = &g else { panic!() };
        assert_eq!(t.exact(), Some(&[2.5][..]));
    }

    #[test]
    fn beyond_the_buffer_percentiles_interpolate_inside_buckets() {
        let vs = samples(20_000, 11);
        let mut t = TrendAgg::new();
        vs.iter().for_each(|&v| t.add(v));
        assert!(t.exact().is_none());
        for p in [1.0, 50.0, 90.0, 95.0, 99.0, 99.9] {
            let exact = k6_p(&vs, p / 100.0);
            let got = t.percentile(p);
            // Half a bucket at 3 significant digits, plus the µs rounding of stored values.
            assert!(
                (got - exact).abs() <= exact * 0.0005 + 0.001,
                "p({p}): {got} vs k6's {exact}"
            );
        }
        assert_eq!(t.percentile(0.0), t.min);
        assert_eq!(t.percentile(100.0), t.max);
        // Few distinct values (the histogram's short sparse form), many repeats.
        let vs: Vec<f64> = (0..5_000).map(|i| (i % 50) as f64 * 3.7 + 2.0).collect();
        let mut t = TrendAgg::new();
        vs.iter().for_each(|&v| t.add(v));
        assert!(matches!(t.hist, TrendHist::Sparse(_)) && t.exact().is_none());
        for p in [1.0, 50.0, 95.0, 99.0] {
            let (got, exact) = (t.percentile(p), k6_p(&vs, p / 100.0));
            assert!(
                (got - exact).abs() <= exact * 0.0005,
                "p({p}): {got} vs {exact}"
            );
        }
    }

    #[test]
    fn negative_and_non_finite_values() {
        // k6 keeps negative trend values; the histogram cannot, the buffer does.
        let mut t = TrendAgg::new();
        [-3.0, -1.0, 2.0].iter().for_each(|&v| t.add(v));
        assert_eq!(t.percentile(50.0), -1.0);
        assert_eq!(t.percentile(25.0), -2.0);
        // A NaN cannot be kept exactly (nor written to a file): the trend drops to the histogram.
        t.add(f64::NAN);
        assert!(t.exact().is_none());
        assert!(t.percentile(50.0).is_finite());
    }
}
