//! WebSocket client (RFC 6455) for script mode's `k6/ws` and `k6/websockets`, JS-free.
//!
//! [`connect`] opens TCP (+ TLS, ALPN `http/1.1` as k6 forces for WebSockets) through the
//! same byte-counting transport as HTTP, then hands the stream to tungstenite for the
//! upgrade handshake and framing. A [`WsConn`] is then driven by one future at a time,
//! [`WsConn::next`]: it writes what the script queued through its [`WsSender`] and returns
//! the next thing that happened on the socket ([`WsEvent`]); the bindings run one such future
//! per event on the VU's thread, so the socket never needs a task or a lock of its own.
//! Dropping the connection (a cancelled iteration) just closes the socket.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as TError, Message};

use crate::client::ClientSettings;
use crate::error::ErrorClass;
use crate::transport::{self, WireCounters};
use crate::url::Target;

mod codec;
#[cfg(test)]
mod codec_tests;
mod deflate;
mod frames;
mod handshake;
mod ready;
mod socket;
pub use frames::Frame;

/// k6's handshake timeout (gorilla's dialer there: 60 s, not configurable).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(60);
/// k6's write deadline for control frames (close, ping): a peer that does not read cannot
/// hold a closing VU longer than this.
pub const WRITE_WAIT: Duration = Duration::from_secs(10);
/// Largest message accepted (tungstenite's default is 64 MiB; k6 has no limit).
const MAX_MESSAGE: usize = 64 << 20;
/// Read buffer per socket (gorilla's, k6's, default too). tungstenite's default of 128 KiB is
/// zeroed on every read: with small messages that memset was a third of `volley ws`'s CPU, and
/// it cost 128 KiB of RSS per socket. Larger messages still arrive, in more reads.
pub const READ_BUFFER: usize = 4 << 10;

/// What the script asked for.
#[derive(Clone, Debug, Default)]
pub struct WsRequest {
    /// `ws://` or `wss://` URL.
    pub url: String,
    /// Extra handshake headers (`User-Agent`, `params.headers`, `Cookie`).
    pub headers: Vec<(String, String)>,
    /// `Sec-WebSocket-Protocol` values offered.
    pub protocols: Vec<String>,
    /// Offer permessage-deflate (k6's `compression: "deflate"`); used when the server accepts.
    pub compression: bool,
}

/// The server's answer to the upgrade request (also on a refused upgrade).
#[derive(Clone, Debug, Default)]
pub struct Handshake {
    pub status: u16,
    /// Headers in order, repeated ones repeated (names lower-case, as `http` parses them).
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// The subprotocol the server chose ("" if none).
    pub protocol: String,
}

/// A failed connect: k6's message, the class, and the server's answer when it gave one.
#[derive(Debug)]
pub struct WsConnectError {
    pub message: String,
    pub class: ErrorClass,
    pub response: Option<Handshake>,
}

/// What happened on an open socket.
#[derive(Debug, PartialEq)]
pub enum WsEvent {
    Text(String),
    Binary(Vec<u8>),
    /// The server pinged (the pong is sent automatically).
    Ping,
    /// A pong with its payload (our ping's id).
    Pong(Vec<u8>),
    /// The socket is closed: the peer's close code and reason (1006 "unexpected EOF" when it went away
    /// without a close frame) and an error when the closing was not clean.
    Closed {
        code: u16,
        reason: String,
        error: Option<String>,
    },
    /// The deadline given to [`WsConn::next`] passed first.
    Timeout,
}

/// What the script queues for the socket.
#[derive(Debug)]
pub enum WsCmd {
    Text(String),
    Binary(Vec<u8>),
    Ping(Vec<u8>),
    Close(u16, String),
}

/// Queues frames for a [`WsConn`] (written by its next [`WsConn::next`]).
#[derive(Clone, Debug)]
pub struct WsSender(mpsc::UnboundedSender<WsCmd>);

impl WsSender {
    /// Queue `cmd`; false when the connection is gone.
    pub fn send(&self, cmd: WsCmd) -> bool {
        self.0.send(cmd).is_ok()
    }
}

type Stream = socket::Socket;

/// A message built once and sent many times (quick mode's fixed payload): each send clones a
/// reference count, not the bytes, and allocates nothing.
#[derive(Clone, Debug)]
pub struct Prebuilt(Message);

impl Prebuilt {
    pub fn text(s: String) -> Prebuilt {
        Prebuilt(Message::text(s))
    }

    pub fn binary(b: Vec<u8>) -> Prebuilt {
        Prebuilt(Message::binary(b))
    }
}

/// Far enough ahead to mean "no deadline" for the connection's one timer.
const NO_DEADLINE: Duration = Duration::from_secs(86_400 * 365);

/// An open WebSocket.
pub struct WsConn {
    ws: Stream,
    rx: mpsc::UnboundedReceiver<WsCmd>,
    wire: Arc<WireCounters>,
    /// Bytes already reported by [`WsConn::take_bytes`]: (sent, received).
    reported: (u64, u64),
    /// We sent a close frame: the next close from the peer (or EOF) ends it cleanly.
    closing: bool,
    /// Every [`WsSender`] is gone (quick mode drops its own at once): [`WsConn::next`] stops
    /// polling the queue, which costs a waker registration per event.
    queue_closed: bool,
    /// The deadline of [`WsConn::next`], kept across calls: a message loop that waits with
    /// the same (or a later) deadline each time moves one timer-wheel entry instead of
    /// registering and cancelling a timer per message.
    timer: std::pin::Pin<Box<tokio::time::Sleep>>,
    /// Frames [`WsConn::buffer`] left in tungstenite's write buffer, for
    /// [`WsConn::next_flushed`] to write; and the error buffering one met.
    unflushed: bool,
    buffer_error: Option<TError>,
    pub remote: SocketAddr,
}

/// Connect and upgrade. `Ok` also reports the handshake's duration (k6's `ws_connecting`:
/// TCP + TLS + upgrade).
pub async fn connect(
    req: &WsRequest,
    settings: &ClientSettings,
) -> Result<(WsConn, WsSender, Handshake), WsConnectError> {
    let fail = |class, message: String| WsConnectError {
        message,
        class,
        response: None,
    };
    let target = http_target(&req.url).map_err(|m| fail(ErrorClass::Other, m))?;
    let addr = match settings.pinned(&target.host, target.port) {
        Some(a) => a,
        None => match target.resolve().await {
            Ok(a) => a[0],
            Err(e) => return Err(fail(e.class, format!("dial: {}", e.message))),
        },
    };
    if let Some(net) = settings.blacklisted(addr.ip()) {
        let msg = format!("IP ({}) is in a blacklisted range ({net})", addr.ip());
        return Err(fail(ErrorClass::Other, msg));
    }
    let tls = match target.scheme {
        crate::Scheme::Https => Some(settings.tls_http1().map_err(|e| fail(ErrorClass::Tls, e))?),
        crate::Scheme::Http => None,
    };
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    let wire = Arc::new(WireCounters::default());
    let (io, _) = transport::open(addr, &target, tls.as_ref(), HANDSHAKE_TIMEOUT, wire.clone())
        .await
        .map_err(|e| {
            // gorilla's wording, as k6 reports it.
            let message = match e.class {
                ErrorClass::Refused => {
                    format!("dial tcp {addr}: connect: connection refused")
                }
                _ => format!("dial tcp {addr}: {}", e.message),
            };
            fail(e.class, message)
        })?;
    let request = build_request(req).map_err(|m| fail(ErrorClass::Other, m))?;
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .read_buffer_size(READ_BUFFER);
    let left = deadline.saturating_duration_since(Instant::now());
    let upgrade = async {
        if req.compression {
            return handshake::upgrade(request, io, config).await;
        }
        let (ws, resp) =
            tokio_tungstenite::client_async_with_config(request, io, Some(config)).await?;
        Ok((socket::Socket::Plain(ws), resp))
    };
    let (ws, resp) = match tokio::time::timeout(left, upgrade).await {
        Err(_) => {
            return Err(fail(
                ErrorClass::Timeout,
                "websocket: handshake timed out".into(),
            ))
        }
        Ok(Err(TError::Http(resp))) => {
            let body = resp
                .body()
                .as_ref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default();
            return Err(WsConnectError {
                message: "websocket: bad handshake".into(),
                class: ErrorClass::Protocol,
                response: Some(handshake_of(resp.status().as_u16(), resp.headers(), body)),
            });
        }
        // A 101 whose headers do not complete the upgrade: gorilla's (k6's) "bad handshake",
        // with the status the server sent.
        Ok(Err(TError::Protocol(
            ProtocolError::SecWebSocketAcceptKeyMismatch
            | ProtocolError::MissingUpgradeWebSocketHeader
            | ProtocolError::MissingConnectionUpgradeHeader,
        ))) => {
            let none = tokio_tungstenite::tungstenite::http::HeaderMap::new();
            return Err(WsConnectError {
                message: "websocket: bad handshake".into(),
                class: ErrorClass::Protocol,
                response: Some(handshake_of(101, &none, String::new())),
            });
        }
        Ok(Err(e)) => return Err(fail(classify(&e), e.to_string())),
        Ok(Ok(x)) => x,
    };
    let hs = handshake_of(resp.status().as_u16(), resp.headers(), String::new());
    let (tx, rx) = mpsc::unbounded_channel();
    let conn = WsConn {
        ws,
        rx,
        wire,
        reported: (0, 0),
        closing: false,
        queue_closed: false,
        timer: Box::pin(tokio::time::sleep(NO_DEADLINE)),
        unflushed: false,
        buffer_error: None,
        remote: addr,
    };
    Ok((conn, WsSender(tx), hs))
}

/// The http(s) target a ws(s) URL connects to.
pub fn http_target(url: &str) -> Result<Target, String> {
    let url = url.trim();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let http = if scheme.eq_ignore_ascii_case("ws") {
        "http"
    } else if scheme.eq_ignore_ascii_case("wss") {
        "https"
    } else {
        return Err(format!(
            "malformed ws or wss URL '{url}': the scheme must be ws:// or wss://"
        ));
    };
    Target::parse(&format!("{http}://{rest}")).map_err(|e| e.0)
}

fn build_request(
    req: &WsRequest,
) -> Result<tokio_tungstenite::tungstenite::handshake::client::Request, String> {
    let mut r = req
        .url
        .as_str()
        .into_client_request()
        .map_err(|e| format!("bad WebSocket URL '{}': {e}", req.url))?;
    let h = r.headers_mut();
    for (k, v) in &req.headers {
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("invalid header name '{k}'"))?;
        let value =
            HeaderValue::from_str(v).map_err(|_| format!("invalid value for header '{k}'"))?;
        h.insert(name, value);
    }
    if !req.protocols.is_empty() {
        let v = HeaderValue::from_str(&req.protocols.join(", "))
            .map_err(|_| "invalid subprotocol name".to_string())?;
        h.insert("sec-websocket-protocol", v);
    }
    Ok(r)
}

fn handshake_of(
    status: u16,
    headers: &tokio_tungstenite::tungstenite::http::HeaderMap,
    body: String,
) -> Handshake {
    let out: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| {
            let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
            (k.as_str().to_string(), v)
        })
        .collect();
    let protocol = headers
        .get("sec-websocket-protocol")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    Handshake {
        status,
        headers: out,
        body,
        protocol,
    }
}

fn classify(e: &TError) -> ErrorClass {
    match e {
        TError::Io(io) => ErrorClass::of_io(io),
        TError::Tls(_) => ErrorClass::Tls,
        TError::Protocol(_) | TError::Http(_) | TError::HttpFormat(_) => ErrorClass::Protocol,
        _ => ErrorClass::Other,
    }
}

/// A write that must finish within [`WRITE_WAIT`] (a peer that stopped reading is an error).
async fn timed(write: impl std::future::Future<Output = Result<(), TError>>) -> Result<(), String> {
    match tokio::time::timeout(WRITE_WAIT, write).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("websocket: {e}")),
        Err(_) => Err("websocket: write timed out".into()),
    }
}

fn message_of(cmd: WsCmd) -> Message {
    match cmd {
        WsCmd::Text(s) => Message::text(s),
        WsCmd::Binary(b) => Message::binary(b),
        WsCmd::Ping(b) => Message::Ping(Bytes::from(b)),
        WsCmd::Close(code, reason) => Message::Close(Some(CloseFrame {
            code: CloseCode::from(code),
            reason: reason.into(),
        })),
    }
}

impl WsConn {
    /// Bytes moved on the wire since the last call: (sent, received).
    pub fn take_bytes(&mut self) -> (u64, u64) {
        let (w, r) = self.wire.get();
        let out = (w - self.reported.0, r - self.reported.1);
        self.reported = (w, r);
        out
    }

    /// Write what is queued, then wait for the next event or `deadline`.
    pub async fn next(&mut self, deadline: Option<Instant>) -> WsEvent {
        let timed = self.arm(deadline);
        loop {
            tokio::select! {
                biased;
                cmd = self.rx.recv(), if !self.queue_closed => {
                    let Some(cmd) = cmd else {
                        self.queue_closed = true;
                        continue;
                    };
                    match tokio::time::timeout(WRITE_WAIT, self.write_queued(cmd)).await {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => return self.gone(Some(e)),
                        Err(_) => return self.gone_with("websocket: write timed out".into()),
                    }
                }
                msg = self.ws.next() => match msg {
                    None => return self.gone(None),
                    Some(Err(e)) => return self.gone(Some(e)),
                    Some(Ok(m)) => match m {
                        Message::Text(t) => return WsEvent::Text(t.as_str().to_string()),
                        Message::Binary(b) => return WsEvent::Binary(b.to_vec()),
                        Message::Ping(_) => {
                            // tungstenite queued the pong: write it now.
                            let _ = tokio::time::timeout(WRITE_WAIT, self.ws.flush()).await;
                            return WsEvent::Ping;
                        }
                        Message::Pong(p) => return WsEvent::Pong(p.to_vec()),
                        Message::Close(frame) => {
                            // tungstenite queued the close reply: write it.
                            let _ = tokio::time::timeout(WRITE_WAIT, self.ws.flush()).await;
                            return closed_by_peer(frame);
                        }
                        Message::Frame(_) => {}
                    },
                },
                _ = self.timer.as_mut(), if timed => return WsEvent::Timeout,
            }
        }
    }

    /// Point the connection's one timer at `deadline` (moved, not re-registered); whether
    /// there is one to wait for.
    fn arm(&mut self, deadline: Option<Instant>) -> bool {
        if let Some(d) = deadline {
            let d = tokio::time::Instant::from(d);
            if self.timer.deadline() != d {
                // Cheap when later than the entry's slot: tokio only extends it.
                self.timer.as_mut().reset(d);
            }
        }
        deadline.is_some()
    }

    /// Put a frame into the write buffer now, without waiting or writing (a script's handler
    /// runs while no future holds the connection: no queue, no wakeup). Frames still in the
    /// [`WsSender`]'s queue go first, so the order is the order they were sent in.
    /// [`WsConn::next_flushed`] writes them all with one flush.
    pub fn buffer(&mut self, cmd: WsCmd) {
        while !self.queue_closed {
            match self.rx.try_recv() {
                Ok(queued) => self.buffer_one(queued),
                Err(_) => break,
            }
        }
        self.buffer_one(cmd);
    }

    fn buffer_one(&mut self, cmd: WsCmd) {
        if self.buffer_error.is_some() {
            return;
        }
        if let WsCmd::Close(..) = cmd {
            self.closing = true;
        }
        // Synchronous: tungstenite frames it into its buffer (a full socket is written later).
        match futures_util::Sink::start_send(std::pin::Pin::new(&mut self.ws), message_of(cmd)) {
            Ok(()) => self.unflushed = true,
            Err(e) => self.buffer_error = Some(e),
        }
    }

    /// [`WsConn::next`] after writing what [`WsConn::buffer`] left (one write for every frame
    /// a handler sent), within [`WRITE_WAIT`].
    pub async fn next_flushed(&mut self, deadline: Option<Instant>) -> WsEvent {
        if let Some(e) = self.buffer_error.take() {
            return self.gone(Some(e));
        }
        if std::mem::take(&mut self.unflushed) {
            match tokio::time::timeout(WRITE_WAIT, self.ws.flush()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return self.gone(Some(e)),
                Err(_) => return self.gone_with("websocket: write timed out".into()),
            }
        }
        self.next(deadline).await
    }

    /// Write `first` and every frame queued behind it with one flush: a handler that sends
    /// several messages costs one write.
    async fn write_queued(&mut self, first: WsCmd) -> Result<(), TError> {
        let mut cmd = first;
        loop {
            if let WsCmd::Close(..) = cmd {
                self.closing = true;
            }
            self.ws.feed(message_of(cmd)).await?;
            match self.rx.try_recv() {
                Ok(c) => cmd = c,
                Err(_) => break,
            }
        }
        self.ws.flush().await
    }

    /// Write one frame now, bypassing the queue (quick mode's hot path: no channel). A write
    /// that does not finish within [`WRITE_WAIT`] (a peer that stopped reading) is an error.
    pub async fn send_now(&mut self, cmd: WsCmd) -> Result<(), String> {
        if let WsCmd::Close(..) = cmd {
            self.closing = true;
        }
        timed(self.ws.send(message_of(cmd))).await
    }

    /// [`WsConn::send_now`] of a message built once; with `flush` false it stays buffered
    /// until [`WsConn::flush_now`] (or a later send), so messages due together go in one
    /// write.
    pub async fn send_prebuilt(&mut self, m: &Prebuilt, flush: bool) -> Result<(), String> {
        if flush {
            timed(self.ws.send(m.0.clone())).await
        } else {
            timed(self.ws.feed(m.0.clone())).await
        }
    }

    /// Write what [`WsConn::send_prebuilt`] left buffered.
    pub async fn flush_now(&mut self) -> Result<(), String> {
        timed(self.ws.flush()).await
    }

    /// Write what is queued (a close frame, last sends) within [`WRITE_WAIT`], then close.
    pub async fn finish(mut self) {
        let flush = async {
            while let Ok(cmd) = self.rx.try_recv() {
                if self.ws.feed(message_of(cmd)).await.is_err() {
                    return;
                }
            }
            let _ = self.ws.flush().await;
        };
        let _ = tokio::time::timeout(WRITE_WAIT, flush).await;
    }

    fn gone(&mut self, e: Option<TError>) -> WsEvent {
        match e {
            None | Some(TError::ConnectionClosed) | Some(TError::AlreadyClosed) if self.closing => {
                WsEvent::Closed {
                    code: 1000,
                    reason: String::new(),
                    error: None,
                }
            }
            // tungstenite's ResetWithoutClosingHandshake is an EOF without a close frame too:
            // k6 (gorilla) words it so, and `k6/websockets` gives the reason "unexpected EOF".
            None
            | Some(TError::ConnectionClosed)
            | Some(TError::AlreadyClosed)
            | Some(TError::Protocol(ProtocolError::ResetWithoutClosingHandshake)) => {
                WsEvent::Closed {
                    code: 1006,
                    reason: "unexpected EOF".into(),
                    error: Some("websocket: close 1006 (abnormal closure): unexpected EOF".into()),
                }
            }
            Some(e) => self.gone_with(codec::error_text(&e)),
        }
    }

    fn gone_with(&mut self, error: String) -> WsEvent {
        WsEvent::Closed {
            code: 1006,
            reason: String::new(),
            error: Some(error),
        }
    }
}

/// The event for a close frame the peer sent (1005 when it had no status, as RFC 6455 says).
fn closed_by_peer(frame: Option<CloseFrame>) -> WsEvent {
    let (code, reason) = frame
        .map(|f| (u16::from(f.code), f.reason.as_str().to_string()))
        .unwrap_or((1005, String::new()));
    WsEvent::Closed {
        code,
        reason,
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection to a fresh target's `/ws/echo`, with the runtime that must drive it
    /// (also `frames`' tests).
    pub(super) fn echo() -> (
        volley_testserver::RunningTarget,
        tokio::runtime::Runtime,
        WsConn,
        WsSender,
    ) {
        let t = volley_testserver::spawn(volley_testserver::TargetConfig::default()).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let req = WsRequest {
            url: format!("ws://{}/ws/echo", t.local_addr()),
            ..WsRequest::default()
        };
        let (conn, tx, _) = rt
            .block_on(connect(&req, &ClientSettings::default()))
            .unwrap();
        (t, rt, conn, tx)
    }

    /// Wait for the next event with a deadline `d` from now: the event and the time taken.
    async fn wait(conn: &mut WsConn, d: Duration) -> (WsEvent, Duration) {
        let start = Instant::now();
        let ev = tokio::time::timeout(Duration::from_secs(5), conn.next(Some(start + d)))
            .await
            .expect("the wait must end by its deadline");
        (ev, start.elapsed())
    }

    /// `next`'s one timer is reused across calls: a later deadline moves it, an earlier one
    /// (after a wait cut short by a message) re-registers it, and a deadline that already
    /// fired still fires again; each wait ends at its own deadline, never before.
    #[test]
    fn one_timer_serves_every_deadline() {
        let (_t, rt, mut conn, _) = echo();
        rt.block_on(async {
            let ms = Duration::from_millis;
            // Nothing sent, nothing comes back: the first deadline fires.
            let (ev, took) = wait(&mut conn, ms(40)).await;
            assert_eq!(ev, WsEvent::Timeout);
            assert!(took >= ms(40), "{took:?}");
            // A later deadline: the same timer, moved.
            let (ev, took) = wait(&mut conn, ms(80)).await;
            assert_eq!(ev, WsEvent::Timeout);
            assert!(took >= ms(80), "{took:?}");
            // A far deadline cut short by an echo, then a near one: the timer moves back.
            conn.send_now(WsCmd::Text("a".into())).await.unwrap();
            let (ev, took) = wait(&mut conn, ms(60_000)).await;
            assert_eq!(ev, WsEvent::Text("a".into()));
            assert!(took < ms(5000));
            let (ev, took) = wait(&mut conn, ms(30)).await;
            assert_eq!(ev, WsEvent::Timeout);
            assert!(took >= ms(30) && took < ms(5000), "{took:?}");
            // No deadline: an echo, never a timeout.
            conn.send_now(WsCmd::Text("b".into())).await.unwrap();
            assert_eq!(conn.next(None).await, WsEvent::Text("b".into()));
        });
    }

    /// Frames buffered directly (a script handler's sends) go after those already queued,
    /// and `next_flushed` writes them before it waits: the echoes come back in send order.
    #[test]
    fn buffered_frames_follow_queued_ones_and_are_flushed_before_the_wait() {
        let (_t, rt, mut conn, tx) = echo();
        rt.block_on(async {
            assert!(tx.send(WsCmd::Text("q0".into())));
            conn.buffer(WsCmd::Text("b1".into()));
            conn.buffer(WsCmd::Text("b2".into()));
            let until = Instant::now() + Duration::from_secs(5);
            for m in ["q0", "b1", "b2"] {
                let ev =
                    tokio::time::timeout(Duration::from_secs(10), conn.next_flushed(Some(until)))
                        .await
                        .expect("the wait must end by its deadline");
                assert_eq!(ev, WsEvent::Text(m.into()));
            }
        });
    }

    /// Frames queued together go out in one flush and arrive in order; once every sender is
    /// gone the connection still reads and times out (it used to spin on the closed queue,
    /// never yielding: the body runs on its own thread so that shows as a failure, not a hang).
    #[test]
    fn queued_frames_are_written_together_in_order() {
        let (_t, rt, mut conn, tx) = echo();
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            rt.block_on(async {
                for i in 0..5 {
                    assert!(tx.send(WsCmd::Text(format!("m{i}"))));
                }
                drop(tx);
                let until = Instant::now() + Duration::from_secs(5);
                for i in 0..5 {
                    assert_eq!(conn.next(Some(until)).await, WsEvent::Text(format!("m{i}")));
                }
                // The queue is closed for good; the socket still times out normally.
                let soon = Instant::now() + Duration::from_millis(20);
                assert_eq!(conn.next(Some(soon)).await, WsEvent::Timeout);
            });
            let _ = done_tx.send(());
        });
        done.recv_timeout(Duration::from_secs(20))
            .expect("the connection hung (or panicked) after its queue closed");
    }
}
