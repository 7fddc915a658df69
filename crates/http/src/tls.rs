//! rustls client configuration.
//!
//! Built once per run and shared by every connection (handshakes then reuse its session
//! cache). The ring provider is passed explicitly so the result never depends on which
//! process-wide default some other crate installed.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

/// How server certificates are checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Accept any certificate (self-signed test servers). Overrides `cacert`.
    pub insecure: bool,
    /// Extra PEM trust anchors, added to the webpki roots.
    pub cacert: Option<PathBuf>,
}

/// Builds the client config: webpki roots plus `cacert`, or no verification when
/// `insecure`. `alpn` lists protocols to offer, e.g. `&[b"http/1.1"]`.
pub fn tls_config(opts: &TlsOptions, alpn: &[&[u8]]) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?;
    let mut config = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCert::new(provider)))
            .with_no_client_auth()
    } else {
        let mut roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        if let Some(path) = &opts.cacert {
            add_pem_roots(&mut roots, path)?;
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

fn add_pem_roots(roots: &mut RootCertStore, path: &PathBuf) -> Result<(), String> {
    let shown = path.display();
    let pem = std::fs::read(path).map_err(|e| format!("cannot read CA file {shown}: {e}"))?;
    let mut added = 0;
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| format!("bad PEM in CA file {shown}: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("unusable certificate in CA file {shown}: {e}"))?;
        added += 1;
    }
    if added == 0 {
        return Err(format!(
            "CA file {shown} contains no certificate: expected PEM '-----BEGIN CERTIFICATE-----' blocks"
        ));
    }
    Ok(())
}

/// `--insecure`: trusts any certificate, but still checks that the server holds the key
/// (handshake signatures), so a broken server is still reported as a TLS error. Also
/// PostgreSQL's `sslmode=require` (volley-postgres).
#[derive(Debug)]
pub struct AcceptAnyCert {
    provider: Arc<CryptoProvider>,
}

impl AcceptAnyCert {
    pub fn new(provider: Arc<CryptoProvider>) -> AcceptAnyCert {
        AcceptAnyCert { provider }
    }
}

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_path(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("volley-http-{}-{name}", std::process::id()))
    }

    #[test]
    fn missing_cacert_names_the_file() {
        let path = temp_path("does-not-exist.pem");
        let opts = TlsOptions {
            insecure: false,
            cacert: Some(path.clone()),
        };
        let e = tls_config(&opts, &[b"http/1.1"]).unwrap_err();
        assert!(e.contains(&path.display().to_string()), "{e}");
    }

    #[test]
    fn cacert_without_certificates_is_rejected() {
        let path = temp_path("empty.pem");
        std::fs::write(&path, "not a certificate\n").unwrap();
        let opts = TlsOptions {
            insecure: false,
            cacert: Some(path.clone()),
        };
        let e = tls_config(&opts, &[]).unwrap_err();
        let _ = std::fs::remove_file(&path);
        assert!(
            e.contains("no certificate") && e.contains(&path.display().to_string()),
            "{e}"
        );
    }

    #[test]
    fn alpn_is_set() {
        let c = tls_config(&TlsOptions::default(), &[b"h2", b"http/1.1"]).unwrap();
        assert_eq!(c.alpn_protocols, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
    }
}
