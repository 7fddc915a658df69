//! WebSocket quick mode (`volley ws URL`): N connections send messages for a duration or a
//! count and time each message's echo — one more body on the VU scheduler ([`crate::vus`]),
//! like HTTP quick mode ([`crate::quick`]), and JS-free.
//!
//! Each connection is a VU whose one iteration connects (TCP, TLS, upgrade), then sends and
//! matches echoes until its share of `-n`, the `-z` deadline or a stop ends it, then closes
//! with 1000. Pacing: closed model (`inflight` messages outstanding per connection, one by
//! default: N go at open, then one more per echo) or open model (`rate`: messages due on a
//! [`RateSchedule`] shared by all connections, each owning every N-th arrival; a message is
//! sent when due whether or not earlier echoes came back, unless `inflight` caps what may be
//! outstanding: then it waits for an echo and counts as a missed start, and what is still
//! waiting at the end counts as dropped, as `volley http -q` does). Messages due together go
//! in one write; every frame one read brought in is handled before the next write or wait.
//! Round-trip time runs from the send (`ws_rtt`) and, in the open model, also from when the
//! message was due (`ws_rtt_corrected`, coordinated omission corrected).
//!
//! Matching echoes: a generated payload (no `--message`) starts with the message's sequence
//! number (16 hex digits), so an echo is matched to its own send even if the server drops
//! some; a fixed payload is matched first-in first-out (a received message that differs from
//! it is unmatched), which is exact for an echo server (one TCP stream keeps the order).
//!
//! Files: this one (config, metric names), `plan` (config → plan + factory, result), `conn`
//! (the connection loop), `summary` (terminal and JSON summary from a result file).

use crate::rate::RateSchedule;
use std::time::Duration;

pub use conn::DEADLINE_GRACE;
pub use plan::{plan, WsFactory, RUN_KIND};
pub use summary::WsSummary;

/// Round trip: from a message's send to its echo.
pub const WS_RTT: &str = "ws_rtt";
/// Open model: round trip from when the message was due.
pub const WS_RTT_CORRECTED: &str = "ws_rtt_corrected";
/// Failures by class (`error` tag): connect errors, refused upgrades, closes by the peer.
pub const WS_ERRORS: &str = "ws_errors";
/// Messages sent whose echo never came (cut at the end, or lost with their connection).
pub const WS_UNANSWERED: &str = "ws_msgs_unanswered";
/// Received messages that match no message sent (not an echo).
pub const WS_UNMATCHED: &str = "ws_msgs_unmatched";
/// Open model: messages sent late (the connection was busy, or `inflight` were outstanding).
pub const MISSED_STARTS: &str = "missed_starts";
/// Open model with `inflight`: messages due before the end that were never sent.
pub const DROPPED: &str = "dropped_messages";

/// The metrics a WebSocket quick run records (k6's `ws_*` names where k6 has one).
pub const METRICS: &[&str] = &[
    volley_metrics::names::WS_SESSIONS,
    volley_metrics::names::WS_CONNECTING,
    volley_metrics::names::WS_MSGS_SENT,
    volley_metrics::names::WS_MSGS_RECEIVED,
    volley_metrics::names::DATA_SENT,
    volley_metrics::names::DATA_RECEIVED,
    WS_RTT,
    WS_RTT_CORRECTED,
    WS_ERRORS,
    WS_UNANSWERED,
    WS_UNMATCHED,
    MISSED_STARTS,
    DROPPED,
];

/// What each message carries.
#[derive(Clone, Debug)]
pub enum Payload {
    /// Sequence number + filler up to this many bytes (at least 16).
    Generated { size: usize },
    /// The user's message, the same every time.
    Fixed(Vec<u8>),
}

/// Everything a WebSocket quick run needs; built by the CLI from its flags.
#[derive(Clone, Debug)]
pub struct WsConfig {
    /// `ws://` or `wss://` URL.
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// `Sec-WebSocket-Protocol` values offered.
    pub subprotocols: Vec<String>,
    /// Offer permessage-deflate (`--compression deflate`).
    pub compression: bool,
    pub payload: Payload,
    /// Send binary frames instead of text.
    pub binary: bool,
    pub connections: usize,
    pub duration: Option<Duration>,
    /// Messages in total (split evenly between connections).
    pub messages: Option<u64>,
    /// Open model: messages/s in total. None = closed model.
    pub rate: Option<RateSchedule>,
    /// Messages outstanding per connection at most. None: 1 in the closed model, no cap in
    /// the open model.
    pub inflight: Option<usize>,
    /// TCP + TLS + upgrade.
    pub connect_timeout: Duration,
    /// Longest wait for an echo before the connection counts it lost and reconnects.
    pub timeout: Duration,
    pub insecure: bool,
    pub cacert: Option<std::path::PathBuf>,
    /// Worker threads; 0 = one per available core.
    pub threads: usize,
    /// The command line, for the result file.
    pub command: Vec<String>,
}

mod conn;
mod plan;
mod summary;
