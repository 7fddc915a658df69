//! Things that happened to a run from outside its load (faults injected by `--fault`, a
//! service killed and restarted): a list on the result file's timeline, so the summary, the
//! HTML report and a reader of the file see when the metrics changed for a reason.

use serde::{Deserialize, Serialize};

/// One event: a window (`end_s` set) or an instant, in seconds since the run started.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Event {
    /// What it was: `latency`, `bandwidth`, `reset`, `blackhole`, `slow_close`,
    /// `limit_data`, `kill`, `term`, `pause`, `restart`.
    pub kind: String,
    /// What it hit: a proxy or service name, or `pid:N`.
    pub target: String,
    /// Seconds since the start of the run.
    pub at_s: f64,
    /// When the window closed (`None`: an instant, or still open when the run ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_s: Option<f64>,
    /// The fault as written (`latency=200ms,jitter=20ms`).
    #[serde(default)]
    pub detail: String,
    /// Connections the fault acted on (proxy faults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affected: Option<u64>,
    /// Why the fault could not be applied, if it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Event {
    /// `latency=200ms on api 10s–15s, 1,234 connections affected` (the summary's line).
    pub fn describe(&self) -> String {
        let when = match self.end_s {
            Some(e) => format!("{}–{}", secs(self.at_s), secs(e)),
            None => format!("at {}", secs(self.at_s)),
        };
        let what = if self.detail.is_empty() {
            self.kind.clone()
        } else {
            self.detail.clone()
        };
        let mut s = format!("{what} on {} {when}", self.target);
        if let Some(n) = self.affected {
            let conns = if n == 1 { "connection" } else { "connections" };
            s.push_str(&format!(", {} {conns} affected", crate::fmt::count(n)));
        }
        if let Some(e) = &self.error {
            s.push_str(&format!(" (failed: {e})"));
        }
        s
    }
}

/// The summary's lines for a run's events (`fault: latency=200ms on api 10s–15s, ...`), as
/// the run printed them and `volley summary` prints them again from the file.
pub fn summary_lines(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| format!("fault: {}", e.describe()))
        .collect()
}

/// `10s`, `2.5s`: whole seconds without decimals.
fn secs(s: f64) -> String {
    if (s - s.round()).abs() < 0.05 {
        format!("{}s", s.round() as i64)
    } else {
        format!("{s:.1}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_a_window_with_affected_connections() {
        let e = Event {
            kind: "latency".into(),
            target: "api".into(),
            at_s: 10.0,
            end_s: Some(15.0),
            detail: "latency 200ms".into(),
            affected: Some(1234),
            error: None,
        };
        assert_eq!(
            e.describe(),
            "latency 200ms on api 10s–15s, 1,234 connections affected"
        );
    }
}
