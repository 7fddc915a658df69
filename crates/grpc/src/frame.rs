//! gRPC's message framing on an HTTP/2 stream: a 1-byte compressed flag, a 4-byte big-endian
//! length, the message. Messages larger than the receiver's limit are refused before any
//! allocation for them.

use bytes::{Buf, Bytes, BytesMut};

/// grpc-go's default receive limit (4 MiB), also k6's unless `maxReceiveSize` is set.
pub const DEFAULT_MAX_RECEIVE: usize = 4 << 20;

/// One message with its 5-byte prefix.
pub fn encode(msg: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(5 + msg.len());
    b.extend_from_slice(&[0]);
    b.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    b.extend_from_slice(msg);
    b.freeze()
}

/// Reassembles messages from DATA frames.
#[derive(Debug)]
pub struct Decoder {
    buf: BytesMut,
    max: usize,
}

impl Decoder {
    pub fn new(max: usize) -> Decoder {
        Decoder {
            buf: BytesMut::new(),
            max,
        }
    }

    pub fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The next whole message, if one has arrived; `Err` (status code, message) for a
    /// compressed or oversized one.
    pub fn next_message(&mut self) -> Result<Option<Bytes>, (u32, String)> {
        if self.buf.len() < 5 {
            return Ok(None);
        }
        if self.buf[0] != 0 {
            return Err((
                crate::status::INTERNAL,
                "grpc: compressed message received but no grpc-encoding was negotiated".into(),
            ));
        }
        let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize;
        if len > self.max {
            return Err((
                crate::status::RESOURCE_EXHAUSTED,
                format!(
                    "grpc: received message larger than max ({len} vs. {})",
                    self.max
                ),
            ));
        }
        if self.buf.len() < 5 + len {
            return Ok(None);
        }
        self.buf.advance(5);
        Ok(Some(self.buf.split_to(len).freeze()))
    }

    /// Bytes of an unfinished message left over (a stream that ends here is malformed).
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_frames_reassemble() {
        let mut all = encode(b"hello").to_vec();
        all.extend_from_slice(&encode(b""));
        let mut d = Decoder::new(16);
        d.push(&all[..3]);
        assert_eq!(d.next_message().unwrap(), None);
        d.push(&all[3..]);
        assert_eq!(d.next_message().unwrap().unwrap(), &b"hello"[..]);
        assert_eq!(d.next_message().unwrap().unwrap(), &b""[..]);
        assert!(d.is_empty());
    }

    #[test]
    fn oversized_is_refused_before_buffering() {
        let mut d = Decoder::new(4);
        d.push(&encode(b"12345")[..5]);
        let (code, msg) = d.next_message().unwrap_err();
        assert_eq!(code, crate::status::RESOURCE_EXHAUSTED);
        assert!(msg.contains("larger than max (5 vs. 4)"), "{msg}");
    }
}
