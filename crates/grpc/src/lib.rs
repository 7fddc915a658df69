//! volley-grpc: gRPC for Volley, free of JavaScript: what `k6/net/grpc` (crates/js) and the
//! built-in target (crates/testserver) share.
//!
//! # Layout
//!
//! - [`proto`]: `.proto` files compiled at init time with protox (pure Rust, no `protoc`),
//!   protosets (`FileDescriptorSet` bytes), errors as `file.proto:LINE:COL: message` + hint,
//!   the method table of a [`prost_reflect::DescriptorPool`].
//! - [`json`]: dynamic messages from and to JSON with k6's protojson conventions
//!   (lowerCamelCase names, unpopulated fields emitted, 64-bit integers as strings, enums
//!   by name, bytes as base64).
//! - [`frame`]: gRPC's length-prefixed message framing (bounded message size).
//! - [`health`]: the standard health service's messages (`grpc.health.v1.Health/Check`).
//! - [`status`]: status codes, `grpc-message` percent-encoding, `grpc-timeout`, metadata.
//! - [`reflect`]: the server reflection messages (v1 and v1alpha share one wire format), the
//!   server's answers from a pool, and building a pool from a server's answers.
//! - `call` (feature `client`): connecting (h2c or TLS with ALPN `h2`, over volley-http's
//!   counted transport), unary calls and client/server/bidi streams on raw `h2` streams.
//! - `deadline` (feature `client`): unary calls' deadlines on one reusable timer per
//!   connection.
//! - `tls` (feature `client`): `connect`'s `tls` param (client certificate, CA PEM strings)
//!   as a rustls client config, with k6's error texts.
//! - `quick` (feature `client`): what `volley grpc` resolves once before its run (method,
//!   request bytes, metadata, reflection).

#[cfg(feature = "client")]
pub mod call;
#[cfg(feature = "client")]
mod deadline;
pub mod frame;
pub mod health;
pub mod json;
pub mod proto;
#[cfg(feature = "client")]
pub mod quick;
pub mod reflect;
pub mod status;
#[cfg(feature = "client")]
pub mod tls;

pub use prost_reflect;
