//! The per-interval time series of a run.
//!
//! Each point holds compact statistics per series (sums for counters, percentiles for trends),
//! never raw samples. The series keeps at most `max_points` points: when a run outgrows it,
//! neighbouring points are merged pairwise and the bucket width doubles, so a 24-hour soak
//! costs the same memory as a one-hour run. Counts, sums, minima and maxima stay exact under
//! coarsening and merging; bucket percentiles of merged buckets are count-weighted means of
//! the inputs (run totals, kept as full histograms elsewhere, are always exact).
//!
//! A value names its series through a shared [`SeriesKey`]: the name and tags are stored once
//! per series (interned by whoever builds points: the aggregator, a file's series table, the
//! coordinator's live series), so a point costs its statistics and a pointer per series. How a
//! series is written to and read from the result file is [`crate::series_file`].

use crate::agg::{Agg, MetricKind};
use crate::{MetricKey, TagSet};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::sync::Arc;

/// A series' name and tags, shared by every point that holds a value of it.
pub type SeriesKey = Arc<MetricKey>;

/// Default cap: one hour at 1-second resolution.
pub const DEFAULT_MAX_POINTS: usize = 3600;

/// Serialised by [`crate::series_file`] (a series table; older files' point lists still read).
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Width of the base interval in seconds (1).
    pub interval_s: u64,
    /// Current bucket width in seconds (a power-of-two multiple of `interval_s`).
    pub bucket_s: u64,
    pub max_points: usize,
    pub points: Vec<Point>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Point {
    /// Start, in seconds from the run's start.
    pub t: u64,
    /// Width in seconds.
    pub w: u64,
    #[serde(default)]
    pub values: Vec<SeriesValue>,
}

/// One series' statistics in one point. Alone (a live snapshot's points on the wire) it is
/// serialised with its name and tags, as version 1 files held it ([`crate::series_file`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesValue {
    pub key: SeriesKey,
    pub stat: Stat,
}

impl SeriesValue {
    /// A value with its own (not yet interned) key.
    pub fn new(name: &str, tags: TagSet, stat: Stat) -> SeriesValue {
        SeriesValue {
            key: Arc::new(MetricKey {
                name: name.to_string(),
                tags,
            }),
            stat,
        }
    }

    pub fn name(&self) -> &str {
        &self.key.name
    }

    pub fn tags(&self) -> &TagSet {
        &self.key.tags
    }
}

/// Gives equal keys one shared allocation, so a long series holds each name and tag set once
/// (the coordinator's live series gets a fresh copy with every agent's snapshot). Bounded by
/// the number of series, which the cardinality guard bounds.
#[derive(Default, Debug)]
pub struct Interner(HashSet<SeriesKey>);

impl Interner {
    pub fn key(&mut self, k: &SeriesKey) -> SeriesKey {
        match self.0.get(k) {
            Some(x) => x.clone(),
            None => {
                self.0.insert(k.clone());
                k.clone()
            }
        }
    }

    /// Re-point every value of `p` at the shared keys.
    pub fn point(&mut self, p: &mut Point) {
        for v in &mut p.values {
            if let Some(x) = self.0.get(&v.key) {
                if !Arc::ptr_eq(x, &v.key) {
                    v.key = x.clone();
                }
            } else {
                self.0.insert(v.key.clone());
            }
        }
    }
}

/// Compact per-interval statistics of one series. Its serde form (internally tagged by
/// `kind`) is version 1's and the wire's; version 2 files store columns instead.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Stat {
    Counter {
        sum: f64,
    },
    Gauge {
        last: f64,
        min: f64,
        max: f64,
    },
    Rate {
        trues: u64,
        total: u64,
    },
    Trend {
        count: u64,
        min: f64,
        max: f64,
        mean: f64,
        p50: f64,
        p90: f64,
        p95: f64,
        p99: f64,
    },
}

impl Stat {
    pub fn from_agg(a: &Agg) -> Stat {
        match a {
            Agg::Counter { sum, .. } => Stat::Counter { sum: *sum },
            Agg::Gauge { last, min, max, .. } => Stat::Gauge {
                last: *last,
                min: *min,
                max: *max,
            },
            Agg::Rate { trues, total } => Stat::Rate {
                trues: *trues,
                total: *total,
            },
            Agg::Trend(t) => {
                let [p50, p90, p95, p99] = t.percentiles([50.0, 90.0, 95.0, 99.0]);
                Stat::Trend {
                    count: t.count,
                    min: t.min,
                    max: t.max,
                    mean: t.mean(),
                    p50,
                    p90,
                    p95,
                    p99,
                }
            }
        }
    }

    pub fn kind(&self) -> MetricKind {
        match self {
            Stat::Counter { .. } => MetricKind::Counter,
            Stat::Gauge { .. } => MetricKind::Gauge,
            Stat::Rate { .. } => MetricKind::Rate,
            Stat::Trend { .. } => MetricKind::Trend,
        }
    }

    /// Combine with the stat of an adjacent or parallel bucket (see the module doc for what is
    /// exact). `o` is taken as the later one for gauges' `last`.
    pub fn merge(&mut self, o: &Stat) {
        match (self, o) {
            (Stat::Counter { sum }, Stat::Counter { sum: s }) => *sum += s,
            (
                Stat::Gauge { last, min, max },
                Stat::Gauge {
                    last: l,
                    min: mi,
                    max: ma,
                },
            ) => {
                *last = *l;
                *min = min.min(*mi);
                *max = max.max(*ma);
            }
            (Stat::Rate { trues, total }, Stat::Rate { trues: t, total: n }) => {
                *trues += t;
                *total += n;
            }
            (
                Stat::Trend {
                    count,
                    min,
                    max,
                    mean,
                    p50,
                    p90,
                    p95,
                    p99,
                },
                Stat::Trend {
                    count: c2,
                    min: mi2,
                    max: ma2,
                    mean: me2,
                    p50: a2,
                    p90: b2,
                    p95: c2p,
                    p99: d2,
                },
            ) => {
                let (n1, n2) = (*count as f64, *c2 as f64);
                let n = n1 + n2;
                if n == 0.0 {
                    return;
                }
                let w = |x: f64, y: f64| (x * n1 + y * n2) / n;
                *mean = w(*mean, *me2);
                *p50 = w(*p50, *a2);
                *p90 = w(*p90, *b2);
                *p95 = w(*p95, *c2p);
                *p99 = w(*p99, *d2);
                *min = if *count == 0 { *mi2 } else { min.min(*mi2) };
                *max = if *count == 0 { *ma2 } else { max.max(*ma2) };
                *count += c2;
            }
            _ => {}
        }
    }
}

impl Point {
    pub fn empty(t: u64, w: u64) -> Point {
        Point {
            t,
            w,
            values: Vec::new(),
        }
    }

    pub fn get(&self, name: &str, tags: &TagSet) -> Option<&Stat> {
        self.values
            .iter()
            .find(|v| v.key.name == name && &v.key.tags == tags)
            .map(|v| &v.stat)
    }

    /// Sum of a counter over all tag sets in this point.
    pub fn counter_sum(&self, name: &str) -> f64 {
        self.values
            .iter()
            .filter(|v| v.key.name == name)
            .map(|v| match v.stat {
                Stat::Counter { sum } => sum,
                _ => 0.0,
            })
            .sum()
    }

    /// Fold `o` into `self`, series by series.
    pub fn absorb(&mut self, o: &Point) {
        for v in &o.values {
            // Arc's equality tries the pointer first: interned keys compare in one step.
            match self.values.iter_mut().find(|x| x.key == v.key) {
                Some(x) => x.stat.merge(&v.stat),
                None => self.values.push(v.clone()),
            }
        }
    }
}

impl Default for Series {
    fn default() -> Self {
        Series::new(DEFAULT_MAX_POINTS)
    }
}

impl Series {
    pub fn new(max_points: usize) -> Series {
        Series {
            interval_s: 1,
            bucket_s: 1,
            max_points: max_points.max(2),
            points: Vec::new(),
        }
    }

    /// Append the next base interval (`p.t` must follow the previous one). It joins the last
    /// bucket while that bucket is narrower than the current width.
    pub fn push(&mut self, p: Point) {
        if let Some(last) = self.points.last_mut() {
            if last.w < self.bucket_s && last.t + last.w == p.t {
                last.absorb(&p);
                last.w += p.w;
                return;
            }
        }
        self.points.push(p);
        if self.points.len() > self.max_points {
            self.coarsen();
        }
    }

    /// Halve the number of points by merging neighbours; the bucket width doubles.
    pub fn coarsen(&mut self) {
        self.bucket_s *= 2;
        let old = std::mem::take(&mut self.points);
        let mut it = old.into_iter().peekable();
        while let Some(mut a) = it.next() {
            // Merge the following point when it still fits in this bucket.
            if let Some(b) = it.peek() {
                if a.t % self.bucket_s == 0 && a.t + a.w == b.t && a.w + b.w <= self.bucket_s {
                    let b = it.next().unwrap();
                    a.absorb(&b);
                    a.w += b.w;
                }
            }
            self.points.push(a);
        }
    }

    /// Merge a parallel series (another instance of the same test): buckets with the same
    /// start combine; the finer series is coarsened first so widths agree.
    pub fn merge(&mut self, other: &Series) {
        let mut o = other.clone();
        while o.bucket_s < self.bucket_s {
            o.coarsen();
        }
        while self.bucket_s < o.bucket_s {
            self.coarsen();
        }
        for p in o.points {
            match self.points.iter_mut().find(|x| x.t == p.t) {
                Some(x) => {
                    x.absorb(&p);
                    x.w = x.w.max(p.w);
                }
                None => self.points.push(p),
            }
        }
        self.points.sort_by_key(|p| p.t);
        while self.points.len() > self.max_points {
            self.coarsen();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter_point(t: u64, v: f64) -> Point {
        Point {
            t,
            w: 1,
            values: vec![SeriesValue::new(
                "http_reqs",
                TagSet::new(),
                Stat::Counter { sum: v },
            )],
        }
    }

    #[test]
    fn series_stays_bounded_and_counts_stay_exact() {
        let mut s = Series::new(10);
        let mut total = 0.0;
        for t in 0..1000 {
            s.push(counter_point(t, t as f64));
            total += t as f64;
        }
        assert!(s.points.len() <= 10, "{} points", s.points.len());
        let sum: f64 = s.points.iter().map(|p| p.counter_sum("http_reqs")).sum();
        assert_eq!(sum, total);
        let covered: u64 = s.points.iter().map(|p| p.w).sum();
        assert_eq!(covered, 1000);
        // Buckets are contiguous.
        for w in s.points.windows(2) {
            assert_eq!(w[0].t + w[0].w, w[1].t);
        }
    }

    #[test]
    fn merging_parallel_series_adds_counts() {
        let mut a = Series::new(100);
        let mut b = Series::new(100);
        for t in 0..5 {
            a.push(counter_point(t, 1.0));
            b.push(counter_point(t, 2.0));
        }
        b.push(counter_point(5, 2.0));
        a.merge(&b);
        assert_eq!(a.points.len(), 6);
        assert_eq!(a.points[0].counter_sum("http_reqs"), 3.0);
        assert_eq!(a.points[5].counter_sum("http_reqs"), 2.0);
    }

    #[test]
    fn trend_stats_merge_weighted() {
        let mut a = Stat::Trend {
            count: 1,
            min: 1.0,
            max: 1.0,
            mean: 1.0,
            p50: 1.0,
            p90: 1.0,
            p95: 1.0,
            p99: 1.0,
        };
        let b = Stat::Trend {
            count: 3,
            min: 5.0,
            max: 5.0,
            mean: 5.0,
            p50: 5.0,
            p90: 5.0,
            p95: 5.0,
            p99: 5.0,
        };
        a.merge(&b);
        let Stat::Trend {
            count,
            min,
            max,
            mean,
            ..
        } = a
        else {
            panic!()
        };
        assert_eq!((count, min, max, mean), (4, 1.0, 5.0, 4.0));
    }
}
