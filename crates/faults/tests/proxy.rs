//! The fault proxy's toxics against a loopback echo server: each changes the bytes or the
//! timing the way docs/faults.md says, and the share of connections is reproducible.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};
use volley_faults::schedule::{Direction, Toxic};
use volley_faults::{Proxy, ProxyHandle};

/// An echo server for at most `conns` connections (or 20 s); `close_at_once` closes each
/// connection right after accepting it.
fn echo(conns: usize, close_at_once: bool) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(20);
        for s in l.incoming().take(conns) {
            let Ok(mut s) = s else { continue };
            if close_at_once || Instant::now() > end {
                continue;
            }
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                let mut b = [0u8; 4096];
                while let Ok(n) = s.read(&mut b) {
                    if n == 0 || s.write_all(&b[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

fn proxy(upstream: SocketAddr) -> ProxyHandle {
    Proxy::start("127.0.0.1:0".parse().unwrap(), upstream).unwrap()
}

fn connect(p: &ProxyHandle) -> TcpStream {
    let s = TcpStream::connect(p.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// Send `data` and read back as much as comes within the timeout (or until EOF / error).
fn round_trip(s: &mut TcpStream, data: &[u8]) -> (Vec<u8>, Option<std::io::ErrorKind>) {
    if let Err(e) = s.write_all(data) {
        return (Vec::new(), Some(e.kind()));
    }
    let mut got = Vec::new();
    let mut b = [0u8; 4096];
    while got.len() < data.len() {
        match s.read(&mut b) {
            Ok(0) => return (got, None),
            Ok(n) => got.extend_from_slice(&b[..n]),
            Err(e) => return (got, Some(e.kind())),
        }
    }
    (got, None)
}

#[test]
fn without_toxics_bytes_pass_unchanged_and_are_counted() {
    let p = proxy(echo(1, false));
    let mut s = connect(&p);
    let data: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
    let (got, err) = round_trip(&mut s, &data);
    assert_eq!(err, None);
    assert!(got == data, "echo through the proxy differs");
    let st = p.stats();
    assert_eq!(st.connections, 1);
    assert_eq!((st.bytes_up, st.bytes_down), (50_000, 50_000));
}

#[test]
fn reset_of_open_connections_is_a_connection_reset() {
    let p = proxy(echo(1, false));
    let mut s = connect(&p);
    assert_eq!(round_trip(&mut s, b"ping").0, b"ping");
    let id = p.add(Toxic::Reset { existing: true }, 1.0, 0);
    let mut b = [0u8; 16];
    let r = s.read(&mut b);
    assert_eq!(
        r.map_err(|e| e.kind()).err(),
        Some(std::io::ErrorKind::ConnectionReset)
    );
    assert_eq!(p.remove(id), 1);
    assert_eq!(p.stats().resets, 1);
}

#[test]
fn limit_data_closes_the_connection_after_that_many_bytes() {
    let p = proxy(echo(1, false));
    p.add(Toxic::LimitData(3000), 1.0, 0);
    let mut s = connect(&p);
    let mut total = 0;
    // 1,000 bytes at a time: the echo stops once 3,000 bytes passed both ways.
    for _ in 0..10 {
        let (got, err) = round_trip(&mut s, &[7u8; 1000]);
        total += got.len();
        if got.len() < 1000 || err.is_some() {
            break;
        }
    }
    assert!((1000..=2000).contains(&total), "echoed {total} bytes");
    assert_eq!(p.stats().limited, 1);
}

#[test]
fn slow_close_holds_the_fin() {
    let p = proxy(echo(1, true));
    p.add(Toxic::SlowClose(Duration::from_millis(400)), 1.0, 0);
    let mut s = connect(&p);
    let t0 = Instant::now();
    let mut b = [0u8; 16];
    let n = s.read(&mut b).unwrap();
    assert_eq!(n, 0);
    assert!(
        t0.elapsed() >= Duration::from_millis(300),
        "FIN after {:?}",
        t0.elapsed()
    );
}

#[test]
fn bandwidth_limits_bytes_per_second() {
    let p = proxy(echo(1, false));
    p.add(
        Toxic::Bandwidth {
            bytes_per_s: 40_000,
            dir: Direction::Down,
        },
        1.0,
        0,
    );
    let mut s = connect(&p);
    let t0 = Instant::now();
    let (got, _) = round_trip(&mut s, &[1u8; 20_000]);
    assert_eq!(got.len(), 20_000);
    // 20 kB at 40 kB/s: at least ~0.5 s (a lower bound only: never a speed assertion).
    assert!(
        t0.elapsed() >= Duration::from_millis(400),
        "{:?}",
        t0.elapsed()
    );
}

#[test]
fn a_share_picks_the_same_connections_every_time() {
    let picked = |seed: u64| {
        let p = proxy(echo(40, false));
        let id = p.add(Toxic::Reset { existing: false }, 0.5, seed);
        let mut reset = Vec::new();
        for i in 0..20 {
            let mut s = connect(&p);
            let (_, err) = round_trip(&mut s, b"x");
            if err.is_some() {
                reset.push(i);
            }
        }
        assert_eq!(p.remove(id), reset.len() as u64);
        reset
    };
    let a = picked(42);
    assert!((3..=17).contains(&a.len()), "{a:?}");
    assert_eq!(a, picked(42));
}
