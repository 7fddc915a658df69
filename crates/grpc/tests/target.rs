//! The client against the built-in target's gRPC service on loopback (h2c): unary calls,
//! metadata, status codes, deadlines, the three kinds of streams and reflection.

use std::time::Duration;
use volley_grpc::call::{self, Cmd, ConnectOptions, Event, Metadata};
use volley_grpc::{json, proto, status};

fn target() -> volley_testserver::RunningTarget {
    volley_testserver::spawn(volley_testserver::TargetConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..Default::default()
    })
    .unwrap()
}

fn pool() -> volley_grpc::prost_reflect::DescriptorPool {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/grpc");
    proto::load(&[dir], &["target.proto".into()]).unwrap()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn conn(t: &volley_testserver::RunningTarget) -> call::Conn {
    let (c, driver) = call::connect(&t.local_addr().to_string(), &ConnectOptions::default())
        .await
        .unwrap();
    tokio::spawn(driver);
    c
}

const T: Duration = Duration::from_secs(10);

#[test]
fn unary_echo_with_metadata_and_trailers() {
    let t = target();
    let pool = pool();
    let m = proto::find_method(&pool, "volley.target.Target/Echo").unwrap();
    rt().block_on(async {
        let c = conn(&t).await;
        let req = json::encode(
            &m.input(),
            r#"{"text":"hi","number":"42","kind":"KIND_FAST"}"#,
        )
        .unwrap();
        let md: Metadata = vec![
            ("x-user".into(), b"ann".to_vec()),
            ("x-id-bin".into(), vec![0, 1, 255]),
        ];
        let r = c.unary("/volley.target.Target/Echo", &md, &req, T).await;
        assert_eq!(r.status, status::OK, "{}", r.message);
        let out: serde_json::Value =
            serde_json::from_str(&json::decode(&m.output(), &r.body.unwrap()).unwrap()).unwrap();
        assert_eq!(out["text"], "hi");
        assert_eq!(out["number"], "42");
        assert_eq!(out["kind"], "KIND_FAST");
        let h = |k: &str| {
            r.headers
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(h("x-user").unwrap(), b"ann");
        assert_eq!(h("x-id-bin").unwrap(), vec![0, 1, 255]);
        assert_eq!(h("content-type").unwrap(), b"application/grpc");
        assert!(r
            .trailers
            .iter()
            .any(|(k, v)| k == "x-trailer" && v == b"done"));
    });
}

#[test]
fn status_deadline_and_unknown_method() {
    let t = target();
    let pool = pool();
    let m = proto::find_method(&pool, "volley.target.Target/Fail").unwrap();
    rt().block_on(async {
        let c = conn(&t).await;
        let req = json::encode(&m.input(), r#"{"code":5,"text":"no such thing: ü"}"#).unwrap();
        let r = c
            .unary("/volley.target.Target/Fail", &vec![], &req, T)
            .await;
        assert_eq!(r.status, status::NOT_FOUND);
        assert_eq!(r.message, "no such thing: ü");
        assert!(r.body.is_none());

        let req = json::encode(&m.input(), r#"{"delayMs":2000}"#).unwrap();
        let started = std::time::Instant::now();
        let r = c
            .unary(
                "/volley.target.Target/Slow",
                &vec![],
                &req,
                Duration::from_millis(100),
            )
            .await;
        assert_eq!(r.status, status::DEADLINE_EXCEEDED, "{}", r.message);
        assert!(started.elapsed() < Duration::from_millis(1500));

        let r = c
            .unary("/volley.target.Target/Nope", &vec![], &req, T)
            .await;
        assert_eq!(r.status, status::UNIMPLEMENTED);
        assert_eq!(
            r.message,
            "unknown method Nope for service volley.target.Target"
        );
        // The connection is still good after all that.
        let r = c
            .unary("/volley.target.Target/Echo", &vec![], &req, T)
            .await;
        assert_eq!(r.status, status::OK);
    });
}

async fn collect(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Event>,
) -> (Vec<bytes::Bytes>, call::Reply) {
    let mut msgs = Vec::new();
    while let Some(ev) = rx.recv().await {
        match ev {
            Event::Message(m) => msgs.push(m),
            Event::Done(r) => return (msgs, r),
        }
    }
    panic!("stream ended without Done");
}

#[test]
fn server_client_and_bidi_streams() {
    let t = target();
    let pool = pool();
    let m = proto::find_method(&pool, "volley.target.Target/Count").unwrap();
    let enc = |s: &str| json::encode(&m.input(), s).unwrap();
    rt().block_on(async {
        let c = conn(&t).await;
        // Server streaming.
        let (tx, rx, task) = c.stream("/volley.target.Target/Count", &vec![], Some(T));
        tx.send(Cmd::Write(enc(r#"{"count":5,"text":"n"}"#)))
            .unwrap();
        tx.send(Cmd::End).unwrap();
        let ((), (msgs, done)) = tokio::join!(task, collect(rx));
        assert_eq!(done.status, status::OK, "{}", done.message);
        assert_eq!(msgs.len(), 5);
        let last = json::decode(&m.output(), &msgs[4]).unwrap();
        assert!(last.contains(r#""index":4"#), "{last}");

        // Client streaming.
        let (tx, rx, task) = c.stream("/volley.target.Target/Sum", &vec![], Some(T));
        for n in 1..=4 {
            tx.send(Cmd::Write(enc(&format!(r#"{{"number":{n}}}"#))))
                .unwrap();
        }
        tx.send(Cmd::End).unwrap();
        let ((), (msgs, done)) = tokio::join!(task, collect(rx));
        assert_eq!(done.status, status::OK);
        let sum = json::decode(&m.output(), &msgs[0]).unwrap();
        assert!(
            sum.contains(r#""number":"10""#) && sum.contains(r#""count":4"#),
            "{sum}"
        );

        // Bidi: each message comes back before the next is written.
        let (tx, mut rx, task) = c.stream("/volley.target.Target/Chat", &vec![], Some(T));
        let talk = async {
            for i in 0..3 {
                tx.send(Cmd::Write(enc(&format!(r#"{{"index":{i}}}"#))))
                    .unwrap();
                match rx.recv().await.unwrap() {
                    Event::Message(b) => {
                        assert!(json::decode(&m.output(), &b)
                            .unwrap()
                            .contains(&format!(r#""index":{i}"#)))
                    }
                    Event::Done(r) => panic!("ended early: {}", r.message),
                }
            }
            tx.send(Cmd::End).unwrap();
            collect(rx).await
        };
        let ((), (rest, done)) = tokio::join!(task, talk);
        assert!(rest.is_empty());
        assert_eq!(done.status, status::OK);
    });
}

#[test]
fn reflection_builds_the_pool() {
    let t = target();
    rt().block_on(async {
        let c = conn(&t).await;
        let pool = call::reflect(&c, &vec![], T).await.unwrap();
        let m = proto::find_method(&pool, "/volley.target.Target/Chat").unwrap();
        assert!(m.is_client_streaming() && m.is_server_streaming());
    });
}

#[test]
fn refused_connection_reads_like_grpc_go() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    let e = rt()
        .block_on(call::connect(&addr.to_string(), &ConnectOptions::default()))
        .err()
        .unwrap();
    assert!(e.contains("connection refused"), "{e}");
}

#[test]
fn tls_with_alpn_h2() {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let t = volley_testserver::spawn(volley_testserver::TargetConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        tls: Some(volley_testserver::TlsIdentity {
            cert_chain_pem: ck.cert.pem().into_bytes(),
            key_pem: ck.signing_key.serialize_pem().into_bytes(),
        }),
        ..Default::default()
    })
    .unwrap();
    let pool = pool();
    let m = proto::find_method(&pool, "volley.target.Target/Echo").unwrap();
    let tls = volley_http::tls_config(
        &volley_http::TlsOptions {
            insecure: true,
            cacert: None,
        },
        &[b"h2"],
    )
    .unwrap();
    rt().block_on(async {
        let opts = ConnectOptions {
            tls: Some(tls),
            ..ConnectOptions::default()
        };
        let (c, driver) = call::connect(&t.local_addr().to_string(), &opts)
            .await
            .unwrap();
        tokio::spawn(driver);
        let req = json::encode(&m.input(), r#"{"text":"over tls"}"#).unwrap();
        let r = c
            .unary("/volley.target.Target/Echo", &vec![], &req, T)
            .await;
        assert_eq!(r.status, status::OK, "{}", r.message);
        assert!(json::decode(&m.output(), &r.body.unwrap())
            .unwrap()
            .contains("over tls"));
        // Bytes are counted on the TLS socket.
        let (sent, received) = c.wire_bytes();
        assert!(sent > 100 && received > 100, "{sent} {received}");
    });
}
