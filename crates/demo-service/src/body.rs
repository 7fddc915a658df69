//! The response body: bytes in memory, or a region of a file streamed from disk in 64 KiB
//! frames (downloads never buffer the whole file).

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use tokio::io::{AsyncRead, ReadBuf};

pub(crate) type Resp = Response<RespBody>;

const FRAME: usize = 64 * 1024;

pub(crate) enum RespBody {
    Full(Option<Bytes>),
    File(Box<FileBody>),
}

pub(crate) struct FileBody {
    file: tokio::fs::File,
    remaining: u64,
    buf: Vec<u8>,
    /// Bytes of file content sent (the service's download byte counter).
    counter: Arc<AtomicU64>,
}

impl RespBody {
    pub(crate) fn empty() -> Self {
        RespBody::Full(None)
    }

    /// `len` bytes from `file`'s current position.
    pub(crate) fn file(file: tokio::fs::File, len: u64, counter: Arc<AtomicU64>) -> Self {
        RespBody::File(Box::new(FileBody {
            file,
            remaining: len,
            buf: Vec::new(),
            counter,
        }))
    }
}

impl From<Bytes> for RespBody {
    fn from(b: Bytes) -> Self {
        RespBody::Full(Some(b))
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
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        match self.get_mut() {
            RespBody::Full(b) => Poll::Ready(
                b.take()
                    .filter(|b| !b.is_empty())
                    .map(|b| Ok(Frame::data(b))),
            ),
            RespBody::File(f) => {
                if f.remaining == 0 {
                    return Poll::Ready(None);
                }
                let want = f.remaining.min(FRAME as u64) as usize;
                f.buf.resize(want, 0);
                let mut rb = ReadBuf::new(&mut f.buf[..want]);
                match Pin::new(&mut f.file).poll_read(cx, &mut rb) {
                    Poll::Pending => Poll::Pending,
                    Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
                    Poll::Ready(Ok(())) => {
                        let n = rb.filled().len();
                        if n == 0 {
                            return Poll::Ready(Some(Err(std::io::Error::new(
                                std::io::ErrorKind::UnexpectedEof,
                                "file shorter than recorded",
                            ))));
                        }
                        f.remaining -= n as u64;
                        f.counter.fetch_add(n as u64, Ordering::Relaxed);
                        Poll::Ready(Some(Ok(Frame::data(Bytes::copy_from_slice(&f.buf[..n])))))
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RespBody::Full(b) => b.as_ref().is_none_or(Bytes::is_empty),
            RespBody::File(f) => f.remaining == 0,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RespBody::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            RespBody::File(f) => SizeHint::with_exact(f.remaining),
        }
    }
}

pub(crate) fn with_type(mut resp: Resp, content_type: &'static str) -> Resp {
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

pub(crate) fn json(status: StatusCode, value: &serde_json::Value) -> Resp {
    let body = serde_json::to_vec(value).expect("a serde_json::Value always serialises");
    let mut resp = with_type(Response::new(body.into()), "application/json");
    *resp.status_mut() = status;
    resp
}

pub(crate) fn status(status: StatusCode) -> Resp {
    let mut resp = Response::new(RespBody::empty());
    *resp.status_mut() = status;
    resp
}
