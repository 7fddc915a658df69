//! The protocol-neutral message types both protocols share: a request's [`Body`], what to do
//! with a response body ([`BodyMode`]), the [`Response`] and its [`Timings`] (k6's phases), and
//! the [`ConnectTimings`] of opening a connection. `h1` and `http2` produce and consume them.

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;

/// What a request carries after its head.
#[derive(Clone, Debug)]
pub enum Body {
    Empty,
    Bytes(Bytes),
    /// Streamed from disk in chunks at send time; `len` becomes the Content-Length.
    File {
        path: PathBuf,
        len: u64,
    },
}

/// What to do with response bodies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyMode {
    /// Count the bytes only; nothing is allocated.
    Discard,
    /// Collect the (de-chunked) body into `Response::body`.
    Keep,
}

/// Time to open a connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnectTimings {
    pub connecting: Duration,
    pub tls_handshaking: Duration,
}

/// Per-request phases, with k6's meaning.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Timings {
    /// Writing the request.
    pub sending: Duration,
    /// End of the write to the first response byte (TTFB). For a pipelined request whose
    /// response bytes were already buffered this is zero.
    pub waiting: Duration,
    /// First to last response byte.
    pub receiving: Duration,
}

impl Timings {
    pub fn duration(&self) -> Duration {
        self.sending + self.waiting + self.receiving
    }
}

/// A complete response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub version_minor: u8,
    /// False if the server said `Connection: close`, answered HTTP/1.0 without
    /// keep-alive, or delimited the body by closing the connection.
    pub keep_alive: bool,
    pub timings: Timings,
    /// Wire bytes of this request (TLS: raw TCP bytes including record overhead). A
    /// connection's handshake bytes count towards its first request, and bytes read ahead
    /// while pipelining count towards the response during whose read they arrived, so
    /// the sums over a connection equal what crossed the socket.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Filled only when [`Connection::keep_headers`] is on.
    pub headers: crate::Headers,
    /// `Some` only for [`BodyMode::Keep`].
    pub body: Option<Vec<u8>>,
    /// Decoded body length.
    pub body_len: u64,
}

impl Response {
    /// First header named `name` (case-insensitive), if headers were kept.
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers.get(name)
    }
}
