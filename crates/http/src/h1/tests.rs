//! Tests against loopback servers started by each test.

use super::decode::parse_chunk_size;
use super::*;
use crate::error::{ErrorClass, HttpError};
use crate::tls::{tls_config, TlsOptions};
use crate::url::Target;
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncRead;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Generous per-request deadline so a bug fails the test instead of hanging it.
const T: Duration = Duration::from_secs(5);
const HELLO: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
const UA: &str = concat!("User-Agent: volley/", env!("CARGO_PKG_VERSION"), "\r\n");

fn target(addr: SocketAddr, path: &str) -> Target {
    Target::parse(&format!("http://{addr}{path}")).unwrap()
}

fn get(t: &Target) -> Request {
    Request::new("GET", t, &[], Body::Empty, true).unwrap()
}

async fn connect(addr: SocketAddr, t: &Target) -> Connection {
    Connection::connect(addr, t, None, T).await.unwrap().0
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Test-server side: reads one request (head plus Content-Length body, which is counted,
/// not kept) from `s`, leaving any following bytes in `buf`. `None` on EOF.
async fn read_request<S: AsyncRead + Unpin>(s: &mut S, buf: &mut Vec<u8>) -> Option<(String, u64)> {
    let mut tmp = vec![0u8; 64 * 1024];
    for _ in 0..100_000 {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i + 4]).into_owned();
            buf.drain(..i + 4);
            let len: u64 = head
                .lines()
                .find_map(|l| {
                    let (n, v) = l.split_once(':')?;
                    n.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().unwrap())
                })
                .unwrap_or(0);
            let mut got = (buf.len() as u64).min(len);
            buf.drain(..got as usize);
            for _ in 0..100_000 {
                if got == len {
                    return Some((head, len));
                }
                let n = s.read(&mut tmp).await.ok()?;
                if n == 0 {
                    return None;
                }
                let used = (n as u64).min(len - got) as usize;
                got += used as u64;
                buf.extend_from_slice(&tmp[used..n]);
            }
            panic!("request body never completed");
        }
        let n = s.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    panic!("request head never completed");
}

/// Serves one connection: answers each request with the next canned response, written
/// in `piece`-byte writes 1 ms apart, then closes. Returns the request heads seen.
async fn scripted(responses: Vec<Vec<u8>>, piece: usize) -> (SocketAddr, JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        let mut heads = Vec::new();
        for resp in responses {
            let Some((head, _)) = read_request(&mut s, &mut buf).await else {
                break;
            };
            heads.push(head);
            for (i, part) in resp.chunks(piece).enumerate() {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                if s.write_all(part).await.is_err() {
                    return heads;
                }
            }
        }
        heads
    });
    (addr, task)
}

/// One request against a one-response scripted server.
async fn one(resp: &[u8], mode: BodyMode) -> Result<Response, HttpError> {
    let (addr, _server) = scripted(vec![resp.to_vec()], usize::MAX).await;
    let t = target(addr, "/");
    let mut conn = connect(addr, &t).await;
    conn.send(&get(&t), mode, T).await
}

#[test]
fn serialises_requests_exactly() {
    let t = Target::parse("http://example.com:8080/a?b=1").unwrap();
    let r = get(&t);
    let expected =
        format!("GET /a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\n{UA}Accept: */*\r\n\r\n");
    assert_eq!(r.wire().as_ref(), expected.as_bytes());
    assert_eq!(r.head_len(), expected.len());
    assert_eq!(r.method(), "GET");
    assert!(r.keep_alive() && !r.is_head());

    let headers = [("X-A".to_string(), "1".to_string())];
    let r = Request::new(
        "POST",
        &t,
        &headers,
        Body::Bytes(Bytes::from_static(b"abc")),
        false,
    )
    .unwrap();
    let head = format!(
        "POST /a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\nX-A: 1\r\n{UA}Accept: */*\r\n\
         Content-Length: 3\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(r.wire().as_ref(), format!("{head}abc").as_bytes());
    assert_eq!(r.head_len(), head.len());
    assert!(!r.keep_alive());

    // Empty POST gets Content-Length: 0; user Host/User-Agent/Accept replace ours.
    let headers = [
        ("host".to_string(), "other".to_string()),
        ("User-Agent".to_string(), "me".to_string()),
        ("ACCEPT".to_string(), "text/plain".to_string()),
    ];
    let r = Request::new("PUT", &t, &headers, Body::Empty, true).unwrap();
    assert_eq!(
        r.wire().as_ref(),
        b"PUT /a?b=1 HTTP/1.1\r\nhost: other\r\nUser-Agent: me\r\nACCEPT: text/plain\r\nContent-Length: 0\r\n\r\n"
    );

    // A user Connection: close switches keep-alive off without a second header.
    let headers = [("Connection".to_string(), "close".to_string())];
    let r = Request::new("HEAD", &t, &headers, Body::Empty, true).unwrap();
    assert!(!r.keep_alive() && r.is_head());
    assert_eq!(
        find(r.wire(), b"Connection"),
        find(r.wire(), b"Connection: close")
    );

    // Large bodies are not inlined (sent as a second write).
    let big = Bytes::from(vec![b'x'; INLINE_BODY_MAX + 1]);
    let r = Request::new("POST", &t, &[], Body::Bytes(big), true).unwrap();
    assert_eq!(r.wire().len(), r.head_len());
    assert!(find(
        r.wire(),
        format!("Content-Length: {}\r\n", INLINE_BODY_MAX + 1).as_bytes()
    )
    .is_some());

    let bad = |name: &str, value: &str| {
        Request::new("GET", &t, &[(name.into(), value.into())], Body::Empty, true).unwrap_err()
    };
    assert!(bad("X-A", "a\r\nEvil: 1").contains("CR, LF"));
    assert!(bad("X A", "1").contains("invalid header name"));
    assert!(bad("Content-Length", "7").contains("does not match"));
    assert!(bad("Transfer-Encoding", "chunked").contains("not supported"));
    assert!(Request::new("G T", &t, &[], Body::Empty, true)
        .unwrap_err()
        .contains("method"));
}

#[tokio::test]
async fn keep_alive_sends_100_requests_over_one_connection() {
    let (addr, server) = scripted(vec![HELLO.to_vec(); 100], usize::MAX).await;
    let t = target(addr, "/ka");
    let mut conn = connect(addr, &t).await;
    let req = get(&t);
    for _ in 0..100 {
        let r = conn.send(&req, BodyMode::Discard, T).await.unwrap();
        assert_eq!((r.status, r.version_minor, r.body_len), (200, 1, 5));
        assert!(r.body.is_none() && r.headers.is_empty());
        assert_eq!(r.bytes_received, HELLO.len() as u64);
        assert_eq!(r.bytes_sent, req.wire().len() as u64);
        assert!(r.keep_alive && conn.is_reusable());
        assert_eq!(
            r.timings.duration(),
            r.timings.sending + r.timings.waiting + r.timings.receiving
        );
    }
    assert_eq!(conn.requests_sent(), 100);
    assert_eq!(
        conn.wire_bytes(),
        (100 * req.wire().len() as u64, 100 * HELLO.len() as u64)
    );
    drop(conn);
    // The scripted server accepts exactly one connection, so all 100 went over it.
    let heads = server.await.unwrap();
    assert_eq!(heads.len(), 100);
    assert!(heads
        .iter()
        .all(|h| h.starts_with("GET /ka HTTP/1.1\r\nHost: 127.0.0.1:")));
}

#[tokio::test]
async fn chunked_body_split_across_small_writes() {
    let mut chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nX-A: b\r\n\r\n\
        5;name=val\r\nhello\r\n6 ; ext\r\n world\r\n1A\r\n"
        .to_vec();
    chunked.extend_from_slice(b"abcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: t\r\n\r\n");
    let next = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec();
    let (addr, _server) = scripted(vec![chunked, next], 3).await;
    let t = target(addr, "/");
    let mut conn = connect(addr, &t).await;
    conn.keep_headers(true);
    let r = conn.send(&get(&t), BodyMode::Keep, T).await.unwrap();
    assert_eq!(
        r.body.as_deref(),
        Some(&b"hello worldabcdefghijklmnopqrstuvwxyz"[..])
    );
    assert_eq!(r.body_len, 37);
    assert_eq!(r.header("x-a"), Some(&b"b"[..]));
    assert!(r.keep_alive && conn.is_reusable());
    // The trailers were consumed exactly: the next response parses.
    let r = conn.send(&get(&t), BodyMode::Keep, T).await.unwrap();
    assert_eq!(r.body.as_deref(), Some(&b"ok"[..]));
}

#[tokio::test]
async fn content_length_body_split_across_writes() {
    let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789".to_vec();
    let (addr, _server) = scripted(vec![resp.clone()], 4).await;
    let t = target(addr, "/");
    let mut conn = connect(addr, &t).await;
    let r = conn.send(&get(&t), BodyMode::Keep, T).await.unwrap();
    assert_eq!(r.body.as_deref(), Some(&b"0123456789"[..]));
    assert_eq!(r.bytes_received, resp.len() as u64);
    // Split writes 1 ms apart: the body took measurable time after the first byte.
    assert!(r.timings.receiving > Duration::ZERO);
}

#[tokio::test]
async fn eof_delimited_http10_body() {
    let resp = b"HTTP/1.0 200 OK\r\nServer: old\r\n\r\nuntil the very end".to_vec();
    let (addr, _server) = scripted(vec![resp], 5).await;
    let t = target(addr, "/");
    let mut conn = connect(addr, &t).await;
    let r = conn.send(&get(&t), BodyMode::Keep, T).await.unwrap();
    assert_eq!((r.status, r.version_minor), (200, 0));
    assert_eq!(r.body.as_deref(), Some(&b"until the very end"[..]));
    assert!(!r.keep_alive && !conn.is_reusable());
}

#[tokio::test]
async fn responses_without_body_and_interim_responses() {
    let responses = [
        &b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"[..],
        b"HTTP/1.1 204 No Content\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
        b"HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n",
        b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
    ];
    let (addr, server) = scripted(responses.iter().map(|r| r.to_vec()).collect(), 7).await;
    let t = target(addr, "/");
    let mut conn = connect(addr, &t).await;
    let head = Request::new("HEAD", &t, &[], Body::Empty, true).unwrap();
    let post = Request::new("POST", &t, &[], Body::Bytes(Bytes::from_static(b"x")), true).unwrap();

    let r = conn.send(&head, BodyMode::Keep, T).await.unwrap();
    assert_eq!(
        (r.status, r.body_len, r.body.as_deref()),
        (200, 0, Some(&b""[..]))
    );
    let r = conn.send(&get(&t), BodyMode::Discard, T).await.unwrap();
    assert_eq!((r.status, r.body_len), (204, 0));
    let r = conn.send(&post, BodyMode::Keep, T).await.unwrap();
    assert_eq!((r.status, r.body.as_deref()), (200, Some(&b"abc"[..])));
    assert_eq!(r.bytes_received, responses[2].len() as u64);
    let r = conn.send(&get(&t), BodyMode::Discard, T).await.unwrap();
    assert_eq!((r.status, r.body_len), (304, 0));
    let r = conn.send(&get(&t), BodyMode::Keep, T).await.unwrap();
    assert_eq!(
        (r.status, r.version_minor, r.body.as_deref()),
        (200, 0, Some(&b"ok"[..]))
    );
    assert!(r.keep_alive && conn.is_reusable());
    drop(conn);
    assert_eq!(server.await.unwrap().len(), 5);
}

#[tokio::test]
async fn head_just_under_the_limit_grows_the_buffer() {
    let mut resp = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
    resp.extend(std::iter::repeat_n(b'a', 60 * 1024));
    resp.extend_from_slice(b"\r\nContent-Length: 2\r\n\r\nok");
    let r = one(&resp, BodyMode::Keep).await.unwrap();
    assert_eq!(r.body.as_deref(), Some(&b"ok"[..]));
}

#[tokio::test]
async fn pipelined_responses_come_back_in_order() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let responses: Vec<u8> = [&b"a"[..], b"bb", b"ccc"]
        .iter()
        .flat_map(|b| {
            let mut r =
                format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", b.len()).into_bytes();
            r.extend_from_slice(b);
            r
        })
        .collect();
    let total = responses.len() as u64;
    let server = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        let mut paths = Vec::new();
        // Answer only once all three requests have arrived.
        for _ in 0..3 {
            let (head, _) = read_request(&mut s, &mut buf).await.unwrap();
            paths.push(head.split(' ').nth(1).unwrap().to_string());
        }
        s.write_all(&responses).await.unwrap();
        let _ = read_request(&mut s, &mut buf).await;
        paths
    });
    let reqs: Vec<Request> = (1..=3)
        .map(|i| get(&target(addr, &format!("/{i}"))))
        .collect();
    let mut conn = connect(addr, &target(addr, "/")).await;
    for r in &reqs {
        conn.write_request(r).await.unwrap();
    }
    assert_eq!(conn.in_flight(), 3);
    let mut received = 0;
    for (i, want) in [&b"a"[..], b"bb", b"ccc"].iter().enumerate() {
        let r = conn.read_response(false, BodyMode::Keep).await.unwrap();
        assert_eq!(r.body.as_deref(), Some(*want));
        assert_eq!(r.bytes_sent, reqs[i].wire().len() as u64);
        received += r.bytes_received;
    }
    assert_eq!(received, total);
    assert!(conn.is_reusable());
    let e = conn
        .read_response(false, BodyMode::Discard)
        .await
        .unwrap_err();
    assert_eq!(e.class, ErrorClass::Other);
    drop(conn);
    assert_eq!(server.await.unwrap(), ["/1", "/2", "/3"]);
}

#[tokio::test]
async fn closed_port_is_refused() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let e = Connection::connect(addr, &target(addr, "/"), None, T)
        .await
        .unwrap_err();
    assert_eq!(e.class, ErrorClass::Refused, "{e}");
    assert!(e.message.contains(&addr.to_string()), "{e}");
}

#[tokio::test]
async fn silent_server_times_out_and_poisons_the_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let _ = read_request(&mut s, &mut Vec::new()).await;
        tokio::time::sleep(Duration::from_secs(3)).await;
    });
    let t = target(addr, "/");
    let mut conn = connect(addr, &t).await;
    let req = get(&t);
    let started = Instant::now();
    let e = conn
        .send(&req, BodyMode::Discard, Duration::from_millis(200))
        .await
        .unwrap_err();
    assert_eq!(e.class, ErrorClass::Timeout, "{e}");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(
        (e.bytes_sent, e.bytes_received),
        (req.wire().len() as u64, 0)
    );
    assert!(!conn.is_reusable());
    let e = conn.send(&req, BodyMode::Discard, T).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Other);
    assert!(e.message.contains("unusable"), "{e}");
}

#[tokio::test]
async fn half_a_body_then_close_is_reset() {
    let mut resp = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".to_vec();
    resp.extend_from_slice(&[b'x'; 50]);
    let e = one(&resp, BodyMode::Discard).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Reset, "{e}");
    assert_eq!(e.bytes_received, resp.len() as u64);
    assert!(e.message.contains("50 of 100"), "{e}");

    let e = one(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc",
        BodyMode::Keep,
    )
    .await
    .unwrap_err();
    assert_eq!(e.class, ErrorClass::Reset, "{e}");
}

#[tokio::test]
async fn stale_keep_alive_connection_is_reset() {
    let (addr, _server) = scripted(vec![HELLO.to_vec()], usize::MAX).await;
    let t = target(addr, "/");
    let mut conn = connect(addr, &t).await;
    conn.send(&get(&t), BodyMode::Discard, T).await.unwrap();
    let e = conn.send(&get(&t), BodyMode::Discard, T).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Reset, "{e}");
    assert!(!conn.is_reusable());
}

#[tokio::test]
async fn malformed_responses_are_protocol_errors() {
    let cases: [&[u8]; 5] = [
        b"garbage garbage\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    ];
    for case in cases {
        let e = one(case, BodyMode::Discard).await.unwrap_err();
        assert_eq!(e.class, ErrorClass::Protocol, "{e}");
    }
    let mut big = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
    big.extend(std::iter::repeat_n(b'a', 70 * 1024));
    big.extend_from_slice(b"\r\n\r\n");
    let e = one(&big, BodyMode::Discard).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Protocol, "{e}");
    assert!(e.message.contains("64 KiB"), "{e}");
}

/// Found by fuzz/fuzz_targets/h1_response.rs: httparse takes any three digits, and a
/// status below 100 was read as a body-less 1xx-like final response, so its body became the
/// next response's head on a keep-alive connection.
#[tokio::test]
async fn status_codes_below_100_are_protocol_errors() {
    for case in [
        &b"HTTP/1.1 020 OK\r\nContent-Length: 5\r\n\r\nhello"[..],
        b"HTTP/1.1 000 Zero\r\n\r\n",
        b"HTTP/1.1 099 X\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    ] {
        let e = one(case, BodyMode::Keep).await.unwrap_err();
        assert_eq!(e.class, ErrorClass::Protocol, "{e}");
        assert!(e.message.contains("status code"), "{e}");
    }
}

#[test]
fn chunk_size_lines() {
    assert_eq!(parse_chunk_size(b"0\r").unwrap(), 0);
    assert_eq!(parse_chunk_size(b"fF").unwrap(), 255);
    assert_eq!(parse_chunk_size(b"10;a=b;c\r").unwrap(), 16);
    assert_eq!(parse_chunk_size(b"ffffffffffffffff\r").unwrap(), u64::MAX);
    for bad in [
        &b"\r"[..],
        b"x\r",
        b"1 2\r",
        b"10000000000000000\r",
        b"-1\r",
    ] {
        assert_eq!(
            parse_chunk_size(bad).unwrap_err().class,
            ErrorClass::Protocol
        );
    }
}

#[tokio::test]
async fn file_and_large_bodies_are_streamed() {
    const LEN: usize = 3 * 1024 * 1024;
    let path = std::env::temp_dir().join(format!("volley-http-upload-{}.bin", std::process::id()));
    let data: Vec<u8> = (0..LEN).map(|i| (i % 251) as u8).collect();
    std::fs::write(&path, &data).unwrap();

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        let mut lens = Vec::new();
        for _ in 0..2 {
            let (_, len) = read_request(&mut s, &mut buf).await.unwrap();
            lens.push(len);
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                .await
                .unwrap();
        }
        lens
    });
    let t = target(addr, "/upload");
    let mut conn = connect(addr, &t).await;
    let body = Body::File {
        path: path.clone(),
        len: LEN as u64,
    };
    let req = Request::new("POST", &t, &[], body, true).unwrap();
    let r = conn.send(&req, BodyMode::Discard, T).await.unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.bytes_sent, (req.head_len() + LEN) as u64);

    let big = Bytes::from(vec![7u8; 300 * 1024]);
    let req = Request::new("PUT", &t, &[], Body::Bytes(big), true).unwrap();
    let r = conn.send(&req, BodyMode::Discard, T).await.unwrap();
    assert_eq!(r.bytes_sent, (req.head_len() + 300 * 1024) as u64);
    let _ = std::fs::remove_file(&path);
    assert_eq!(server.await.unwrap(), [LEN as u64, 300 * 1024]);

    // A file shorter than declared must not leave a half-sent request looking fine.
    let path = std::env::temp_dir().join(format!("volley-http-short-{}.bin", std::process::id()));
    std::fs::write(&path, b"abc").unwrap();
    let (addr, _server) = scripted(vec![HELLO.to_vec()], usize::MAX).await;
    let t = target(addr, "/");
    let mut conn = connect(addr, &t).await;
    let req = Request::new(
        "POST",
        &t,
        &[],
        Body::File {
            path: path.clone(),
            len: 10,
        },
        true,
    )
    .unwrap();
    let e = conn.send(&req, BodyMode::Discard, T).await.unwrap_err();
    let _ = std::fs::remove_file(&path);
    assert_eq!(e.class, ErrorClass::Other);
    assert!(e.message.contains("before its declared length"), "{e}");
    assert!(!conn.is_reusable());
}

/// A TLS server for `conns` connections answering every request with HELLO.
async fn tls_server(conns: usize) -> (SocketAddr, String) {
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let key = rustls_pki_types::PrivateKeyDer::Pkcs8(ck.signing_key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![ck.cert.der().clone()], key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        for _ in 0..conns {
            let (tcp, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut s) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = Vec::new();
                for _ in 0..100 {
                    if read_request(&mut s, &mut buf).await.is_none()
                        || s.write_all(HELLO).await.is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    (addr, ck.cert.pem())
}

#[tokio::test]
async fn tls_insecure_cacert_and_untrusted() {
    let (addr, pem) = tls_server(3).await;
    let port = addr.port();

    // --insecure: any certificate, SNI "localhost".
    let insecure = tls_config(
        &TlsOptions {
            insecure: true,
            cacert: None,
        },
        &[b"http/1.1"],
    )
    .unwrap();
    let t = Target::parse(&format!("https://localhost:{port}/")).unwrap();
    let (mut conn, timings) = Connection::connect(addr, &t, Some(&insecure), T)
        .await
        .unwrap();
    assert!(conn.is_tls() && timings.tls_handshaking > Duration::ZERO);
    let req = get(&t);
    let first = conn.send(&req, BodyMode::Keep, T).await.unwrap();
    assert_eq!(
        (first.status, first.body.as_deref()),
        (200, Some(&b"hello"[..]))
    );
    // The first request carries the handshake; later ones still pay record overhead.
    assert!(first.bytes_sent > req.wire().len() as u64 + 100);
    assert!(first.bytes_received > HELLO.len() as u64 + 100);
    let second = conn.send(&req, BodyMode::Discard, T).await.unwrap();
    assert!(second.bytes_received > HELLO.len() as u64, "{second:?}");
    assert!(second.bytes_sent > req.wire().len() as u64);
    assert_eq!(
        conn.wire_bytes(),
        (
            first.bytes_sent + second.bytes_sent,
            first.bytes_received + second.bytes_received
        )
    );

    // --cacert with the server's own certificate, to an IP literal (IP SAN).
    let path =
        std::env::temp_dir().join(format!("volley-http-ca-{}-{port}.pem", std::process::id()));
    std::fs::write(&path, &pem).unwrap();
    let trusted = tls_config(
        &TlsOptions {
            insecure: false,
            cacert: Some(path.clone()),
        },
        &[b"http/1.1"],
    );
    let _ = std::fs::remove_file(&path);
    let trusted = trusted.unwrap();
    let t = Target::parse(&format!("https://127.0.0.1:{port}/")).unwrap();
    let (mut conn, _) = Connection::connect(addr, &t, Some(&trusted), T)
        .await
        .unwrap();
    let r = conn.send(&get(&t), BodyMode::Discard, T).await.unwrap();
    assert_eq!((r.status, r.body_len), (200, 5));

    // Neither: the self-signed certificate is rejected.
    let strict = tls_config(&TlsOptions::default(), &[b"http/1.1"]).unwrap();
    let e = Connection::connect(addr, &t, Some(&strict), T)
        .await
        .unwrap_err();
    assert_eq!(e.class, ErrorClass::Tls, "{e}");
}

#[tokio::test]
async fn https_without_config_is_an_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let t = Target::parse(&format!("https://{addr}/")).unwrap();
    let e = Connection::connect(addr, &t, None, T).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Other);
}

#[tokio::test]
async fn tls_to_a_plain_server_is_a_tls_error() {
    // A plain HTTP server answers the ClientHello with an HTTP error and closes.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let _ = s
            .write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
            .await;
    });
    let config = tls_config(
        &TlsOptions {
            insecure: true,
            cacert: None,
        },
        &[],
    )
    .unwrap();
    let t = Target::parse(&format!("https://{addr}/")).unwrap();
    let e = Connection::connect(addr, &t, Some(&config), T)
        .await
        .unwrap_err();
    assert_eq!(e.class, ErrorClass::Tls, "{e}");
}

/// Serves one connection an endless chunked body (16 KiB chunks) until the client goes
/// away, bounded at 100,000 chunks so a bug cannot run forever.
async fn endless_chunked() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        if read_request(&mut s, &mut buf).await.is_none() {
            return;
        }
        let mut chunk = b"4000\r\n".to_vec();
        chunk.extend_from_slice(&[b'z'; 0x4000]);
        chunk.extend_from_slice(b"\r\n");
        if s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            .await
            .is_err()
        {
            return;
        }
        for _ in 0..100_000 {
            if s.write_all(&chunk).await.is_err() {
                return;
            }
        }
    });
    addr
}

/// A kept body stops at the cap instead of growing without limit (an endless body used to
/// be buffered until the request timeout: gigabytes); the bytes read count, the connection
/// is dropped. A declared length over the cap fails before reading the body; discarded
/// bodies and bodies under the cap are unaffected.
#[tokio::test]
async fn kept_bodies_stop_at_the_cap() {
    const CAP: u64 = 256 * 1024;
    let addr = endless_chunked().await;
    let t = target(addr, "/");
    let mut conn = connect(addr, &t).await;
    conn.set_max_body(Some(CAP));
    let e = conn.send(&get(&t), BodyMode::Keep, T).await.unwrap_err();
    assert!(e.is_body_too_large(), "{e}");
    assert!(e.message.contains("256 KiB"), "{e}");
    assert!(
        e.bytes_received > CAP && e.bytes_received < CAP + 2 * MAX_HEAD as u64,
        "{}",
        e.bytes_received
    );
    assert!(!conn.is_reusable());

    let big = b"HTTP/1.1 200 OK\r\nContent-Length: 10485760\r\n\r\nxxxx";
    let (addr, _server) = scripted(vec![big.to_vec()], usize::MAX).await;
    let t = target(addr, "/");
    let mut conn = connect(addr, &t).await;
    conn.set_max_body(Some(CAP));
    let e = conn.send(&get(&t), BodyMode::Keep, T).await.unwrap_err();
    assert!(e.is_body_too_large(), "{e}");
    assert!(e.bytes_received < MAX_HEAD as u64, "{}", e.bytes_received);

    let mut eof = b"HTTP/1.0 200 OK\r\n\r\n".to_vec();
    eof.extend_from_slice(&[b'e'; 300 * 1024]);
    let (addr, _server) = scripted(vec![eof.clone()], usize::MAX).await;
    let t = target(addr, "/");
    let mut conn = connect(addr, &t).await;
    conn.set_max_body(Some(CAP));
    let e = conn.send(&get(&t), BodyMode::Keep, T).await.unwrap_err();
    assert!(e.is_body_too_large(), "{e}");

    // Under the cap, and discarded bodies of any size, are read as before.
    let mut ok = b"HTTP/1.1 200 OK\r\nContent-Length: 262144\r\n\r\n".to_vec();
    ok.extend_from_slice(&[b'o'; 256 * 1024]);
    for (resp, mode) in [(ok, BodyMode::Keep), (eof, BodyMode::Discard)] {
        let (addr, _server) = scripted(vec![resp], usize::MAX).await;
        let t = target(addr, "/");
        let mut conn = connect(addr, &t).await;
        conn.set_max_body(Some(CAP));
        let r = conn.send(&get(&t), mode, T).await.unwrap();
        assert!(r.body_len >= CAP, "{}", r.body_len);
    }
}
