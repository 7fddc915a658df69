//! The protocol's messages (JSON bodies) and the rules both sides share: paths, the token
//! check, how N instances split the test into execution segments.
//!
//! Every request is a `POST` with `Authorization: Bearer TOKEN`; the coordinator answers
//! 401 to a missing or wrong token, 409 to another Volley version, 410 when the run is
//! over or full. docs/distributed-protocol.md describes the flow.

use serde::{Deserialize, Serialize};
use volley_metrics::{MetricTotal, Point, RunResult};

/// The protocol's version, in every path: a coordinator refuses agents of another one
/// (and of another Volley version, see [`Register`]).
pub const PREFIX: &str = "/v1";
pub const REGISTER: &str = "/v1/register";
pub const READY: &str = "/v1/ready";
pub const SNAPSHOT: &str = "/v1/snapshot";
pub const TEARDOWN: &str = "/v1/teardown";
pub const FINAL: &str = "/v1/final";
pub const FAILED: &str = "/v1/failed";

/// Largest request body the coordinator reads (a final result with its histograms and
/// series; an archive goes the other way).
pub const MAX_BODY: usize = 256 << 20;

/// How long a long-poll (`ready`, `teardown`) is held before the agent asks again: short,
/// so that an agent that asks is known to be alive.
pub const POLL_HOLD_MS: u64 = 1000;

/// Volley's version: the coordinator and its agents must run the same one (the archive's
/// code and the result file's shape depend on it).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Agent → coordinator: who it is.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Register {
    pub name: String,
    pub version: String,
}

/// Coordinator → agent: its part of the test.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Assignment {
    /// The agent's id in every later request.
    pub agent: usize,
    /// Which segment (0-based); agent 0 runs `setup()` and `teardown()`.
    pub index: usize,
    pub instances: usize,
    /// `--execution-segment` and `--execution-segment-sequence` of this agent.
    pub segment: String,
    pub sequence: String,
    /// The archive (`volley archive`'s tar), base64.
    pub archive: String,
    /// `-e KEY=VALUE` given to the coordinator.
    pub env: Vec<(String, String)>,
}

/// Agent → coordinator: setup is over (agent 0 sends its data); wait for the start.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct Ready {
    pub agent: usize,
    /// `setup()`'s return value as JSON (agent 0).
    pub setup_data: Option<String>,
}

/// The coordinator's answer to a long-poll and a snapshot.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct Reply {
    /// Go on (the barrier passed, teardown may run).
    pub go: bool,
    /// Stop the test (abortOnFail, Ctrl-C on the coordinator, agent loss with `abort`).
    pub stop: bool,
    /// Give up: the run cannot start (start timeout) — with why.
    pub fail: Option<String>,
    /// `setup()`'s data for every agent (with `go` on `ready`).
    pub setup_data: Option<String>,
}

/// Agent → coordinator, once a second: its running totals (whole-run, so a lost message
/// loses nothing) and the one-second points since the last snapshot.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct Snapshot {
    pub agent: usize,
    /// Wall clock of the agent's run start (its series' t = 0).
    pub started_unix_ms: u64,
    pub elapsed_s: f64,
    pub metrics: Vec<MetricTotal>,
    pub points: Vec<Point>,
}

/// Agent → coordinator at its end: the whole result.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Final {
    pub agent: usize,
    pub result: RunResult,
    /// An error in teardown (agent 0).
    pub teardown_error: Option<String>,
    /// Why the test stopped early on this agent (`exec.test.abort()`).
    pub aborted: Option<String>,
}

/// Agent → coordinator: its part cannot run (the script failed to prepare: a syntax error,
/// an exception in init code, bad options). The coordinator ends the run at once with the
/// error rather than waiting for `--start-timeout`.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Failed {
    pub agent: usize,
    pub error: String,
    /// The exit code the agent ends with (k6's: 107 script error, 104 bad options).
    pub code: i32,
}

/// Agent 0's teardown request.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct AgentId {
    pub agent: usize,
}

/// The segment sequence of `n` equal parts (`0,1/n,...,1`) and part `i`'s segment.
pub fn segment(i: usize, n: usize) -> (String, String) {
    let frac = |k: usize| match k {
        0 => "0".to_string(),
        k if k == n => "1".to_string(),
        k => format!("{k}/{n}"),
    };
    let sequence: Vec<String> = (0..=n).map(frac).collect();
    (format!("{}:{}", frac(i), frac(i + 1)), sequence.join(","))
}

/// Compares a presented token with the expected one in time that does not depend on where
/// they differ (the coordinator's port is a way into the cluster).
pub fn token_ok(expected: &str, presented: Option<&str>) -> bool {
    let Some(p) = presented else {
        return false;
    };
    let (a, b) = (expected.as_bytes(), p.as_bytes());
    let mut diff = (a.len() != b.len()) as u8;
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0xff);
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_cover_the_whole_in_order() {
        assert_eq!(segment(0, 3), ("0:1/3".into(), "0,1/3,2/3,1".into()));
        assert_eq!(segment(2, 3).0, "2/3:1");
        assert_eq!(segment(0, 1), ("0:1".into(), "0,1".into()));
    }

    #[test]
    fn tokens_must_match_exactly() {
        assert!(token_ok("s3cret", Some("s3cret")));
        assert!(!token_ok("s3cret", Some("s3cre")));
        assert!(!token_ok("s3cret", Some("s3cretx")));
        assert!(!token_ok("s3cret", Some("S3cret")));
        assert!(!token_ok("s3cret", None));
        assert!(!token_ok("", Some("x")));
    }
}
