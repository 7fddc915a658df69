//! volley-distributed: one test run by many processes (agents), merged live by a
//! coordinator (`volley coordinator`, `volley agent`; docs/distributed-protocol.md).
//!
//! Free of JavaScript: the CLI runs the script (the same path as `volley run`) and hands
//! this crate the pieces it needs (thresholds, the archive's bytes, the setup data).
//!
//! # Layout
//!
//! - [`proto`]: the messages (JSON bodies), paths, the token check, the segment split.
//! - [`wire`]: the agent's small blocking HTTP/1.1 client (TCP or rustls).
//! - [`server`]: the coordinator's hyper server (HTTP/1.1 and HTTP/2, optional TLS).
//! - [`hub`]: the coordinator's shared state: registrations, the start barrier, snapshots,
//!   final results, lost agents, the stop flag.
//! - [`live`]: the run's one per-second series, merged from the agents' points as they come.
//! - [`coordinator`]: the coordinator's run: barrier, once-a-second merge, progress and
//!   `abortOnFail`, loss policy, the final merge and its verdict.
//! - [`agent`]: registration and the running agent's [`agent::Link`] (barriers for the
//!   engine, snapshots from the run's aggregates, stop, final result).

pub mod agent;
pub mod coordinator;
pub mod hub;
pub mod live;
pub mod proto;
pub mod server;
pub mod wire;
