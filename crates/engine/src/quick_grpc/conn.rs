//! The body of gRPC quick mode ([`GrpcBody`]): one VU per HTTP/2 connection, whose one
//! iteration connects, runs its callers (local tasks, one call in flight each) on that
//! connection, reconnects when it is lost, and accounts for what a cut abandons. This is the
//! hot path: a call costs an `h2` stream, one recorder borrow and a few `Cell` updates.

use super::plan::Shared;
use super::{
    status_name, CONNECTIONS_OPENED, DROPPED_REQUESTS, GRPC_CONNECTING, GRPC_ERRORS, GRPC_REQS,
    GRPC_REQ_CORRECTED, GRPC_REQ_FAILED, INTERRUPTED_REQUESTS, MISSED_STARTS,
};
use crate::control::RunControl;
use crate::vus::{Outcome, Phase, ScenarioState, StopToken, VuBody, WorkerEnv};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::AbortHandle;
use volley_grpc::call::{Conn, Reply};
use volley_grpc::status;
use volley_metrics::names;
use volley_metrics::{Handle, MetricKey, MetricKind, Recorder, Unit};

/// Pause after a failed connect before the next try: a refused port must not spin a core.
const RECONNECT_PAUSE: Duration = Duration::from_millis(100);

/// Lateness forgiven as timer granularity rather than counted as a missed start.
const TIMER_SLACK: Duration = Duration::from_millis(2);

/// Handles of the series every call records into, resolved once per VU.
struct Handles {
    duration: Handle,
    corrected: Handle,
    failed: Handle,
    connecting: Handle,
    sent: Handle,
    received: Handle,
    conns: Handle,
    missed: Handle,
}

/// When a call may start.
#[derive(Clone, Copy)]
struct Slot {
    /// Open model: when it was due.
    due: Option<Instant>,
    /// Open model: claimed after it was due (every caller was busy).
    late: bool,
}

/// One connection and what its callers share about it.
struct Link {
    conn: Conn,
    /// Wire bytes already recorded.
    seen: Cell<(u64, u64)>,
    /// The connection's driver ended: it is closed.
    dead: Rc<Cell<bool>>,
}

/// One VU's state, shared by its callers (local tasks on the VU's worker).
struct Vu {
    s: Arc<Shared>,
    rec: Rc<RefCell<Recorder>>,
    h: Handles,
    /// `grpc_reqs{status}` by code, resolved on first use (the last slot: unknown codes).
    status: RefCell<Vec<Option<Handle>>>,
    ctl: RunControl,
    /// Calls claimed but not yet recorded: what a cut interrupts.
    in_flight: Cell<u64>,
    /// Callers and the connection's driver, aborted at a cut.
    tasks: RefCell<Vec<AbortHandle>>,
    start: Cell<Instant>,
    end: Cell<Option<Instant>>,
}

/// A gRPC quick-mode VU: one HTTP/2 connection and its share of the callers.
pub struct GrpcBody {
    v: Rc<Vu>,
    /// This connection's index among `connections` (its share of the callers).
    idx: usize,
    scenarios: Arc<Vec<ScenarioState>>,
}

impl GrpcBody {
    pub(super) fn new(s: Arc<Shared>, env: &WorkerEnv, idx: usize) -> GrpcBody {
        let h = {
            let mut r = env.recorder.borrow_mut();
            let mut h = |name: &str, kind, unit| r.handle(MetricKey::new(name), kind, unit);
            Handles {
                duration: h(names::GRPC_REQ_DURATION, MetricKind::Trend, Unit::Time),
                corrected: h(GRPC_REQ_CORRECTED, MetricKind::Trend, Unit::Time),
                failed: h(GRPC_REQ_FAILED, MetricKind::Rate, Unit::Default),
                connecting: h(GRPC_CONNECTING, MetricKind::Trend, Unit::Time),
                sent: h(names::DATA_SENT, MetricKind::Counter, Unit::Data),
                received: h(names::DATA_RECEIVED, MetricKind::Counter, Unit::Data),
                conns: h(CONNECTIONS_OPENED, MetricKind::Counter, Unit::Default),
                missed: h(MISSED_STARTS, MetricKind::Counter, Unit::Default),
            }
        };
        let v = Vu {
            s,
            rec: env.recorder.clone(),
            h,
            status: RefCell::new(vec![None; super::STATUS_NAMES.len() + 1]),
            ctl: env.ctl().clone(),
            in_flight: Cell::new(0),
            tasks: RefCell::new(Vec::new()),
            start: Cell::new(Instant::now()),
            end: Cell::new(None),
        };
        GrpcBody {
            v: Rc::new(v),
            idx,
            scenarios: env.scenarios.clone(),
        }
    }

    /// The VU's iteration: run its connection and callers until they end or are cut
    /// ([`crate::quick::run_to_cut`]: the `-z` deadline's grace, or Ctrl-C's).
    async fn drive(&self, scenario: usize, stop: &StopToken) -> Outcome {
        let v = &self.v;
        let start = self.scenarios[scenario]
            .started()
            .map_or_else(Instant::now, |(t0, _)| t0);
        let _ = v.s.begin.set(start);
        let end = v.s.duration.map(|d| start + d);
        v.start.set(start);
        v.end.set(end);
        let cfg = &v.s.cfg;
        let callers =
            crate::quick::split_budget(cfg.concurrency as u64, cfg.connections.max(1), self.idx)
                as usize;
        let cut = crate::quick::run_to_cut(connection(v.clone(), callers), end, stop, &v.ctl).await;
        v.finish(cut)
    }
}

impl VuBody for GrpcBody {
    async fn run(&mut self, phase: Phase) -> Outcome {
        match phase {
            Phase::Iteration(ctx) => self.drive(ctx.scenario, &ctx.stop).await,
            Phase::Setup | Phase::Teardown => Outcome::Ok,
        }
    }
}

/// Connect, run the callers until they end, reconnect if the connection was lost.
async fn connection(v: Rc<Vu>, callers: usize) {
    let s = &v.s;
    loop {
        if v.ctl.is_stopped() || s.budget.load(Ordering::Relaxed) == 0 {
            return;
        }
        let began = Instant::now();
        let (conn, driver) = match volley_grpc::call::connect(&s.cfg.addr, &s.connect).await {
            Ok(c) => c,
            Err(e) => {
                // A failed connect costs one call of a -n budget, so a run against a dead
                // port ends; it shows as UNAVAILABLE with the error class `connect`.
                if !s.take() {
                    return;
                }
                v.in_flight.set(v.in_flight.get() + 1);
                let r = Reply {
                    status: status::UNAVAILABLE,
                    message: e,
                    ..Reply::default()
                };
                v.record(&r, Some("connect"), NO_SLOT, began);
                tokio::time::sleep(RECONNECT_PAUSE).await;
                continue;
            }
        };
        {
            let mut rec = v.rec.borrow_mut();
            rec.add(v.h.conns, 1.0);
            rec.trend_us(v.h.connecting, began.elapsed().as_micros() as u64);
        }
        let dead = Rc::new(Cell::new(false));
        let d2 = dead.clone();
        let driver = tokio::task::spawn_local(async move {
            driver.await;
            d2.set(true);
        });
        v.tasks.borrow_mut().push(driver.abort_handle());
        let link = Rc::new(Link {
            conn,
            // From zero: the preface and SETTINGS exchange are wire bytes too.
            seen: Cell::new((0, 0)),
            dead,
        });
        let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
        {
            let mut tasks = v.tasks.borrow_mut();
            // Finished tasks of earlier connections go, so reconnects stay bounded.
            tasks.retain(|t| !t.is_finished());
            for _ in 0..callers.max(1) {
                let (v, link, done) = (v.clone(), link.clone(), done_tx.clone());
                let t = tokio::task::spawn_local(async move {
                    while let Some(slot) = v.next_slot().await {
                        v.call(&link, slot).await;
                        if link.dead.get() {
                            break;
                        }
                    }
                    drop(done);
                });
                tasks.push(t.abort_handle());
            }
        }
        drop(done_tx);
        // Every caller's sender is gone once its loop ended.
        let _ = done_rx.recv().await;
        let lost = link.dead.get();
        v.wire(&link.conn, &link.seen);
        // Dropping the last handle closes the connection (GOAWAY, a few bytes not counted).
        drop(link);
        if !lost {
            // Every caller ended because the run is over.
            return;
        }
    }
}

/// A closed-model slot.
const NO_SLOT: Slot = Slot {
    due: None,
    late: false,
};

impl Vu {
    /// Wait for this caller's next call. Closed model: now, while budget and time are left.
    /// Open model: claim the next arrival of the run and sleep until it is due.
    async fn next_slot(&self) -> Option<Slot> {
        let s = &self.s;
        if self.ctl.is_stopped() {
            if s.cfg.rate.is_some() {
                let now = Instant::now();
                s.mark_stopped(self.end.get().map_or(now, |end| now.min(end)));
            }
            return None;
        }
        let Some(rate) = &s.cfg.rate else {
            if !s.take() {
                return None;
            }
            self.in_flight.set(self.in_flight.get() + 1);
            return Some(NO_SLOT);
        };
        let i = s.next_arrival.fetch_add(1, Ordering::Relaxed);
        // Clamped: at a tiny rate the next arrival is beyond any deadline.
        let due = self.start.get() + crate::clamp_secs(rate.arrival(i)?);
        if let Some(end) = self.end.get().filter(|end| due >= *end) {
            s.mark_stopped(end);
            return None;
        }
        if !s.take() {
            return None;
        }
        s.started.fetch_add(1, Ordering::Relaxed);
        self.in_flight.set(self.in_flight.get() + 1);
        let now = Instant::now();
        if due > now {
            tokio::time::sleep_until(due.into()).await;
        }
        Some(Slot {
            due: Some(due),
            late: now > due + TIMER_SLACK,
        })
    }

    async fn call(&self, link: &Link, slot: Slot) {
        let cfg = &self.s.cfg;
        let sent = Instant::now();
        let r = link
            .conn
            .unary(&cfg.path, &cfg.metadata, &cfg.message, cfg.deadline)
            .await;
        self.record(&r, error_class(&r), slot, sent);
        self.wire(&link.conn, &link.seen);
    }

    /// Bytes on the connection's socket since the last look (multiplexed frames cannot be
    /// attributed to single calls).
    fn wire(&self, conn: &Conn, seen: &Cell<(u64, u64)>) {
        let (s1, r1) = conn.wire_bytes();
        let (s0, r0) = seen.replace((s1, r1));
        let mut rec = self.rec.borrow_mut();
        rec.add(self.h.sent, s1.saturating_sub(s0) as f64);
        rec.add(self.h.received, r1.saturating_sub(r0) as f64);
    }

    /// A call ended (`class`: a failure that is no status the server sent).
    fn record(&self, r: &Reply, class: Option<&str>, slot: Slot, sent: Instant) {
        self.in_flight.set(self.in_flight.get().saturating_sub(1));
        let now = Instant::now();
        let status = self.status_handle(r.status);
        let mut rec = self.rec.borrow_mut();
        rec.add(status, 1.0);
        rec.rate(self.h.failed, r.status != status::OK);
        match class {
            None => {
                rec.trend_us(self.h.duration, (now - sent).as_micros() as u64);
                if let Some(due) = slot.due {
                    rec.trend_us(self.h.corrected, (now - due).as_micros() as u64);
                }
            }
            Some(class) => {
                // Errors are few; resolving their handle by key keeps the success path lean.
                let h = rec.handle(
                    MetricKey::tagged(GRPC_ERRORS, &[("error", class)]),
                    MetricKind::Counter,
                    Unit::Default,
                );
                rec.add(h, 1.0);
            }
        }
        if slot.late {
            rec.add(self.h.missed, 1.0);
        }
    }

    fn status_handle(&self, code: u32) -> Handle {
        let i = (code as usize).min(super::STATUS_NAMES.len());
        if let Some(h) = self.status.borrow()[i] {
            return h;
        }
        let name = if i == super::STATUS_NAMES.len() {
            "OTHER".to_owned()
        } else {
            status_name(code)
        };
        let h = self.rec.borrow_mut().handle(
            MetricKey::tagged(GRPC_REQS, &[("status", &name)]),
            MetricKind::Counter,
            Unit::Default,
        );
        self.status.borrow_mut()[i] = Some(h);
        h
    }

    /// The iteration ends, its tasks aborted (`cut`) or all done: what it still held in
    /// flight is `interrupted_requests` (not errors, not in the rate); the last connection
    /// to end records the open model's dropped calls.
    fn finish(&self, cut: bool) -> Outcome {
        if cut {
            for t in self.tasks.borrow_mut().drain(..) {
                t.abort();
            }
            if self.s.cfg.rate.is_some() {
                let now = Instant::now();
                self.s
                    .mark_stopped(self.end.get().map_or(now, |end| now.min(end)));
            }
        }
        let n = self.in_flight.replace(0);
        let mut rec = self.rec.borrow_mut();
        let h = rec.handle(
            MetricKey::new(INTERRUPTED_REQUESTS),
            MetricKind::Counter,
            Unit::Default,
        );
        rec.add(h, n as f64);
        if self.s.live.fetch_sub(1, Ordering::AcqRel) == 1 {
            let h = rec.handle(
                MetricKey::new(DROPPED_REQUESTS),
                MetricKind::Counter,
                Unit::Default,
            );
            rec.add(h, self.s.dropped() as f64);
        }
        if cut {
            Outcome::Interrupted
        } else {
            Outcome::Ok
        }
    }
}

/// The class of a failure that is no status the server sent (None: the server's status).
fn error_class(r: &Reply) -> Option<&'static str> {
    let m = r.message.as_str();
    if r.status == status::OK {
        None
    } else if r.status == status::DEADLINE_EXCEEDED && m == "context deadline exceeded" {
        Some("timeout")
    } else if m.starts_with("stream terminated by RST_STREAM") {
        Some("reset")
    } else if m.starts_with("connection error") || m.starts_with("the connection is closing") {
        Some("transport")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: u32, message: &str) -> Reply {
        Reply {
            status,
            message: message.into(),
            ..Reply::default()
        }
    }

    #[test]
    fn only_client_side_failures_are_error_classes() {
        assert_eq!(error_class(&reply(0, "")), None);
        // The server's own DEADLINE_EXCEEDED is a status, the client's deadline a timeout.
        assert_eq!(error_class(&reply(4, "took too long")), None);
        assert_eq!(
            error_class(&reply(4, "context deadline exceeded")),
            Some("timeout")
        );
        assert_eq!(
            error_class(&reply(14, "connection error: desc = \"transport: x\"")),
            Some("transport")
        );
        assert_eq!(
            error_class(&reply(
                1,
                "stream terminated by RST_STREAM with error code: CANCEL"
            )),
            Some("reset")
        );
        assert_eq!(error_class(&reply(14, "server said no")), None);
    }
}
