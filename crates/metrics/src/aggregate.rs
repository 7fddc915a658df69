//! Merges worker snapshots into run totals and the per-interval series.
//!
//! Workers report each interval once, in order. An interval is final when every worker has
//! either reported it or finished; it then becomes one [`Point`] of the series. Intervals
//! nobody recorded into still get an (empty) point so the series has no holes.

use crate::agg::Agg;
use crate::recorder::{DescKey, MetricDesc, Snapshot};
use crate::result::MetricTotal;
use crate::series::{Point, Series, SeriesKey, SeriesValue, Stat};
use crate::MetricKey;
use std::collections::BTreeMap;
use std::sync::Arc;

pub struct Aggregator {
    /// Keyed by the first description seen (name and tags are not copied again), with the
    /// series' key every point shares (one copy of the name and tags per series, not per second).
    totals: BTreeMap<DescKey, (Agg, SeriesKey)>,
    /// Per unfinished interval: only the series some worker recorded into.
    pending: BTreeMap<u64, BTreeMap<DescKey, Agg>>,
    /// Per worker: the next interval it has not reported yet, or None once it is done.
    next_unreported: Vec<Option<u64>>,
    /// First interval not yet turned into a point.
    next_point: u64,
    series: Series,
}

impl Aggregator {
    pub fn new(workers: usize, max_points: usize) -> Self {
        Aggregator {
            totals: BTreeMap::new(),
            pending: BTreeMap::new(),
            next_unreported: vec![Some(0); workers],
            next_point: 0,
            series: Series::new(max_points),
        }
    }

    /// Take one worker's snapshot for `interval` (seconds since the run's start).
    pub fn add(&mut self, worker: usize, interval: u64, snap: Snapshot) {
        let bucket = self.pending.entry(interval).or_default();
        for (desc, agg) in snap.entries {
            match self.totals.get_mut(&desc.key) {
                Some(t) => t.0.merge(&agg),
                None => {
                    let key = Arc::new(desc.key.clone());
                    self.totals
                        .insert(DescKey(desc.clone()), (agg.clone(), key));
                }
            }
            match bucket.get_mut(&desc.key) {
                Some(b) => b.merge(&agg),
                None => {
                    bucket.insert(DescKey(desc), agg);
                }
            }
        }
        if let Some(Some(n)) = self.next_unreported.get_mut(worker) {
            *n = (*n).max(interval + 1);
        }
        self.finalize_ready();
    }

    /// The worker will send nothing more.
    pub fn worker_done(&mut self, worker: usize) {
        if let Some(n) = self.next_unreported.get_mut(worker) {
            *n = None;
        }
        self.finalize_ready();
    }

    fn finalize_ready(&mut self) {
        let horizon = self
            .next_unreported
            .iter()
            .map(|n| n.unwrap_or(u64::MAX))
            .min()
            .unwrap_or(u64::MAX);
        // With every worker done, flush what is pending (and nothing beyond it).
        let limit = if horizon == u64::MAX {
            self.pending
                .keys()
                .next_back()
                .map_or(self.next_point, |k| k + 1)
        } else {
            horizon
        };
        while self.next_point < limit {
            let i = self.next_point;
            let values = self.pending.remove(&i).unwrap_or_default();
            self.series.push(Point {
                t: i,
                w: 1,
                values: values
                    .into_iter()
                    .map(|(d, a)| SeriesValue {
                        // Every pending series has a total (added together).
                        key: self
                            .totals
                            .get(&d)
                            .map_or_else(|| Arc::new(d.0.key.clone()), |t| t.1.clone()),
                        stat: Stat::from_agg(&a),
                    })
                    .collect(),
            });
            self.next_point += 1;
        }
    }

    /// Run totals so far.
    pub fn totals(&self) -> impl Iterator<Item = (&MetricDesc, &Agg)> {
        self.totals.iter().map(|(d, a)| (d.0.as_ref(), &a.0))
    }

    pub fn total(&self, key: &MetricKey) -> Option<&Agg> {
        self.totals.get(key).map(|t| &t.0)
    }

    /// Sum of a counter over all its tag sets.
    pub fn counter_sum(&self, name: &str) -> f64 {
        self.totals
            .iter()
            .filter(|(d, _)| d.0.key.name == name)
            .map(|(_, a)| match &a.0 {
                Agg::Counter { sum, .. } => *sum,
                _ => 0.0,
            })
            .sum()
    }

    pub fn series(&self) -> &Series {
        &self.series
    }

    /// The newest finished point, for live progress.
    pub fn last_point(&self) -> Option<&Point> {
        self.series.points.last()
    }

    /// Flush everything and return totals (sorted by name, then tags) and the series.
    pub fn finish(mut self) -> (Vec<MetricTotal>, Series) {
        for n in self.next_unreported.iter_mut() {
            *n = None;
        }
        self.finalize_ready();
        let totals = self
            .totals
            .into_iter()
            .map(|(d, (a, _))| match Arc::try_unwrap(d.0) {
                // Workers are done: move the name and tags instead of copying them.
                Ok(desc) => MetricTotal::from_desc(desc, &a),
                Err(desc) => MetricTotal::from_agg(&desc, &a),
            })
            .collect();
        (totals, self.series)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MetricKind, Recorder, Unit};

    #[test]
    fn intervals_finalize_when_all_workers_reported_and_totals_are_exact() {
        let mut agg = Aggregator::new(2, 100);
        let mut w0 = Recorder::new();
        let mut w1 = Recorder::new();
        let k = MetricKey::new("http_reqs");
        let h0 = w0.handle(k.clone(), MetricKind::Counter, Unit::Default);
        let h1 = w1.handle(k.clone(), MetricKind::Counter, Unit::Default);

        w0.add(h0, 3.0);
        agg.add(0, 0, w0.snapshot());
        assert!(
            agg.series().points.is_empty(),
            "worker 1 has not reported interval 0"
        );
        w1.add(h1, 4.0);
        agg.add(1, 0, w1.snapshot());
        assert_eq!(agg.series().points.len(), 1);
        assert_eq!(agg.series().points[0].counter_sum("http_reqs"), 7.0);

        // Worker 0 finishes early; interval 1..2 only need worker 1.
        agg.worker_done(0);
        w1.add(h1, 1.0);
        agg.add(1, 1, w1.snapshot());
        agg.add(1, 2, w1.snapshot()); // an idle interval
        w1.add(h1, 2.0);
        agg.add(1, 3, w1.snapshot());
        assert_eq!(agg.series().points.len(), 4);
        let (totals, series) = agg.finish();
        assert_eq!(series.points.len(), 4);
        assert!(series.points[2].values.is_empty());
        // Every second's value shares the series' one name and tag set.
        let k = &series.points[0].values[0].key;
        assert!(Arc::ptr_eq(k, &series.points[3].values[0].key));
        assert_eq!(totals.len(), 1);
        assert_eq!(
            totals[0].to_agg().unwrap().samples(),
            4,
            "four snapshots carried adds"
        );
        match totals[0].to_agg().unwrap() {
            Agg::Counter { sum, .. } => assert_eq!(sum, 10.0),
            _ => panic!(),
        }
    }

    #[test]
    fn exact_samples_reach_the_totals_but_not_the_per_second_series() {
        let mut agg = Aggregator::new(1, 100);
        let mut w = Recorder::new();
        let h = w.handle(MetricKey::new("t"), MetricKind::Trend, Unit::Time);
        for (i, vs) in [[1.5, 9.25, 4.0], [2.0, 7.5, 3.25]].iter().enumerate() {
            vs.iter().for_each(|&v| w.add(h, v));
            agg.add(0, i as u64, w.snapshot());
        }
        let (totals, series) = agg.finish();
        let Agg::Trend(t) = totals[0].to_agg().unwrap() else {
            panic!()
        };
        assert_eq!(t.exact(), Some(&[1.5, 9.25, 4.0, 2.0, 7.5, 3.25][..]));
        // k6: sorted 1.5 2 3.25 4 7.5 9.25, rank 0.5 × 5 = 2.5 → 3.25 + 0.5 × 0.75.
        assert_eq!(t.percentile(50.0), 3.625);
        // A point holds fixed-size statistics (exact ones: 4.0 is the median of 1.5, 4, 9.25).
        let json = serde_json::to_string(&series).unwrap();
        assert!(!json.contains("samples"), "{json}");
        assert!(matches!(
            series.points[0].values[0].stat,
            crate::series::Stat::Trend { p50, .. } if p50 == 4.0
        ));
    }
}
