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

/// A trend keeps an HDR histogram for percentiles plus exact min, max and sum. The histogram
/// stays a short sorted list while the trend has few distinct values ([`TrendHist`]), so
/// rarely-hit series (one per URL, say) cost bytes rather than an HDR array each.
#[derive(Clone, Debug)]
pub struct TrendAgg {
    pub hist: TrendHist,
    pub count: u64,
    pub sum: f64,
    pub min: f64,
    pub max: f64,
}

impl TrendAgg {
    pub fn new() -> Self {
        TrendAgg {
            hist: TrendHist::new(),
            count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    /// Record a time in microseconds: the engine's hot path, no float parsing of units.
    #[inline]
    pub fn record_us(&mut self, us: u64) {
        self.hist.record(us);
        let v = us as f64 / hist::SCALE;
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
        self.count += 1;
        self.sum += v;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    pub fn merge(&mut self, o: &TrendAgg) {
        self.hist.add(&o.hist);
        self.count += o.count;
        self.sum += o.sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }

    pub fn percentile(&self, p: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        // HDR buckets round; clamp into the exact observed range. Not `f64::clamp`: it
        // panics when min > max, which a hand-edited or corrupt result file can say.
        hist::percentile(&self.hist, p).max(self.min).min(self.max)
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
}
