//! The accept loop, per-connection setup and the hyper service.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::service::Service;
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::gate::Gate;
use crate::meter::{ConnMeter, Counters, CountingIo};
use crate::routes::{self, Resp, Route};

/// A client that connects over TLS but never finishes the handshake is dropped after this.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything connections share.
pub(crate) struct Shared {
    pub(crate) counters: Arc<Counters>,
    pub(crate) delay_all: Option<Duration>,
    pub(crate) tls: Option<TlsAcceptor>,
    /// `--workers` / `--fail-above`.
    pub(crate) gate: Option<Arc<Gate>>,
    http: auto::Builder<TokioExecutor>,
}

impl Shared {
    pub(crate) fn new(delay_all: Option<Duration>, tls: Option<TlsAcceptor>) -> Self {
        // `auto` sniffs the HTTP/2 preface, so h2c (prior knowledge), HTTP/1.1, and both over
        // TLS share one port and one code path.
        let mut http = auto::Builder::new(TokioExecutor::new());
        http.http1().keep_alive(true).pipeline_flush(true);
        http.http2().max_concurrent_streams(256);
        Shared {
            counters: Arc::new(Counters::default()),
            delay_all,
            tls,
            gate: None,
            http,
        }
    }
}

/// Accepts until `stop` resolves (see [`crate::harness::accept_until`]).
pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    stop: impl Future<Output = ()>,
) {
    crate::harness::accept_until(listener, stop, |tcp| {
        tokio::spawn(serve_conn(tcp, shared.clone()));
    })
    .await
}

async fn serve_conn(tcp: TcpStream, shared: Arc<Shared>) {
    if let Ok(peer) = tcp.peer_addr() {
        shared.counters.add_peer(peer.ip());
    }
    let meter = Arc::new(ConnMeter::new(shared.counters.clone()));
    let service = ConnService {
        meter: meter.clone(),
        delay_all: shared.delay_all,
        gate: shared.gate.clone(),
    };
    // Counting sits below TLS so bytes are counted as they appear on the wire.
    let io = CountingIo::new(tcp, meter);
    // Errors here (resets, malformed requests, failed handshakes) concern only this client.
    match &shared.tls {
        None => {
            let _ = shared
                .http
                .serve_connection_with_upgrades(TokioIo::new(io), service)
                .await;
        }
        Some(acceptor) => {
            if let Ok(Ok(tls)) =
                tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(io)).await
            {
                let _ = shared
                    .http
                    .serve_connection_with_upgrades(TokioIo::new(tls), service)
                    .await;
            }
        }
    }
}

/// One per connection, so a request can classify its connection for byte accounting.
struct ConnService {
    meter: Arc<ConnMeter>,
    delay_all: Option<Duration>,
    gate: Option<Arc<Gate>>,
}

impl Service<Request<Incoming>> for ConnService {
    type Response = Resp;
    type Error = Infallible;
    type Future = RespFuture;

    // `call` runs inside the connection's task, right after hyper parsed the request head, so
    // the connection is classified before any byte of the response is written.
    fn call(&self, req: Request<Incoming>) -> RespFuture {
        let path = req.uri().path();
        let monitoring = path == "/stats" || path == "/metrics";
        self.meter.classify(monitoring);
        let counters = self.meter.counters();
        if monitoring {
            return RespFuture::Ready(Some(routes::monitoring(path == "/stats", counters)));
        }
        counters
            .requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(gate) = &self.gate {
            if gate.overloaded() {
                return RespFuture::Ready(Some(routes::overloaded()));
            }
            let (gate, delay) = (gate.clone(), self.delay_all);
            return RespFuture::Boxed(Box::pin(async move {
                gate.serve(delay).await;
                routes::finish(routes::route(req)).await
            }));
        }
        match self.delay_all {
            None => match routes::route(req) {
                Route::Ready(resp) => RespFuture::Ready(Some(resp)),
                pending => RespFuture::Boxed(Box::pin(routes::finish(pending))),
            },
            Some(delay) => RespFuture::Boxed(Box::pin(async move {
                tokio::time::sleep(delay).await;
                routes::finish(routes::route(req)).await
            })),
        }
    }
}

/// Synchronously answered requests (most of them, including `GET /`) skip boxing a future.
pub(crate) enum RespFuture {
    Ready(Option<Resp>),
    Boxed(Pin<Box<dyn Future<Output = Resp> + Send>>),
}

impl Future for RespFuture {
    type Output = Result<Resp, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            RespFuture::Ready(resp) => {
                Poll::Ready(Ok(resp.take().expect("RespFuture polled after completion")))
            }
            RespFuture::Boxed(fut) => fut.as_mut().poll(cx).map(Ok),
        }
    }
}
