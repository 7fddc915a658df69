//! Request serialisation: a [`Request`] is written once (head, plus a small body inlined) and
//! re-sent as one write; a [`PipelineBatch`] is `depth` copies of one back to back.

use std::path::PathBuf;

use bytes::Bytes;

use super::INLINE_BODY_MAX;
use crate::message::Body;
use crate::url::Target;

const USER_AGENT: &str = concat!("volley/", env!("CARGO_PKG_VERSION"));
/// The part of a body that is not already in `Request::wire`.
#[derive(Clone, Debug)]
pub(super) enum Tail {
    None,
    Bytes(Bytes),
    File { path: PathBuf, len: u64 },
}

/// `depth` copies of one in-memory keep-alive request, serialised back to back once, so a
/// pipelined batch costs one write.
#[derive(Clone, Debug)]
pub struct PipelineBatch {
    pub(super) wire: Bytes,
    pub(super) depth: usize,
    pub(super) is_head: bool,
}

impl PipelineBatch {
    pub fn new(req: &Request, depth: usize) -> Result<PipelineBatch, String> {
        if depth == 0 {
            return Err("pipeline depth must be at least 1".into());
        }
        if !matches!(req.tail, Tail::None) {
            return Err(
                "pipelining needs a request body of at most 256 KiB given inline (not a file)"
                    .into(),
            );
        }
        if !req.keep_alive {
            return Err("pipelining needs keep-alive connections".into());
        }
        let mut wire = Vec::with_capacity(req.wire.len() * depth);
        for _ in 0..depth {
            wire.extend_from_slice(&req.wire);
        }
        Ok(PipelineBatch {
            wire: wire.into(),
            depth,
            is_head: req.is_head,
        })
    }

    pub fn depth(&self) -> usize {
        self.depth
    }

    pub fn is_head(&self) -> bool {
        self.is_head
    }
}

/// A request serialised once, sent as many times as needed.
#[derive(Clone, Debug)]
pub struct Request {
    /// Request line + headers, plus the body when it is small enough to inline.
    pub(super) wire: Bytes,
    pub(super) head_len: usize,
    pub(super) method_len: usize,
    pub(super) tail: Tail,
    pub(super) keep_alive: bool,
    pub(super) is_head: bool,
}

impl Request {
    /// Serialises the request. Adds `Host` (from `target.authority`), `User-Agent` and
    /// `Accept` unless given, `Content-Length` when there is a body (or for an empty
    /// POST/PUT/PATCH), and `Connection: close` when `!keep_alive`. A user-supplied
    /// `Connection` header replaces ours; a user `Content-Length` must match the body.
    pub fn new(
        method: &str,
        target: &Target,
        headers: &[(String, String)],
        body: Body,
        keep_alive: bool,
    ) -> Result<Request, String> {
        if method.is_empty() || !method.bytes().all(is_tchar) {
            return Err(format!("invalid HTTP method '{}'", method.escape_debug()));
        }
        let body_len: Option<u64> = match &body {
            Body::Empty => matches!(method, "POST" | "PUT" | "PATCH").then_some(0),
            Body::Bytes(b) => Some(b.len() as u64),
            Body::File { len, .. } => Some(*len),
        };
        let (mut has_host, mut has_ua, mut has_accept, mut has_len, mut has_conn) =
            (false, false, false, false, false);
        let mut keep_alive = keep_alive;
        for (name, value) in headers {
            if name.is_empty() || !name.bytes().all(is_tchar) {
                return Err(format!("invalid header name '{}'", name.escape_debug()));
            }
            if value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
                return Err(format!(
                    "header '{name}' has a value with CR, LF or NUL: '{}'",
                    value.escape_debug()
                ));
            }
            let is = |n: &str| name.eq_ignore_ascii_case(n);
            if is("host") {
                has_host = true;
            } else if is("user-agent") {
                has_ua = true;
            } else if is("accept") {
                has_accept = true;
            } else if is("content-length") {
                let given = value.trim().parse::<u64>().ok();
                if given.is_none() || given != body_len.or(Some(0)) {
                    return Err(format!(
                        "header 'Content-Length: {value}' does not match the body length {}",
                        body_len.unwrap_or(0)
                    ));
                }
                has_len = true;
            } else if is("transfer-encoding") {
                return Err(
                    "a Transfer-Encoding header is not supported: the body is sent with Content-Length"
                        .into(),
                );
            } else if is("connection") {
                has_conn = true;
                if has_token(value.as_bytes(), b"close") {
                    keep_alive = false;
                }
            }
        }

        let mut head = Vec::with_capacity(256);
        head.extend_from_slice(method.as_bytes());
        head.push(b' ');
        head.extend_from_slice(target.path_and_query.as_bytes());
        head.extend_from_slice(b" HTTP/1.1\r\n");
        let mut line = |name: &str, value: &str| {
            head.extend_from_slice(name.as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(value.as_bytes());
            head.extend_from_slice(b"\r\n");
        };
        if !has_host {
            line("Host", &target.authority);
        }
        for (name, value) in headers {
            line(name, value);
        }
        if !has_ua {
            line("User-Agent", USER_AGENT);
        }
        if !has_accept {
            line("Accept", "*/*");
        }
        if let (Some(len), false) = (body_len, has_len) {
            line("Content-Length", &len.to_string());
        }
        if !keep_alive && !has_conn {
            line("Connection", "close");
        }
        head.extend_from_slice(b"\r\n");
        let head_len = head.len();

        let tail = match body {
            Body::Empty => Tail::None,
            Body::Bytes(b) if b.len() <= INLINE_BODY_MAX => {
                head.extend_from_slice(&b);
                Tail::None
            }
            Body::Bytes(b) => Tail::Bytes(b),
            Body::File { path, len } => Tail::File { path, len },
        };
        Ok(Request {
            wire: Bytes::from(head),
            head_len,
            method_len: method.len(),
            tail,
            keep_alive,
            is_head: method == "HEAD",
        })
    }

    pub fn method(&self) -> &str {
        // The method was validated as ASCII token characters.
        std::str::from_utf8(&self.wire[..self.method_len]).unwrap_or("")
    }

    /// Bytes of request line + headers (including the blank line).
    pub fn head_len(&self) -> usize {
        self.head_len
    }

    /// Whether the connection may be reused after this request.
    pub fn keep_alive(&self) -> bool {
        self.keep_alive
    }

    pub fn is_head(&self) -> bool {
        self.is_head
    }

    /// The pre-serialised bytes sent by the first write (head, plus inlined body).
    pub fn wire(&self) -> &Bytes {
        &self.wire
    }
}

/// RFC 9110 token characters (method and header names).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Whether a comma-separated header value contains `token` (case-insensitive).
pub(super) fn has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}
