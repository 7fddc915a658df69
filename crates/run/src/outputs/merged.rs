//! The coordinator's outputs (`volley coordinator --out influxdb=…|prometheus=…|junit=…`):
//! the same InfluxDB and Prometheus remote-write outputs as `volley run`, fed from the
//! agents' merged per-second series rather than this process's [`volley_metrics::Aggregator`].
//!
//! A merged second is sent once every agent still running has reported past it (agents
//! snapshot once a second, and a late agent's share of a second must not be dropped), so
//! the stream lags the run by about a snapshot; at the end the rest of the merged result's
//! series follows. Points carry wall-clock seconds (the series are aligned on them), so the
//! live series and the final result's (counted from different starts) meet without gaps or
//! repeats.
//!
//! What each point holds is the merge of the agents' points of that second: counters and
//! rates are sums (exact), gauges such as `vus` are summed across agents, trends have the
//! exact count, min, max and mean, but their p50/p90/p95/p99 are the count-weighted means of
//! the agents' per-second percentiles (`volley run` computes them from one histogram).
//! Per-sample outputs (`json=`, `csv=`) have no merged form: the coordinator never sees
//! samples.

use super::{OutSpec, Outputs};
use volley_metrics::{Point, RunResult};

pub struct MergedOutputs {
    outputs: Outputs,
    /// First wall-clock second not sent yet.
    next_s: u64,
}

impl MergedOutputs {
    /// Start the outputs; `json=`/`csv=` are refused (see the module's note).
    pub fn start(specs: &[OutSpec]) -> Result<MergedOutputs, String> {
        if let Some(s) = specs
            .iter()
            .find(|s| matches!(s, OutSpec::Json(_) | OutSpec::Csv(_)))
        {
            return Err(format!("{s:?}: a per-sample output has no merged form"));
        }
        Ok(MergedOutputs {
            outputs: Outputs::start(specs)?,
            next_s: 0,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.outputs.is_empty()
    }

    /// Send the points of a series counted from wall-clock second `base_s` that end at or
    /// before its offset `complete_t` and were not sent yet.
    pub fn feed(&mut self, base_s: u64, points: &[Point], complete_t: u64) {
        let base_ms = base_s * 1000;
        for p in points {
            let (from, to) = (base_s + p.t, p.t + p.w.max(1));
            if from < self.next_s {
                continue;
            }
            if to > complete_t {
                break;
            }
            for (out, _) in &mut self.outputs.pushers {
                out.point(base_ms, p);
            }
            self.next_s = base_s + to;
        }
        for (out, tx) in &mut self.outputs.pushers {
            if let Some(body) = out.take_batch() {
                tx.send(body);
            }
        }
    }

    /// After the run: the merged result's remaining seconds, the JUnit file, every output
    /// flushed. Returns the problems to report as warnings.
    pub fn finish(mut self, result: &RunResult) -> Vec<String> {
        let base_s = result.meta.started_unix_ms / 1000;
        self.feed(base_s, &result.series.points, u64::MAX);
        self.outputs.close(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which seconds go out is all this tests: no values needed.
    fn point(t: u64) -> Point {
        Point {
            t,
            w: 1,
            values: Vec::new(),
        }
    }

    #[test]
    fn seconds_are_sent_once_when_complete_across_two_bases() {
        let mut m =
            MergedOutputs::start(&[OutSpec::Influx("http://127.0.0.1:9/db".into())]).unwrap();
        let live: Vec<Point> = (0..4).map(point).collect();
        // Seconds 0 and 1 complete (base 100): sent; 2 and 3 wait.
        m.feed(100, &live, 2);
        assert_eq!(m.next_s, 102);
        m.feed(100, &live, 2);
        assert_eq!(m.next_s, 102);
        // The final series counts from 101: its t = 1 is second 102, sent now; t = 0 is not
        // sent again.
        let fin: Vec<Point> = (0..4).map(point).collect();
        m.feed(101, &fin, u64::MAX);
        assert_eq!(m.next_s, 105);
        assert!(MergedOutputs::start(&[OutSpec::Csv("x.csv".into())]).is_err());
    }
}
