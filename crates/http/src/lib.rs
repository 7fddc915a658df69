//! volley-http: Volley's protocol client.
//!
//! A lean HTTP/1.1 client built for load generation rather than general use: a request is
//! serialised once and re-sent as a single write, responses are read into one reusable
//! buffer per connection and parsed with httparse, keep-alive requests that discard their
//! body allocate nothing, and bytes are counted on the wire (under TLS too). HTTP/2 sits
//! beside it with the same request, timing and error types, multiplexing many requests
//! over one connection. Every failure comes back as an [`HttpError`] with an
//! [`ErrorClass`], never as a panic.
//!
//! # Layout
//!
//! - [`url`]: parses absolute http/https URLs into a [`Target`] (address, `Host`, path).
//! - [`message`]: the protocol-neutral types both protocols share: [`Response`],
//!   [`Timings`], [`ConnectTimings`], [`Body`], [`BodyMode`].
//! - [`h1`]: HTTP/1.1 as hyper's `proto/h1`: `encode` ([`Request`] serialisation), `conn`
//!   (the [`Connection`] that writes requests: keep-alive, pipelining, byte counts),
//!   `decode` (reading responses: framing, chunked, limits, timings).
//! - [`http2`]: [`H2Request`] and the multiplexed [`H2Connection`] (h2c prior knowledge
//!   or ALPN `h2`), built on the `h2` crate, with the same timings and error classes.
//! - `transport`: TCP + TLS connect and the byte-counting stream both protocols sit on.
//! - [`tls`]: builds the shared rustls [`ClientConfig`](rustls::ClientConfig) (roots,
//!   `--cacert`, `--insecure`, ALPN).
//! - [`client`]: script mode's per-VU client, JS-free: a [`VuClient`](client::VuClient)
//!   sends a protocol-neutral request hop by hop (pool, DNS cache, host rules, redirects)
//!   and records k6's `http_req_*` metrics with their system tags.
//! - [`ws`]: the WebSocket client behind `k6/ws` and `k6/websockets` (tungstenite framing
//!   over the same counted TCP/TLS transport).
//! - [`error`]: [`ErrorClass`] and [`HttpError`], the classification every failure maps to.

pub mod client;
pub mod error;
pub mod h1;
pub mod headers;
pub mod http2;
pub mod message;
pub mod tls;
mod transport;
pub mod url;
pub mod ws;

pub use error::{ErrorClass, HttpError};
pub use h1::{Connection, PipelineBatch, Request};
pub use headers::Headers;
pub use http2::{H2Connection, H2Driver, H2Request, WireMeter};
pub use message::{Body, BodyMode, ConnectTimings, Response, Timings};
pub use tls::{tls_config, TlsOptions};
pub use url::{Scheme, Target, UrlError};
