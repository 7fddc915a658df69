//! Execution segments on the scheduler: the four quarters of a test, run one after the other
//! with a fake body, add up to the unsplit run (iterations, arrivals) and their test-wide VU
//! ids and iteration indexes are disjoint and complete.

use super::*;
use crate::executor::{
    ConstantArrivalRate, ConstantVus, PerVuIterations, RampingArrivalRate, RampingVus,
    SharedIterations,
};
use crate::segment::Tuple;
use std::collections::BTreeSet;
use std::sync::Mutex;

/// (test-wide VU id, test-wide iteration index) of every iteration.
type Log = Arc<Mutex<Vec<(u64, u64)>>>;

struct Body {
    id: u64,
    env: WorkerEnv,
    log: Log,
}

impl VuBody for Body {
    async fn run(&mut self, phase: Phase) -> Outcome {
        let Phase::Iteration(c) = phase else {
            return Outcome::Ok;
        };
        let entry = (
            self.env.vu_id_in_test(self.id),
            self.env.iteration_in_test(c.iteration),
        );
        self.log.lock().unwrap().push(entry);
        tokio::time::sleep(Duration::from_millis(20)).await;
        Outcome::Ok
    }
}

struct Factory(Log);

impl VuFactory for Factory {
    type Body = Body;
    fn create(&self, env: &WorkerEnv, id: u64, _: Option<usize>) -> Result<Body, String> {
        Ok(Body {
            id,
            env: env.clone(),
            log: self.0.clone(),
        })
    }
}

/// Run `ex` as the whole test (None) or as one segment of `0,1/4,2/4,3/4,1`.
fn run_one(ex: &Executor, segment: Option<&str>) -> (Vec<(u64, u64)>, u64) {
    let mut plan = VuPlan {
        scenarios: vec![Scenario::new("s", ex.clone())],
        threads: 2,
        ..Default::default()
    };
    if let Some(s) = segment {
        plan = plan.segmented(Tuple::parse(Some(s), Some("0,1/4,2/4,3/4,1")).unwrap());
    }
    let log: Log = Default::default();
    let r = run_vus(&plan, Arc::new(Factory(log.clone())), &RunControl::new()).unwrap();
    let got = log.lock().unwrap().clone();
    (got, r.scenarios[0].completed)
}

const QUARTERS: [&str; 4] = ["0:1/4", "1/4:2/4", "2/4:3/4", "3/4:1"];

/// Runs the quarters; returns (whole run's iterations, the quarters' iterations, every
/// quarter's VU ids, every quarter's iteration indexes).
fn split(ex: Executor) -> (u64, u64, Vec<BTreeSet<u64>>, Vec<BTreeSet<u64>>) {
    let (_, whole) = run_one(&ex, None);
    let (mut sum, mut vus, mut iters) = (0, Vec::new(), Vec::new());
    for q in QUARTERS {
        let (log, n) = run_one(&ex, Some(q));
        sum += n;
        vus.push(log.iter().map(|e| e.0).collect());
        iters.push(log.iter().map(|e| e.1).collect());
    }
    (whole, sum, vus, iters)
}

/// The sets are pairwise disjoint and together are exactly `all`.
fn partition(sets: &[BTreeSet<u64>], all: impl Iterator<Item = u64>) {
    let mut union = BTreeSet::new();
    for s in sets {
        for x in s {
            assert!(union.insert(*x), "{x} in two segments: {sets:?}");
        }
    }
    assert_eq!(union, all.collect::<BTreeSet<_>>(), "{sets:?}");
}

#[test]
fn shared_iterations_split_exactly() {
    let (whole, sum, vus, iters) = split(Executor::SharedIterations(SharedIterations {
        vus: 6,
        iterations: 50,
        max_duration: Duration::from_secs(30),
    }));
    assert_eq!((whole, sum), (50, 50));
    partition(&vus, 1..=6);
    partition(&iters, 0..50);
}

#[test]
fn per_vu_iterations_split_exactly() {
    let (whole, sum, vus, iters) = split(Executor::PerVuIterations(PerVuIterations {
        vus: 7,
        iterations: 3,
        max_duration: Duration::from_secs(30),
    }));
    assert_eq!((whole, sum), (21, 21));
    partition(&vus, 1..=7);
    // Iteration indexes are unique across the segments.
    assert_eq!(iters.iter().map(BTreeSet::len).sum::<usize>(), 21);
    partition(&iters, iters.iter().flatten().copied());
}

#[test]
fn constant_vus_split_their_vus() {
    let (_, _, vus, iters) = split(Executor::ConstantVus(ConstantVus {
        vus: 9,
        duration: Duration::from_millis(300),
    }));
    // 9 VUs in quarters: 3, 2, 2, 2 with ids striped over 1..=9.
    assert_eq!(
        vus.iter().map(BTreeSet::len).collect::<Vec<_>>(),
        [3, 2, 2, 2]
    );
    partition(&vus, 1..=9);
    partition(&iters, iters.iter().flatten().copied());
}

#[test]
fn ramping_vus_follow_the_whole_ramp_by_test_wide_id() {
    let stage = |ms, target| Stage {
        duration: Duration::from_millis(ms),
        target,
    };
    let (_, _, vus, _) = split(Executor::RampingVus(RampingVus::new(
        0,
        vec![stage(200, 6), stage(300, 6)],
    )));
    assert_eq!(
        vus.iter().map(BTreeSet::len).collect::<Vec<_>>(),
        [2, 2, 1, 1]
    );
    partition(&vus, 1..=6);
}

#[test]
fn constant_arrival_rate_splits_the_arrivals() {
    let (whole, sum, _, iters) = split(Executor::ConstantArrivalRate(ConstantArrivalRate {
        rate: 40.0,
        time_unit: Duration::from_secs(1),
        duration: Duration::from_secs(1),
        pre_allocated_vus: 8,
        max_vus: 8,
    }));
    assert_eq!((whole, sum), (40, 40));
    assert_eq!(iters.iter().map(BTreeSet::len).collect::<Vec<_>>(), [10; 4]);
    partition(&iters, 0..40);
}

#[test]
fn ramping_arrival_rate_splits_the_arrivals() {
    let (whole, sum, _, iters) = split(Executor::RampingArrivalRate(RampingArrivalRate {
        start_rate: 0.0,
        time_unit: Duration::from_secs(1),
        stages: vec![Stage {
            duration: Duration::from_secs(1),
            target: 50,
        }],
        pre_allocated_vus: 8,
        max_vus: 8,
    }));
    // ∫ = 25: k6 counts arrivals from one, so 25 in all.
    assert_eq!(whole, 25);
    assert_eq!(sum, whole);
    partition(&iters, 0..25);
}
