//! Readiness probes of a `kind = "command"` service, polled every `ready.interval` until all
//! pass, the service exits, the timeout passes or Ctrl-C: `http` (a plain HTTP/1.1 GET on
//! loopback that must answer 2xx/3xx), `tcp` (a connect), `log` (a regex over the service's
//! log as it grows, read incrementally so a chatty service costs no memory) and `command`
//! (exit status 0). The error names the service, the probe that did not pass and its last
//! failure, and the service log's last 20 lines.

use super::process;
use crate::file::CommandLine;
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use volley_engine::RunControl;

/// Lines of the log an error shows.
pub const LOG_LINES: usize = 20;

/// A probe with its strings expanded.
pub enum Probe {
    Http(String),
    Tcp(String),
    Log(regex_lite::Regex),
    Command(CommandLine),
}

impl Probe {
    fn describe(&self) -> String {
        match self {
            Probe::Http(u) => format!("ready.http {u}"),
            Probe::Tcp(a) => format!("ready.tcp {a}"),
            Probe::Log(r) => format!("ready.log /{}/", r.as_str()),
            Probe::Command(c) => format!("ready.command `{}`", process::show(c)),
        }
    }
}

/// What the probes need besides themselves.
pub struct Wait<'a> {
    pub name: &'a str,
    pub interval: Duration,
    pub timeout: Duration,
    pub log: &'a Path,
    pub env: &'a BTreeMap<String, String>,
    pub cwd: Option<&'a Path>,
}

/// Polls `probes` until every one has passed once. `Err` is the user's message.
pub fn wait(w: &Wait, probes: &[Probe], child: &mut Child, ctl: &RunControl) -> Result<(), String> {
    let start = Instant::now();
    let mut passed = vec![false; probes.len()];
    let mut last: Vec<String> = vec!["not tried yet".into(); probes.len()];
    let mut log = LogScan::new(w.log);
    loop {
        for (i, p) in probes.iter().enumerate() {
            if passed[i] {
                continue;
            }
            match attempt(p, w, &mut log) {
                Ok(()) => passed[i] = true,
                Err(e) => last[i] = e,
            }
        }
        if passed.iter().all(|p| *p) {
            return Ok(());
        }
        let failing = passed.iter().position(|p| !p).unwrap_or(0);
        let what = format!(
            "{} (last attempt: {})",
            probes[failing].describe(),
            last[failing]
        );
        if let Ok(Some(st)) = child.try_wait() {
            return Err(format!(
                "service '{}' exited ({st}) before it was ready: {what}{}",
                w.name,
                log_tail(w.log)
            ));
        }
        if ctl.is_stopped() {
            return Err(format!(
                "interrupted while service '{}' was starting",
                w.name
            ));
        }
        if start.elapsed() >= w.timeout {
            return Err(format!(
                "service '{}' was not ready after {}: {what}{}",
                w.name,
                crate::demo::flag_duration(w.timeout),
                log_tail(w.log)
            ));
        }
        std::thread::sleep(w.interval);
    }
}

/// `\nlast N lines of LOG:\n  ...` (or a note that it is empty).
pub fn log_tail(log: &Path) -> String {
    let lines = process::tail(log, LOG_LINES);
    if lines.is_empty() {
        return format!("\n  ({} is empty)", log.display());
    }
    let mut s = format!("\nlast {} lines of {}:", lines.len(), log.display());
    for l in lines {
        s.push_str("\n  ");
        s.push_str(&l);
    }
    s
}

fn attempt(p: &Probe, w: &Wait, log: &mut LogScan) -> Result<(), String> {
    match p {
        Probe::Http(url) => http_get(url),
        Probe::Tcp(addr) => connect(addr).map(drop),
        Probe::Log(re) => {
            if log.find(re) {
                Ok(())
            } else {
                Err("no matching line yet".into())
            }
        }
        Probe::Command(c) => {
            let mut child = process::command(c, w.env, w.cwd, Stdio::null(), Stdio::null())?
                .spawn()
                .map_err(|e| format!("cannot run: {e}"))?;
            match process::wait(&mut child, Duration::from_secs(10), &RunControl::new()) {
                Ok(Some(st)) if st.success() => Ok(()),
                Ok(Some(st)) => Err(st.to_string()),
                Ok(None) => Err("interrupted".into()),
                Err(e) => Err(e),
            }
        }
    }
}

fn connect(addr: &str) -> Result<TcpStream, String> {
    let addrs: Vec<_> = addr
        .to_socket_addrs()
        .map_err(|e| format!("{addr}: {e}"))?
        .collect();
    let mut last = format!("{addr}: no address");
    for a in addrs {
        match TcpStream::connect_timeout(&a, Duration::from_secs(1)) {
            Ok(s) => return Ok(s),
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}

/// GET `url` (http://host:port/path); 2xx and 3xx pass.
fn http_get(url: &str) -> Result<(), String> {
    let rest = url.strip_prefix("http://").ok_or("not an http:// URL")?;
    let (hostport, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr = if hostport.contains(':') && !hostport.ends_with(']') {
        hostport.to_string()
    } else {
        format!("{hostport}:80")
    };
    let mut s = connect(&addr)?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {hostport}\r\nUser-Agent: volley-suite\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut head = [0u8; 64];
    let mut n = 0;
    while n < 12 {
        match s.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(e.to_string()),
        }
    }
    let line = String::from_utf8_lossy(&head[..n]);
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| {
            format!(
                "not an HTTP response: {:?}",
                line.lines().next().unwrap_or("")
            )
        })?;
    if (200..400).contains(&status) {
        Ok(())
    } else {
        Err(format!("HTTP {status}"))
    }
}

/// Reads a growing log from where it left off; remembers a match.
struct LogScan {
    path: PathBuf,
    offset: u64,
    partial: String,
    found: bool,
}

impl LogScan {
    fn new(path: &Path) -> LogScan {
        LogScan {
            path: path.to_path_buf(),
            offset: 0,
            partial: String::new(),
            found: false,
        }
    }

    fn find(&mut self, re: &regex_lite::Regex) -> bool {
        if self.found {
            return true;
        }
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return false;
        };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return false;
        }
        let mut buf = Vec::new();
        let n = f.take(1 << 20).read_to_end(&mut buf).unwrap_or(0);
        self.offset += n as u64;
        self.partial.push_str(&String::from_utf8_lossy(&buf));
        // Whole lines are matched; the unfinished last one waits for the rest of it.
        let cut = self.partial.rfind('\n').map_or(0, |i| i + 1);
        let whole: String = self.partial.drain(..cut).collect();
        // A line longer than 64 KiB without a newline is matched as it is.
        if self.partial.len() > 64 * 1024 {
            self.found = re.is_match(&self.partial);
            self.partial.clear();
        }
        self.found = self.found || whole.lines().any(|l| re.is_match(l));
        self.found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_probe_reads_lines_as_they_come() {
        let p = std::env::temp_dir().join(format!("volley-logscan-{}.log", std::process::id()));
        std::fs::write(&p, "starting\nlisten").unwrap();
        let re = regex_lite::Regex::new("listening on [0-9]+").unwrap();
        let mut s = LogScan::new(&p);
        assert!(!s.find(&re));
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"ing on 8080\n").unwrap();
        assert!(s.find(&re));
        let _ = std::fs::remove_file(&p);
    }
}
