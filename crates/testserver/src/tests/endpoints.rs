use std::time::{Duration, Instant};

use serde_json::json;

use super::client::{connect, get, once};
use super::target;
use crate::body::pattern_byte;

#[tokio::test]
async fn root_is_static_hello_world() {
    let t = target();
    let r = get(t.local_addr(), "/").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"Hello, world!");
    assert_eq!(r.header("content-type"), Some("text/plain"));
    assert_eq!(r.header("content-length"), Some("13"));
}

#[tokio::test]
async fn bytes_streams_exact_length_and_pattern() {
    let t = target();
    let r = get(t.local_addr(), "/bytes/1048576").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some("1048576"));
    assert_eq!(r.body.len(), 1_048_576);
    // Every byte, so frame boundaries (every 64 KiB) continue the pattern.
    assert!(r
        .body
        .iter()
        .enumerate()
        .all(|(i, &b)| b == pattern_byte(i as u64)));
    assert!(r.body.starts_with(b"abcdefghijklmnopqrstuvwxyzabc"));

    let r = get(t.local_addr(), "/bytes/0").await;
    assert_eq!((r.status, r.body.len()), (200, 0));
    assert_eq!(get(t.local_addr(), "/bytes/1073741825").await.status, 400);
    assert_eq!(get(t.local_addr(), "/bytes/lots").await.status, 400);
}

#[tokio::test]
async fn delay_waits_at_least_the_requested_time() {
    let t = target();
    let start = Instant::now();
    let r = get(t.local_addr(), "/delay/50").await;
    assert!(start.elapsed() >= Duration::from_millis(50));
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), json!({ "delay_ms": 50 }));
    assert_eq!(get(t.local_addr(), "/delay/soon").await.status, 400);
}

#[tokio::test]
async fn status_returns_the_code() {
    let t = target();
    let r = get(t.local_addr(), "/status/418").await;
    assert_eq!(r.status, 418);
    assert_eq!(r.json(), json!({ "status": 418 }));
    let r = get(t.local_addr(), "/status/204").await;
    assert_eq!((r.status, r.body.len()), (204, 0));
    assert_eq!(get(t.local_addr(), "/status/503").await.status, 503);
    for bad in ["100", "199", "600", "abc", ""] {
        assert_eq!(
            get(t.local_addr(), &format!("/status/{bad}")).await.status,
            400,
            "{bad}"
        );
    }
}

#[tokio::test]
async fn echo_returns_method_and_body_for_every_method() {
    let t = target();
    let mut c = connect(t.local_addr()).await;
    for method in ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"] {
        let body = format!("hello {method}");
        let r = c
            .call(
                method,
                "/echo?x=1",
                &[("Content-Type", "text/plain")],
                body.as_bytes(),
            )
            .await;
        assert_eq!(r.status, 200, "{method}");
        let j = r.json();
        assert_eq!(j["method"], method);
        assert_eq!(j["path"], "/echo");
        assert_eq!(j["version"], "HTTP/1.1");
        assert_eq!(j["args"], json!({ "x": "1" }));
        assert_eq!(j["body"], body.as_str());
        assert_eq!(j["body_base64"], false);
        assert_eq!(j["headers"]["content-type"], "text/plain");
    }
    // HEAD gets the headers only, and the connection stays usable.
    let r = c.call("HEAD", "/echo", &[], b"").await;
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());
    assert_eq!(c.get("/").await.body, b"Hello, world!");
}

#[tokio::test]
async fn echo_joins_repeats_and_base64s_binary_bodies() {
    let t = target();
    let r = once(
        t.local_addr(),
        "GET",
        "/echo/sub/path?a=1&a=2&b=x%20y",
        &[("X-Many", "one"), ("X-Many", "two")],
        b"",
    )
    .await;
    let j = r.json();
    assert_eq!(j["path"], "/echo/sub/path");
    assert_eq!(j["args"], json!({ "a": "1, 2", "b": "x y" }));
    assert_eq!(j["headers"]["x-many"], "one, two");
    assert_eq!(j["body"], "");

    let r = once(t.local_addr(), "POST", "/echo", &[], &[0xff, 0x00, 0x41]).await;
    assert_eq!(r.json()["body"], "/wBB");
    assert_eq!(r.json()["body_base64"], true);
}

#[tokio::test]
async fn echo_rejects_bodies_over_16_mib() {
    let t = target();
    let mut c = connect(t.local_addr()).await;
    // The declared length alone is enough to refuse; the body is never sent.
    c.send(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 16777217\r\n\r\n")
        .await;
    let r = c.response(false).await;
    assert_eq!(r.status, 413);
    assert_eq!(r.header("connection"), Some("close"));
}

#[tokio::test]
async fn get_is_echo_for_get_only() {
    let t = target();
    let r = get(t.local_addr(), "/get?q=v").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["method"], "GET");
    assert_eq!(r.json()["args"], json!({ "q": "v" }));
    let r = once(t.local_addr(), "POST", "/get", &[], b"x").await;
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, HEAD"));
}

#[tokio::test]
async fn headers_lists_request_headers() {
    let t = target();
    let r = once(t.local_addr(), "GET", "/headers", &[("X-Test", "1")], b"").await;
    assert_eq!(r.status, 200);
    let j = r.json();
    assert_eq!(j["headers"]["x-test"], "1");
    assert_eq!(j["headers"]["host"], "localhost");
}

#[tokio::test]
async fn cookies_read_set_and_delete() {
    let t = target();
    let addr = t.local_addr();
    let r = once(addr, "GET", "/cookies", &[("Cookie", "a=1; b=2")], b"").await;
    assert_eq!(r.json(), json!({ "cookies": { "a": "1", "b": "2" } }));

    let r = once(
        addr,
        "GET",
        "/cookies/set?x=1&y=2",
        &[("Cookie", "a=1")],
        b"",
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.all("set-cookie"), ["x=1; Path=/", "y=2; Path=/"]);
    assert_eq!(
        r.json(),
        json!({ "cookies": { "a": "1", "x": "1", "y": "2" } })
    );

    let r = once(
        addr,
        "GET",
        "/cookies/delete?a",
        &[("Cookie", "a=1; b=2")],
        b"",
    )
    .await;
    assert_eq!(r.status, 200);
    let set = r.all("set-cookie");
    assert_eq!(set.len(), 1);
    assert!(
        set[0].starts_with("a=;") && set[0].contains("Max-Age=0"),
        "{set:?}"
    );
    assert_eq!(r.json(), json!({ "cookies": { "b": "2" } }));

    assert_eq!(get(addr, "/cookies/set?bad%3Bname=1").await.status, 400);
}

#[tokio::test]
async fn basic_auth_accepts_only_matching_credentials() {
    let t = target();
    let addr = t.local_addr();
    // base64("user:pass")
    let r = once(
        addr,
        "GET",
        "/basic-auth/user/pass",
        &[("Authorization", "Basic dXNlcjpwYXNz")],
        b"",
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), json!({ "authenticated": true, "user": "user" }));

    let r = once(
        addr,
        "GET",
        "/basic-auth/user/other",
        &[("Authorization", "Basic dXNlcjpwYXNz")],
        b"",
    )
    .await;
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some("Basic realm=\"volley\""));
    assert_eq!(r.json(), json!({ "authenticated": false }));

    assert_eq!(get(addr, "/basic-auth/user/pass").await.status, 401);
    let r = once(
        addr,
        "GET",
        "/basic-auth/user/pass",
        &[("Authorization", "Basic !!!")],
        b"",
    )
    .await;
    assert_eq!(r.status, 401);
}

#[tokio::test]
async fn bearer_requires_a_token() {
    let t = target();
    let addr = t.local_addr();
    let r = once(
        addr,
        "GET",
        "/bearer",
        &[("Authorization", "Bearer abc.def")],
        b"",
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({ "authenticated": true, "token": "abc.def" })
    );
    let r = get(addr, "/bearer").await;
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    let r = once(
        addr,
        "GET",
        "/bearer",
        &[("Authorization", "Basic dXNlcjpwYXNz")],
        b"",
    )
    .await;
    assert_eq!(r.status, 401);
}

#[tokio::test]
async fn redirect_chain_ends_at_get() {
    let t = target();
    let mut c = connect(t.local_addr()).await;
    let mut path = "/redirect/3".to_owned();
    let mut seen = Vec::new();
    for _ in 0..10 {
        let r = c.get(&path).await;
        if r.status != 302 {
            assert_eq!(r.status, 200);
            assert_eq!(r.json()["path"], "/get");
            break;
        }
        path = r.header("location").expect("Location").to_owned();
        seen.push(path.clone());
    }
    assert_eq!(seen, ["/redirect/2", "/redirect/1", "/get"]);
    assert_eq!(c.get("/redirect/0").await.status, 400);
}

#[tokio::test]
async fn redirect_to_uses_url_and_status() {
    let t = target();
    let addr = t.local_addr();
    let r = get(
        addr,
        "/redirect-to?url=https%3A%2F%2Fexample.com%2Fx&status_code=307",
    )
    .await;
    assert_eq!(r.status, 307);
    assert_eq!(r.header("location"), Some("https://example.com/x"));
    let r = get(addr, "/redirect-to?url=/get").await;
    assert_eq!((r.status, r.header("location")), (302, Some("/get")));
    assert_eq!(get(addr, "/redirect-to").await.status, 400);
    assert_eq!(
        get(addr, "/redirect-to?url=/&status_code=200").await.status,
        400
    );
}

#[tokio::test]
async fn upload_counts_a_5_mib_body_sent_in_pieces() {
    let t = target();
    let mut c = connect(t.local_addr()).await;
    const LEN: usize = 5 * 1024 * 1024;
    c.send(format!("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: {LEN}\r\n\r\n").as_bytes())
        .await;
    let piece = vec![b'z'; 64 * 1024];
    for _ in 0..LEN / piece.len() {
        c.send(&piece).await;
    }
    let r = c.response(false).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), json!({ "bytes": 5_242_880 }));

    // Chunked transfer encoding works too, on the same connection.
    c.send(b"PUT /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        .await;
    c.send(b"5\r\nhello\r\n").await;
    c.send(b"6\r\n world\r\n0\r\n\r\n").await;
    assert_eq!(c.response(false).await.json(), json!({ "bytes": 11 }));

    let r = c.get("/upload").await;
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("POST, PUT"));
}

#[tokio::test]
async fn unknown_path_is_404_json() {
    let t = target();
    let r = get(t.local_addr(), "/nope/x").await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json(), json!({ "error": "not found", "path": "/nope/x" }));
}

#[tokio::test]
async fn metrics_is_prometheus_text() {
    let t = target();
    get(t.local_addr(), "/").await;
    get(t.local_addr(), "/status/500").await;
    let r = get(t.local_addr(), "/metrics").await;
    assert_eq!(r.status, 200);
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    let text = r.text();
    assert!(
        text.contains("# TYPE volley_target_requests_total counter\n"),
        "{text}"
    );
    assert!(
        text.contains("\nvolley_target_requests_total 2\n"),
        "{text}"
    );
    assert!(
        text.contains("\nvolley_target_connections_total 2\n"),
        "{text}"
    );
    for name in ["bytes_received", "bytes_sent"] {
        assert!(
            text.contains(&format!("\nvolley_target_{name}_total ")),
            "{text}"
        );
    }
}

#[tokio::test]
async fn delay_all_slows_everything_but_monitoring() {
    let delay = Duration::from_millis(300);
    let t = crate::spawn(crate::TargetConfig {
        delay_all: Some(delay),
        ..Default::default()
    })
    .unwrap();
    let start = Instant::now();
    assert_eq!(get(t.local_addr(), "/").await.status, 200);
    assert!(start.elapsed() >= delay);
    let start = Instant::now();
    let r = get(t.local_addr(), "/delay/20").await;
    assert!(start.elapsed() >= delay + Duration::from_millis(20));
    assert_eq!(r.status, 200);
    let start = Instant::now();
    assert_eq!(get(t.local_addr(), "/stats").await.status, 200);
    assert!(start.elapsed() < delay, "/stats must not be delayed");
}
