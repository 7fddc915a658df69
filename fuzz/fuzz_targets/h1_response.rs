//! The HTTP/1.1 response reader (`volley_http::Connection`: head parsing, Content-Length,
//! chunked, read-to-EOF framing, 1xx, keep-alive, pipelining), fed by a loopback server that
//! sends the fuzz input as the response bytes and closes. The whole real client path runs,
//! no test-only parser. Never panics or hangs; an accepted response is consistent (body as
//! long as `body_len`, no more bytes than were sent).
//!
//! Input: one flags byte (bit 0: HEAD request; bit 1: keep headers; bit 2: two pipelined
//! requests; bits 3-7: server write size, 0 = all at once) then the response bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use volley_http::{Body, BodyMode, Connection, Request, Target};

struct Env {
    rt: tokio::runtime::Runtime,
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
    target: Target,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let target = Target::parse(&format!("http://{addr}/fuzz")).unwrap();
        Env {
            rt,
            listener,
            addr,
            target,
        }
    })
}

const T: Duration = Duration::from_secs(5);

fuzz_target!(|data: &[u8]| {
    let Some((&flags, wire)) = data.split_first() else {
        return;
    };
    let is_head = flags & 1 != 0;
    let keep_headers = flags & 2 != 0;
    let pipelined = flags & 4 != 0;
    let step = match (flags >> 3) as usize {
        0 => usize::MAX,
        n => n,
    };
    let e = env();
    e.rt.block_on(async {
        let method = if is_head { "HEAD" } else { "GET" };
        let req = Request::new(method, &e.target, &[], Body::Empty, true).unwrap();
        let (conn, accepted) = tokio::join!(
            Connection::connect(e.addr, &e.target, None, T),
            e.listener.accept()
        );
        let (mut conn, _) = conn.expect("loopback connect");
        let (mut server, _) = accepted.expect("loopback accept");
        conn.keep_headers(keep_headers);
        let serve = async {
            for piece in wire.chunks(step.min(wire.len().max(1))) {
                if server.write_all(piece).await.is_err() {
                    break;
                }
                tokio::task::yield_now().await;
            }
            let _ = server.shutdown().await;
        };
        let client = async {
            let mut got = Vec::new();
            if pipelined {
                conn.write_request(&req).await.expect("write 1");
                conn.write_request(&req).await.expect("write 2");
                for _ in 0..2 {
                    match tokio::time::timeout(T, conn.read_response(is_head, BodyMode::Keep)).await
                    {
                        Ok(Ok(r)) => got.push(r),
                        Ok(Err(_)) => break,
                        Err(_) => panic!("read_response hung on a closed connection"),
                    }
                }
            } else if let Ok(r) = conn.send(&req, BodyMode::Keep, T).await {
                got.push(r);
            }
            got
        };
        let ((), got) = tokio::join!(serve, client);
        let mut received = 0u64;
        for r in &got {
            let body = r.body.as_deref().expect("BodyMode::Keep keeps the body");
            assert_eq!(body.len() as u64, r.body_len);
            assert!((100..1000).contains(&r.status), "status {}", r.status);
            if is_head || r.status == 204 || r.status == 304 {
                assert_eq!(r.body_len, 0, "a body on HEAD/204/304");
            }
            received += r.bytes_received;
        }
        assert!(
            received <= wire.len() as u64,
            "{received} bytes counted, {} sent",
            wire.len()
        );
        drop(conn);
        let _ = server.set_zero_linger(); // no TIME_WAIT pile-up over millions of runs
    });
});
