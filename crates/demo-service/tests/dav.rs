//! The WebDAV subset: Basic auth, PUT, GET with Range, PROPFIND Depth 0/1, MKCOL, DELETE.

mod common;
use base64::Engine;
use common::*;

/// The `<D:href>` values of a multistatus body (a minimal parse is enough here).
fn hrefs(xml: &str) -> Vec<String> {
    xml.split("<D:href>")
        .skip(1)
        .map(|s| s.split("</D:href>").next().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn webdav_put_get_propfind_delete() {
    let svc = start("dav");
    let mut c = svc.client();
    let s = user(&mut c, "frank").await;
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("frank:password-123")
    );
    let auth = [("authorization", basic.as_str())];

    let r = c.request("PUT", "/dav/a.txt", &[], "x").await.unwrap();
    assert_eq!(assert_4xx(&r, 401, "no auth"), "unauthenticated");
    assert!(r.header("www-authenticate").unwrap().starts_with("Basic"));
    let wrong = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("frank:nope")
    );
    let r = c
        .request("PROPFIND", "/dav/", &[("authorization", &wrong)], "")
        .await
        .unwrap();
    assert_eq!(r.status, 401);

    let r = c
        .request("PUT", "/dav/a.txt", &auth, "hello world")
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    let r = c
        .request("PUT", "/dav/a.txt", &auth, "hello webdav")
        .await
        .unwrap();
    assert_eq!(r.status, 204, "overwrite");
    let r = c.request("GET", "/dav/a.txt", &auth, "").await.unwrap();
    assert_eq!((r.status, r.text()), (200, "hello webdav".to_owned()));
    let r = c
        .request("GET", "/dav/a.txt", &[auth[0], ("range", "bytes=6-")], "")
        .await
        .unwrap();
    assert_eq!((r.status, r.text()), (206, "webdav".to_owned()));
    let r = c
        .request("GET", "/dav/a.txt", &[auth[0], ("range", "bytes=50-")], "")
        .await
        .unwrap();
    assert_eq!(r.status, 416);

    let r = c.request("MKCOL", "/dav/dir/", &auth, "").await.unwrap();
    assert_eq!(r.status, 201);
    let r = c.request("MKCOL", "/dav/dir/", &auth, "").await.unwrap();
    assert_eq!(r.status, 405);
    let r = c
        .request("PUT", "/dav/dir/b%20c.bin", &auth, vec![1u8; 1000])
        .await
        .unwrap();
    assert_eq!(r.status, 201);
    let r = c
        .request("PUT", "/dav/missing/c.bin", &auth, "x")
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 409, "missing parent"), "conflict");

    // The API sees WebDAV's files and the other way round.
    let v = list(&mut c, &s, s.root, "").await;
    assert_eq!(v["files"][0]["name"], "a.txt");
    assert_eq!(v["folders"][0]["name"], "dir");
    upload(&mut c, &s, s.root, "api.txt", b"from the api").await;

    let r = c
        .request("PROPFIND", "/dav/dir/", &[auth[0], ("depth", "0")], "")
        .await
        .unwrap();
    assert_eq!(r.status, 207);
    assert!(r.header("content-type").unwrap().contains("xml"));
    let xml = r.text();
    assert!(xml.starts_with("<?xml"), "{xml}");
    assert_eq!(hrefs(&xml), ["/dav/dir/"]);
    assert!(xml.contains("<D:collection/>"));
    let r = c
        .request("PROPFIND", "/dav/dir/", &[auth[0], ("depth", "1")], "")
        .await
        .unwrap();
    let xml = r.text();
    assert_eq!(hrefs(&xml), ["/dav/dir/", "/dav/dir/b%20c.bin"]);
    assert!(
        xml.contains("<D:getcontentlength>1000</D:getcontentlength>"),
        "{xml}"
    );
    let r = c
        .request("PROPFIND", "/dav/", &[auth[0], ("depth", "1")], "")
        .await
        .unwrap();
    assert_eq!(
        hrefs(&r.text()),
        ["/dav/", "/dav/dir/", "/dav/a.txt", "/dav/api.txt"]
    );
    let r = c
        .request("PROPFIND", "/dav/a.txt", &[auth[0], ("depth", "0")], "")
        .await
        .unwrap();
    assert!(r
        .text()
        .contains("<D:getcontentlength>12</D:getcontentlength>"));
    let r = c
        .request("PROPFIND", "/dav/", &[auth[0], ("depth", "infinity")], "")
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 403, "depth infinity"), "propfind_depth");
    let r = c
        .request("PROPFIND", "/dav/nothing", &auth, "")
        .await
        .unwrap();
    assert_eq!(r.status, 404);

    let r = c.request("DELETE", "/dav/a.txt", &auth, "").await.unwrap();
    assert_eq!(r.status, 204);
    let r = c.request("GET", "/dav/a.txt", &auth, "").await.unwrap();
    assert_eq!(r.status, 404);
    let r = c.request("DELETE", "/dav/dir/", &auth, "").await.unwrap();
    assert_eq!(r.status, 204);
    let r = c
        .request("PROPFIND", "/dav/", &[auth[0], ("depth", "1")], "")
        .await
        .unwrap();
    assert_eq!(hrefs(&r.text()), ["/dav/", "/dav/api.txt"]);
    let blobs: usize = std::fs::read_dir(svc.dir.join("blobs"))
        .unwrap()
        .map(|d| std::fs::read_dir(d.unwrap().path()).unwrap().count())
        .sum();
    assert_eq!(
        blobs, 1,
        "deleted and replaced contents are removed from disk"
    );
}
