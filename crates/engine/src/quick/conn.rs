//! Quick mode's connection loops, one local task per connection: one request at a time,
//! HTTP/1.1 pipelining (closed model: full batches; open model: the requests due now, up to
//! the depth) and HTTP/2 (streams multiplexed on one connection). This is the hot path: a
//! request costs a few `Cell` updates and one recorder borrow besides the I/O.

use super::worker::{task_ended, task_started, QuickWorker, Slot, Vu, NO_SLOT};
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};
use volley_http::{BodyMode, Connection, ErrorClass, H2Connection, HttpError};

/// Start one connection task for `vu` (its first, or one more when all are busy).
pub(super) fn spawn_connection(w: &Rc<QuickWorker>, vu: &Rc<Vu>) {
    task_started(w, vu);
    let (w, vu2) = (w.clone(), vu.clone());
    let task = tokio::task::spawn_local(async move {
        if w.shared.h2_request.is_some() {
            h2_connection(&w, &vu2).await;
        } else if w.shared.batches.is_empty() {
            connection_loop(&w, &vu2).await;
        } else {
            pipelined_loop(&w, &vu2).await;
        }
        task_ended(&w, &vu2);
    });
    vu.own(task);
}

/// Make sure `conn` is open for the `pending` requests waiting on it; on failure the error is
/// recorded against `slot`.
async fn ensure_connected(
    w: &QuickWorker,
    vu: &Vu,
    conn: &mut Option<Connection>,
    slot: Slot,
    pending: u64,
) -> bool {
    if conn.as_ref().is_some_and(|c| c.is_reusable()) {
        return true;
    }
    let s = &w.shared;
    vu.connecting.set(vu.connecting.get() + pending);
    let res = Connection::connect(w.addr(), &s.target, s.tls.as_ref(), s.connect_timeout).await;
    vu.connecting.set(vu.connecting.get() - pending);
    match res {
        Ok((c, t)) => {
            w.record_connect(&t);
            *conn = Some(c);
            true
        }
        Err(e) => {
            w.record_error(vu, &e, slot);
            *conn = None;
            false
        }
    }
}

/// Every connection was busy when this one claimed a late slot: grow the pool.
fn grow(w: &Rc<QuickWorker>, vu: &Rc<Vu>, late: bool) {
    if late && w.live_conns.get() < w.shared.max_conns_per_worker {
        spawn_connection(w, vu);
    }
}

/// One connection, one request at a time: connect when needed, send, record, repeat.
async fn connection_loop(w: &Rc<QuickWorker>, vu: &Rc<Vu>) {
    let s = &w.shared;
    let mut conn: Option<Connection> = None;
    while let Some(slot) = w.next_slot(vu).await {
        grow(w, vu, slot.late);
        let sent_at = Instant::now();
        if !ensure_connected(w, vu, &mut conn, slot, 1).await {
            continue;
        }
        let Some(c) = conn.as_mut() else { continue };
        match c.send(&s.request, BodyMode::Discard, s.timeout).await {
            Ok(r) => {
                w.record_response(vu, &r, slot, sent_at);
                if !r.keep_alive || !s.keepalive {
                    conn = None;
                }
            }
            Err(e) => {
                w.record_error(vu, &e, slot);
                conn = None;
            }
        }
    }
}

/// HTTP/2: one connection carrying `h2_streams` concurrent request loops. Bytes come from the
/// socket's counters (exact, including connection-level frames), since multiplexed frames
/// cannot be attributed to single requests.
async fn h2_connection(w: &Rc<QuickWorker>, vu: &Rc<Vu>) {
    let s = &w.shared;
    let Some(req) = s.h2_request.as_ref() else {
        return;
    };
    while !w.ctl.is_stopped() && w.quota.get() != Some(0) {
        // The handshake is in flight like a request: a failure is counted even when the run
        // stopped meanwhile, and one still pending at the deadline's cut is a connect timeout.
        vu.in_flight.set(vu.in_flight.get() + 1);
        vu.connecting.set(vu.connecting.get() + 1);
        let res =
            H2Connection::connect(w.addr(), &s.target, s.tls.as_ref(), s.connect_timeout).await;
        vu.connecting.set(vu.connecting.get() - 1);
        let (conn, t, driver) = match res {
            Ok(c) => {
                vu.in_flight.set(vu.in_flight.get() - 1);
                c
            }
            Err(e) => {
                // A failed connect costs one request of the budget, as in HTTP/1.1.
                w.take_quota(1);
                w.record_error(vu, &e, NO_SLOT);
                continue;
            }
        };
        // Tasks of the VU, so that a cut aborts them with it.
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
        let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
        for _ in 0..s.h2_streams {
            let (w, vu2, conn, seen, meter) = (
                w.clone(),
                vu.clone(),
                conn.clone(),
                seen.clone(),
                meter.clone(),
            );
            let (req, done) = (req.clone(), done_tx.clone());
            vu.own(tokio::task::spawn_local(async move {
                while let Some(slot) = w.next_slot(&vu2).await {
                    let sent_at = Instant::now();
                    let res = conn.send(&req, BodyMode::Discard, w.shared.timeout).await;
                    let (s1, r1) = meter.get();
                    let (s0, r0) = seen.replace((s1, r1));
                    w.record_wire(s1 - s0, r1 - r0);
                    match res {
                        Ok(r) => w.record_exchange(&vu2, &r, slot, sent_at),
                        Err(e) => {
                            w.record_failure(&vu2, &e, slot);
                            if conn.is_closed() {
                                break;
                            }
                        }
                    }
                }
                drop(done);
            }));
        }
        drop(done_tx);
        // Every stream's sender is gone once its loop ended.
        let _ = done_rx.recv().await;
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

/// Record `e` for requests `from..n` of a batch: the first carries its bytes, the rest fail
/// with it.
fn fail_rest(w: &QuickWorker, vu: &Vu, e: &HttpError, slots: &[Slot], from: usize, n: usize) {
    let rest = HttpError::new(e.class, e.message.clone());
    for i in from..n {
        let slot = slots.get(i).copied().unwrap_or(NO_SLOT);
        w.record_error(vu, if i == from { e } else { &rest }, slot);
    }
}

/// HTTP/1.1 pipelining, as wrk does it: write a batch of requests in one syscall, read their
/// responses in order, repeat. Each response's latency runs from the batch's write. Closed
/// model: full batches. Open model: the first request when it is due, with every further one
/// already due (up to the depth) in the same write; each one's corrected latency runs from
/// its own due time.
async fn pipelined_loop(w: &Rc<QuickWorker>, vu: &Rc<Vu>) {
    let s = &w.shared;
    let depth = s.batches.len();
    let open = s.rate.is_some();
    // Open model: this batch's slots (empty in the closed model: every slot is NO_SLOT).
    let mut slots: Vec<Slot> = Vec::with_capacity(if open { depth } else { 0 });
    let mut conn: Option<Connection> = None;
    loop {
        let n = if open {
            slots.clear();
            let Some(first) = w.next_slot(vu).await else {
                break;
            };
            slots.push(first);
            let now = Instant::now();
            while slots.len() < depth {
                match w.claim_due(vu, now) {
                    Some(slot) => slots.push(slot),
                    None => break,
                }
            }
            grow(w, vu, slots.iter().any(|x| x.late));
            slots.len()
        } else {
            w.take(vu, depth as u64) as usize
        };
        if n == 0 {
            break;
        }
        let first = slots.first().copied().unwrap_or(NO_SLOT);
        if !ensure_connected(w, vu, &mut conn, first, n as u64).await {
            // The whole batch failed to start: count every other request in it.
            let e = HttpError::new(ErrorClass::Other, "connect failed");
            for i in 1..n {
                w.record_error(vu, &e, slots.get(i).copied().unwrap_or(NO_SLOT));
            }
            continue;
        }
        let Some(c) = conn.as_mut() else { continue };
        let sent_at = Instant::now();
        let batch = &s.batches[n - 1];
        let answered = Cell::new(0usize);
        let slots_now = &slots;
        let exchange = async {
            c.write_batch(batch).await.map_err(|e| (e, 0usize))?;
            for i in 0..n {
                let r = c
                    .read_response(batch.is_head(), BodyMode::Discard)
                    .await
                    .map_err(|e| (e, i))?;
                let slot = slots_now.get(i).copied().unwrap_or(NO_SLOT);
                w.record_response(vu, &r, slot, sent_at);
                answered.set(i + 1);
                if !r.keep_alive && i + 1 < n {
                    let e =
                        HttpError::new(ErrorClass::Reset, "server closed a pipelined connection");
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
                fail_rest(w, vu, &e, &slots, done, n);
                conn = None;
            }
            Err(_) => {
                let e = HttpError::new(ErrorClass::Timeout, "pipelined batch timed out");
                // Which responses arrived was recorded already; count the missing ones.
                for i in answered.get()..n {
                    w.record_error(vu, &e, slots.get(i).copied().unwrap_or(NO_SLOT));
                }
                conn = None;
            }
        }
    }
}
