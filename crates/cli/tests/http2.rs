//! `volley http --http2`: h2c with prior knowledge and h2 over TLS, counts and bytes exact.

mod common;
use common::*;

#[test]
fn h2c_counts_and_bytes_match_the_server() {
    let _serial = exclusive();
    let t = target();
    let url = format!("{}/", t.url());
    let o = run(&[
        "http",
        &url,
        "--http2",
        "-c",
        "2",
        "--h2-streams",
        "16",
        "-n",
        "3000",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    let s = t.stats();
    assert_eq!(j["status"]["200"], 3000);
    assert_eq!(s.requests, 3000);
    assert_eq!(
        s.connections, 2,
        "streams are multiplexed over -c connections"
    );
    assert_eq!(j["connections_opened"], 2);
    assert_eq!(
        j["bytes_sent"].as_u64().unwrap(),
        s.bytes_received,
        "every frame counted, GOAWAY included"
    );
    // The server answers our closing GOAWAY with its own (9-byte header + 8-byte payload);
    // when that lands after Volley closed the socket it was never received, so the server may
    // count one such frame per connection more — and nothing else.
    let missing = s.bytes_sent - j["bytes_received"].as_u64().unwrap();
    assert!(
        missing.is_multiple_of(17) && missing <= 2 * 17,
        "server sent {missing} bytes Volley did not count"
    );
    t.shutdown();
}

#[test]
fn h2_over_tls_negotiates_with_alpn() {
    let _serial = exclusive();
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let t = target_with(
        Some(volley_testserver::TlsIdentity {
            cert_chain_pem: ck.cert.pem().into_bytes(),
            key_pem: ck.signing_key.serialize_pem().into_bytes(),
        }),
        None,
    );
    let url = format!("https://127.0.0.1:{}/bytes/65536", t.local_addr().port());
    let o = run(&[
        "http",
        &url,
        "--http2",
        "--insecure",
        "-c",
        "1",
        "--h2-streams",
        "4",
        "-n",
        "40",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["status"]["200"], 40);
    assert!(j["bytes_received"].as_u64().unwrap() > 40 * 65536);
    assert_eq!(t.stats().connections, 1);
    t.shutdown();
}

#[test]
fn h2c_against_an_http1_only_server_is_a_classified_error() {
    let _serial = exclusive();
    // A server that answers everything with an HTTP/1.1 response, as an h1-only proxy would.
    let port = raw_server(20, std::time::Duration::from_secs(20), |mut s| {
        use std::io::Write;
        read_head(&mut s);
        let _ = s.write_all(
            b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
    });
    let url = format!("http://127.0.0.1:{port}/");
    let o = run(&["http", &url, "--http2", "-c", "1", "-n", "3", "--json"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(j["requests"], 3);
    assert!(
        j["errors"]["protocol"].as_u64().unwrap_or(0) + j["errors"]["reset"].as_u64().unwrap_or(0)
            == 3,
        "{j}"
    );
}

#[test]
fn h2_handshake_a_silent_server_never_answers_is_a_timeout_error() {
    let _serial = exclusive();
    let (_l, port) = silent_listener();
    let url = format!("http://127.0.0.1:{port}/");
    let start = std::time::Instant::now();
    // -z ends the run long before the 10 s connect timeout.
    let o = run(&["http", &url, "--http2", "-z", "2s", "-c", "2", "--json"]);
    let wall = start.elapsed();
    assert!(wall < std::time::Duration::from_secs(5), "ran {wall:?}");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let j = json(&o);
    assert_eq!(
        j["errors"]["timeout"], 2,
        "one failed handshake per connection: {j}"
    );
    assert_eq!(j["requests"], 2, "{j}");
}

#[test]
fn h2_handshake_that_times_out_as_the_run_ends_is_still_counted() {
    let _serial = exclusive();
    let (_l, port) = silent_listener();
    let url = format!("http://127.0.0.1:{port}/");
    // The handshake gives up at the same moment the run ends.
    let o = run(&[
        "http",
        &url,
        "--http2",
        "-z",
        "1s",
        "--connect-timeout",
        "1s",
        "-c",
        "1",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert_eq!(json(&o)["errors"]["timeout"], 1);
}
