//! Quick mode's worker threads: each runs its share of the connections on a single-threaded
//! tokio runtime, records into its own `Recorder`, and reports one snapshot per second. The
//! connection loops (closed, pipelined, HTTP/2) and the deadline's cut live here.

use super::{Msg, Shared};
use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use volley_http::{BodyMode, ConnectTimings, Connection, H2Connection, HttpError, Response};
use volley_metrics::{Handle, MetricKey, MetricKind, Recorder, Unit};

/// Per-worker state: the shared config plus this thread's recorder and budget.
struct Worker {
    id: usize,
    shared: Arc<Shared>,
    rec: RefCell<Recorder>,
    h: Handles,
    /// Responses by status code, resolved on first use (index = status).
    status: RefCell<Vec<Option<Handle>>>,
    /// Requests this worker may still start (`-n`), or None for unbounded.
    quota: Cell<Option<u64>>,
    next_addr: Cell<usize>,
    /// Open model: this worker's next arrival index (it owns every `workers`-th one).
    next_arrival: Cell<u64>,
    /// Open model: live connection tasks, to grow the pool when all are busy.
    live_conns: Cell<usize>,
    /// Signalled when the last connection task ends.
    all_done: tokio::sync::Notify,
    /// Open model: when this worker stopped claiming arrivals (for counting dropped ones).
    stopped_at: Cell<Option<Instant>>,
    /// Requests claimed but not yet recorded: what a cut at the deadline interrupts.
    in_flight: Cell<u64>,
    /// Of those, the ones still connecting (TCP, TLS or HTTP/2 handshake): a cut counts them
    /// as connect timeouts, since the server never let them start.
    connecting: Cell<u64>,
    /// When the last request that ended after the stop ended (response or error).
    last_end: Cell<Option<Instant>>,
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
struct Slot {
    /// Open model: the instant it was due.
    due: Option<Instant>,
    /// Open model: the slot was claimed after it was due (no connection was free).
    late: bool,
}

/// Lateness we forgive as timer granularity (tokio's timer wheel ticks in milliseconds)
/// rather than count as a missed start.
const TIMER_SLACK: Duration = Duration::from_millis(2);

/// How long requests in flight at the `-z` deadline may still finish (a response already on
/// its way is counted, so a healthy server's count stays exact); then they are cut.
pub const DEADLINE_GRACE: Duration = Duration::from_millis(500);

impl Worker {
    fn new(id: usize, shared: Arc<Shared>, quota: Option<u64>) -> Worker {
        let mut rec = Recorder::new();
        let mut t = |name: &str| rec.handle(MetricKey::new(name), MetricKind::Trend, Unit::Time);
        let (duration, waiting, corrected, connecting, tls) = (
            t("http_req_duration"),
            t("http_req_waiting"),
            t("http_req_corrected"),
            t("http_req_connecting"),
            t("http_req_tls_handshaking"),
        );
        let mut c = |name: &str, kind, unit| rec.handle(MetricKey::new(name), kind, unit);
        let failed = c("http_req_failed", MetricKind::Rate, Unit::Default);
        let sent = c("data_sent", MetricKind::Counter, Unit::Data);
        let received = c("data_received", MetricKind::Counter, Unit::Data);
        let conns = c("connections_opened", MetricKind::Counter, Unit::Default);
        let missed = c("missed_starts", MetricKind::Counter, Unit::Default);
        Worker {
            id,
            shared,
            rec: RefCell::new(rec),
            h: Handles {
                duration,
                waiting,
                corrected,
                connecting,
                tls,
                failed,
                sent,
                received,
                conns,
                missed,
            },
            status: RefCell::new(vec![None; 1000]),
            quota: Cell::new(quota),
            next_addr: Cell::new(id),
            next_arrival: Cell::new(0),
            live_conns: Cell::new(0),
            all_done: tokio::sync::Notify::new(),
            stopped_at: Cell::new(None),
            in_flight: Cell::new(0),
            connecting: Cell::new(0),
            last_end: Cell::new(None),
        }
    }

    /// Claim up to `want` requests from the `-n` budget; 0 means stop. Claimed requests are in
    /// flight until recorded.
    #[inline]
    fn take(&self, want: u64) -> u64 {
        if self.shared.ctl.is_stopped() {
            return 0;
        }
        let k = self.take_quota(want);
        self.in_flight.set(self.in_flight.get() + k);
        k
    }

    #[inline]
    fn take_quota(&self, want: u64) -> u64 {
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
    fn landed(&self) {
        self.in_flight.set(self.in_flight.get().saturating_sub(1));
        // Only landings after the stop can stretch the run's time; earlier ones cost no clock.
        if self.shared.ctl.is_stopped() {
            self.last_end.set(Some(Instant::now()));
        }
    }

    /// The worker stops with tasks still running (the deadline's cut or a second Ctrl-C):
    /// their requests are `interrupted_requests` (not errors, not in the rate), except that at
    /// the deadline a connection still in its handshake is a connect timeout.
    fn record_cut(&self) {
        let n = self.in_flight.replace(0);
        let connecting = if self.shared.ctl.is_hard_stopped() {
            0
        } else {
            self.connecting.get().min(n)
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
                MetricKey::tagged("http_reqs", &[("error", "timeout")]),
                MetricKind::Counter,
                Unit::Default,
            );
            rec.add(h, connecting as f64);
            for _ in 0..connecting {
                rec.rate(self.h.failed, true);
            }
        }
    }

    /// Wait for this connection's next start. Closed model: now, while budget and time are
    /// left. Open model: claim the next due arrival and sleep until it is due.
    async fn next_slot(&self) -> Option<Slot> {
        let s = &self.shared;
        let Some(rate) = &s.rate else {
            return (self.take(1) == 1).then_some(Slot {
                due: None,
                late: false,
            });
        };
        if s.ctl.is_stopped() {
            // Noticed a little after the deadline: nothing due after it counts as dropped.
            let now = Instant::now();
            self.mark_stopped(s.end.map_or(now, |end| now.min(end)));
            return None;
        }
        let local = self.next_arrival.get();
        let at = rate.arrival(local * s.workers as u64 + self.id as u64)?;
        // Clamped: at a tiny rate (-q 1e-300) the next arrival is beyond any deadline.
        let due = s.start + crate::clamp_secs(at);
        if let Some(end) = s.end.filter(|end| due >= *end) {
            self.mark_stopped(end);
            return None;
        }
        if self.take(1) == 0 {
            return None;
        }
        self.next_arrival.set(local + 1);
        let now = Instant::now();
        let late = now > due + TIMER_SLACK;
        if due > now {
            tokio::time::sleep_until(due.into()).await;
        }
        Some(Slot {
            due: Some(due),
            late,
        })
    }

    fn mark_stopped(&self, at: Instant) {
        if self.stopped_at.get().is_none_or(|t| at < t) {
            self.stopped_at.set(Some(at));
        }
    }

    /// Open model: arrivals of this worker that fell due before it stopped but never started
    /// (k6's dropped_iterations); recorded once, when the worker ends.
    fn record_dropped(&self) {
        let (Some(rate), Some(at)) = (&self.shared.rate, self.stopped_at.get()) else {
            return;
        };
        let due_total = rate.arrivals_before((at - self.shared.start).as_secs_f64());
        let (w, n) = (self.id as u64, self.shared.workers as u64);
        let mine = if due_total > w {
            (due_total - w).div_ceil(n)
        } else {
            0
        };
        let dropped = mine.saturating_sub(self.next_arrival.get());
        let mut rec = self.rec.borrow_mut();
        let h = rec.handle(
            MetricKey::new("dropped_requests"),
            MetricKind::Counter,
            Unit::Default,
        );
        rec.add(h, dropped as f64);
    }

    fn addr(&self) -> SocketAddr {
        let i = self.next_addr.get();
        self.next_addr.set(i.wrapping_add(1));
        self.shared.addrs[i % self.shared.addrs.len()]
    }

    fn record_connect(&self, t: &ConnectTimings) {
        let mut rec = self.rec.borrow_mut();
        rec.add(self.h.conns, 1.0);
        rec.trend_us(self.h.connecting, t.connecting.as_micros() as u64);
        if self.shared.tls.is_some() {
            rec.trend_us(self.h.tls, t.tls_handshaking.as_micros() as u64);
        }
    }

    /// Wire bytes measured on a socket rather than per request (HTTP/2 multiplexing).
    fn record_wire(&self, sent: u64, received: u64) {
        let mut rec = self.rec.borrow_mut();
        rec.add(self.h.sent, sent as f64);
        rec.add(self.h.received, received as f64);
    }

    /// `sent_at`: when this request's send began (for the corrected latency).
    fn record_response(&self, r: &Response, slot: Slot, sent_at: Instant) {
        self.record_exchange(r, slot, sent_at);
        let mut rec = self.rec.borrow_mut();
        rec.add(self.h.sent, r.bytes_sent as f64);
        rec.add(self.h.received, r.bytes_received as f64);
    }

    /// Everything about a response except its bytes.
    fn record_exchange(&self, r: &Response, slot: Slot, sent_at: Instant) {
        self.landed();
        let status = self.status_handle(r.status);
        let mut rec = self.rec.borrow_mut();
        rec.add(status, 1.0);
        rec.trend_us(self.h.duration, r.timings.duration().as_micros() as u64);
        rec.trend_us(self.h.waiting, r.timings.waiting.as_micros() as u64);
        if let Some(due) = slot.due {
            // Measured from when it was due if it started late for want of a connection;
            // a request sent on time (within timer slack) is measured from its send.
            let from = if slot.late { due } else { sent_at };
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

    fn record_error(&self, e: &HttpError, slot: Slot) {
        self.record_failure(e, slot);
        self.record_wire(e.bytes_sent, e.bytes_received);
    }

    /// Everything about a failed request except its bytes.
    fn record_failure(&self, e: &HttpError, slot: Slot) {
        self.landed();
        let mut rec = self.rec.borrow_mut();
        // Errors are few; resolving their handle by key here keeps the success path lean.
        let h = rec.handle(
            MetricKey::tagged("http_reqs", &[("error", e.class.as_str())]),
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
            MetricKey::tagged("http_reqs", &[("status", &code)]),
            MetricKind::Counter,
            Unit::Default,
        );
        self.status.borrow_mut()[i] = Some(h);
        h
    }
}

pub(super) fn worker(
    id: usize,
    shared: Arc<Shared>,
    conns: usize,
    quota: Option<u64>,
    tx: mpsc::Sender<Msg>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("volley: worker {id}: cannot start a runtime: {e}");
            let _ = tx.send(Msg::Done {
                worker: id,
                last_end: None,
            });
            return;
        }
    };
    let start = shared.start;
    let w = Rc::new(Worker::new(id, shared, quota));
    let ticks = Rc::new(Cell::new(0u64));
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let ticker = {
            let (w, ticks, tx) = (w.clone(), ticks.clone(), tx.clone());
            tokio::task::spawn_local(async move {
                let mut iv = tokio::time::interval_at(
                    (start + Duration::from_secs(1)).into(),
                    Duration::from_secs(1),
                );
                iv.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    iv.tick().await;
                    let snap = w.rec.borrow_mut().snapshot();
                    let interval = ticks.get();
                    ticks.set(interval + 1);
                    let _ = tx.send(Msg::Snapshot {
                        worker: id,
                        interval,
                        snap,
                    });
                }
            })
        };
        for _ in 0..conns {
            spawn_connection(&w);
        }
        // Connection tasks may spawn more (open model), so wait until the live count drops to
        // zero (the last task to end wakes us), a hard stop or the deadline's cut; the slow
        // poll only serves the stops, so an idle worker costs almost no CPU.
        let deadline_cut = w.shared.end.map(|end| end + DEADLINE_GRACE);
        while w.live_conns.get() > 0 && !w.shared.ctl.is_hard_stopped() {
            let now = Instant::now();
            // Ctrl-C/SIGTERM: requests in flight get script mode's short grace, not their
            // whole timeout (`docker stop` kills 10 s after SIGTERM).
            let interrupt_cut = w
                .shared
                .ctl
                .interrupted_at()
                .map(|t| t + crate::control::INTERRUPT_GRACE);
            let cut = match (deadline_cut, interrupt_cut) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if cut.is_some_and(|c| now >= c) {
                break;
            }
            let wait = cut.map_or(Duration::from_millis(250), |c| {
                (c - now).min(Duration::from_millis(250))
            });
            let _ = tokio::time::timeout(wait, w.all_done.notified()).await;
        }
        ticker.abort();
        // Tasks still running are abandoned with the runtime: account for what they held.
        if w.live_conns.get() > 0 {
            let now = Instant::now();
            w.mark_stopped(w.shared.end.map_or(now, |end| now.min(end)));
        }
        w.record_cut();
        w.record_dropped();
    });
    // Whatever was recorded after the last tick (including abandoned tasks' partial work).
    let snap = w.rec.borrow_mut().snapshot();
    let _ = tx.send(Msg::Snapshot {
        worker: id,
        interval: ticks.get(),
        snap,
    });
    let _ = tx.send(Msg::Done {
        worker: id,
        last_end: w.last_end.get(),
    });
}

fn spawn_connection(w: &Rc<Worker>) {
    w.live_conns.set(w.live_conns.get() + 1);
    let w = w.clone();
    tokio::task::spawn_local(async move {
        if w.shared.h2_request.is_some() {
            h2_connection(&w).await;
        } else if w.shared.batches.is_empty() {
            connection_loop(&w).await;
        } else {
            pipelined_loop(&w).await;
        }
        w.live_conns.set(w.live_conns.get() - 1);
        if w.live_conns.get() == 0 {
            w.all_done.notify_one();
        }
    });
}

/// Make sure `conn` is open for the `pending` requests waiting on it; on failure the error is
/// recorded against `slot`.
async fn ensure_connected(
    w: &Worker,
    conn: &mut Option<Connection>,
    slot: Slot,
    pending: u64,
) -> bool {
    if conn.as_ref().is_some_and(|c| c.is_reusable()) {
        return true;
    }
    let s = &w.shared;
    w.connecting.set(w.connecting.get() + pending);
    let res = Connection::connect(w.addr(), &s.target, s.tls.as_ref(), s.connect_timeout).await;
    w.connecting.set(w.connecting.get() - pending);
    match res {
        Ok((c, t)) => {
            w.record_connect(&t);
            *conn = Some(c);
            true
        }
        Err(e) => {
            w.record_error(&e, slot);
            *conn = None;
            false
        }
    }
}

/// One connection, one request at a time: connect when needed, send, record, repeat.
async fn connection_loop(w: &Rc<Worker>) {
    let s = &w.shared;
    let mut conn: Option<Connection> = None;
    while let Some(slot) = w.next_slot().await {
        // Every connection busy when this one claimed a late slot: grow the pool.
        if slot.late && w.live_conns.get() < s.max_conns_per_worker {
            spawn_connection(w);
        }
        let sent_at = Instant::now();
        if !ensure_connected(w, &mut conn, slot, 1).await {
            continue;
        }
        let Some(c) = conn.as_mut() else { continue };
        match c.send(&s.request, BodyMode::Discard, s.timeout).await {
            Ok(r) => {
                w.record_response(&r, slot, sent_at);
                if !r.keep_alive || !s.keepalive {
                    conn = None;
                }
            }
            Err(e) => {
                w.record_error(&e, slot);
                conn = None;
            }
        }
    }
}

/// HTTP/2: one connection carrying `h2_streams` concurrent request loops. Bytes come from the
/// socket's counters (exact, including connection-level frames), since multiplexed frames
/// cannot be attributed to single requests.
async fn h2_connection(w: &Rc<Worker>) {
    let s = &w.shared;
    let Some(req) = s.h2_request.as_ref() else {
        return;
    };
    let none = Slot {
        due: None,
        late: false,
    };
    while !s.ctl.is_stopped() && w.quota.get() != Some(0) {
        // The handshake is in flight like a request: a failure is counted even when the run
        // stopped meanwhile, and one still pending at the deadline's cut is a connect timeout.
        w.in_flight.set(w.in_flight.get() + 1);
        w.connecting.set(w.connecting.get() + 1);
        let res =
            H2Connection::connect(w.addr(), &s.target, s.tls.as_ref(), s.connect_timeout).await;
        w.connecting.set(w.connecting.get() - 1);
        let (conn, t, driver) = match res {
            Ok(c) => {
                w.in_flight.set(w.in_flight.get() - 1);
                c
            }
            Err(e) => {
                // A failed connect costs one request of the budget, as in HTTP/1.1.
                w.take_quota(1);
                w.record_error(&e, none);
                continue;
            }
        };
        let driver = tokio::task::spawn_local(driver);
        w.record_connect(&t);
        let meter = conn.wire_meter();
        // From zero: the preface and SETTINGS exchange are wire bytes too.
        let seen = Rc::new(Cell::new((0, 0)));
        let flush = |seen: &Cell<(u64, u64)>| {
            let (s1, r1) = meter.get();
            let (s0, r0) = seen.replace((s1, r1));
            w.record_wire(s1 - s0, r1 - r0);
        };
        let streams: Vec<_> = (0..s.h2_streams)
            .map(|_| {
                let (w, conn, seen, meter) = (w.clone(), conn.clone(), seen.clone(), meter.clone());
                let req = req.clone();
                tokio::task::spawn_local(async move {
                    while let Some(slot) = w.next_slot().await {
                        let sent_at = Instant::now();
                        let res = conn.send(&req, BodyMode::Discard, w.shared.timeout).await;
                        let (s1, r1) = meter.get();
                        let (s0, r0) = seen.replace((s1, r1));
                        w.record_wire(s1 - s0, r1 - r0);
                        match res {
                            Ok(r) => w.record_exchange(&r, slot, sent_at),
                            Err(e) => {
                                w.record_failure(&e, slot);
                                if conn.is_closed() {
                                    return;
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        for st in streams {
            let _ = st.await;
        }
        let closed = conn.is_closed();
        // Dropping the last handle closes the connection (GOAWAY); count those bytes too.
        drop(conn);
        let _ = tokio::time::timeout(Duration::from_secs(1), driver).await;
        flush(&seen);
        if !closed {
            // Every stream loop ended because the run is over.
            return;
        }
    }
}

/// HTTP/1.1 pipelining, as wrk does it: write a batch of requests in one syscall, read their
/// responses in order, repeat. Each response's latency runs from the batch's write.
async fn pipelined_loop(w: &Rc<Worker>) {
    let s = &w.shared;
    let depth = s.batches.len() as u64;
    let none = Slot {
        due: None,
        late: false,
    };
    let mut conn: Option<Connection> = None;
    loop {
        let n = w.take(depth) as usize;
        if n == 0 {
            break;
        }
        if !ensure_connected(w, &mut conn, none, n as u64).await {
            // The whole batch failed to start: count every request in it.
            for _ in 1..n {
                w.record_error(
                    &HttpError::new(volley_http::ErrorClass::Other, "connect failed"),
                    none,
                );
            }
            continue;
        }
        let Some(c) = conn.as_mut() else { continue };
        let sent_at = Instant::now();
        let batch = &s.batches[n - 1];
        let answered = Cell::new(0usize);
        let exchange = async {
            c.write_batch(batch).await.map_err(|e| (e, 0usize))?;
            for i in 0..n {
                let r = c
                    .read_response(batch.is_head(), BodyMode::Discard)
                    .await
                    .map_err(|e| (e, i))?;
                w.record_response(&r, none, sent_at);
                answered.set(i + 1);
                if !r.keep_alive && i + 1 < n {
                    let e = HttpError::new(
                        volley_http::ErrorClass::Reset,
                        "server closed a pipelined connection",
                    );
                    return Err((e, i + 1));
                }
            }
            Ok(())
        };
        match tokio::time::timeout(s.timeout, exchange).await {
            Ok(Ok(())) => {
                if !c.is_reusable() || !s.keepalive {
                    conn = None;
                }
            }
            Ok(Err((e, done))) => {
                // The failing request carries the bytes; the rest of the batch failed with it.
                w.record_error(&e, none);
                let rest = HttpError::new(e.class, e.message.clone());
                for _ in done + 1..n {
                    w.record_error(&rest, none);
                }
                conn = None;
            }
            Err(_) => {
                let e = HttpError::new(
                    volley_http::ErrorClass::Timeout,
                    "pipelined batch timed out",
                );
                // Which responses arrived was recorded already; count the missing ones.
                for _ in answered.get()..n {
                    w.record_error(&e, none);
                }
                conn = None;
            }
        }
    }
}
