//! A scenario's live counters (read by bodies, `k6/execution` and the progress display) and
//! its final counts.

use super::Scenario;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Instant, SystemTime};

/// A scenario's live counters, readable by bodies (`k6/execution`) and the progress display.
#[derive(Debug)]
pub struct ScenarioState {
    pub spec: Scenario,
    pub(super) started: OnceLock<(Instant, SystemTime)>,
    /// Iterations handed out (the next one's index in the scenario).
    pub(super) next: AtomicU64,
    pub(super) completed: AtomicU64,
    pub(super) interrupted: AtomicU64,
    pub(super) dropped: AtomicU64,
    pub(super) active: AtomicU64,
}

impl ScenarioState {
    pub(super) fn new(spec: Scenario) -> ScenarioState {
        ScenarioState {
            spec,
            started: OnceLock::new(),
            next: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            interrupted: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            active: AtomicU64::new(0),
        }
    }

    /// When the scenario started (None before its `startTime`).
    pub fn started(&self) -> Option<(Instant, SystemTime)> {
        self.started.get().copied()
    }

    pub fn completed(&self) -> u64 {
        self.completed.load(Ordering::Relaxed)
    }

    pub fn interrupted(&self) -> u64 {
        self.interrupted.load(Ordering::Relaxed)
    }

    /// Iterations the arrival-rate executors could not start (no VU free, `maxVUs` reached).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// VUs inside an iteration now.
    pub fn active(&self) -> u64 {
        self.active.load(Ordering::Relaxed)
    }

    /// Past its duration, or all its iterations done.
    pub fn has_ended(&self) -> bool {
        let exhausted = self
            .spec
            .executor
            .total_iterations()
            .is_some_and(|n| self.completed() + self.interrupted() >= n);
        exhausted
            || self
                .started()
                .is_some_and(|(t, _)| t.elapsed() >= self.spec.executor.duration())
    }

    /// 0..1: iterations done of the total for iteration-based executors, time elapsed of the
    /// duration for the others (k6's `exec.scenario.progress`).
    pub fn progress(&self) -> f64 {
        let Some((t, _)) = self.started() else {
            return 0.0;
        };
        let p = match self.spec.executor.total_iterations() {
            Some(n) if n > 0 => {
                let by_iter = (self.completed() + self.interrupted()) as f64 / n as f64;
                let by_time = t.elapsed().as_secs_f64()
                    / self.spec.executor.duration().as_secs_f64().max(1e-9);
                by_iter.max(by_time)
            }
            _ => t.elapsed().as_secs_f64() / self.spec.executor.duration().as_secs_f64().max(1e-9),
        };
        p.clamp(0.0, 1.0)
    }
}

/// A scenario's final counts.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioStats {
    pub name: String,
    pub executor: &'static str,
    pub completed: u64,
    pub interrupted: u64,
    pub dropped: u64,
}
