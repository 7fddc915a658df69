use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::client::{connect, Client};
use super::target;
use crate::{spawn, TargetConfig, TlsIdentity};

/// Sends requests over one HTTP/2 connection with hyper's client.
struct H2 {
    sender: hyper::client::conn::http2::SendRequest<Full<Bytes>>,
}

impl H2 {
    async fn handshake<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(io: S) -> H2 {
        let (sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io))
                .await
                .expect("h2 handshake");
        tokio::spawn(conn);
        H2 { sender }
    }

    async fn send(
        &mut self,
        method: &str,
        path: &str,
        body: &'static [u8],
    ) -> (Response<()>, Bytes) {
        let req = Request::builder()
            .method(method)
            .uri(format!("http://localhost{path}"))
            .body(Full::new(Bytes::from_static(body)))
            .unwrap();
        let fut = async {
            let resp = self.sender.send_request(req).await.expect("h2 response");
            let (parts, body) = resp.into_parts();
            let body = body.collect().await.expect("h2 body").to_bytes();
            (Response::from_parts(parts, ()), body)
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), fut)
            .await
            .expect("h2 request timed out")
    }
}

#[tokio::test]
async fn h2c_prior_knowledge_on_the_same_port() {
    let t = target();
    let tcp = TcpStream::connect(t.local_addr()).await.unwrap();
    let mut h2 = H2::handshake(tcp).await;
    let (resp, body) = h2.send("GET", "/", b"").await;
    assert_eq!(resp.status(), 200);
    assert_eq!(body, "Hello, world!");
    assert_eq!(resp.headers()["content-type"], "text/plain");

    let (_, body) = h2.send("POST", "/echo?v=2", b"over h2").await;
    let j: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(j["version"], "HTTP/2.0");
    assert_eq!(j["method"], "POST");
    assert_eq!(j["body"], "over h2");

    let (_, body) = h2.send("GET", "/bytes/300000", b"").await;
    assert_eq!(body.len(), 300_000);
    let (_, body) = h2.send("PUT", "/upload", &[1u8; 100_000]).await;
    assert_eq!(&body[..], br#"{"bytes":100000}"#);

    // HTTP/1.1 still works on the same port, and a /stats over h2 is not counted.
    let mut c = connect(t.local_addr()).await;
    assert_eq!(c.get("/").await.status, 200);
    let stats_conn = TcpStream::connect(t.local_addr()).await.unwrap();
    let (_, body) = H2::handshake(stats_conn)
        .await
        .send("GET", "/stats", b"")
        .await;
    let j: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(j["requests"], 5);
    assert_eq!(j["connections"], 2);
}

fn tls_identity() -> (TlsIdentity, rustls::pki_types::CertificateDer<'static>) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let identity = TlsIdentity {
        cert_chain_pem: cert.cert.pem().into_bytes(),
        key_pem: cert.signing_key.serialize_pem().into_bytes(),
    };
    (identity, cert.cert.der().clone())
}

async fn tls_connect(
    addr: std::net::SocketAddr,
    cert: &rustls::pki_types::CertificateDer<'static>,
    alpn: &[u8],
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.clone()).unwrap();
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    let tcp = TcpStream::connect(addr).await.unwrap();
    let tls = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .expect("TLS handshake");
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(alpn));
    tls
}

#[tokio::test]
async fn tls_serves_http1_and_h2_via_alpn() {
    let (identity, cert) = tls_identity();
    let t = spawn(TargetConfig {
        tls: Some(identity),
        ..Default::default()
    })
    .unwrap();
    assert!(t.url().starts_with("https://127.0.0.1:"), "{}", t.url());

    let mut c = Client::new(tls_connect(t.local_addr(), &cert, b"http/1.1").await);
    let r = c.get("/").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"Hello, world!");
    assert_eq!(c.get("/echo").await.json()["version"], "HTTP/1.1");

    let mut h2 = H2::handshake(tls_connect(t.local_addr(), &cert, b"h2").await).await;
    let (resp, body) = h2.send("GET", "/echo", b"").await;
    assert_eq!(resp.status(), 200);
    let j: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(j["version"], "HTTP/2.0");

    let s = t.stats();
    assert_eq!((s.requests, s.connections), (3, 2));
    // Bytes are counted below TLS: more went over the wire than the plain-text requests.
    assert!(
        s.bytes_received > c.written && s.bytes_sent > c.read,
        "{s:?}"
    );
}

#[test]
fn bad_tls_identity_is_an_error() {
    let identity = TlsIdentity {
        cert_chain_pem: b"not pem".to_vec(),
        key_pem: b"nope".to_vec(),
    };
    let err = spawn(TargetConfig {
        tls: Some(identity),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

#[tokio::test]
async fn shutdown_stops_listening_and_ends_connections() {
    let t = target();
    let addr = t.local_addr();
    assert_eq!(t.url(), format!("http://{addr}"));
    let mut c = connect(addr).await;
    assert_eq!(c.get("/").await.status, 200);
    t.shutdown();
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "still accepting after shutdown"
    );
    // The open keep-alive connection is closed by the server (EOF, or a reset surfacing as an
    // error from the client's read).
    let mut io = c.into_inner();
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tokio::io::AsyncReadExt::read(&mut io, &mut buf),
    )
    .await
    .expect("connection not closed");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
}

#[test]
fn wildcard_bind_shows_loopback_url() {
    assert_eq!(
        crate::url("0.0.0.0:8080".parse().unwrap(), false),
        "http://127.0.0.1:8080"
    );
    assert_eq!(
        crate::url("[::]:8443".parse().unwrap(), true),
        "https://[::1]:8443"
    );
    assert_eq!(
        crate::url("10.1.2.3:80".parse().unwrap(), false),
        "http://10.1.2.3:80"
    );
}
