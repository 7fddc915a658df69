//! volley-testserver: Volley's built-in HTTP server (`volley target`), a fast, deterministic,
//! httpbin-like target for Volley's own tests, examples and benchmarks.
//!
//! It speaks HTTP/1.1 (keep-alive, pipelining) and HTTP/2 on the same port — h2c with prior
//! knowledge in plain text, ALPN `h2`/`http/1.1` when TLS is configured. Every response is
//! deterministic; `GET /` is a pre-built static response so benchmarks measure the client,
//! not the target.
//!
//! # Layout
//!
//! * `lib.rs` — configuration, [`spawn`] (background thread, for tests) and [`run_blocking`]
//!   (foreground, for the CLI).
//! * `server` — accept loop, per-connection setup, the hyper service.
//! * `routes` — the endpoints below.
//! * `body` — the single response body type (static bytes or the streamed `/bytes` pattern).
//! * `meter` — wire-level byte/request/connection counters (see *Counting* below).
//! * `tls` — PEM identity → rustls acceptor.
//! * `ws` — the `/ws/echo` WebSocket endpoint and its test commands.
//! * `grpc` — the gRPC service `volley.target.Target` (`examples/grpc/target.proto`) and
//!   server reflection, on the same port (requests with `content-type: application/grpc`).
//! * `ws_chat` — `/ws/chat`: WebSocket rooms that broadcast every message to every member.
//! * `gate` — [`Limits`]: bounded workers (a known capacity) and failing above a rate.
//! * `codec` — base64, percent-decoding, query and cookie parsing.
//!
//! # Endpoints
//!
//! Any method is accepted unless noted. JSON responses have `Content-Type: application/json`.
//!
//! | path | response |
//! |---|---|
//! | `/` | 200 `text/plain` `Hello, world!` (13 bytes) |
//! | `/bytes/N` | 200, N bytes of `abc…xyzabc…` (byte *i* is `b'a' + i % 26`), `Content-Length: N`, streamed in 64 KiB frames; N > 1 GiB → 400 |
//! | `/delay/MS` | sleeps MS ms (clamped to 60 000), then 200 `{"delay_ms": MS}` |
//! | `/status/CODE` | that status with `{"status": CODE}` (no body for 204, 205, 304); CODE outside 200..=599 → 400 |
//! | `/echo`, `/echo/...` | 200, the request as JSON (shape below); body over 16 MiB → 413 |
//! | `/get` | like `/echo`, GET/HEAD only (else 405) |
//! | `/headers` | 200 `{"headers": {...}}` |
//! | `/cookies` | 200 `{"cookies": {name: value}}` from the `Cookie` header(s) |
//! | `/cookies/set?k=v&...` | 200, `Set-Cookie: k=v; Path=/` per pair, body `{"cookies": ...}` = request cookies with the new ones merged in |
//! | `/cookies/delete?k&...` | 200, an expiring `Set-Cookie` per name, body `{"cookies": ...}` = request cookies minus those |
//! | `/redirect/N` | 302, `Location: /redirect/{N-1}`, or `/get` when N = 1; N = 0 → 400 |
//! | `/redirect-to?url=U&status_code=C` | C (300..=308, default 302) with `Location: U` |
//! | `/basic-auth/U/P` | 200 `{"authenticated": true, "user": U}` if `Authorization: Basic` matches, else 401 `{"authenticated": false}` with `WWW-Authenticate: Basic realm="volley"` |
//! | `/bearer` | 200 `{"authenticated": true, "token": T}` for `Authorization: Bearer T`, else 401 with `WWW-Authenticate: Bearer` |
//! | `POST /volley.target.Target/*` | gRPC (`content-type: application/grpc*`, HTTP/2): Echo, Count, Sum, Chat, Fail, Slow and reflection (v1, v1alpha); see `grpc` |
//! | `/ws/echo` | WebSocket echo (upgrade; commands for server-initiated close, ping, bursts: see `ws`) |
//! | `/ws/chat?room=NAME` | WebSocket broadcast: every message goes to every client in the room, the sender too |
//! | `/upload` | POST/PUT (else 405): reads the body frame by frame without buffering, 200 `{"bytes": N}` |
//! | `/stats` | 200 `{"requests", "bytes_received", "bytes_sent", "connections"}` (numbers), `"peers"` (distinct client IPs, at most 64) |
//! | `/metrics` | Prometheus text: `volley_target_{requests,bytes_received,bytes_sent,connections}_total` |
//! | anything else | 404 `{"error": "not found", "path": PATH}` |
//!
//! [`TargetConfig::delay_all`] delays every endpoint except `/stats` and `/metrics`. With
//! [`Limits`] ([`spawn_limited`], `volley target --workers N --fail-above RPS`) at most N
//! requests are in service (each for the delay) and the rest queue, so the capacity is
//! N × 1000 / delay requests per second; above RPS arrivals per second requests get 500.
//!
//! ## `/echo` shape
//!
//! ```json
//! {
//!   "method": "POST",
//!   "path": "/echo",
//!   "version": "HTTP/1.1",
//!   "args": {"q": "1"},
//!   "headers": {"content-type": "text/plain", "x-many": "a, b"},
//!   "body": "hello",
//!   "body_base64": false
//! }
//! ```
//!
//! `path` is the raw (undecoded) path; `version` is `HTTP/1.0`, `HTTP/1.1` or `HTTP/2.0`
//! (over HTTP/2 the authority travels in the URI, so there is no `host` header to echo).
//! `args` holds the percent-decoded query pairs; header names are lowercase. In both, a
//! repeated name's values are joined with `", "`. `body` is the body as UTF-8 text, or its
//! standard base64 when it is not valid UTF-8, in which case `body_base64` is `true`.
//!
//! # Counting
//!
//! `requests` counts requests dispatched to an endpoint other than `/stats` and `/metrics`
//! (counted when dispatched, before any `delay_all`). `bytes_received` and
//! `bytes_sent` are TCP payload bytes (below TLS and HTTP framing) and `connections` counts
//! accepted connections, with one rule so that reading the stats does not disturb them:
//!
//! **A connection whose first request is `/stats` or `/metrics` is a monitoring connection:
//! none of its bytes are counted and it is not counted as a connection** (requests to other
//! endpoints it carries later still count in `requests`, their bytes do not). Every other
//! connection counts all of its bytes, including those of any `/stats` request it carries
//! later (that request is still not in `requests`). So reading `/stats` on a fresh connection
//! (as the tests do, with `Connection: close`) is exact: `bytes_received`/`bytes_sent` equal
//! what the measured clients wrote/read. Byte counts are live for open keep-alive connections.

mod body;
mod codec;
mod gate;
mod grpc;
pub mod harness;
mod meter;
mod routes;
mod server;
mod tls;
mod ws;
mod ws_chat;

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::runtime::Runtime;

pub use crate::gate::Limits;
use crate::harness::Background;
use crate::meter::Counters;
use crate::server::Shared;

/// How to run the target.
#[derive(Debug, Clone)]
pub struct TargetConfig {
    /// Address to bind; port 0 picks a free port (see [`RunningTarget::local_addr`]).
    pub listen: SocketAddr,
    /// Tokio worker threads (at least 1 is used).
    pub threads: usize,
    /// Serve HTTPS instead of plain HTTP.
    pub tls: Option<TlsIdentity>,
    /// Latency added to every request except `/stats` and `/metrics`, for A/B tests.
    pub delay_all: Option<Duration>,
}

impl Default for TargetConfig {
    /// `127.0.0.1:0`, one worker thread, plain HTTP, no added delay.
    fn default() -> Self {
        TargetConfig {
            listen: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            threads: 1,
            tls: None,
            delay_all: None,
        }
    }
}

/// A TLS certificate chain and its private key, both PEM-encoded.
#[derive(Clone)]
pub struct TlsIdentity {
    pub cert_chain_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
}

impl fmt::Debug for TlsIdentity {
    // Never print the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsIdentity")
            .field(
                "cert_chain_pem",
                &format_args!("{} bytes", self.cert_chain_pem.len()),
            )
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

/// Totals since start, counted as described in the crate docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub requests: u64,
    pub bytes_received: u64,
    pub bytes_sent: u64,
    pub connections: u64,
}

/// A target serving on a background thread. Dropping it stops the target, like
/// [`RunningTarget::shutdown`].
pub struct RunningTarget {
    addr: SocketAddr,
    tls: bool,
    counters: Arc<Counters>,
    server: Background,
}

impl fmt::Debug for RunningTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunningTarget")
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

impl RunningTarget {
    /// The bound address (with the real port when the config asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://IP:PORT` or `https://IP:PORT`; a wildcard bind address is shown as loopback so
    /// the URL can be used to connect.
    pub fn url(&self) -> String {
        url(self.addr, self.tls)
    }

    /// Current totals (the same numbers `/stats` reports).
    pub fn stats(&self) -> Stats {
        self.counters.snapshot()
    }

    /// The distinct client addresses seen so far (at most 64; `/stats`' `peers`).
    pub fn peers(&self) -> Vec<std::net::IpAddr> {
        self.counters.peers()
    }

    /// Stops accepting, ends open connections, and returns once the target's thread and
    /// runtime are gone.
    pub fn shutdown(mut self) {
        self.server.stop();
    }
}

fn url(addr: SocketAddr, tls: bool) -> String {
    harness::url(if tls { "https" } else { "http" }, addr)
}

/// Builds everything that can fail before serving: runtime, TLS config, listening socket.
fn prepare(
    config: &TargetConfig,
    limits: Limits,
) -> io::Result<(Runtime, TcpListener, Arc<Shared>)> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.threads.max(1))
        .thread_name("volley-testserver")
        .enable_io()
        .enable_time()
        .build()?;
    let tls = config.tls.as_ref().map(tls::acceptor).transpose()?;
    let mut shared = Shared::new(config.delay_all, tls);
    shared.gate = gate::Gate::new(limits).map(Arc::new);
    let shared = Arc::new(shared);
    let listener = harness::bind(&runtime, config.listen)?;
    Ok((runtime, listener, shared))
}

/// Starts the target on a dedicated thread with its own tokio runtime, so callers need no
/// runtime. Returns once the socket is bound and listening.
pub fn spawn(config: TargetConfig) -> io::Result<RunningTarget> {
    spawn_limited(config, Limits::default())
}

/// [`spawn`] with a bounded capacity ([`Limits`]).
pub fn spawn_limited(config: TargetConfig, limits: Limits) -> io::Result<RunningTarget> {
    let (runtime, listener, shared) = prepare(&config, limits)?;
    let addr = listener.local_addr()?;
    let counters = shared.counters.clone();
    let server = harness::spawn_background("volley-testserver-accept", runtime, move |stop| {
        server::serve(listener, shared, stop)
    })?;
    Ok(RunningTarget {
        addr,
        tls: config.tls.is_some(),
        counters,
        server,
    })
}

/// Runs the target in the foreground until SIGINT (ctrl-c) or SIGTERM. `on_bound` is called
/// with the bound address once the target is listening (the CLI prints it; important with
/// port 0).
pub fn run_blocking(config: TargetConfig, on_bound: impl FnOnce(SocketAddr)) -> io::Result<()> {
    run_blocking_limited(config, Limits::default(), on_bound)
}

/// [`run_blocking`] with a bounded capacity ([`Limits`]).
pub fn run_blocking_limited(
    config: TargetConfig,
    limits: Limits,
    on_bound: impl FnOnce(SocketAddr),
) -> io::Result<()> {
    let (runtime, listener, shared) = prepare(&config, limits)?;
    let addr = listener.local_addr()?;
    harness::run_foreground(
        runtime,
        || on_bound(addr),
        |stop| server::serve(listener, shared, stop),
    )
}

#[cfg(test)]
mod tests;
