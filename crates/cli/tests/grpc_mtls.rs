//! `volley grpc --cert/--key` (ghz's client certificates) against a mutual-TLS front on
//! loopback (volley-testkit's, in front of `volley target`'s h2c gRPC service): with the
//! certificate every call succeeds; without it every connect fails the TLS handshake; bad
//! files are usage errors naming the flag and the path.

mod common;
use common::*;
use std::time::Duration;
use volley_testkit::{Pki, TlsFront};

/// `volley grpc FRONT --call Echo -n 10 ARGS --json` within a minute.
fn grpc(front: &TlsFront, args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let proto = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/grpc/target.proto")
        .display()
        .to_string();
    let mut cmd = volley();
    cmd.args([
        "grpc",
        &front.addr().to_string(),
        "--json",
        "--proto",
        &proto,
    ])
    .args([
        "--call",
        "volley.target.Target/Echo",
        "-d",
        r#"{"text":"m"}"#,
    ])
    .args(["-n", "10", "-c", "2"])
    .args(args);
    let o = output_within(&mut cmd, Duration::from_secs(60));
    let j = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    (o.status.code(), j, stderr(&o))
}

#[test]
fn client_certificates_pass_mutual_tls_and_without_them_the_handshake_fails() {
    let _serial = exclusive();
    let t = target();
    let pki = Pki::new();
    let front = TlsFront::mutual(&pki, t.local_addr());
    let dir = scratch("grpc-mtls");
    let path = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let ca = path("ca.pem", &pki.ca);
    let cert = path("client.pem", &pki.client.0);
    let key = path("client.key", &pki.client.1);

    let (code, j, err) = grpc(&front, &["--cacert", &ca, "--cert", &cert, "--key", &key]);
    assert_eq!(code, Some(0), "{err}\n{j}");
    assert_eq!(j["statuses"]["OK"], 10, "{j}");

    // Without a client certificate the server ends each handshake: no call reaches it.
    let (code, j, err) = grpc(&front, &["--cacert", &ca]);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(j["statuses"]["UNAVAILABLE"], 10, "{j}");
    assert_eq!(j["errors"]["connect"], 10, "{j}");
    assert!(j["statuses"]["OK"].is_null(), "{j}");

    // Bad files: usage errors (exit 2) with the flag, the path and a hint; nothing is dialled.
    let before = front.accepted();
    let junk = path("junk.pem", "not a certificate");
    for (args, flag) in [
        (
            vec!["--cert", &junk, "--key", &key],
            format!("--cert {junk}: "),
        ),
        (
            vec!["--cert", &cert, "--key", &junk],
            format!("--key {junk}: "),
        ),
        (vec!["--cert", &cert, "--key", &ca], format!("--key {ca}: ")),
    ] {
        let (code, _, err) = grpc(&front, &args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&flag) && err.contains("hint:"),
            "{args:?}: {err}"
        );
    }
    let missing = dir.join("nope.pem").display().to_string();
    let (code, _, err) = grpc(&front, &["--cert", &missing, "--key", &key]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!("--cert {missing}: cannot read it")),
        "{err}"
    );
    let (code, _, err) = grpc(&front, &["--cert", &cert]);
    assert_eq!(code, Some(2), "--cert alone: {err}");
    assert!(err.contains("--key"), "{err}");
    assert_eq!(front.accepted(), before, "bad flags must not dial");
    t.shutdown();
}
