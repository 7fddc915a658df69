//! Wire-level accounting: server-wide counters, a per-connection meter, and the counting
//! I/O adapter every accepted socket is wrapped in.
//!
//! Bytes are counted where they cross the socket (below TLS and HTTP framing), so the numbers
//! are what a packet capture would show for the TCP payload.
//!
//! ## Why connections are classified
//!
//! `/stats` and `/metrics` must not disturb what they report. A connection cannot be judged
//! until its first request has been parsed, so its bytes are held in the meter's *pending*
//! counters until then:
//!
//! * first request is `/stats` or `/metrics` → the connection is a *monitoring* connection:
//!   pending bytes are discarded, it is taken out of `connections`, and nothing it ever sends
//!   or receives is counted;
//! * any other first request → pending bytes are added to the totals and every later byte is
//!   added as it moves (so keep-alive traffic is visible live);
//! * the connection ends with no request at all (a bare TCP connect, a malformed request hyper
//!   rejects by itself, a failed TLS handshake) → its bytes are counted.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::Stats;

/// Server-wide totals, shared by every connection and by [`crate::RunningTarget::stats`].
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) requests: AtomicU64,
    pub(crate) bytes_received: AtomicU64,
    pub(crate) bytes_sent: AtomicU64,
    pub(crate) connections: AtomicU64,
    /// Distinct client addresses (up to [`MAX_PEERS`]): tests of distributed runs check that
    /// the load came from several hosts.
    pub(crate) peers: std::sync::Mutex<std::collections::BTreeSet<std::net::IpAddr>>,
}

/// Distinct client addresses remembered; more are not recorded (bounded memory).
pub(crate) const MAX_PEERS: usize = 64;

impl Counters {
    pub(crate) fn add_peer(&self, ip: std::net::IpAddr) {
        let mut p = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        if p.len() < MAX_PEERS {
            p.insert(ip);
        }
    }

    pub(crate) fn peers(&self) -> Vec<std::net::IpAddr> {
        let p = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        p.iter().copied().collect()
    }

    pub(crate) fn snapshot(&self) -> Stats {
        Stats {
            requests: self.requests.load(Ordering::Relaxed),
            bytes_received: self.bytes_received.load(Ordering::Relaxed),
            bytes_sent: self.bytes_sent.load(Ordering::Relaxed),
            connections: self.connections.load(Ordering::Relaxed),
        }
    }
}

const UNDECIDED: u8 = 0;
const COUNTED: u8 = 1;
const EXCLUDED: u8 = 2;

/// One connection's view of the counters: holds bytes back until the connection has been
/// classified by its first request (see the module docs).
pub(crate) struct ConnMeter {
    global: Arc<Counters>,
    mode: AtomicU8,
    pending_rx: AtomicU64,
    pending_tx: AtomicU64,
}

impl ConnMeter {
    /// Registers a newly accepted connection.
    pub(crate) fn new(global: Arc<Counters>) -> Self {
        global.connections.fetch_add(1, Ordering::Relaxed);
        ConnMeter {
            global,
            mode: AtomicU8::new(UNDECIDED),
            pending_rx: AtomicU64::new(0),
            pending_tx: AtomicU64::new(0),
        }
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.global
    }

    fn record(&self, n: usize, pending: &AtomicU64, total: &AtomicU64) {
        let n = n as u64;
        match self.mode.load(Ordering::Acquire) {
            COUNTED => {
                total.fetch_add(n, Ordering::Relaxed);
            }
            EXCLUDED => {}
            _ => {
                pending.fetch_add(n, Ordering::SeqCst);
                // The connection may have been classified between the load above and the add;
                // re-check so these bytes are not stranded in `pending`.
                if self.mode.load(Ordering::SeqCst) == COUNTED {
                    self.flush();
                }
            }
        }
    }

    fn flush(&self) {
        let rx = self.pending_rx.swap(0, Ordering::SeqCst);
        let tx = self.pending_tx.swap(0, Ordering::SeqCst);
        self.global.bytes_received.fetch_add(rx, Ordering::Relaxed);
        self.global.bytes_sent.fetch_add(tx, Ordering::Relaxed);
    }

    /// Called for every request before it is answered; only the first one decides.
    pub(crate) fn classify(&self, monitoring: bool) {
        if self.mode.load(Ordering::Acquire) != UNDECIDED {
            return;
        }
        let mode = if monitoring { EXCLUDED } else { COUNTED };
        if self
            .mode
            .compare_exchange(UNDECIDED, mode, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return;
        }
        if monitoring {
            self.global.connections.fetch_sub(1, Ordering::Relaxed);
        } else {
            self.flush();
        }
    }
}

impl Drop for ConnMeter {
    fn drop(&mut self) {
        // A connection that never carried a request still moved bytes on the wire.
        if *self.mode.get_mut() == UNDECIDED {
            *self.mode.get_mut() = COUNTED;
            self.flush();
        }
    }
}

/// Wraps a socket and reports every byte read or written to its [`ConnMeter`].
pub(crate) struct CountingIo<T> {
    inner: T,
    meter: Arc<ConnMeter>,
}

impl<T> CountingIo<T> {
    pub(crate) fn new(inner: T, meter: Arc<ConnMeter>) -> Self {
        CountingIo { inner, meter }
    }

    fn on_read(&self, n: usize) {
        let m = &self.meter;
        m.record(n, &m.pending_rx, &m.global.bytes_received);
    }

    fn on_write(&self, n: usize) {
        let m = &self.meter;
        m.record(n, &m.pending_tx, &m.global.bytes_sent);
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for CountingIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let n = buf.filled().len() - before;
        if n > 0 {
            this.on_read(n);
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for CountingIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let n = ready!(Pin::new(&mut this.inner).poll_write(cx, buf))?;
        this.on_write(n);
        Poll::Ready(Ok(n))
    }

    // Forwarded so hyper keeps using writev (headers + body in one syscall).
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let n = ready!(Pin::new(&mut this.inner).poll_write_vectored(cx, bufs))?;
        this.on_write(n);
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meter() -> (Arc<Counters>, ConnMeter) {
        let global = Arc::new(Counters::default());
        let m = ConnMeter::new(global.clone());
        (global, m)
    }

    #[test]
    fn counted_connection_flushes_pending_then_counts_live() {
        let (g, m) = meter();
        m.record(10, &m.pending_rx, &g.bytes_received);
        assert_eq!(g.snapshot().bytes_received, 0, "held until classified");
        m.classify(false);
        assert_eq!(g.snapshot().bytes_received, 10);
        m.record(5, &m.pending_tx, &g.bytes_sent);
        m.classify(true); // later requests do not reclassify
        assert_eq!(
            g.snapshot(),
            Stats {
                requests: 0,
                bytes_received: 10,
                bytes_sent: 5,
                connections: 1
            }
        );
    }

    #[test]
    fn monitoring_connection_is_invisible() {
        let (g, m) = meter();
        m.record(10, &m.pending_rx, &g.bytes_received);
        m.classify(true);
        m.record(99, &m.pending_tx, &g.bytes_sent);
        m.classify(false);
        drop(m);
        assert_eq!(g.snapshot(), Stats::default());
    }

    #[test]
    fn connection_without_requests_counts_on_close() {
        let (g, m) = meter();
        m.record(7, &m.pending_rx, &g.bytes_received);
        drop(m);
        assert_eq!(
            g.snapshot(),
            Stats {
                requests: 0,
                bytes_received: 7,
                bytes_sent: 0,
                connections: 1
            }
        );
    }
}
