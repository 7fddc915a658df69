//! k6's built-in metric names (and Volley's own additions), spelled once.
//!
//! Every crate that records or reads a built-in metric uses these constants, so a typo is a
//! compile error and [`BUILTIN`] is the one table of kinds (a custom metric may not reuse a
//! built-in name with another kind, as in k6).

use crate::MetricKind;

pub const HTTP_REQS: &str = "http_reqs";
pub const HTTP_REQ_DURATION: &str = "http_req_duration";
pub const HTTP_REQ_BLOCKED: &str = "http_req_blocked";
pub const HTTP_REQ_CONNECTING: &str = "http_req_connecting";
pub const HTTP_REQ_TLS_HANDSHAKING: &str = "http_req_tls_handshaking";
pub const HTTP_REQ_SENDING: &str = "http_req_sending";
pub const HTTP_REQ_WAITING: &str = "http_req_waiting";
pub const HTTP_REQ_RECEIVING: &str = "http_req_receiving";
pub const HTTP_REQ_FAILED: &str = "http_req_failed";
pub const ITERATIONS: &str = "iterations";
pub const ITERATION_DURATION: &str = "iteration_duration";
pub const DROPPED_ITERATIONS: &str = "dropped_iterations";
pub const VUS: &str = "vus";
pub const VUS_MAX: &str = "vus_max";
pub const CHECKS: &str = "checks";
pub const GROUP_DURATION: &str = "group_duration";
pub const DATA_SENT: &str = "data_sent";
pub const DATA_RECEIVED: &str = "data_received";
pub const WS_SESSIONS: &str = "ws_sessions";
pub const WS_CONNECTING: &str = "ws_connecting";
pub const WS_SESSION_DURATION: &str = "ws_session_duration";
pub const WS_MSGS_SENT: &str = "ws_msgs_sent";
pub const WS_MSGS_RECEIVED: &str = "ws_msgs_received";
pub const WS_PING: &str = "ws_ping";
pub const GRPC_REQ_DURATION: &str = "grpc_req_duration";
pub const GRPC_STREAMS: &str = "grpc_streams";
pub const GRPC_STREAMS_MSGS_SENT: &str = "grpc_streams_msgs_sent";
pub const GRPC_STREAMS_MSGS_RECEIVED: &str = "grpc_streams_msgs_received";
/// Volley's own: arrival-rate iterations timed from when they were due (coordinated omission).
pub const ITERATION_DURATION_CORRECTED: &str = "iteration_duration_corrected";
/// Volley's own: iterations that threw (k6 only logs them).
pub const ITERATION_ERRORS: &str = "iteration_errors";

/// The built-in metrics a script's thresholds may name, with their kinds.
pub const BUILTIN: &[(&str, MetricKind)] = &[
    (HTTP_REQS, MetricKind::Counter),
    (HTTP_REQ_DURATION, MetricKind::Trend),
    (HTTP_REQ_BLOCKED, MetricKind::Trend),
    (HTTP_REQ_CONNECTING, MetricKind::Trend),
    (HTTP_REQ_TLS_HANDSHAKING, MetricKind::Trend),
    (HTTP_REQ_SENDING, MetricKind::Trend),
    (HTTP_REQ_WAITING, MetricKind::Trend),
    (HTTP_REQ_RECEIVING, MetricKind::Trend),
    (HTTP_REQ_FAILED, MetricKind::Rate),
    (ITERATIONS, MetricKind::Counter),
    (ITERATION_DURATION, MetricKind::Trend),
    (DROPPED_ITERATIONS, MetricKind::Counter),
    (ITERATION_DURATION_CORRECTED, MetricKind::Trend),
    (VUS, MetricKind::Gauge),
    (VUS_MAX, MetricKind::Gauge),
    (CHECKS, MetricKind::Rate),
    (GROUP_DURATION, MetricKind::Trend),
    (DATA_SENT, MetricKind::Counter),
    (DATA_RECEIVED, MetricKind::Counter),
    (WS_SESSIONS, MetricKind::Counter),
    (WS_CONNECTING, MetricKind::Trend),
    (WS_SESSION_DURATION, MetricKind::Trend),
    (WS_MSGS_SENT, MetricKind::Counter),
    (WS_MSGS_RECEIVED, MetricKind::Counter),
    (WS_PING, MetricKind::Trend),
    (GRPC_REQ_DURATION, MetricKind::Trend),
    (GRPC_STREAMS, MetricKind::Counter),
    (GRPC_STREAMS_MSGS_SENT, MetricKind::Counter),
    (GRPC_STREAMS_MSGS_RECEIVED, MetricKind::Counter),
];

/// The kind of built-in metric `name`, if it is one.
pub fn builtin_kind(name: &str) -> Option<MetricKind> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
}
