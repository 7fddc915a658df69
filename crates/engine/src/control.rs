//! Stop switches shared between a run, its timers and signal handlers, and what the run is
//! doing (so a signal can say what it waits for).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// After Ctrl-C/SIGTERM, how long requests already in flight (and `teardown()`) may still
/// take: waits (sleep, timers, idle VUs) end at once, busy scripts are interrupted, and the
/// outputs are written within the 10 s `docker stop` leaves before SIGKILL.
pub const INTERRUPT_GRACE: Duration = Duration::from_secs(2);

/// Cheap to clone; every clone controls the same run.
#[derive(Clone, Default, Debug)]
pub struct RunControl {
    inner: Arc<Flags>,
}

#[derive(Default, Debug)]
struct Flags {
    stop: AtomicBool,
    hard: AtomicBool,
    interrupted: AtomicBool,
    /// When the user first interrupted (the request grace counts from here).
    interrupted_at: OnceLock<Instant>,
    /// Shared by a parent and its children: the run going on now.
    status: Arc<RunStatus>,
    /// A child stops when its parent does, but stopping a child leaves the parent running.
    parent: Option<Arc<Flags>>,
}

impl Flags {
    fn get(&self, f: fn(&Flags) -> &AtomicBool) -> bool {
        f(self).load(Ordering::Relaxed) || self.parent.as_ref().is_some_and(|p| p.get(f))
    }

    fn interrupted_at(&self) -> Option<Instant> {
        let own = self.interrupted_at.get().copied();
        own.or_else(|| self.parent.as_ref().and_then(|p| p.interrupted_at()))
    }
}

impl RunControl {
    pub fn new() -> Self {
        Self::default()
    }

    /// A control for one run inside a longer session (e.g. one A/B round): the run's own
    /// deadline stops only the child, while Ctrl-C on the parent stops every child.
    pub fn child(&self) -> RunControl {
        RunControl {
            inner: Arc::new(Flags {
                parent: Some(self.inner.clone()),
                status: self.inner.status.clone(),
                ..Flags::default()
            }),
        }
    }

    /// Start no new requests; in-flight ones finish or time out.
    pub fn stop(&self) {
        self.inner.stop.store(true, Ordering::Relaxed);
    }

    /// The user asked to stop (Ctrl-C, SIGTERM): like [`stop`](Self::stop), and waits end
    /// at once; requests in flight get [`INTERRUPT_GRACE`].
    pub fn interrupt(&self) {
        let _ = self.inner.interrupted_at.set(Instant::now());
        self.inner.interrupted.store(true, Ordering::Relaxed);
        self.stop();
    }

    /// Abandon in-flight requests too (second Ctrl-C). Results recorded so far are kept.
    pub fn hard_stop(&self) {
        self.inner.hard.store(true, Ordering::Relaxed);
        self.interrupt();
    }

    #[inline]
    pub fn is_stopped(&self) -> bool {
        self.inner.get(|f| &f.stop)
    }

    pub fn is_hard_stopped(&self) -> bool {
        self.inner.get(|f| &f.hard)
    }

    #[inline]
    pub fn was_interrupted(&self) -> bool {
        self.inner.get(|f| &f.interrupted)
    }

    /// When the user first interrupted this run (or its parent).
    pub fn interrupted_at(&self) -> Option<Instant> {
        self.inner.interrupted_at()
    }

    /// What the run is doing now.
    pub fn status(&self) -> &RunStatus {
        &self.inner.status
    }
}

/// Where a run is in its lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RunPhase {
    Starting = 0,
    Init,
    Setup,
    Iterations,
    Teardown,
    /// After the VUs: the summary, `handleSummary` and the outputs.
    Finishing,
}

/// Counts a signal handler reads to say what the run waits for. Written by the workers
/// without contention: one cache line of counters per worker.
#[derive(Debug, Default)]
pub struct RunStatus {
    phase: AtomicU8,
    /// VUs created so far, and how many the run will create at init.
    pub vus_created: AtomicU64,
    pub vus_planned: AtomicU64,
    workers: Mutex<Arc<[WaitCounts]>>,
}

/// One worker's VUs, by what they wait on now.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct WaitCounts {
    /// Waiting on requests (or asynchronous operations).
    pub requests: AtomicU64,
    /// In `sleep()` or waiting for a timer.
    pub sleeping: AtomicU64,
}

/// What the run waits on, summed over the workers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Waiting {
    pub phase: Option<RunPhase>,
    pub requests: u64,
    pub sleeping: u64,
    pub vus_created: u64,
    pub vus_planned: u64,
}

impl RunStatus {
    pub fn set_phase(&self, p: RunPhase) {
        self.phase.store(p as u8, Ordering::Relaxed);
    }

    pub fn phase(&self) -> RunPhase {
        match self.phase.load(Ordering::Relaxed) {
            1 => RunPhase::Init,
            2 => RunPhase::Setup,
            3 => RunPhase::Iterations,
            4 => RunPhase::Teardown,
            5 => RunPhase::Finishing,
            _ => RunPhase::Starting,
        }
    }

    /// Fresh counters for a run with `n` workers.
    pub fn new_workers(&self, n: usize) -> Arc<[WaitCounts]> {
        let w: Arc<[WaitCounts]> = (0..n).map(|_| WaitCounts::default()).collect();
        *self.workers.lock().unwrap() = w.clone();
        w
    }

    /// A snapshot for the stop message.
    pub fn waiting(&self) -> Waiting {
        let w = self.workers.lock().unwrap().clone();
        let sum = |f: fn(&WaitCounts) -> &AtomicU64| -> u64 {
            w.iter().map(|c| f(c).load(Ordering::Relaxed)).sum()
        };
        Waiting {
            phase: Some(self.phase()),
            requests: sum(|c| &c.requests),
            sleeping: sum(|c| &c.sleeping),
            vus_created: self.vus_created.load(Ordering::Relaxed),
            vus_planned: self.vus_planned.load(Ordering::Relaxed),
        }
    }
}

impl Waiting {
    /// What the first Ctrl-C waits for, in words (`volley: stopping: ...`).
    pub fn describe(&self) -> String {
        let grace = INTERRUPT_GRACE.as_secs();
        let reqs = |n: u64| {
            if n == 1 {
                format!("1 request in flight (at most {grace}s)")
            } else {
                format!("{n} requests in flight (at most {grace}s)")
            }
        };
        match self.phase.unwrap_or(RunPhase::Starting) {
            RunPhase::Starting => "before the test started".into(),
            RunPhase::Init if self.vus_planned == 0 => "interrupting the script's init code".into(),
            RunPhase::Init => format!(
                "interrupting the init of VUs ({} of {} created)",
                self.vus_created, self.vus_planned
            ),
            RunPhase::Setup if self.requests > 0 => {
                format!(
                    "interrupting setup(): waiting for its {}",
                    reqs(self.requests)
                )
            }
            RunPhase::Setup => "interrupting setup()".into(),
            RunPhase::Iterations => {
                let mut parts = Vec::new();
                if self.sleeping > 0 {
                    parts.push(format!(
                        "ending the sleep of {} VU{}",
                        self.sleeping,
                        if self.sleeping == 1 { "" } else { "s" }
                    ));
                }
                if self.requests > 0 {
                    parts.push(format!("waiting for {}", reqs(self.requests)));
                }
                if parts.is_empty() {
                    parts.push("ending the running iterations".into());
                }
                parts.join(", ")
            }
            RunPhase::Teardown => format!("waiting for teardown() (at most {grace}s)"),
            RunPhase::Finishing => "writing the summary and outputs".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_follow_parents_not_the_reverse() {
        let parent = RunControl::new();
        let a = parent.child();
        a.stop();
        assert!(a.is_stopped() && !parent.is_stopped());
        let b = parent.child();
        assert!(!b.is_stopped());
        assert!(b.interrupted_at().is_none());
        parent.interrupt();
        assert!(b.is_stopped() && b.was_interrupted() && !b.is_hard_stopped());
        assert!(b.interrupted_at().is_some());
        parent.hard_stop();
        assert!(b.is_hard_stopped());
    }

    #[test]
    fn the_stop_message_says_what_the_run_waits_for() {
        let w = |phase, requests, sleeping| Waiting {
            phase: Some(phase),
            requests,
            sleeping,
            vus_created: 120,
            vus_planned: 500,
        };
        assert_eq!(
            w(RunPhase::Iterations, 3, 47).describe(),
            "ending the sleep of 47 VUs, waiting for 3 requests in flight (at most 2s)"
        );
        assert_eq!(
            w(RunPhase::Iterations, 1, 0).describe(),
            "waiting for 1 request in flight (at most 2s)"
        );
        assert_eq!(
            w(RunPhase::Init, 0, 0).describe(),
            "interrupting the init of VUs (120 of 500 created)"
        );
        assert_eq!(
            w(RunPhase::Setup, 2, 0).describe(),
            "interrupting setup(): waiting for its 2 requests in flight (at most 2s)"
        );
        assert_eq!(
            w(RunPhase::Teardown, 0, 0).describe(),
            "waiting for teardown() (at most 2s)"
        );
    }

    #[test]
    fn a_child_run_reports_into_its_parents_status() {
        let parent = RunControl::new();
        let c = parent.child();
        let w = c.status().new_workers(2);
        w[1].requests.fetch_add(4, Ordering::Relaxed);
        c.status().set_phase(RunPhase::Iterations);
        assert_eq!(parent.status().waiting().requests, 4);
        assert_eq!(parent.status().phase(), RunPhase::Iterations);
    }
}
