//! The run's one per-second series on the coordinator, merged from every agent's points as
//! they stream in (aligned on wall-clock seconds, as `volley merge` aligns files). One series
//! whatever the number of agents: the coordinator's memory does not grow with agents × run
//! length, and at the end it is the merged result's series (complete for agents that
//! finished — their last points come with the final result — and up to the last snapshot for
//! a lost agent), so the final merge only adds totals.

use volley_metrics::merge::absorb_instance;
use volley_metrics::series::DEFAULT_MAX_POINTS;
use volley_metrics::{Point, Series};

pub struct LiveSeries {
    /// Wall-clock second of the series' t = 0 (the coordinator's start: before any agent's).
    base_s: u64,
    series: Series,
}

impl LiveSeries {
    pub fn new(base_unix_ms: u64) -> LiveSeries {
        LiveSeries {
            base_s: base_unix_ms / 1000,
            series: Series::new(DEFAULT_MAX_POINTS),
        }
    }

    /// Add an agent's point (its `t` counts from `started_unix_ms`).
    pub fn add(&mut self, started_unix_ms: u64, p: &Point) {
        let shift = (started_unix_ms / 1000).saturating_sub(self.base_s);
        let b = self.series.bucket_s.max(1);
        let t = (p.t + shift) / b * b;
        let points = &mut self.series.points;
        match points.binary_search_by_key(&t, |x| x.t) {
            Ok(i) => absorb_instance(&mut points[i], p),
            Err(i) => {
                let mut q = p.clone();
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
            values: vec![SeriesValue {
                name: "http_reqs".into(),
                tags: Default::default(),
                stat: Stat::Counter { sum },
            }],
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
}
