//! End-to-end tests against a real target on 127.0.0.1:0, driven by a raw HTTP/1.1 client
//! (so the exact bytes on the wire are known) and, for HTTP/2, hyper's client.

mod accounting;
mod client;
mod endpoints;
mod protocols;

use crate::{spawn, RunningTarget, TargetConfig};

fn target() -> RunningTarget {
    spawn(TargetConfig::default()).expect("target starts")
}
