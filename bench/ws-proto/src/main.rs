//! ws-proto: the floor of a WebSocket echo client's CPU per message. The same closed-model
//! load as `volley ws ws://ADDR/PATH -c N -m MSG` (one message in flight per connection, each
//! echo answered by the next message, round trip timed from the send) on a lean loop over raw
//! sockets, so `bench/ws.sh` can put it beside `volley ws` and k6 and show how much of volley's
//! cost is the kernel's and how much io_uring saves over epoll:
//!
//!   --io epoll   one `epoll_wait` per turn, then per ready socket one `recv` and one `send`
//!                (the syscalls `volley ws` makes, without tokio and tungstenite);
//!   --io uring   one `submit_and_wait` per turn: every send and re-armed recv of the turn go
//!                in one submission; `--multishot` arms one multishot recv per connection
//!                (provided buffers) instead of one recv per message; `--defer` sets up the
//!                ring with SINGLE_ISSUER | DEFER_TASKRUN (completions run on entering it);
//!   --io tokio   one task per connection on a current-thread tokio runtime (the runtime
//!                `volley ws` uses), the same framing: what the runtime alone costs.
//!
//! Layout: this file only (arguments, handshake, frames, the three loops). A measuring tool, not
//! shipped: no TLS, the upgrade's accept key is not checked, messages up to 125 bytes.

use io_uring::{opcode, squeue, types, IoUring};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Echoes of messages sent before the deadline may still come this long (as `volley ws`).
const GRACE: Duration = Duration::from_millis(500);
/// Round trips are kept exactly up to this many µs; longer ones land in the last slot.
const HIST_US: usize = 200_000;
/// Provided buffers for multishot recv: how many, and their size.
const PBUF_COUNT: u16 = 4096;
const PBUF_SIZE: usize = 256;
const PBUF_GROUP: u16 = 7;

struct Args {
    addr: String,
    path: String,
    conns: usize,
    dur: Duration,
    uring: bool,
    tokio: bool,
    multishot: bool,
    /// IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN (kernel 6.1+).
    defer: bool,
    msg: Vec<u8>,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        addr: String::new(),
        path: "/ws/echo".into(),
        conns: 1000,
        dur: Duration::from_secs(10),
        uring: true,
        tokio: false,
        multishot: false,
        defer: false,
        msg: b"0123456789abcdef0123456789abcdef".to_vec(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "-c" => a.conns = v()?.parse().map_err(|e| format!("-c: {e}"))?,
            "-z" => a.dur = Duration::from_secs_f64(v()?.parse().map_err(|e| format!("-z: {e}"))?),
            "-m" => a.msg = v()?.into_bytes(),
            "--path" => a.path = v()?,
            "--io" => {
                let io = v()?;
                a.uring = io == "uring";
                a.tokio = io == "tokio";
            }
            "--multishot" => a.multishot = true,
            "--defer" => a.defer = true,
            _ if a.addr.is_empty() && !k.starts_with('-') => a.addr = k,
            _ => return Err(format!("unknown argument {k} (usage: ws-proto HOST:PORT [-c N] [-z SECS] [-m MSG] [--path P] [--io uring|epoll|tokio] [--multishot] [--defer])")),
        }
    }
    if a.addr.is_empty() || a.msg.len() > 125 || a.conns == 0 {
        return Err("need HOST:PORT, 1..125-byte message, -c >= 1".into());
    }
    Ok(a)
}

/// One connection: its unparsed input, the frame it sends, when that went out.
struct Conn {
    sock: TcpStream,
    inbuf: Vec<u8>,
    out: Vec<u8>,
    sent: Instant,
    waiting: bool,
    alive: bool,
    /// uring without multishot: this connection's recv buffer.
    rbuf: Vec<u8>,
}

#[derive(Default)]
struct Stats {
    sent: u64,
    received: u64,
    unmatched: u64,
    errors: u64,
    hist: Vec<u32>,
}

impl Stats {
    fn rtt(&mut self, d: Duration) {
        let us = (d.as_micros() as usize).min(HIST_US - 1);
        self.hist[us] += 1;
    }
    fn quantile(&self, q: f64) -> usize {
        let want = ((self.received as f64) * q).ceil() as u64;
        let mut n = 0u64;
        for (us, c) in self.hist.iter().enumerate() {
            n += *c as u64;
            if n >= want.max(1) {
                return us;
            }
        }
        HIST_US
    }
}

/// The run's clock: sending stops at `end`, waiting for echoes at `end + GRACE`.
struct Clock {
    end: Instant,
    rng: u64,
}

impl Clock {
    fn sending(&self) -> bool {
        Instant::now() < self.end
    }
    /// A fresh mask per frame, as RFC 6455 asks (xorshift: cheap, not for security).
    fn mask(&mut self) -> [u8; 4] {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng as u32).to_le_bytes()
    }
}

fn connect(a: &Args) -> Result<Conn, String> {
    let mut sock = TcpStream::connect(&a.addr).map_err(|e| format!("connect {}: {e}", a.addr))?;
    sock.set_nodelay(true).map_err(|e| e.to_string())?;
    let req = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        a.path, a.addr
    );
    sock.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if sock.read(&mut b).map_err(|e| e.to_string())? == 0 || head.len() > 8192 {
            return Err("handshake: connection closed".into());
        }
        head.push(b[0]);
    }
    if !head.starts_with(b"HTTP/1.1 101") {
        return Err(format!(
            "handshake: {}",
            String::from_utf8_lossy(&head[..head.len().min(40)])
        ));
    }
    sock.set_nonblocking(true).map_err(|e| e.to_string())?;
    Ok(Conn {
        sock,
        inbuf: Vec::new(),
        out: Vec::with_capacity(6 + a.msg.len()),
        sent: Instant::now(),
        waiting: false,
        alive: true,
        rbuf: Vec::new(),
    })
}

/// Build the next masked text frame of `msg` into `c.out`.
fn frame(c: &mut Conn, msg: &[u8], mask: [u8; 4]) {
    c.out.clear();
    c.out.extend_from_slice(&[0x81, 0x80 | msg.len() as u8]);
    c.out.extend_from_slice(&mask);
    c.out
        .extend(msg.iter().enumerate().map(|(i, b)| b ^ mask[i & 3]));
}

/// Take whole frames from `c.inbuf` plus `data`; for each echo of `msg` record the round trip.
/// True when the connection should send its next message.
fn on_bytes(c: &mut Conn, data: &[u8], msg: &[u8], st: &mut Stats) -> bool {
    let now = Instant::now();
    let mut echoed = false;
    let owned;
    let buf: &[u8] = if c.inbuf.is_empty() {
        data
    } else {
        c.inbuf.extend_from_slice(data);
        owned = std::mem::take(&mut c.inbuf);
        &owned
    };
    let mut at = 0;
    while buf.len() - at >= 2 {
        let (op, len) = (buf[at] & 0x0f, (buf[at + 1] & 0x7f) as usize);
        // Server frames are unmasked and short here; longer ones are not echoes of ours.
        if len > 125 || buf[at + 1] & 0x80 != 0 {
            st.errors += 1;
            c.alive = false;
            return false;
        }
        if buf.len() - at < 2 + len {
            break;
        }
        let payload = &buf[at + 2..at + 2 + len];
        at += 2 + len;
        if op == 0x8 {
            c.alive = false;
            return false;
        }
        if op == 0x1 && payload == msg && c.waiting {
            c.waiting = false;
            st.received += 1;
            st.rtt(now - c.sent);
            echoed = true;
        } else {
            st.unmatched += 1;
        }
    }
    c.inbuf = buf[at..].to_vec();
    echoed
}

fn run_epoll(
    conns: &mut [Conn],
    a: &Args,
    clock: &mut Clock,
    st: &mut Stats,
) -> Result<(), String> {
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        return Err(format!(
            "epoll_create1: {}",
            std::io::Error::last_os_error()
        ));
    }
    for (i, c) in conns.iter_mut().enumerate() {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: i as u64,
        };
        unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, c.sock.as_raw_fd(), &mut ev) };
        send_now(c, &a.msg, clock, st);
    }
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 1024];
    let mut rbuf = vec![0u8; 16 * 1024];
    let mut pending = conns.len() as u64;
    loop {
        let now = Instant::now();
        if (now >= clock.end && pending == 0) || now >= clock.end + GRACE {
            return Ok(());
        }
        let wait = if now < clock.end {
            clock.end - now
        } else {
            clock.end + GRACE - now
        };
        let n =
            unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), 1024, wait.as_millis() as i32 + 1) };
        for ev in &events[..n.max(0) as usize] {
            let c = &mut conns[ev.u64 as usize];
            let fd = c.sock.as_raw_fd();
            let r = unsafe { libc::recv(fd, rbuf.as_mut_ptr().cast(), rbuf.len(), 0) };
            if r <= 0 {
                if r < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock
                {
                    continue;
                }
                st.errors += 1;
                c.alive = false;
            } else if on_bytes(c, &rbuf[..r as usize], &a.msg, st) {
                pending -= 1;
                if clock.sending() {
                    send_now(c, &a.msg, clock, st);
                    pending += 1;
                }
            }
            if !c.alive {
                unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
                pending -= c.waiting as u64;
                c.waiting = false;
            }
        }
    }
}

/// epoll: write the next frame now (a 38-byte frame goes whole into an idle socket).
fn send_now(c: &mut Conn, msg: &[u8], clock: &mut Clock, st: &mut Stats) {
    frame(c, msg, clock.mask());
    c.sent = Instant::now();
    let r = unsafe {
        libc::send(
            c.sock.as_raw_fd(),
            c.out.as_ptr().cast(),
            c.out.len(),
            libc::MSG_NOSIGNAL,
        )
    };
    if r as usize == c.out.len() {
        c.waiting = true;
        st.sent += 1;
    } else {
        st.errors += 1;
        c.alive = false;
    }
}

const RECV: u64 = 0;
const SEND: u64 = 1;
const TIMER: u64 = 2;
const PROVIDE: u64 = 3;

fn run_uring(
    conns: &mut [Conn],
    a: &Args,
    clock: &mut Clock,
    st: &mut Stats,
) -> Result<(), String> {
    let entries = (conns.len() * 2 + 64).next_power_of_two().min(32768) as u32;
    let mut b = IoUring::builder();
    if a.defer {
        // Completions are run when this thread enters the ring, not by interrupting it.
        b.setup_single_issuer().setup_defer_taskrun();
    }
    let mut ring = b
        .build(entries)
        .map_err(|e| format!("io_uring_setup: {e}"))?;
    let mut pbufs = vec![0u8; PBUF_COUNT as usize * PBUF_SIZE];
    let mut sqes: Vec<squeue::Entry> = Vec::with_capacity(entries as usize);
    if a.multishot {
        let p = opcode::ProvideBuffers::new(
            pbufs.as_mut_ptr(),
            PBUF_SIZE as i32,
            PBUF_COUNT,
            PBUF_GROUP,
            0,
        );
        sqes.push(p.build().user_data(PROVIDE));
    }
    for (i, c) in conns.iter_mut().enumerate() {
        sqes.push(queue_send(c, i, &a.msg, clock, st));
        sqes.push(arm_recv(c, i, a.multishot));
    }
    let mut pending = conns.len() as u64;
    let mut grace_armed = false;
    let grace = types::Timespec::from(GRACE);
    loop {
        push_all(&mut ring, &mut sqes)?;
        ring.submit_and_wait(1)
            .map_err(|e| format!("io_uring_enter: {e}"))?;
        let now = Instant::now();
        if now >= clock.end && !grace_armed {
            grace_armed = true;
            sqes.push(opcode::Timeout::new(&grace).build().user_data(TIMER));
        }
        for cqe in ring.completion() {
            let (ud, res) = (cqe.user_data(), cqe.result());
            let (i, kind) = ((ud >> 2) as usize, ud & 3);
            match kind {
                TIMER => return Ok(()),
                PROVIDE if res < 0 => return Err(format!("provide buffers: {res}")),
                PROVIDE => {}
                SEND if res < 0 || res as usize != conns[i].out.len() => {
                    st.errors += 1;
                    conns[i].alive = false;
                }
                SEND => {}
                _ => {
                    let c = &mut conns[i];
                    if res <= 0 {
                        st.errors += 1;
                        c.alive = false;
                        pending -= c.waiting as u64;
                        c.waiting = false;
                        continue;
                    }
                    let echoed = if a.multishot {
                        let bid = io_uring::cqueue::buffer_select(cqe.flags()).unwrap_or(0);
                        let off = bid as usize * PBUF_SIZE;
                        let e = on_bytes(c, &pbufs[off..off + res as usize], &a.msg, st);
                        // Hand the buffer back to the kernel (goes with this turn's submission).
                        let p = opcode::ProvideBuffers::new(
                            pbufs[off..].as_mut_ptr(),
                            PBUF_SIZE as i32,
                            1,
                            PBUF_GROUP,
                            bid,
                        );
                        sqes.push(p.build().user_data(PROVIDE));
                        if !io_uring::cqueue::more(cqe.flags()) && c.alive {
                            sqes.push(arm_recv(c, i, true));
                        }
                        e
                    } else {
                        let data = std::mem::take(&mut c.rbuf);
                        let e = on_bytes(c, &data[..res as usize], &a.msg, st);
                        c.rbuf = data;
                        if c.alive {
                            sqes.push(arm_recv(c, i, false));
                        }
                        e
                    };
                    if echoed {
                        pending -= 1;
                        if clock.sending() {
                            sqes.push(queue_send(c, i, &a.msg, clock, st));
                            pending += 1;
                        }
                    }
                }
            }
        }
        if now >= clock.end && pending == 0 {
            return Ok(());
        }
    }
}

fn push_all(ring: &mut IoUring, sqes: &mut Vec<squeue::Entry>) -> Result<(), String> {
    for e in sqes.drain(..) {
        // A full queue goes to the kernel first (rare: the ring holds two per connection).
        while unsafe { ring.submission().push(&e) }.is_err() {
            ring.submit().map_err(|e| format!("io_uring_enter: {e}"))?;
        }
    }
    Ok(())
}

/// uring: the next frame as a send entry (its buffer stays put until the echo comes back).
fn queue_send(
    c: &mut Conn,
    i: usize,
    msg: &[u8],
    clock: &mut Clock,
    st: &mut Stats,
) -> squeue::Entry {
    frame(c, msg, clock.mask());
    c.sent = Instant::now();
    c.waiting = true;
    st.sent += 1;
    let fd = types::Fd(c.sock.as_raw_fd());
    opcode::Send::new(fd, c.out.as_ptr(), c.out.len() as u32)
        .flags(libc::MSG_NOSIGNAL)
        .build()
        .user_data((i as u64) << 2 | SEND)
}

fn arm_recv(c: &mut Conn, i: usize, multishot: bool) -> squeue::Entry {
    let fd = types::Fd(c.sock.as_raw_fd());
    let ud = (i as u64) << 2 | RECV;
    if multishot {
        return opcode::RecvMulti::new(fd, PBUF_GROUP).build().user_data(ud);
    }
    if c.rbuf.is_empty() {
        c.rbuf = vec![0u8; 512];
    }
    opcode::Recv::new(fd, c.rbuf.as_mut_ptr(), c.rbuf.len() as u32)
        .build()
        .user_data(ud)
}

/// tokio: one task per connection on one thread; each waits for its echo, then sends.
fn run_tokio(
    conns: &mut [Conn],
    a: &Args,
    clock: &mut Clock,
    st: &mut Stats,
) -> Result<(), String> {
    use std::cell::RefCell;
    use std::rc::Rc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| e.to_string())?;
    let shared = Rc::new(RefCell::new((
        std::mem::take(st),
        Clock {
            end: clock.end,
            rng: clock.rng,
        },
    )));
    let msg: Rc<[u8]> = a.msg.clone().into();
    let local = tokio::task::LocalSet::new();
    for c in conns.iter_mut() {
        let std_sock = c.sock.try_clone().map_err(|e| e.to_string())?;
        let mut c = Conn {
            sock: std_sock,
            inbuf: Vec::new(),
            out: Vec::new(),
            sent: Instant::now(),
            waiting: false,
            alive: true,
            rbuf: vec![0u8; 512],
        };
        let (shared, msg) = (shared.clone(), msg.clone());
        local.spawn_local(async move {
            // A second handle on the socket for tokio; `c` keeps the frame buffers.
            let Ok(mut sock) = c.sock.try_clone().and_then(tokio::net::TcpStream::from_std) else {
                shared.borrow_mut().0.errors += 1;
                return;
            };
            let mut rbuf = std::mem::take(&mut c.rbuf);
            loop {
                {
                    let (st, clock) = &mut *shared.borrow_mut();
                    if !clock.sending() {
                        return;
                    }
                    frame(&mut c, &msg, clock.mask());
                    c.sent = Instant::now();
                    c.waiting = true;
                    st.sent += 1;
                }
                if sock.write_all(&c.out).await.is_err() {
                    shared.borrow_mut().0.errors += 1;
                    return;
                }
                loop {
                    // No timer per read (volley keeps one per connection; the run has one).
                    let n = match sock.read(&mut rbuf).await {
                        Ok(n) if n > 0 => n,
                        _ => {
                            shared.borrow_mut().0.errors += 1;
                            return;
                        }
                    };
                    let echoed = on_bytes(&mut c, &rbuf[..n], &msg, &mut shared.borrow_mut().0);
                    if !c.alive {
                        return;
                    }
                    if echoed {
                        break;
                    }
                }
            }
        });
    }
    // Echoes still out at the end get the grace, then the tasks are dropped.
    let until = tokio::time::Instant::from_std(clock.end + GRACE);
    rt.block_on(local.run_until(async move { tokio::time::sleep_until(until).await }));
    drop(local);
    let (s, _) = Rc::try_unwrap(shared)
        .map_err(|_| "tasks still hold the stats")?
        .into_inner();
    *st = s;
    Ok(())
}

fn cpu_seconds() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn main() {
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("ws-proto: {e}");
            std::process::exit(2);
        }
    };
    let mut conns = Vec::with_capacity(a.conns);
    for _ in 0..a.conns {
        match connect(&a) {
            Ok(c) => conns.push(c),
            Err(e) => {
                eprintln!("ws-proto: {e}");
                std::process::exit(1);
            }
        }
    }
    let mut st = Stats {
        hist: vec![0; HIST_US],
        ..Stats::default()
    };
    let mut clock = Clock {
        end: Instant::now() + a.dur,
        rng: 0x9e37_79b9_7f4a_7c15,
    };
    let run = match (a.tokio, a.uring) {
        (true, _) => run_tokio,
        (_, true) => run_uring,
        _ => run_epoll,
    };
    if let Err(e) = run(&mut conns, &a, &mut clock, &mut st) {
        eprintln!("ws-proto: {e}");
        std::process::exit(1);
    }
    let cpu = cpu_seconds();
    println!(
        "{{\"io\":\"{}\",\"messages_sent\":{},\"messages_received\":{},\"unmatched\":{},\"errors\":{},\
         \"rtt_p50_us\":{},\"rtt_p99_us\":{},\"cpu_s\":{:.3},\"msgs_per_cpu_s\":{:.0}}}",
        match (a.uring, a.multishot, a.defer) {
            _ if a.tokio => "tokio",
            (false, ..) => "epoll",
            (true, false, false) => "uring",
            (true, true, false) => "uring-multishot",
            (true, false, true) => "uring-defer",
            (true, true, true) => "uring-multishot-defer",
        },
        st.sent,
        st.received,
        st.unmatched,
        st.errors,
        st.quantile(0.5),
        st.quantile(0.99),
        cpu,
        st.received as f64 / cpu.max(1e-9)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> (Conn, std::net::TcpListener) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let sock = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let c = Conn {
            sock,
            inbuf: Vec::new(),
            out: Vec::new(),
            sent: Instant::now(),
            waiting: true,
            alive: true,
            rbuf: Vec::new(),
        };
        (c, l)
    }

    #[test]
    fn frames_are_masked_and_echoes_split_across_reads_are_matched_once() {
        let (mut c, _l) = conn();
        frame(&mut c, b"hello", [1, 2, 3, 4]);
        assert_eq!(&c.out[..6], &[0x81, 0x85, 1, 2, 3, 4]);
        let unmasked: Vec<u8> = c.out[6..]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ [1, 2, 3, 4][i & 3])
            .collect();
        assert_eq!(unmasked, b"hello");
        let mut st = Stats {
            hist: vec![0; HIST_US],
            ..Stats::default()
        };
        let echo = [&[0x81u8, 5][..], b"hello"].concat();
        // Half a frame: nothing yet; the rest: one echo.
        assert!(!on_bytes(&mut c, &echo[..4], b"hello", &mut st));
        assert!(on_bytes(&mut c, &echo[4..], b"hello", &mut st));
        assert_eq!((st.received, st.unmatched), (1, 0));
        // A second copy while nothing is outstanding, and a different message: unmatched.
        let other = [&[0x81u8, 3][..], b"bye"].concat();
        assert!(!on_bytes(
            &mut c,
            &[echo.clone(), other].concat(),
            b"hello",
            &mut st
        ));
        assert_eq!((st.received, st.unmatched), (1, 2));
        assert!(c.alive && c.inbuf.is_empty());
        // A close frame ends the connection.
        assert!(!on_bytes(&mut c, &[0x88, 0], b"hello", &mut st));
        assert!(!c.alive);
    }
}
