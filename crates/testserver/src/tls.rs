//! TLS setup: turns a PEM identity into an acceptor that offers `h2` and `http/1.1` via ALPN.

use std::io;
use std::sync::Arc;

use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use crate::TlsIdentity;

fn invalid(what: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("{what}: {e}"))
}

pub(crate) fn acceptor(identity: &TlsIdentity) -> io::Result<TlsAcceptor> {
    let certs = CertificateDer::pem_slice_iter(&identity.cert_chain_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid("TLS certificate chain", e))?;
    if certs.is_empty() {
        return Err(invalid(
            "TLS certificate chain",
            "no CERTIFICATE block found",
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&identity.key_pem)
        .map_err(|e| invalid("TLS private key", e))?;
    // The provider is named explicitly so the process-wide default (which another crate might
    // install, or leave ambiguous) does not matter.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid("TLS protocol versions", e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| invalid("TLS identity", e))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
