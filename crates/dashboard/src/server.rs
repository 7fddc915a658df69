//! The web server: its own thread and current-thread tokio runtime, hyper's HTTP/1.1, the
//! page's routes and one server-sent-event stream per browser.
//!
//! The run never waits on a browser: [`Hub::broadcast`] only `try_send`s into each client's
//! bounded channel, and a client whose channel is full (it stopped reading) is dropped and its
//! connection closed.

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, HOST};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};

use crate::feed::History;

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const APP_CSS: &str = include_str!("../assets/app.css");

/// Events a browser may fall behind by before it is dropped (one a second: half a minute).
pub const CLIENT_BUFFER: usize = 32;
/// Browsers following the events at once; more get 503.
pub const MAX_CLIENTS: usize = 16;
/// Open connections at once; more are closed on accept (memory stays bounded).
const MAX_CONNECTIONS: usize = 64;

/// A browser following `/events`.
struct Client {
    tx: mpsc::Sender<Bytes>,
    /// Closes the client's connection (hyper may be stuck writing to a full socket).
    kill: Arc<Notify>,
}

/// What the run publishes and the server reads.
#[derive(Default)]
pub(crate) struct State {
    /// `hello` event data: the command line.
    pub hello: String,
    pub history: Option<History>,
    /// The newest snapshot's JSON without its closing brace and points (see `snapshot`).
    pub head: Option<String>,
    /// `end` event data, once the run is over.
    pub end: Option<String>,
    pub report: Option<Arc<str>>,
    clients: Vec<Client>,
}

pub(crate) struct Hub {
    pub state: Mutex<State>,
    /// Bound to a loopback address: requests must name a loopback host (DNS rebinding).
    pub loopback: bool,
    connections: AtomicUsize,
    /// Event streams hyper still holds.
    pub streams: AtomicUsize,
}

/// One server-sent event.
pub(crate) fn sse(event: &str, data: &str) -> Bytes {
    Bytes::from(format!("event: {event}\ndata: {data}\n\n"))
}

/// A snapshot event: `head` closed with the points' JSON (a list's inside).
pub(crate) fn snapshot(head: &str, points: &str) -> Bytes {
    sse("snapshot", &format!("{head},\"points\":[{points}]}}"))
}

impl Hub {
    pub fn new(loopback: bool, hello: String) -> Hub {
        Hub {
            state: Mutex::new(State {
                hello,
                ..State::default()
            }),
            loopback,
            connections: AtomicUsize::new(0),
            streams: AtomicUsize::new(0),
        }
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    /// Send `msg` to every client without waiting; laggards and gone clients are dropped.
    pub fn broadcast(&mut self, msg: &Bytes) {
        self.clients.retain(|c| match c.tx.try_send(msg.clone()) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                c.kill.notify_one();
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        });
    }

    /// After the end event: streams finish once drained.
    pub fn close_all(&mut self) {
        self.clients.clear();
    }

    pub fn clients(&self) -> usize {
        self.clients.len()
    }

    /// What a browser connecting now gets first: the run so far.
    fn catch_up(&self) -> Vec<Bytes> {
        let mut out = vec![Bytes::from_static(b"retry: 3000\n\n")];
        out.push(sse("hello", &self.hello));
        if let (Some(head), Some(h)) = (&self.head, &self.history) {
            out.push(snapshot(head, &h.json_list()));
        }
        if let Some(end) = &self.end {
            out.push(sse("end", end));
        }
        out
    }
}

/// A response body: a whole asset or the event stream.
pub(crate) enum Out {
    Full(Option<Bytes>),
    Events {
        rx: mpsc::Receiver<Bytes>,
        _open: Open,
    },
}

/// Counts an event stream while hyper holds it (the dashboard lets open streams drain a
/// moment before it stops, so browsers get the `end` event).
pub(crate) struct Open(Arc<Hub>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.streams.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Body for Out {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Out::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Out::Events { rx, .. } => rx.poll_recv(cx).map(|m| m.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Out::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Out::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            Out::Events { .. } => SizeHint::default(),
        }
    }
}

/// Accept until the task is dropped (the runtime shuts down with the [`crate::Dashboard`]).
pub(crate) async fn serve(listener: TcpListener, hub: Arc<Hub>) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            // EMFILE and the like: wait a little rather than spin.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        };
        if hub.connections.fetch_add(1, Ordering::Relaxed) >= MAX_CONNECTIONS {
            hub.connections.fetch_sub(1, Ordering::Relaxed);
            continue;
        }
        tokio::spawn(connection(tcp, hub.clone()));
    }
}

async fn connection(tcp: TcpStream, hub: Arc<Hub>) {
    let kill = Arc::new(Notify::new());
    let (h, k) = (hub.clone(), kill.clone());
    let svc = hyper::service::service_fn(move |req| {
        let r = route(&h, &req, &k);
        async move { Ok::<_, Infallible>(r) }
    });
    let conn = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tcp), svc);
    tokio::select! {
        _ = conn => {}
        _ = kill.notified() => {}
    }
    hub.connections.fetch_sub(1, Ordering::Relaxed);
}

fn respond(status: StatusCode, ctype: &'static str, body: impl Into<Bytes>) -> Response<Out> {
    let mut r = Response::new(Out::Full(Some(body.into())));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    r
}

const TEXT: &str = "text/plain; charset=utf-8";

/// Is the `Host` header one a browser sends for a loopback URL? (A page on another site that
/// rebinds its name to 127.0.0.1 sends its own name.)
fn loopback_host(host: Option<&str>) -> bool {
    let Some(host) = host else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(n, _)| n),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn route(
    hub: &Arc<Hub>,
    req: &Request<hyper::body::Incoming>,
    kill: &Arc<Notify>,
) -> Response<Out> {
    let host = req.headers().get(HOST).and_then(|h| h.to_str().ok());
    if hub.loopback && !loopback_host(host) {
        return respond(
            StatusCode::FORBIDDEN,
            TEXT,
            "the dashboard answers only to loopback host names (127.0.0.1, [::1], localhost)\n",
        );
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return respond(StatusCode::METHOD_NOT_ALLOWED, TEXT, "GET only\n");
    }
    match req.uri().path() {
        "/" | "/index.html" => {
            let mut r = respond(StatusCode::OK, "text/html; charset=utf-8", INDEX_HTML);
            r.headers_mut().insert(
                "content-security-policy",
                HeaderValue::from_static(
                    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:",
                ),
            );
            r
        }
        "/app.js" => respond(StatusCode::OK, "text/javascript; charset=utf-8", APP_JS),
        "/app.css" => respond(StatusCode::OK, "text/css; charset=utf-8", APP_CSS),
        "/events" => events(hub, kill),
        "/report" => match hub.lock().report.clone() {
            Some(html) => {
                let mut r = respond(
                    StatusCode::OK,
                    "text/html; charset=utf-8",
                    Bytes::from(html.as_bytes().to_vec()),
                );
                r.headers_mut().insert(
                    "content-security-policy",
                    HeaderValue::from_static(
                        "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
                    ),
                );
                r
            }
            None => respond(
                StatusCode::NOT_FOUND,
                TEXT,
                "the report is ready when the run ends\n",
            ),
        },
        _ => respond(StatusCode::NOT_FOUND, TEXT, "not found\n"),
    }
}

fn events(hub: &Arc<Hub>, kill: &Arc<Notify>) -> Response<Out> {
    let mut st = hub.lock();
    if st.clients.len() >= MAX_CLIENTS {
        return respond(
            StatusCode::SERVICE_UNAVAILABLE,
            TEXT,
            "too many dashboard clients\n",
        );
    }
    let first = st.catch_up();
    let (tx, rx) = mpsc::channel(CLIENT_BUFFER + first.len());
    for m in first {
        let _ = tx.try_send(m);
    }
    // After the end there is nothing more: the stream ends once the catch-up is read.
    if st.end.is_none() {
        st.clients.push(Client {
            tx,
            kill: kill.clone(),
        });
    }
    drop(st);
    hub.streams.fetch_add(1, Ordering::Relaxed);
    let mut r = Response::new(Out::Events {
        rx,
        _open: Open(hub.clone()),
    });
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_loopback_host_names_pass_on_a_loopback_address() {
        let ok = |h: &str| super::loopback_host(Some(h));
        for h in [
            "127.0.0.1:5665",
            "127.0.0.1",
            "localhost:80",
            "LOCALHOST",
            "[::1]:5665",
        ] {
            assert!(ok(h), "{h}");
        }
        for h in [
            "evil.example:5665",
            "10.0.0.1:5665",
            "[::2]:1",
            "localhost.evil.example",
        ] {
            assert!(!ok(h), "{h}");
        }
        assert!(!super::loopback_host(None));
    }
}
