//! The fault proxy: a TCP proxy on loopback whose toxics (latency ± jitter, bandwidth, reset,
//! black hole, slow close, data limit) are switched on and off while traffic flows. Each
//! toxic acts on a share of the connections, picked by a seeded hash of the connection's
//! number, so a test that runs twice hits the same connections.
//!
//! One thread runs the proxy on a current-thread tokio runtime; a connection is one task
//! with two pumps (client → service "up", service → client "down"). A pump's reader stamps
//! each chunk with its release time, its writer waits for that time: latency delays every
//! chunk by the same amount without reordering or stalling the reads behind it.

use crate::schedule::{Direction, Toxic};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// Largest chunk a pump reads at once.
const CHUNK: usize = 16 * 1024;
/// Chunks a pump holds while latency delays them (bounds the memory a fast sender can make
/// the proxy keep: 64 × 16 KiB per direction).
const IN_FLIGHT: usize = 64;

/// Identifies a toxic added to a proxy.
pub type ToxicId = u64;

/// What a proxy did, for events and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxyStats {
    pub connections: u64,
    pub resets: u64,
    pub blackholed: u64,
    pub limited: u64,
    pub upstream_errors: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
}

struct Active {
    id: ToxicId,
    toxic: Toxic,
    share: f64,
    seed: u64,
    affected: AtomicU64,
}

impl Active {
    fn selects(&self, conn: u64) -> bool {
        self.share >= 1.0 || unit(mix(self.seed ^ mix(conn))) < self.share
    }
}

#[derive(Default)]
struct Shared {
    toxics: Mutex<Vec<Arc<Active>>>,
    next_id: AtomicU64,
    /// Bumped on every toxic change: open connections look again (reset of open ones).
    generation: Mutex<Option<watch::Sender<u64>>>,
    connections: AtomicU64,
    resets: AtomicU64,
    blackholed: AtomicU64,
    limited: AtomicU64,
    upstream_errors: AtomicU64,
    bytes_up: AtomicU64,
    bytes_down: AtomicU64,
    /// Toxics that have ended, with what they affected.
    ended: Mutex<Vec<(ToxicId, u64)>>,
}

impl Shared {
    fn current(&self) -> Vec<Arc<Active>> {
        self.toxics.lock().unwrap().clone()
    }
}

/// A running proxy; dropping it stops the proxy and closes its connections.
pub struct ProxyHandle {
    addr: SocketAddr,
    upstream: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    stopped: Arc<AtomicBool>,
}

/// Starts proxies.
pub struct Proxy;

impl Proxy {
    /// Listen on `listen` (port 0 picks one) and forward every connection to `upstream`.
    pub fn start(listen: SocketAddr, upstream: SocketAddr) -> std::io::Result<ProxyHandle> {
        let std_listener = std::net::TcpListener::bind(listen)?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let (gen_tx, gen_rx) = watch::channel(0u64);
        *shared.generation.lock().unwrap() = Some(gen_tx);
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let sh = shared.clone();
        let stopped = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name(format!("volley-proxy-{}", addr.port()))
            .spawn(move || {
                rt.block_on(async move {
                    let listener = match TcpListener::from_std(std_listener) {
                        Ok(l) => l,
                        Err(_) => return,
                    };
                    let accept = async {
                        loop {
                            let Ok((sock, _)) = listener.accept().await else {
                                tokio::time::sleep(Duration::from_millis(10)).await;
                                continue;
                            };
                            let _ = sock.set_nodelay(true);
                            let n = sh.connections.fetch_add(1, Ordering::Relaxed);
                            tokio::spawn(serve(sock, upstream, sh.clone(), n, gen_rx.clone()));
                        }
                    };
                    tokio::select! {
                        _ = accept => {}
                        _ = stop_rx => {}
                    }
                });
                // Dropping the runtime drops every connection task (and its sockets).
            })?;
        Ok(ProxyHandle {
            addr,
            upstream,
            shared,
            stop: Some(stop_tx),
            thread: Some(thread),
            stopped,
        })
    }
}

impl ProxyHandle {
    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn upstream(&self) -> SocketAddr {
        self.upstream
    }

    /// Switch a toxic on for `share` of the connections (new and, where it matters, open).
    pub fn add(&self, toxic: Toxic, share: f64, seed: u64) -> ToxicId {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        self.shared.toxics.lock().unwrap().push(Arc::new(Active {
            id,
            toxic,
            share: share.clamp(0.0, 1.0),
            seed,
            affected: AtomicU64::new(0),
        }));
        self.bump();
        id
    }

    /// Switch a toxic off; returns the connections it affected.
    pub fn remove(&self, id: ToxicId) -> u64 {
        let removed = {
            let mut t = self.shared.toxics.lock().unwrap();
            let i = t.iter().position(|a| a.id == id);
            i.map(|i| t.remove(i))
        };
        self.bump();
        match removed {
            Some(a) => {
                let n = a.affected.load(Ordering::Relaxed);
                self.shared.ended.lock().unwrap().push((id, n));
                n
            }
            None => self.affected(id),
        }
    }

    /// Connections a toxic (active or ended) has affected so far.
    pub fn affected(&self, id: ToxicId) -> u64 {
        let active = self
            .shared
            .toxics
            .lock()
            .unwrap()
            .iter()
            .find(|a| a.id == id)
            .cloned();
        match active {
            Some(a) => a.affected.load(Ordering::Relaxed),
            None => self
                .shared
                .ended
                .lock()
                .unwrap()
                .iter()
                .find(|(i, _)| *i == id)
                .map_or(0, |(_, n)| *n),
        }
    }

    pub fn stats(&self) -> ProxyStats {
        let s = &self.shared;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ProxyStats {
            connections: l(&s.connections),
            resets: l(&s.resets),
            blackholed: l(&s.blackholed),
            limited: l(&s.limited),
            upstream_errors: l(&s.upstream_errors),
            bytes_up: l(&s.bytes_up),
            bytes_down: l(&s.bytes_down),
        }
    }

    fn bump(&self) {
        if let Some(tx) = self.shared.generation.lock().unwrap().as_ref() {
            tx.send_modify(|g| *g += 1);
        }
    }

    /// Stop accepting and close every connection.
    pub fn stop(&mut self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One connection's state the pumps share.
struct Conn {
    n: u64,
    shared: Arc<Shared>,
    bytes: AtomicU64,
    /// Toxic ids this connection was counted for already.
    counted: Mutex<Vec<ToxicId>>,
}

impl Conn {
    fn toxics(&self) -> Vec<Arc<Active>> {
        let mut v = self.shared.current();
        v.retain(|a| a.selects(self.n));
        v
    }

    fn count(&self, a: &Active) {
        let mut c = self.counted.lock().unwrap();
        if !c.contains(&a.id) {
            c.push(a.id);
            a.affected.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// RST instead of FIN when the socket is closed.
fn set_linger_zero(fd: i32) {
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `fd` is an open socket owned by the caller for the duration of the call; the
    // option value is a plain struct of the size given.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &l as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

async fn serve(
    mut client: TcpStream,
    upstream: SocketAddr,
    shared: Arc<Shared>,
    n: u64,
    mut generation: watch::Receiver<u64>,
) {
    let conn = Conn {
        n,
        shared: shared.clone(),
        bytes: AtomicU64::new(0),
        counted: Mutex::new(Vec::new()),
    };
    for a in conn.toxics() {
        match a.toxic {
            Toxic::Reset { .. } => {
                conn.count(&a);
                shared.resets.fetch_add(1, Ordering::Relaxed);
                set_linger_zero(client.as_raw_fd());
                return;
            }
            Toxic::Blackhole => {
                conn.count(&a);
                shared.blackholed.fetch_add(1, Ordering::Relaxed);
                // Read and drop until the client gives up (the proxy never answers).
                let mut buf = vec![0u8; CHUNK];
                while matches!(client.read(&mut buf).await, Ok(n) if n > 0) {}
                return;
            }
            _ => {}
        }
    }
    let mut server = match TcpStream::connect(upstream).await {
        Ok(s) => s,
        Err(_) => {
            shared.upstream_errors.fetch_add(1, Ordering::Relaxed);
            // The service is down: the client sees its connection refused as a reset.
            set_linger_zero(client.as_raw_fd());
            return;
        }
    };
    let _ = server.set_nodelay(true);
    let (cfd, sfd) = (client.as_raw_fd(), server.as_raw_fd());
    let (cr, cw) = client.split();
    let (sr, sw) = server.split();
    let (stop_tx, stop_rx) = watch::channel(false);
    let pumps = async {
        tokio::join!(
            pump(cr, sw, Direction::Up, &conn, &stop_tx, stop_rx.clone()),
            pump(sr, cw, Direction::Down, &conn, &stop_tx, stop_rx.clone()),
        )
    };
    // Open connections are reset when a reset toxic that selects them starts.
    let watch_reset = async {
        loop {
            if generation.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
            let hit = conn
                .toxics()
                .into_iter()
                .find(|a| matches!(a.toxic, Toxic::Reset { existing: true }));
            if let Some(a) = hit {
                conn.count(&a);
                return;
            }
        }
    };
    tokio::select! {
        _ = pumps => {}
        _ = watch_reset => {
            shared.resets.fetch_add(1, Ordering::Relaxed);
            // Both sockets are still owned here; closing them below sends RST.
            set_linger_zero(cfd);
            set_linger_zero(sfd);
        }
    }
}

/// A chunk on its way, or the end of the stream.
enum Msg {
    Data(Instant, Vec<u8>),
    Eof,
}

async fn pump<R, W>(
    mut r: R,
    mut w: W,
    dir: Direction,
    conn: &Conn,
    stop_tx: &watch::Sender<bool>,
    mut stop: watch::Receiver<bool>,
) where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let (tx, mut rx) = mpsc::channel::<Msg>(IN_FLIGHT);
    let mut stop2 = stop.clone();
    let reader = async {
        let mut seq = 0u64;
        let mut buf = vec![0u8; CHUNK];
        loop {
            let got = tokio::select! {
                r = r.read(&mut buf) => r,
                _ = stop2.wait_for(|s| *s) => return,
            };
            match got {
                Ok(0) | Err(_) => {
                    let _ = tx.send(Msg::Eof).await;
                    return;
                }
                Ok(n) => {
                    let chunk = buf[..n].to_vec();
                    let mut due = Instant::now();
                    for a in conn.toxics() {
                        if let Toxic::Latency {
                            latency,
                            jitter,
                            dir: d,
                        } = a.toxic
                        {
                            if d.includes(dir) {
                                conn.count(&a);
                                due += jittered(latency, jitter, a.seed ^ conn.n, seq);
                            }
                        }
                    }
                    seq += 1;
                    if tx.send(Msg::Data(due, chunk)).await.is_err() {
                        return;
                    }
                }
            }
        }
    };
    let writer = async {
        let mut last = Instant::now();
        loop {
            let msg = tokio::select! {
                m = rx.recv() => m,
                _ = stop.wait_for(|s| *s) => return,
            };
            match msg {
                None => return,
                Some(Msg::Eof) => {
                    for a in conn.toxics() {
                        if let Toxic::SlowClose(d) = a.toxic {
                            conn.count(&a);
                            tokio::time::sleep(d).await;
                        }
                    }
                    let _ = w.shutdown().await;
                    return;
                }
                Some(Msg::Data(due, buf)) => {
                    // Never before the chunk ahead of it: jitter does not reorder.
                    last = last.max(due);
                    // A deadline already past still waits for the timer's next millisecond
                    // tick: only sleep when there is something to wait for.
                    if last > Instant::now() {
                        tokio::time::sleep_until(last).await;
                    }
                    let toxics = conn.toxics();
                    if let Some(a) = toxics.iter().find(|a| matches!(a.toxic, Toxic::Blackhole)) {
                        conn.count(a);
                        continue;
                    }
                    let n = buf.len() as u64;
                    // A bandwidth limit paces each chunk before it goes out, so even the last
                    // chunk arrives no sooner than its bytes allow (after the write, the last
                    // chunk's wait would be paid by nobody).
                    for a in &toxics {
                        if let Toxic::Bandwidth {
                            bytes_per_s,
                            dir: d,
                        } = a.toxic
                        {
                            if d.includes(dir) && bytes_per_s > 0 {
                                conn.count(a);
                                let secs = n as f64 / bytes_per_s as f64;
                                tokio::time::sleep(Duration::from_secs_f64(secs)).await;
                                last = Instant::now();
                            }
                        }
                    }
                    if w.write_all(&buf).await.is_err() {
                        let _ = stop_tx.send(true);
                        return;
                    }
                    let total = conn.bytes.fetch_add(n, Ordering::Relaxed) + n;
                    let sh = &conn.shared;
                    match dir {
                        Direction::Up => sh.bytes_up.fetch_add(n, Ordering::Relaxed),
                        _ => sh.bytes_down.fetch_add(n, Ordering::Relaxed),
                    };
                    for a in &toxics {
                        if let Toxic::LimitData(limit) = a.toxic {
                            if total >= limit {
                                conn.count(a);
                                sh.limited.fetch_add(1, Ordering::Relaxed);
                                let _ = stop_tx.send(true);
                                return;
                            }
                        }
                    }
                }
            }
        }
    };
    tokio::join!(reader, writer);
}

/// `latency ± jitter`, the jitter drawn from a hash of the connection and chunk number.
fn jittered(latency: Duration, jitter: Duration, seed: u64, seq: u64) -> Duration {
    if jitter.is_zero() {
        return latency;
    }
    let j = jitter.as_secs_f64() * (2.0 * unit(mix(seed ^ mix(seq))) - 1.0);
    Duration::from_secs_f64((latency.as_secs_f64() + j).max(0.0))
}

/// splitmix64's finaliser: a well-spread hash of a number.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A hash as a fraction in [0, 1).
fn unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_picks_about_that_many_connections_and_the_same_ones_each_time() {
        let a = Active {
            id: 1,
            toxic: Toxic::Blackhole,
            share: 0.3,
            seed: 7,
            affected: AtomicU64::new(0),
        };
        let picked: Vec<u64> = (0..10_000).filter(|n| a.selects(*n)).collect();
        assert!((2_700..3_300).contains(&picked.len()), "{}", picked.len());
        let again: Vec<u64> = (0..10_000).filter(|n| a.selects(*n)).collect();
        assert_eq!(picked, again);
    }

    #[test]
    fn jitter_stays_within_its_bounds() {
        let (l, j) = (Duration::from_millis(100), Duration::from_millis(20));
        for s in 0..1000 {
            let d = jittered(l, j, 3, s);
            assert!(d >= Duration::from_millis(80) && d <= Duration::from_millis(120));
        }
    }
}
