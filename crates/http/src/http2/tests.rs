//! Tests against the built-in target (h2c and h2 over TLS) and small loopback servers.

use std::rc::Rc;
use std::sync::atomic::AtomicUsize;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::LocalSet;
use volley_testserver::{RunningTarget, TargetConfig, TlsIdentity};

use super::*;
use crate::tls::{tls_config, TlsOptions};

/// Generous deadline so a bug fails the test instead of hanging it.
const T: Duration = Duration::from_secs(10);

/// Runs `f` on a current_thread runtime inside a LocalSet, as the engine's workers do.
fn run_local<F: Future<Output = ()>>(f: F) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    LocalSet::new().block_on(&rt, f);
}

fn target_server(tls: Option<TlsIdentity>) -> RunningTarget {
    volley_testserver::spawn(TargetConfig {
        tls,
        ..TargetConfig::default()
    })
    .unwrap()
}

fn url(t: &RunningTarget, path: &str) -> Target {
    Target::parse(&format!("{}{path}", t.url())).unwrap()
}

/// Connects and spawns the driver on the current LocalSet.
async fn connect(
    addr: SocketAddr,
    target: &Target,
    tls: Option<&Arc<rustls::ClientConfig>>,
) -> H2Connection {
    let (conn, _, driver) = H2Connection::connect(addr, target, tls, T).await.unwrap();
    tokio::task::spawn_local(driver);
    conn
}

fn get(target: &Target) -> H2Request {
    H2Request::new("GET", target, &[], Body::Empty).unwrap()
}

#[test]
fn h2c_200_gets_over_one_connection_with_20_streams() {
    let t = target_server(None);
    run_local(async {
        let target = url(&t, "/");
        let conn = connect(t.local_addr(), &target, None).await;
        let req = Rc::new(get(&target));
        let most = Rc::new(std::cell::Cell::new(0));
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let (conn, req, most) = (conn.clone(), req.clone(), most.clone());
                tokio::task::spawn_local(async move {
                    for _ in 0..10 {
                        let r = conn.send(&req, BodyMode::Keep, T).await.unwrap();
                        most.set(most.get().max(conn.active_streams() + 1));
                        assert_eq!(r.status, 200);
                        assert_eq!(r.body.as_deref(), Some(&b"Hello, world!"[..]));
                        assert!(r.keep_alive);
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert!(most.get() > 1, "requests never overlapped");
        assert_eq!(conn.active_streams(), 0);
        assert!(!conn.is_closed());
    });
    let stats = t.stats();
    assert_eq!(stats.requests, 200);
    assert_eq!(stats.connections, 1);
}

fn identity() -> TlsIdentity {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    TlsIdentity {
        cert_chain_pem: ck.cert.pem().into_bytes(),
        key_pem: ck.signing_key.serialize_pem().into_bytes(),
    }
}

#[test]
fn h2_over_tls_negotiates_alpn() {
    let t = target_server(Some(identity()));
    let insecure = TlsOptions {
        insecure: true,
        cacert: None,
    };
    run_local(async {
        let target = url(&t, "/");
        assert_eq!(target.scheme, crate::Scheme::Https);
        let h2_only = tls_config(&insecure, &[b"h2"]).unwrap();
        let (conn, timings, driver) =
            H2Connection::connect(t.local_addr(), &target, Some(&h2_only), T)
                .await
                .unwrap();
        tokio::task::spawn_local(driver);
        assert!(conn.is_tls());
        assert!(timings.tls_handshaking > Duration::ZERO);
        for _ in 0..3 {
            let r = conn.send(&get(&target), BodyMode::Keep, T).await.unwrap();
            assert_eq!(r.status, 200);
            assert_eq!(r.body.as_deref(), Some(&b"Hello, world!"[..]));
        }
        let (sent, received) = conn.wire_bytes();
        assert!(sent > 0 && received > 0);

        // A config that offers only HTTP/1.1 cannot get h2.
        let h1_only = tls_config(&insecure, &[b"http/1.1"]).unwrap();
        let e = H2Connection::connect(t.local_addr(), &target, Some(&h1_only), T)
            .await
            .unwrap_err();
        assert_eq!(e.class, ErrorClass::Protocol);
        assert!(e.message.contains("did not negotiate h2"), "{e}");
    });
    assert_eq!(t.stats().connections, 2);
}

#[test]
fn one_mib_download_keep_and_discard() {
    let t = target_server(None);
    run_local(async {
        let target = url(&t, "/bytes/1048576");
        let conn = connect(t.local_addr(), &target, None).await;
        let req = get(&target);
        let before = conn.wire_bytes();

        let r = conn.send(&req, BodyMode::Keep, T).await.unwrap();
        assert_eq!(r.status, 200);
        let body = r.body.unwrap();
        assert_eq!(body.len(), 1 << 20);
        assert_eq!(r.body_len, 1 << 20);
        assert!(body
            .iter()
            .enumerate()
            .all(|(i, &b)| b == b'a' + (i % 26) as u8));
        assert!(r.bytes_received > 1 << 20);
        assert!(r.timings.receiving > Duration::ZERO);

        let r = conn.send(&req, BodyMode::Discard, T).await.unwrap();
        assert_eq!(r.body, None);
        assert_eq!(r.body_len, 1 << 20);

        let after = conn.wire_bytes();
        assert!(after.0 > before.0);
        assert!(after.1 - before.1 >= 2 << 20, "{before:?} -> {after:?}");
    });
}

#[test]
fn post_bodies_to_upload() {
    let t = target_server(None);
    run_local(async {
        let target = url(&t, "/upload");
        let conn = connect(t.local_addr(), &target, None).await;
        // 3 MiB is bigger than any initial window, so this waits on flow control.
        for len in [0usize, 5, 3 << 20] {
            let body = Body::Bytes(Bytes::from(vec![b'x'; len]));
            let req = H2Request::new("POST", &target, &[], body).unwrap();
            let r = conn.send(&req, BodyMode::Keep, T).await.unwrap();
            assert_eq!(r.status, 200);
            let text = String::from_utf8(r.body.unwrap()).unwrap().replace(' ', "");
            assert_eq!(text, format!("{{\"bytes\":{len}}}"));
            assert!(r.bytes_sent >= len as u64);
        }
        assert!(conn.wire_bytes().0 > 3 << 20);
    });
}

#[test]
fn timeout_resets_only_its_stream() {
    let t = target_server(None);
    run_local(async {
        let slow = url(&t, "/delay/2000");
        let conn = connect(t.local_addr(), &slow, None).await;
        let started = Instant::now();
        let e = conn
            .send(&get(&slow), BodyMode::Discard, Duration::from_millis(200))
            .await
            .unwrap_err();
        assert_eq!(e.class, ErrorClass::Timeout, "{e}");
        assert!(started.elapsed() < Duration::from_millis(1500));
        assert!(e.bytes_sent > 0);
        // The connection itself is fine.
        assert_eq!(conn.active_streams(), 0);
        let r = conn
            .send(&get(&url(&t, "/")), BodyMode::Discard, T)
            .await
            .unwrap();
        assert_eq!(r.status, 200);
    });
}

#[test]
fn server_shutdown_closes_the_connection() {
    let t = target_server(None);
    run_local(async move {
        let target = url(&t, "/");
        let conn = connect(t.local_addr(), &target, None).await;
        let r = conn
            .send(&get(&target), BodyMode::Discard, T)
            .await
            .unwrap();
        assert!(r.keep_alive);
        // Shutting down joins the target's thread: not on this runtime's only thread.
        tokio::task::spawn_blocking(move || t.shutdown())
            .await
            .unwrap();
        let deadline = Instant::now() + T;
        while !conn.is_closed() {
            assert!(
                Instant::now() < deadline,
                "never noticed the server going away"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let e = conn
            .send(&get(&target), BodyMode::Discard, T)
            .await
            .unwrap_err();
        assert!(
            matches!(e.class, ErrorClass::Reset | ErrorClass::Protocol),
            "{e}"
        );
        assert!(conn.ready().await.is_err());
    });
}

#[test]
fn handles_and_futures_are_send() {
    fn is_send<S: Send>(_: &S) {}
    fn check(conn: &H2Connection, req: &H2Request) {
        is_send(conn);
        is_send(&conn.send(req, BodyMode::Discard, T));
        is_send(&conn.ready());
    }
    fn driver(d: H2Driver) -> impl Future<Output = ()> + Send + 'static {
        d
    }
    let _ = (check, driver);
}

#[test]
fn refused_connection() {
    run_local(async {
        let addr = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let target = Target::parse(&format!("http://{addr}/")).unwrap();
        let e = H2Connection::connect(addr, &target, None, T)
            .await
            .unwrap_err();
        assert_eq!(e.class, ErrorClass::Refused, "{e}");
    });
}

/// h2c prior knowledge against servers that do not speak HTTP/2: one answers our preface
/// with an HTTP/1.1 400 and closes, one closes without a word. Whether that surfaces as a
/// bad frame (Protocol) or a closed socket (Reset) depends on timing; it must never panic
/// or hang.
#[test]
fn non_h2_servers_are_protocol_or_reset_errors() {
    run_local(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::task::spawn_local(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).await;
            let _ = s
                .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\nConnection: close\r\n\r\nbad request")
                .await;
            drop(s);
            let (s, _) = listener.accept().await.unwrap();
            drop(s);
        });
        let target = Target::parse(&format!("http://{addr}/")).unwrap();
        for _ in 0..2 {
            let e = match H2Connection::connect(addr, &target, None, T).await {
                Err(e) => e,
                Ok((conn, _, driver)) => {
                    tokio::task::spawn_local(driver);
                    conn.send(&get(&target), BodyMode::Discard, T)
                        .await
                        .unwrap_err()
                }
            };
            assert!(
                matches!(e.class, ErrorClass::Protocol | ErrorClass::Reset),
                "{e}"
            );
        }
    });
}

/// A minimal h2 server (the h2 crate's server half) allowing `limit` concurrent streams;
/// each request is answered with 204 after `delay`, except that `/refuse` and `/violate`
/// are reset with REFUSED_STREAM and PROTOCOL_ERROR. Returns the highest concurrency seen.
async fn limited_server(limit: u32, delay: Duration) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let peak = Arc::new(AtomicUsize::new(0));
    let seen = peak.clone();
    tokio::task::spawn_local(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut conn = h2::server::Builder::new()
            .max_concurrent_streams(limit)
            .handshake::<_, Bytes>(tcp)
            .await
            .unwrap();
        let now = Rc::new(std::cell::Cell::new(0usize));
        while let Some(Ok((req, mut respond))) = conn.accept().await {
            let reset = match req.uri().path() {
                "/refuse" => Some(Reason::REFUSED_STREAM),
                "/violate" => Some(Reason::PROTOCOL_ERROR),
                _ => None,
            };
            if let Some(reason) = reset {
                respond.send_reset(reason);
                continue;
            }
            let (now, seen) = (now.clone(), seen.clone());
            now.set(now.get() + 1);
            seen.fetch_max(now.get(), Ordering::Relaxed);
            tokio::task::spawn_local(async move {
                tokio::time::sleep(delay).await;
                now.set(now.get() - 1);
                let resp = http::Response::builder().status(204).body(()).unwrap();
                let _ = respond.send_response(resp, true);
            });
        }
    });
    (addr, peak)
}

#[test]
fn respects_max_concurrent_streams() {
    run_local(async {
        let (addr, peak) = limited_server(2, Duration::from_millis(20)).await;
        let target = Target::parse(&format!("http://{addr}/")).unwrap();
        let conn = connect(addr, &target, None).await;
        assert_eq!(conn.max_streams(), 2);
        let req = Rc::new(get(&target));
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (conn, req) = (conn.clone(), req.clone());
                tokio::task::spawn_local(async move {
                    conn.ready().await.unwrap();
                    conn.send(&req, BodyMode::Discard, T).await
                })
            })
            .collect();
        for task in tasks {
            let r = task.await.unwrap().unwrap();
            assert_eq!(r.status, 204);
        }
        assert_eq!(peak.load(Ordering::Relaxed), 2);
    });
}

#[test]
fn stream_resets_are_classified_and_spare_the_connection() {
    run_local(async {
        let (addr, _) = limited_server(10, Duration::ZERO).await;
        let base = Target::parse(&format!("http://{addr}/")).unwrap();
        let conn = connect(addr, &base, None).await;
        let send = |path: &str| {
            let target = Target::parse(&format!("http://{addr}{path}")).unwrap();
            let conn = conn.clone();
            async move { conn.send(&get(&target), BodyMode::Discard, T).await }
        };
        let e = send("/refuse").await.unwrap_err();
        assert_eq!(e.class, ErrorClass::Reset, "{e}");
        let e = send("/violate").await.unwrap_err();
        assert_eq!(e.class, ErrorClass::Protocol, "{e}");
        assert_eq!(send("/").await.unwrap().status, 204);
        assert!(!conn.is_closed());
    });
}

#[test]
fn requests_are_validated_and_normalised() {
    let target = Target::parse("http://example.test:8080/a?b=1").unwrap();
    let headers = |h: &[(&str, &str)]| -> Vec<(String, String)> {
        h.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    };
    let r = H2Request::new(
        "POST",
        &target,
        &headers(&[
            ("X-Custom", "1"),
            ("Connection", "close"),
            ("Keep-Alive", "5"),
            ("TE", "gzip"),
            ("Accept", "text/plain"),
        ]),
        Body::Bytes(Bytes::from_static(b"hello")),
    )
    .unwrap();
    assert_eq!(r.method(), "POST");
    assert_eq!(r.uri().to_string(), "http://example.test:8080/a?b=1");
    assert_eq!(r.body_len(), 5);
    let names: Vec<&str> = r.headers.keys().map(|n| n.as_str()).collect();
    assert_eq!(
        names,
        ["x-custom", "accept", "user-agent", "content-length"]
    );
    assert_eq!(r.headers["accept"], "text/plain");
    assert_eq!(r.headers["content-length"], "5");
    let built = r.build();
    assert_eq!(built.version(), Version::HTTP_2);

    let r = H2Request::new(
        "GET",
        &target,
        &headers(&[("Host", "other:1")]),
        Body::Empty,
    )
    .unwrap();
    assert_eq!(r.uri().authority().unwrap().as_str(), "other:1");
    assert!(!r.headers.contains_key("host"));
    assert!(!r.headers.contains_key("content-length"));
    let r = H2Request::new("PUT", &target, &[], Body::Empty).unwrap();
    assert_eq!(r.headers["content-length"], "0");
    let r = H2Request::new(
        "POST",
        &target,
        &headers(&[("Content-Length", " 2"), ("x-name", "Zoë")]),
        Body::Bytes(Bytes::from_static(b"ab")),
    )
    .unwrap();
    assert_eq!(r.headers["content-length"], "2");
    assert_eq!(r.headers["x-name"].as_bytes(), "Zoë".as_bytes());

    let err = |m: &str, h: &[(&str, &str)], b: Body| {
        H2Request::new(m, &target, &headers(h), b).unwrap_err()
    };
    assert!(err("GE T", &[], Body::Empty).contains("invalid HTTP method"));
    assert!(err("GET", &[("bad name", "x")], Body::Empty).contains("invalid header name"));
    assert!(err("GET", &[("x", "a\r\nb")], Body::Empty).contains("control characters"));
    assert!(
        err("GET", &[("Transfer-Encoding", "chunked")], Body::Empty).contains("Transfer-Encoding")
    );
    assert!(err(
        "POST",
        &[("Content-Length", "3")],
        Body::Bytes(Bytes::from_static(b"ab"))
    )
    .contains("does not match"));
    let file = Body::File {
        path: "/tmp/x".into(),
        len: 3,
    };
    assert!(err("POST", &[], file).contains("not supported over HTTP/2"));
}

#[test]
fn bare_reasons_are_protocol_errors() {
    // Not from a peer's frame: h2 itself found the problem.
    let e = classify(h2::Error::from(Reason::FRAME_SIZE_ERROR), "reading");
    assert_eq!(e.class, ErrorClass::Protocol);
    assert!(e.message.starts_with("reading: "), "{e}");
}
