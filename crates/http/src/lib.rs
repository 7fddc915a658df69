//! volley-http: Volley's protocol client.
//!
//! A lean HTTP/1.1 client built for load generation rather than general use: a request is
//! serialised once and re-sent as a single write, responses are read into one reusable
//! buffer per connection and parsed with httparse, keep-alive requests that discard their
//! body allocate nothing, and bytes are counted on the wire (under TLS too). Every failure
//! comes back as an [`HttpError`] with an [`ErrorClass`], never as a panic.
//!
//! # Layout
//!
//! - [`url`]: parses absolute http/https URLs into a [`Target`] (address, `Host`, path).
//! - [`h1`]: [`Request`] serialisation, the [`Connection`] that writes requests and reads
//!   responses (keep-alive, pipelining, chunked, timings, byte counts).
//! - [`tls`]: builds the shared rustls [`ClientConfig`](rustls::ClientConfig) (roots,
//!   `--cacert`, `--insecure`, ALPN).
//! - [`error`]: [`ErrorClass`] and [`HttpError`], the classification every failure maps to.

pub mod error;
pub mod h1;
pub mod tls;
pub mod url;

pub use error::{ErrorClass, HttpError};
pub use h1::{
    Body, BodyMode, ConnectTimings, Connection, PipelineBatch, Request, Response, Timings,
};
pub use tls::{tls_config, TlsOptions};
pub use url::{Scheme, Target, UrlError};
