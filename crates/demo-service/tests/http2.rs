//! HTTP/2 (h2c, prior knowledge) shares the port and the handlers with HTTP/1.1: a
//! streamed download with a Range arrives whole over several concurrent streams.

mod common;
use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};

#[tokio::test]
async fn h2c_downloads_with_range_on_concurrent_streams() {
    let svc = start("h2");
    let mut c = svc.client();
    let s = user(&mut c, "gina").await;
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 241) as u8).collect();
    let id = upload(&mut c, &s, s.root, "h2.bin", &data).await.json()["file"]["id"]
        .as_i64()
        .unwrap();

    let tcp = tokio::net::TcpStream::connect(svc.demo.local_addr())
        .await
        .unwrap();
    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(conn);
    let mut tasks = Vec::new();
    for (start, end) in [(0usize, 299_999usize), (1000, 1999), (250_000, 299_999)] {
        let mut sender = sender.clone();
        let (uri, bearer) = (
            format!("{}/api/files/{id}/download", svc.demo.url()),
            s.bearer.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let req = hyper::Request::get(uri)
                .header("authorization", bearer)
                .header("range", format!("bytes={start}-{end}"))
                .body(Full::new(Bytes::new()))
                .unwrap();
            let resp = sender.send_request(req).await.unwrap();
            assert_eq!(resp.version(), hyper::Version::HTTP_2);
            let status = resp.status().as_u16();
            (
                start,
                end,
                status,
                resp.into_body().collect().await.unwrap().to_bytes(),
            )
        }));
    }
    for t in tasks {
        let (start, end, status, body) = t.await.unwrap();
        assert_eq!(status, 206);
        assert_eq!(&body[..], &data[start..=end]);
    }
}
