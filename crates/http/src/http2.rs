//! HTTP/2 over one connection: many concurrent requests share one TCP (or TLS) stream.
//!
//! Framing, HPACK and flow control come from the `h2` crate; this module adds what a load
//! generator needs on top: connecting (h2c with prior knowledge for `http://`, ALPN `h2`
//! for `https://`), per-request [`Timings`], classified errors and wire byte counts.
//! (The module is `http2`, not `h2`, so it does not shadow the `h2` crate.)
//!
//! - [`H2Request`] is validated and built once; each send clones its method, URI and
//!   header map into the owned `http::Request` that `h2` needs.
//! - [`H2Connection::connect`] returns a cheap, cloneable handle plus an [`H2Driver`]
//!   future that does the connection's I/O: the caller must spawn it (`spawn_local` or
//!   `spawn`; it is `Send`) and keep it running, or requests never complete.
//! - [`H2Connection::send`] opens one stream, sends the request, reads the whole response
//!   and gives flow-control capacity back as data arrives. A timed-out request resets its
//!   own stream only; the connection stays usable.
//!
//! The [`Response`] is HTTP/1.1's: `version_minor` is 0 (the field describes HTTP/1.x),
//! `keep_alive` says whether the connection can still start requests, and `headers` are
//! filled only after [`H2Connection::keep_headers`].
//!
//! # Bytes
//!
//! Under multiplexing the bytes on the wire cannot be split exactly between requests, so
//! [`Response::bytes_sent`] / [`Response::bytes_received`] (and the same fields of an
//! [`HttpError`]) are estimates of the request's own frames: 9 bytes per frame header, the
//! uncompressed header list (name + value lengths; HPACK usually sends less), and DATA
//! payloads. Exact totals, including TLS, HPACK savings, SETTINGS, WINDOW_UPDATE and PING
//! frames, come from [`H2Connection::wire_bytes`]: use its deltas for data counters.

use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::{Connection as H2Conn, SendRequest};
use h2::{Reason, RecvStream, SendStream};
use http::header::{HeaderName, HeaderValue, CONTENT_LENGTH};
use http::uri::Authority;
use http::{HeaderMap, Method, Uri, Version};
use tokio::sync::Notify;

use crate::error::{ErrorClass, HttpError};
use crate::message::{Body, BodyMode, ConnectTimings, Response, Timings};
use crate::transport::{self, Io, Owned, WireCounters};
use crate::url::Target;

mod handshake;
use handshake::handshake;

/// Per-stream receive window: large so one fast stream is not window-bound on a LAN.
const STREAM_WINDOW: u32 = 1 << 20;
/// Connection receive window, shared by all streams.
const CONNECTION_WINDOW: u32 = 4 << 20;
/// Streams we assume allowed until the server's SETTINGS arrive (RFC 9113 §6.5.2 advises
/// at least 100; h2's default of "unlimited" could overrun a stricter server).
const INITIAL_MAX_STREAMS: usize = 100;
/// Every HTTP/2 frame starts with a 9-byte header.
const FRAME_HEADER: u64 = 9;
/// Default SETTINGS_MAX_FRAME_SIZE; our DATA frames are estimated at this size.
const MAX_FRAME: u64 = 16_384;
/// Keep-mode body pre-allocation cap: Content-Length is only the server's claim.
const MAX_PREALLOC: u64 = 1 << 20;

const USER_AGENT: &str = concat!("volley/", env!("CARGO_PKG_VERSION"));

/// A request validated and built once, sent as many times as needed.
#[derive(Clone, Debug)]
pub struct H2Request {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
    /// Estimated frame bytes of the HEADERS frame (see the module docs).
    head_estimate: u64,
}

impl H2Request {
    /// Builds the request for `target` (full URI, so `:scheme`, `:authority` and `:path`
    /// are set). Header names are lowercased. Adds `user-agent` and `accept` unless given,
    /// and `content-length` when there is a body (or for an empty POST/PUT/PATCH). A `Host`
    /// header replaces the URI authority. Connection-specific headers (`connection`,
    /// `keep-alive`, `proxy-connection`, `upgrade`, and `te` other than `trailers`) are
    /// dropped, as HTTP/2 forbids them; `transfer-encoding` is an error, as in HTTP/1.1.
    /// [`Body::File`] is not supported yet.
    pub fn new(
        method: &str,
        target: &Target,
        headers: &[(String, String)],
        body: Body,
    ) -> Result<H2Request, String> {
        let method = Method::from_bytes(method.as_bytes())
            .map_err(|_| format!("invalid HTTP method '{}'", method.escape_debug()))?;
        let body = match body {
            Body::Empty => Bytes::new(),
            Body::Bytes(b) => b,
            Body::File { path, .. } => {
                return Err(format!(
                    "a file body ({}) is not supported over HTTP/2 yet: use HTTP/1.1 or an \
                     in-memory body",
                    path.display()
                ))
            }
        };
        let body_len = if body.is_empty() {
            matches!(method, Method::POST | Method::PUT | Method::PATCH).then_some(0)
        } else {
            Some(body.len() as u64)
        };

        let mut authority = target.authority.clone();
        let mut map = HeaderMap::with_capacity(headers.len() + 3);
        for (name, raw) in headers {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("invalid header name '{}'", name.escape_debug()))?;
            // from_bytes, not from_str: non-ASCII (obs-text) values are legal on the wire.
            let value = HeaderValue::from_bytes(raw.as_bytes()).map_err(|_| {
                format!(
                    "header '{name}' has a value with control characters: '{}'",
                    raw.escape_debug()
                )
            })?;
            match header.as_str() {
                "host" => {
                    // HTTP/2 carries the host in :authority.
                    raw.parse::<Authority>()
                        .map_err(|_| format!("invalid Host header '{}'", raw.escape_debug()))?;
                    authority = raw.clone();
                    continue;
                }
                "connection" | "keep-alive" | "proxy-connection" | "upgrade" => continue,
                "te" if value != "trailers" => continue,
                "transfer-encoding" => {
                    return Err("a Transfer-Encoding header is not supported: the body is \
                                sent with Content-Length"
                        .into())
                }
                "content-length" => {
                    let given = raw.trim().parse::<u64>().ok();
                    if given.is_none() || given != body_len.or(Some(0)) {
                        return Err(format!(
                            "header 'Content-Length: {raw}' does not match the body length {}",
                            body_len.unwrap_or(0)
                        ));
                    }
                    // Checked; our own (canonical) value is added below.
                    continue;
                }
                _ => {}
            }
            map.append(header, value);
        }
        if !map.contains_key(http::header::USER_AGENT) {
            map.insert(
                http::header::USER_AGENT,
                HeaderValue::from_static(USER_AGENT),
            );
        }
        if !map.contains_key(http::header::ACCEPT) {
            map.insert(http::header::ACCEPT, HeaderValue::from_static("*/*"));
        }
        if let Some(len) = body_len {
            map.insert(CONTENT_LENGTH, HeaderValue::from(len));
        }

        let uri = Uri::builder()
            .scheme(target.scheme.as_str())
            .authority(authority.as_str())
            .path_and_query(target.path_and_query.as_str())
            .build()
            .map_err(|e| format!("cannot build the HTTP/2 request URI: {e}"))?;
        let pseudo = [
            (":method", method.as_str()),
            (":scheme", target.scheme.as_str()),
            (":authority", authority.as_str()),
            (":path", target.path_and_query.as_str()),
        ];
        let head_estimate = FRAME_HEADER
            + pseudo
                .iter()
                .map(|(n, v)| (n.len() + v.len()) as u64)
                .sum::<u64>()
            + header_list_size(&map);
        Ok(H2Request {
            method,
            uri,
            headers: map,
            body,
            head_estimate,
        })
    }

    pub fn method(&self) -> &str {
        self.method.as_str()
    }

    pub fn uri(&self) -> &Uri {
        &self.uri
    }

    pub fn body_len(&self) -> u64 {
        self.body.len() as u64
    }

    /// The owned request `h2` consumes; version 2 so the URI authority becomes `:authority`.
    fn build(&self) -> http::Request<()> {
        let mut r = http::Request::new(());
        *r.method_mut() = self.method.clone();
        *r.uri_mut() = self.uri.clone();
        *r.version_mut() = Version::HTTP_2;
        *r.headers_mut() = self.headers.clone();
        r
    }
}

/// Uncompressed header list size (name + value bytes), the base of our byte estimates.
fn header_list_size(map: &HeaderMap) -> u64 {
    map.iter()
        .map(|(n, v)| (n.as_str().len() + v.len()) as u64)
        .sum()
}

/// Frame bytes of `n` DATA payload bytes at the default frame size.
fn data_estimate(n: u64) -> u64 {
    n + n.div_ceil(MAX_FRAME) * FRAME_HEADER
}

/// State shared by all handles of a connection and its driver.
#[derive(Debug)]
struct Shared {
    wire: Arc<WireCounters>,
    /// Streams opened through our handles and not finished yet.
    active: AtomicUsize,
    /// Signalled when a stream finishes or the connection ends.
    freed: Notify,
    /// The driver has finished (or was dropped): no more requests can complete.
    closed: AtomicBool,
    tls: bool,
}

/// A handle to one HTTP/2 connection. Clones share the connection and can send
/// concurrently from many tasks; the connection closes once every handle is dropped and
/// its streams are done (the [`H2Driver`] then completes).
#[derive(Clone, Debug)]
pub struct H2Connection {
    send: SendRequest<Bytes>,
    shared: Arc<Shared>,
    keep_headers: bool,
    /// Largest body kept in [`BodyMode::Keep`] (see [`H2Connection::set_max_body`]).
    max_body: u64,
}

/// Reads a connection's raw byte counters (see [`H2Connection::wire_meter`]).
#[derive(Clone)]
pub struct WireMeter(Arc<Shared>);

impl WireMeter {
    /// (sent, received) raw socket bytes so far.
    pub fn get(&self) -> (u64, u64) {
        self.0.wire.get()
    }
}

/// Drives one connection's I/O (frames in and out, flow control, pings). Spawn it with
/// `tokio::task::spawn_local` or `tokio::spawn` right after connecting. Completes when the
/// connection is closed; connection errors are reported through the requests instead.
#[must_use = "the connection does nothing unless its driver is spawned"]
pub struct H2Driver {
    conn: H2Conn<Io<Arc<WireCounters>>, Bytes>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for H2Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2Driver").finish_non_exhaustive()
    }
}

impl Future for H2Driver {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // Errors also fail every open stream, which is where they get reported.
        let _ = ready!(Pin::new(&mut self.conn).poll(cx));
        self.shared.close();
        Poll::Ready(())
    }
}

impl Drop for H2Driver {
    fn drop(&mut self) {
        // Dropped unfinished (task aborted, runtime shut down): nothing will complete now.
        self.shared.close();
    }
}

impl Shared {
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        // Wake everyone waiting for a stream slot so they see the closed connection.
        self.freed.notify_waiters();
    }
}

/// A claimed stream slot, given back when the exchange ends (however it ends).
struct Slot<'a>(&'a Shared);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::AcqRel);
        self.0.freed.notify_one();
    }
}

/// Estimated frame bytes moved for one request so far; survives a timeout.
#[derive(Default)]
struct Progress {
    sent: u64,
    received: u64,
}

impl H2Connection {
    /// Opens TCP (+ TLS for https, which must negotiate `h2` via ALPN: build the config with
    /// `tls_config(opts, &[b"h2"])`) or h2c with prior knowledge for http, then sends the
    /// connection preface and SETTINGS (1 MiB stream / 4 MiB connection receive windows,
    /// push disabled) and waits for a PING round trip, so the server's SETTINGS are in
    /// effect before the first request. `connect_timeout` bounds all of it; the h2 part is
    /// in neither [`ConnectTimings`] field. Spawn the returned driver.
    pub async fn connect(
        addr: SocketAddr,
        target: &Target,
        tls: Option<&Arc<rustls::ClientConfig>>,
        connect_timeout: Duration,
    ) -> Result<(H2Connection, ConnectTimings, H2Driver), HttpError> {
        let deadline = tokio::time::Instant::now() + connect_timeout;
        let wire = Arc::new(WireCounters::default());
        let (io, timings) =
            transport::open(addr, target, tls, connect_timeout, Arc::clone(&wire)).await?;
        let is_tls = io.is_tls();
        if is_tls && io.alpn_protocol() != Some(b"h2".as_slice()) {
            let chosen = match io.alpn_protocol() {
                Some(p) => format!("it chose '{}'", String::from_utf8_lossy(p)),
                None => "it chose none".to_owned(),
            };
            let mut e = HttpError::new(
                ErrorClass::Protocol,
                format!(
                    "server did not negotiate h2 via ALPN ({chosen}); HTTP/2 over TLS needs a \
                     server that supports it and a TLS config offering \"h2\""
                ),
            );
            (e.bytes_sent, e.bytes_received) = wire.get();
            return Err(e);
        }
        let (conn, driver) = handshake(io, is_tls, wire, addr, deadline, connect_timeout).await?;
        let driver = H2Driver {
            conn: driver,
            shared: Arc::clone(&conn.shared),
        };
        Ok((conn, timings, driver))
    }

    /// HTTP/2 on a TLS stream that already negotiated `h2` (script mode's client, which
    /// offers `h2` and `http/1.1` and learns which one the server chose). The returned
    /// driver future must be spawned; this connection's [`H2Connection::wire_bytes`] stay 0
    /// (its bytes are counted by the stream's own tally, out of reach here).
    pub(crate) async fn on_stream(
        io: Io<Owned>,
        addr: SocketAddr,
        connect_timeout: Duration,
    ) -> Result<(H2Connection, impl Future<Output = ()> + Send + 'static), HttpError> {
        let deadline = tokio::time::Instant::now() + connect_timeout;
        let wire = Arc::new(WireCounters::default());
        let (conn, mut driver) = handshake(io, true, wire, addr, deadline, connect_timeout).await?;
        let shared = Arc::clone(&conn.shared);
        let drive = async move {
            let _ = poll_fn(|cx| Pin::new(&mut driver).poll(cx)).await;
            shared.close();
        };
        Ok((conn, drive))
    }

    /// Cap on a body kept in [`BodyMode::Keep`]: past it the request fails with
    /// [`HttpError::body_too_large`] (no cap by default).
    pub fn set_max_body(&mut self, limit: u64) {
        self.max_body = limit;
    }

    /// Copy response headers into `Response::headers` for requests sent through this
    /// handle and clones made from it afterwards (costs allocations; off by default).
    pub fn keep_headers(&mut self, on: bool) {
        self.keep_headers = on;
    }

    pub fn is_tls(&self) -> bool {
        self.shared.tls
    }

    /// Whether the connection can no longer start requests: its driver ended, or the
    /// server sent GOAWAY, or it failed. Open a new connection then.
    pub fn is_closed(&self) -> bool {
        if self.shared.closed.load(Ordering::Acquire) {
            return true;
        }
        // h2 records GOAWAY and connection errors where poll_ready reports them; a fresh
        // clone has no pending stream, so this never waits or registers interest.
        let mut probe = self.send.clone();
        let mut cx = Context::from_waker(Waker::noop());
        matches!(probe.poll_ready(&mut cx), Poll::Ready(Err(_)))
    }

    /// Streams currently open through this connection's handles.
    pub fn active_streams(&self) -> usize {
        self.shared.active.load(Ordering::Acquire)
    }

    /// The server's current limit on concurrent streams (`usize::MAX` if it set none).
    pub fn max_streams(&self) -> usize {
        self.send.current_max_send_streams()
    }

    /// The raw `h2` handle, for protocols on HTTP/2 whose streams the request/response API
    /// does not model (gRPC's streams and trailers). Its streams are not counted by
    /// [`H2Connection::active_streams`]; h2 itself waits for MAX_CONCURRENT_STREAMS.
    pub fn h2_sender(&self) -> SendRequest<Bytes> {
        self.send.clone()
    }

    /// Raw bytes (sent, received) on the socket since it was opened, TLS included.
    pub fn wire_bytes(&self) -> (u64, u64) {
        self.shared.wire.get()
    }

    /// A handle on the byte counters that does not keep the connection open, so the bytes
    /// of the closing exchange (GOAWAY) can be read after the driver has finished.
    pub fn wire_meter(&self) -> WireMeter {
        WireMeter(self.shared.clone())
    }

    /// Waits until a new stream may be opened without exceeding the server's
    /// MAX_CONCURRENT_STREAMS (counting streams of all handles). Advisory: another task
    /// may take the slot first, in which case [`H2Connection::send`] waits again.
    pub async fn ready(&self) -> Result<(), HttpError> {
        loop {
            let mut freed = pin!(self.shared.freed.notified());
            freed.as_mut().enable();
            if self.is_closed() {
                return Err(closed_error());
            }
            if self.shared.active.load(Ordering::Acquire) < self.max_streams() {
                return Ok(());
            }
            freed.await;
        }
    }

    /// Waits for a free stream slot and takes it; `None` once the connection is closed.
    async fn claim(&self) -> Option<Slot<'_>> {
        let shared = &*self.shared;
        loop {
            // Registered before checking, so a slot freed in between still wakes us.
            let mut freed = pin!(shared.freed.notified());
            freed.as_mut().enable();
            if shared.closed.load(Ordering::Acquire) {
                return None;
            }
            let active = shared.active.load(Ordering::Acquire);
            if active >= self.max_streams() {
                freed.await;
                continue;
            }
            if shared
                .active
                .compare_exchange(active, active + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Some(Slot(shared));
            }
        }
    }

    /// Sends `req` on a new stream and reads the whole response, all within `timeout`
    /// (which includes waiting for a stream slot; [`Timings`] do not). `sending` ends when
    /// the last body byte was handed to h2 (flow control permitting) or at the response
    /// headers if they come first (the body then keeps flowing while the response is
    /// read), `waiting` at the response headers, `receiving` at the end of the stream.
    /// On timeout only this stream is reset; the connection stays usable.
    pub async fn send(
        &self,
        req: &H2Request,
        mode: BodyMode,
        timeout: Duration,
    ) -> Result<Response, HttpError> {
        let mut progress = Progress::default();
        let exchange = self.exchange(req, mode, &mut progress);
        let result = tokio::time::timeout(timeout, exchange).await;
        let mut err = match result {
            Ok(Ok(resp)) => return Ok(resp),
            Ok(Err(e)) => e,
            Err(_) => HttpError::new(
                ErrorClass::Timeout,
                format!("no complete response within {timeout:?}"),
            ),
        };
        err.bytes_sent = progress.sent;
        err.bytes_received = progress.received;
        Err(err)
    }

    async fn exchange(
        &self,
        req: &H2Request,
        mode: BodyMode,
        progress: &mut Progress,
    ) -> Result<Response, HttpError> {
        let Some(_slot) = self.claim().await else {
            return Err(closed_error());
        };
        let start = Instant::now();
        let mut send = self.send.clone();
        let has_body = !req.body.is_empty();
        let (mut head_fut, stream) = send
            .send_request(req.build(), !has_body)
            .map_err(|e| classify(e, "sending request"))?;
        // Headers are queued for the driver now; without a body, that is the whole request.
        let mut sent_at = (!has_body).then(Instant::now);
        progress.sent = req.head_estimate;
        let mut body = has_body.then(|| BodySender {
            stream,
            rest: req.body.clone(),
        });

        // Response headers, while pushing the body out as flow control allows.
        let head = poll_fn(|cx| {
            if let Poll::Ready(r) = Pin::new(&mut head_fut).poll(cx) {
                return Poll::Ready(r.map_err(|e| classify(e, "reading response headers")));
            }
            if let Some(b) = body.as_mut() {
                match b.poll_send(cx, &mut progress.sent) {
                    Poll::Ready(Ok(())) => {
                        body = None;
                        sent_at = Some(Instant::now());
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => {}
                }
            }
            Poll::Pending
        })
        .await?;
        let head_at = Instant::now();
        let sent_at = sent_at.unwrap_or(head_at);

        let (parts, mut recv) = head.into_parts();
        let mut resp = Response {
            status: parts.status.as_u16(),
            version_minor: 0,
            ..Response::default()
        };
        progress.received = FRAME_HEADER + 10 + header_list_size(&parts.headers);
        if self.keep_headers {
            let bytes = parts
                .headers
                .iter()
                .map(|(n, v)| n.as_str().len() + v.len())
                .sum();
            resp.headers = crate::Headers::with_capacity(parts.headers.len(), bytes);
            for (n, v) in parts.headers.iter() {
                resp.headers.push(n.as_str(), v.as_bytes());
            }
        }
        let mut sink = match mode {
            BodyMode::Discard => None,
            BodyMode::Keep => {
                let claimed = parts
                    .headers
                    .get(CONTENT_LENGTH)
                    .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                    .unwrap_or(0);
                Some(Vec::with_capacity(claimed.min(MAX_PREALLOC) as usize))
            }
        };
        read_body(
            &mut recv,
            &mut body,
            &mut sink,
            &mut resp.body_len,
            progress,
            self.max_body,
        )
        .await?;
        let end = Instant::now();

        resp.timings = Timings {
            sending: sent_at - start,
            waiting: head_at - sent_at,
            receiving: end - head_at,
        };
        resp.keep_alive = !self.is_closed();
        resp.bytes_sent = progress.sent;
        resp.bytes_received = progress.received;
        resp.body = sink;
        Ok(resp)
    }
}

/// Drives a new connection until a PING comes back. The server sends its SETTINGS before
/// anything else, so afterwards its MAX_CONCURRENT_STREAMS is known (the first burst of
/// requests respects it) and a server that does not speak HTTP/2 has already failed here.
async fn settle<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    conn: &mut H2Conn<S, Bytes>,
    addr: SocketAddr,
) -> Result<(), HttpError> {
    let mut pings = conn
        .ping_pong()
        .ok_or_else(|| HttpError::new(ErrorClass::Other, "h2 ping handle already taken"))?;
    pings
        .send_ping(h2::Ping::opaque())
        .map_err(|e| handshake_error(e, addr))?;
    poll_fn(|cx| {
        match Pin::new(&mut *conn).poll(cx) {
            Poll::Ready(Ok(())) => {
                return Poll::Ready(Err(HttpError::new(
                    ErrorClass::Reset,
                    format!("{addr} closed the connection during the HTTP/2 handshake"),
                )))
            }
            Poll::Ready(Err(e)) => return Poll::Ready(Err(handshake_error(e, addr))),
            Poll::Pending => {}
        }
        pings
            .poll_pong(cx)
            .map(|r| r.map(drop).map_err(|e| handshake_error(e, addr)))
    })
    .await
}

fn handshake_error(e: h2::Error, addr: SocketAddr) -> HttpError {
    let mut err = classify(e, &format!("HTTP/2 handshake with {addr}"));
    if err.class == ErrorClass::Protocol {
        err.message.push_str(
            " (does the server speak HTTP/2? http:// targets use h2c with prior knowledge)",
        );
    }
    err
}

/// Reads DATA frames to the end of the stream, returning their capacity to the window as
/// they are consumed, then any trailers (ignored). A body still being sent keeps flowing
/// (a server may stream its response while reading the request); its failure no longer
/// matters once the response is under way.
async fn read_body(
    recv: &mut RecvStream,
    body: &mut Option<BodySender>,
    sink: &mut Option<Vec<u8>>,
    body_len: &mut u64,
    progress: &mut Progress,
    max_body: u64,
) -> Result<(), HttpError> {
    loop {
        let next = poll_fn(|cx| {
            if let Some(b) = body.as_mut() {
                if b.poll_send(cx, &mut progress.sent).is_ready() {
                    *body = None;
                }
            }
            recv.poll_data(cx)
        })
        .await;
        let Some(chunk) = next else { break };
        let chunk = chunk.map_err(|e| classify(e, "reading response body"))?;
        let n = chunk.len();
        *body_len += n as u64;
        progress.received += FRAME_HEADER + n as u64;
        if let Some(v) = sink {
            v.extend_from_slice(&chunk);
            if v.len() as u64 > max_body {
                return Err(HttpError::body_too_large(max_body));
            }
        }
        recv.flow_control()
            .release_capacity(n)
            .map_err(|e| classify(e, "releasing flow-control capacity"))?;
    }
    if let Some(trailers) = poll_fn(|cx| recv.poll_trailers(cx))
        .await
        .map_err(|e| classify(e, "reading response trailers"))?
    {
        progress.received += FRAME_HEADER + header_list_size(&trailers);
    }
    Ok(())
}

/// Sends an in-memory body in pieces as the peer's flow-control windows open, so a large
/// upload is never buffered twice and `sending` covers the real transfer.
struct BodySender {
    stream: SendStream<Bytes>,
    rest: Bytes,
}

impl BodySender {
    fn poll_send(&mut self, cx: &mut Context<'_>, sent: &mut u64) -> Poll<Result<(), HttpError>> {
        let werr = |e| classify(e, "sending request body");
        while !self.rest.is_empty() {
            // Absolute, not additive: what is still to be sent.
            self.stream.reserve_capacity(self.rest.len());
            let cap = self.stream.capacity();
            if cap == 0 {
                match ready!(self.stream.poll_capacity(cx)) {
                    Some(Ok(_)) => continue,
                    Some(Err(e)) => return Poll::Ready(Err(werr(e))),
                    None => {
                        return Poll::Ready(Err(HttpError::new(
                            ErrorClass::Reset,
                            "stream closed before the request body was sent",
                        )))
                    }
                }
            }
            let piece = self.rest.split_to(cap.min(self.rest.len()));
            *sent += data_estimate(piece.len() as u64);
            self.stream
                .send_data(piece, self.rest.is_empty())
                .map_err(werr)?;
        }
        Poll::Ready(Ok(()))
    }
}

fn closed_error() -> HttpError {
    HttpError::new(
        ErrorClass::Reset,
        "HTTP/2 connection is closed (GOAWAY, error or shutdown): open a new one",
    )
}

/// Maps an h2 error to a class: I/O by its kind; a peer's RST_STREAM/GOAWAY for a
/// protocol violation, or one h2 detected in what the peer sent, is `Protocol`; any other
/// reset or GOAWAY from the peer (refused, cancelled, shutting down...) is `Reset`; our
/// own misuse of h2 is `Other`.
fn classify(e: h2::Error, doing: &str) -> HttpError {
    if let Some(io) = e.get_io() {
        return HttpError::io(io, doing);
    }
    let class = match e.reason() {
        Some(r) if e.is_remote() && !is_protocol_reason(r) => ErrorClass::Reset,
        Some(_) => ErrorClass::Protocol,
        None => ErrorClass::Other,
    };
    HttpError::new(class, format!("{doing}: {e}"))
}

fn is_protocol_reason(r: Reason) -> bool {
    matches!(
        r,
        Reason::PROTOCOL_ERROR
            | Reason::FLOW_CONTROL_ERROR
            | Reason::SETTINGS_TIMEOUT
            | Reason::FRAME_SIZE_ERROR
            | Reason::COMPRESSION_ERROR
            | Reason::HTTP_1_1_REQUIRED
    )
}

#[cfg(test)]
mod tests;
