//! Reading responses: the head (httparse, into the connection's reusable buffer), body
//! framing (length, chunked, to EOF), body collection or discarding, and the limits.

use std::io;
use std::mem::MaybeUninit;
use std::time::Instant;

use tokio::io::AsyncReadExt;

use super::conn::Connection;
use super::encode::has_token;
use super::{FIRST_READ_BUF, MAX_CHUNK_LINE, MAX_HEAD, MAX_INTERIM, MIN_READ_ROOM, READ_BUF};
use crate::error::{ErrorClass, HttpError};
use crate::message::{BodyMode, Response};

impl Connection {
    pub(super) async fn read_next(
        &mut self,
        is_head: bool,
        mode: BodyMode,
    ) -> Result<Response, HttpError> {
        self.check_usable()?;
        let Some(req) = self.in_flight.pop_front() else {
            return Err(HttpError::new(
                ErrorClass::Other,
                "read_response() with no request in flight",
            ));
        };
        self.broken = true;
        // Waiting runs from the request's own write, also when pipelined behind others.
        let wait_from = req.write_end;
        let mut resp = Response {
            version_minor: 1,
            bytes_sent: req.bytes_sent,
            ..Response::default()
        };
        resp.timings.sending = req.sending;
        let result = self.read_into(is_head, mode, wait_from, &mut resp).await;
        let read = self.io.counted().tally.read;
        let bytes_received = read - self.recv_mark;
        self.recv_mark = read;
        match result {
            Ok(()) => {
                resp.bytes_received = bytes_received;
                self.responses_read += 1;
                self.closing |= !resp.keep_alive;
                self.broken = false;
                Ok(resp)
            }
            Err(mut e) => {
                e.bytes_sent = req.bytes_sent;
                e.bytes_received = bytes_received;
                self.in_flight.clear();
                Err(e)
            }
        }
    }

    async fn read_into(
        &mut self,
        is_head: bool,
        mode: BodyMode,
        wait_from: Instant,
        resp: &mut Response,
    ) -> Result<(), HttpError> {
        // Bytes already buffered (pipelining) arrived no later than we started waiting.
        let mut first_byte = (self.start < self.end).then_some(wait_from);
        let mut interim = 0;
        let head = loop {
            if self.start < self.end {
                let keep = self.keep_headers.then_some(&mut resp.headers);
                match parse_head(&self.buf[self.start..self.end], is_head, keep)? {
                    Some(head) if is_interim(head.status) => {
                        self.start += head.len;
                        resp.headers.clear();
                        interim += 1;
                        if interim > MAX_INTERIM {
                            return Err(protocol(format!(
                                "more than {MAX_INTERIM} interim (1xx) responses"
                            )));
                        }
                        continue;
                    }
                    Some(head) => {
                        self.start += head.len;
                        break head;
                    }
                    None if self.end - self.start >= MAX_HEAD => {
                        return Err(protocol(format!(
                            "response head larger than {} KiB",
                            MAX_HEAD / 1024
                        )));
                    }
                    None => {}
                }
            }
            // A head bigger than the buffer: fill() grows it, up to the head limit.
            if self.fill().await? == 0 {
                return Err(reset(if self.start < self.end {
                    "connection closed in the middle of the response head"
                } else if self.responses_read > 0 {
                    "server closed the keep-alive connection before responding"
                } else {
                    "server closed the connection without responding"
                }));
            }
            if first_byte.is_none() {
                first_byte = Some(Instant::now());
            }
        };
        resp.status = head.status;
        resp.version_minor = head.minor;
        resp.keep_alive = head.keep_alive;

        let mut sink = match mode {
            BodyMode::Discard => None,
            BodyMode::Keep => Some(Vec::with_capacity(match head.framing {
                // Cap the pre-allocation: the length is the server's claim.
                Framing::Length(n) => n.min(1 << 20) as usize,
                _ => 0,
            })),
        };
        match head.framing {
            Framing::Empty => {}
            Framing::Length(n) if sink.is_some() && n > self.max_body => {
                return Err(HttpError::body_too_large(self.max_body));
            }
            Framing::Length(n) => {
                let got = self.read_sized(n, &mut sink).await?;
                resp.body_len = got;
                if got < n {
                    return Err(reset(format!(
                        "connection closed after {got} of {n} body bytes"
                    )));
                }
            }
            Framing::Chunked => self.read_chunked(&mut sink, &mut resp.body_len).await?,
            Framing::Eof => loop {
                resp.body_len += self.take(u64::MAX, &mut sink);
                self.check_body(&sink)?;
                if self.fill().await? == 0 {
                    break;
                }
            },
        }
        let last_byte = Instant::now();
        let first_byte = first_byte.unwrap_or(last_byte);
        resp.timings.waiting = first_byte.saturating_duration_since(wait_from);
        resp.timings.receiving = last_byte.saturating_duration_since(first_byte);
        resp.body = sink;
        Ok(())
    }

    /// Reads more bytes into the buffer; `Ok(0)` means the peer closed.
    async fn fill(&mut self) -> Result<usize, HttpError> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 && self.buf.len() - self.end < MIN_READ_ROOM {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            // First read, or the buffered bytes fill it: grow (callers bound what they
            // buffer below MAX_HEAD; the error is a bug guard).
            let limit = READ_BUF.max(MAX_HEAD);
            if self.buf.len() >= limit {
                return Err(HttpError::new(ErrorClass::Other, "read buffer full"));
            }
            let want = (self.buf.len() * 2).clamp(FIRST_READ_BUF, limit);
            self.buf.resize(want, 0);
        }
        let room = self.buf.len() - self.end;
        match self.io.read(&mut self.buf[self.end..]).await {
            Ok(n) => {
                self.end += n;
                if n == room && self.buf.len() < READ_BUF {
                    // Reads fill the buffer: bodies are bigger than it, take more per read.
                    self.buf.resize((self.buf.len() * 2).min(READ_BUF), 0);
                }
                Ok(n)
            }
            // A TLS peer closing without close_notify: treat as EOF and let the framing
            // decide whether the response was complete.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
            Err(e) => Err(HttpError::io(&e, "reading response")),
        }
    }

    /// Consumes up to `max` buffered bytes into `sink`.
    fn take(&mut self, max: u64, sink: &mut Option<Vec<u8>>) -> u64 {
        let n = ((self.end - self.start) as u64).min(max) as usize;
        if let Some(v) = sink {
            v.extend_from_slice(&self.buf[self.start..self.start + n]);
        }
        self.start += n;
        n as u64
    }

    /// A kept body past [`Connection::set_max_body`] ends the read (it overshoots by at
    /// most one buffer, [`MAX_HEAD`]).
    fn check_body(&self, sink: &Option<Vec<u8>>) -> Result<(), HttpError> {
        match sink {
            Some(v) if v.len() as u64 > self.max_body => {
                Err(HttpError::body_too_large(self.max_body))
            }
            _ => Ok(()),
        }
    }

    /// Consumes `n` body bytes, reading as needed; returns fewer only on EOF.
    async fn read_sized(&mut self, n: u64, sink: &mut Option<Vec<u8>>) -> Result<u64, HttpError> {
        let mut got = 0;
        loop {
            got += self.take(n - got, sink);
            self.check_body(sink)?;
            if got == n || self.fill().await? == 0 {
                return Ok(got);
            }
        }
    }

    /// Length of the next line in the buffer (up to, not including, `\n`), reading more
    /// as needed.
    async fn next_line(&mut self, limit: usize) -> Result<usize, HttpError> {
        let mut scanned = 0;
        loop {
            let avail = &self.buf[self.start + scanned..self.end];
            if let Some(i) = avail.iter().position(|&b| b == b'\n') {
                return Ok(scanned + i);
            }
            scanned = self.end - self.start;
            if scanned >= limit {
                return Err(protocol(format!(
                    "line in chunked body longer than {limit} bytes"
                )));
            }
            if self.fill().await? == 0 {
                return Err(reset("connection closed in the middle of a chunked body"));
            }
        }
    }

    async fn read_chunked(
        &mut self,
        sink: &mut Option<Vec<u8>>,
        body_len: &mut u64,
    ) -> Result<(), HttpError> {
        loop {
            let n = self.next_line(MAX_CHUNK_LINE).await?;
            let size = parse_chunk_size(&self.buf[self.start..self.start + n])?;
            self.start += n + 1;
            if size == 0 {
                break;
            }
            let got = self.read_sized(size, sink).await?;
            *body_len += got;
            if got < size {
                return Err(reset("connection closed in the middle of a chunk"));
            }
            let n = self.next_line(MAX_CHUNK_LINE).await?;
            if !is_blank(&self.buf[self.start..self.start + n]) {
                return Err(protocol("missing CRLF after chunk data"));
            }
            self.start += n + 1;
        }
        // Trailer fields, up to the blank line; skipped.
        let mut trailers = 0;
        loop {
            let n = self.next_line(MAX_HEAD).await?;
            let blank = is_blank(&self.buf[self.start..self.start + n]);
            self.start += n + 1;
            if blank {
                return Ok(());
            }
            trailers += n + 1;
            if trailers > MAX_HEAD {
                return Err(protocol(format!(
                    "chunked trailers larger than {} KiB",
                    MAX_HEAD / 1024
                )));
            }
        }
    }
}

fn protocol(message: impl Into<String>) -> HttpError {
    HttpError::new(ErrorClass::Protocol, message)
}

fn reset(message: impl Into<String>) -> HttpError {
    HttpError::new(ErrorClass::Reset, message)
}

fn is_interim(status: u16) -> bool {
    // 101 Switching Protocols is final: the connection then speaks something else.
    (100..200).contains(&status) && status != 101
}

/// An empty line, with or without its `\r`.
fn is_blank(line: &[u8]) -> bool {
    line.is_empty() || line == b"\r"
}

/// Parses a chunk-size line (without its `\n`): hex digits, optional whitespace, then
/// optional `;extensions`.
pub(super) fn parse_chunk_size(line: &[u8]) -> Result<u64, HttpError> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let rest = line[digits..].trim_ascii_start();
    if digits == 0 || digits > 16 || !(rest.is_empty() || rest[0] == b';') {
        return Err(protocol(format!(
            "bad chunk size line '{}'",
            String::from_utf8_lossy(&line[..line.len().min(64)])
        )));
    }
    let mut size = 0u64;
    for &b in &line[..digits] {
        // At most 16 hex digits, so this cannot overflow.
        size = (size << 4) | u64::from((b as char).to_digit(16).unwrap_or(0));
    }
    Ok(size)
}

/// How the response body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    Empty,
    Length(u64),
    Chunked,
    Eof,
}

#[derive(Debug)]
struct Head {
    len: usize,
    status: u16,
    minor: u8,
    framing: Framing,
    keep_alive: bool,
}

/// Parses a response head at the start of `buf`; `Ok(None)` if it is incomplete.
/// Synchronous so the header array lives on the stack, not in the connection's future.
fn parse_head(
    buf: &[u8],
    is_head: bool,
    keep: Option<&mut crate::Headers>,
) -> Result<Option<Head>, HttpError> {
    let mut config = httparse::ParserConfig::default();
    config
        .allow_spaces_after_header_name_in_responses(true)
        .allow_obsolete_multiline_headers_in_responses(true);
    let mut slots = [MaybeUninit::<httparse::Header<'_>>::uninit(); 96];
    let mut resp = httparse::Response::new(&mut []);
    match config.parse_response_with_uninit_headers(&mut resp, buf, &mut slots) {
        Ok(httparse::Status::Complete(len)) => interpret(&resp, len, is_head, keep).map(Some),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            // Rare: size the slots from the bytes (a header line takes at least 3 bytes).
            let mut slots = vec![MaybeUninit::<httparse::Header<'_>>::uninit(); buf.len() / 3 + 1];
            let mut resp = httparse::Response::new(&mut []);
            match config.parse_response_with_uninit_headers(&mut resp, buf, &mut slots) {
                Ok(httparse::Status::Complete(len)) => {
                    interpret(&resp, len, is_head, keep).map(Some)
                }
                Ok(httparse::Status::Partial) => Ok(None),
                Err(e) => Err(bad_head(e, buf)),
            }
        }
        Err(e) => Err(bad_head(e, buf)),
    }
}

fn bad_head(e: httparse::Error, buf: &[u8]) -> HttpError {
    let shown = &buf[..buf.len().min(40)];
    protocol(format!(
        "invalid response head ({e}), starting with '{}'",
        String::from_utf8_lossy(shown).escape_debug()
    ))
}

fn interpret(
    resp: &httparse::Response<'_, '_>,
    len: usize,
    is_head: bool,
    mut keep: Option<&mut crate::Headers>,
) -> Result<Head, HttpError> {
    let status = resp.code.unwrap_or(0);
    // httparse takes any three digits; below 100 is not a status (hyper rejects it too), and
    // reading it as a body-less 1xx would desynchronise a keep-alive connection.
    if status < 100 {
        return Err(protocol(format!(
            "invalid status code {status:03} (expected 100 to 999)"
        )));
    }
    let minor = resp.version.unwrap_or(1);
    let mut content_length: Option<u64> = None;
    let (mut te, mut chunked, mut close, mut keep_alive_token) = (false, false, false, false);
    if let Some(keep) = keep.as_deref_mut() {
        // Sized once: the head's bytes hold every name and value.
        *keep = crate::Headers::with_capacity(resp.headers.len(), len);
    }
    for h in resp.headers.iter() {
        let name = h.name;
        if name.eq_ignore_ascii_case("content-length") {
            // "5, 5" (a merged duplicate) is allowed; differing values are not.
            for v in h.value.split(|&b| b == b',') {
                let n = parse_decimal(v.trim_ascii()).ok_or_else(|| {
                    protocol(format!(
                        "bad Content-Length '{}'",
                        String::from_utf8_lossy(h.value)
                    ))
                })?;
                if content_length.is_some_and(|c| c != n) {
                    return Err(protocol("conflicting Content-Length values"));
                }
                content_length = Some(n);
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            te = true;
            // Only a final "chunked" coding delimits the body; anything else reads to EOF.
            let last = h.value.rsplit(|&b| b == b',').next().unwrap_or(b"");
            chunked = last.trim_ascii().eq_ignore_ascii_case(b"chunked");
        } else if name.eq_ignore_ascii_case("connection") {
            close |= has_token(h.value, b"close");
            keep_alive_token |= has_token(h.value, b"keep-alive");
        }
        if let Some(keep) = keep.as_deref_mut() {
            keep.push(name, h.value);
        }
    }
    let framing = if is_head || status < 200 || status == 204 || status == 304 {
        Framing::Empty
    } else if te {
        if chunked {
            Framing::Chunked
        } else {
            Framing::Eof
        }
    } else if let Some(n) = content_length {
        Framing::Length(n)
    } else {
        Framing::Eof
    };
    let keep_alive = if minor >= 1 {
        !close
    } else {
        keep_alive_token && !close
    } && framing != Framing::Eof
        && status != 101;
    Ok(Head {
        len,
        status,
        minor,
        framing,
        keep_alive,
    })
}

fn parse_decimal(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0')))
}
