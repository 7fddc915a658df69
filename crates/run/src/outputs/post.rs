//! Sending batches: a thread per aggregated output that POSTs each body it is given over
//! plain HTTP/1.1 (one short connection per batch, once a second). Blocking std networking
//! on its own thread keeps the VU runtimes and the coordinator free of it.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::mpsc;
use std::time::Duration;

/// Batches waiting to be sent before new ones are dropped (a receiver that is down must not
/// grow memory without bound).
const QUEUE: usize = 60;
const TIMEOUT: Duration = Duration::from_secs(5);

/// An `http://host[:port]/path` URL.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpUrl {
    pub host: String,
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
}

impl HttpUrl {
    pub fn parse(u: &str) -> Result<HttpUrl, String> {
        let rest = u.strip_prefix("http://").ok_or_else(|| {
            format!("'{u}': expected an http:// URL (https is not supported by this output yet)")
        })?;
        let (hostport, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = if let Some(h) = hostport.strip_prefix('[') {
            let (h, p) = h
                .split_once(']')
                .ok_or_else(|| format!("'{u}': unclosed '['"))?;
            (h.to_string(), p.strip_prefix(':').unwrap_or(""))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), p),
                None => (hostport.to_string(), ""),
            }
        };
        if host.is_empty() {
            return Err(format!("'{u}': no host"));
        }
        let port = if port.is_empty() {
            80
        } else {
            port.parse().map_err(|_| format!("'{u}': bad port"))?
        };
        Ok(HttpUrl {
            host,
            port,
            path: path.to_string(),
        })
    }

    pub fn with_path(&self, path: &str) -> HttpUrl {
        HttpUrl {
            path: path.to_string(),
            ..self.clone()
        }
    }

    fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Percent-encode a query value.
pub fn query_escape(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            o.push(b as char);
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

/// POST `body` and return the status code and response body.
pub fn post(url: &HttpUrl, headers: &[(&str, &str)], body: &[u8]) -> Result<(u16, String), String> {
    let addr = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("no address")?;
    let mut s = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(|e| e.to_string())?;
    let _ = s.set_read_timeout(Some(TIMEOUT));
    let _ = s.set_write_timeout(Some(TIMEOUT));
    let mut req = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: volley/{}\r\nContent-Length: {}\r\n\
         Connection: close\r\n",
        url.path,
        url.authority(),
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes())
        .and_then(|_| s.write_all(body))
        .map_err(|e| e.to_string())?;
    let mut resp = Vec::new();
    // Read to EOF (Connection: close), bounded.
    let _ = s.take(1 << 20).read_to_end(&mut resp);
    let text = String::from_utf8_lossy(&resp);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(|| "no HTTP response".to_string())?;
    let body = text
        .split_once("\r\n\r\n")
        .map_or(String::new(), |(_, b)| b.trim().to_string());
    Ok((status, body))
}

/// The sending thread of one output.
pub struct Sender {
    tx: Option<mpsc::SyncSender<Vec<u8>>>,
    join: Option<std::thread::JoinHandle<Option<String>>>,
    name: &'static str,
    dropped: u64,
}

impl Sender {
    pub fn start(
        name: &'static str,
        url: HttpUrl,
        headers: &'static [(&'static str, &'static str)],
    ) -> Sender {
        let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(QUEUE);
        let join = std::thread::Builder::new()
            .name(format!("volley-out-{name}"))
            .spawn(move || {
                let (mut first, mut failed, mut sent) = (None, 0u64, 0u64);
                for body in rx {
                    sent += 1;
                    let r = post(&url, headers, &body);
                    let err = match r {
                        Ok((c, _)) if (200..300).contains(&c) => None,
                        Ok((c, b)) => Some(format!("HTTP {c}: {}", b.chars().take(300).collect::<String>())),
                        Err(e) => Some(e),
                    };
                    if let Some(e) = err {
                        failed += 1;
                        first.get_or_insert(e);
                    }
                }
                first.map(|e| {
                    format!(
                        "--out {name}: {failed} of {sent} batches to http://{}{} failed; first: {e}",
                        url.authority(),
                        url.path
                    )
                })
            })
            .ok();
        Sender {
            tx: Some(tx),
            join,
            name,
            dropped: 0,
        }
    }

    pub fn send(&mut self, body: Vec<u8>) {
        if let Some(tx) = &self.tx {
            if tx.try_send(body).is_err() {
                self.dropped += 1;
            }
        }
    }

    /// Send what is queued, stop the thread, and return the first problem.
    pub fn finish(mut self) -> Option<String> {
        drop(self.tx.take());
        let err = self.join.take().and_then(|j| j.join().ok().flatten());
        match (err, self.dropped) {
            (e, 0) => e,
            (e, n) => Some(format!(
                "--out {}: {n} batches dropped (the receiver was too slow){}",
                self.name,
                e.map(|e| format!("; {e}")).unwrap_or_default()
            )),
        }
    }
}
