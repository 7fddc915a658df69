//! The one response body type every endpoint returns.
//!
//! A single concrete type (instead of a boxed trait object) keeps `GET /` free of extra
//! allocations, and lets `/bytes/N` stream any size from one static buffer.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

/// Size of each `/bytes/N` data frame.
pub(crate) const FRAME: usize = 64 * 1024;

/// `a..z` repeated, one alphabet longer than a frame so any frame can start at any phase of
/// the pattern and still be a zero-copy slice of this buffer.
static PATTERN: [u8; FRAME + 26] = pattern();

const fn pattern() -> [u8; FRAME + 26] {
    let mut a = [0u8; FRAME + 26];
    let mut i = 0;
    while i < a.len() {
        a[i] = b'a' + (i % 26) as u8;
        i += 1;
    }
    a
}

/// The byte at position `i` of every `/bytes/N` body.
#[cfg(test)]
pub(crate) fn pattern_byte(i: u64) -> u8 {
    b'a' + (i % 26) as u8
}

pub(crate) enum RespBody {
    /// A complete body; `None` once sent.
    Full(Option<Bytes>),
    /// The `/bytes/N` pattern: `sent` bytes already produced, `remaining` still to go.
    Pattern { sent: u64, remaining: u64 },
    /// Frames a task produces (gRPC: messages as they are ready, then trailers).
    Channel(tokio::sync::mpsc::Receiver<Frame<Bytes>>),
}

impl RespBody {
    pub(crate) fn empty() -> Self {
        RespBody::Full(None)
    }

    pub(crate) fn pattern(len: u64) -> Self {
        RespBody::Pattern {
            sent: 0,
            remaining: len,
        }
    }
}

impl From<Bytes> for RespBody {
    fn from(b: Bytes) -> Self {
        RespBody::Full(Some(b))
    }
}

impl From<&'static str> for RespBody {
    fn from(s: &'static str) -> Self {
        Bytes::from_static(s.as_bytes()).into()
    }
}

impl From<Vec<u8>> for RespBody {
    fn from(v: Vec<u8>) -> Self {
        Bytes::from(v).into()
    }
}

impl From<String> for RespBody {
    fn from(s: String) -> Self {
        Bytes::from(s).into()
    }
}

impl Body for RespBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let frame = match self.get_mut() {
            RespBody::Channel(rx) => return rx.poll_recv(cx).map(|f| f.map(Ok)),
            RespBody::Full(b) => b.take().filter(|b| !b.is_empty()),
            RespBody::Pattern { sent, remaining } => {
                if *remaining == 0 {
                    None
                } else {
                    let len = (*remaining).min(FRAME as u64) as usize;
                    let start = (*sent % 26) as usize;
                    *sent += len as u64;
                    *remaining -= len as u64;
                    Some(Bytes::from_static(&PATTERN[start..start + len]))
                }
            }
        };
        Poll::Ready(frame.map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RespBody::Full(b) => b.as_ref().is_none_or(Bytes::is_empty),
            RespBody::Pattern { remaining, .. } => *remaining == 0,
            RespBody::Channel(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RespBody::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            RespBody::Pattern { remaining, .. } => SizeHint::with_exact(*remaining),
            RespBody::Channel(_) => SizeHint::default(),
        }
    }
}
