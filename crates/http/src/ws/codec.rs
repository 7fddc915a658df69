//! The client side of RFC 6455 framing with permessage-deflate (RFC 7692), for connections
//! that negotiated it (tungstenite rejects frames with RSV1 set). [`DeflateStream`] is a
//! `Stream` of tungstenite [`Message`]s and a `Sink` of them, with tungstenite's errors and
//! its conventions (a ping's pong and a close's reply are queued for the next flush), so
//! [`super::WsConn`] drives it exactly as it drives tungstenite.
//!
//! Reading: frames are parsed from one buffer; fragments are gathered (control frames may
//! come between them); a message whose first frame has RSV1 is inflated at its last. Every
//! size is checked against the message limit before it is held, inflating included. A
//! message that breaks the protocol ends the connection with a close frame (1002; 1007 for
//! data that does not inflate or is not UTF-8; 1009 for too big) and the error.
//! Writing: every text/binary message is compressed into one masked frame with RSV1.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use futures_util::{Sink, Stream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_tungstenite::tungstenite::error::{CapacityError, Error as TError, ProtocolError};
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

use super::deflate::{Deflate, InflateError};
use crate::transport::{Io, WireCounters};

/// Written frames held before a send waits for the socket (the caller flushes well before).
const WRITE_HIGH: usize = 256 << 10;

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Active,
    /// We sent a close frame; the peer's reply ends the session.
    ClosedByUs,
    /// The peer sent a close frame; ours (the reply) is queued.
    ClosedByPeer,
    /// Both closes seen, or the connection failed: reads end.
    Done,
}

/// A frame read: (fin, rsv1, opcode, payload).
type RawFrame = (bool, bool, u8, Bytes);
/// A read that fails the connection: the close code to send and the error.
type Fail = (CloseCode, TError);

/// A message being gathered from fragments.
struct Partial {
    text: bool,
    compressed: bool,
    data: Vec<u8>,
}

/// A WebSocket connection with permessage-deflate negotiated.
pub struct DeflateStream {
    io: Io<Arc<WireCounters>>,
    rbuf: BytesMut,
    /// Reads land here first (reused: no per-read allocation or zeroing).
    chunk: Box<[u8]>,
    wbuf: Vec<u8>,
    /// A compressed payload before it is framed (reused).
    scratch: Vec<u8>,
    deflate: Deflate,
    partial: Option<Partial>,
    state: State,
    max_message: usize,
    /// Masking keys (xorshift64*): RFC 6455 wants them unpredictable to proxies, which a
    /// per-connection random seed gives; no cryptographic strength is needed by a client.
    rng: u64,
}

impl DeflateStream {
    /// `leftover`: bytes read past the handshake's response (the first frames).
    pub fn new(
        io: Io<Arc<WireCounters>>,
        leftover: &[u8],
        deflate: Deflate,
        max_message: usize,
        read_buffer: usize,
    ) -> DeflateStream {
        use std::hash::{BuildHasher, Hasher};
        let seed = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        DeflateStream {
            io,
            rbuf: BytesMut::from(leftover),
            chunk: vec![0; read_buffer.max(512)].into_boxed_slice(),
            wbuf: Vec::new(),
            scratch: Vec::new(),
            deflate,
            partial: None,
            state: State::Active,
            max_message,
            rng: seed | 1,
        }
    }

    fn mask_key(&mut self) -> [u8; 4] {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let x = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d);
        ((x >> 32) as u32).to_ne_bytes()
    }

    /// Append one masked frame to the write buffer.
    fn put_frame(&mut self, opcode: u8, rsv1: bool, payload: &[u8]) {
        let b0 = 0x80 | if rsv1 { 0x40 } else { 0 } | opcode;
        self.wbuf.push(b0);
        let n = payload.len();
        if n < 126 {
            self.wbuf.push(0x80 | n as u8);
        } else if n <= u16::MAX as usize {
            self.wbuf.push(0x80 | 126);
            self.wbuf.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            self.wbuf.push(0x80 | 127);
            self.wbuf.extend_from_slice(&(n as u64).to_be_bytes());
        }
        let key = self.mask_key();
        self.wbuf.extend_from_slice(&key);
        let at = self.wbuf.len();
        self.wbuf.extend_from_slice(payload);
        for (i, b) in self.wbuf[at..].iter_mut().enumerate() {
            *b ^= key[i & 3];
        }
    }

    fn put_close(&mut self, frame: Option<&CloseFrame>) {
        let mut p = Vec::new();
        if let Some(f) = frame {
            p.extend_from_slice(&u16::from(f.code).to_be_bytes());
            p.extend_from_slice(f.reason.as_bytes());
        }
        self.put_frame(0x8, false, &p);
    }

    fn put_message(&mut self, m: Message) -> Result<(), TError> {
        let data_frame = matches!(m, Message::Text(_) | Message::Binary(_));
        if data_frame && self.state != State::Active {
            return Err(TError::Protocol(ProtocolError::SendAfterClosing));
        }
        match m {
            Message::Text(t) => self.put_data(0x1, t.as_bytes()),
            Message::Binary(b) => self.put_data(0x2, &b),
            Message::Ping(p) => self.put_frame(0x9, false, &p),
            Message::Pong(p) => self.put_frame(0xA, false, &p),
            // Otherwise the reply is queued already, or the session is over.
            Message::Close(frame) if self.state == State::Active => {
                self.state = State::ClosedByUs;
                self.put_close(frame.as_ref());
            }
            Message::Close(_) => {}
            Message::Frame(_) => {}
        }
        Ok(())
    }

    fn put_data(&mut self, opcode: u8, data: &[u8]) {
        let mut c = std::mem::take(&mut self.scratch);
        c.clear();
        self.deflate.compress(data, &mut c);
        self.put_frame(opcode, true, &c);
        self.scratch = c;
    }

    /// Write the buffer out (not flushing the transport).
    fn poll_write_buf(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut at = 0;
        let r = loop {
            if at == self.wbuf.len() {
                break Poll::Ready(Ok(()));
            }
            match Pin::new(&mut self.io).poll_write(cx, &self.wbuf[at..]) {
                Poll::Ready(Ok(0)) => break Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => at += n,
                Poll::Ready(Err(e)) => break Poll::Ready(Err(e)),
                Poll::Pending => break Poll::Pending,
            }
        };
        self.wbuf.drain(..at);
        r
    }

    /// Fail the connection: a close frame with `code` is written if the socket takes it now,
    /// and reads end.
    fn fail(&mut self, cx: &mut Context<'_>, code: CloseCode, e: TError) -> TError {
        if matches!(self.state, State::Active) {
            self.put_close(Some(&CloseFrame {
                code,
                reason: Utf8Bytes::default(),
            }));
            let _ = self.poll_write_buf(cx);
        }
        self.state = State::Done;
        e
    }

    /// One frame from the read buffer: (fin, rsv1, opcode, payload); None when incomplete.
    fn parse_frame(&mut self) -> Result<Option<RawFrame>, Fail> {
        let b = &self.rbuf[..];
        if b.len() < 2 {
            return Ok(None);
        }
        let (fin, rsv1, rsv23, op) = (b[0] & 0x80 != 0, b[0] & 0x40 != 0, b[0] & 0x30, b[0] & 0xF);
        let masked = b[1] & 0x80 != 0;
        let (len, head) = match b[1] & 0x7F {
            126 if b.len() >= 4 => (u16::from_be_bytes([b[2], b[3]]) as u64, 4),
            127 if b.len() >= 10 => (u64::from_be_bytes(b[2..10].try_into().unwrap()), 10),
            126 | 127 => return Ok(None),
            n => (n as u64, 2),
        };
        let protocol = |e| Err((CloseCode::Protocol, TError::Protocol(e)));
        if rsv23 != 0 {
            return protocol(ProtocolError::NonZeroReservedBits);
        }
        if masked {
            return protocol(ProtocolError::MaskedFrameFromServer);
        }
        // Before its payload is waited for: a control frame is never worth buffering more.
        if op >= 0x8 && len > 125 {
            return protocol(ProtocolError::ControlFrameTooBig);
        }
        let held = self.partial.as_ref().map_or(0, |p| p.data.len());
        if len.saturating_add(held as u64) > self.max_message as u64 {
            let size = (len as usize).saturating_add(held);
            let e = CapacityError::MessageTooLong {
                size,
                max_size: self.max_message,
            };
            return Err((CloseCode::Size, TError::Capacity(e)));
        }
        let total = head + len as usize;
        if self.rbuf.len() < total {
            self.rbuf.reserve(total - self.rbuf.len());
            return Ok(None);
        }
        self.rbuf.advance(head);
        let payload = self.rbuf.split_to(len as usize).freeze();
        Ok(Some((fin, rsv1, op, payload)))
    }

    /// A frame's meaning: a whole message, or None while a message is still being gathered.
    fn on_frame(&mut self, (fin, rsv1, op, payload): RawFrame) -> Result<Option<Message>, Fail> {
        let protocol = |e| Err((CloseCode::Protocol, TError::Protocol(e)));
        if self.state == State::ClosedByPeer {
            return protocol(ProtocolError::ReceivedAfterClosing);
        }
        if op >= 0x8 {
            if !fin {
                return protocol(ProtocolError::FragmentedControlFrame);
            }
            if payload.len() > 125 {
                return protocol(ProtocolError::ControlFrameTooBig);
            }
            if rsv1 {
                return protocol(ProtocolError::NonZeroReservedBits);
            }
            return match op {
                0x8 => self.on_close(&payload).map(Some),
                0x9 => {
                    if self.state == State::Active {
                        self.put_frame(0xA, false, &payload);
                    }
                    Ok(Some(Message::Ping(payload)))
                }
                0xA => Ok(Some(Message::Pong(payload))),
                _ => protocol(ProtocolError::UnknownControlFrameType(op)),
            };
        }
        match (op, self.partial.as_mut()) {
            (0x0, None) => return protocol(ProtocolError::UnexpectedContinueFrame),
            (0x0, Some(p)) => {
                if rsv1 {
                    return protocol(ProtocolError::NonZeroReservedBits);
                }
                p.data.extend_from_slice(&payload);
            }
            (0x1 | 0x2, Some(_)) => {
                let d = if op == 1 { Data::Text } else { Data::Binary };
                return protocol(ProtocolError::ExpectedFragment(d));
            }
            (0x1 | 0x2, None) if fin && !rsv1 => return text_or_binary(op == 1, payload).map(Some),
            (0x1 | 0x2, None) => {
                self.partial = Some(Partial {
                    text: op == 1,
                    compressed: rsv1,
                    data: payload.to_vec(),
                });
            }
            _ => return protocol(ProtocolError::UnknownDataFrameType(op)),
        }
        if !fin {
            return Ok(None);
        }
        let p = self.partial.take().expect("a message is being gathered");
        let data = match p.compressed {
            false => p.data,
            true => match self.deflate.decompress(&p.data, self.max_message) {
                Ok(d) => d,
                Err(InflateError::TooBig(max)) => {
                    let e = CapacityError::MessageTooLong {
                        size: max + 1,
                        max_size: max,
                    };
                    return Err((CloseCode::Size, TError::Capacity(e)));
                }
                Err(InflateError::Corrupt(at)) => {
                    let e = io::Error::new(io::ErrorKind::InvalidData, Corrupt(at));
                    return Err((CloseCode::Invalid, TError::Io(e)));
                }
            },
        };
        text_or_binary(p.text, Bytes::from(data)).map(Some)
    }

    fn on_close(&mut self, payload: &[u8]) -> Result<Message, Fail> {
        let frame = match payload.len() {
            0 => None,
            1 => {
                let e = TError::Protocol(ProtocolError::InvalidCloseSequence);
                return Err((CloseCode::Protocol, e));
            }
            _ => {
                let code = CloseCode::from(u16::from_be_bytes([payload[0], payload[1]]));
                let reason = Utf8Bytes::try_from(payload[2..].to_vec())
                    .map_err(|e| (CloseCode::Invalid, TError::Utf8(e.to_string())))?;
                Some(CloseFrame { code, reason })
            }
        };
        match self.state {
            State::Active => {
                self.state = State::ClosedByPeer;
                // Echo the code, as tungstenite does (a code not allowed on the wire: 1002).
                let reply = frame.clone().map(|f| match f.code.is_allowed() {
                    true => f,
                    false => CloseFrame {
                        code: CloseCode::Protocol,
                        reason: "Protocol violation".into(),
                    },
                });
                self.put_close(reply.as_ref());
            }
            _ => self.state = State::Done,
        }
        Ok(Message::Close(frame))
    }
}

fn text_or_binary(text: bool, data: Bytes) -> Result<Message, Fail> {
    if !text {
        return Ok(Message::Binary(data));
    }
    Utf8Bytes::try_from(data)
        .map(Message::Text)
        .map_err(|e| (CloseCode::Invalid, TError::Utf8(e.to_string())))
}

/// Data that does not inflate; its text is Go's compress/flate's, which k6 reports.
#[derive(Debug)]
pub struct Corrupt(u64);

impl std::fmt::Display for Corrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "flate: corrupt input before offset {}", self.0)
    }
}

impl std::error::Error for Corrupt {}

/// The text k6 gives for a read error: Go's flate error as it is, else tungstenite's.
pub fn error_text(e: &TError) -> String {
    if let TError::Io(io) = e {
        if let Some(c) = io.get_ref().and_then(|r| r.downcast_ref::<Corrupt>()) {
            return c.to_string();
        }
    }
    format!("websocket: {e}")
}

impl Stream for DeflateStream {
    type Item = Result<Message, TError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.state == State::Done {
                return Poll::Ready(None);
            }
            match this.parse_frame() {
                Err((code, e)) => return Poll::Ready(Some(Err(this.fail(cx, code, e)))),
                Ok(Some(frame)) => match this.on_frame(frame) {
                    Err((code, e)) => return Poll::Ready(Some(Err(this.fail(cx, code, e)))),
                    Ok(Some(m)) => return Poll::Ready(Some(Ok(m))),
                    Ok(None) => continue,
                },
                Ok(None) => {}
            }
            let mut rb = ReadBuf::new(&mut this.chunk);
            if let Err(e) = ready!(Pin::new(&mut this.io).poll_read(cx, &mut rb)) {
                this.state = State::Done;
                return Poll::Ready(Some(Err(TError::Io(e))));
            }
            let n = rb.filled().len();
            if n == 0 {
                let was = std::mem::replace(&mut this.state, State::Done);
                return Poll::Ready(match was {
                    State::Active | State::ClosedByUs => Some(Err(TError::Protocol(
                        ProtocolError::ResetWithoutClosingHandshake,
                    ))),
                    _ => None,
                });
            }
            this.rbuf.extend_from_slice(&this.chunk[..n]);
        }
    }
}

impl Sink<Message> for DeflateStream {
    type Error = TError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TError>> {
        let this = self.get_mut();
        if this.wbuf.len() >= WRITE_HIGH {
            ready!(this.poll_write_buf(cx))?;
        }
        Poll::Ready(Ok(()))
    }

    fn start_send(self: Pin<&mut Self>, m: Message) -> Result<(), TError> {
        self.get_mut().put_message(m)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TError>> {
        let this = self.get_mut();
        ready!(this.poll_write_buf(cx))?;
        Poll::Ready(ready!(Pin::new(&mut this.io).poll_flush(cx)).map_err(TError::Io))
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), TError>> {
        let this = self.get_mut();
        ready!(this.poll_write_buf(cx))?;
        Poll::Ready(ready!(Pin::new(&mut this.io).poll_shutdown(cx)).map_err(TError::Io))
    }
}
