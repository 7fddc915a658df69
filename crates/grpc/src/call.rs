//! The client: one HTTP/2 connection per [`Conn`] (h2c with prior knowledge, or TLS with
//! ALPN `h2`, over volley-http's counted transport), unary calls and streams on raw `h2`
//! streams, so headers and trailers stay apart and every byte on the wire is counted.
//!
//! Failures never panic: a transport error, a deadline, a bad response all come back as a
//! [`Reply`] with a status code and message, as grpc-go reports them (k6 scripts compare
//! `response.status` and read `response.error.message`).

use crate::frame::{self, Decoder};
use crate::status::{self, DEADLINE_EXCEEDED, INTERNAL, OK, RESOURCE_EXHAUSTED, UNAVAILABLE};
use bytes::Bytes;
use h2::client::SendRequest;
use h2::RecvStream;
use http::{HeaderMap, HeaderName, HeaderValue, Request};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use volley_http::{H2Connection, H2Driver, Target, WireMeter};

/// Metadata: (lower-case key, value); `-bin` values are raw bytes here, base64 on the wire.
pub type Metadata = Vec<(String, Vec<u8>)>;

/// How to connect.
#[derive(Clone)]
pub struct ConnectOptions {
    /// `None`: plaintext (h2c with prior knowledge).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Bounds TCP + TLS + the HTTP/2 handshake.
    pub timeout: Duration,
    /// `:authority` instead of the address.
    pub authority: Option<String>,
    pub user_agent: Option<String>,
    /// Largest message accepted (0: [`frame::DEFAULT_MAX_RECEIVE`]).
    pub max_receive: usize,
    /// Largest message sent (0: no limit).
    pub max_send: usize,
    /// Connect here instead of resolving the address (the `hosts` option).
    pub pinned: Option<SocketAddr>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            tls: None,
            timeout: Duration::from_secs(60),
            authority: None,
            user_agent: None,
            max_receive: 0,
            max_send: 0,
            pinned: None,
        }
    }
}

/// One connection; cheap to clone (clones share it: one reference count, not h2's
/// handle, whose clone and drop each lock the connection's stream table).
#[derive(Clone)]
pub struct Conn {
    i: Arc<Inner>,
}

struct Inner {
    send: SendRequest<Bytes>,
    /// Unary calls' deadlines.
    timer: crate::deadline::Timer,
    meter: WireMeter,
    scheme: &'static str,
    authority: String,
    user_agent: HeaderValue,
    max_receive: usize,
    max_send: usize,
    remote: SocketAddr,
}

/// A unary call's request head (URI, headers with metadata and `grpc-timeout`) and its
/// deadline, from [`Conn::unary_head`]; valid for the connection that built it.
#[derive(Debug, Clone)]
pub struct Head {
    uri: http::Uri,
    headers: HeaderMap,
    timeout: Duration,
}

impl Head {
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// What a call ended with.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub status: u32,
    /// The status message (empty for OK).
    pub message: String,
    pub headers: Metadata,
    pub trailers: Metadata,
    /// The response message of a unary call (none when it failed).
    pub body: Option<Bytes>,
    /// From the stream's start to its end (set for streams, whose events may be read later).
    pub took: Duration,
}

impl Reply {
    fn failed(status: u32, message: impl Into<String>) -> Reply {
        Reply {
            status,
            message: message.into(),
            ..Reply::default()
        }
    }
}

/// Connect to `addr` (`host:port`). The driver must be spawned and kept running.
pub async fn connect(addr: &str, opts: &ConnectOptions) -> Result<(Conn, H2Driver), String> {
    let scheme = if opts.tls.is_some() { "https" } else { "http" };
    let target = Target::parse(&format!("{scheme}://{addr}/"))
        .map_err(|e| format!("invalid address {addr:?}: {} (expected host:port)", e.0))?;
    let remote = match opts.pinned {
        Some(a) => a,
        None => target
            .resolve()
            .await
            .map_err(|e| dial_error(addr, &e.message))?[0],
    };
    let (h2, _, driver) = H2Connection::connect(remote, &target, opts.tls.as_ref(), opts.timeout)
        .await
        .map_err(|e| {
            let msg = match e.class {
                volley_http::ErrorClass::Refused => {
                    format!("dial tcp {remote}: connect: connection refused")
                }
                volley_http::ErrorClass::Timeout => "context deadline exceeded".to_owned(),
                _ => e.message,
            };
            dial_error(addr, &msg)
        })?;
    let ua = opts
        .user_agent
        .as_deref()
        .unwrap_or(concat!("volley-grpc/", env!("CARGO_PKG_VERSION")));
    let conn = Inner {
        send: h2.h2_sender(),
        timer: Default::default(),
        meter: h2.wire_meter(),
        scheme,
        authority: opts.authority.clone().unwrap_or(target.authority.clone()),
        user_agent: HeaderValue::from_str(ua).unwrap_or(HeaderValue::from_static("volley-grpc")),
        max_receive: if opts.max_receive == 0 {
            frame::DEFAULT_MAX_RECEIVE
        } else {
            opts.max_receive
        },
        max_send: opts.max_send,
        remote,
    };
    Ok((Conn { i: Arc::new(conn) }, driver))
}

fn dial_error(addr: &str, msg: &str) -> String {
    // grpc-go's wording (k6 shows it as the connect() exception).
    format!("failed to connect to {addr}: connection error: desc = \"transport: error while dialing: {msg}\"")
}

impl Conn {
    /// Raw bytes (sent, received) on the socket so far, TLS included.
    pub fn wire_bytes(&self) -> (u64, u64) {
        self.i.meter.get()
    }

    pub fn remote(&self) -> SocketAddr {
        self.i.remote
    }

    fn request(
        &self,
        path: &str,
        md: &Metadata,
        timeout: Option<Duration>,
    ) -> Result<Request<()>, String> {
        let uri = format!("{}://{}{}", self.i.scheme, self.i.authority, path);
        let mut req = Request::post(uri)
            .body(())
            .map_err(|e| format!("invalid method path {path:?}: {e}"))?;
        let h: &mut HeaderMap = req.headers_mut();
        h.insert("content-type", HeaderValue::from_static("application/grpc"));
        h.insert("te", HeaderValue::from_static("trailers"));
        h.insert("user-agent", self.i.user_agent.clone());
        if let Some(t) = timeout {
            if let Ok(v) = HeaderValue::from_str(&status::timeout_header(t)) {
                h.insert("grpc-timeout", v);
            }
        }
        for (k, v) in md {
            let k = &k.to_ascii_lowercase();
            check_key(k)?;
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("invalid metadata key {k:?}"))?;
            let value = HeaderValue::from_bytes(&status::wire_value(k, v)).map_err(|_| {
                format!("invalid metadata value for {k:?} (use a -bin key for binary values)")
            })?;
            h.append(name, value);
        }
        Ok(req)
    }

    /// The request head of unary calls to `path` with `md` within `timeout`, built once for
    /// many calls (URI parsing and header validation are then paid once).
    pub fn unary_head(&self, path: &str, md: &Metadata, timeout: Duration) -> Result<Head, String> {
        let req = self.request(path, md, Some(timeout))?;
        let (parts, ()) = req.into_parts();
        Ok(Head {
            uri: parts.uri,
            headers: parts.headers,
            timeout,
        })
    }

    /// A message over `maxSendSize` fails the call (RESOURCE_EXHAUSTED), as in grpc-go.
    fn too_large(&self, msg: &[u8]) -> Option<Reply> {
        (self.i.max_send > 0 && msg.len() > self.i.max_send).then(|| {
            Reply::failed(
                RESOURCE_EXHAUSTED,
                format!(
                    "trying to send message larger than max ({} vs. {})",
                    msg.len(),
                    self.i.max_send
                ),
            )
        })
    }

    /// A unary call: one message out, one back, within `timeout`.
    pub async fn unary(&self, path: &str, md: &Metadata, msg: &[u8], timeout: Duration) -> Reply {
        if let Some(r) = self.too_large(msg) {
            return r;
        }
        let head = self.unary_head(path, md, timeout);
        self.unary_with(head, frame::encode(msg)).await
    }

    /// [`Conn::unary`] with the head built beforehand ([`Conn::unary_head`]; its error is the
    /// call's INTERNAL status) and the message already framed ([`frame::encode`]): what a
    /// caller repeating a call can keep. Same results as [`Conn::unary`].
    pub async fn unary_with(&self, head: Result<Head, String>, framed: Bytes) -> Reply {
        if let Some(r) = self.too_large(&framed[framed.len().min(5)..]) {
            return r;
        }
        let head = match head {
            Ok(h) => h,
            Err(e) => return Reply::failed(INTERNAL, e),
        };
        let mut req = Request::new(());
        *req.method_mut() = http::Method::POST;
        *req.uri_mut() = head.uri;
        *req.headers_mut() = head.headers;
        let call = async {
            let mut send = self.i.send.clone().ready().await.map_err(transport)?;
            let (resp, mut tx) = send.send_request(req, false).map_err(transport)?;
            tx.send_data(framed, true).map_err(transport)?;
            let resp = resp.await.map_err(transport)?;
            Ok::<_, Reply>(read_reply(resp, self.i.max_receive, true, None).await)
        };
        // As `tokio::time::timeout`: a deadline too far to represent is none.
        let out = match tokio::time::Instant::now().checked_add(head.timeout) {
            Some(deadline) => self.i.timer.within(deadline, call).await,
            None => Some(call.await),
        };
        match out {
            Some(Ok(r)) | Some(Err(r)) => r,
            None => Reply::failed(DEADLINE_EXCEEDED, "context deadline exceeded"),
        }
    }

    /// A stream: write with the sender ([`Cmd`]), read [`Event`]s; the returned future does
    /// the work (spawn it). `timeout` bounds the whole stream.
    pub fn stream(
        &self,
        path: &str,
        md: &Metadata,
        timeout: Option<Duration>,
    ) -> (
        mpsc::UnboundedSender<Cmd>,
        mpsc::UnboundedReceiver<Event>,
        impl Future<Output = ()> + 'static,
    ) {
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let (ev_tx, ev_rx) = mpsc::unbounded_channel();
        let req = self.request(path, md, timeout);
        let conn = self.clone();
        let task = async move {
            let started = std::time::Instant::now();
            let mut done = match req {
                Err(e) => Reply::failed(INTERNAL, e),
                Ok(req) => {
                    let run = conn.run_stream(req, cmd_rx, &ev_tx);
                    match timeout {
                        None => run.await,
                        Some(t) => tokio::time::timeout(t, run).await.unwrap_or_else(|_| {
                            Reply::failed(DEADLINE_EXCEEDED, "context deadline exceeded")
                        }),
                    }
                }
            };
            done.took = started.elapsed();
            let _ = ev_tx.send(Event::Done(done));
        };
        (cmd_tx, ev_rx, task)
    }

    async fn run_stream(
        &self,
        req: Request<()>,
        mut cmds: mpsc::UnboundedReceiver<Cmd>,
        events: &mpsc::UnboundedSender<Event>,
    ) -> Reply {
        let mut send = match self.i.send.clone().ready().await {
            Ok(s) => s,
            Err(e) => return transport(e),
        };
        let (resp, mut tx) = match send.send_request(req, false) {
            Ok(x) => x,
            Err(e) => return transport(e),
        };
        let writer = async {
            while let Some(cmd) = cmds.recv().await {
                match cmd {
                    Cmd::Write(m) => {
                        if let Some(r) = self.too_large(&m) {
                            tx.send_reset(h2::Reason::CANCEL);
                            return Some(r);
                        }
                        // A failed send shows up on the reading side (reset, GOAWAY).
                        if tx.send_data(frame::encode(&m), false).is_err() {
                            break;
                        }
                    }
                    Cmd::End => {
                        let _ = tx.send_data(Bytes::new(), true);
                        break;
                    }
                    Cmd::Abort(status, message) => {
                        tx.send_reset(h2::Reason::CANCEL);
                        return Some(Reply::failed(status, message));
                    }
                }
            }
            // Writing is over; the call ends when the reading side does.
            std::future::pending::<Option<Reply>>().await
        };
        let reader = async {
            let resp = match resp.await {
                Ok(r) => r,
                Err(e) => return transport(e),
            };
            read_reply(resp, self.i.max_receive, false, Some(events)).await
        };
        tokio::select! {
            r = reader => r,
            Some(r) = writer => r,
            () = events.closed() => Reply::failed(status::CANCELLED, "context canceled"),
        }
    }
}

/// grpc-go's rule for a metadata key (lowercased), with its words (k6 reports them).
fn check_key(k: &str) -> Result<(), String> {
    if k.is_empty() {
        return Err("there is an empty key in the header".into());
    }
    if k.starts_with(':') {
        return Err(format!("{k:?} is an illegal header"));
    }
    let legal = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b);
    if !k.bytes().all(legal) {
        return Err(format!(
            "header key {k:?} contains illegal characters not in [0-9a-z-_.]"
        ));
    }
    Ok(())
}

/// What a stream's writer can do.
#[derive(Debug)]
pub enum Cmd {
    Write(Vec<u8>),
    /// Half-close: no more messages from the client.
    End,
    /// Fail the stream with this status and message (e.g. a message the client could not
    /// encode, which k6 reports as the stream's error): the stream is reset.
    Abort(u32, String),
}

/// What a stream reports.
#[derive(Debug)]
pub enum Event {
    Message(Bytes),
    /// The stream is over (status, message, headers, trailers).
    Done(Reply),
}

fn transport(e: h2::Error) -> Reply {
    if let Some(reason) = e.reason() {
        if e.is_remote() || e.is_reset() {
            let code = match reason {
                h2::Reason::CANCEL => status::CANCELLED,
                h2::Reason::REFUSED_STREAM => UNAVAILABLE,
                h2::Reason::ENHANCE_YOUR_CALM => RESOURCE_EXHAUSTED,
                h2::Reason::INADEQUATE_SECURITY => 7,
                _ => INTERNAL,
            };
            return Reply::failed(
                code,
                format!("stream terminated by RST_STREAM with error code: {reason:?}"),
            );
        }
    }
    if e.is_go_away() {
        return Reply::failed(UNAVAILABLE, format!("the connection is closing: {e}"));
    }
    Reply::failed(
        UNAVAILABLE,
        format!("connection error: desc = \"transport: {e}\""),
    )
}

fn metadata(h: &HeaderMap) -> Metadata {
    h.iter()
        .filter(|(k, _)| !status::is_reserved(k.as_str()))
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                status::value_of(k.as_str(), v.as_bytes()),
            )
        })
        .collect()
}

/// The status a response's HTTP status stands for when it is not 200 (gRPC's HTTP mapping).
fn http_status(code: u16) -> u32 {
    match code {
        400 => INTERNAL,
        401 => 16,
        403 => 7,
        404 => status::UNIMPLEMENTED,
        429 | 502..=504 => UNAVAILABLE,
        _ => status::UNKNOWN,
    }
}

fn status_of(h: &HeaderMap) -> Option<(u32, String)> {
    let code = h.get("grpc-status")?.to_str().ok()?.trim().parse().ok()?;
    let msg = h
        .get("grpc-message")
        .map(|v| status::decode_message(v.as_bytes()))
        .unwrap_or_default();
    Some((code, msg))
}

/// Read a response: headers, messages (kept for a unary call, sent as events for a stream),
/// trailers with the status.
async fn read_reply(
    resp: http::Response<RecvStream>,
    max: usize,
    unary: bool,
    events: Option<&mpsc::UnboundedSender<Event>>,
) -> Reply {
    let (parts, mut body) = resp.into_parts();
    let mut reply = Reply {
        headers: metadata(&parts.headers),
        ..Reply::default()
    };
    if parts.status != http::StatusCode::OK {
        let code = parts.status.as_u16();
        reply.status = http_status(code);
        reply.message = format!(
            "unexpected HTTP status code received from server: {code} ({})",
            parts.status.canonical_reason().unwrap_or("")
        );
        return reply;
    }
    let ct = parts
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !ct.starts_with("application/grpc") {
        reply.status = status::UNKNOWN;
        reply.message = format!("transport: received unexpected content-type {ct:?}");
        return reply;
    }
    // Trailers-only: the status is in the headers.
    if let Some((code, msg)) = status_of(&parts.headers) {
        reply.status = code;
        reply.message = msg;
        reply.trailers = std::mem::take(&mut reply.headers);
        return reply;
    }
    let mut dec = Decoder::new(max);
    while let Some(chunk) = body.data().await {
        let chunk = match chunk {
            Ok(c) => c,
            Err(e) => {
                let r = transport(e);
                reply.status = r.status;
                reply.message = r.message;
                return reply;
            }
        };
        let _ = body.flow_control().release_capacity(chunk.len());
        dec.push(&chunk);
        loop {
            match dec.next_message() {
                Ok(Some(m)) => {
                    if unary {
                        if reply.body.is_some() {
                            reply.status = status::UNIMPLEMENTED;
                            reply.message =
                                "grpc: too many response messages for a unary call".into();
                            return reply;
                        }
                        reply.body = Some(m);
                    } else if let Some(ev) = events {
                        let _ = ev.send(Event::Message(m));
                    }
                }
                Ok(None) => break,
                Err((code, msg)) => {
                    reply.status = code;
                    reply.message = msg;
                    reply.body = None;
                    return reply;
                }
            }
        }
    }
    match body.trailers().await {
        Ok(Some(t)) => {
            match status_of(&t) {
                Some((code, msg)) => {
                    reply.status = code;
                    reply.message = msg;
                }
                None => {
                    reply.status = INTERNAL;
                    reply.message = "server closed the stream without sending a status".into();
                }
            }
            reply.trailers = metadata(&t);
        }
        Ok(None) => {
            reply.status = INTERNAL;
            reply.message = "server closed the stream without sending trailers".into();
        }
        Err(e) => {
            let r = transport(e);
            reply.status = r.status;
            reply.message = r.message;
        }
    }
    if reply.status != OK {
        reply.body = None;
    } else if unary && reply.body.is_none() {
        reply.status = INTERNAL;
        reply.message = "grpc: the server sent no response message".into();
    }
    reply
}

/// Build a pool from the server's reflection service (v1, else v1alpha), within `timeout`.
pub async fn reflect(
    conn: &Conn,
    md: &Metadata,
    timeout: Duration,
) -> Result<prost_reflect::DescriptorPool, String> {
    let mut last = String::new();
    for path in crate::reflect::PATHS {
        let (tx, mut rx, task) = conn.stream(path, md, Some(timeout));
        let talk = async {
            let mut c = crate::reflect::Collector::default();
            let _ = tx.send(Cmd::Write(crate::reflect::Collector::start()));
            let mut waiting = 1usize;
            while let Some(ev) = rx.recv().await {
                match ev {
                    Event::Message(m) => {
                        waiting -= 1;
                        let next = c.take(&m)?;
                        waiting += next.len();
                        for n in next {
                            let _ = tx.send(Cmd::Write(n));
                        }
                        if waiting == 0 {
                            let _ = tx.send(Cmd::End);
                        }
                    }
                    Event::Done(r) if r.status == OK && waiting == 0 => return c.pool().map(Ok),
                    Event::Done(r) if r.status == status::UNIMPLEMENTED => {
                        return Ok(Err(r.message))
                    }
                    // k6's words (grpcext: the service listing is the first request).
                    Event::Done(r) => {
                        return Err(format!(
                            "can't list services: rpc error: code = {} desc = {}",
                            code_name(r.status),
                            r.message
                        ))
                    }
                }
            }
            Err("the reflection stream ended early".to_owned())
        };
        let (_, out) = tokio::join!(task, talk);
        match out {
            Ok(Ok(pool)) => return Ok(pool),
            // Not this version: try the next; the last one's answer is the error.
            Ok(Err(desc)) => {
                let desc = if desc.is_empty() {
                    format!("unknown service {path}")
                } else {
                    desc
                };
                last = format!("can't list services: rpc error: code = Unimplemented desc = {desc}")
            }
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// `Unavailable`, `NotFound`... (grpc-go's names in error texts).
pub fn code_name(code: u32) -> String {
    status::NAMES
        .get(code as usize)
        .map_or_else(|| format!("Code({code})"), |n| (*n).to_owned())
}
