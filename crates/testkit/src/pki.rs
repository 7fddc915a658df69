//! A throwaway PKI for TLS tests: one CA, a server certificate for `127.0.0.1` and
//! `localhost`, and a client certificate, all signed by the CA (PEM text).

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};

/// PEM text of a test CA and two leaves it signed: `(certificate, private key)`.
pub struct Pki {
    pub ca: String,
    pub server: (String, String),
    pub client: (String, String),
}

impl Pki {
    pub fn new() -> Pki {
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).expect("CA cert").pem();
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf = |names: Vec<String>| {
            let key = KeyPair::generate().expect("leaf key");
            let cert = CertificateParams::new(names)
                .expect("leaf params")
                .signed_by(&key, &issuer)
                .expect("leaf cert");
            (cert.pem(), key.serialize_pem())
        };
        Pki {
            server: leaf(vec!["127.0.0.1".into(), "localhost".into()]),
            client: leaf(vec!["client.test".into()]),
            ca,
        }
    }
}

impl Default for Pki {
    fn default() -> Pki {
        Pki::new()
    }
}
