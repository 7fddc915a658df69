//! Helpers shared by the CLI integration tests: run the real `volley` binary against loopback
//! servers started by the test itself.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub fn volley() -> Command {
    Command::new(env!("CARGO_BIN_EXE_volley"))
}

/// Run volley with `args`; panics only if the binary cannot be started.
pub fn run(args: &[&str]) -> Output {
    volley().args(args).output().expect("volley binary runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Parse the `--json` summary from stdout.
pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            stdout(o),
            stderr(o)
        )
    })
}

pub fn target() -> volley_testserver::RunningTarget {
    target_with(None, None)
}

pub fn target_with(
    tls: Option<volley_testserver::TlsIdentity>,
    delay: Option<Duration>,
) -> volley_testserver::RunningTarget {
    volley_testserver::spawn(volley_testserver::TargetConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        tls,
        delay_all: delay,
    })
    .expect("target starts")
}

pub use volley_testkit::Scratch;

/// A unique scratch directory under the system temp dir, removed when the guard drops (kept
/// after a panic with `VOLLEY_KEEP_SCRATCH=1`).
pub fn scratch(name: &str) -> Scratch {
    volley_testkit::scratch("volley-it", name)
}

/// A loopback port with nothing listening on it.
pub fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let p = l.local_addr().unwrap().port();
    drop(l);
    p
}

/// A raw server for fault tests: accepts up to `max_conns` connections for at most `life`,
/// handing each to `handler` on its own thread. Returns the port.
pub fn raw_server(max_conns: usize, life: Duration, handler: fn(TcpStream)) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let end = std::time::Instant::now() + life;
        let mut n = 0;
        while n < max_conns && std::time::Instant::now() < end {
            match l.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(false).unwrap();
                    n += 1;
                    std::thread::spawn(move || handler(s));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    port
}

/// Read one request head (up to the blank line), bounded.
pub fn read_head(s: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut b = [0u8; 1024];
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 65536 {
        match s.read(&mut b) {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&b[..n]),
        }
    }
    true
}

/// GET a path with a fresh `Connection: close` request; returns the body.
pub fn get_body(addr: std::net::SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default()
}

/// Tests that generate load or measure latency take this first, so they run one at a time
/// within a test binary and one test's load never shows up as another's latency.
pub fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A listener that never accepts: the kernel completes TCP handshakes (up to its backlog), and
/// nothing is ever read or answered. Keep it alive for as long as the test needs it.
pub fn silent_listener() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

/// The sum of a counter over its series in a result file (`--save`).
pub fn counter(saved: &serde_json::Value, name: &str) -> f64 {
    saved["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] == name)
        .map(|m| m["sum"].as_f64().unwrap_or(0.0))
        .sum()
}

/// (requests, failed requests) in each second of a saved result, from its per-second series
/// (the series table of docs/result-file.md: `http_req_failed`'s `total` and `trues`).
pub fn per_second(r: &serde_json::Value) -> Vec<(u64, u64)> {
    let s = &r["series"];
    let starts: Vec<u64> = s["t"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap())
        .collect();
    let mut out = vec![(0, 0); starts.len()];
    let failed = s["table"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "http_req_failed");
    for e in failed {
        for (j, t) in e["t"].as_array().unwrap().iter().enumerate() {
            let i = starts.iter().position(|x| Some(*x) == t.as_u64()).unwrap();
            out[i].0 += e["total"][j].as_u64().unwrap();
            out[i].1 += e["trues"][j].as_u64().unwrap();
        }
    }
    out
}

/// Runs `cmd` (stdout and stderr piped) to its end; panics if that takes more than `limit`.
pub fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{cmd:?} took more than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// A loopback HTTP server recording each request (request line, headers, body) and
/// answering 204; it stops after `life`.
/// A received request: request line, lower-cased headers, body.
pub type Request = (String, String, Vec<u8>);

pub fn recorder(life: Duration) -> (u16, Arc<Mutex<Vec<Request>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    l.set_nonblocking(true).unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    std::thread::spawn(move || {
        let end = Instant::now() + life;
        while Instant::now() < end {
            match l.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(false).unwrap();
                    let mut s = s;
                    if let Some(req) = read_request(&mut s) {
                        // Stored before the answer: once the sender has its answer (and the
                        // run has exited), the test sees every request.
                        g.lock().unwrap().push(req);
                        let _ =
                            s.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
                    }
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    (port, got)
}

pub fn read_request(s: &mut TcpStream) -> Option<Request> {
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut buf = Vec::new();
    let mut b = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut b).ok()?;
        if n == 0 || buf.len() > 1 << 20 {
            return None;
        }
        buf.extend_from_slice(&b[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < len {
        let n = s.read(&mut b).ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&b[..n]);
    }
    let (line, headers) = head.split_once("\r\n").unwrap_or((&head, ""));
    Some((line.to_string(), headers.to_lowercase(), body))
}

/// A Python server started by a test (tests/ws/*.py, tests/peers/*.py): it prints its port on
/// its first line (after a prefix) and exits when its stdin closes — when this is dropped, or
/// when the test process dies.
pub struct PyServer {
    child: std::process::Child,
    pub port: u16,
}

impl Drop for PyServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `python3 SCRIPT ARGS...` (SCRIPT relative to the repository's root) once its port line
/// (`prefix` then the port) is out; None when `python3 -c PROBE` fails, for the caller to
/// skip with a message saying what to install.
pub fn python_server(
    probe: &str,
    script: &str,
    args: &[&std::ffi::OsStr],
    prefix: &str,
) -> Option<PyServer> {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let ok = Command::new("python3")
        .args(["-c", probe])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return None;
    }
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut child = Command::new("python3")
        .arg(repo.join(script))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 starts");
    let out = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(out).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_default();
    let port = line
        .trim()
        .strip_prefix(prefix)
        .and_then(|p| p.parse().ok());
    let mut server = PyServer { child, port: 0 };
    server.port = port.unwrap_or_else(|| panic!("{script} did not start: {line:?}"));
    Some(server)
}
