//! The transport under both protocols: TCP (+ TLS) with raw byte counting.
//!
//! [`open`] connects, sets `TCP_NODELAY`, does the TLS handshake for https targets and
//! reports [`ConnectTimings`]. The stream it returns counts bytes *below* TLS, so handshakes
//! and record overhead are included, exactly as they cross the socket. Where the counts are
//! kept is a type parameter ([`Tally`]): HTTP/1.1 owns its connection and keeps plain
//! integers, HTTP/2 hands the stream to a driver task and shares atomics with its handles.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::error::{ErrorClass, HttpError};
use crate::h1::ConnectTimings;
use crate::url::{Scheme, Target};

/// Where a [`Counted`] stream records the bytes it moves.
pub(crate) trait Tally: Unpin {
    fn add_read(&mut self, n: usize);
    fn add_written(&mut self, n: usize);
}

/// Counts owned by the stream itself (HTTP/1.1: the connection reads them directly).
#[derive(Debug, Default)]
pub(crate) struct Owned {
    pub read: u64,
    pub written: u64,
}

impl Tally for Owned {
    fn add_read(&mut self, n: usize) {
        self.read += n as u64;
    }
    fn add_written(&mut self, n: usize) {
        self.written += n as u64;
    }
}

/// Counts readable from other tasks (HTTP/2: the driver owns the stream, handles read).
#[derive(Debug, Default)]
pub(crate) struct WireCounters {
    read: AtomicU64,
    written: AtomicU64,
}

impl WireCounters {
    /// (written, read) so far.
    pub fn get(&self) -> (u64, u64) {
        (
            self.written.load(Ordering::Relaxed),
            self.read.load(Ordering::Relaxed),
        )
    }
}

/// The stream is the only writer, so a plain load + store is enough (no locked
/// read-modify-write on the hot path); readers only need eventually-current values.
impl Tally for Arc<WireCounters> {
    fn add_read(&mut self, n: usize) {
        let v = self.read.load(Ordering::Relaxed);
        self.read.store(v + n as u64, Ordering::Relaxed);
    }
    fn add_written(&mut self, n: usize) {
        let v = self.written.load(Ordering::Relaxed);
        self.written.store(v + n as u64, Ordering::Relaxed);
    }
}

/// Counts raw bytes in both directions. Sits under TLS so record overhead and handshakes
/// are counted as they cross the socket.
#[derive(Debug)]
pub(crate) struct Counted<S, T> {
    inner: S,
    pub tally: T,
}

impl<S: AsyncRead + Unpin, T: Tally> AsyncRead for Counted<S, T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        let res = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = res {
            this.tally.add_read(buf.filled().len() - before);
        }
        res
    }
}

impl<S: AsyncWrite + Unpin, T: Tally> AsyncWrite for Counted<S, T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let res = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = res {
            this.tally.add_written(n);
        }
        res
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let res = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = res {
            this.tally.add_written(n);
        }
        res
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The transport: plain TCP, or TLS (boxed: the rustls state is large and the plain
/// case should not pay for it).
pub(crate) enum Io<T> {
    Plain(Counted<TcpStream, T>),
    Tls(Box<TlsStream<Counted<TcpStream, T>>>),
}

impl<T> Io<T> {
    pub fn counted(&self) -> &Counted<TcpStream, T> {
        match self {
            Io::Plain(c) => c,
            Io::Tls(s) => s.get_ref().0,
        }
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Io::Tls(_))
    }

    /// The protocol the server picked via ALPN (TLS only).
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        match self {
            Io::Tls(s) => s.get_ref().1.alpn_protocol(),
            Io::Plain(_) => None,
        }
    }
}

impl<T: Tally> AsyncRead for Io<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl<T: Tally> AsyncWrite for Io<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => {
                let r = Pin::new(s.as_mut()).poll_write(cx, buf);
                alert_instead(s, r)
            }
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tls(s) => {
                let r = Pin::new(s.as_mut()).poll_write_vectored(cx, bufs);
                alert_instead(s, r)
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Io::Plain(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => {
                let r = Pin::new(s.as_mut()).poll_flush(cx);
                alert_instead(s, r)
            }
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// A TLS write that fails because the peer has closed (broken pipe, reset) mostly follows
/// the peer's alert saying why: a client certificate required, a certificate it rejects. The
/// alert is still in the socket's receive queue; read it, so the error names the cause
/// instead of the broken pipe (whether a write or a read meets the close first is timing).
/// Read through a duplicate of the descriptor: tokio's own read would wait for a readiness
/// event its driver may not have seen yet.
fn alert_instead<T: Tally, R>(
    s: &mut TlsStream<Counted<TcpStream, T>>,
    r: Poll<io::Result<R>>,
) -> Poll<io::Result<R>> {
    match r {
        Poll::Ready(Err(e))
            if matches!(
                e.kind(),
                io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
            ) =>
        {
            Poll::Ready(Err(pending_alert(s).unwrap_or(e)))
        }
        r => r,
    }
}

fn pending_alert<T>(s: &mut TlsStream<Counted<TcpStream, T>>) -> Option<io::Error> {
    use std::os::fd::AsFd;
    let (counted, tls) = s.get_mut();
    let fd = counted.inner.as_fd().try_clone_to_owned().ok()?;
    // Non-blocking like the original (one open file): an empty queue ends the loop.
    let mut raw = std::net::TcpStream::from(fd);
    for _ in 0..8 {
        match tls.read_tls(&mut raw) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {
                if let Err(alert) = tls.process_new_packets() {
                    return Some(io::Error::new(io::ErrorKind::InvalidData, alert));
                }
            }
        }
    }
    None
}

/// Opens TCP (with TCP_NODELAY) and, for https targets, does the TLS handshake with
/// SNI `target.host` and the ALPN list of `tls`. `connect_timeout` bounds TCP connect and
/// handshake together.
pub(crate) async fn open<T: Tally>(
    addr: SocketAddr,
    target: &Target,
    tls: Option<&Arc<rustls::ClientConfig>>,
    connect_timeout: Duration,
    tally: T,
) -> Result<(Io<T>, ConnectTimings), HttpError> {
    let deadline = tokio::time::Instant::now() + connect_timeout;
    let t0 = Instant::now();
    let tcp = match tokio::time::timeout_at(deadline, TcpStream::connect(addr)).await {
        Err(_) => {
            return Err(HttpError::new(
                ErrorClass::Timeout,
                format!("connect to {addr} timed out after {connect_timeout:?}"),
            ))
        }
        Ok(Err(e)) => return Err(HttpError::io(&e, &format!("connect to {addr}"))),
        Ok(Ok(s)) => s,
    };
    // Requests are written whole; Nagle would only delay them.
    tcp.set_nodelay(true)
        .map_err(|e| HttpError::io(&e, "setting TCP_NODELAY"))?;
    let mut timings = ConnectTimings {
        connecting: t0.elapsed(),
        tls_handshaking: Duration::ZERO,
    };
    let counted = Counted { inner: tcp, tally };
    let io = match target.scheme {
        Scheme::Http => Io::Plain(counted),
        Scheme::Https => {
            let Some(config) = tls else {
                return Err(HttpError::new(
                    ErrorClass::Other,
                    "https target but no TLS config: build one with tls_config()",
                ));
            };
            let name = ServerName::try_from(target.host.as_str())
                .map_err(|e| {
                    HttpError::new(
                        ErrorClass::Tls,
                        format!("'{}' is not a valid TLS server name: {e}", target.host),
                    )
                })?
                .to_owned();
            let t1 = Instant::now();
            let handshake = TlsConnector::from(Arc::clone(config)).connect(name, counted);
            let stream = match tokio::time::timeout_at(deadline, handshake).await {
                Err(_) => {
                    return Err(HttpError::new(
                        ErrorClass::Timeout,
                        format!("TLS handshake with {addr} not done within {connect_timeout:?}"),
                    ))
                }
                Ok(Err(e)) => {
                    let mut err = HttpError::io(&e, &format!("TLS handshake with {addr}"));
                    err.class = handshake_class(&e);
                    return Err(err);
                }
                Ok(Ok(s)) => s,
            };
            timings.tls_handshaking = t1.elapsed();
            Io::Tls(Box::new(stream))
        }
    };
    Ok((io, timings))
}

/// Handshake failures are TLS problems, except a refused/reset/timed-out socket.
/// (A peer closing mid-handshake usually means it rejected our hello: TLS.)
fn handshake_class(e: &io::Error) -> ErrorClass {
    match ErrorClass::of_io(e) {
        c @ (ErrorClass::Refused | ErrorClass::Timeout) => c,
        ErrorClass::Reset if e.kind() != io::ErrorKind::UnexpectedEof => ErrorClass::Reset,
        _ => ErrorClass::Tls,
    }
}
