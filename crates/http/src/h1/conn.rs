//! One HTTP/1.1 [`Connection`]: connect (TCP, TLS), write requests (single, streamed file
//! bodies, pipelined batches), the in-flight queue and the wire byte counters. Reading
//! responses is in `decode`.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::encode::Tail;
use super::{PipelineBatch, Request, FILE_CHUNK};
use crate::error::{ErrorClass, HttpError};
use crate::message::{BodyMode, ConnectTimings, Response};
use crate::transport::{self, Io, Owned};
use crate::url::Target;

/// A request written but whose response has not been read yet.
#[derive(Clone, Copy, Debug)]
pub(super) struct InFlight {
    pub(super) bytes_sent: u64,
    pub(super) sending: Duration,
    pub(super) write_end: Instant,
}

/// One HTTP/1.1 connection with its reusable read buffer.
pub struct Connection {
    pub(super) io: Io<Owned>,
    /// `buf[start..end]` holds received bytes not yet consumed (possibly the next
    /// pipelined response).
    pub(super) buf: Vec<u8>,
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) in_flight: VecDeque<InFlight>,
    /// Socket counters at the last attribution point.
    pub(super) sent_mark: u64,
    pub(super) recv_mark: u64,
    pub(super) keep_headers: bool,
    /// Set while an operation is under way and left set if it fails or is cancelled:
    /// the stream position is then unknown, so the connection must not be reused.
    pub(super) broken: bool,
    /// The server or one of our requests asked to close after the current response.
    pub(super) closing: bool,
    pub(super) requests_sent: u64,
    pub(super) responses_read: u64,
    /// Largest body [`BodyMode::Keep`] collects (see [`Connection::set_max_body`]).
    pub(super) max_body: u64,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("tls", &self.io.is_tls())
            .field("buffered", &(self.end - self.start))
            .field("in_flight", &self.in_flight.len())
            .field("broken", &self.broken)
            .field("closing", &self.closing)
            .field("requests_sent", &self.requests_sent)
            .finish()
    }
}

impl Connection {
    /// Opens TCP (with TCP_NODELAY) and, for https targets, does the TLS handshake with
    /// SNI `target.host`. `connect_timeout` bounds TCP connect and handshake together.
    pub async fn connect(
        addr: SocketAddr,
        target: &Target,
        tls: Option<&Arc<rustls::ClientConfig>>,
        connect_timeout: Duration,
    ) -> Result<(Connection, ConnectTimings), HttpError> {
        let (io, timings) =
            transport::open(addr, target, tls, connect_timeout, Owned::default()).await?;
        Ok((Connection::from_io(io), timings))
    }

    /// A connection on an open stream (script mode's https, after ALPN chose HTTP/1.1).
    pub(crate) fn from_io(io: Io<Owned>) -> Connection {
        Connection {
            io,
            buf: Vec::new(),
            start: 0,
            end: 0,
            in_flight: VecDeque::new(),
            sent_mark: 0,
            recv_mark: 0,
            keep_headers: false,
            broken: false,
            closing: false,
            requests_sent: 0,
            responses_read: 0,
            max_body: u64::MAX,
        }
    }

    /// Free the read buffer and the in-flight queue while nothing is buffered or in flight
    /// (an idle keep-alive connection of a VU that sleeps): the next request allocates them
    /// again. Returns the bytes freed.
    pub fn release_buffers(&mut self) -> usize {
        if self.start != self.end || !self.in_flight.is_empty() {
            return 0;
        }
        let freed = self.buf.capacity() + self.in_flight.capacity() * size_of::<InFlight>();
        self.buf = Vec::new();
        self.in_flight = VecDeque::new();
        (self.start, self.end) = (0, 0);
        freed
    }

    /// Copy response headers into `Response::headers` (costs allocations; off by default).
    pub fn keep_headers(&mut self, on: bool) {
        self.keep_headers = on;
    }

    /// Cap on a body collected in [`BodyMode::Keep`] (`None`: no cap). A response past it
    /// fails with [`HttpError::body_too_large`] as soon as it is known (a larger
    /// `Content-Length`, or the bytes read so far), the rest is not read and the connection
    /// is not reused; what was read counts in `bytes_received`. Discarded bodies cost no
    /// memory and have no cap.
    pub fn set_max_body(&mut self, limit: Option<u64>) {
        self.max_body = limit.unwrap_or(u64::MAX);
    }

    /// Whether another request may be written: no earlier failure and nobody asked to close.
    pub fn is_reusable(&self) -> bool {
        !self.broken && !self.closing
    }

    /// Requests written (or attempted) on this connection.
    pub fn requests_sent(&self) -> u64 {
        self.requests_sent
    }

    /// Requests written whose responses have not been read yet.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    pub fn is_tls(&self) -> bool {
        self.io.is_tls()
    }

    /// The protocol the server picked via ALPN (TLS only).
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        self.io.alpn_protocol()
    }

    /// Raw bytes (sent, received) on the socket since it was opened.
    pub fn wire_bytes(&self) -> (u64, u64) {
        let c = &self.io.counted().tally;
        (c.written, c.read)
    }

    /// Writes `req` and reads its response; everything must finish within `timeout`.
    /// Requires no pipelined requests in flight.
    pub async fn send(
        &mut self,
        req: &Request,
        mode: BodyMode,
        timeout: Duration,
    ) -> Result<Response, HttpError> {
        if !self.in_flight.is_empty() {
            return Err(HttpError::new(
                ErrorClass::Other,
                "send() while pipelined requests are in flight: read their responses first",
            ));
        }
        let (sent0, recv0) = (self.sent_mark, self.recv_mark);
        let exchange = async {
            self.write_request(req).await?;
            self.read_next(req.is_head, mode).await
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => {
                // The cancelled exchange left `broken` set; settle the byte accounting.
                self.broken = true;
                self.in_flight.clear();
                let c = &self.io.counted().tally;
                let (sent, recv) = (c.written, c.read);
                self.sent_mark = sent;
                self.recv_mark = recv;
                Err(HttpError {
                    class: ErrorClass::Timeout,
                    message: format!("no complete response within {timeout:?}"),
                    bytes_sent: sent - sent0,
                    bytes_received: recv - recv0,
                })
            }
        }
    }

    /// Writes one request without reading. Pipelining: call several times, then
    /// [`Connection::read_response`] once per request, in order. No deadline of its own.
    pub async fn write_request(&mut self, req: &Request) -> Result<(), HttpError> {
        self.check_usable()?;
        if self.closing {
            return Err(HttpError::new(
                ErrorClass::Other,
                "connection is closing (Connection: close was sent or received): open a new one",
            ));
        }
        // Open the file first: if that fails nothing was written and the connection is fine.
        let file = match &req.tail {
            Tail::File { path, .. } => Some(tokio::fs::File::open(path).await.map_err(|e| {
                HttpError::new(
                    ErrorClass::Other,
                    format!("cannot open body file {}: {e}", path.display()),
                )
            })?),
            _ => None,
        };
        self.broken = true;
        self.requests_sent += 1;
        let start = Instant::now();
        let result = self.write_parts(req, file).await;
        let write_end = Instant::now();
        let written = self.io.counted().tally.written;
        let bytes_sent = written - self.sent_mark;
        self.sent_mark = written;
        match result {
            Ok(()) => {
                self.in_flight.push_back(InFlight {
                    bytes_sent,
                    sending: write_end - start,
                    write_end,
                });
                self.closing |= !req.keep_alive;
                self.broken = false;
                Ok(())
            }
            Err(mut e) => {
                e.bytes_sent = bytes_sent;
                Err(e)
            }
        }
    }

    /// Reads the response to the oldest request in flight. `waiting` is measured from the
    /// end of that request's own write, so a pipelined request's latency includes the time
    /// its response queued behind earlier ones (what the client experiences). No deadline
    /// of its own.
    pub async fn read_response(
        &mut self,
        method_is_head: bool,
        mode: BodyMode,
    ) -> Result<Response, HttpError> {
        self.read_next(method_is_head, mode).await
    }

    /// Pipelining in one syscall: writes `batch.depth` copies of a request with a single
    /// write; each copy becomes its own in-flight request (read them with
    /// [`Connection::read_response`]). Each is charged its own bytes and the batch's write
    /// time as `sending`.
    pub async fn write_batch(&mut self, batch: &PipelineBatch) -> Result<(), HttpError> {
        self.check_usable()?;
        if self.closing {
            return Err(HttpError::new(
                ErrorClass::Other,
                "connection is closing (Connection: close was sent or received): open a new one",
            ));
        }
        self.broken = true;
        self.requests_sent += batch.depth as u64;
        let start = Instant::now();
        let werr = |e: io::Error| HttpError::io(&e, "writing pipelined requests");
        let mut result = self.io.write_all(&batch.wire).await.map_err(werr);
        if result.is_ok() {
            if let Io::Tls(_) = self.io {
                result = self.io.flush().await.map_err(werr);
            }
        }
        let write_end = Instant::now();
        let written = self.io.counted().tally.written;
        let total = written - self.sent_mark;
        self.sent_mark = written;
        match result {
            Ok(()) => {
                let each = total / batch.depth as u64;
                for i in 0..batch.depth {
                    // Any remainder (none for plain TCP) goes to the first request.
                    let extra = if i == 0 {
                        total - each * batch.depth as u64
                    } else {
                        0
                    };
                    self.in_flight.push_back(InFlight {
                        bytes_sent: each + extra,
                        sending: write_end - start,
                        write_end,
                    });
                }
                self.broken = false;
                Ok(())
            }
            Err(mut e) => {
                e.bytes_sent = total;
                Err(e)
            }
        }
    }

    pub(super) fn check_usable(&self) -> Result<(), HttpError> {
        if self.broken {
            return Err(HttpError::new(
                ErrorClass::Other,
                "connection is unusable after an earlier error: open a new one",
            ));
        }
        Ok(())
    }

    async fn write_parts(
        &mut self,
        req: &Request,
        file: Option<tokio::fs::File>,
    ) -> Result<(), HttpError> {
        let werr = |e: io::Error| HttpError::io(&e, "writing request");
        self.io.write_all(&req.wire).await.map_err(werr)?;
        match (&req.tail, file) {
            (Tail::Bytes(b), _) => self.io.write_all(b).await.map_err(werr)?,
            (Tail::File { path, len }, Some(mut file)) => {
                let mut chunk = vec![0u8; (*len).min(FILE_CHUNK as u64) as usize];
                let mut left = *len;
                while left > 0 {
                    let want = left.min(chunk.len() as u64) as usize;
                    let n = file.read(&mut chunk[..want]).await.map_err(|e| {
                        HttpError::new(
                            ErrorClass::Other,
                            format!("reading body file {}: {e}", path.display()),
                        )
                    })?;
                    if n == 0 {
                        return Err(HttpError::new(
                            ErrorClass::Other,
                            format!(
                                "body file {} ended {left} bytes before its declared length {len}",
                                path.display()
                            ),
                        ));
                    }
                    self.io.write_all(&chunk[..n]).await.map_err(werr)?;
                    left -= n as u64;
                }
            }
            _ => {}
        }
        // tokio-rustls writes records eagerly, but flushing makes sure none is left behind.
        if let Io::Tls(_) = self.io {
            self.io.flush().await.map_err(werr)?;
        }
        Ok(())
    }
}
