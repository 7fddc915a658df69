//! What `volley grpc` (quick mode) needs before its run, done once: the unary method named by
//! `--call` (with the services on offer when it is not found), the request encoded from
//! `-d` JSON, the metadata from `-m`/`-H`, the TLS config from `--cacert`/`--cert`/`--key`,
//! and (with `--reflect`) the server's descriptors.

use crate::call::{ConnectOptions, Metadata};
use crate::tls::{ClientTls, Part};
use prost_reflect::{DescriptorPool, MethodDescriptor};
use rustls::ClientConfig;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The unary method `call` names: `pkg.Service/Method`, `/pkg.Service/Method` or
/// `pkg.Service.Method` (as ghz accepts). The error lists what the pool declares.
pub fn find_unary(pool: &DescriptorPool, call: &str) -> Result<MethodDescriptor, String> {
    let c = call.strip_prefix('/').unwrap_or(call);
    let path = match c.contains('/') {
        true => c.to_owned(),
        false => match c.rsplit_once('.') {
            Some((svc, m)) => format!("{svc}/{m}"),
            None => c.to_owned(),
        },
    };
    let Some(m) = crate::proto::find_method(pool, &path) else {
        let all: Vec<String> = crate::proto::methods(pool)
            .into_iter()
            .map(|m| m.full_method.trim_start_matches('/').to_owned())
            .collect();
        let have = if all.is_empty() {
            "none (no service is declared)".to_owned()
        } else {
            all.join(", ")
        };
        return Err(format!(
            "--call {call}: no such method\n  hint: write it as package.Service/Method; the \
             methods are: {have}"
        ));
    };
    if m.is_client_streaming() || m.is_server_streaming() {
        return Err(format!(
            "--call {call}: a streaming method; volley grpc calls unary methods only (use a \
             k6/net/grpc script with `volley run` for streams)"
        ));
    }
    Ok(m)
}

/// `-d` JSON (from `origin`, for the error) → the request's protobuf bytes.
pub fn request_bytes(m: &MethodDescriptor, json: &str, origin: &str) -> Result<Vec<u8>, String> {
    crate::json::encode(&m.input(), json).map_err(|e| {
        format!(
            "{origin}: {e}\n  hint: a JSON object of {}'s fields (lowerCamelCase or proto names)",
            m.input().full_name()
        )
    })
}

/// `-m '{"k":"v"}'` and `-H 'k: v'` → call metadata (keys lower-cased; `-bin` values are the
/// text's bytes, base64 on the wire).
pub fn metadata(json: Option<&str>, headers: &[(String, String)]) -> Result<Metadata, String> {
    let mut md = Metadata::new();
    if let Some(j) = json {
        let v: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(j).map_err(|e| {
                format!("-m/--metadata: {e}\n  hint: a JSON object, e.g. '{{\"x-id\":\"7\"}}'")
            })?;
        for (k, v) in v {
            let s = match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            md.push((k.to_ascii_lowercase(), s.into_bytes()));
        }
    }
    for (k, v) in headers {
        md.push((k.to_ascii_lowercase(), v.clone().into_bytes()));
    }
    for (k, _) in &md {
        if crate::status::is_reserved(k) || k.starts_with(':') {
            return Err(format!("metadata key {k:?} is reserved by gRPC or HTTP/2"));
        }
    }
    Ok(md)
}

/// The TLS flags: verification (`--insecure`, `--cacert`) and a client certificate for mutual
/// TLS (`--cert` + `--key`, as ghz's).
#[derive(Clone, Copy, Debug, Default)]
pub struct TlsFiles<'a> {
    pub insecure: bool,
    pub cacert: Option<&'a Path>,
    /// Certificate chain and private key, both PEM.
    pub identity: Option<(&'a Path, &'a Path)>,
}

/// The client TLS config (ALPN `h2`). With a client certificate it is the config scripts'
/// `connect({tls})` builds (crate::tls) from the files' text; errors name the flag and file.
pub fn tls_config(f: &TlsFiles) -> Result<Arc<ClientConfig>, String> {
    let Some((cert, key)) = f.identity else {
        let opts = volley_http::TlsOptions {
            insecure: f.insecure,
            cacert: f.cacert.map(Path::to_path_buf),
        };
        return volley_http::tls_config(&opts, &[b"h2"]);
    };
    let read = |flag: &str, p: &Path| {
        std::fs::read_to_string(p).map_err(|e| {
            format!(
                "{flag} {}: cannot read it: {e}\n  hint: {}",
                p.display(),
                hint(flag)
            )
        })
    };
    let tls = ClientTls {
        cert: Some(read("--cert", cert)?),
        key: Some(read("--key", key)?),
        password: None,
        cacerts: match f.cacert {
            Some(p) => vec![read("--cacert", p)?],
            None => vec![],
        },
    };
    crate::tls::build(f.insecure, &tls).map_err(|e| {
        let (flag, path) = match e.part {
            Part::Ca(_) => ("--cacert", f.cacert.unwrap_or(cert)),
            Part::Cert => ("--cert", cert),
            Part::Key => ("--key", key),
            Part::Setup => return e.message,
        };
        format!(
            "{flag} {}: {}\n  hint: {}",
            path.display(),
            e.message,
            hint(flag)
        )
    })
}

fn hint(flag: &str) -> &'static str {
    match flag {
        "--cacert" => "a PEM file of CA certificates ('-----BEGIN CERTIFICATE-----' blocks)",
        "--cert" => {
            "a PEM file with the client certificate (chain), '-----BEGIN CERTIFICATE-----'; \
             --key is its private key"
        }
        _ => {
            "an unencrypted PEM private key ('-----BEGIN PRIVATE KEY-----', RSA or EC) that \
             belongs to --cert's certificate"
        }
    }
}

/// The server's descriptors by reflection (v1, else v1alpha), before the run.
pub fn reflect_pool(
    addr: &str,
    opts: &ConnectOptions,
    md: &Metadata,
    timeout: Duration,
) -> Result<DescriptorPool, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let (conn, driver) = crate::call::connect(addr, opts).await?;
        let d = tokio::task::spawn_local(driver);
        let pool = crate::call::reflect(&conn, md, timeout).await;
        drop(conn);
        d.abort();
        pool.map_err(|e| format!("--reflect: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROTO: &str = r#"syntax = "proto3";
package p;
message M { string text = 1; }
service S { rpc Get(M) returns (M); rpc Watch(M) returns (stream M); }
"#;

    #[test]
    fn calls_are_found_in_every_spelling_and_a_miss_lists_the_methods() {
        let pool = crate::proto::load_source("p.proto", PROTO).unwrap();
        for c in ["p.S/Get", "/p.S/Get", "p.S.Get"] {
            assert_eq!(find_unary(&pool, c).unwrap().name(), "Get", "{c}");
        }
        let e = find_unary(&pool, "p.S/Nope").unwrap_err();
        assert!(e.contains("p.S/Get, p.S/Watch"), "{e}");
        let e = find_unary(&pool, "p.S/Watch").unwrap_err();
        assert!(e.contains("unary methods only"), "{e}");
    }

    #[test]
    fn bad_request_json_says_where() {
        let pool = crate::proto::load_source("p.proto", PROTO).unwrap();
        let m = find_unary(&pool, "p.S/Get").unwrap();
        assert_eq!(
            request_bytes(&m, r#"{"text":"hi"}"#, "-d").unwrap(),
            b"\n\x02hi"
        );
        let e = request_bytes(&m, "{\"text\": \"a\",\n \"nope\": 1}", "-d").unwrap_err();
        assert!(e.starts_with("-d: ") && e.contains("line 2"), "{e}");
    }

    #[test]
    fn bad_client_certificate_files_name_flag_path_and_hint() {
        let dir = volley_testkit::scratch("volley-grpc", "quick-tls");
        let c = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let (cert, key, junk) = (dir.join("c.pem"), dir.join("k.pem"), dir.join("junk.pem"));
        std::fs::write(&cert, c.cert.pem()).unwrap();
        std::fs::write(&key, c.signing_key.serialize_pem()).unwrap();
        std::fs::write(&junk, "not pem").unwrap();
        let with = |cert: &Path, key: &Path, cacert: Option<&Path>| {
            tls_config(&TlsFiles {
                insecure: false,
                cacert,
                identity: Some((cert, key)),
            })
        };
        let ok = with(&cert, &key, Some(&cert)).unwrap();
        assert!(ok.client_auth_cert_resolver.has_certs());
        assert_eq!(ok.alpn_protocols, vec![b"h2".to_vec()]);
        let e = with(&junk, &key, None).unwrap_err();
        assert!(
            e.starts_with(&format!("--cert {}: ", junk.display())),
            "{e}"
        );
        assert!(
            e.contains("certificate input") && e.contains("hint:"),
            "{e}"
        );
        let e = with(&cert, &junk, None).unwrap_err();
        assert!(e.starts_with(&format!("--key {}: ", junk.display())), "{e}");
        let e = with(&cert, &key, Some(&junk)).unwrap_err();
        assert!(
            e.starts_with(&format!("--cacert {}: ", junk.display())),
            "{e}"
        );
        let missing = dir.join("missing.pem");
        let e = with(&missing, &key, None).unwrap_err();
        assert!(
            e.starts_with(&format!("--cert {}: cannot read it", missing.display())),
            "{e}"
        );
        // A key of another certificate.
        let other = rcgen::generate_simple_self_signed(vec!["x".into()]).unwrap();
        std::fs::write(&junk, other.signing_key.serialize_pem()).unwrap();
        let e = with(&cert, &junk, None).unwrap_err();
        assert!(e.starts_with(&format!("--key {}: ", junk.display())), "{e}");
    }

    #[test]
    fn metadata_from_json_and_headers() {
        let md = metadata(Some(r#"{"X-A":"1","n":2}"#), &[("x-b".into(), "3".into())]).unwrap();
        assert_eq!(
            md,
            vec![
                ("x-a".to_owned(), b"1".to_vec()),
                ("n".to_owned(), b"2".to_vec()),
                ("x-b".to_owned(), b"3".to_vec())
            ]
        );
        assert!(metadata(Some("[1]"), &[]).is_err());
        assert!(metadata(None, &[("grpc-timeout".into(), "1S".into())]).is_err());
    }
}
