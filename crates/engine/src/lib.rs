//! volley-engine: runs load and turns it into results.
//!
//! The engine knows nothing about JavaScript or the command line. Layout:
//! - [`control`]: the stop switches a run shares with signal handlers (graceful, then hard).
//! - [`executor`]: k6's six executors (one file each) and the scenarios that use them.
//! - [`vus`]: the VU scheduler: scenarios run concurrently from one pool of VUs.
//! - [`segment`]: execution segments (k6's striping): one instance's share of a split test.
//! - [`rate`]: open-model pacing (constant rate or linear `target:duration` stages).
//! - [`quick`]: quick mode (`volley http`) as a body on the [`vus`] scheduler: a VU per
//!   connection whose one iteration drives it (closed or open model, pipelining, HTTP/2);
//!   [`quick::plan`] gives a run layer the plan and the body factory.
//! - [`quick_ws`]: WebSocket quick mode (`volley ws`): the same shape for echo round trips.
//! - [`quick_grpc`]: gRPC quick mode (`volley grpc`): unary calls multiplexed on HTTP/2.
//! - [`summary`]: the quick-mode summary (terminal text and `--json`) computed from a
//!   [`volley_metrics::RunResult`] alone, so `volley summary run.json` prints the same thing.
//! - [`sys`]: process facts (peak RSS).
//! - [`log`]: k6's log lines (logfmt, its terminal form, json, raw) for every part of a run.

pub mod control;
pub mod duration;
pub mod executor;
pub mod log;
pub mod quick;
pub mod quick_grpc;
pub mod quick_ws;
pub mod rate;
pub mod segment;
pub mod summary;
pub mod sys;
pub mod vus;

pub use control::RunControl;
pub use duration::{clamp_secs, duration_from_secs, parse_duration};
pub use quick::{run_quick, run_quick_monitored, MonitorPlan, Progress, QuickConfig};
pub use rate::RateSchedule;
pub use summary::QuickSummary;
