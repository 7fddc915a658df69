//! HTTP/1.1 over one connection: request serialisation, response reading, wire counting.
//!
//! Built for the load-generator hot path: a [`Request`] is serialised once and re-sent as
//! one `write_all`; responses are read into one reusable per-connection buffer and parsed
//! with httparse; in [`BodyMode::Discard`] a keep-alive request allocates nothing.
//! Unconsumed bytes stay in the buffer, which is what makes pipelining work.

use std::collections::VecDeque;
use std::io;
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::error::{ErrorClass, HttpError};
use crate::transport::{self, Io, Owned};
use crate::url::Target;

/// Read buffer per connection once reads fill it: enough for typical heads plus a good
/// slice of body. It starts at [`FIRST_READ_BUF`], allocated on the first read, and doubles
/// up to this size while reads fill it, so thousands of idle or small-response connections
/// (k6 scripts with thousands of VUs) cost a few KiB each, not 32.
const READ_BUF: usize = 32 * 1024;
/// The read buffer's size when a connection first reads.
const FIRST_READ_BUF: usize = 1024;
/// Largest response head (status line + headers, or trailers) we accept.
const MAX_HEAD: usize = 64 * 1024;
/// Longest chunk-size line (size plus extensions).
const MAX_CHUNK_LINE: usize = 16 * 1024;
/// In-memory bodies up to this size are glued to the head so a send is one write.
const INLINE_BODY_MAX: usize = 256 * 1024;
/// Read size when streaming a `Body::File` upload.
const FILE_CHUNK: usize = 128 * 1024;
/// Guard against a server that sends 1xx responses forever.
const MAX_INTERIM: usize = 32;
/// Compact the buffer when less than this much room is left at its end.
const MIN_READ_ROOM: usize = 4 * 1024;

const USER_AGENT: &str = concat!("volley/", env!("CARGO_PKG_VERSION"));

/// What a request carries after its head.
#[derive(Clone, Debug)]
pub enum Body {
    Empty,
    Bytes(Bytes),
    /// Streamed from disk in chunks at send time; `len` becomes the Content-Length.
    File {
        path: PathBuf,
        len: u64,
    },
}

/// The part of a body that is not already in `Request::wire`.
#[derive(Clone, Debug)]
enum Tail {
    None,
    Bytes(Bytes),
    File { path: PathBuf, len: u64 },
}

/// `depth` copies of one in-memory keep-alive request, serialised back to back once, so a
/// pipelined batch costs one write.
#[derive(Clone, Debug)]
pub struct PipelineBatch {
    wire: Bytes,
    depth: usize,
    is_head: bool,
}

impl PipelineBatch {
    pub fn new(req: &Request, depth: usize) -> Result<PipelineBatch, String> {
        if depth == 0 {
            return Err("pipeline depth must be at least 1".into());
        }
        if !matches!(req.tail, Tail::None) {
            return Err(
                "pipelining needs a request body of at most 256 KiB given inline (not a file)"
                    .into(),
            );
        }
        if !req.keep_alive {
            return Err("pipelining needs keep-alive connections".into());
        }
        let mut wire = Vec::with_capacity(req.wire.len() * depth);
        for _ in 0..depth {
            wire.extend_from_slice(&req.wire);
        }
        Ok(PipelineBatch {
            wire: wire.into(),
            depth,
            is_head: req.is_head,
        })
    }

    pub fn depth(&self) -> usize {
        self.depth
    }

    pub fn is_head(&self) -> bool {
        self.is_head
    }
}

/// A request serialised once, sent as many times as needed.
#[derive(Clone, Debug)]
pub struct Request {
    /// Request line + headers, plus the body when it is small enough to inline.
    wire: Bytes,
    head_len: usize,
    method_len: usize,
    tail: Tail,
    keep_alive: bool,
    is_head: bool,
}

impl Request {
    /// Serialises the request. Adds `Host` (from `target.authority`), `User-Agent` and
    /// `Accept` unless given, `Content-Length` when there is a body (or for an empty
    /// POST/PUT/PATCH), and `Connection: close` when `!keep_alive`. A user-supplied
    /// `Connection` header replaces ours; a user `Content-Length` must match the body.
    pub fn new(
        method: &str,
        target: &Target,
        headers: &[(String, String)],
        body: Body,
        keep_alive: bool,
    ) -> Result<Request, String> {
        if method.is_empty() || !method.bytes().all(is_tchar) {
            return Err(format!("invalid HTTP method '{}'", method.escape_debug()));
        }
        let body_len: Option<u64> = match &body {
            Body::Empty => matches!(method, "POST" | "PUT" | "PATCH").then_some(0),
            Body::Bytes(b) => Some(b.len() as u64),
            Body::File { len, .. } => Some(*len),
        };
        let (mut has_host, mut has_ua, mut has_accept, mut has_len, mut has_conn) =
            (false, false, false, false, false);
        let mut keep_alive = keep_alive;
        for (name, value) in headers {
            if name.is_empty() || !name.bytes().all(is_tchar) {
                return Err(format!("invalid header name '{}'", name.escape_debug()));
            }
            if value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
                return Err(format!(
                    "header '{name}' has a value with CR, LF or NUL: '{}'",
                    value.escape_debug()
                ));
            }
            let is = |n: &str| name.eq_ignore_ascii_case(n);
            if is("host") {
                has_host = true;
            } else if is("user-agent") {
                has_ua = true;
            } else if is("accept") {
                has_accept = true;
            } else if is("content-length") {
                let given = value.trim().parse::<u64>().ok();
                if given.is_none() || given != body_len.or(Some(0)) {
                    return Err(format!(
                        "header 'Content-Length: {value}' does not match the body length {}",
                        body_len.unwrap_or(0)
                    ));
                }
                has_len = true;
            } else if is("transfer-encoding") {
                return Err(
                    "a Transfer-Encoding header is not supported: the body is sent with Content-Length"
                        .into(),
                );
            } else if is("connection") {
                has_conn = true;
                if has_token(value.as_bytes(), b"close") {
                    keep_alive = false;
                }
            }
        }

        let mut head = Vec::with_capacity(256);
        head.extend_from_slice(method.as_bytes());
        head.push(b' ');
        head.extend_from_slice(target.path_and_query.as_bytes());
        head.extend_from_slice(b" HTTP/1.1\r\n");
        let mut line = |name: &str, value: &str| {
            head.extend_from_slice(name.as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(value.as_bytes());
            head.extend_from_slice(b"\r\n");
        };
        if !has_host {
            line("Host", &target.authority);
        }
        for (name, value) in headers {
            line(name, value);
        }
        if !has_ua {
            line("User-Agent", USER_AGENT);
        }
        if !has_accept {
            line("Accept", "*/*");
        }
        if let (Some(len), false) = (body_len, has_len) {
            line("Content-Length", &len.to_string());
        }
        if !keep_alive && !has_conn {
            line("Connection", "close");
        }
        head.extend_from_slice(b"\r\n");
        let head_len = head.len();

        let tail = match body {
            Body::Empty => Tail::None,
            Body::Bytes(b) if b.len() <= INLINE_BODY_MAX => {
                head.extend_from_slice(&b);
                Tail::None
            }
            Body::Bytes(b) => Tail::Bytes(b),
            Body::File { path, len } => Tail::File { path, len },
        };
        Ok(Request {
            wire: Bytes::from(head),
            head_len,
            method_len: method.len(),
            tail,
            keep_alive,
            is_head: method == "HEAD",
        })
    }

    pub fn method(&self) -> &str {
        // The method was validated as ASCII token characters.
        std::str::from_utf8(&self.wire[..self.method_len]).unwrap_or("")
    }

    /// Bytes of request line + headers (including the blank line).
    pub fn head_len(&self) -> usize {
        self.head_len
    }

    /// Whether the connection may be reused after this request.
    pub fn keep_alive(&self) -> bool {
        self.keep_alive
    }

    pub fn is_head(&self) -> bool {
        self.is_head
    }

    /// The pre-serialised bytes sent by the first write (head, plus inlined body).
    pub fn wire(&self) -> &Bytes {
        &self.wire
    }
}

/// RFC 9110 token characters (method and header names).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Whether a comma-separated header value contains `token` (case-insensitive).
fn has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// What to do with response bodies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyMode {
    /// Count the bytes only; nothing is allocated.
    Discard,
    /// Collect the (de-chunked) body into `Response::body`.
    Keep,
}

/// Time to open a connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnectTimings {
    pub connecting: Duration,
    pub tls_handshaking: Duration,
}

/// Per-request phases, with k6's meaning.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Timings {
    /// Writing the request.
    pub sending: Duration,
    /// End of the write to the first response byte (TTFB). For a pipelined request whose
    /// response bytes were already buffered this is zero.
    pub waiting: Duration,
    /// First to last response byte.
    pub receiving: Duration,
}

impl Timings {
    pub fn duration(&self) -> Duration {
        self.sending + self.waiting + self.receiving
    }
}

/// A complete response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub version_minor: u8,
    /// False if the server said `Connection: close`, answered HTTP/1.0 without
    /// keep-alive, or delimited the body by closing the connection.
    pub keep_alive: bool,
    pub timings: Timings,
    /// Wire bytes of this request (TLS: raw TCP bytes including record overhead). A
    /// connection's handshake bytes count towards its first request, and bytes read ahead
    /// while pipelining count towards the response during whose read they arrived, so
    /// the sums over a connection equal what crossed the socket.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Filled only when [`Connection::keep_headers`] is on.
    pub headers: crate::Headers,
    /// `Some` only for [`BodyMode::Keep`].
    pub body: Option<Vec<u8>>,
    /// Decoded body length.
    pub body_len: u64,
}

impl Response {
    /// First header named `name` (case-insensitive), if headers were kept.
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers.get(name)
    }
}

/// A request written but whose response has not been read yet.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    bytes_sent: u64,
    sending: Duration,
    write_end: Instant,
}

/// One HTTP/1.1 connection with its reusable read buffer.
pub struct Connection {
    io: Io<Owned>,
    /// `buf[start..end]` holds received bytes not yet consumed (possibly the next
    /// pipelined response).
    buf: Vec<u8>,
    start: usize,
    end: usize,
    in_flight: VecDeque<InFlight>,
    /// Socket counters at the last attribution point.
    sent_mark: u64,
    recv_mark: u64,
    keep_headers: bool,
    /// Set while an operation is under way and left set if it fails or is cancelled:
    /// the stream position is then unknown, so the connection must not be reused.
    broken: bool,
    /// The server or one of our requests asked to close after the current response.
    closing: bool,
    requests_sent: u64,
    responses_read: u64,
    /// Largest body [`BodyMode::Keep`] collects (see [`Connection::set_max_body`]).
    max_body: u64,
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
        let conn = Connection {
            io,
            buf: Vec::new(),
            start: 0,
            end: 0,
            in_flight: VecDeque::with_capacity(8),
            sent_mark: 0,
            recv_mark: 0,
            keep_headers: false,
            broken: false,
            closing: false,
            requests_sent: 0,
            responses_read: 0,
            max_body: u64::MAX,
        };
        Ok((conn, timings))
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

    fn check_usable(&self) -> Result<(), HttpError> {
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

    async fn read_next(&mut self, is_head: bool, mode: BodyMode) -> Result<Response, HttpError> {
        self.check_usable()?;
        let Some(req) = self.in_flight.pop_front() else {
            return Err(HttpError::new(
                ErrorClass::Other,
                "read_response() with no request in flight",
            ));
        };
        self.broken = true;
        // Waiting runs from the request's own write, also when pipelined behind others.
        let wait_from = req.write_end;
        let mut resp = Response {
            version_minor: 1,
            bytes_sent: req.bytes_sent,
            ..Response::default()
        };
        resp.timings.sending = req.sending;
        let result = self.read_into(is_head, mode, wait_from, &mut resp).await;
        let read = self.io.counted().tally.read;
        let bytes_received = read - self.recv_mark;
        self.recv_mark = read;
        match result {
            Ok(()) => {
                resp.bytes_received = bytes_received;
                self.responses_read += 1;
                self.closing |= !resp.keep_alive;
                self.broken = false;
                Ok(resp)
            }
            Err(mut e) => {
                e.bytes_sent = req.bytes_sent;
                e.bytes_received = bytes_received;
                self.in_flight.clear();
                Err(e)
            }
        }
    }

    async fn read_into(
        &mut self,
        is_head: bool,
        mode: BodyMode,
        wait_from: Instant,
        resp: &mut Response,
    ) -> Result<(), HttpError> {
        // Bytes already buffered (pipelining) arrived no later than we started waiting.
        let mut first_byte = (self.start < self.end).then_some(wait_from);
        let mut interim = 0;
        let head = loop {
            if self.start < self.end {
                let keep = self.keep_headers.then_some(&mut resp.headers);
                match parse_head(&self.buf[self.start..self.end], is_head, keep)? {
                    Some(head) if is_interim(head.status) => {
                        self.start += head.len;
                        resp.headers.clear();
                        interim += 1;
                        if interim > MAX_INTERIM {
                            return Err(protocol(format!(
                                "more than {MAX_INTERIM} interim (1xx) responses"
                            )));
                        }
                        continue;
                    }
                    Some(head) => {
                        self.start += head.len;
                        break head;
                    }
                    None if self.end - self.start >= MAX_HEAD => {
                        return Err(protocol(format!(
                            "response head larger than {} KiB",
                            MAX_HEAD / 1024
                        )));
                    }
                    None => {}
                }
            }
            // A head bigger than the buffer: fill() grows it, up to the head limit.
            if self.fill().await? == 0 {
                return Err(reset(if self.start < self.end {
                    "connection closed in the middle of the response head"
                } else if self.responses_read > 0 {
                    "server closed the keep-alive connection before responding"
                } else {
                    "server closed the connection without responding"
                }));
            }
            if first_byte.is_none() {
                first_byte = Some(Instant::now());
            }
        };
        resp.status = head.status;
        resp.version_minor = head.minor;
        resp.keep_alive = head.keep_alive;

        let mut sink = match mode {
            BodyMode::Discard => None,
            BodyMode::Keep => Some(Vec::with_capacity(match head.framing {
                // Cap the pre-allocation: the length is the server's claim.
                Framing::Length(n) => n.min(1 << 20) as usize,
                _ => 0,
            })),
        };
        match head.framing {
            Framing::Empty => {}
            Framing::Length(n) if sink.is_some() && n > self.max_body => {
                return Err(HttpError::body_too_large(self.max_body));
            }
            Framing::Length(n) => {
                let got = self.read_sized(n, &mut sink).await?;
                resp.body_len = got;
                if got < n {
                    return Err(reset(format!(
                        "connection closed after {got} of {n} body bytes"
                    )));
                }
            }
            Framing::Chunked => self.read_chunked(&mut sink, &mut resp.body_len).await?,
            Framing::Eof => loop {
                resp.body_len += self.take(u64::MAX, &mut sink);
                self.check_body(&sink)?;
                if self.fill().await? == 0 {
                    break;
                }
            },
        }
        let last_byte = Instant::now();
        let first_byte = first_byte.unwrap_or(last_byte);
        resp.timings.waiting = first_byte.saturating_duration_since(wait_from);
        resp.timings.receiving = last_byte.saturating_duration_since(first_byte);
        resp.body = sink;
        Ok(())
    }

    /// Reads more bytes into the buffer; `Ok(0)` means the peer closed.
    async fn fill(&mut self) -> Result<usize, HttpError> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 && self.buf.len() - self.end < MIN_READ_ROOM {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            // First read, or the buffered bytes fill it: grow (callers bound what they
            // buffer below MAX_HEAD; the error is a bug guard).
            let limit = READ_BUF.max(MAX_HEAD);
            if self.buf.len() >= limit {
                return Err(HttpError::new(ErrorClass::Other, "read buffer full"));
            }
            let want = (self.buf.len() * 2).clamp(FIRST_READ_BUF, limit);
            self.buf.resize(want, 0);
        }
        let room = self.buf.len() - self.end;
        match self.io.read(&mut self.buf[self.end..]).await {
            Ok(n) => {
                self.end += n;
                if n == room && self.buf.len() < READ_BUF {
                    // Reads fill the buffer: bodies are bigger than it, take more per read.
                    self.buf.resize((self.buf.len() * 2).min(READ_BUF), 0);
                }
                Ok(n)
            }
            // A TLS peer closing without close_notify: treat as EOF and let the framing
            // decide whether the response was complete.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
            Err(e) => Err(HttpError::io(&e, "reading response")),
        }
    }

    /// Consumes up to `max` buffered bytes into `sink`.
    fn take(&mut self, max: u64, sink: &mut Option<Vec<u8>>) -> u64 {
        let n = ((self.end - self.start) as u64).min(max) as usize;
        if let Some(v) = sink {
            v.extend_from_slice(&self.buf[self.start..self.start + n]);
        }
        self.start += n;
        n as u64
    }

    /// A kept body past [`Connection::set_max_body`] ends the read (it overshoots by at
    /// most one buffer, [`MAX_HEAD`]).
    fn check_body(&self, sink: &Option<Vec<u8>>) -> Result<(), HttpError> {
        match sink {
            Some(v) if v.len() as u64 > self.max_body => {
                Err(HttpError::body_too_large(self.max_body))
            }
            _ => Ok(()),
        }
    }

    /// Consumes `n` body bytes, reading as needed; returns fewer only on EOF.
    async fn read_sized(&mut self, n: u64, sink: &mut Option<Vec<u8>>) -> Result<u64, HttpError> {
        let mut got = 0;
        loop {
            got += self.take(n - got, sink);
            self.check_body(sink)?;
            if got == n || self.fill().await? == 0 {
                return Ok(got);
            }
        }
    }

    /// Length of the next line in the buffer (up to, not including, `\n`), reading more
    /// as needed.
    async fn next_line(&mut self, limit: usize) -> Result<usize, HttpError> {
        let mut scanned = 0;
        loop {
            let avail = &self.buf[self.start + scanned..self.end];
            if let Some(i) = avail.iter().position(|&b| b == b'\n') {
                return Ok(scanned + i);
            }
            scanned = self.end - self.start;
            if scanned >= limit {
                return Err(protocol(format!(
                    "line in chunked body longer than {limit} bytes"
                )));
            }
            if self.fill().await? == 0 {
                return Err(reset("connection closed in the middle of a chunked body"));
            }
        }
    }

    async fn read_chunked(
        &mut self,
        sink: &mut Option<Vec<u8>>,
        body_len: &mut u64,
    ) -> Result<(), HttpError> {
        loop {
            let n = self.next_line(MAX_CHUNK_LINE).await?;
            let size = parse_chunk_size(&self.buf[self.start..self.start + n])?;
            self.start += n + 1;
            if size == 0 {
                break;
            }
            let got = self.read_sized(size, sink).await?;
            *body_len += got;
            if got < size {
                return Err(reset("connection closed in the middle of a chunk"));
            }
            let n = self.next_line(MAX_CHUNK_LINE).await?;
            if !is_blank(&self.buf[self.start..self.start + n]) {
                return Err(protocol("missing CRLF after chunk data"));
            }
            self.start += n + 1;
        }
        // Trailer fields, up to the blank line; skipped.
        let mut trailers = 0;
        loop {
            let n = self.next_line(MAX_HEAD).await?;
            let blank = is_blank(&self.buf[self.start..self.start + n]);
            self.start += n + 1;
            if blank {
                return Ok(());
            }
            trailers += n + 1;
            if trailers > MAX_HEAD {
                return Err(protocol(format!(
                    "chunked trailers larger than {} KiB",
                    MAX_HEAD / 1024
                )));
            }
        }
    }
}

fn protocol(message: impl Into<String>) -> HttpError {
    HttpError::new(ErrorClass::Protocol, message)
}

fn reset(message: impl Into<String>) -> HttpError {
    HttpError::new(ErrorClass::Reset, message)
}

fn is_interim(status: u16) -> bool {
    // 101 Switching Protocols is final: the connection then speaks something else.
    (100..200).contains(&status) && status != 101
}

/// An empty line, with or without its `\r`.
fn is_blank(line: &[u8]) -> bool {
    line.is_empty() || line == b"\r"
}

/// Parses a chunk-size line (without its `\n`): hex digits, optional whitespace, then
/// optional `;extensions`.
fn parse_chunk_size(line: &[u8]) -> Result<u64, HttpError> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let rest = line[digits..].trim_ascii_start();
    if digits == 0 || digits > 16 || !(rest.is_empty() || rest[0] == b';') {
        return Err(protocol(format!(
            "bad chunk size line '{}'",
            String::from_utf8_lossy(&line[..line.len().min(64)])
        )));
    }
    let mut size = 0u64;
    for &b in &line[..digits] {
        // At most 16 hex digits, so this cannot overflow.
        size = (size << 4) | u64::from((b as char).to_digit(16).unwrap_or(0));
    }
    Ok(size)
}

/// How the response body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    Empty,
    Length(u64),
    Chunked,
    Eof,
}

#[derive(Debug)]
struct Head {
    len: usize,
    status: u16,
    minor: u8,
    framing: Framing,
    keep_alive: bool,
}

/// Parses a response head at the start of `buf`; `Ok(None)` if it is incomplete.
/// Synchronous so the header array lives on the stack, not in the connection's future.
fn parse_head(
    buf: &[u8],
    is_head: bool,
    keep: Option<&mut crate::Headers>,
) -> Result<Option<Head>, HttpError> {
    let mut config = httparse::ParserConfig::default();
    config
        .allow_spaces_after_header_name_in_responses(true)
        .allow_obsolete_multiline_headers_in_responses(true);
    let mut slots = [MaybeUninit::<httparse::Header<'_>>::uninit(); 96];
    let mut resp = httparse::Response::new(&mut []);
    match config.parse_response_with_uninit_headers(&mut resp, buf, &mut slots) {
        Ok(httparse::Status::Complete(len)) => interpret(&resp, len, is_head, keep).map(Some),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            // Rare: size the slots from the bytes (a header line takes at least 3 bytes).
            let mut slots = vec![MaybeUninit::<httparse::Header<'_>>::uninit(); buf.len() / 3 + 1];
            let mut resp = httparse::Response::new(&mut []);
            match config.parse_response_with_uninit_headers(&mut resp, buf, &mut slots) {
                Ok(httparse::Status::Complete(len)) => {
                    interpret(&resp, len, is_head, keep).map(Some)
                }
                Ok(httparse::Status::Partial) => Ok(None),
                Err(e) => Err(bad_head(e, buf)),
            }
        }
        Err(e) => Err(bad_head(e, buf)),
    }
}

fn bad_head(e: httparse::Error, buf: &[u8]) -> HttpError {
    let shown = &buf[..buf.len().min(40)];
    protocol(format!(
        "invalid response head ({e}), starting with '{}'",
        String::from_utf8_lossy(shown).escape_debug()
    ))
}

fn interpret(
    resp: &httparse::Response<'_, '_>,
    len: usize,
    is_head: bool,
    mut keep: Option<&mut crate::Headers>,
) -> Result<Head, HttpError> {
    let status = resp.code.unwrap_or(0);
    // httparse takes any three digits; below 100 is not a status (hyper rejects it too), and
    // reading it as a body-less 1xx would desynchronise a keep-alive connection.
    if status < 100 {
        return Err(protocol(format!(
            "invalid status code {status:03} (expected 100 to 999)"
        )));
    }
    let minor = resp.version.unwrap_or(1);
    let mut content_length: Option<u64> = None;
    let (mut te, mut chunked, mut close, mut keep_alive_token) = (false, false, false, false);
    if let Some(keep) = keep.as_deref_mut() {
        // Sized once: the head's bytes hold every name and value.
        *keep = crate::Headers::with_capacity(resp.headers.len(), len);
    }
    for h in resp.headers.iter() {
        let name = h.name;
        if name.eq_ignore_ascii_case("content-length") {
            // "5, 5" (a merged duplicate) is allowed; differing values are not.
            for v in h.value.split(|&b| b == b',') {
                let n = parse_decimal(v.trim_ascii()).ok_or_else(|| {
                    protocol(format!(
                        "bad Content-Length '{}'",
                        String::from_utf8_lossy(h.value)
                    ))
                })?;
                if content_length.is_some_and(|c| c != n) {
                    return Err(protocol("conflicting Content-Length values"));
                }
                content_length = Some(n);
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            te = true;
            // Only a final "chunked" coding delimits the body; anything else reads to EOF.
            let last = h.value.rsplit(|&b| b == b',').next().unwrap_or(b"");
            chunked = last.trim_ascii().eq_ignore_ascii_case(b"chunked");
        } else if name.eq_ignore_ascii_case("connection") {
            close |= has_token(h.value, b"close");
            keep_alive_token |= has_token(h.value, b"keep-alive");
        }
        if let Some(keep) = keep.as_deref_mut() {
            keep.push(name, h.value);
        }
    }
    let framing = if is_head || status < 200 || status == 204 || status == 304 {
        Framing::Empty
    } else if te {
        if chunked {
            Framing::Chunked
        } else {
            Framing::Eof
        }
    } else if let Some(n) = content_length {
        Framing::Length(n)
    } else {
        Framing::Eof
    };
    let keep_alive = if minor >= 1 {
        !close
    } else {
        keep_alive_token && !close
    } && framing != Framing::Eof
        && status != 101;
    Ok(Head {
        len,
        status,
        minor,
        framing,
        keep_alive,
    })
}

fn parse_decimal(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0')))
}

#[cfg(test)]
mod tests;
