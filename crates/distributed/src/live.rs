//! The run's one per-second series on the coordinator, merged from every agent's points as
//! they stream in (aligned on wall-clock seconds, as `volley merge` aligns files). One series
//! whatever the number of agents: the coordinator's memory does not grow with agents × run
//! length, and at the end it is the merged result's series (complete for agents that
//! finished — their last points come with the final result — and up to the last snapshot for
//! a lost agent), so the final merge only adds totals.
//!
//! Every snapshot brings its own copy of each series' name and tags; points keep the one
//! interned copy instead, so memory grows by a point's statistics per second (and not at all
//! once the series is at its cap), not by names and tag maps.

use volley_metrics::merge::absorb_instance;
use volley_metrics::series::DEFAULT_MAX_POINTS;
use volley_metrics::{Interner, Point, Series};

pub struct LiveSeries {
    /// Wall-clock second of the series' t = 0: the coordinator's start, then the start
    /// barrier's ([`LiveSeries::start_at`]), before any agent's.
    base_s: u64,
    series: Series,
    keys: Interner,
}

impl LiveSeries {
    pub fn new(base_unix_ms: u64) -> LiveSeries {
        LiveSeries {
            base_s: base_unix_ms / 1000,
            series: Series::new(DEFAULT_MAX_POINTS),
            keys: Interner::default(),
        }
    }

    /// Count t from the test's start (the barrier), so live checks on the timeline (a slope
    /// after its warm-up) see the run's seconds. Only before any point came.
    pub fn start_at(&mut self, unix_ms: u64) {
        if self.series.points.is_empty() {
            self.base_s = unix_ms / 1000;
        }
    }

    /// The wall-clock second of t = 0.
    pub fn base_unix_s(&self) -> u64 {
        self.base_s
    }

    /// The merged series so far (t = 0 at the start barrier's second).
    pub fn series(&self) -> &Series {
        &self.series
    }

    /// Add an agent's point (its `t` counts from `started_unix_ms`).
    pub fn add(&mut self, started_unix_ms: u64, p: &Point) {
        let shift = (started_unix_ms / 1000).saturating_sub(self.base_s);
        let b = self.series.bucket_s.max(1);
        let t = (p.t + shift) / b * b;
        let mut q = p.clone();
        self.keys.point(&mut q);
        let points = &mut self.series.points;
        match points.binary_search_by_key(&t, |x| x.t) {
            Ok(i) => absorb_instance(&mut points[i], &q),
            Err(i) => {
                q.t = t;
                q.w = q.w.max(b);
                points.insert(i, q);
            }
        }
        if points.len() > self.series.max_points {
            self.series.coarsen();
        }
    }

    /// The series with t = 0 at `start_unix_ms` (the merged result's start).
    pub fn rebased(mut self, start_unix_ms: u64) -> Series {
        let d = (start_unix_ms / 1000).saturating_sub(self.base_s);
        let d = d / self.series.bucket_s.max(1) * self.series.bucket_s.max(1);
        for p in &mut self.series.points {
            p.t = p.t.saturating_sub(d);
        }
        self.series
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_metrics::series::{SeriesValue, Stat};

    fn point(t: u64, sum: f64) -> Point {
        Point {
            t,
            w: 1,
            values: vec![SeriesValue::new(
                "http_reqs",
                Default::default(),
                Stat::Counter { sum },
            )],
        }
    }

    #[test]
    fn agents_points_add_up_on_the_wall_clock_second() {
        let mut l = LiveSeries::new(100_000);
        // Agent a started at 101.2 s, agent b at 102.9 s: b's second 0 is a's second 1.
        l.add(101_200, &point(0, 1.0));
        l.add(101_200, &point(1, 2.0));
        l.add(102_900, &point(0, 10.0));
        l.add(102_900, &point(2, 5.0));
        let s = l.rebased(101_200);
        let got: Vec<(u64, f64)> = s
            .points
            .iter()
            .map(|p| (p.t, p.counter_sum("http_reqs")))
            .collect();
        assert_eq!(got, vec![(0, 1.0), (1, 12.0), (3, 5.0)]);
    }

    /// Regression: each agent's snapshot carried its own copy of every name and tag map, and
    /// the live series kept them all (the coordinator's memory grew with the run).
    #[test]
    fn points_from_many_snapshots_share_one_key_per_series() {
        let mut l = LiveSeries::new(0);
        for t in 0..50 {
            // A fresh key each time, as a deserialised snapshot has.
            l.add(0, &point(t, 1.0));
            l.add(0, &point(t, 2.0));
        }
        let first = &l.series().points[0].values[0].key;
        assert!(l
            .series()
            .points
            .iter()
            .all(|p| p.values.len() == 1 && std::sync::Arc::ptr_eq(&p.values[0].key, first)));
        // Two holders per point's value at most: no copies beyond the interned one.
        assert_eq!(std::sync::Arc::strong_count(first), 50 + 1);
    }
}
