//! The breaking-point search (`--find-max-rate --slo ...`): open-model probes growing
//! geometrically from `start` until one breaks the SLO, then bisection between the highest
//! passing and the lowest failing rate until they are within `tolerance` of each other, then
//! a repeat run at the answer. A probe that kept up with the offered rate but broke a
//! latency or error clause is repeated once before it counts (noise or a real break?). A
//! hard failure or a generator-bound probe ends it at once.

use super::judge::{judge, Verdict};
use super::slo::Slo;
use super::{rate_text, step_of, Probe};
use volley_metrics::capacity::{Capacity, Step};
use volley_metrics::RunResult;

/// The search's knobs.
#[derive(Clone, Debug)]
pub struct SearchConfig {
    /// First probe's rate (requests/s).
    pub start: f64,
    /// Growth factor between probes until the SLO breaks.
    pub factor: f64,
    /// Stop bisecting when (failing − passing) / passing is at most this.
    pub tolerance: f64,
    /// Never probe above this rate.
    pub max_rate: f64,
}

/// Most probes of one search (growth, bisection and confirmation together).
pub const MAX_PROBES: usize = 40;
/// Most halvings when even the first probe breaks the SLO.
const MAX_SHRINK: usize = 6;

/// A finished search: its section of the result file and the run the file's metrics show
/// (the confirming run, or the last probe).
pub struct Searched {
    pub capacity: Capacity,
    pub reference: Option<RunResult>,
}

struct State<'a> {
    slo: &'a Slo,
    steps: Vec<Step>,
    reference: Option<RunResult>,
}

enum Probed {
    Verdict(Verdict),
    Stopped,
}

impl State<'_> {
    fn probe(&mut self, p: &mut dyn Probe, rate: f64, role: &str) -> Result<Probed, String> {
        let first = self.probe_once(p, rate, role)?;
        // A probe that kept up with the offered load and broke only the latency or error
        // clauses is run once more: on a busy machine one stalled second breaks a p99 far
        // below the capacity, and only a repeat tells noise from a real break.
        let kept_up = self
            .steps
            .last()
            .is_some_and(|s| s.throughput >= super::judge::SUSTAINED * rate && s.dropped == 0);
        match first {
            Probed::Verdict(Verdict::Fail(_)) if kept_up => self.probe_once(p, rate, "retry"),
            other => Ok(other),
        }
    }

    fn probe_once(&mut self, p: &mut dyn Probe, rate: f64, role: &str) -> Result<Probed, String> {
        if p.stopped() || self.steps.len() >= MAX_PROBES {
            return Ok(Probed::Stopped);
        }
        let run = p.run(rate, role)?;
        let mut s = step_of(&run, rate, role);
        let offered = if run.comparable { rate } else { 0.0 };
        let v = judge(self.slo, &s, offered, run.threads);
        s.slo_ok = Some(v == Verdict::Pass);
        s.why = match &v {
            Verdict::Pass => String::new(),
            Verdict::Fail(w) => w.clone(),
            Verdict::Hard(w) => format!("hard failure: {w}"),
            Verdict::GeneratorBound(w) => format!("generator-bound: {w}"),
        };
        p.step_done(&s);
        self.steps.push(s);
        let interrupted = run.result.meta.interrupted;
        self.reference = Some(run.result);
        if interrupted {
            return Ok(Probed::Stopped);
        }
        Ok(Probed::Verdict(v))
    }
}

/// Run the search with `probe`.
pub fn find_max_rate(
    cfg: &SearchConfig,
    slo: &Slo,
    probe: &mut dyn Probe,
) -> Result<Searched, String> {
    let mut st = State {
        slo,
        steps: Vec::new(),
        reference: None,
    };
    let (mut pass, mut fail): (Option<f64>, Option<f64>) = (None, None);
    let mut rate = cfg.start.min(cfg.max_rate);
    let mut end: Option<(String, String)> = None;
    // Growth (or shrinking while nothing passed yet).
    let mut shrinks = 0;
    while end.is_none() {
        let role = if pass.is_none() && fail.is_some() {
            "shrink"
        } else {
            "grow"
        };
        match st.probe(probe, rate, role)? {
            Probed::Stopped => end = Some(interrupted()),
            Probed::Verdict(Verdict::Pass) => {
                pass = Some(rate);
                if fail.is_some() {
                    break;
                }
                if rate >= cfg.max_rate {
                    end = Some((
                        "no-break".into(),
                        format!(
                            "the SLO ({}) held up to --max-rate {}: the capacity is higher",
                            slo.source,
                            rate_text(rate)
                        ),
                    ));
                } else {
                    rate = (rate * cfg.factor).min(cfg.max_rate);
                }
            }
            Probed::Verdict(Verdict::Fail(_)) => {
                fail = Some(rate);
                if pass.is_some() {
                    break;
                }
                shrinks += 1;
                rate /= cfg.factor;
                if shrinks > MAX_SHRINK || rate < 1.0 {
                    end = Some((
                        "slo-unmet".into(),
                        format!(
                            "the SLO ({}) was not met even at {}",
                            slo.source,
                            rate_text(fail.unwrap_or(rate))
                        ),
                    ));
                }
            }
            Probed::Verdict(v) => end = Some(stop(&v, &st, pass)),
        }
    }
    // Bisection.
    while end.is_none() {
        let (Some(lo), Some(hi)) = (pass, fail) else {
            break;
        };
        if (hi - lo) / lo <= cfg.tolerance {
            break;
        }
        let mid = (lo + hi) / 2.0;
        match st.probe(probe, mid, "bisect")? {
            Probed::Stopped => end = Some(interrupted()),
            Probed::Verdict(Verdict::Pass) => pass = Some(mid),
            Probed::Verdict(Verdict::Fail(_)) => fail = Some(mid),
            Probed::Verdict(v) => end = Some(stop(&v, &st, pass)),
        }
    }
    // Confirmation: a repeat run at the answer; one step down if it does not hold.
    let mut confirmed = None;
    if end.is_none() {
        if let Some(lo) = pass {
            for attempt in [lo, lo * (1.0 - cfg.tolerance.max(0.02))] {
                match st.probe(probe, attempt, "confirm")? {
                    Probed::Stopped => {
                        end = Some(interrupted());
                        break;
                    }
                    Probed::Verdict(Verdict::Pass) => {
                        pass = Some(attempt);
                        confirmed = Some(true);
                        break;
                    }
                    Probed::Verdict(Verdict::Fail(_)) => confirmed = Some(false),
                    Probed::Verdict(v) => {
                        end = Some(stop(&v, &st, pass));
                        break;
                    }
                }
            }
        }
    }
    let (finding, message) = end.unwrap_or_else(|| {
        let lo = pass.unwrap_or(0.0);
        let broke = fail.map_or(String::new(), |f| {
            let why = st
                .steps
                .iter()
                .rev()
                .find(|s| s.load == f)
                .map_or(String::new(), |s| format!(": {}", s.why));
            format!("; broke at {}{why}", rate_text(f))
        });
        let conf = match confirmed {
            Some(true) => "confirmed by a repeat run",
            _ => "NOT confirmed: the repeat run broke the SLO, the target is unstable near it",
        };
        (
            "capacity".into(),
            format!(
                "max rate under SLO ({}): {} ({conf}{broke})",
                slo.source,
                rate_text(lo)
            ),
        )
    });
    let max_rate = match finding.as_str() {
        "capacity" | "no-break" | "hard-failure" => pass,
        _ => None,
    };
    Ok(Searched {
        capacity: Capacity {
            kind: "search".into(),
            variable: "rate".into(),
            slo: Some(slo.source.clone()),
            steps: st.steps,
            knee: None,
            max_rate,
            failed_rate: fail,
            confirmed,
            finding,
            message,
        },
        reference: st.reference,
    })
}

fn interrupted() -> (String, String) {
    ("interrupted".into(), "the search was interrupted".into())
}

/// The finding of a probe that ends the search at once.
fn stop(v: &Verdict, st: &State<'_>, pass: Option<f64>) -> (String, String) {
    let last = st.steps.last();
    let at = last.map_or(0.0, |s| s.load);
    let good = pass.map_or(String::new(), |p| {
        format!("; the highest rate that met the SLO was {}", rate_text(p))
    });
    match v {
        Verdict::Hard(why) => (
            "hard-failure".into(),
            format!("the target failed hard at {}: {why}{good}", rate_text(at)),
        ),
        Verdict::GeneratorBound(why) => (
            "generator-bound".into(),
            format!(
                "generator-bound at {}: {why}. This is Volley's limit, not the target's \
                 capacity: give it more --threads or cores, or spread the load over machines{good}",
                rate_text(last.map_or(0.0, |s| s.throughput))
            ),
        ),
        _ => interrupted(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::Probed as Run;
    use volley_metrics::{RunMeta, Series};

    /// A simulated target of capacity `cap` (latency climbs past it); `hard_above`: it
    /// answers errors above that rate.
    struct Sim {
        cap: f64,
        hard_above: f64,
        probes: Vec<(f64, String)>,
    }

    impl Probe for Sim {
        fn run(&mut self, load: f64, role: &str) -> Result<Run, String> {
            self.probes.push((load, role.to_string()));
            let meta = RunMeta::new("http", "sim", vec![]);
            let mut result = RunResult::new(meta, serde_json::json!({}), vec![], Series::new(10));
            result.meta.duration_s = 1.0;
            Ok(Run {
                result,
                generator_busy: None,
                threads: 2,
                comparable: true,
            })
        }
        fn stopped(&self) -> bool {
            false
        }
        fn step_done(&mut self, s: &Step) {
            let _ = s;
        }
    }

    /// The judge sees the simulated figures: patch the step the real `step_of` built from
    /// an empty result (tests of the search's control flow, not of the figures).
    fn search(cap: f64, hard_above: f64, tol: f64) -> (Searched, Vec<(f64, String)>) {
        struct Wrap(Sim);
        impl Probe for Wrap {
            fn run(&mut self, load: f64, role: &str) -> Result<Run, String> {
                let mut r = self.0.run(load, role)?;
                let x = load.min(self.0.cap);
                let n = x as u64;
                let failed = if load > self.0.hard_above { n / 2 } else { 0 };
                let mut reqs = volley_metrics::Agg::empty(volley_metrics::MetricKind::Counter);
                for _ in 0..(n - failed) {
                    reqs.add(1.0);
                }
                let mut tags = volley_metrics::TagSet::new();
                tags.insert("status".into(), "200".into());
                let mut lat = volley_metrics::agg::TrendAgg::new();
                let ms = if load <= self.0.cap * 0.97 {
                    10.0
                } else {
                    200.0
                };
                for _ in 0..n.max(1) {
                    lat.add(ms);
                }
                let d =
                    |name: &str, kind, tags: volley_metrics::TagSet| volley_metrics::MetricDesc {
                        key: volley_metrics::MetricKey {
                            name: name.into(),
                            tags,
                        },
                        kind,
                        unit: volley_metrics::Unit::Default,
                    };
                r.result.metrics.push(volley_metrics::MetricTotal::from_agg(
                    &d("http_reqs", volley_metrics::MetricKind::Counter, tags),
                    &reqs,
                ));
                if failed > 0 {
                    let mut f = volley_metrics::Agg::empty(volley_metrics::MetricKind::Counter);
                    for _ in 0..failed {
                        f.add(1.0);
                    }
                    let mut t = volley_metrics::TagSet::new();
                    t.insert("status".into(), "500".into());
                    r.result.metrics.push(volley_metrics::MetricTotal::from_agg(
                        &d("http_reqs", volley_metrics::MetricKind::Counter, t),
                        &f,
                    ));
                }
                r.result.metrics.push(volley_metrics::MetricTotal::from_agg(
                    &d(
                        "http_req_duration",
                        volley_metrics::MetricKind::Trend,
                        Default::default(),
                    ),
                    &volley_metrics::Agg::Trend(Box::new(lat)),
                ));
                Ok(r)
            }
            fn stopped(&self) -> bool {
                false
            }
        }
        let mut w = Wrap(Sim {
            cap,
            hard_above,
            probes: vec![],
        });
        let cfg = SearchConfig {
            start: 100.0,
            factor: 2.0,
            tolerance: tol,
            max_rate: 1e6,
        };
        let slo = Slo::parse("p99<50ms").unwrap();
        let s = find_max_rate(&cfg, &slo, &mut w).unwrap();
        (s, w.0.probes)
    }

    #[test]
    fn the_search_grows_then_bisects_to_the_tolerance_then_confirms() {
        let (s, probes) = search(400.0, f64::INFINITY, 0.05);
        let c = &s.capacity;
        assert_eq!(c.finding, "capacity", "{}", c.message);
        let max = c.max_rate.unwrap();
        assert!((370.0..=400.0).contains(&max), "{max} {probes:?}");
        assert_eq!(c.confirmed, Some(true));
        assert_eq!(
            probes[..3].iter().map(|p| p.0).collect::<Vec<_>>(),
            [100.0, 200.0, 400.0]
        );
        assert_eq!(probes.last().unwrap().1, "confirm");
        assert!(
            c.message.starts_with("max rate under SLO (p99<50ms): 3"),
            "{}",
            c.message
        );
    }

    #[test]
    fn a_target_failing_hard_stops_the_search_at_once() {
        let (s, probes) = search(10_000.0, 300.0, 0.05);
        let c = &s.capacity;
        assert_eq!(c.finding, "hard-failure", "{}", c.message);
        assert_eq!(probes.len(), 3, "{probes:?}");
        assert!(c.message.contains("failed hard at 400/s"), "{}", c.message);
        assert_eq!(c.max_rate, Some(200.0));
    }
}
