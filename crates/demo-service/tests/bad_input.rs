//! Bad input is a 4xx with `{"error", "code"}`, never a 500: path traversal in names,
//! oversized bodies, bad ranges, missing auth, someone else's resources, malformed requests.

mod common;
use base64::Engine;
use common::*;
use serde_json::json;
use volley_demo_service::client::{multipart, multipart_type};

#[tokio::test]
async fn bad_input_gets_4xx_json_never_500() {
    let svc = start_with("bad", |c| {
        c.max_upload_bytes = 64 * 1024;
        c.max_json_bytes = 2048;
    });
    let mut c = svc.client();
    let a = user(&mut c, "owner").await;
    let b = user(&mut c, "intruder").await;
    let folder = mkdir(&mut c, &a, a.root, "private").await;
    let fid = upload(&mut c, &a, folder, "secret.txt", b"secret")
        .await
        .json()["file"]["id"]
        .as_i64()
        .unwrap();
    let ct = multipart_type();

    // Names: traversal, separators, NUL, control characters, empty, too long.
    let long = "x".repeat(256);
    for name in [
        "..",
        ".",
        "a/b",
        "../etc",
        "a\\b",
        "a\u{0}b",
        "a\nb",
        "",
        long.as_str(),
    ] {
        let r = c
            .json("POST", "/api/folders", &a.auth(), &json!({"name": name}))
            .await
            .unwrap();
        assert_eq!(assert_4xx(&r, 400, name), "invalid_name", "folder {name:?}");
        let r = c
            .request(
                "POST",
                "/api/uploads",
                &a.auth(),
                serde_json::to_vec(&json!({"name": name, "size": 1})).unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(
            assert_4xx(&r, 400, name),
            "invalid_name",
            "chunked {name:?}"
        );
    }
    for name in ["../../etc/passwd", "..", "a/b"] {
        let r = c
            .request(
                "POST",
                "/api/files/upload",
                &[("authorization", &a.bearer), ("content-type", &ct)],
                multipart(&[], name, b"x"),
            )
            .await
            .unwrap();
        assert_eq!(assert_4xx(&r, 400, name), "invalid_name", "upload {name:?}");
    }
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("owner:password-123")
    );
    for path in [
        "/dav/../x",
        "/dav/%2e%2e/x",
        "/dav/a%2Fb",
        "/dav/a%00b",
        "/dav/%zz",
    ] {
        let r = c
            .request("PUT", path, &[("authorization", &basic)], "x")
            .await
            .unwrap();
        assert_eq!(assert_4xx(&r, 400, path), "invalid_name", "dav {path}");
    }

    // Oversized bodies.
    let big = vec![b'x'; 100 * 1024];
    let r = c
        .request(
            "POST",
            "/api/files/upload",
            &[("authorization", &a.bearer), ("content-type", &ct)],
            multipart(&[], "big.bin", &big),
        )
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 413, "upload"), "body_too_large");
    let r = c
        .request(
            "PUT",
            "/dav/big.bin",
            &[("authorization", &basic)],
            big.clone(),
        )
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 413, "dav put"), "body_too_large");
    let r = c
        .json(
            "POST",
            "/api/uploads",
            &a.auth(),
            &json!({"name": "big", "size": 1 << 20}),
        )
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 413, "chunked size"), "body_too_large");
    let r = c
        .json(
            "POST",
            "/api/folders",
            &a.auth(),
            &json!({"name": "x".repeat(5000)}),
        )
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 413, "json"), "body_too_large");
    let r = c
        .json(
            "POST",
            "/api/auth/login",
            &[],
            &json!({"username": "x".repeat(5000), "password": "p"}),
        )
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 413, "login json"), "body_too_large");
    assert!(
        std::fs::read_dir(svc.dir.join("tmp"))
            .unwrap()
            .next()
            .is_none(),
        "refused uploads leave no temp files"
    );

    // Malformed requests.
    for (body, what) in [
        ("{", "truncated JSON"),
        ("[1]", "not an object"),
        ("{\"username\": 5}", "wrong type"),
    ] {
        let r = c
            .request(
                "POST",
                "/api/auth/login",
                &[("content-type", "application/json")],
                body,
            )
            .await
            .unwrap();
        assert_eq!(r.status, 400, "{what}: {}", r.text());
    }
    let r = c
        .request(
            "POST",
            "/api/files/upload",
            &[("authorization", &a.bearer), ("content-type", "text/plain")],
            "x",
        )
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 400, "not multipart"), "bad_multipart");
    let r = c
        .request(
            "POST",
            "/api/files/upload",
            &[("authorization", &a.bearer), ("content-type", &ct)],
            "--nope\r\n",
        )
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 400, "garbage multipart"), "bad_multipart");
    let r = c
        .request(
            "POST",
            "/api/files/upload",
            &[("authorization", &a.bearer), ("content-type", &ct)],
            multipart(&[("a", "b")], "x", b"")[..60].to_vec(),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 400, "truncated multipart: {}", r.text());
    for (path, code) in [
        ("/api/folders/abc", "invalid_id"),
        ("/api/files/-1", "invalid_id"),
        ("/api/folders?limit=0", "invalid_query"),
        ("/api/folders?limit=5000", "invalid_query"),
        ("/api/folders?sort=owner", "invalid_query"),
        ("/api/folders?order=up", "invalid_query"),
        ("/api/folders?offset=-3", "invalid_query"),
        ("/api/search?q=", "invalid_query"),
        ("/api/search?q=%22%22", "invalid_query"),
        ("/api/search?q=%zz", "invalid_query"),
    ] {
        let r = c.request("GET", path, &a.auth(), "").await.unwrap();
        assert_eq!(assert_4xx(&r, 400, path), code, "{path}");
    }
    // FTS syntax in a query is plain text, not an error.
    let r = c
        .request(
            "GET",
            "/api/search?q=secret%22%20OR%20NEAR(%2A",
            &a.auth(),
            "",
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.request("GET", "/nowhere", &[], "").await.unwrap();
    assert_eq!(assert_4xx(&r, 404, "unknown route"), "not_found");
    let r = c
        .request("PATCH", "/api/folders", &a.auth(), "")
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 405, "wrong method"), "method_not_allowed");
    let r = c
        .request("PUT", "/api/uploads/zzz/chunks/x", &a.auth(), "")
        .await
        .unwrap();
    assert_eq!(r.status, 400);
    let r = c
        .request(
            "PUT",
            "/api/uploads/0123456789abcdef0123456789abcdef/chunks/0",
            &a.auth(),
            "",
        )
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 404, "unknown upload"), "not_found");
    let r = c
        .json(
            "POST",
            "/api/batch/move",
            &a.auth(),
            &json!({"file_ids": [fid]}),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 400, "move without target");
    let r = c
        .json(
            "POST",
            "/api/batch/move",
            &a.auth(),
            &json!({"file_ids": "x", "target_folder_id": folder}),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 400);
    let r = c
        .json(
            "POST",
            "/api/auth/register",
            &[],
            &json!({"username": "a b", "password": "password-123"}),
        )
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 400, "bad username"), "invalid_username");
    let r = c
        .json(
            "POST",
            "/api/auth/register",
            &[],
            &json!({"username": "short", "password": "1"}),
        )
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 400, "short password"), "invalid_password");

    // Bad ranges.
    let r = c
        .request(
            "GET",
            &format!("/api/files/{fid}/download"),
            &[a.auth()[0], ("range", "bytes=10-")],
            "",
        )
        .await
        .unwrap();
    assert_eq!(
        assert_4xx(&r, 416, "range past the end"),
        "range_not_satisfiable"
    );

    // Missing auth on every API route.
    for (m, path) in [
        ("GET", "/api/auth/me"),
        ("GET", "/api/folders"),
        ("POST", "/api/folders"),
        ("GET", &format!("/api/folders/{folder}")),
        ("DELETE", &format!("/api/folders/{folder}")),
        ("POST", "/api/files/upload"),
        ("GET", &format!("/api/files/{fid}")),
        ("GET", &format!("/api/files/{fid}/download")),
        ("DELETE", &format!("/api/files/{fid}")),
        ("POST", "/api/uploads"),
        ("GET", "/api/search?q=x"),
        ("POST", "/api/batch/move"),
        ("PROPFIND", "/dav/"),
    ] {
        let r = c.request(m, path, &[], "").await.unwrap();
        assert_eq!(assert_4xx(&r, 401, path), "unauthenticated", "{m} {path}");
    }

    // Someone else's resources are not found (ids do not leak).
    for (m, path) in [
        ("GET", format!("/api/folders/{folder}")),
        ("DELETE", format!("/api/folders/{folder}")),
        ("GET", format!("/api/files/{fid}")),
        ("GET", format!("/api/files/{fid}/download")),
        ("DELETE", format!("/api/files/{fid}")),
    ] {
        let r = c.request(m, &path, &b.auth(), "").await.unwrap();
        assert_eq!(assert_4xx(&r, 404, &path), "not_found", "{m} {path}");
    }
    let r = upload(&mut c, &b, folder, "planted.txt", b"x").await;
    assert_eq!(
        assert_4xx(&r, 404, "upload into another's folder"),
        "not_found"
    );
    let r = c
        .json(
            "POST",
            "/api/folders",
            &b.auth(),
            &json!({"name": "x", "parent_id": folder}),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 404);
    let r = c
        .json(
            "POST",
            "/api/batch/move",
            &b.auth(),
            &json!({"file_ids": [fid], "target_folder_id": b.root}),
        )
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 404, "move another's file"), "not_found");
    let r = c
        .json(
            "POST",
            "/api/uploads",
            &b.auth(),
            &json!({"name": "x", "size": 1, "folder_id": folder}),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 404);
    let r = c
        .request("GET", "/api/search?q=secret", &b.auth(), "")
        .await
        .unwrap();
    assert_eq!(r.json()["total"], 0, "search only sees one's own files");
    let r = c
        .request("GET", "/api/search?q=secret", &a.auth(), "")
        .await
        .unwrap();
    assert_eq!(r.json()["total"], 1);

    // Still serving, and nothing above was a 500.
    let m = c.request("GET", "/metrics", &[], "").await.unwrap().text();
    assert!(!m.contains("status=\"5"), "no 5xx at all:\n{m}");
}
