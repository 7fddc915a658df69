//! `connect(addr, {tls: {cert, key, cacerts, password}})`: a rustls client config from PEM
//! strings, as k6 builds its `tls.Config` (client certificate + key, extra trust anchors on top
//! of the default roots). Errors carry k6's wording, thrown at `connect`; `volley grpc`'s
//! `--cert`/`--key`/`--cacert` (quick.rs) build the same config and name the failing file.

use std::sync::Arc;

use rustls::client::WantsClientCert;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, ConfigBuilder, RootCertStore};
use volley_http::tls::AcceptAnyCert;

/// The `tls` object of `connect`'s params (PEM text).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientTls {
    pub cert: Option<String>,
    pub key: Option<String>,
    pub password: Option<String>,
    /// Each entry is PEM text holding one or more certificates.
    pub cacerts: Vec<String>,
}

/// Which input a [`TlsError`] is about: scripts show only the text, `volley grpc` names the
/// flag and file it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The i-th `cacerts` entry.
    Ca(usize),
    Cert,
    /// The key, or a key that does not belong to the certificate.
    Key,
    Setup,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsError {
    pub part: Part,
    /// k6's wording.
    pub message: String,
}

fn err(part: Part, message: impl Into<String>) -> TlsError {
    TlsError {
        part,
        message: message.into(),
    }
}

/// The client config for `tls` with ALPN `h2`. `insecure` (`insecureSkipTLSVerify`) still
/// skips verification, as k6 carries it over from the VU's config.
pub fn client_config(insecure: bool, tls: &ClientTls) -> Result<Arc<ClientConfig>, String> {
    build(insecure, tls).map_err(|e| e.message)
}

/// [`client_config`] with the failing input named.
pub fn build(insecure: bool, tls: &ClientTls) -> Result<Arc<ClientConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| err(Part::Setup, format!("cannot set up TLS: {e}")))?;
    // Roots are checked first, as k6 does (a bad CA fails before a bad key pair).
    let builder: ConfigBuilder<ClientConfig, WantsClientCert> = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCert::new(provider)))
    } else {
        builder.with_root_certificates(roots(&tls.cacerts)?)
    };
    let mut config = match identity(tls)? {
        Some((chain, key)) => builder.with_client_auth_cert(chain, key).map_err(|e| {
            err(
                Part::Key,
                format!("failed to append certificate from PEM: {e}"),
            )
        })?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

fn roots(cacerts: &[String]) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    for (i, pem) in cacerts.iter().enumerate() {
        // k6 (Go's AppendCertsFromPEM) fails an entry only when it yields no certificate.
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(pem.as_bytes()).flatten() {
            if roots.add(cert).is_ok() {
                added += 1;
            }
        }
        if added == 0 {
            return Err(err(
                Part::Ca(i),
                format!("failed to append ca certificate [{i}] from PEM"),
            ));
        }
    }
    Ok(roots)
}

type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// The client certificate chain and key; `None` unless both are given (as k6).
fn identity(tls: &ClientTls) -> Result<Option<Identity>, TlsError> {
    let (Some(cert), Some(key)) = (&tls.cert, &tls.key) else {
        return Ok(None);
    };
    if cert.is_empty() || key.is_empty() {
        return Ok(None);
    }
    if tls.password.as_deref().is_some_and(|p| !p.is_empty()) {
        return Err(err(
            Part::Key,
            "failed to append certificate from PEM: encrypted private keys \
             (tls.password) are not supported; decrypt the key first \
             (openssl pkey -in key.pem -out plain.pem)",
        ));
    }
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| {
            err(
                Part::Cert,
                format!("failed to append certificate from PEM: {e}"),
            )
        })?;
    if chain.is_empty() {
        return Err(err(
            Part::Cert,
            "failed to append certificate from PEM: tls: failed to find any PEM data in certificate input",
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).map_err(|_| {
        err(
            Part::Key,
            "failed to append certificate from PEM: tls: failed to find any PEM data in key input",
        )
    })?;
    Ok(Some((chain, key)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (String, String) {
        let c = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        (c.cert.pem(), c.signing_key.serialize_pem())
    }

    #[test]
    fn bad_pem_is_worded_as_k6() {
        let (cert, key) = pair();
        let bad_ca = ClientTls {
            cacerts: vec![cert.clone(), "nope".into()],
            ..Default::default()
        };
        assert_eq!(
            client_config(false, &bad_ca).unwrap_err(),
            "failed to append ca certificate [1] from PEM"
        );
        let bad_cert = ClientTls {
            cert: Some("garbage".into()),
            key: Some(key.clone()),
            ..Default::default()
        };
        assert!(client_config(false, &bad_cert)
            .unwrap_err()
            .ends_with("failed to find any PEM data in certificate input"));
        let bad_key = ClientTls {
            cert: Some(cert.clone()),
            key: Some("garbage".into()),
            ..Default::default()
        };
        assert!(client_config(false, &bad_key)
            .unwrap_err()
            .ends_with("failed to find any PEM data in key input"));
        let good = ClientTls {
            cert: Some(cert.clone()),
            key: Some(key),
            cacerts: vec![cert],
            ..Default::default()
        };
        let c = client_config(false, &good).unwrap();
        assert!(c.client_auth_cert_resolver.has_certs());
    }
}
