//! One exchange: a request sent on a reused keep-alive connection or on a new one (resolve,
//! `blacklistIPs`, connect, TLS), and its response read with the body limit. Nothing here
//! waits on anything but the network; the future runs wherever the VU awaits it.

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use super::ClientSettings;
use crate::h1::{Connection, Request};
use crate::message::{BodyMode, ConnectTimings, Response};
use crate::url::Target;
use crate::{ErrorClass, HttpError};

/// What one exchange produced.
pub struct Exchange {
    pub(super) result: Result<Response, HttpError>,
    pub(super) connect: Option<ConnectTimings>,
    /// The connection, when it can be reused.
    pub(super) conn: Option<Box<Connection>>,
    pub(super) addr: Option<SocketAddr>,
}

impl Exchange {
    fn failed(e: HttpError, addr: Option<SocketAddr>) -> Exchange {
        Exchange {
            result: Err(e),
            connect: None,
            conn: None,
            addr,
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
) -> Exchange {
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
    }
}
