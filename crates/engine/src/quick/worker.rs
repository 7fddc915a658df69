//! Quick mode's state on one scheduler worker ([`QuickWorker`]: its recorder handles, its
//! share of the `-n` budget and of the open model's arrivals), the recording of requests, and
//! the body ([`QuickBody`]) whose one iteration drives a VU's connections until the run ends.
//!
//! Every VU of a worker shares that worker's `QuickWorker` through an `Rc` (found by the
//! factory in a thread-local), so a request costs what it cost in quick mode's own loop:
//! plain memory writes, no atomics, no scheduler call. A VU's requests in flight are counted
//! per VU ([`Vu`]), since a cut at the deadline or after Ctrl-C ends each VU's iteration on
//! its own and must account for exactly the requests that VU abandons.

use super::plan::Shared;
use crate::control::RunControl;
use crate::vus::{Outcome, Phase, ScenarioState, StopToken, VuBody};
use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use volley_http::{ConnectTimings, HttpError, Response};
use volley_metrics::names;
use volley_metrics::{Handle, MetricKey, MetricKind, Recorder, Unit};

/// How long requests in flight at the `-z` deadline may still finish (a response already on
/// its way is counted, so a healthy server's count stays exact); then they are cut.
pub const DEADLINE_GRACE: Duration = Duration::from_millis(500);

/// Lateness we forgive as timer granularity (tokio's timer wheel ticks in milliseconds)
/// rather than count as a missed start.
const TIMER_SLACK: Duration = Duration::from_millis(2);

/// Per-worker state: the run's config plus this thread's recorder, budget and arrivals.
pub(super) struct QuickWorker {
    pub(super) id: usize,
    pub(super) shared: Arc<Shared>,
    pub(super) ctl: RunControl,
    rec: Rc<RefCell<Recorder>>,
    scenarios: Arc<Vec<ScenarioState>>,
    h: Handles,
    /// Responses by status code, resolved on first use (index = status).
    status: RefCell<Vec<Option<Handle>>>,
    /// Requests this worker may still start (`-n`), or None for unbounded.
    pub(super) quota: Cell<Option<u64>>,
    next_addr: Cell<usize>,
    /// Open model: this worker's next arrival index (it owns every `workers`-th one).
    next_arrival: Cell<u64>,
    /// Open model: live connection tasks, to grow the pool when all are busy.
    pub(super) live_conns: Cell<usize>,
    /// Open model: when this worker stopped claiming arrivals (for counting dropped ones).
    stopped_at: Cell<Option<Instant>>,
    /// When the last request that ended after the stop ended (response or error).
    last_end: Cell<Option<Instant>>,
    /// `dropped_requests` recorded so far (each VU's end brings the count up to date).
    dropped: Cell<u64>,
    /// The load's start (the scenario's, set by the first iteration) and `-z` deadline.
    start: Cell<Instant>,
    end: Cell<Option<Instant>>,
}

/// Handles of the series every request records into, resolved once per worker.
struct Handles {
    duration: Handle,
    waiting: Handle,
    corrected: Handle,
    connecting: Handle,
    tls: Handle,
    failed: Handle,
    sent: Handle,
    received: Handle,
    conns: Handle,
    missed: Handle,
}

/// When (and whether) the next request may start.
#[derive(Clone, Copy)]
pub(super) struct Slot {
    /// Open model: the instant it was due.
    pub(super) due: Option<Instant>,
    /// Open model: the slot was claimed after it was due (no connection was free).
    pub(super) late: bool,
}

/// A closed-model slot (and the slot of a handshake, which no arrival is due for).
pub(super) const NO_SLOT: Slot = Slot {
    due: None,
    late: false,
};

/// One VU's connection tasks (its connection, the ones it grew in the open model, HTTP/2
/// streams): what its iteration waits for, and what a cut aborts and accounts for.
#[derive(Default)]
pub(super) struct Vu {
    /// Requests claimed but not yet recorded: what a cut interrupts.
    pub(super) in_flight: Cell<u64>,
    /// Of those, the ones still connecting (TCP, TLS or HTTP/2 handshake): a cut at the
    /// deadline counts them as connect timeouts, since the server never let them start.
    pub(super) connecting: Cell<u64>,
    /// Connection tasks still running.
    live: Cell<usize>,
    /// Woken when the last connection task ends.
    done: Notify,
    tasks: RefCell<Vec<JoinHandle<()>>>,
}

impl Vu {
    /// Keep `task` to abort at a cut (finished ones are dropped, so reconnects stay bounded).
    pub(super) fn own(&self, task: JoinHandle<()>) {
        let mut t = self.tasks.borrow_mut();
        t.retain(|h| !h.is_finished());
        t.push(task);
    }

    async fn all_done(&self) {
        loop {
            let n = self.done.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if self.live.get() == 0 {
                return;
            }
            n.await;
        }
    }
}

impl QuickWorker {
    pub(super) fn new(
        id: usize,
        shared: Arc<Shared>,
        ctl: RunControl,
        rec: Rc<RefCell<Recorder>>,
        scenarios: Arc<Vec<ScenarioState>>,
        quota: Option<u64>,
    ) -> QuickWorker {
        let h = {
            let mut r = rec.borrow_mut();
            let mut t = |name: &str| r.handle(MetricKey::new(name), MetricKind::Trend, Unit::Time);
            let (duration, waiting, corrected, connecting, tls) = (
                t(names::HTTP_REQ_DURATION),
                t(names::HTTP_REQ_WAITING),
                t(super::HTTP_REQ_CORRECTED),
                t(names::HTTP_REQ_CONNECTING),
                t(names::HTTP_REQ_TLS_HANDSHAKING),
            );
            let mut c = |name: &str, kind, unit| r.handle(MetricKey::new(name), kind, unit);
            Handles {
                duration,
                waiting,
                corrected,
                connecting,
                tls,
                failed: c(names::HTTP_REQ_FAILED, MetricKind::Rate, Unit::Default),
                sent: c(names::DATA_SENT, MetricKind::Counter, Unit::Data),
                received: c(names::DATA_RECEIVED, MetricKind::Counter, Unit::Data),
                conns: c("connections_opened", MetricKind::Counter, Unit::Default),
                missed: c("missed_starts", MetricKind::Counter, Unit::Default),
            }
        };
        QuickWorker {
            id,
            shared,
            ctl,
            rec,
            scenarios,
            h,
            status: RefCell::new(vec![None; 1000]),
            quota: Cell::new(quota),
            next_addr: Cell::new(id),
            next_arrival: Cell::new(0),
            live_conns: Cell::new(0),
            stopped_at: Cell::new(None),
            last_end: Cell::new(None),
            dropped: Cell::new(0),
            start: Cell::new(Instant::now()),
            end: Cell::new(None),
        }
    }

    /// The first iteration fixes the load's clock: the scenario's start and the deadline.
    fn begin(&self, scenario: usize) {
        if let Some((t0, _)) = self.scenarios[scenario].started() {
            self.start.set(t0);
            self.end.set(self.shared.duration.map(|d| t0 + d));
            let _ = self.shared.begin.set(t0);
        }
    }

    /// No request may be *due* at or after this instant (-z or the end of the stages).
    pub(super) fn end(&self) -> Option<Instant> {
        self.end.get()
    }

    /// Claim up to `want` requests from the `-n` budget; 0 means stop. Claimed requests are in
    /// flight until recorded.
    #[inline]
    pub(super) fn take(&self, vu: &Vu, want: u64) -> u64 {
        if self.ctl.is_stopped() {
            return 0;
        }
        let k = self.take_quota(want);
        vu.in_flight.set(vu.in_flight.get() + k);
        k
    }

    #[inline]
    pub(super) fn take_quota(&self, want: u64) -> u64 {
        match self.quota.get() {
            None => want,
            Some(n) => {
                let k = n.min(want);
                self.quota.set(Some(n - k));
                k
            }
        }
    }

    /// A request left flight: recorded with a response or an error.
    #[inline]
    fn landed(&self, vu: &Vu) {
        vu.in_flight.set(vu.in_flight.get().saturating_sub(1));
        // Only landings after the stop can stretch the run's time; earlier ones cost no clock.
        if self.ctl.is_stopped() {
            self.last_end.set(Some(Instant::now()));
        }
    }

    /// A VU's iteration ends with its tasks aborted (`cut`: the deadline's grace or the
    /// interrupt's is over, or a hard stop) or all done: what it still held in flight is
    /// `interrupted_requests` (not errors, not in the rate), except that at the deadline a
    /// connection still in its handshake is a connect timeout.
    fn record_cut(&self, vu: &Vu) {
        let n = vu.in_flight.replace(0);
        let connecting = if self.ctl.is_hard_stopped() {
            0
        } else {
            vu.connecting.get().min(n)
        };
        let mut rec = self.rec.borrow_mut();
        let h = rec.handle(
            MetricKey::new("interrupted_requests"),
            MetricKind::Counter,
            Unit::Default,
        );
        rec.add(h, (n - connecting) as f64);
        if connecting > 0 {
            let h = rec.handle(
                MetricKey::tagged(names::HTTP_REQS, &[("error", "timeout")]),
                MetricKind::Counter,
                Unit::Default,
            );
            rec.add(h, connecting as f64);
            for _ in 0..connecting {
                rec.rate(self.h.failed, true);
            }
        }
    }

    /// The arrival `local` of this worker: when it is due, or None past the schedule's end.
    fn arrival(&self, local: u64) -> Option<Instant> {
        let rate = self.shared.rate.as_ref()?;
        let at = rate.arrival(local * self.shared.workers as u64 + self.id as u64)?;
        // Clamped: at a tiny rate (-q 1e-300) the next arrival is beyond any deadline.
        Some(self.start.get() + crate::clamp_secs(at))
    }

    /// Wait for this connection's next start. Closed model: now, while budget and time are
    /// left. Open model: claim the next due arrival and sleep until it is due.
    pub(super) async fn next_slot(&self, vu: &Vu) -> Option<Slot> {
        if self.shared.rate.is_none() {
            return (self.take(vu, 1) == 1).then_some(NO_SLOT);
        }
        let slot = self.claim(vu)?;
        if let Some(due) = slot.due.filter(|d| *d > Instant::now()) {
            tokio::time::sleep_until(due.into()).await;
        }
        Some(slot)
    }

    /// Open model: claim the next arrival (without waiting for it), or None when the run
    /// stopped, the schedule ended or the budget is spent.
    fn claim(&self, vu: &Vu) -> Option<Slot> {
        if self.ctl.is_stopped() {
            // Noticed a little after the deadline: nothing due after it counts as dropped.
            let now = Instant::now();
            self.mark_stopped(self.end().map_or(now, |end| now.min(end)));
            return None;
        }
        let local = self.next_arrival.get();
        let due = self.arrival(local)?;
        if let Some(end) = self.end().filter(|end| due >= *end) {
            self.mark_stopped(end);
            return None;
        }
        if self.take(vu, 1) == 0 {
            return None;
        }
        self.next_arrival.set(local + 1);
        Some(Slot {
            due: Some(due),
            late: Instant::now() > due + TIMER_SLACK,
        })
    }

    /// Open model, pipelining: claim the next arrival only if it is already due (it joins the
    /// batch being written now).
    pub(super) fn claim_due(&self, vu: &Vu, now: Instant) -> Option<Slot> {
        let due = self.arrival(self.next_arrival.get())?;
        if due > now {
            return None;
        }
        self.claim(vu)
    }

    pub(super) fn mark_stopped(&self, at: Instant) {
        if self.stopped_at.get().is_none_or(|t| at < t) {
            self.stopped_at.set(Some(at));
        }
    }

    /// Open model: arrivals of this worker that fell due before it stopped but never started
    /// (k6's dropped_iterations); brought up to date at the end of each VU's iteration (once
    /// the last one ended, nothing moves any more).
    fn record_dropped(&self) {
        let (Some(rate), Some(at)) = (&self.shared.rate, self.stopped_at.get()) else {
            return;
        };
        let due_total = rate.arrivals_before((at - self.start.get()).as_secs_f64());
        let (w, n) = (self.id as u64, self.shared.workers as u64);
        let mine = if due_total > w {
            (due_total - w).div_ceil(n)
        } else {
            0
        };
        let dropped = mine.saturating_sub(self.next_arrival.get());
        let new = dropped.saturating_sub(self.dropped.replace(dropped.max(self.dropped.get())));
        let mut rec = self.rec.borrow_mut();
        let h = rec.handle(
            MetricKey::new("dropped_requests"),
            MetricKind::Counter,
            Unit::Default,
        );
        rec.add(h, new as f64);
    }

    /// The VU's iteration ended: what the run's result needs from this worker so far.
    fn settle(&self) {
        self.record_dropped();
        if let Some(t) = self.last_end.get() {
            let mut last = self
                .shared
                .last_end
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            *last = (*last).max(Some(t));
        }
    }

    pub(super) fn addr(&self) -> SocketAddr {
        let i = self.next_addr.get();
        self.next_addr.set(i.wrapping_add(1));
        self.shared.addrs[i % self.shared.addrs.len()]
    }

    pub(super) fn record_connect(&self, t: &ConnectTimings) {
        let mut rec = self.rec.borrow_mut();
        rec.add(self.h.conns, 1.0);
        rec.trend_us(self.h.connecting, t.connecting.as_micros() as u64);
        if self.shared.tls.is_some() {
            rec.trend_us(self.h.tls, t.tls_handshaking.as_micros() as u64);
        }
    }

    /// Wire bytes measured on a socket rather than per request (HTTP/2 multiplexing).
    pub(super) fn record_wire(&self, sent: u64, received: u64) {
        let mut rec = self.rec.borrow_mut();
        rec.add(self.h.sent, sent as f64);
        rec.add(self.h.received, received as f64);
    }

    /// `sent_at`: when this request's send began (for the corrected latency).
    pub(super) fn record_response(&self, vu: &Vu, r: &Response, slot: Slot, sent_at: Instant) {
        self.record_exchange(vu, r, slot, sent_at);
        let mut rec = self.rec.borrow_mut();
        rec.add(self.h.sent, r.bytes_sent as f64);
        rec.add(self.h.received, r.bytes_received as f64);
    }

    /// Everything about a response except its bytes.
    pub(super) fn record_exchange(&self, vu: &Vu, r: &Response, slot: Slot, sent_at: Instant) {
        self.landed(vu);
        let status = self.status_handle(r.status);
        let mut rec = self.rec.borrow_mut();
        rec.add(status, 1.0);
        rec.trend_us(self.h.duration, r.timings.duration().as_micros() as u64);
        rec.trend_us(self.h.waiting, r.timings.waiting.as_micros() as u64);
        if let Some(due) = slot.due {
            // Measured from when it was due if it started late for want of a connection;
            // a request sent on time (within timer slack) is measured from its send.
            let from = if slot.late { due.min(sent_at) } else { sent_at };
            rec.trend_us(
                self.h.corrected,
                (sent_at - from + r.timings.duration()).as_micros() as u64,
            );
            if slot.late {
                rec.add(self.h.missed, 1.0);
            }
        }
        // k6's default expected statuses: 200..=399.
        rec.rate(self.h.failed, !(200..400).contains(&r.status));
    }

    pub(super) fn record_error(&self, vu: &Vu, e: &HttpError, slot: Slot) {
        self.record_failure(vu, e, slot);
        self.record_wire(e.bytes_sent, e.bytes_received);
    }

    /// Everything about a failed request except its bytes.
    pub(super) fn record_failure(&self, vu: &Vu, e: &HttpError, slot: Slot) {
        self.landed(vu);
        let mut rec = self.rec.borrow_mut();
        // Errors are few; resolving their handle by key here keeps the success path lean.
        let h = rec.handle(
            MetricKey::tagged(names::HTTP_REQS, &[("error", e.class.as_str())]),
            MetricKind::Counter,
            Unit::Default,
        );
        rec.add(h, 1.0);
        rec.rate(self.h.failed, true);
        if slot.late {
            rec.add(self.h.missed, 1.0);
        }
    }

    fn status_handle(&self, status: u16) -> Handle {
        let i = usize::from(status).min(999);
        if let Some(h) = self.status.borrow()[i] {
            return h;
        }
        let code = status.to_string();
        let h = self.rec.borrow_mut().handle(
            MetricKey::tagged(names::HTTP_REQS, &[("status", &code)]),
            MetricKind::Counter,
            Unit::Default,
        );
        self.status.borrow_mut()[i] = Some(h);
        h
    }
}

/// A quick-mode VU: one connection (more in the open model when all are busy), driven by one
/// long iteration until the budget, the deadline or a stop ends it.
pub struct QuickBody {
    pub(super) w: Rc<QuickWorker>,
}

impl VuBody for QuickBody {
    async fn run(&mut self, phase: Phase) -> Outcome {
        match phase {
            Phase::Iteration(ctx) => drive(&self.w, ctx.scenario, &ctx.stop).await,
            Phase::Setup | Phase::Teardown => Outcome::Ok,
        }
    }
}

/// The VU's iteration: start its connection, then wait for its tasks to end ([`run_to_cut`]).
async fn drive(w: &Rc<QuickWorker>, scenario: usize, stop: &StopToken) -> Outcome {
    w.begin(scenario);
    let vu = Rc::new(Vu::default());
    super::conn::spawn_connection(w, &vu);
    let cut = run_to_cut(vu.all_done(), w.end(), stop, &w.ctl).await;
    finish(w, &vu, cut)
}

/// A quick-mode VU's iteration around `work` (done when its connection tasks all ended): at
/// the `-z` deadline `end` the run stops (no new requests); requests in flight get
/// [`DEADLINE_GRACE`] (after Ctrl-C the scheduler's token gives them its grace), then they
/// are cut. True when cut (the caller aborts what is left and accounts for it).
pub(crate) async fn run_to_cut(
    work: impl std::future::Future<Output = ()>,
    end: Option<Instant>,
    stop: &StopToken,
    ctl: &RunControl,
) -> bool {
    tokio::pin!(work);
    if let Some(end) = end {
        tokio::select! {
            biased;
            _ = &mut work => return false,
            _ = stop.stopped() => return true,
            _ = tokio::time::sleep_until(end.into()) => ctl.stop(),
        }
    }
    let cut = async {
        match end {
            Some(end) => tokio::time::sleep_until((end + DEADLINE_GRACE).into()).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        _ = &mut work => false,
        _ = stop.stopped() => true,
        _ = cut => true,
    }
}

fn finish(w: &QuickWorker, vu: &Vu, cut: bool) -> Outcome {
    if cut {
        let mut abandoned = false;
        for t in vu.tasks.borrow_mut().drain(..) {
            abandoned |= !t.is_finished();
            // Aborted tasks are never polled again: what they held stays in `vu` as it is.
            t.abort();
        }
        if abandoned {
            let now = Instant::now();
            w.mark_stopped(w.end().map_or(now, |end| now.min(end)));
        }
    }
    w.record_cut(vu);
    w.settle();
    if cut {
        Outcome::Interrupted
    } else {
        Outcome::Ok
    }
}

/// Count a connection task of `vu` as started; [`task_ended`] undoes it.
pub(super) fn task_started(w: &QuickWorker, vu: &Vu) {
    w.live_conns.set(w.live_conns.get() + 1);
    vu.live.set(vu.live.get() + 1);
}

pub(super) fn task_ended(w: &QuickWorker, vu: &Vu) {
    w.live_conns.set(w.live_conns.get() - 1);
    vu.live.set(vu.live.get() - 1);
    if vu.live.get() == 0 {
        vu.done.notify_waiters();
    }
}
