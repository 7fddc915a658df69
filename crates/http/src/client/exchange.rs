//! One exchange: a request sent on a reused keep-alive connection or on a new one (resolve,
//! `blacklistIPs`, connect, TLS), and its response read with the body limit. Nothing here
//! waits on anything but the network; the future runs wherever the VU awaits it.
//!
//! https requests offer ALPN `h2` and `http/1.1`, as k6 does: when the server picks `h2`
//! the request goes out over HTTP/2 ([`H2Parts`]) and the connection is kept for the VU's
//! next requests to that origin, which share it ([`exchange_h2`]). Plain http stays
//! HTTP/1.1 (h2c is opt-in, in quick mode).

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use super::dialing::{Announce, Dialing};
use super::ClientSettings;
use crate::h1::{Connection, Request};
use crate::http2::{H2Connection, H2Request};
use crate::message::{Body, BodyMode, ConnectTimings, Response};
use crate::transport::{self, Owned};
use crate::url::Target;
use crate::{ErrorClass, HttpError};

/// What an https request needs to be sent over HTTP/2 instead.
pub(super) struct H2Parts {
    pub(super) method: String,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Body,
    /// Tells the origin's waiting requests what the new connection speaks ([`super::dialing`]).
    pub(super) announce: Option<Announce>,
    /// The origin's dial in flight to wait for first: its h2 connection, else our own.
    pub(super) wait: Option<Rc<Dialing>>,
}

/// What one exchange produced.
pub struct Exchange {
    pub(super) result: Result<Response, HttpError>,
    pub(super) connect: Option<ConnectTimings>,
    /// The connection, when it can be reused.
    pub(super) conn: Option<Box<Connection>>,
    pub(super) addr: Option<SocketAddr>,
    /// The HTTP/2 connection it went over (kept for the origin's next requests).
    pub(super) h2: Option<H2Connection>,
    /// It went over HTTP/2 (even if the connection has closed since).
    pub(super) http2: bool,
}

impl Exchange {
    fn failed(e: HttpError, addr: Option<SocketAddr>) -> Exchange {
        Exchange {
            result: Err(e),
            connect: None,
            conn: None,
            addr,
            h2: None,
            http2: false,
        }
    }
}

/// Send `req` to `target`, on `conn` when it can be reused, else on a new connection.
#[allow(clippy::too_many_arguments)]
pub(super) async fn exchange(
    target: Rc<Target>,
    req: Request,
    conn: Option<Box<Connection>>,
    cached_addr: Option<SocketAddr>,
    tls: Option<Arc<rustls::ClientConfig>>,
    timeout: Duration,
    mode: BodyMode,
    settings: Arc<ClientSettings>,
    mut h2: Option<H2Parts>,
) -> Exchange {
    if let Some(d) = h2.as_mut().and_then(|p| p.wait.take()) {
        if let (Some((c, addr)), Some(parts)) = (d.outcome().await, h2.take()) {
            return exchange_h2(c, &target, parts, timeout, mode, addr).await;
        }
    }
    let mut connect = None;
    let (mut conn, addr) = match conn.filter(|c| c.is_reusable()) {
        Some(c) => (c, cached_addr),
        None => {
            let addr = match cached_addr {
                Some(a) => a,
                None => match Box::pin(target.resolve()).await {
                    Ok(a) => a[0],
                    Err(e) => return Exchange::failed(e, None),
                },
            };
            // k6's blacklistIPs: checked on the address about to be dialled.
            if let Some(net) = settings.blacklisted(addr.ip()) {
                let msg = format!("IP ({}) is in a blacklisted range ({net})", addr.ip());
                return Exchange::failed(HttpError::new(ErrorClass::Other, msg), None);
            }
            if let Some(parts) = h2 {
                return Box::pin(connect_alpn(
                    target, req, addr, tls, timeout, mode, settings, parts,
                ))
                .await;
            }
            // Boxed: the connect future (TLS handshake included) is big, and the exchange
            // future is moved onto the heap on every request, also when it reuses a connection.
            match Box::pin(Connection::connect(addr, &target, tls.as_ref(), timeout)).await {
                Ok((mut c, t)) => {
                    c.keep_headers(true);
                    connect = Some(t);
                    (Box::new(c), Some(addr))
                }
                Err(e) => return Exchange::failed(e, Some(addr)),
            }
        }
    };
    conn.set_max_body(Some(settings.max_response_body));
    let result = conn.send(&req, mode, timeout).await;
    let keep = matches!(&result, Ok(r) if r.keep_alive) && conn.is_reusable();
    Exchange {
        result,
        connect,
        conn: keep.then_some(conn),
        addr,
        h2: None,
        http2: false,
    }
}

/// A new https connection offering `h2` and `http/1.1`: HTTP/2 when the server picks it
/// (its driver spawned on the VU's worker), else this request's HTTP/1.1 exchange.
#[allow(clippy::too_many_arguments)]
async fn connect_alpn(
    target: Rc<Target>,
    req: Request,
    addr: SocketAddr,
    tls: Option<Arc<rustls::ClientConfig>>,
    timeout: Duration,
    mode: BodyMode,
    settings: Arc<ClientSettings>,
    mut parts: H2Parts,
) -> Exchange {
    // Dropped on any failure below: the waiting requests then dial their own.
    let announce = parts.announce.take();
    let opened = transport::open(addr, &target, tls.as_ref(), timeout, Owned::default()).await;
    let (io, t) = match opened {
        Ok(x) => x,
        Err(e) => return Exchange::failed(e, Some(addr)),
    };
    if io.alpn_protocol() != Some(b"h2".as_slice()) {
        if let Some(a) = &announce {
            a.own();
        }
        let mut conn = Box::new(Connection::from_io(io));
        conn.keep_headers(true);
        conn.set_max_body(Some(settings.max_response_body));
        let result = conn.send(&req, mode, timeout).await;
        let keep = matches!(&result, Ok(r) if r.keep_alive) && conn.is_reusable();
        return Exchange {
            result,
            connect: Some(t),
            conn: keep.then_some(conn),
            addr: Some(addr),
            h2: None,
            http2: false,
        };
    }
    let (mut conn, driver) = match H2Connection::on_stream(io, addr, timeout).await {
        Ok(x) => x,
        Err(e) => return Exchange::failed(e, Some(addr)),
    };
    tokio::spawn(driver);
    conn.keep_headers(true);
    conn.set_max_body(settings.max_response_body);
    if let Some(a) = &announce {
        a.h2(&conn, Some(addr));
    }
    let mut ex = exchange_h2(conn, &target, parts, timeout, mode, Some(addr)).await;
    ex.connect = Some(t);
    ex
}

/// A request over the origin's HTTP/2 connection (concurrent requests share it).
pub(super) async fn exchange_h2(
    conn: H2Connection,
    target: &Target,
    parts: H2Parts,
    timeout: Duration,
    mode: BodyMode,
    addr: Option<SocketAddr>,
) -> Exchange {
    let req = match H2Request::new(&parts.method, target, &parts.headers, parts.body) {
        Ok(r) => r,
        Err(e) => return Exchange::failed(HttpError::new(ErrorClass::Other, e), addr),
    };
    let result = conn.send(&req, mode, timeout).await;
    Exchange {
        result,
        connect: None,
        conn: None,
        addr,
        h2: (!conn.is_closed()).then_some(conn),
        http2: true,
    }
}
