//! The agent's side of the transport: one small blocking HTTP/1.1 client (a `POST` with a
//! JSON body per connection, `Connection: close`), over TCP or rustls. One request a second
//! needs no pool; blocking keeps the agent's network work off the engine's workers.

use serde::{de::DeserializeOwned, Serialize};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

/// Largest response the agent reads (the registration carries the archive).
const MAX_RESPONSE: usize = 512 << 20;

/// Where the coordinator is and how to talk to it.
#[derive(Clone)]
pub struct Endpoint {
    /// `HOST:PORT`.
    pub addr: String,
    pub token: String,
    /// Some: TLS with this config.
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

/// Why a request failed.
#[derive(Debug)]
pub enum WireError {
    /// Could not connect, or the connection broke: worth retrying.
    Io(String),
    /// The coordinator answered with an error status (the body says why).
    Status(u16, String),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Io(e) => f.write_str(e),
            WireError::Status(s, b) => write!(f, "HTTP {s}: {}", b.trim()),
        }
    }
}

impl Endpoint {
    /// `POST path` with `body` as JSON; the answer decoded as `R`.
    pub fn post<R: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
        timeout: Duration,
    ) -> Result<R, WireError> {
        let body = serde_json::to_vec(body).map_err(|e| WireError::Io(e.to_string()))?;
        let (status, text) = self.exchange(path, &body, timeout)?;
        if status != 200 {
            return Err(WireError::Status(
                status,
                String::from_utf8_lossy(&text).into_owned(),
            ));
        }
        serde_json::from_slice(&text)
            .map_err(|e| WireError::Io(format!("bad answer from the coordinator: {e}")))
    }

    fn exchange(
        &self,
        path: &str,
        body: &[u8],
        timeout: Duration,
    ) -> Result<(u16, Vec<u8>), WireError> {
        let io = |e: std::io::Error| WireError::Io(format!("{}: {e}", self.addr));
        let addr = self
            .addr
            .to_socket_addrs()
            .map_err(io)?
            .next()
            .ok_or_else(|| WireError::Io(format!("{}: no address", self.addr)))?;
        let tcp =
            TcpStream::connect_timeout(&addr, timeout.min(Duration::from_secs(10))).map_err(io)?;
        tcp.set_read_timeout(Some(timeout)).map_err(io)?;
        tcp.set_write_timeout(Some(timeout)).map_err(io)?;
        let _ = tcp.set_nodelay(true);
        let host = self.addr.rsplit_once(':').map_or(&*self.addr, |h| h.0);
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.addr,
            self.token,
            body.len()
        );
        let mut raw = Vec::new();
        match &self.tls {
            None => {
                let mut s = tcp;
                s.write_all(head.as_bytes()).map_err(io)?;
                s.write_all(body).map_err(io)?;
                read_all(&mut s, &mut raw).map_err(io)?;
            }
            Some(cfg) => {
                let name = rustls_pki_types::ServerName::try_from(
                    host.trim_matches(|c| c == '[' || c == ']').to_string(),
                )
                .map_err(|e| WireError::Io(format!("{host}: {e}")))?;
                let conn = rustls::ClientConnection::new(cfg.clone(), name)
                    .map_err(|e| WireError::Io(format!("TLS: {e}")))?;
                let mut s = rustls::StreamOwned::new(conn, tcp);
                s.write_all(head.as_bytes()).map_err(io)?;
                s.write_all(body).map_err(io)?;
                s.flush().map_err(io)?;
                read_all(&mut s, &mut raw).map_err(io)?;
            }
        }
        parse_response(&raw).map_err(|e| WireError::Io(format!("{}: {e}", self.addr)))
    }
}

/// Read to the end of the response (the server closes); a TLS peer that closes without
/// close_notify is fine once the whole body is in.
fn read_all(s: &mut impl Read, out: &mut Vec<u8>) -> std::io::Result<()> {
    let mut buf = [0u8; 64 * 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                if out.len() > MAX_RESPONSE {
                    return Err(std::io::Error::other("response too large"));
                }
                if complete(out) {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && complete(out) => {
                return Ok(())
            }
            Err(e) => return Err(e),
        }
    }
}

/// Head and `Content-Length` bytes of body are in.
fn complete(raw: &[u8]) -> bool {
    matches!(split(raw), Ok(Some((_, len, start))) if raw.len() >= start + len)
}

/// (status, content length, body start) once the head is in.
fn split(raw: &[u8]) -> Result<Option<(u16, usize, usize)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut resp = httparse::Response::new(&mut headers);
    match resp.parse(raw).map_err(|e| e.to_string())? {
        httparse::Status::Partial => Ok(None),
        httparse::Status::Complete(start) => {
            let len = resp
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
                .unwrap_or(raw.len() - start);
            Ok(Some((resp.code.unwrap_or(0), len, start)))
        }
    }
}

fn parse_response(raw: &[u8]) -> Result<(u16, Vec<u8>), String> {
    match split(raw)? {
        Some((status, len, start)) if raw.len() >= start + len => {
            Ok((status, raw[start..start + len].to_vec()))
        }
        _ => Err("the connection closed before the whole answer came".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_read_by_content_length() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(parse_response(raw).unwrap(), (200, b"{}".to_vec()));
        assert!(complete(raw));
        assert!(!complete(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}"));
        assert!(
            parse_response(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 5\r\n\r\nno").is_err()
        );
    }
}
