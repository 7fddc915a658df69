//! `connect`'s `tls` param against an mTLS server started here: a tokio-rustls front that
//! requires a client certificate signed by a test CA, forwarding to the built-in target's
//! h2c gRPC service on loopback.

use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use volley_grpc::call::{self, ConnectOptions};
use volley_grpc::tls::{client_config, ClientTls};
use volley_grpc::{json, proto, status};

struct Pki {
    ca: String,
    server: (String, String),
    client: (String, String),
}

fn pki() -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf = |names: Vec<String>| {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    };
    Pki {
        server: leaf(vec!["127.0.0.1".into()]),
        client: leaf(vec!["client.test".into()]),
        ca,
    }
}

/// Accepts TLS connections that present a client certificate signed by `ca`, and pipes each
/// to `backend`. Returns the listening address.
async fn mtls_front(p: &Pki, backend: std::net::SocketAddr) -> std::net::SocketAddr {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(p.ca.as_bytes()).unwrap())
        .unwrap();
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    let chain = vec![CertificateDer::from_pem_slice(p.server.0.as_bytes()).unwrap()];
    let key = PrivateKeyDer::from_pem_slice(p.server.1.as_bytes()).unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut back) = TcpStream::connect(backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut back).await;
            });
        }
    });
    addr
}

/// Connects with `tls` and makes one Echo call: Ok(text echoed) or the first error.
async fn echo(addr: &str, tls: &ClientTls) -> Result<String, String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/grpc");
    let pool = proto::load(&[dir], &["target.proto".into()]).unwrap();
    let m = proto::find_method(&pool, "volley.target.Target/Echo").unwrap();
    let opts = ConnectOptions {
        tls: Some(client_config(false, tls)?),
        timeout: Duration::from_secs(10),
        ..Default::default()
    };
    let (c, driver) = call::connect(addr, &opts).await?;
    tokio::spawn(driver);
    let req = json::encode(&m.input(), r#"{"text":"mtls"}"#).unwrap();
    let r = c
        .unary(
            "/volley.target.Target/Echo",
            &vec![],
            &req,
            Duration::from_secs(10),
        )
        .await;
    if r.status != status::OK {
        return Err(r.message);
    }
    Ok(json::decode(&m.output(), &r.body.unwrap()).unwrap())
}

#[test]
fn client_certificate_and_ca_strings_are_applied() {
    let target = volley_testserver::spawn(volley_testserver::TargetConfig::default()).unwrap();
    let p = pki();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let front = mtls_front(&p, target.local_addr()).await.to_string();
        let full = ClientTls {
            cert: Some(p.client.0.clone()),
            key: Some(p.client.1.clone()),
            password: None,
            cacerts: vec![p.ca.clone()],
        };
        // The server's certificate verifies through the CA string alone (no insecure).
        let out = echo(&front, &full).await.expect("mTLS call");
        assert!(out.contains("\"text\":\"mtls\""), "{out}");

        // Without the client certificate the server refuses the handshake.
        let no_cert = ClientTls {
            cacerts: vec![p.ca.clone()],
            ..Default::default()
        };
        let err = echo(&front, &no_cert).await.unwrap_err();
        // connect itself fails (as k6's connect throws): TLS 1.3 reports it in the h2 handshake.
        assert!(err.starts_with("failed to connect to"), "{err}");
        assert!(err.contains("CertificateRequired"), "{err}");

        // Without the CA string the server's certificate is not trusted.
        let no_ca = ClientTls {
            cacerts: vec![],
            ..full.clone()
        };
        let err = echo(&front, &no_ca).await.unwrap_err();
        assert!(err.starts_with("failed to connect to"), "{err}");
        assert!(err.contains("UnknownIssuer"), "{err}");
    });
}
