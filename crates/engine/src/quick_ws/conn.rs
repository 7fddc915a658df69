//! The connection loop of WebSocket quick mode ([`WsBody`]): connect, send on the model's
//! pace (up to `inflight` outstanding), match echoes, reconnect after a loss, close with 1000
//! at the end. One VU, one connection at a time; everything it records goes through handles
//! resolved once. Per batch of echoes one read and one write: every frame the last read
//! brought in is matched (and its follow-up buffered) before the buffered sends are flushed.

use super::plan::Shared;
use super::{Payload, DROPPED, MISSED_STARTS, WS_ERRORS, WS_RTT, WS_RTT_CORRECTED, WS_UNANSWERED};
use crate::control::RunControl;
use crate::vus::{Outcome, Phase, ScenarioState, StopToken, VuBody, WorkerEnv};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use volley_http::ws::{self, Frame, Prebuilt, WsCmd, WsConn, WsEvent};
use volley_metrics::names;
use volley_metrics::{Handle, MetricKey, MetricKind, Recorder, Unit};

/// How long echoes of messages sent before the `-z` deadline (or Ctrl-C) may still arrive;
/// then the rest count as unanswered.
pub const DEADLINE_GRACE: Duration = Duration::from_millis(500);

/// Pause after a failed connect before the next try: a refused port must not spin a core.
const RECONNECT_PAUSE: Duration = Duration::from_millis(100);

/// How long the closing handshake may take at the end.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// Lateness forgiven as timer granularity rather than counted as a missed start.
const TIMER_SLACK: Duration = Duration::from_millis(2);

/// Digits of the sequence number at the start of a generated payload.
const SEQ_DIGITS: usize = 16;

/// A message waiting for its echo.
struct Pending {
    seq: u64,
    sent: Instant,
    due: Option<Instant>,
}

/// Handles of the series every message records into.
struct Handles {
    sessions: Handle,
    connecting: Handle,
    sent: Handle,
    received: Handle,
    data_sent: Handle,
    data_received: Handle,
    rtt: Handle,
    corrected: Handle,
    unanswered: Handle,
    unmatched: Handle,
    missed: Handle,
    dropped: Handle,
}

/// A WebSocket quick-mode VU: one connection driven by one long iteration.
pub struct WsBody {
    s: Arc<Shared>,
    /// This connection's index among `connections` (which arrivals and budget it owns).
    idx: usize,
    rec: Rc<RefCell<Recorder>>,
    scenarios: Arc<Vec<ScenarioState>>,
    ctl: RunControl,
    h: Handles,
    /// A fixed `--message`, built once: each send clones a reference count.
    fixed: Option<Prebuilt>,
    /// Messages outstanding at most (`usize::MAX`: no cap).
    inflight: usize,
}

/// How a session (one connection) ended.
enum SessionEnd {
    /// Nothing more to send and every echo in (or the grace is over): close it.
    Done,
    /// The connection was lost; reconnect if there is more to send.
    Lost,
    /// Hard stop: give everything up now.
    Cut,
}

/// This connection's progress through the run.
struct State {
    seq: u64,
    /// Messages this connection may still send (`-n`), or None for unbounded.
    budget: Option<u64>,
    /// Open model: this connection's next arrival (it owns every `connections`-th one).
    next_arrival: u64,
    /// Open model: the arrival this connection went to sleep for (it was not late then).
    armed: Option<u64>,
    pending: VecDeque<Pending>,
    start: Instant,
    end: Option<Instant>,
    /// When sending stopped (deadline, budget, Ctrl-C): echoes get [`DEADLINE_GRACE`].
    stopped_at: Option<Instant>,
}

impl WsBody {
    pub(super) fn new(s: Arc<Shared>, env: &WorkerEnv, idx: usize) -> WsBody {
        let h = {
            let mut r = env.recorder.borrow_mut();
            let mut c =
                |name: &str| r.handle(MetricKey::new(name), MetricKind::Counter, Unit::Default);
            let (sessions, sent, received, unanswered, unmatched, missed, dropped) = (
                c(names::WS_SESSIONS),
                c(names::WS_MSGS_SENT),
                c(names::WS_MSGS_RECEIVED),
                c(WS_UNANSWERED),
                c(super::WS_UNMATCHED),
                c(MISSED_STARTS),
                c(DROPPED),
            );
            let mut t = |name: &str| r.handle(MetricKey::new(name), MetricKind::Trend, Unit::Time);
            let (connecting, rtt, corrected) =
                (t(names::WS_CONNECTING), t(WS_RTT), t(WS_RTT_CORRECTED));
            let mut d =
                |name: &str| r.handle(MetricKey::new(name), MetricKind::Counter, Unit::Data);
            Handles {
                sessions,
                connecting,
                sent,
                received,
                data_sent: d(names::DATA_SENT),
                data_received: d(names::DATA_RECEIVED),
                rtt,
                corrected,
                unanswered,
                unmatched,
                missed,
                dropped,
            }
        };
        let fixed = matches!(s.cfg.payload, Payload::Fixed(_)).then(|| message(&s, 0));
        let open = s.cfg.rate.is_some();
        let inflight = s.cfg.inflight.unwrap_or(if open { usize::MAX } else { 1 });
        WsBody {
            fixed,
            inflight: inflight.max(1),
            idx,
            rec: env.recorder.clone(),
            scenarios: env.scenarios.clone(),
            ctl: env.ctl().clone(),
            h,
            s,
        }
    }

    fn error(&self, class: &str) {
        let mut rec = self.rec.borrow_mut();
        let h = rec.handle(
            MetricKey::tagged(WS_ERRORS, &[("error", class)]),
            MetricKind::Counter,
            Unit::Default,
        );
        rec.add(h, 1.0);
    }

    fn count(&self, h: Handle, n: u64) {
        if n > 0 {
            self.rec.borrow_mut().add(h, n as f64);
        }
    }

    fn bytes(&self, conn: &mut WsConn) {
        let (sent, received) = conn.take_bytes();
        let mut rec = self.rec.borrow_mut();
        rec.add(self.h.data_sent, sent as f64);
        rec.add(self.h.data_received, received as f64);
    }

    /// Buffer the message with sequence number `seq`: the session flushes before it waits,
    /// so messages due together go in one write.
    async fn send(&self, conn: &mut WsConn, seq: u64) -> Result<(), String> {
        match &self.fixed {
            Some(m) => conn.send_prebuilt(m, false).await,
            None => conn.send_prebuilt(&message(&self.s, seq), false).await,
        }
    }

    /// When this connection's next message is due: None while the closed model waits for an
    /// echo, or (with `stopped_at` set) when it must not send any more.
    fn next_due(&self, st: &mut State, now: Instant) -> Option<Instant> {
        if st.stopped_at.is_some() {
            return None;
        }
        let past_end = st.end.is_some_and(|end| now >= end);
        if past_end {
            // The first connection past -z stops the run (as HTTP quick mode does).
            self.ctl.stop();
        }
        if past_end || self.ctl.is_stopped() || st.budget == Some(0) {
            st.stopped_at = Some(st.end.map_or(now, |end| now.min(end)));
            return None;
        }
        let Some(rate) = &self.s.cfg.rate else {
            // Closed model: `inflight` messages outstanding.
            return (st.pending.len() < self.inflight).then_some(now);
        };
        let n = self.s.cfg.connections.max(1) as u64;
        let due = rate
            .arrival(st.next_arrival * n + self.idx as u64)
            .map(|at| st.start + crate::clamp_secs(at))
            .filter(|due| st.end.is_none_or(|end| *due < end));
        if due.is_none() {
            // The schedule is over for this connection.
            st.stopped_at = Some(now);
        }
        due
    }

    /// Match a received message to the oldest pending send it echoes.
    fn received(&self, st: &mut State, data: &[u8]) {
        let now = Instant::now();
        self.count(self.h.received, 1);
        let seq = match &self.s.cfg.payload {
            Payload::Generated { .. } => match parse_seq(data) {
                Some(s) => Some(s),
                None => return self.count(self.h.unmatched, 1),
            },
            // Not what was sent: no echo, and it must not take a pending send's place.
            Payload::Fixed(m) if m.as_slice() != data => return self.count(self.h.unmatched, 1),
            Payload::Fixed(_) => None,
        };
        // Sends older than the echoed one were dropped by the server.
        let mut lost = 0;
        let mut matched = None;
        while let Some(p) = st.pending.pop_front() {
            match seq {
                Some(s) if p.seq < s => lost += 1,
                Some(s) if p.seq > s => {
                    // An echo of nothing pending (a duplicate): put it back.
                    st.pending.push_front(p);
                    break;
                }
                _ => {
                    matched = Some(p);
                    break;
                }
            }
        }
        self.count(self.h.unanswered, lost);
        let Some(p) = matched else {
            return self.count(self.h.unmatched, 1);
        };
        let mut rec = self.rec.borrow_mut();
        rec.trend_us(self.h.rtt, (now - p.sent).as_micros() as u64);
        if let Some(due) = p.due {
            rec.trend_us(self.h.corrected, (now - due).as_micros() as u64);
        }
    }

    /// Connect, run sessions until the run is over, close.
    async fn drive(&self, scenario: usize, stop: &StopToken) -> Outcome {
        let start = self.scenarios[scenario]
            .started()
            .map_or_else(Instant::now, |(t0, _)| t0);
        let _ = self.s.begin.set(start);
        let n = self.s.cfg.connections.max(1);
        let mut st = State {
            seq: 0,
            budget: self
                .s
                .cfg
                .messages
                .map(|m| crate::quick::split_budget(m, n, self.idx)),
            next_arrival: 0,
            armed: None,
            pending: VecDeque::new(),
            start,
            end: self.s.duration.map(|d| start + d),
            stopped_at: None,
        };
        let out = self.sessions(&mut st, stop).await;
        self.record_dropped(&st);
        out
    }

    /// Open model: arrivals of this connection due before it stopped sending that it never
    /// sent (k6's dropped_iterations, `volley http`'s dropped_requests): with `inflight` full
    /// they waited for echoes that came too late. A spent `-n` budget drops nothing.
    fn record_dropped(&self, st: &State) {
        let (Some(rate), Some(at)) = (&self.s.cfg.rate, st.stopped_at) else {
            return;
        };
        if st.budget == Some(0) {
            return;
        }
        let due_total = rate.arrivals_before(at.saturating_duration_since(st.start).as_secs_f64());
        let (i, n) = (self.idx as u64, self.s.cfg.connections.max(1) as u64);
        let mine = due_total.saturating_sub(i).div_ceil(n);
        self.count(self.h.dropped, mine.saturating_sub(st.next_arrival));
    }

    /// Connect and run sessions until the run is over.
    async fn sessions(&self, st: &mut State, stop: &StopToken) -> Outcome {
        loop {
            if self.next_due(st, Instant::now()).is_none() && st.stopped_at.is_some() {
                return Outcome::Ok;
            }
            let began = Instant::now();
            let connect = ws::connect(&self.s.request, &self.s.settings);
            let deadline = st.end.map(|e| e.into());
            let res = tokio::select! {
                biased;
                _ = stop.stopped() => return Outcome::Interrupted,
                _ = stop.interrupted() => return Outcome::Interrupted,
                _ = sleep_opt(deadline) => return Outcome::Ok,
                r = tokio::time::timeout(self.s.cfg.connect_timeout, connect) => r,
            };
            // The sender is dropped: this loop writes directly, never through the queue.
            let (mut conn, _, _) = match res {
                Ok(Ok(c)) => c,
                Ok(Err(e)) => {
                    match &e.response {
                        Some(r) => self.error(&format!("handshake {}", r.status)),
                        None => self.error(e.class.as_str()),
                    }
                    // A failed connect costs one message of a -n budget, so the run ends.
                    if let Some(b) = st.budget.as_mut() {
                        *b = b.saturating_sub(1);
                    }
                    tokio::select! {
                        _ = stop.stopped() => return Outcome::Interrupted,
                        _ = tokio::time::sleep(RECONNECT_PAUSE) => {}
                    }
                    continue;
                }
                Err(_) => {
                    self.error("timeout");
                    if let Some(b) = st.budget.as_mut() {
                        *b = b.saturating_sub(1);
                    }
                    continue;
                }
            };
            {
                let mut rec = self.rec.borrow_mut();
                rec.add(self.h.sessions, 1.0);
                rec.trend_us(self.h.connecting, began.elapsed().as_micros() as u64);
            }
            match self.session(&mut conn, st, stop).await {
                SessionEnd::Cut => {
                    self.bytes(&mut conn);
                    self.count(self.h.unanswered, st.pending.len() as u64);
                    return Outcome::Interrupted;
                }
                SessionEnd::Lost => {
                    self.bytes(&mut conn);
                    self.count(self.h.unanswered, st.pending.drain(..).count() as u64);
                }
                SessionEnd::Done => {
                    self.close(&mut conn).await;
                    self.bytes(&mut conn);
                    self.count(self.h.unanswered, st.pending.drain(..).count() as u64);
                    return Outcome::Ok;
                }
            }
        }
    }

    /// Send and match until there is nothing left to do on this connection.
    async fn session(&self, conn: &mut WsConn, st: &mut State, stop: &StopToken) -> SessionEnd {
        // Made once per session, not per message: each registers with a `Notify`.
        let stopped = stop.stopped();
        let interrupted = stop.interrupted();
        tokio::pin!(stopped, interrupted);
        // A finished `async fn` future must not be polled again.
        let mut was_interrupted = false;
        let mut unflushed = false;
        loop {
            let now = Instant::now();
            let due = self.next_due(st, now);
            // Open model: with `inflight` outstanding a due message waits for an echo.
            let room = st.pending.len() < self.inflight;
            if let Some(due) = due.filter(|d| *d <= now) {
                if room {
                    if let Err(end) = self.send_due(conn, st, due, now).await {
                        return end;
                    }
                    unflushed = true;
                    continue;
                }
                // Sent once an echo frees a place, late: a missed start.
                st.armed = None;
            }
            // Every frame the last read brought in, before writing or waiting again.
            if let Some(f) = conn.try_next_frame().await {
                if let Some(end) = self.on_frame(st, f) {
                    return end;
                }
                continue;
            }
            if std::mem::take(&mut unflushed) && conn.flush_now().await.is_err() {
                self.error("write");
                return SessionEnd::Lost;
            }
            if due.is_none() && st.pending.is_empty() {
                return SessionEnd::Done;
            }
            // Wire bytes so far, once per wait (the run's per-second series shows them).
            self.bytes(conn);
            // Blocked on `inflight`: an echo wakes it, not the (past) due time.
            let due = due.filter(|_| room);
            if due.is_some() {
                st.armed = Some(st.next_arrival);
            }
            // Wake for the next send, the oldest echo's timeout, or the end of the grace.
            let mut wake = due;
            if let Some(p) = st.pending.front() {
                let lost_at = p.sent + self.s.cfg.timeout;
                wake = Some(wake.map_or(lost_at, |w| w.min(lost_at)));
            }
            if let Some(at) = st.stopped_at {
                let cut = at + DEADLINE_GRACE;
                if now >= cut {
                    return SessionEnd::Done;
                }
                wake = Some(wake.map_or(cut, |w| w.min(cut)));
            } else if let Some(end) = st.end {
                wake = Some(wake.map_or(end, |w| w.min(end)));
            }
            // The socket first: a frame ready on wake-up skips polling the stop futures (a
            // lock each). They registered on the first wait, so a stop while busy is kept,
            // and `next_due` sees the run's stop flag every turn anyway.
            let f = tokio::select! {
                biased;
                f = conn.next_frame(wake) => f,
                _ = &mut stopped => return SessionEnd::Cut,
                _ = &mut interrupted, if st.stopped_at.is_none() && !was_interrupted => {
                    was_interrupted = true;
                    st.stopped_at = Some(Instant::now());
                    continue;
                }
            };
            if let Some(end) = self.on_frame(st, f) {
                return end;
            }
        }
    }

    /// Buffer the message due at `due` (the session flushes before it waits).
    async fn send_due(
        &self,
        conn: &mut WsConn,
        st: &mut State,
        due: Instant,
        now: Instant,
    ) -> Result<(), SessionEnd> {
        let seq = st.seq;
        st.seq += 1;
        let open = self.s.cfg.rate.is_some();
        if open {
            // Late only if it was overdue when first seen: the timer's own lateness
            // (tokio rounds to the millisecond) is no missed start, as in `quick`.
            let slept = st.armed == Some(st.next_arrival);
            st.next_arrival += 1;
            if !slept && now > due + TIMER_SLACK {
                self.count(self.h.missed, 1);
            }
        }
        if let Some(b) = st.budget.as_mut() {
            *b -= 1;
        }
        st.pending.push_back(Pending {
            seq,
            sent: now,
            due: open.then_some(due),
        });
        if self.send(conn, seq).await.is_err() {
            self.error("write");
            return Err(SessionEnd::Lost);
        }
        self.count(self.h.sent, 1);
        Ok(())
    }

    /// Handle what the socket gave; `Some` ends the session.
    fn on_frame(&self, st: &mut State, f: Frame) -> Option<SessionEnd> {
        match f {
            Frame::Data(d) => self.received(st, &d),
            Frame::Event(
                WsEvent::Ping | WsEvent::Pong(_) | WsEvent::Text(_) | WsEvent::Binary(_),
            ) => {}
            Frame::Event(WsEvent::Timeout) => {
                let now = Instant::now();
                // Echoes overdue by the timeout are lost; the connection goes on.
                while st
                    .pending
                    .front()
                    .is_some_and(|p| now >= p.sent + self.s.cfg.timeout)
                {
                    st.pending.pop_front();
                    self.error("timeout");
                    self.count(self.h.unanswered, 1);
                }
            }
            Frame::Event(WsEvent::Closed { code, .. }) => {
                self.error(&format!("closed {code}"));
                return Some(SessionEnd::Lost);
            }
        }
        None
    }

    /// The closing handshake: our 1000, then the peer's answer (or [`CLOSE_WAIT`]).
    async fn close(&self, conn: &mut WsConn) {
        if conn
            .send_now(WsCmd::Close(1000, String::new()))
            .await
            .is_err()
        {
            return;
        }
        let until = Instant::now() + CLOSE_WAIT;
        loop {
            match conn.next(Some(until)).await {
                WsEvent::Closed { .. } | WsEvent::Timeout => return,
                // Late echoes after the grace are not counted.
                _ => {}
            }
        }
    }
}

impl VuBody for WsBody {
    async fn run(&mut self, phase: Phase) -> Outcome {
        match phase {
            Phase::Iteration(ctx) => self.drive(ctx.scenario, &ctx.stop).await,
            Phase::Setup | Phase::Teardown => Outcome::Ok,
        }
    }
}

/// The message with sequence number `seq`.
fn message(s: &Shared, seq: u64) -> Prebuilt {
    let bytes = match &s.cfg.payload {
        Payload::Fixed(b) => b.clone(),
        Payload::Generated { size } => generated(seq, *size),
    };
    if s.cfg.binary {
        Prebuilt::binary(bytes)
    } else {
        // Fixed text was checked to be UTF-8 by the CLI; generated text is ASCII.
        Prebuilt::text(String::from_utf8_lossy(&bytes).into_owned())
    }
}

async fn sleep_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A generated payload: the sequence number in hex, then filler up to `size` bytes.
pub(super) fn generated(seq: u64, size: usize) -> Vec<u8> {
    let mut out = format!("{seq:0width$x}", width = SEQ_DIGITS).into_bytes();
    out.resize(size.max(SEQ_DIGITS), b'.');
    out
}

/// The sequence number a generated payload starts with.
pub(super) fn parse_seq(data: &[u8]) -> Option<u64> {
    let head = std::str::from_utf8(data.get(..SEQ_DIGITS)?).ok()?;
    u64::from_str_radix(head, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_payloads_carry_their_sequence_number() {
        let p = generated(0xabc, 32);
        assert_eq!(p.len(), 32);
        assert_eq!(parse_seq(&p), Some(0xabc));
        // Never shorter than the number itself.
        assert_eq!(generated(u64::MAX, 4).len(), SEQ_DIGITS);
        assert_eq!(parse_seq(&generated(u64::MAX, 4)), Some(u64::MAX));
        // A server's own message is no echo.
        assert_eq!(parse_seq(b"hello"), None);
        assert_eq!(parse_seq(b"zzzzzzzzzzzzzzzzzz"), None);
    }
}
