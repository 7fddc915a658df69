//! A deliberately tiny HTTP/1.1 client over any byte stream: it writes exactly the bytes it is
//! given and counts every byte written and read, so tests can check the target's wire counts.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Bound on every single read or write, so a misbehaving server fails the test instead of
/// hanging it.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_HEAD: usize = 64 * 1024;

pub struct Client<S> {
    io: S,
    buf: Vec<u8>,
    pub written: u64,
    pub read: u64,
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.body).expect("UTF-8 body")
    }
}

pub async fn connect(addr: std::net::SocketAddr) -> Client<TcpStream> {
    let tcp = tokio::time::timeout(IO_TIMEOUT, TcpStream::connect(addr))
        .await
        .expect("connect timed out")
        .expect("connect");
    Client::new(tcp)
}

/// Formats a request; `Content-Length` is added when there is a body.
pub fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n");
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() {
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

impl<S: AsyncRead + AsyncWrite + Unpin> Client<S> {
    pub fn new(io: S) -> Self {
        Client {
            io,
            buf: Vec::new(),
            written: 0,
            read: 0,
        }
    }

    pub fn into_inner(self) -> S {
        self.io
    }

    pub async fn send(&mut self, bytes: &[u8]) {
        tokio::time::timeout(IO_TIMEOUT, self.io.write_all(bytes))
            .await
            .expect("write timed out")
            .expect("write");
        self.written += bytes.len() as u64;
    }

    /// Reads more bytes into the buffer; returns false at EOF.
    async fn fill(&mut self) -> bool {
        // Straight into the buffer's spare capacity: a stack array would bloat every future
        // that awaits this.
        self.buf.reserve(64 * 1024);
        let n = tokio::time::timeout(IO_TIMEOUT, self.io.read_buf(&mut self.buf))
            .await
            .expect("read timed out")
            .expect("read");
        self.read += n as u64;
        n > 0
    }

    /// Reads one response; `head_only` for answers to HEAD requests.
    pub async fn response(&mut self, head_only: bool) -> Resp {
        let head_end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            assert!(self.buf.len() < MAX_HEAD, "response head too large");
            assert!(
                self.fill().await,
                "EOF before response head: {:?}",
                String::from_utf8_lossy(&self.buf)
            );
        };
        let head = String::from_utf8(self.buf[..head_end].to_vec()).expect("ASCII head");
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let headers: Vec<(String, String)> = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (k, v) = l.split_once(':').expect("header line");
                (k.trim().to_owned(), v.trim().to_owned())
            })
            .collect();
        self.buf.drain(..head_end);
        let mut resp = Resp {
            status,
            headers,
            body: Vec::new(),
        };
        if head_only || matches!(status, 100..=199 | 204 | 304) {
            return resp;
        }
        match resp.header("content-length") {
            Some(len) => {
                let len: usize = len.parse().expect("numeric Content-Length");
                while self.buf.len() < len {
                    assert!(self.fill().await, "EOF inside body");
                }
                resp.body = self.buf.drain(..len).collect();
            }
            None => {
                // The target always knows its lengths; without one, the body runs to EOF.
                while self.fill().await {}
                resp.body = std::mem::take(&mut self.buf);
            }
        }
        resp
    }

    pub async fn call(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Resp {
        self.send(&request(method, path, headers, body)).await;
        self.response(method == "HEAD").await
    }

    pub async fn get(&mut self, path: &str) -> Resp {
        self.call("GET", path, &[], b"").await
    }

    /// Reads (and counts) whatever the server still sends, until it closes.
    pub async fn drain_to_eof(&mut self) {
        while self.fill().await {}
        self.buf.clear();
    }
}

/// One request on a fresh connection that is closed afterwards.
pub async fn once(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Resp {
    let mut c = connect(addr).await;
    let mut headers = headers.to_vec();
    headers.push(("Connection", "close"));
    c.call(method, path, &headers, body).await
}

pub async fn get(addr: std::net::SocketAddr, path: &str) -> Resp {
    once(addr, "GET", path, &[], b"").await
}
