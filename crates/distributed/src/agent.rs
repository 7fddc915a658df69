//! The agent's side: register (retrying while the coordinator is not up yet), then a
//! [`Link`] that holds the run at the start barrier and before teardown (the engine's
//! [`Gates`]), streams a [`Snapshot`] every second from the run's aggregates (an
//! [`Observer`]), stops the run when the coordinator says so, and delivers the final
//! result. Running the script is the caller's (the same path as `volley run`).

use crate::proto::{self, AgentId, Assignment, Final, Ready, Register, Reply, Snapshot};
use crate::wire::{Endpoint, WireError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};
use volley_engine::vus::{Gates, GatesHandle, Tick};
use volley_engine::RunControl;
use volley_metrics::{MetricTotal, RunResult};
use volley_run::Observer;

/// How long a single request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the agent keeps trying to reach a coordinator it was talking to.
const RECONNECT_FOR: Duration = Duration::from_secs(10);

/// Register with the coordinator; connection errors are retried for `retry_for` (in
/// Kubernetes the agents may start before the coordinator), refusals are not.
pub fn register(ep: &Endpoint, name: &str, retry_for: Duration) -> Result<Assignment, String> {
    let until = Instant::now() + retry_for;
    let msg = Register {
        name: name.to_string(),
        version: proto::VERSION.to_string(),
    };
    loop {
        match ep.post::<Assignment>(proto::REGISTER, &msg, REQUEST_TIMEOUT) {
            Ok(a) => return Ok(a),
            Err(WireError::Status(401, _)) => {
                return Err(format!(
                    "the coordinator at {} refused the token (HTTP 401): give the agent the \
                     coordinator's --token (or VOLLEY_TOKEN)",
                    ep.addr
                ))
            }
            Err(e @ WireError::Status(..)) => {
                return Err(format!(
                    "the coordinator at {} refused this agent: {e}",
                    ep.addr
                ))
            }
            Err(WireError::Io(e)) if Instant::now() >= until => {
                return Err(format!(
                    "cannot reach the coordinator at {} within --retry-for {}s: {e}",
                    ep.addr,
                    retry_for.as_secs()
                ))
            }
            Err(WireError::Io(_)) => std::thread::sleep(Duration::from_millis(250)),
        }
    }
}

/// Tell the coordinator this agent's part cannot run (`error`, and `code`, the exit code the
/// agent ends with), so it ends the run now rather than at its start timeout. Best effort:
/// the agent exits with its error either way.
pub fn report_failure(ep: &Endpoint, agent: usize, error: &str, code: i32) {
    let msg = proto::Failed {
        agent,
        error: error.to_string(),
        code,
    };
    if let Err(e) = ep.post::<Reply>(proto::FAILED, &msg, REQUEST_TIMEOUT) {
        volley_engine::log::warn(&format!(
            "could not tell the coordinator at {} about the failure: {e}",
            ep.addr
        ));
    }
}

/// Reads and writes the script's setup data (the caller's script view).
pub struct SetupData {
    pub get: Box<dyn Fn() -> Option<String> + Send + Sync>,
    pub set: Box<dyn Fn(Option<String>) + Send + Sync>,
}

/// The running agent's connection to its coordinator.
pub struct Link {
    ep: Endpoint,
    agent: usize,
    index: usize,
    ctl: RunControl,
    setup: SetupData,
    started: AtomicBool,
    barrier: OnceLock<()>,
    teardown_ok: AtomicBool,
    teardown_asked: OnceLock<()>,
    /// Why the run could not go on (start barrier failed, coordinator gone).
    failure: Mutex<Option<String>>,
    /// The latest totals and the points not sent yet.
    pending: Mutex<Snapshot>,
    done: AtomicBool,
}

impl Link {
    /// A link for `a`; starts the thread that sends a snapshot every second.
    pub fn start(ep: Endpoint, a: &Assignment, ctl: RunControl, setup: SetupData) -> Arc<Link> {
        let link = Arc::new(Link {
            ep,
            agent: a.agent,
            index: a.index,
            ctl,
            setup,
            started: AtomicBool::new(false),
            barrier: OnceLock::new(),
            teardown_ok: AtomicBool::new(a.index != 0),
            teardown_asked: OnceLock::new(),
            failure: Mutex::new(None),
            pending: Mutex::new(Snapshot {
                agent: a.agent,
                ..Snapshot::default()
            }),
            done: AtomicBool::new(false),
        });
        let l = link.clone();
        std::thread::Builder::new()
            .name("volley-agent-link".into())
            .spawn(move || l.send_loop())
            .expect("a thread for the coordinator link");
        link
    }

    /// Why the run could not go on, if it could not.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().unwrap().clone()
    }

    fn fail(&self, msg: String) {
        self.failure.lock().unwrap().get_or_insert(msg);
        self.started.store(true, Ordering::SeqCst);
        self.teardown_ok.store(true, Ordering::SeqCst);
        self.ctl.stop();
    }

    /// Act on an answer: stop the run when the coordinator says so.
    fn heed(&self, r: &Reply) {
        if r.stop {
            self.ctl.stop();
        }
        if let Some(f) = &r.fail {
            self.fail(format!("the coordinator gave up: {f}"));
        }
    }

    /// Post `body` to `path` until the coordinator answers (bounded by [`RECONNECT_FOR`]).
    fn ask<B: serde::Serialize>(&self, path: &str, body: &B) -> Option<Reply> {
        let until = Instant::now() + RECONNECT_FOR;
        loop {
            match self.ep.post::<Reply>(path, body, REQUEST_TIMEOUT) {
                Ok(r) => {
                    self.heed(&r);
                    return Some(r);
                }
                Err(WireError::Io(_)) if Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => {
                    self.fail(format!("lost the coordinator at {}: {e}", self.ep.addr));
                    return None;
                }
            }
        }
    }

    fn barrier_wait(&self) {
        let ready = Ready {
            agent: self.agent,
            setup_data: if self.index == 0 {
                (self.setup.get)()
            } else {
                None
            },
        };
        while let Some(r) = self.ask(proto::READY, &ready) {
            if r.fail.is_some() {
                return;
            }
            if r.go || r.stop {
                if self.index != 0 {
                    (self.setup.set)(r.setup_data);
                }
                self.started.store(true, Ordering::SeqCst);
                return;
            }
        }
    }

    fn teardown_wait(&self) {
        let id = AgentId { agent: self.agent };
        while let Some(r) = self.ask(proto::TEARDOWN, &id) {
            if r.go || r.fail.is_some() {
                break;
            }
        }
        self.teardown_ok.store(true, Ordering::SeqCst);
    }

    fn send_loop(self: Arc<Self>) {
        let mut next = Instant::now();
        while !self.done.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
            if Instant::now() < next || !self.started.load(Ordering::SeqCst) {
                continue;
            }
            next += Duration::from_secs(1);
            let snap = {
                let mut p = self.pending.lock().unwrap();
                let s = p.clone();
                p.points.clear();
                s
            };
            if self.done.load(Ordering::SeqCst) {
                break;
            }
            if self.ask(proto::SNAPSHOT, &snap).is_none() {
                break;
            }
        }
    }

    /// The run's end: deliver the final result.
    pub fn finish(
        &self,
        result: &RunResult,
        teardown_error: Option<String>,
        aborted: Option<String>,
    ) -> Result<(), String> {
        let f = Final {
            agent: self.agent,
            result: result.clone(),
            teardown_error,
            aborted,
        };
        // Snapshots go on while the result is encoded and sent: they are the heartbeat.
        let sent = self.ask(proto::FINAL, &f);
        self.done.store(true, Ordering::SeqCst);
        match sent {
            Some(_) => Ok(()),
            None => Err(self
                .failure()
                .unwrap_or_else(|| "cannot deliver the result".into())),
        }
    }

    /// The run's barriers, for [`volley_engine::vus::VuPlan::gates`].
    pub fn gates(self: &Arc<Self>) -> GatesHandle {
        GatesHandle(Arc::new(LinkGates(self.clone())))
    }

    /// The observer that feeds the snapshots.
    pub fn observer(self: &Arc<Self>) -> Box<dyn Observer> {
        Box::new(Feed {
            link: self.clone(),
            next_t: 0,
            started_ms: None,
        })
    }
}

/// The engine's view of a [`Link`]: the scenarios wait for the start barrier, agent 0's
/// teardown for the other agents' end. The waits happen on threads of their own; the
/// engine only polls.
struct LinkGates(Arc<Link>);

impl Gates for LinkGates {
    fn may_start(&self) -> bool {
        if self.0.barrier.set(()).is_ok() {
            let l = self.0.clone();
            std::thread::spawn(move || l.barrier_wait());
        }
        self.0.started.load(Ordering::SeqCst)
    }

    fn may_teardown(&self) -> bool {
        if self.0.index == 0 && self.0.teardown_asked.set(()).is_ok() {
            let l = self.0.clone();
            std::thread::spawn(move || l.teardown_wait());
        }
        self.0.teardown_ok.load(Ordering::SeqCst)
    }
}

/// A series' running total for a snapshot, without a trend's exact samples: up to 2,048 per
/// series, re-sent every second, they made the coordinator's parsing cost grow with the run
/// until each trend outgrew them (bench/RESULTS.md). Live judgements read the histogram
/// (within 0.05 %); the final result carries the samples.
fn running_total(d: &volley_metrics::MetricDesc, a: &volley_metrics::Agg) -> MetricTotal {
    let mut m = MetricTotal::from_agg(d, a);
    if let volley_metrics::TotalValue::Trend { samples, .. } = &mut m.value {
        *samples = Vec::new();
    }
    m
}

/// Copies the run's aggregates into the link's pending snapshot once a second.
struct Feed {
    link: Arc<Link>,
    next_t: u64,
    started_ms: Option<u64>,
}

impl Observer for Feed {
    fn tick(&mut self, tick: &Tick<'_>) {
        let metrics: Vec<MetricTotal> = tick
            .agg
            .totals()
            .map(|(d, a)| running_total(d, a))
            .collect();
        // Computed once: the coordinator places every point by this start.
        let started = *self
            .started_ms
            .get_or_insert_with(|| volley_metrics::time::unix_ms(SystemTime::now() - tick.elapsed));
        let mut p = self.link.pending.lock().unwrap();
        let from = self.next_t;
        for pt in tick.agg.series().points.iter().filter(|p| p.t >= from) {
            p.points.push(pt.clone());
            self.next_t = pt.t + pt.w;
        }
        p.metrics = metrics;
        p.started_unix_ms = started;
        p.elapsed_s = tick.elapsed.as_secs_f64();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_metrics::{MetricKey, MetricKind, Recorder, TotalValue, Unit};

    /// Regression: every snapshot re-sent each trend's exact samples (up to 2,048 numbers per
    /// series), so the coordinator's CPU per second grew with the run.
    #[test]
    fn snapshot_totals_leave_the_exact_samples_to_the_final_result() {
        let mut rec = Recorder::new();
        let h = rec.handle(MetricKey::new("t"), MetricKind::Trend, Unit::Time);
        (0..100).for_each(|i| rec.add(h, i as f64));
        let (desc, agg) = rec.snapshot().entries.into_iter().next().unwrap();
        assert!(matches!(
            MetricTotal::from_agg(&desc, &agg).value,
            TotalValue::Trend { ref samples, .. } if samples.len() == 100
        ));
        match running_total(&desc, &agg).value {
            TotalValue::Trend { count, samples, .. } => {
                assert_eq!((count, samples.len()), (100, 0))
            }
            other => panic!("{other:?}"),
        }
    }
}
