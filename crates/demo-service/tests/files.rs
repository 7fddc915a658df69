//! Folders and files: direct and chunked uploads, downloads with Range, batch move, and
//! interrupted uploads that must leave nothing visible.

mod common;
use common::*;
use serde_json::json;
use std::io::Write;

fn names(v: &serde_json::Value) -> Vec<String> {
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn direct_upload_then_range_downloads() {
    let svc = start("direct");
    let mut c = svc.client();
    let s = user(&mut c, "carol").await;
    let folder = mkdir(&mut c, &s, s.root, "docs").await;
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let r = upload(&mut c, &s, folder, "data.bin", &data).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let f = r.json()["file"].clone();
    assert_eq!(f["size"], 100_000);
    let id = f["id"].as_i64().unwrap();
    let dup = upload(&mut c, &s, folder, "data.bin", b"x").await;
    assert_eq!(assert_4xx(&dup, 409, "duplicate name"), "conflict");

    let url = format!("/api/files/{id}/download");
    let r = c.request("GET", &url, &s.auth(), "").await.unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("accept-ranges"), Some("bytes"));
    assert_eq!(&r.body[..], &data[..]);
    let ranged = |h: &'static str| [("authorization", s.bearer.clone()), ("range", h.to_owned())];
    for (h, start, end) in [
        ("bytes=0-9", 0, 9),
        ("bytes=99990-", 99_990, 99_999),
        ("bytes=-5", 99_995, 99_999),
        ("bytes=500-1000000", 500, 99_999),
    ] {
        let hs = ranged(h);
        let hs: Vec<(&str, &str)> = hs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = c.request("GET", &url, &hs, "").await.unwrap();
        assert_eq!(r.status, 206, "{h}");
        assert_eq!(
            r.header("content-range").unwrap(),
            format!("bytes {start}-{end}/100000"),
            "{h}"
        );
        assert_eq!(&r.body[..], &data[start..=end], "{h}");
    }
    for h in [
        "bytes=100000-",
        "bytes=9-3",
        "bytes=abc",
        "lines=1-2",
        "bytes=0-1,4-5",
    ] {
        let hs = ranged(h);
        let hs: Vec<(&str, &str)> = hs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = c.request("GET", &url, &hs, "").await.unwrap();
        assert_eq!(assert_4xx(&r, 416, h), "range_not_satisfiable");
        assert_eq!(r.header("content-range"), Some("bytes */100000"), "{h}");
    }
    let head = c.request("HEAD", &url, &s.auth(), "").await.unwrap();
    assert_eq!(
        (head.status, head.header("content-length")),
        (200, Some("100000"))
    );

    // The folder id may also come as a form field before the file; overwrite replaces.
    let ct = volley_demo_service::client::multipart_type();
    let body = volley_demo_service::client::multipart(
        &[("folder_id", &folder.to_string())],
        "form.txt",
        b"hi",
    );
    let r = c
        .request(
            "POST",
            "/api/files/upload",
            &[("authorization", &s.bearer), ("content-type", &ct)],
            body,
        )
        .await
        .unwrap();
    assert_eq!(
        (r.status, r.json()["file"]["folder_id"].as_i64()),
        (201, Some(folder))
    );
    let body = volley_demo_service::client::multipart(&[], "form.txt", b"hello");
    let r = c
        .request(
            "POST",
            &format!("/api/files/upload?folder_id={folder}&overwrite=true"),
            &[("authorization", &s.bearer), ("content-type", &ct)],
            body,
        )
        .await
        .unwrap();
    assert_eq!(
        (r.status, r.json()["file"]["size"].as_i64()),
        (201, Some(5))
    );
    let v = list(&mut c, &s, folder, "").await;
    assert_eq!(names(&v), ["data.bin", "form.txt"]);

    // Delete.
    let r = c
        .request("DELETE", &format!("/api/files/{id}"), &s.auth(), "")
        .await
        .unwrap();
    assert_eq!(r.status, 204);
    let r = c.request("GET", &url, &s.auth(), "").await.unwrap();
    assert_eq!(assert_4xx(&r, 404, "deleted file"), "not_found");
}

#[tokio::test]
async fn chunked_upload_and_interrupted_uploads_leave_nothing_visible() {
    let svc = start("chunked");
    let mut c = svc.client();
    let s = user(&mut c, "dave").await;
    let data: Vec<u8> = (0..250u32).map(|i| (i % 199) as u8).collect();
    let init =
        |name: &str| json!({"name": name, "size": 250, "chunk_size": 100, "folder_id": s.root});
    let r = c
        .json("POST", "/api/uploads", &s.auth(), &init("big.bin"))
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    let u = r.json();
    assert_eq!(u["chunks"], 3);
    let id = u["upload_id"].as_str().unwrap().to_owned();
    // Wrong sizes are refused; a retried chunk replaces the earlier one.
    let r = c
        .request(
            "PUT",
            &format!("/api/uploads/{id}/chunks/0"),
            &s.auth(),
            data[..99].to_vec(),
        )
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 400, "short chunk"), "chunk_size_mismatch");
    let r = c
        .request(
            "PUT",
            &format!("/api/uploads/{id}/chunks/3"),
            &s.auth(),
            data[..50].to_vec(),
        )
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 400, "chunk out of range"), "invalid_chunk");
    for (n, range) in [(2, 200..250), (0, 0..100), (0, 0..100)] {
        let r = c
            .request(
                "PUT",
                &format!("/api/uploads/{id}/chunks/{n}"),
                &s.auth(),
                data[range].to_vec(),
            )
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
    }
    // Not complete yet: refused, and nothing is visible.
    let r = c
        .request(
            "POST",
            &format!("/api/uploads/{id}/complete"),
            &s.auth(),
            "",
        )
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 409, "incomplete"), "incomplete_upload");
    assert!(names(&list(&mut c, &s, s.root, "").await).is_empty());
    let r = c
        .request("GET", &format!("/api/uploads/{id}"), &s.auth(), "")
        .await
        .unwrap();
    assert_eq!(r.json()["received"], json!([0, 2]));
    let r = c
        .request(
            "PUT",
            &format!("/api/uploads/{id}/chunks/1"),
            &s.auth(),
            data[100..200].to_vec(),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    let r = c
        .request(
            "POST",
            &format!("/api/uploads/{id}/complete"),
            &s.auth(),
            "",
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    let fid = r.json()["file"]["id"].as_i64().unwrap();
    let r = c
        .request("GET", &format!("/api/files/{fid}/download"), &s.auth(), "")
        .await
        .unwrap();
    assert_eq!(&r.body[..], &data[..]);
    let r = c
        .request("GET", &format!("/api/uploads/{id}"), &s.auth(), "")
        .await
        .unwrap();
    assert_eq!(r.status, 404, "a completed upload is gone");

    // An abandoned chunked upload never shows up, and can be aborted.
    let r = c
        .json("POST", "/api/uploads", &s.auth(), &init("abandoned.bin"))
        .await
        .unwrap();
    let id = r.json()["upload_id"].as_str().unwrap().to_owned();
    c.request(
        "PUT",
        &format!("/api/uploads/{id}/chunks/0"),
        &s.auth(),
        data[..100].to_vec(),
    )
    .await
    .unwrap();
    assert_eq!(names(&list(&mut c, &s, s.root, "").await), ["big.bin"]);
    let r = c
        .request("DELETE", &format!("/api/uploads/{id}"), &s.auth(), "")
        .await
        .unwrap();
    assert_eq!(r.status, 204);
    assert!(!svc.dir.join("chunks").join(&id).exists());

    // A direct upload cut off mid-body leaves no file and no temp file.
    let addr = svc.demo.local_addr();
    let token = s.bearer.clone();
    let folder = s.root;
    std::thread::spawn(move || {
        let mut tcp = std::net::TcpStream::connect(addr).unwrap();
        let head = format!(
            "POST /api/files/upload?folder_id={folder} HTTP/1.1\r\nHost: x\r\nAuthorization: {token}\r\nContent-Type: {}\r\nContent-Length: 1000000\r\n\r\n",
            volley_demo_service::client::multipart_type()
        );
        tcp.write_all(head.as_bytes()).unwrap();
        let mut body = volley_demo_service::client::multipart(&[], "cut.bin", &[7u8; 600_000]);
        body.truncate(300_000);
        tcp.write_all(&body).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        // Dropping the socket interrupts the upload.
    })
    .join()
    .unwrap();
    let mut clean = false;
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        if std::fs::read_dir(svc.dir.join("tmp")).unwrap().count() == 0 {
            clean = true;
            break;
        }
    }
    assert!(clean, "the temp file of the interrupted upload is removed");
    assert_eq!(names(&list(&mut c, &s, s.root, "").await), ["big.bin"]);
}

#[tokio::test]
async fn batch_move_is_all_or_nothing() {
    let svc = start("move");
    let mut c = svc.client();
    let s = user(&mut c, "erin").await;
    let a = mkdir(&mut c, &s, s.root, "a").await;
    let b = mkdir(&mut c, &s, s.root, "b").await;
    let sub = mkdir(&mut c, &s, a, "sub").await;
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(
            upload(&mut c, &s, a, &format!("f{i}"), b"x").await.json()["file"]["id"]
                .as_i64()
                .unwrap(),
        );
    }
    upload(&mut c, &s, b, "f2", b"clash").await;
    let mv = |files: &[i64], folders: &[i64], target: i64| json!({"file_ids": files, "folder_ids": folders, "target_folder_id": target});
    let r = c
        .json("POST", "/api/batch/move", &s.auth(), &mv(&ids, &[], b))
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 409, "name clash"), "conflict");
    assert_eq!(
        list(&mut c, &s, a, "").await["total_files"],
        3,
        "nothing moved"
    );
    let r = c
        .json(
            "POST",
            "/api/batch/move",
            &s.auth(),
            &mv(&ids[..2], &[sub], b),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["moved_files"], 2);
    let vb = list(&mut c, &s, b, "").await;
    assert_eq!(names(&vb), ["f0", "f1", "f2"]);
    assert_eq!(vb["folders"][0]["name"], "sub");
    let r = c
        .json("POST", "/api/batch/move", &s.auth(), &mv(&[], &[b], sub))
        .await
        .unwrap();
    assert_eq!(
        assert_4xx(&r, 400, "folder into its own child"),
        "invalid_move"
    );
    let r = c
        .json("POST", "/api/batch/move", &s.auth(), &mv(&[], &[b], b))
        .await
        .unwrap();
    assert_eq!(assert_4xx(&r, 400, "folder into itself"), "invalid_move");
}
