//! permessage-deflate (RFC 7692): the offer k6 (gorilla/websocket) makes, the server's answer
//! parsed into [`Params`], and the per-message compressor/decompressor over flate2's raw
//! deflate. Framing is [`super::codec`]'s job; this module only turns payloads into payloads.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// The `Sec-WebSocket-Extensions` value offered, gorilla's (and so k6's) exactly.
pub const OFFER: &str =
    "permessage-deflate; server_no_context_takeover; client_no_context_takeover";

/// The block end every message's compressed form ends with, removed on the wire (RFC 7692
/// 7.2.1) and put back before inflating (7.2.2).
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// What the server accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// The server starts every message with an empty window (we may reset our inflater).
    pub server_no_context_takeover: bool,
    /// We start every message with an empty window. Always true: we offered it, and a
    /// compressor that forgets is valid whatever the server answered.
    pub client_no_context_takeover: bool,
    /// The server's LZ77 window (8..=15; 15 when absent). Our inflater's window is 32 KiB,
    /// which reads any smaller one.
    pub server_max_window_bits: u8,
}

/// The server's `Sec-WebSocket-Extensions` answers: `Ok(None)` when it declined (no value),
/// the accepted parameters, or why the answer is not one we can accept (RFC 7692 section 5:
/// the client fails the connection).
pub fn negotiate<'a>(values: impl Iterator<Item = &'a str>) -> Result<Option<Params>, String> {
    let mut out: Option<Params> = None;
    for ext in values.flat_map(|v| v.split(',')).map(str::trim) {
        if ext.is_empty() {
            continue;
        }
        let mut parts = ext.split(';').map(str::trim);
        let name = parts.next().unwrap_or("");
        if !name.eq_ignore_ascii_case("permessage-deflate") {
            return Err(format!(
                "the server answered extension '{name}', which was not offered"
            ));
        }
        if out.is_some() {
            return Err("the server answered permessage-deflate twice".into());
        }
        let mut p = Params {
            server_no_context_takeover: false,
            client_no_context_takeover: true,
            server_max_window_bits: 15,
        };
        let mut seen = Vec::new();
        for param in parts {
            let (k, v) = match param.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim().trim_matches('"'))),
                None => (param, None),
            };
            let k = k.to_ascii_lowercase();
            if seen.contains(&k) {
                return Err(format!("permessage-deflate parameter '{k}' answered twice"));
            }
            match (k.as_str(), v) {
                ("server_no_context_takeover", None) => p.server_no_context_takeover = true,
                ("client_no_context_takeover", None) => {}
                ("server_max_window_bits", Some(v)) => {
                    p.server_max_window_bits = match v.parse::<u8>() {
                        Ok(b @ 8..=15) => b,
                        _ => return Err(format!("server_max_window_bits={v} is not 8..15")),
                    }
                }
                // Only valid in an answer when the client offered it, which k6 does not.
                ("client_max_window_bits", _) => {
                    return Err("client_max_window_bits answered but not offered".into())
                }
                _ => return Err(format!("unknown permessage-deflate parameter '{param}'")),
            }
            seen.push(k);
        }
        out = Some(p);
    }
    Ok(out)
}

/// Why a compressed message could not be read.
#[derive(Debug, PartialEq, Eq)]
pub enum InflateError {
    /// Not valid deflate data (the input offset where the inflater found out).
    Corrupt(u64),
    /// It inflates beyond the message size limit.
    TooBig(usize),
}

/// One connection's compression state.
pub struct Deflate {
    params: Params,
    compress: Compress,
    decompress: Decompress,
}

impl Deflate {
    pub fn new(params: Params) -> Deflate {
        Deflate {
            params,
            // gorilla's default level: fast, as a load generator's CPU is the budget.
            compress: Compress::new(Compression::fast(), false),
            decompress: Decompress::new(false),
        }
    }

    /// Append `data`'s compressed form (without the tail) to `out`.
    pub fn compress(&mut self, data: &[u8], out: &mut Vec<u8>) {
        let start = out.len();
        out.reserve(data.len() / 2 + 64);
        let mut pos = 0;
        loop {
            let before = self.compress.total_in();
            // Only a buffer too small stops a sync flush early; the loop then grows it.
            let _ = self
                .compress
                .compress_vec(&data[pos..], out, FlushCompress::Sync);
            pos += (self.compress.total_in() - before) as usize;
            if pos == data.len() && out.len() < out.capacity() {
                break;
            }
            out.reserve(out.capacity().max(1024));
        }
        if out.len() >= start + 4 && out[out.len() - 4..] == TAIL {
            out.truncate(out.len() - 4);
        }
        if self.params.client_no_context_takeover {
            self.compress.reset();
        }
    }

    /// Inflate one message's payload; more than `max` bytes is an error, found before more
    /// than `max + 1` bytes are held (a decompression bomb costs what a plain message may).
    pub fn decompress(&mut self, data: &[u8], max: usize) -> Result<Vec<u8>, InflateError> {
        let mut out = Vec::with_capacity(data.len().saturating_mul(3).max(64).min(max + 1));
        let r = self
            .feed(data, &mut out, max)
            .and_then(|ended| match ended {
                true => Ok(true),
                false => self.feed(&TAIL, &mut out, max),
            });
        // A final block (BFINAL) ends the stream: the next message needs a fresh inflater.
        if self.params.server_no_context_takeover || !matches!(r, Ok(false)) {
            self.decompress.reset(false);
        }
        r.map(|_| out)
    }

    /// Inflate `input` into `out`; whether the deflate stream ended.
    fn feed(&mut self, input: &[u8], out: &mut Vec<u8>, max: usize) -> Result<bool, InflateError> {
        let mut pos = 0;
        loop {
            if out.len() == out.capacity() {
                if out.len() > max {
                    return Err(InflateError::TooBig(max));
                }
                let grow = out.len().max(4096).min(max + 1 - out.len());
                out.reserve_exact(grow);
            }
            let (in0, out0) = (self.decompress.total_in(), self.decompress.total_out());
            let status = self
                .decompress
                .decompress_vec(&input[pos..], out, FlushDecompress::Sync)
                .map_err(|_| InflateError::Corrupt(self.decompress.total_in()))?;
            if out.len() > max {
                return Err(InflateError::TooBig(max));
            }
            pos += (self.decompress.total_in() - in0) as usize;
            let progressed = self.decompress.total_in() > in0 || self.decompress.total_out() > out0;
            match status {
                Status::StreamEnd => return Ok(true),
                _ if pos == input.len() && out.len() < out.capacity() => return Ok(false),
                _ if !progressed && out.len() < out.capacity() => {
                    return Err(InflateError::Corrupt(self.decompress.total_in()))
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(server_nct: bool) -> Params {
        Params {
            server_no_context_takeover: server_nct,
            client_no_context_takeover: true,
            server_max_window_bits: 15,
        }
    }

    #[test]
    fn answers_parse_into_params_or_fail() {
        let p = negotiate(["permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=12"].into_iter()).unwrap();
        assert_eq!(
            p,
            Some(Params {
                server_no_context_takeover: true,
                client_no_context_takeover: true,
                server_max_window_bits: 12
            })
        );
        assert_eq!(negotiate(std::iter::empty()).unwrap(), None);
        assert_eq!(
            negotiate(["permessage-deflate"].into_iter()).unwrap(),
            Some(params(false))
        );
        for bad in [
            "x-webkit-deflate-frame",
            "permessage-deflate; client_max_window_bits=10",
            "permessage-deflate; server_max_window_bits=7",
            "permessage-deflate; server_max_window_bits",
            "permessage-deflate; foo",
            "permessage-deflate, permessage-deflate",
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
        ] {
            assert!(negotiate([bad].into_iter()).is_err(), "{bad}");
        }
    }

    /// Messages round-trip through our own compressor (each without the tail), with and
    /// without the server's context takeover; a compressible one gets much smaller.
    #[test]
    fn messages_round_trip() {
        for nct in [true, false] {
            let mut d = Deflate::new(params(nct));
            for m in [&b""[..], b"hello", &[b'a'; 100_000][..], b"hello"] {
                let mut c = Vec::new();
                d.compress(m, &mut c);
                assert_ne!(c.get(c.len().saturating_sub(4)..), Some(&TAIL[..]));
                assert_eq!(d.decompress(&c, 1 << 20).unwrap(), m);
                if m.len() == 100_000 {
                    assert!(c.len() < 1000, "{}", c.len());
                }
            }
        }
    }

    /// A server that keeps its window (it did not answer server_no_context_takeover) sends
    /// a second message that refers back into the first: our inflater keeps the window then;
    /// the second message is shorter than it would be alone.
    #[test]
    fn the_servers_window_is_kept_unless_it_said_otherwise() {
        let mut server = Compress::new(Compression::fast(), false);
        let msg = b"the same sentence, said twice over, compresses by reference".repeat(3);
        let mut wire = Vec::new();
        for _ in 0..2 {
            let mut c = Vec::with_capacity(4096);
            server
                .compress_vec(&msg, &mut c, FlushCompress::Sync)
                .unwrap();
            assert_eq!(c[c.len() - 4..], TAIL);
            c.truncate(c.len() - 4);
            wire.push(c);
        }
        assert!(
            wire[1].len() < wire[0].len(),
            "{} {}",
            wire[1].len(),
            wire[0].len()
        );
        let mut d = Deflate::new(params(false));
        for w in &wire {
            assert_eq!(d.decompress(w, 1 << 20).unwrap(), msg);
        }
        // An inflater that forgets cannot read the second.
        let mut d = Deflate::new(params(true));
        assert_eq!(d.decompress(&wire[0], 1 << 20).unwrap(), msg);
        assert_ne!(d.decompress(&wire[1], 1 << 20).ok(), Some(msg));
    }

    /// A bomb stops at the limit; garbage is corrupt input; both leave the inflater usable.
    #[test]
    fn bombs_and_garbage_are_errors() {
        let mut d = Deflate::new(params(true));
        let mut bomb = Vec::new();
        d.compress(&vec![0u8; 10 << 20], &mut bomb);
        assert!(bomb.len() < (10 << 20) / 100, "{}", bomb.len());
        assert_eq!(
            d.decompress(&bomb, 1 << 20),
            Err(InflateError::TooBig(1 << 20))
        );
        // Exactly the limit is fine.
        let mut c = Vec::new();
        d.compress(&[7u8; 4096], &mut c);
        assert_eq!(d.decompress(&c, 4096).unwrap().len(), 4096);
        assert!(matches!(
            d.decompress(&[0xff, 0xff, 0xff, 0x00], 1 << 20),
            Err(InflateError::Corrupt(_))
        ));
        assert_eq!(d.decompress(&c, 1 << 20).unwrap(), vec![7u8; 4096]);
    }
}
