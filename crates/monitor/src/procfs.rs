//! Reading one process's resource use from `/proc/PID`, and finding processes by name.
//!
//! Every figure is optional: files of another user's process (`smaps_rollup`, `io`, `fd/`)
//! answer EACCES, and such a figure is simply left out rather than failing the sample.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Linux reports CPU times in USER_HZ ticks, which is 100 on every mainstream architecture.
pub const TICKS_PER_SEC: f64 = 100.0;

/// One reading of one process. Byte figures are bytes; times are USER_HZ ticks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProcSample {
    pub rss_bytes: Option<u64>,
    pub private_dirty_bytes: Option<u64>,
    pub utime_ticks: u64,
    pub stime_ticks: u64,
    pub threads: Option<u64>,
    pub fds: Option<u64>,
    /// `rchar`/`wchar`: every read/write syscall (files, sockets, pipes).
    pub read_bytes: Option<u64>,
    pub write_bytes: Option<u64>,
    /// `read_bytes`/`write_bytes`: what reached the storage layer.
    pub disk_read_bytes: Option<u64>,
    pub disk_write_bytes: Option<u64>,
    pub ctx_voluntary: Option<u64>,
    pub ctx_involuntary: Option<u64>,
}

impl ProcSample {
    /// Add another process's figures (for a process tree). A figure present in either side
    /// is present in the sum.
    pub fn add(&mut self, o: &ProcSample) {
        fn sum(a: &mut Option<u64>, b: Option<u64>) {
            if let Some(b) = b {
                *a = Some(a.unwrap_or(0) + b);
            }
        }
        sum(&mut self.rss_bytes, o.rss_bytes);
        sum(&mut self.private_dirty_bytes, o.private_dirty_bytes);
        self.utime_ticks += o.utime_ticks;
        self.stime_ticks += o.stime_ticks;
        sum(&mut self.threads, o.threads);
        sum(&mut self.fds, o.fds);
        sum(&mut self.read_bytes, o.read_bytes);
        sum(&mut self.write_bytes, o.write_bytes);
        sum(&mut self.disk_read_bytes, o.disk_read_bytes);
        sum(&mut self.disk_write_bytes, o.disk_write_bytes);
        sum(&mut self.ctx_voluntary, o.ctx_voluntary);
        sum(&mut self.ctx_involuntary, o.ctx_involuntary);
    }
}

fn proc_dir(pid: u32) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}"))
}

/// `Some(value)` of a `Key:   123 kB` line (kB lines converted to bytes).
fn status_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| {
        l.strip_prefix(key)
            .is_some_and(|rest| rest.starts_with(':'))
    })?;
    let mut it = line[key.len() + 1..].split_whitespace();
    let v: u64 = it.next()?.parse().ok()?;
    Some(if it.next() == Some("kB") { v * 1024 } else { v })
}

/// The fields of `/proc/PID/stat` after the command name (which may hold spaces and
/// parentheses, so split at the last ')'): index 0 is field 3 (`state`).
fn stat_fields(text: &str) -> Option<Vec<&str>> {
    let close = text.rfind(')')?;
    Some(text[close + 1..].split_whitespace().collect())
}

/// Parent pid and CPU ticks (utime, stime) from `/proc/PID/stat`.
fn read_stat(pid: u32) -> io::Result<(u32, u64, u64)> {
    let text = fs::read_to_string(proc_dir(pid).join("stat"))?;
    let f = stat_fields(&text).ok_or_else(|| io::Error::other("malformed stat"))?;
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // Fields 4 (ppid), 14 (utime), 15 (stime).
    Ok((num(1) as u32, num(11), num(12)))
}

/// Read one process. `Err(NotFound)` means it is gone (or never existed); a zombie counts as
/// gone too, since it holds no resources any more.
pub fn sample_pid(pid: u32) -> io::Result<ProcSample> {
    let dir = proc_dir(pid);
    let status = fs::read_to_string(dir.join("status"))?;
    if status
        .lines()
        .any(|l| l.starts_with("State:") && (l.contains("zombie") || l.contains("dead")))
    {
        return Err(io::Error::new(io::ErrorKind::NotFound, "zombie"));
    }
    let (_, utime, stime) = read_stat(pid)?;
    let mut s = ProcSample {
        rss_bytes: status_field(&status, "VmRSS"),
        utime_ticks: utime,
        stime_ticks: stime,
        threads: status_field(&status, "Threads"),
        ctx_voluntary: status_field(&status, "voluntary_ctxt_switches"),
        ctx_involuntary: status_field(&status, "nonvoluntary_ctxt_switches"),
        ..ProcSample::default()
    };
    // Kernel threads have no VmRSS line; they use no user memory.
    if s.rss_bytes.is_none() {
        s.rss_bytes = Some(0);
    }
    if let Ok(t) = fs::read_to_string(dir.join("smaps_rollup")) {
        s.private_dirty_bytes = status_field(&t, "Private_Dirty");
    }
    if let Ok(t) = fs::read_to_string(dir.join("io")) {
        s.read_bytes = status_field(&t, "rchar");
        s.write_bytes = status_field(&t, "wchar");
        s.disk_read_bytes = status_field(&t, "read_bytes");
        s.disk_write_bytes = status_field(&t, "write_bytes");
    }
    if let Ok(rd) = fs::read_dir(dir.join("fd")) {
        s.fds = Some(rd.count() as u64);
    }
    Ok(s)
}

/// Every live process: pid → (ppid, comm, argv[0] basename).
fn processes() -> Vec<(u32, u32, String, String)> {
    let Ok(rd) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok((ppid, _, _)) = read_stat(pid) else {
            continue;
        };
        let dir = e.path();
        let comm = fs::read_to_string(dir.join("comm"))
            .map(|c| c.trim_end().to_string())
            .unwrap_or_default();
        let argv0 = fs::read(dir.join("cmdline"))
            .ok()
            .and_then(|b| {
                let first = b.split(|c| *c == 0).next()?.to_vec();
                let s = String::from_utf8_lossy(&first).into_owned();
                Path::new(&s)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_default();
        out.push((pid, ppid, comm, argv0));
    }
    out
}

/// Processes named `name` (comm or argv[0] basename) and all their descendants, without
/// this process itself (so `cmd:volley` watches other Volleys, not the one watching).
pub fn find_tree(name: &str) -> BTreeSet<u32> {
    let all = processes();
    let roots = all
        .iter()
        .filter(|(_, _, comm, argv0)| comm == name || argv0 == name)
        .map(|(pid, ..)| *pid);
    descendants(&all, roots)
}

/// Process `pid` and all its descendants (a service and the workers it forks), without this
/// process itself; empty when `pid` is gone.
pub fn pid_tree(pid: u32) -> BTreeSet<u32> {
    let all = processes();
    let root = all.iter().find(|p| p.0 == pid).map(|p| p.0);
    descendants(&all, root)
}

/// `roots` and every process below them in `all`'s parent links.
fn descendants(
    all: &[(u32, u32, String, String)],
    roots: impl IntoIterator<Item = u32>,
) -> BTreeSet<u32> {
    let me = std::process::id();
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (pid, ppid, _, _) in all {
        children.entry(*ppid).or_default().push(*pid);
    }
    let mut found = BTreeSet::new();
    let mut stack: Vec<u32> = roots.into_iter().collect();
    while let Some(p) = stack.pop() {
        if p != me && found.insert(p) {
            if let Some(c) = children.get(&p) {
                stack.extend(c);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tree:N` (each suite service): the forked children count, not only the leader.
    #[test]
    fn pid_tree_holds_the_children_a_process_forked() {
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "sleep 5 & sleep 5 & wait"])
            .spawn()
            .expect("sh");
        let leader = sh.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        let mut tree = pid_tree(leader);
        while tree.len() < 3 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
            tree = pid_tree(leader);
        }
        let _ = std::process::Command::new("pkill")
            .args(["-P", &leader.to_string()])
            .status();
        let _ = sh.kill();
        let _ = sh.wait();
        assert!(tree.contains(&leader), "{tree:?}");
        assert_eq!(tree.len(), 3, "the shell and its two sleeps: {tree:?}");
        assert!(pid_tree(leader).is_empty(), "a reaped process has no tree");
    }

    #[test]
    fn stat_survives_odd_command_names() {
        let line = "123 (a b) c)) S 1 123 123 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 3 0 1 1 1";
        let f = stat_fields(line).unwrap();
        assert_eq!(f[0], "S");
        assert_eq!(f[1], "1");
        assert_eq!(f[11], "250");
        assert_eq!(f[12], "75");
    }

    #[test]
    fn status_fields_convert_kib() {
        let t = "Name:\tx\nVmRSS:\t  2048 kB\nThreads:\t7\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t2\n";
        assert_eq!(status_field(t, "VmRSS"), Some(2048 * 1024));
        assert_eq!(status_field(t, "Threads"), Some(7));
        assert_eq!(status_field(t, "voluntary_ctxt_switches"), Some(5));
        assert_eq!(status_field(t, "nonvoluntary_ctxt_switches"), Some(2));
        assert_eq!(status_field(t, "Vm"), None);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn own_process_reads_plausibly() {
        let s = sample_pid(std::process::id()).unwrap();
        assert!(s.rss_bytes.unwrap() > 100 * 1024);
        assert!(s.threads.unwrap() >= 1);
        assert!(s.fds.unwrap() >= 3, "{:?}", s.fds);
        assert!(s.private_dirty_bytes.is_some());
        assert!(s.read_bytes.is_some());
        assert!(s.ctx_voluntary.is_some());
        assert_eq!(
            sample_pid(u32::MAX - 1).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }
}
