use serde_json::json;

use super::client::{connect, get, request};
use super::target;
use crate::Stats;

fn stats_of(r: &super::client::Resp) -> Stats {
    let j = r.json();
    let n = |k: &str| {
        j[k].as_u64()
            .unwrap_or_else(|| panic!("{k} missing in {j}"))
    };
    Stats {
        requests: n("requests"),
        bytes_received: n("bytes_received"),
        bytes_sent: n("bytes_sent"),
        connections: n("connections"),
    }
}

#[tokio::test]
async fn stats_count_exact_wire_bytes_and_exclude_themselves() {
    let t = target();
    let addr = t.local_addr();
    assert_eq!(stats_of(&get(addr, "/stats").await), Stats::default());

    let mut c = connect(addr).await;
    assert_eq!(c.get("/").await.status, 200);
    assert_eq!(c.get("/echo?x=1").await.status, 200);
    assert_eq!(c.call("POST", "/echo", &[], b"some body").await.status, 200);
    assert_eq!(c.get("/bytes/200000").await.body.len(), 200_000);
    assert_eq!(
        c.call("POST", "/upload", &[], &vec![7u8; 100_000])
            .await
            .status,
        200
    );
    assert_eq!(c.get("/nope").await.status, 404);
    const K: u64 = 6;

    let want = Stats {
        requests: K,
        bytes_received: c.written,
        bytes_sent: c.read,
        connections: 1,
    };
    let first = stats_of(&get(addr, "/stats").await);
    assert_eq!(first, want);
    // Reading the stats (or metrics) on their own connections changes nothing.
    get(addr, "/metrics").await;
    assert_eq!(stats_of(&get(addr, "/stats").await), want);
    assert_eq!(t.stats(), want);

    // The keep-alive connection is still live and keeps counting.
    assert_eq!(c.get("/").await.status, 200);
    let after = stats_of(&get(addr, "/stats").await);
    assert_eq!(
        after,
        Stats {
            requests: K + 1,
            bytes_received: c.written,
            bytes_sent: c.read,
            connections: 1
        }
    );
}

#[tokio::test]
async fn stats_on_a_counted_connection_counts_its_bytes_but_not_the_request() {
    let t = target();
    let mut c = connect(t.local_addr()).await;
    c.get("/").await;
    let r = c.get("/stats").await;
    let inside = stats_of(&r);
    assert_eq!(inside.requests, 1);
    // Everything of the first exchange plus this /stats request was read before answering.
    assert_eq!(inside.bytes_received, c.written);
    // The server adds a response's bytes once its write returns, which can be just after the
    // client has read them: wait (bounded) for the count to catch up before comparing.
    let mut later = t.stats();
    for _ in 0..100 {
        if later.bytes_sent >= c.read {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        later = t.stats();
    }
    assert_eq!(
        later,
        Stats {
            requests: 1,
            bytes_received: c.written,
            bytes_sent: c.read,
            connections: 1
        }
    );
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let t = target();
    let mut c = connect(t.local_addr()).await;
    let mut batch = Vec::new();
    batch.extend(request("GET", "/", &[], b""));
    batch.extend(request("GET", "/status/201", &[], b""));
    batch.extend(request("GET", "/bytes/10", &[], b""));
    batch.extend(request("POST", "/echo", &[], b"pipelined"));
    batch.extend(request("GET", "/", &[], b""));
    c.send(&batch).await;

    let mut statuses = Vec::new();
    for _ in 0..5 {
        statuses.push(c.response(false).await);
    }
    let codes: Vec<u16> = statuses.iter().map(|r| r.status).collect();
    assert_eq!(codes, [200, 201, 200, 200, 200]);
    assert_eq!(statuses[0].body, b"Hello, world!");
    assert_eq!(statuses[1].json(), json!({ "status": 201 }));
    assert_eq!(statuses[2].body, b"abcdefghij");
    assert_eq!(statuses[3].json()["body"], "pipelined");
    assert_eq!(statuses[4].body, b"Hello, world!");

    let s = stats_of(&get(t.local_addr(), "/stats").await);
    assert_eq!(
        s,
        Stats {
            requests: 5,
            bytes_received: c.written,
            bytes_sent: c.read,
            connections: 1
        }
    );
}

#[tokio::test]
async fn connection_without_requests_still_counts() {
    let t = target();
    let mut c = connect(t.local_addr()).await;
    c.send(b"GARBAGE\r\n\r\n").await;
    // hyper rejects it by itself (with or without a 400) and closes: no request reached the
    // endpoints, yet the bytes were on the wire all the same.
    c.drain_to_eof().await;
    // The meter is released when the connection task ends, shortly after the close.
    let want = Stats {
        requests: 0,
        bytes_received: c.written,
        bytes_sent: c.read,
        connections: 1,
    };
    for _ in 0..200 {
        if t.stats() == want {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(t.stats(), want);
}
