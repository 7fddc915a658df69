//! volley-faults: fault injection during load and verification after it (docs/faults.md).
//! Free of JavaScript: `volley run`, `volley http` and suites use the same pieces.
//!
//! # Layout
//!
//! - [`schedule`]: the fault grammar (`at=10s,for=5s,proxy=api,latency=200ms`) shared by the
//!   CLI's `--fault` and suite steps: [`Schedule`], [`Fault`], triggers, toxics, process ops.
//! - [`proxy`]: the built-in fault proxy ([`Proxy::start`] → [`ProxyHandle`]): a tokio TCP
//!   proxy whose toxics are switched at run time, on a seeded share of connections.
//! - [`process`]: [`ProcessTarget`] (kill, term, pause, resume, restart) for a pid and for a
//!   command Volley starts (`--fault-target NAME=CMD`); a suite implements it for services.
//! - [`inject`]: [`Injector`] runs a schedule on the run's clock and records its events for
//!   the result file, the report and the summary lines.
//! - [`armed`]: a run's `--proxy`, `--fault-target` and `--fault` words → started proxies and
//!   targets, attached to a `volley_run::RunSpec`, events into the result after it.
//! - [`ledger`]: the append-only NDJSON of acknowledged operations scripts write
//!   (`ledger.ack`) and that verification reads.
//! - [`verify`]: a verifier command's verdicts against the ledger → [`verify::Report`]
//!   (acknowledged, verified, lost, corrupted).

pub mod armed;
pub mod inject;
pub mod ledger;
pub mod process;
pub mod proxy;
pub mod schedule;
pub mod verify;

pub use armed::{ArmError, Armed, ProxySpec};
pub use inject::Injector;
pub use ledger::Ledger;
pub use process::{CommandTarget, PidTarget, ProcessTarget};
pub use proxy::{Proxy, ProxyHandle, ProxyStats};
pub use schedule::{Action, Fault, FaultError, ProcessOp, Schedule, Target, Toxic, Trigger};
