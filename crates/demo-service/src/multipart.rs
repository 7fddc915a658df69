//! A streaming `multipart/form-data` reader: part headers are parsed, part data is handed
//! out as it arrives (a file part goes straight to disk, never whole into memory).
//!
//! The body is read frame by frame into a buffer; data is released up to the point where the
//! delimiter `\r\n--BOUNDARY` could still begin, so a delimiter split across frames is found.

use bytes::{Buf, Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Body;

use crate::error::ApiError;

const MAX_PART_HEAD: usize = 16 * 1024;

/// The headers of one part.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Part {
    pub name: String,
    pub filename: Option<String>,
}

#[derive(PartialEq)]
enum State {
    /// Before the first delimiter.
    Preamble,
    /// Inside a part's data.
    Data,
    /// At a delimiter (the buffer starts with it).
    Delimiter,
    Done,
}

pub(crate) struct Multipart<B> {
    body: B,
    delim: Vec<u8>,
    buf: BytesMut,
    state: State,
    eof: bool,
    /// Total body bytes read, against `limit`.
    read: u64,
    limit: u64,
}

/// The boundary from a `Content-Type: multipart/form-data; boundary=...` value.
pub(crate) fn boundary(content_type: &str) -> Option<String> {
    let (mime, params) = content_type.split_once(';')?;
    if !mime.trim().eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    params.split(';').find_map(|p| {
        let (k, v) = p.trim().split_once('=')?;
        if !k.trim().eq_ignore_ascii_case("boundary") {
            return None;
        }
        let v = v.trim().trim_matches('"');
        (!v.is_empty() && v.len() <= 200).then(|| v.to_owned())
    })
}

fn malformed(what: &str) -> ApiError {
    ApiError::bad_request("bad_multipart", format!("malformed multipart body: {what}"))
}

impl<B> Multipart<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    pub(crate) fn new(body: B, boundary: &str, limit: u64) -> Self {
        let mut buf = BytesMut::new();
        // The first delimiter has no leading CRLF; adding one makes every delimiter alike.
        buf.extend_from_slice(b"\r\n");
        Multipart {
            body,
            delim: format!("\r\n--{boundary}").into_bytes(),
            buf,
            state: State::Preamble,
            eof: false,
            read: 0,
            limit,
        }
    }

    /// Reads one more frame into the buffer; false at the end of the body.
    async fn fill(&mut self) -> Result<bool, ApiError> {
        while !self.eof {
            match self.body.frame().await {
                None => self.eof = true,
                Some(Err(e)) => {
                    return Err(ApiError::bad_request(
                        "body_interrupted",
                        format!("request body interrupted: {e}"),
                    ))
                }
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.read += data.len() as u64;
                        if self.read > self.limit {
                            return Err(ApiError::too_large(self.limit));
                        }
                        self.buf.extend_from_slice(&data);
                        return Ok(true);
                    }
                }
            }
        }
        Ok(false)
    }

    fn find(&self, needle: &[u8]) -> Option<usize> {
        self.buf.windows(needle.len()).position(|w| w == needle)
    }

    /// Advances to the next part and returns its headers; `None` after the last part.
    pub(crate) async fn next_part(&mut self) -> Result<Option<Part>, ApiError> {
        loop {
            match self.state {
                State::Done => return Ok(None),
                State::Data => {
                    // Skip the rest of the current part.
                    while self.chunk().await?.is_some() {}
                }
                State::Preamble => match self.find(&self.delim.clone()) {
                    Some(i) => {
                        self.buf.advance(i);
                        self.state = State::Delimiter;
                    }
                    None => {
                        let keep = self.delim.len();
                        if self.buf.len() > keep {
                            self.buf.advance(self.buf.len() - keep);
                        }
                        if !self.fill().await? {
                            return Err(malformed("no boundary"));
                        }
                    }
                },
                State::Delimiter => {
                    let need = self.delim.len() + 2;
                    while self.buf.len() < need {
                        if !self.fill().await? {
                            return Err(malformed("truncated at a boundary"));
                        }
                    }
                    if &self.buf[self.delim.len()..need] == b"--" {
                        self.state = State::Done;
                        return Ok(None);
                    }
                    if &self.buf[self.delim.len()..need] != b"\r\n" {
                        return Err(malformed("bad boundary line"));
                    }
                    self.buf.advance(need);
                    let end = loop {
                        if let Some(i) = self.find(b"\r\n\r\n") {
                            break i;
                        }
                        if self.buf.len() > MAX_PART_HEAD {
                            return Err(malformed("part headers too long"));
                        }
                        if !self.fill().await? {
                            return Err(malformed("truncated part headers"));
                        }
                    };
                    let head = self.buf.split_to(end + 4);
                    let part = parse_head(&head[..end])?;
                    self.state = State::Data;
                    return Ok(Some(part));
                }
            }
        }
    }

    /// The next piece of the current part's data; `None` at the part's end.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, ApiError> {
        if self.state != State::Data {
            return Ok(None);
        }
        loop {
            if let Some(i) = self.find(&self.delim.clone()) {
                if i == 0 {
                    self.state = State::Delimiter;
                    return Ok(None);
                }
                return Ok(Some(self.buf.split_to(i).freeze()));
            }
            let keep = self.delim.len();
            if self.buf.len() > keep {
                let n = self.buf.len() - keep;
                return Ok(Some(self.buf.split_to(n).freeze()));
            }
            if !self.fill().await? {
                return Err(malformed("truncated part data"));
            }
        }
    }

    /// The whole current part as text (small form fields), at most `max` bytes.
    pub(crate) async fn text(&mut self, max: usize) -> Result<String, ApiError> {
        let mut out = Vec::new();
        while let Some(c) = self.chunk().await? {
            out.extend_from_slice(&c);
            if out.len() > max {
                return Err(malformed("form field too long"));
            }
        }
        String::from_utf8(out).map_err(|_| malformed("form field is not UTF-8"))
    }
}

fn parse_head(head: &[u8]) -> Result<Part, ApiError> {
    let text = std::str::from_utf8(head).map_err(|_| malformed("part headers are not UTF-8"))?;
    let mut part = Part::default();
    let mut seen = false;
    for line in text.split("\r\n") {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        if !k.trim().eq_ignore_ascii_case("content-disposition") {
            continue;
        }
        seen = true;
        for p in v.split(';').skip(1) {
            let Some((pk, pv)) = p.trim().split_once('=') else {
                continue;
            };
            let pv = pv.trim();
            let pv = pv
                .strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .unwrap_or(pv)
                .replace("\\\"", "\"");
            match pk.trim().to_ascii_lowercase().as_str() {
                "name" => part.name = pv,
                "filename" => part.filename = Some(pv),
                _ => {}
            }
        }
    }
    if !seen {
        return Err(malformed("part without Content-Disposition"));
    }
    Ok(part)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::body::Frame;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// A body that yields `data` in frames of `step` bytes.
    struct Frames(std::vec::IntoIter<Bytes>);

    impl Body for Frames {
        type Data = Bytes;
        type Error = std::io::Error;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
            Poll::Ready(self.0.next().map(|b| Ok(Frame::data(b))))
        }
    }

    fn frames(data: &[u8], step: usize) -> Frames {
        let v: Vec<Bytes> = data.chunks(step).map(Bytes::copy_from_slice).collect();
        Frames(v.into_iter())
    }

    const FORM: &[u8] = b"preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"folder_id\"\r\n\r\n42\r\n--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a b.txt\"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--XyY\r\n--Xy\r\n--XyZ--\r\n";

    async fn parse(step: usize) -> Vec<(Part, Vec<u8>)> {
        let mut m = Multipart::new(frames(FORM, step), "XyZ", 1 << 20);
        let mut out = Vec::new();
        while let Some(p) = m.next_part().await.unwrap() {
            let mut data = Vec::new();
            while let Some(c) = m.chunk().await.unwrap() {
                data.extend_from_slice(&c);
            }
            out.push((p, data));
        }
        out
    }

    #[tokio::test]
    async fn parts_survive_any_frame_split() {
        for step in [1, 2, 3, 7, 16, 1000] {
            let parts = parse(step).await;
            assert_eq!(parts.len(), 2, "step {step}");
            assert_eq!(parts[0].0.name, "folder_id");
            assert_eq!(parts[0].1, b"42");
            assert_eq!(parts[1].0.filename.as_deref(), Some("a b.txt"));
            assert_eq!(parts[1].1, b"hello\r\n--XyY\r\n--Xy", "step {step}");
        }
    }

    #[tokio::test]
    async fn truncated_and_oversized_bodies_are_4xx() {
        let cut = &FORM[..FORM.len() - 20];
        let mut m = Multipart::new(frames(cut, 5), "XyZ", 1 << 20);
        let mut err = None;
        loop {
            match m.next_part().await {
                Ok(Some(_)) => while let Ok(Some(_)) = m.chunk().await {},
                Ok(None) => break,
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        assert_eq!(err.expect("truncated body is an error").status, 400);
        let mut m = Multipart::new(frames(FORM, 5), "XyZ", 10);
        let mut status = None;
        while status.is_none() {
            match m.next_part().await {
                Ok(Some(_)) => {
                    if let Err(e) = m.chunk().await {
                        status = Some(e.status);
                    }
                }
                Ok(None) => break,
                Err(e) => status = Some(e.status),
            }
        }
        assert_eq!(status, Some(hyper::StatusCode::PAYLOAD_TOO_LARGE));
    }

    #[test]
    fn boundary_from_content_type() {
        assert_eq!(
            boundary("multipart/form-data; boundary=abc").as_deref(),
            Some("abc")
        );
        assert_eq!(
            boundary("multipart/form-data; charset=x; boundary=\"a b\"").as_deref(),
            Some("a b")
        );
        assert_eq!(boundary("application/json"), None);
        assert_eq!(boundary("multipart/form-data"), None);
    }
}
