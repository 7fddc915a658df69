//! What the page is fed: per-second points and run totals, read from the run's aggregator, and
//! the bounded history a late browser gets first.
//!
//! A [`Pt`] holds counts (requests, errors, bytes...) and latency percentiles of one finished
//! series point, keyed by its start `t` and width `w` in seconds; the page divides by `w`.
//! [`History`] keeps at most [`MAX_POINTS`] of them: past that, neighbours merge pairwise (as
//! the run's own series coarsens), so a 24-hour run costs what a one-hour run does.

use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use volley_metrics::names;
use volley_metrics::series::{Point, Stat};
use volley_metrics::{Agg, Aggregator};

/// Points a history (and the page) keeps: an hour at one-second resolution.
pub const MAX_POINTS: usize = 3600;

/// `monitor_*` series a point carries at most (each `--monitor` target has about a dozen).
pub const MAX_MONITOR_SERIES: usize = 64;

/// One finished point of the run's series, as the page draws it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Pt {
    pub t: u64,
    pub w: u64,
    /// `http_reqs` in the point.
    pub reqs: f64,
    /// Requests that got no response (quick mode's `error` tag, k6's `error_code`).
    pub errs: f64,
    /// `http_req_failed`: failed and all samples.
    pub fail_t: u64,
    pub fail_n: u64,
    /// `http_req_duration` over all its tag sets: samples and p50, p90, p95, p99, max (ms).
    pub lat_n: u64,
    pub lat: [f64; 5],
    pub iters: f64,
    pub sent: f64,
    pub recv: f64,
    /// The `vus` and `vus_max` gauges (last value), when recorded in this point.
    pub vus: Option<f64>,
    pub vus_max: Option<f64>,
    /// `monitor_*` gauges (last value), keyed `name` or `name{tag=value,...}`.
    pub mon: BTreeMap<String, f64>,
}

fn key(name: &str, tags: &volley_metrics::TagSet) -> String {
    if tags.is_empty() {
        return name.to_string();
    }
    let t: Vec<String> = tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{name}{{{}}}", t.join(","))
}

/// Milliseconds to the microsecond (the histograms' resolution): shorter JSON.
fn us(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

fn failed_request(tags: &volley_metrics::TagSet) -> bool {
    tags.contains_key("error") || tags.contains_key("error_code")
}

impl Pt {
    /// The page's view of a series point.
    pub fn from_point(p: &Point) -> Pt {
        let mut pt = Pt {
            t: p.t,
            w: p.w.max(1),
            ..Pt::default()
        };
        let mut lat: Option<Stat> = None;
        for v in &p.values {
            match (&v.stat, v.name()) {
                (Stat::Counter { sum }, names::HTTP_REQS) => {
                    pt.reqs += sum;
                    if failed_request(v.tags()) {
                        pt.errs += sum;
                    }
                }
                (Stat::Counter { sum }, names::ITERATIONS) => pt.iters += sum,
                (Stat::Counter { sum }, names::DATA_SENT) => pt.sent += sum,
                (Stat::Counter { sum }, names::DATA_RECEIVED) => pt.recv += sum,
                (Stat::Rate { trues, total }, names::HTTP_REQ_FAILED) => {
                    pt.fail_t += trues;
                    pt.fail_n += total;
                }
                (s @ Stat::Trend { .. }, names::HTTP_REQ_DURATION) => match &mut lat {
                    Some(l) => l.merge(s),
                    None => lat = Some(s.clone()),
                },
                (Stat::Gauge { last, .. }, names::VUS) => pt.vus = Some(*last),
                (Stat::Gauge { last, .. }, names::VUS_MAX) => pt.vus_max = Some(*last),
                (Stat::Gauge { last, .. }, n)
                    if n.starts_with("monitor_") && pt.mon.len() < MAX_MONITOR_SERIES =>
                {
                    pt.mon.insert(key(n, v.tags()), *last);
                }
                _ => {}
            }
        }
        if let Some(Stat::Trend {
            count,
            max,
            p50,
            p90,
            p95,
            p99,
            ..
        }) = lat
        {
            pt.lat_n = count;
            pt.lat = [p50, p90, p95, p99, max].map(us);
        }
        pt
    }

    /// Fold the next point into this one (counts add, percentiles are count-weighted, gauges
    /// keep the later value).
    pub fn absorb(&mut self, o: &Pt) {
        self.w = (o.t + o.w).saturating_sub(self.t).max(self.w);
        self.reqs += o.reqs;
        self.errs += o.errs;
        self.fail_t += o.fail_t;
        self.fail_n += o.fail_n;
        let n = self.lat_n + o.lat_n;
        if n > 0 {
            let (a, b) = (self.lat_n as f64 / n as f64, o.lat_n as f64 / n as f64);
            for i in 0..4 {
                self.lat[i] = self.lat[i] * a + o.lat[i] * b;
            }
            self.lat[4] = self.lat[4].max(o.lat[4]);
        }
        self.lat_n = n;
        self.iters += o.iters;
        self.sent += o.sent;
        self.recv += o.recv;
        self.vus = o.vus.or(self.vus);
        self.vus_max = o.vus_max.or(self.vus_max);
        for (k, v) in &o.mon {
            if self.mon.len() < MAX_MONITOR_SERIES || self.mon.contains_key(k) {
                self.mon.insert(k.clone(), *v);
            }
        }
    }

    /// The part of a grown bucket after `from` (the run's series merges new seconds into its
    /// last bucket once it is coarse): counts in proportion, the rest as the bucket's.
    fn tail(&self, from: u64) -> Pt {
        let end = self.t + self.w;
        let share = (end - from) as f64 / self.w as f64;
        let mut p = self.clone();
        p.t = from;
        p.w = end - from;
        for c in [
            &mut p.reqs,
            &mut p.errs,
            &mut p.iters,
            &mut p.sent,
            &mut p.recv,
        ] {
            *c *= share;
        }
        p.fail_t = (p.fail_t as f64 * share).round() as u64;
        p.fail_n = (p.fail_n as f64 * share).round() as u64;
        p
    }
}

/// Run totals so far, from the aggregator's (exact) totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Totals {
    pub reqs: f64,
    pub errs: f64,
    pub fail_t: u64,
    pub fail_n: u64,
    pub lat_n: u64,
    /// p50, p90, p95, p99, max, mean (ms).
    pub lat: [f64; 6],
    pub iters: f64,
    pub sent: f64,
    pub recv: f64,
    /// `checks`: passed and all.
    pub checks_t: u64,
    pub checks_n: u64,
}

impl Totals {
    /// From a live run's aggregator.
    /// `latency`: also the run-wide percentiles (the one costly part: the histograms of every
    /// tag set merged).
    pub fn from_agg(agg: &Aggregator, latency: bool) -> Totals {
        let it = agg
            .totals()
            .map(|(d, a)| (d.key.name.as_str(), &d.key.tags, a));
        Totals::from_totals(it, latency)
    }

    /// From a finished run's totals.
    pub fn from_result(r: &volley_metrics::RunResult) -> Totals {
        let aggs: Vec<(&str, &volley_metrics::TagSet, Agg)> = r
            .metrics
            .iter()
            .filter_map(|m| Some((m.name.as_str(), &m.tags, m.to_agg().ok()?)))
            .collect();
        Totals::from_totals(aggs.iter().map(|(n, t, a)| (*n, *t, a)), true)
    }

    fn from_totals<'a>(
        totals: impl Iterator<Item = (&'a str, &'a volley_metrics::TagSet, &'a Agg)>,
        latency: bool,
    ) -> Totals {
        let mut t = Totals::default();
        let mut lat: Option<Agg> = None;
        let mut checks = (0, 0);
        for (name, tags, a) in totals {
            match (a, name) {
                (Agg::Counter { sum, .. }, names::HTTP_REQS) => {
                    t.reqs += sum;
                    if failed_request(tags) {
                        t.errs += sum;
                    }
                }
                (Agg::Counter { sum, .. }, names::ITERATIONS) => t.iters += sum,
                (Agg::Counter { sum, .. }, names::DATA_SENT) => t.sent += sum,
                (Agg::Counter { sum, .. }, names::DATA_RECEIVED) => t.recv += sum,
                (Agg::Rate { trues, total }, names::HTTP_REQ_FAILED) => {
                    t.fail_t += trues;
                    t.fail_n += total;
                }
                (Agg::Rate { trues, total }, names::CHECKS) => {
                    checks.0 += trues;
                    checks.1 += total;
                }
                // Histograms add exactly across tag sets (one clone per second).
                (Agg::Trend(_), names::HTTP_REQ_DURATION) if latency => match &mut lat {
                    Some(l) => l.merge(a),
                    None => lat = Some(a.clone()),
                },
                _ => {}
            }
        }
        (t.checks_t, t.checks_n) = checks;
        if let Some(Agg::Trend(h)) = lat {
            let [p50, p90, p95, p99] = h.percentiles([50.0, 90.0, 95.0, 99.0]);
            t.lat_n = h.count;
            if h.count > 0 {
                t.lat = [p50, p90, p95, p99, h.max, h.mean()].map(us);
            }
        }
        t
    }
}

/// Reads each newly finished point of the run's series once.
#[derive(Default)]
pub struct Cursor {
    /// End (in seconds) of what was already read.
    next_t: u64,
}

impl Cursor {
    /// The points that finished since the last call.
    pub fn new_points(&mut self, series: &volley_metrics::Series) -> Vec<Pt> {
        let pts = &series.points;
        // Only the last few can be new: walk back to the first that ends after `next_t`.
        let first = pts
            .iter()
            .rposition(|p| p.t + p.w <= self.next_t)
            .map_or(0, |i| i + 1);
        let mut out = Vec::new();
        for p in &pts[first..] {
            let pt = Pt::from_point(p);
            out.push(if p.t < self.next_t {
                pt.tail(self.next_t)
            } else {
                pt
            });
            self.next_t = p.t + p.w;
        }
        out
    }
}

/// A point as the page gets it: the struct (to merge) and its JSON (serialised once).
struct Entry {
    pt: Pt,
    json: Arc<str>,
}

fn to_json(pt: &Pt) -> Arc<str> {
    serde_json::to_string(pt).unwrap_or_default().into()
}

/// The points so far, bounded: at most `max` entries, neighbours merged pairwise beyond.
pub struct History {
    entries: VecDeque<Entry>,
    max: usize,
}

impl History {
    pub fn new(max: usize) -> History {
        History {
            entries: VecDeque::new(),
            max: max.max(2),
        }
    }

    pub fn push(&mut self, pt: Pt, json: Arc<str>) {
        self.entries.push_back(Entry { pt, json });
        if self.entries.len() > self.max {
            self.coarsen();
        }
    }

    fn coarsen(&mut self) {
        let old = std::mem::take(&mut self.entries);
        let mut it = old.into_iter();
        while let Some(mut a) = it.next() {
            if let Some(b) = it.next() {
                a.pt.absorb(&b.pt);
                a.json = to_json(&a.pt);
            }
            self.entries.push_back(a);
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The points' JSON, oldest first, comma-separated (a JSON array's inside).
    pub fn json_list(&self) -> String {
        let mut s = String::with_capacity(self.entries.len() * 200);
        for (i, e) in self.entries.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&e.json);
        }
        s
    }

    pub fn points(&self) -> impl Iterator<Item = &Pt> {
        self.entries.iter().map(|e| &e.pt)
    }
}

/// Serialise a point for the page (and the history).
pub fn point_json(pt: &Pt) -> Arc<str> {
    to_json(pt)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(t: u64, reqs: f64, p99: f64) -> Pt {
        Pt {
            t,
            w: 1,
            reqs,
            lat_n: reqs as u64,
            lat: [p99 / 2.0, p99, p99, p99, p99],
            vus: Some(t as f64),
            ..Pt::default()
        }
    }

    #[test]
    fn history_stays_bounded_and_counts_stay_exact() {
        let mut h = History::new(100);
        let mut total = 0.0;
        for t in 0..10_000 {
            let p = pt(t, (t % 7) as f64, 5.0);
            total += p.reqs;
            let j = point_json(&p);
            h.push(p, j);
        }
        assert!(h.len() <= 100, "{}", h.len());
        assert_eq!(h.points().map(|p| p.reqs).sum::<f64>(), total);
        assert_eq!(h.points().map(|p| p.w).sum::<u64>(), 10_000);
        let v: Vec<&Pt> = h.points().collect();
        for w in v.windows(2) {
            assert_eq!(w[0].t + w[0].w, w[1].t, "contiguous");
        }
        assert_eq!(
            v.last().unwrap().vus,
            Some(9999.0),
            "gauges keep the latest"
        );
        let list: serde_json::Value =
            serde_json::from_str(&format!("[{}]", h.json_list())).unwrap();
        assert_eq!(list.as_array().unwrap().len(), h.len());
    }

    #[test]
    fn merged_latency_is_count_weighted() {
        let mut a = pt(0, 1.0, 10.0);
        a.absorb(&pt(1, 3.0, 2.0));
        assert_eq!((a.t, a.w, a.lat_n), (0, 2, 4));
        assert_eq!(a.lat[1], 4.0);
        assert_eq!(a.lat[4], 10.0, "max stays the max");
    }

    #[test]
    fn a_grown_bucket_gives_only_its_new_share() {
        let mut p = pt(0, 8.0, 1.0);
        p.w = 4;
        let tail = p.tail(3);
        assert_eq!((tail.t, tail.w, tail.reqs), (3, 1, 2.0));
    }
}
