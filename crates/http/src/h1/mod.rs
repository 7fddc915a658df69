//! HTTP/1.1 over one connection: request serialisation, response reading, wire counting.
//!
//! Built for the load-generator hot path: a [`Request`] is serialised once and re-sent as
//! one `write_all`; responses are read into one reusable per-connection buffer and parsed
//! with httparse; in [`BodyMode::Discard`] a keep-alive request allocates nothing.
//! Unconsumed bytes stay in the buffer, which is what makes pipelining work.
//!
//! Split by job, as hyper's `proto/h1`: `encode` serialises requests, `conn` owns the socket
//! and writes, `decode` reads and parses responses. The message types are in
//! [`crate::message`] (re-exported here, where callers have always found them).

mod conn;
mod decode;
mod encode;

pub use crate::message::{Body, BodyMode, ConnectTimings, Response, Timings};
pub use conn::Connection;
pub use encode::{PipelineBatch, Request};

/// Read buffer per connection once reads fill it: enough for typical heads plus a good
/// slice of body. It starts at [`FIRST_READ_BUF`], allocated on the first read, and doubles
/// up to this size while reads fill it, so thousands of idle or small-response connections
/// (k6 scripts with thousands of VUs) cost a few KiB each, not 32.
const READ_BUF: usize = 32 * 1024;
/// The read buffer's size when a connection first reads.
const FIRST_READ_BUF: usize = 1024;
/// Largest response head (status line + headers, or trailers) we accept.
const MAX_HEAD: usize = 64 * 1024;
/// Longest chunk-size line (size plus extensions).
const MAX_CHUNK_LINE: usize = 16 * 1024;
/// In-memory bodies up to this size are glued to the head so a send is one write.
const INLINE_BODY_MAX: usize = 256 * 1024;
/// Read size when streaming a `Body::File` upload.
const FILE_CHUNK: usize = 128 * 1024;
/// Guard against a server that sends 1xx responses forever.
const MAX_INTERIM: usize = 32;
/// Compact the buffer when less than this much room is left at its end.
const MIN_READ_ROOM: usize = 4 * 1024;

#[cfg(test)]
mod tests;
