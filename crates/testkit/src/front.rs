//! [`TlsFront`]: a TLS listener on 127.0.0.1 in front of a plain-text backend (usually the
//! built-in target), for client-side TLS tests: it counts accepted TCP connections (how many
//! connections a client dialled), offers the ALPN protocols the test chooses (h2 or only
//! http/1.1) and can require a client certificate signed by a CA (mutual TLS). Each accepted
//! connection is piped byte for byte to the backend, so an `h2` front needs a backend that
//! speaks h2c with prior knowledge (the built-in target does).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// What the front presents and asks for (PEM text).
pub struct FrontConfig {
    pub cert: String,
    pub key: String,
    /// Require a client certificate signed by this CA.
    pub client_ca: Option<String>,
    /// ALPN protocols offered, in preference order, e.g. `[b"h2", b"http/1.1"]`.
    pub alpn: Vec<Vec<u8>>,
}

/// A running front; stopped when dropped.
pub struct TlsFront {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TlsFront {
    /// Listens on 127.0.0.1 (an ephemeral port) on its own thread and runtime.
    pub fn start(config: FrontConfig, backend: SocketAddr) -> TlsFront {
        let acceptor = tokio_rustls::TlsAcceptor::from(server_config(config));
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind front");
        std_listener.set_nonblocking(true).unwrap();
        let addr = std_listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        let (stop, mut stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = TcpListener::from_std(std_listener).unwrap();
                loop {
                    let tcp = tokio::select! {
                        _ = &mut stopped => return,
                        r = listener.accept() => match r {
                            Ok((tcp, _)) => tcp,
                            Err(_) => continue,
                        },
                    };
                    count.fetch_add(1, Ordering::SeqCst);
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
        });
        TlsFront {
            addr,
            accepted,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// An h2 front requiring a client certificate signed by `pki`'s CA (mutual TLS).
    pub fn mutual(pki: &crate::Pki, backend: SocketAddr) -> TlsFront {
        TlsFront::start(
            FrontConfig {
                cert: pki.server.0.clone(),
                key: pki.server.1.clone(),
                client_ca: Some(pki.ca.clone()),
                alpn: vec![b"h2".to_vec()],
            },
            backend,
        )
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// TCP connections accepted so far (each is one TLS handshake attempt).
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn server_config(c: FrontConfig) -> Arc<rustls::ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match &c.client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(ca.as_bytes()) {
                roots.add(cert.expect("CA PEM")).unwrap();
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let chain = CertificateDer::pem_slice_iter(c.cert.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .expect("server certificate PEM");
    let key = PrivateKeyDer::from_pem_slice(c.key.as_bytes()).expect("server key PEM");
    let mut config = builder.with_single_cert(chain, key).unwrap();
    config.alpn_protocols = c.alpn;
    Arc::new(config)
}
