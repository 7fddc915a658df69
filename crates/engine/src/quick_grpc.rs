//! gRPC quick mode (`volley grpc ADDR --call pkg.Svc/Method`): unary calls with one constant
//! request message, `concurrency` callers multiplexed over `connections` HTTP/2 connections,
//! for a duration or a count — one more body on the VU scheduler ([`crate::vus`]), like
//! HTTP quick mode ([`crate::quick`]), and JS-free. The request is encoded once before the run
//! (by the caller); a call costs an `h2` stream and a few memory writes.
//!
//! Each connection is a VU whose one iteration connects, starts its share of the callers on
//! that connection, reconnects when the connection is lost, and ends when the `-n` budget, the
//! `-z` deadline or a stop ends it. Pacing: closed model (each caller sends its next call when
//! the previous one ended) or open model (`rate`: calls due on a [`RateSchedule`] claimed in
//! order by whichever caller is free; one claimed after it was due is a *missed start*, and
//! its latency also runs from when it was due: `grpc_req_corrected`).
//!
//! Files: this one (config, metric names, status names), `plan` (config → plan + factory,
//! result), `conn` (the connection and caller loops), `summary` (terminal and JSON summary
//! from a result file).

use crate::rate::RateSchedule;
use std::sync::Arc;
use std::time::Duration;

pub use crate::quick::DEADLINE_GRACE;
pub use plan::{plan, GrpcFactory, RUN_KIND};
pub use summary::GrpcSummary;

/// Calls by status (`status` tag: the code's canonical name, e.g. `OK`, `UNAVAILABLE`).
pub const GRPC_REQS: &str = "grpc_reqs";
/// Open model: a call's latency from when it was due (coordinated omission corrected).
pub const GRPC_REQ_CORRECTED: &str = "grpc_req_corrected";
/// Share of calls that did not end with OK.
pub const GRPC_REQ_FAILED: &str = "grpc_req_failed";
/// Failures that are no status the server sent, by class (`error` tag): `connect`,
/// `timeout` (the call's deadline passed), `reset`, `transport`.
pub const GRPC_ERRORS: &str = "grpc_errors";
/// TCP + TLS + HTTP/2 handshake.
pub const GRPC_CONNECTING: &str = "grpc_connecting";
pub const CONNECTIONS_OPENED: &str = "connections_opened";
pub const MISSED_STARTS: &str = "missed_starts";
/// Open model: calls that fell due while every caller was busy and never started.
pub const DROPPED_REQUESTS: &str = "dropped_requests";
/// Calls in flight when the run was cut (after the deadline's grace or Ctrl-C's).
pub const INTERRUPTED_REQUESTS: &str = "interrupted_requests";

/// The metrics a gRPC quick run records (k6's `grpc_req_duration` for the service time):
/// what `--threshold` may name.
pub const METRICS: &[&str] = &[
    volley_metrics::names::GRPC_REQ_DURATION,
    GRPC_REQS,
    GRPC_REQ_CORRECTED,
    GRPC_REQ_FAILED,
    GRPC_ERRORS,
    GRPC_CONNECTING,
    volley_metrics::names::DATA_SENT,
    volley_metrics::names::DATA_RECEIVED,
    CONNECTIONS_OPENED,
    MISSED_STARTS,
    DROPPED_REQUESTS,
    INTERRUPTED_REQUESTS,
];

/// The canonical status names by code (the gRPC spec's, as `grpc_reqs{status:...}` tags).
pub const STATUS_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// A status code's tag value: its canonical name, or `CODE_N` past the known ones.
pub fn status_name(code: u32) -> String {
    STATUS_NAMES
        .get(code as usize)
        .map_or_else(|| format!("CODE_{code}"), |n| (*n).to_owned())
}

/// Everything a gRPC quick run needs; built by the CLI from its flags.
#[derive(Clone)]
pub struct GrpcConfig {
    /// `host:port`.
    pub addr: String,
    /// `/pkg.Service/Method`.
    pub path: String,
    /// The request message, already encoded (sent as is by every call).
    pub message: Vec<u8>,
    pub metadata: volley_grpc::call::Metadata,
    /// Callers in total (calls in flight at most).
    pub concurrency: usize,
    /// HTTP/2 connections the callers share.
    pub connections: usize,
    pub duration: Option<Duration>,
    /// Calls in total.
    pub requests: Option<u64>,
    /// Open model: calls/s in total. None = closed model.
    pub rate: Option<RateSchedule>,
    /// Each call's deadline (sent as `grpc-timeout`).
    pub deadline: Duration,
    pub connect_timeout: Duration,
    /// None: plaintext (h2c with prior knowledge).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    pub authority: Option<String>,
    /// Worker threads; 0 = one per available core.
    pub threads: usize,
    /// The command line, for the result file.
    pub command: Vec<String>,
    /// What the result file's options show of the request (the call's JSON, the proto).
    pub describe: serde_json::Value,
}

impl std::fmt::Debug for GrpcConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcConfig")
            .field("addr", &self.addr)
            .field("path", &self.path)
            .field("concurrency", &self.concurrency)
            .field("connections", &self.connections)
            .finish_non_exhaustive()
    }
}

mod conn;
mod plan;
mod summary;
