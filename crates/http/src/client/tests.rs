//! The client against a loopback server: redirects, keep-alive reuse, the address cache and
//! the refusals that send nothing.

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A keep-alive server: `/r` redirects to `/ok` (302), anything else is 200 "hi". Counts
/// the connections it accepted.
async fn server() -> (SocketAddr, Rc<std::cell::Cell<u32>>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let conns = Rc::new(std::cell::Cell::new(0));
    let c = conns.clone();
    tokio::task::spawn_local(async move {
        while let Ok((mut s, _)) = l.accept().await {
            c.set(c.get() + 1);
            tokio::task::spawn_local(async move {
                let mut buf = vec![0u8; 4096];
                let mut have = Vec::new();
                loop {
                    let Ok(n) = s.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    have.extend_from_slice(&buf[..n]);
                    while let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&have[..end]).into_owned();
                        have.drain(..end + 4);
                        let resp: &[u8] = if head.starts_with("GET /r ") {
                            b"HTTP/1.1 302 Found\r\nLocation: /ok\r\nContent-Length: 0\r\n\r\n"
                        } else {
                            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
                        };
                        if s.write_all(resp).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (addr, conns)
}

fn spec(url: String) -> RequestSpec {
    RequestSpec {
        method: "GET".into(),
        url,
        body: None,
        headers: Vec::new(),
        tags: Vec::new(),
        mode: BodyMode::Keep,
        timeout: Duration::from_secs(5),
        max_redirects: DEFAULT_REDIRECTS,
        hops: 0,
    }
}

/// Run a spec to its last hop: (statuses of the hops, the last Done).
async fn run(
    c: &mut VuClient,
    rec: &Rc<RefCell<Recorder>>,
    mut s: RequestSpec,
) -> (Vec<u16>, Done) {
    let mut statuses = Vec::new();
    loop {
        let Start::Go(hop, fut) = c.start(&s, rec, |_| None, |_| {}).unwrap() else {
            panic!("refused");
        };
        let done = c.finish(&s, hop, fut.await, rec);
        c.record(&done, rec, &NoVuTags, 0, done.status() < 400);
        statuses.push(done.status());
        if !s.follow(&done) {
            return (statuses, done);
        }
    }
}

fn local(f: impl Future<Output = ()>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f);
}

#[test]
fn redirects_are_followed_on_one_kept_alive_connection() {
    local(async {
        let (addr, conns) = server().await;
        let rec = Rc::new(RefCell::new(Recorder::default()));
        let mut c = VuClient::new(Arc::new(ClientSettings::default()));
        let (statuses, done) = run(&mut c, &rec, spec(format!("http://{addr}/r"))).await;
        assert_eq!(statuses, [302, 200]);
        assert_eq!(
            done.result.as_ref().unwrap().body.as_deref(),
            Some(&b"hi"[..])
        );
        assert_eq!(
            c.prepared(done.slot).unwrap().shown_url.as_ref(),
            format!("http://{addr}/ok")
        );
        assert_eq!(done.version(), Some(HTTP11));
        // Again: the idle connection is reused, no new one is opened.
        run(&mut c, &rec, spec(format!("http://{addr}/ok"))).await;
        assert_eq!(conns.get(), 1);
        assert_eq!(c.pool.len(), 1);
    });
}

#[test]
fn an_idle_connection_frees_its_buffers_and_is_reused_after() {
    local(async {
        let (addr, conns) = server().await;
        let rec = Rc::new(RefCell::new(Recorder::default()));
        let mut c = VuClient::new(Arc::new(ClientSettings::default()));
        assert_eq!(c.release_idle_buffers(), 0, "no connection yet");
        for _ in 0..3 {
            let (statuses, done) = run(&mut c, &rec, spec(format!("http://{addr}/ok"))).await;
            assert_eq!(statuses, [200]);
            assert_eq!(done.result.unwrap().body.as_deref(), Some(&b"hi"[..]));
            // The read buffer (1 KiB at first) and the in-flight queue go; the socket stays.
            assert!(c.release_idle_buffers() >= 1024);
            assert_eq!(c.release_idle_buffers(), 0, "freed twice");
        }
        assert_eq!(conns.get(), 1, "the connection was not kept");
    });
}

#[test]
fn no_redirects_left_means_the_redirect_is_the_response() {
    local(async {
        let (addr, _) = server().await;
        let rec = Rc::new(RefCell::new(Recorder::default()));
        let mut c = VuClient::new(Arc::new(ClientSettings::default()));
        let mut s = spec(format!("http://{addr}/r"));
        s.max_redirects = 0;
        let (statuses, _) = run(&mut c, &rec, s).await;
        assert_eq!(statuses, [302]);
    });
}

#[test]
fn no_connection_reuse_opens_a_connection_per_request() {
    local(async {
        let (addr, conns) = server().await;
        let rec = Rc::new(RefCell::new(Recorder::default()));
        let settings = ClientSettings {
            no_connection_reuse: true,
            ..Default::default()
        };
        let mut c = VuClient::new(Arc::new(settings));
        run(&mut c, &rec, spec(format!("http://{addr}/r"))).await;
        assert_eq!(conns.get(), 2);
        assert!(c.pool.is_empty());
    });
}

#[test]
fn bad_urls_and_blocked_hosts_are_refused_with_k6s_codes() {
    local(async {
        let rec = Rc::new(RefCell::new(Recorder::default()));
        let settings = ClientSettings {
            block_hostnames: vec!["*.blocked.test".into()],
            ..Default::default()
        };
        let mut c = VuClient::new(Arc::new(settings));
        let code = |c: &mut VuClient, url: &str| match c.start(
            &spec(url.into()),
            &rec,
            |_| None,
            |_| {},
        ) {
            Ok(Start::Refused { code, .. }) => code,
            _ => 0,
        };
        assert_eq!(code(&mut c, "not a url"), 1020);
        assert_eq!(code(&mut c, "http://a.blocked.test/"), 1111);
        // Nothing recorded for either.
        assert!(rec.borrow_mut().snapshot().entries.is_empty());
    });
}

#[test]
fn blacklisted_addresses_fail_before_connecting() {
    local(async {
        let (addr, conns) = server().await;
        let rec = Rc::new(RefCell::new(Recorder::default()));
        let settings = ClientSettings {
            blacklist_ips: vec![IpNet::parse("127.0.0.0/8").unwrap()].into(),
            ..Default::default()
        };
        let mut c = VuClient::new(Arc::new(settings));
        let (statuses, done) = run(&mut c, &rec, spec(format!("http://{addr}/ok"))).await;
        assert_eq!(statuses, [0]);
        assert_eq!(done.error_code(), 1110);
        assert_eq!(conns.get(), 0);
    });
}
