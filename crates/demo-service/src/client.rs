//! A tiny HTTP/1.1 client (hyper's client half) for [`crate::seed`] and the tests: one
//! keep-alive connection that is reopened when the server closes it, and a timeout on every
//! request so nothing can hang. Not a load generator — Volley's own engine is that.

use std::io;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::HeaderMap;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// A complete response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Every `Set-Cookie` value.
    pub fn set_cookies(&self) -> Vec<String> {
        self.headers
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect()
    }

    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

pub struct Client {
    host: String,
    port: u16,
    sender: Option<SendRequest<Full<Bytes>>>,
    /// Bound on each request, connect to last body byte.
    pub timeout: Duration,
}

impl Client {
    /// `base_url` is `http://HOST:PORT` (a trailing `/` is fine; no path, no TLS).
    pub fn new(base_url: &str) -> Result<Client, String> {
        let rest = base_url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{base_url}: only http:// URLs are supported"))?
            .trim_end_matches('/');
        let (host, port) = match rest.rsplit_once(':') {
            Some((h, p)) if !h.is_empty() && !p.contains(']') => (
                h.trim_start_matches('[').trim_end_matches(']').to_owned(),
                p.parse().map_err(|_| format!("{base_url}: bad port"))?,
            ),
            _ => (rest.to_owned(), 80),
        };
        if host.is_empty() || host.contains('/') {
            return Err(format!("{base_url}: expected http://HOST:PORT"));
        }
        Ok(Client {
            host,
            port,
            sender: None,
            timeout: Duration::from_secs(60),
        })
    }

    async fn connect(&mut self) -> io::Result<&mut SendRequest<Full<Bytes>>> {
        let usable = match self.sender.as_mut() {
            Some(s) => !s.is_closed() && s.ready().await.is_ok(),
            None => false,
        };
        if !usable {
            let tcp = TcpStream::connect((self.host.as_str(), self.port)).await?;
            let _ = tcp.set_nodelay(true);
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
                .await
                .map_err(io::Error::other)?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            self.sender = Some(sender);
        }
        Ok(self.sender.as_mut().expect("connected"))
    }

    /// Sends one request and reads the whole response.
    pub async fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> io::Result<Response> {
        let timeout = self.timeout;
        let body = body.into();
        let host = format!("{}:{}", self.host, self.port);
        let fut = async {
            let mut b = hyper::Request::builder()
                .method(method)
                .uri(path)
                .header("host", host);
            for (k, v) in headers {
                b = b.header(*k, *v);
            }
            let req = b.body(Full::new(body)).map_err(io::Error::other)?;
            let sender = self.connect().await?;
            let resp = sender.send_request(req).await.map_err(io::Error::other)?;
            let (parts, body) = resp.into_parts();
            let body = body.collect().await.map_err(io::Error::other)?.to_bytes();
            Ok(Response {
                status: parts.status.as_u16(),
                headers: parts.headers,
                body,
            })
        };
        match tokio::time::timeout(timeout, fut).await {
            Ok(r) => r,
            Err(_) => {
                self.sender = None;
                Err(io::Error::new(io::ErrorKind::TimedOut, "request timed out"))
            }
        }
    }

    /// A JSON request (`Content-Type: application/json`).
    pub async fn json(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &serde_json::Value,
    ) -> io::Result<Response> {
        let mut h = headers.to_vec();
        h.push(("content-type", "application/json"));
        self.request(
            method,
            path,
            &h,
            serde_json::to_vec(body).unwrap_or_default(),
        )
        .await
    }
}

/// The boundary [`multipart`] uses.
pub const BOUNDARY: &str = "volley-demo-boundary-7MA4YWxkTrZu0gW";

/// A `multipart/form-data` body with text `fields` and one file part named `file`; its
/// `Content-Type` is `multipart/form-data; boundary=` + [`BOUNDARY`].
pub fn multipart(fields: &[(&str, &str)], filename: &str, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 512);
    for (k, v) in fields {
        out.extend_from_slice(
            format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n")
                .as_bytes(),
        );
    }
    out.extend_from_slice(
        format!(
            "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{}\"\r\nContent-Type: application/octet-stream\r\n\r\n",
            filename.replace('"', "\\\"")
        )
        .as_bytes(),
    );
    out.extend_from_slice(data);
    out.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    out
}

/// `Content-Type` of a [`multipart`] body.
pub fn multipart_type() -> String {
    format!("multipart/form-data; boundary={BOUNDARY}")
}
