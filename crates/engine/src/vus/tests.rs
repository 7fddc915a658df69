//! The scheduler with a fake body (a timer instead of JavaScript): exact iteration counts,
//! arrival schedules, drops, graceful stops and VU blocks per scenario.

use super::*;
use crate::executor::{
    ConstantArrivalRate, ConstantVus, PerVuIterations, RampingVus, SharedIterations,
};
use std::collections::HashMap;
use std::sync::Mutex;

/// (VU id, scenario, iteration index) of every iteration started.
type Log = Arc<Mutex<Vec<(u64, usize, u64)>>>;

struct Fake {
    id: u64,
    work: Duration,
    log: Log,
}

impl VuBody for Fake {
    async fn run(&mut self, phase: Phase) -> Outcome {
        let Phase::Iteration(c) = phase else {
            return Outcome::Ok;
        };
        self.log
            .lock()
            .unwrap()
            .push((self.id, c.scenario, c.iteration));
        tokio::select! {
            _ = tokio::time::sleep(self.work) => Outcome::Ok,
            _ = c.stop.stopped() => Outcome::Interrupted,
        }
    }
}

struct FakeFactory {
    work: Vec<Duration>,
    log: Log,
    created: Mutex<Vec<(u64, Option<usize>)>>,
}

impl VuFactory for FakeFactory {
    type Body = Fake;
    fn create(&self, _: &WorkerEnv, id: u64, sc: Option<usize>) -> Result<Fake, String> {
        self.created.lock().unwrap().push((id, sc));
        Ok(Fake {
            id,
            work: sc.map_or(Duration::ZERO, |i| self.work[i]),
            log: self.log.clone(),
        })
    }
}

fn run(scenarios: Vec<Scenario>, work: Vec<Duration>) -> (VuRunResult, Arc<FakeFactory>) {
    let plan = VuPlan {
        scenarios,
        threads: 2,
        iteration_tags: TagSet::new(),
        scenario_tag: true,
        ..Default::default()
    };
    let f = Arc::new(FakeFactory {
        work,
        log: Default::default(),
        created: Default::default(),
    });
    let r = run_vus(&plan, f.clone(), &RunControl::new()).unwrap();
    (r, f)
}

fn counter(r: &VuRunResult, name: &str, scenario: &str) -> f64 {
    r.metrics
        .iter()
        .filter(|m| m.name == name && m.tags.get("scenario").map(String::as_str) == Some(scenario))
        .filter_map(|m| match m.to_agg().ok()? {
            volley_metrics::Agg::Counter { sum, .. } => Some(sum),
            _ => None,
        })
        .sum()
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn shared_iterations_run_exactly_the_total_across_vus() {
    let s = Scenario::new(
        "shared",
        Executor::SharedIterations(SharedIterations {
            vus: 3,
            iterations: 50,
            max_duration: secs(30),
        }),
    );
    let (r, f) = run(vec![s], vec![Duration::from_millis(1)]);
    assert_eq!(counter(&r, "iterations", "shared"), 50.0);
    assert_eq!(r.scenarios[0].completed, 50);
    let log = f.log.lock().unwrap();
    let mut idx: Vec<u64> = log.iter().map(|e| e.2).collect();
    idx.sort();
    assert_eq!(
        idx,
        (0..50).collect::<Vec<_>>(),
        "each index handed out once"
    );
}

#[test]
fn per_vu_iterations_run_exactly_n_on_each_vu() {
    let s = Scenario::new(
        "each",
        Executor::PerVuIterations(PerVuIterations {
            vus: 4,
            iterations: 5,
            max_duration: secs(30),
        }),
    );
    let (r, f) = run(vec![s], vec![Duration::from_millis(2)]);
    assert_eq!(counter(&r, "iterations", "each"), 20.0);
    let mut per_vu: HashMap<u64, u32> = HashMap::new();
    for (vu, _, _) in f.log.lock().unwrap().iter() {
        *per_vu.entry(*vu).or_default() += 1;
    }
    assert_eq!(per_vu.len(), 4);
    assert!(per_vu.values().all(|n| *n == 5), "{per_vu:?}");
}

#[test]
fn constant_arrival_rate_starts_every_due_iteration() {
    let s = Scenario::new(
        "rate",
        Executor::ConstantArrivalRate(ConstantArrivalRate {
            rate: 200.0,
            time_unit: secs(1),
            duration: secs(2),
            pre_allocated_vus: 4,
            max_vus: 20,
        }),
    );
    let (r, _) = run(vec![s], vec![Duration::from_millis(2)]);
    // 200/s for 2 s is exactly 400 arrivals; with VUs to spare none is dropped.
    assert_eq!(counter(&r, "iterations", "rate"), 400.0);
    assert_eq!(r.scenarios[0].dropped, 0);
    assert!(
        r.metrics
            .iter()
            .any(|m| m.name == "iteration_duration_corrected"),
        "arrival-rate iterations carry the corrected duration"
    );
}

#[test]
fn arrivals_without_a_free_vu_are_dropped_and_counted() {
    let s = Scenario::new(
        "busy",
        Executor::ConstantArrivalRate(ConstantArrivalRate {
            rate: 50.0,
            time_unit: secs(1),
            duration: secs(1),
            pre_allocated_vus: 1,
            max_vus: 2,
        }),
    );
    // Each iteration takes 300 ms: 2 VUs can start at most ~8 of the 50 due.
    let (r, f) = run(vec![s], vec![Duration::from_millis(300)]);
    let done = counter(&r, "iterations", "busy");
    let dropped = counter(&r, "dropped_iterations", "busy");
    assert_eq!(
        done + dropped,
        50.0,
        "every due iteration is run or dropped"
    );
    assert!(dropped >= 30.0, "dropped {dropped}");
    assert_eq!(r.scenarios[0].dropped as f64, dropped);
    // The second VU was created when the first was busy (k6's maxVUs).
    let created = f.created.lock().unwrap();
    assert_eq!(created.iter().filter(|c| c.1 == Some(0)).count(), 2);
}

#[test]
fn graceful_stop_interrupts_iterations_that_run_past_it() {
    let mut s = Scenario::new(
        "slow",
        Executor::ConstantVus(ConstantVus {
            vus: 2,
            duration: secs(1),
        }),
    );
    s.graceful_stop = Duration::from_millis(300);
    let (r, _) = run(vec![s], vec![secs(60)]);
    // Both VUs' only iteration outlives duration + gracefulStop: interrupted, not counted.
    assert_eq!(r.scenarios[0].interrupted, 2);
    assert_eq!(r.scenarios[0].completed, 0);
    assert_eq!(counter(&r, "iterations", "slow"), 0.0);
}

#[test]
fn scenarios_run_side_by_side_on_their_own_vus() {
    let mut b = Scenario::new(
        "b",
        Executor::PerVuIterations(PerVuIterations {
            vus: 2,
            iterations: 3,
            max_duration: secs(10),
        }),
    );
    b.start_time = Duration::from_millis(200);
    b.tags.insert("kind".into(), "write".into());
    let a = Scenario::new(
        "a",
        Executor::SharedIterations(SharedIterations {
            vus: 3,
            iterations: 9,
            max_duration: secs(10),
        }),
    );
    let (r, f) = run(vec![a, b], vec![Duration::from_millis(5); 2]);
    assert_eq!(counter(&r, "iterations", "a"), 9.0);
    assert_eq!(counter(&r, "iterations", "b"), 6.0);
    // vus_max is the sum; VU ids are blocks: a has 1..=3, b 4..=5.
    let created = f.created.lock().unwrap();
    let ids = |sc| {
        let mut v: Vec<u64> = created
            .iter()
            .filter(|c| c.1 == Some(sc))
            .map(|c| c.0)
            .collect();
        v.sort();
        v
    };
    assert_eq!(ids(0), [1, 2, 3]);
    assert_eq!(ids(1), [4, 5]);
    assert!(created.contains(&(0, None)), "the setup VU");
    // The scenario's tags are on its iteration metrics.
    assert!(r.metrics.iter().any(|m| m.name == "iterations"
        && m.tags.get("scenario").map(String::as_str) == Some("b")
        && m.tags.get("kind").map(String::as_str) == Some("write")));
    let vus_max = r
        .metrics
        .iter()
        .find(|m| m.name == "vus_max")
        .and_then(|m| match m.to_agg().ok()? {
            volley_metrics::Agg::Gauge { max, .. } => Some(max),
            _ => None,
        });
    assert_eq!(vus_max, Some(5.0));
}

#[test]
fn ramping_vus_follow_the_stages() {
    let s = Scenario::new(
        "ramp",
        Executor::RampingVus(RampingVus::new(
            0,
            vec![
                Stage {
                    duration: secs(1),
                    target: 4,
                },
                Stage {
                    duration: secs(2),
                    target: 4,
                },
            ],
        )),
    );
    let (r, f) = run(vec![s], vec![Duration::from_millis(20)]);
    let vus = r.metrics.iter().find(|m| m.name == "vus").unwrap();
    let volley_metrics::Agg::Gauge { max, .. } = vus.to_agg().unwrap() else {
        panic!("vus is a gauge")
    };
    assert_eq!(max, 4.0);
    // The top VU only joined at the plateau: it ran fewer iterations than VU 1.
    let log = f.log.lock().unwrap();
    let n = |id| log.iter().filter(|e| e.0 == id).count();
    assert!(n(1) > n(4) && n(4) > 0, "vu1 {} vu4 {}", n(1), n(4));
}

#[test]
fn first_iterations_are_spread_out() {
    assert_eq!(start_offset(1, 1), Duration::ZERO);
    assert_eq!(start_offset(1, 50), Duration::ZERO);
    assert_eq!(start_offset(50, 50), Duration::from_micros(9800));
    assert_eq!(start_offset(5000, 5000), Duration::from_micros(999_800));
    assert!(start_offset(100_000, 100_000) < START_SPREAD_MAX);
}

#[test]
fn ramp_down_interrupts_after_graceful_ramp_down_not_graceful_stop() {
    let mut ramp = RampingVus::new(
        2,
        vec![
            Stage {
                duration: secs(1),
                target: 2,
            },
            Stage {
                duration: Duration::from_millis(500),
                target: 0,
            },
        ],
    );
    ramp.graceful_ramp_down = Duration::from_millis(200);
    let s = Scenario::new("down", Executor::RampingVus(ramp));
    // gracefulStop stays at 30 s: only the ramp-down can end these 60 s iterations early.
    let (r, _) = run(vec![s], vec![secs(60)]);
    assert_eq!(r.scenarios[0].interrupted, 2);
    assert_eq!(r.scenarios[0].completed, 0);
    assert!(r.elapsed < secs(10), "{:?}", r.elapsed);
}

/// A body that waits 30 s per iteration: idly (a `sleep`) in scenario 0, as a request in the
/// others; it logs (scenario, how long after the start the wait ended).
struct Waiter {
    started: Instant,
    ends: Arc<Mutex<Vec<(usize, Duration)>>>,
}

impl VuBody for Waiter {
    async fn run(&mut self, phase: Phase) -> Outcome {
        let Phase::Iteration(c) = phase else {
            return Outcome::Ok;
        };
        let long = tokio::time::sleep(secs(30));
        let out = if c.scenario == 0 {
            tokio::select! {
                _ = long => Outcome::Ok,
                _ = c.stop.interrupted() => Outcome::Interrupted,
            }
        } else {
            tokio::select! {
                _ = long => Outcome::Ok,
                _ = c.stop.stopped() => Outcome::Interrupted,
            }
        };
        let at = self.started.elapsed();
        self.ends.lock().unwrap().push((c.scenario, at));
        out
    }
}

struct WaiterFactory(Instant, Arc<Mutex<Vec<(usize, Duration)>>>);

impl VuFactory for WaiterFactory {
    type Body = Waiter;
    fn create(&self, _: &WorkerEnv, _: u64, _: Option<usize>) -> Result<Waiter, String> {
        Ok(Waiter {
            started: self.0,
            ends: self.1.clone(),
        })
    }
}

#[test]
fn ctrl_c_ends_idle_waits_at_once_and_gives_requests_a_short_grace() {
    let each = |name: &str, grace_ms: u64| {
        let mut s = Scenario::new(
            name,
            Executor::PerVuIterations(PerVuIterations {
                vus: 2,
                iterations: 1,
                max_duration: secs(60),
            }),
        );
        s.graceful_stop = Duration::from_millis(grace_ms);
        s
    };
    let plan = VuPlan {
        // Sleeping; requests with a 0.5 s gracefulStop; requests with k6's 30 s.
        scenarios: vec![
            each("idle", 30_000),
            each("short", 500),
            each("long", 30_000),
        ],
        threads: 2,
        iteration_tags: TagSet::new(),
        scenario_tag: true,
        ..Default::default()
    };
    let ends = Arc::new(Mutex::new(Vec::new()));
    let ctl = RunControl::new();
    let f = Arc::new(WaiterFactory(Instant::now(), ends.clone()));
    let c2 = ctl.clone();
    let at = Duration::from_millis(300);
    let t = std::thread::spawn(move || {
        std::thread::sleep(at);
        c2.interrupt();
    });
    let r = run_vus(&plan, f, &ctl).unwrap();
    t.join().unwrap();
    assert!(r.interrupted);
    for st in &r.scenarios {
        assert_eq!((st.completed, st.interrupted), (0, 2), "{st:?}");
    }
    let ends = ends.lock().unwrap();
    let after = |sc: usize| -> Vec<f64> {
        ends.iter()
            .filter(|e| e.0 == sc)
            .map(|e| e.1.saturating_sub(at).as_secs_f64())
            .collect()
    };
    // Within a watcher tick or two, not after the gracefulStop; requests get min(grace, 2 s).
    assert!(after(0).iter().all(|d| *d < 0.4), "idle: {:?}", after(0));
    assert!(
        after(1).iter().all(|d| (0.4..1.4).contains(d)),
        "short: {:?}",
        after(1)
    );
    let long = after(2);
    let grace = INTERRUPT_GRACE.as_secs_f64();
    assert!(
        long.iter().all(|d| (grace - 0.1..grace + 1.0).contains(d)),
        "long: {long:?}"
    );
}

/// Counts the `iterations` samples a worker's recorder hands its sink.
struct CountSink(Arc<AtomicU64>);

impl volley_metrics::SampleSink for CountSink {
    fn sample(
        &mut self,
        _: u32,
        desc: &volley_metrics::MetricDesc,
        _: Option<&Arc<TagSet>>,
        _: f64,
    ) {
        if desc.key.name == "iterations" {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn flush(&mut self) {}
}

#[test]
fn the_plans_sample_sink_sees_every_worker_whatever_the_body() {
    // The body sets nothing on its recorder: the plan's sink is the engine's job.
    let seen = Arc::new(AtomicU64::new(0));
    let made = Arc::new(AtomicU64::new(0));
    let (seen2, made2) = (seen.clone(), made.clone());
    let plan = VuPlan {
        scenarios: vec![Scenario::new(
            "s",
            Executor::SharedIterations(SharedIterations {
                vus: 4,
                iterations: 30,
                max_duration: secs(30),
            }),
        )],
        threads: 2,
        sample_sink: Some(SinkMaker(Arc::new(move || {
            made2.fetch_add(1, Ordering::Relaxed);
            Some(Box::new(CountSink(seen2.clone())) as Box<dyn volley_metrics::SampleSink>)
        }))),
        series_guard: Some(Arc::new(volley_metrics::SeriesGuard::new(
            10,
            Box::new(|_| {}),
        ))),
        ..Default::default()
    };
    let f = Arc::new(FakeFactory {
        work: vec![Duration::from_millis(1)],
        log: Default::default(),
        created: Default::default(),
    });
    run_vus(&plan, f, &RunControl::new()).unwrap();
    assert_eq!(made.load(Ordering::Relaxed), 2, "one sink per worker");
    assert_eq!(seen.load(Ordering::Relaxed), 30, "every iteration sample");
}
