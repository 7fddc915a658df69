//! The coordinator's HTTP side: hyper (HTTP/1.1 and HTTP/2 on one port, TLS by rustls when
//! a certificate is given) on a small tokio runtime of its own. Each request: the token
//! checked first (401), the JSON body read with a size limit, the [`Hub`] asked; `ready`
//! and `teardown` are long-polls held up to [`proto::POLL_HOLD_MS`].

use crate::hub::{Hub, Refusal};
use crate::proto::{self, AgentId, Failed, Final, Ready, Register, Reply, Snapshot};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde::{de::DeserializeOwned, Serialize};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
pub use tokio_rustls::TlsAcceptor;

/// A running server; dropping it stops it.
pub struct Server {
    pub addr: SocketAddr,
    _rt: tokio::runtime::Runtime,
}

/// Bind `listen` and serve `hub` with `token` (and TLS when `tls` is Some).
pub fn start(
    listen: &str,
    token: String,
    tls: Option<TlsAcceptor>,
    hub: Arc<Hub>,
) -> Result<Server, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("volley-coordinator")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the coordinator's server: {e}"))?;
    let listener = rt
        .block_on(tokio::net::TcpListener::bind(listen))
        .map_err(|e| format!("--listen {listen}: cannot bind: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("--listen {listen}: {e}"))?;
    let token = Arc::new(token);
    rt.spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let (hub, token, tls) = (hub.clone(), token.clone(), tls.clone());
            tokio::spawn(async move {
                let _ = tcp.set_nodelay(true);
                let svc =
                    hyper::service::service_fn(move |req| handle(req, hub.clone(), token.clone()));
                let http = auto::Builder::new(TokioExecutor::new());
                // Errors here (resets, bad requests, failed handshakes) concern one agent.
                match tls {
                    None => {
                        let _ = http.serve_connection(TokioIo::new(tcp), svc).await;
                    }
                    Some(acc) => {
                        let hs = tokio::time::timeout(Duration::from_secs(10), acc.accept(tcp));
                        if let Ok(Ok(s)) = hs.await {
                            let _ = http.serve_connection(TokioIo::new(s), svc).await;
                        }
                    }
                }
            });
        }
    });
    Ok(Server { addr, _rt: rt })
}

/// `--tls-cert` and `--tls-key` (PEM) as an acceptor.
pub fn tls_acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let certs = CertificateDer::pem_slice_iter(&read(cert)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "--tls-cert {}: no certificate (expected PEM '-----BEGIN CERTIFICATE-----')",
            cert.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&read(key)?)
        .map_err(|e| format!("--tls-key {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("--tls-cert/--tls-key: {e}"))?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(cfg)))
}

type Resp = Response<Full<Bytes>>;

fn answer(status: u16, body: Vec<u8>) -> Resp {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

fn refuse((status, msg): Refusal) -> Resp {
    answer(
        status,
        serde_json::json!({ "error": msg }).to_string().into_bytes(),
    )
}

fn ok(v: &impl Serialize) -> Resp {
    match serde_json::to_vec(v) {
        Ok(b) => answer(200, b),
        Err(e) => refuse((500, e.to_string())),
    }
}

async fn body<T: DeserializeOwned>(req: Request<Incoming>) -> Result<T, Refusal> {
    let bytes = Limited::new(req.into_body(), proto::MAX_BODY)
        .collect()
        .await
        .map_err(|e| (413, format!("cannot read the request: {e}")))?
        .to_bytes();
    serde_json::from_slice(&bytes).map_err(|e| (400, format!("bad request body: {e}")))
}

async fn handle(
    req: Request<Incoming>,
    hub: Arc<Hub>,
    token: Arc<String>,
) -> Result<Resp, std::convert::Infallible> {
    let presented = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if !proto::token_ok(&token, presented) {
        return Ok(refuse((
            401,
            "missing or wrong token: give the coordinator's --token (or VOLLEY_TOKEN)".into(),
        )));
    }
    if req.method() != hyper::Method::POST {
        return Ok(refuse((405, "use POST".into())));
    }
    let path = req.uri().path().to_string();
    let r = match path.as_str() {
        proto::REGISTER => match body::<Register>(req).await {
            Ok(r) => hub.register(r).map(|a| ok(&a)),
            Err(e) => Err(e),
        },
        proto::READY => match body::<Ready>(req).await {
            Ok(r) => hold(|| hub.ready(r.clone())).await,
            Err(e) => Err(e),
        },
        proto::SNAPSHOT => match body::<Snapshot>(req).await {
            Ok(s) => hub.snapshot(s).map(|r| ok(&r)),
            Err(e) => Err(e),
        },
        proto::TEARDOWN => match body::<AgentId>(req).await {
            Ok(a) => hold(|| hub.teardown(a.agent)).await,
            Err(e) => Err(e),
        },
        proto::FINAL => match body::<Final>(req).await {
            Ok(f) => hub.finish(f).map(|r| ok(&r)),
            Err(e) => Err(e),
        },
        proto::FAILED => match body::<Failed>(req).await {
            Ok(f) => hub.failed(f).map(|r| ok(&r)),
            Err(e) => Err(e),
        },
        _ => Err((404, format!("no such endpoint: {path}"))),
    };
    Ok(r.unwrap_or_else(refuse))
}

/// Ask `f` until it says go, stop or fail, or [`proto::POLL_HOLD_MS`] passed.
async fn hold(f: impl Fn() -> Result<Reply, Refusal>) -> Result<Resp, Refusal> {
    let until = Instant::now() + Duration::from_millis(proto::POLL_HOLD_MS);
    loop {
        let r = f()?;
        if r.go || r.stop || r.fail.is_some() || Instant::now() >= until {
            return Ok(ok(&r));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
