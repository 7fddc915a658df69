//! Accounts and sessions: register, login, me, refresh, logout; cookies and CSRF.

mod common;
use common::*;
use serde_json::json;

#[tokio::test]
async fn login_sets_cookies_and_bearer_and_csrf_guards_cookie_writes() {
    let svc = start("auth");
    let mut c = svc.client();
    let r = register(&mut c, "alice", "password-123").await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["user"]["username"], "alice");
    let dup = register(&mut c, "alice", "password-456").await;
    assert_eq!(assert_4xx(&dup, 409, "duplicate user"), "username_taken");
    let wrong = c
        .json(
            "POST",
            "/api/auth/login",
            &[],
            &json!({"username": "alice", "password": "nope-nope"}),
        )
        .await
        .unwrap();
    assert_eq!(
        assert_4xx(&wrong, 401, "wrong password"),
        "invalid_credentials"
    );

    let r = c
        .json(
            "POST",
            "/api/auth/login",
            &[],
            &json!({"username": "alice", "password": "password-123"}),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    let cookies = r.set_cookies();
    let find = |name: &str| {
        cookies
            .iter()
            .find(|c| c.starts_with(&format!("{name}=")))
            .cloned()
            .unwrap()
    };
    assert!(find("volley_access").contains("HttpOnly"));
    assert!(find("volley_refresh").contains("HttpOnly"));
    assert!(
        !find("volley_csrf").contains("HttpOnly"),
        "scripts read the CSRF cookie"
    );
    let v = r.json();
    assert_eq!(v["token_type"], "Bearer");
    let s = login(&mut c, "alice", "password-123").await;

    // me: bearer, cookie, nothing.
    let me = c
        .request("GET", "/api/auth/me", &s.auth(), "")
        .await
        .unwrap();
    assert_eq!(me.status, 200);
    assert_eq!(me.json()["user"]["username"], "alice");
    let me = c
        .request("GET", "/api/auth/me", &[("cookie", &s.cookie)], "")
        .await
        .unwrap();
    assert_eq!(me.status, 200, "cookie auth: {}", me.text());
    let anon = c.request("GET", "/api/auth/me", &[], "").await.unwrap();
    assert_eq!(assert_4xx(&anon, 401, "no auth"), "unauthenticated");
    let bad = c
        .request(
            "GET",
            "/api/auth/me",
            &[("authorization", "Bearer nope")],
            "",
        )
        .await
        .unwrap();
    assert_eq!(assert_4xx(&bad, 401, "bad token"), "invalid_token");

    // Cookie-authenticated writes need the CSRF header; bearer ones do not.
    let body = json!({"name": "docs"});
    let r = c
        .json("POST", "/api/folders", &[("cookie", &s.cookie)], &body)
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 403, "cookie write without CSRF"), "csrf");
    let r = c
        .json(
            "POST",
            "/api/folders",
            &[("cookie", &s.cookie), ("x-csrf-token", "wrong")],
            &body,
        )
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 403, "wrong CSRF"), "csrf");
    let r = c
        .json(
            "POST",
            "/api/folders",
            &[("cookie", &s.cookie), ("x-csrf-token", &s.csrf)],
            &body,
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    let r = c
        .json("POST", "/api/folders", &s.auth(), &json!({"name": "docs2"}))
        .await
        .unwrap();
    assert_eq!(r.status, 201);

    // Refresh by cookie (with CSRF) rotates the session.
    let r = c
        .json(
            "POST",
            "/api/auth/refresh",
            &[("cookie", &s.cookie)],
            &json!({}),
        )
        .await
        .unwrap();
    assert_eq!(
        assert_4xx(&r, 403, "refresh by cookie without CSRF"),
        "csrf"
    );
    let r = c
        .json(
            "POST",
            "/api/auth/refresh",
            &[("cookie", &s.cookie), ("x-csrf-token", &s.csrf)],
            &json!({}),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let fresh = r.json()["access_token"].as_str().unwrap().to_owned();
    assert_eq!(r.set_cookies().len(), 3);
    let old = c
        .request("GET", "/api/auth/me", &s.auth(), "")
        .await
        .unwrap();
    assert_eq!(old.status, 401, "the old access token ended");
    let again = c
        .json(
            "POST",
            "/api/auth/refresh",
            &[],
            &json!({"refresh_token": s.refresh}),
        )
        .await
        .unwrap();
    assert_eq!(
        assert_4xx(&again, 401, "refresh token reuse"),
        "invalid_token"
    );
    let new_refresh = r.json()["refresh_token"].as_str().unwrap().to_owned();
    let r = c
        .json(
            "POST",
            "/api/auth/refresh",
            &[],
            &json!({"refresh_token": new_refresh}),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "refresh by body");
    let latest = format!("Bearer {}", r.json()["access_token"].as_str().unwrap());
    let stale = c
        .request(
            "GET",
            "/api/auth/me",
            &[("authorization", &format!("Bearer {fresh}"))],
            "",
        )
        .await
        .unwrap();
    assert_eq!(stale.status, 401);

    // Logout ends the session and clears the cookies.
    let r = c
        .request(
            "POST",
            "/api/auth/logout",
            &[("authorization", &latest)],
            "",
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert!(r.set_cookies().iter().all(|c| c.contains("Max-Age=0")));
    let me = c
        .request("GET", "/api/auth/me", &[("authorization", &latest)], "")
        .await
        .unwrap();
    assert_eq!(me.status, 401);
    let r = c
        .request("POST", "/api/auth/logout", &[], "")
        .await
        .unwrap();
    assert_eq!(
        assert_4xx(&r, 401, "logout without a session"),
        "unauthenticated"
    );
}

#[tokio::test]
async fn health_ready_and_metrics() {
    let svc = start("health");
    let mut c = svc.client();
    let r = c.request("GET", "/health", &[], "").await.unwrap();
    assert_eq!((r.status, r.json()["status"].as_str()), (200, Some("ok")));
    let r = c.request("GET", "/health/ready", &[], "").await.unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let _ = register(&mut c, "bob", "password-123").await;
    let _ = login(&mut c, "bob", "password-123").await;
    let _ = c.request("GET", "/api/auth/me", &[], "").await.unwrap();
    let r = c.request("GET", "/metrics", &[], "").await.unwrap();
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/plain"));
    let m = r.text();
    for want in [
        "volley_demo_http_requests_total{route=\"/api/auth/login\",method=\"POST\",status=\"200\"} 1",
        "volley_demo_http_requests_total{route=\"/api/auth/me\",method=\"GET\",status=\"401\"} 1",
        "volley_demo_http_request_duration_seconds_bucket{route=\"/api/auth/login\",le=\"+Inf\"} 1",
        "volley_demo_http_request_duration_seconds_count{route=\"/health\"} 1",
        "# TYPE volley_demo_http_request_duration_seconds histogram",
        "process_resident_memory_bytes ",
        "volley_demo_sessions 1",
    ] {
        assert!(m.contains(want), "missing {want:?} in\n{m}");
    }
}

#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive() {
    let svc = start("auth-scheme");
    let mut c = svc.client();
    let s = user(&mut c, "carol").await;
    let token = s.bearer.strip_prefix("Bearer ").unwrap();
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let h = format!("{scheme} {token}");
        let r = c
            .request("GET", "/api/auth/me", &[("authorization", &h)], Vec::new())
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{scheme}: {}", r.text());
    }
    let h = format!("Basic {token}");
    let r = c
        .request("GET", "/api/auth/me", &[("authorization", &h)], Vec::new())
        .await
        .unwrap();
    assert_eq!(r.status, 401, "another scheme is not a bearer token");
}

#[test]
fn a_connection_that_stalls_in_its_headers_is_closed() {
    use std::io::{Read, Write};
    let svc = start_with("auth-slowloris", |c| {
        c.header_read_timeout = std::time::Duration::from_millis(500)
    });
    let mut tcp = std::net::TcpStream::connect(svc.demo.local_addr()).unwrap();
    tcp.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .unwrap();
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let start = std::time::Instant::now();
    let mut buf = [0u8; 1024];
    // Closed (EOF or reset), perhaps after a 408; not left open until our read times out.
    loop {
        match tcp.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => panic!("still open: {e}"),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => panic!("still open: {e}"),
            Err(_) => break,
        }
    }
    assert!(
        start.elapsed() < std::time::Duration::from_secs(5),
        "closed after {:?}",
        start.elapsed()
    );
}
