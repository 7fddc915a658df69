//! volley-demo-service: the realistic target behind `volley demo` — a small cloud drive with
//! auth, folders and files, chunked uploads, name search and a WebDAV subset, on embedded
//! SQLite and a local data directory. It mirrors the kind of service real teams benchmark
//! (login, listing, search, download, upload, WebDAV, mixed traffic), so Volley's example
//! suites and end-to-end tests have something worth measuring. The full API is in
//! `docs/demo-service.md`.
//!
//! It runs like the built-in target (`volley-testserver`): a hyper 1 server (HTTP/1.1 and h2c on
//! one port) on a dedicated tokio runtime, started with [`spawn`] (background thread, for
//! tests and the tour) or [`run_blocking`] (foreground, for `volley demo serve`).
//!
//! # Layout
//!
//! * `lib.rs` — configuration, [`spawn`], [`run_blocking`].
//! * `server` — accept loop, the hyper service, per-request metrics.
//! * `router` — method + path → handler, and the route label used in `/metrics`.
//! * `error` — [`ApiError`]: every failure is a JSON `{"error", "code"}` with a 4xx status
//!   (5xx only for real internal faults).
//! * `db` — storage: the operations both backends implement, row types; `db/sqlite.rs`
//!   (schema with the FTS5 name index, connection pool) and `db/pg.rs` (PostgreSQL).
//! * `auth` — argon2 password hashes, access/refresh sessions, cookies, CSRF.
//! * `accounts` — register, login, refresh, logout, current user.
//! * `files` — folders, direct uploads, downloads, listing, search, batch move.
//! * `chunked` — chunked uploads (init, chunks, complete).
//! * `store` — the blob directory: temp file → rename, so nothing is visible half-written.
//! * `multipart` — a streaming `multipart/form-data` parser (file parts go straight to disk).
//! * `range` — `Range: bytes=` parsing.
//! * `dav` — the WebDAV subset under `/dav/` (Basic auth).
//! * `metrics` — `/metrics` in Prometheus text format.
//! * `body` — the response body type (bytes in memory, or a file region streamed from disk).
//! * [`client`] — a tiny HTTP/1.1 client (hyper) used by [`seed`] and the tests.
//! * [`seed`] — `volley demo seed`: idempotent data set through the public API.
//!
//! # Data directory
//!
//! `demo.db` (SQLite, WAL; absent with a PostgreSQL database), `blobs/XY/<random hex>` (file contents), `tmp/` (uploads being
//! written), `chunks/<upload id>/<n>` (chunked uploads in progress).

mod accounts;
mod auth;
mod body;
mod chunked;
pub mod client;
mod dav;
mod db;
mod error;
mod files;
mod metrics;
mod multipart;
mod range;
mod router;
pub mod seed;
mod server;
mod store;

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use volley_testserver::harness::{self, Background};

pub use error::ApiError;

/// How to run the demo service.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// Address to bind; port 0 picks a free port.
    pub listen: SocketAddr,
    /// Directory for the database and file contents (created if missing).
    pub data_dir: PathBuf,
    /// Tokio worker threads (at least 1). Database work and password hashing run on tokio's
    /// blocking pool.
    pub threads: usize,
    /// Largest accepted upload (direct, chunked in total, or WebDAV PUT), in bytes.
    pub max_upload_bytes: u64,
    /// Largest accepted JSON request body, in bytes.
    pub max_json_bytes: u64,
    /// How long a connection may take to send a request's headers before it is closed (so a
    /// client that sends part of a head and stalls does not hold a connection forever); an idle
    /// keep-alive connection is closed after it too (hyper's `header_read_timeout`).
    pub header_read_timeout: std::time::Duration,
    /// `None`: SQLite in `data_dir/demo.db`; `Some(postgres://…)`: that PostgreSQL database
    /// (tables created if missing; `data_dir` still holds the file contents).
    pub database: Option<String>,
}

impl DemoConfig {
    /// Loopback, a free port, 2 threads, 1 GiB uploads, 1 MiB JSON bodies, 30 s to send a
    /// request head.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        DemoConfig {
            listen: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            data_dir: data_dir.into(),
            threads: 2,
            max_upload_bytes: 1 << 30,
            max_json_bytes: 1 << 20,
            header_read_timeout: std::time::Duration::from_secs(30),
            database: None,
        }
    }
}

/// A demo service serving on a background thread; dropping it stops the service.
pub struct RunningDemo {
    addr: SocketAddr,
    server: Background,
}

impl fmt::Debug for RunningDemo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunningDemo")
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

impl RunningDemo {
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://IP:PORT` (a wildcard bind address is shown as loopback).
    pub fn url(&self) -> String {
        url(self.addr)
    }

    /// Stops accepting and returns once the service's thread and runtime are gone.
    pub fn shutdown(mut self) {
        self.server.stop();
    }
}

/// `http://IP:PORT` for a bound address.
pub fn url(addr: SocketAddr) -> String {
    harness::url("http", addr)
}

/// Opens the data directory and database, builds the runtime and binds the socket.
fn prepare(config: &DemoConfig) -> io::Result<(Runtime, TcpListener, Arc<server::App>)> {
    let app = Arc::new(server::App::open(config)?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.threads.max(1))
        .max_blocking_threads(16)
        .thread_name("volley-demo")
        .enable_io()
        .enable_time()
        .build()?;
    let listener = harness::bind(&runtime, config.listen)?;
    Ok((runtime, listener, app))
}

/// Starts the service on a dedicated thread with its own runtime; returns once listening.
pub fn spawn(config: DemoConfig) -> io::Result<RunningDemo> {
    let (runtime, listener, app) = prepare(&config)?;
    let addr = listener.local_addr()?;
    let server = harness::spawn_background("volley-demo-accept", runtime, move |stop| {
        server::serve(listener, app, stop)
    })?;
    Ok(RunningDemo { addr, server })
}

/// Runs the service in the foreground until SIGINT or SIGTERM; `on_bound` gets the bound
/// address once listening.
pub fn run_blocking(config: DemoConfig, on_bound: impl FnOnce(SocketAddr)) -> io::Result<()> {
    let (runtime, listener, app) = prepare(&config)?;
    let addr = listener.local_addr()?;
    harness::run_foreground(
        runtime,
        || on_bound(addr),
        |stop| server::serve(listener, app, stop),
    )
}
