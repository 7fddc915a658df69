//! Processes a suite starts (services, command steps, `ready.command`): each in its own
//! process group, so one signal to the group reaches everything it forked, and the group can
//! be checked for survivors. Linux also gets `PR_SET_PDEATHSIG`, so a service leader dies
//! with Volley even when Volley itself is killed with SIGKILL and cannot tear down.

use crate::file::CommandLine;
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use volley_engine::RunControl;

/// A command ready to spawn in a new process group: a string runs under `sh -c`, an array
/// runs that program. `env` comes on top of Volley's own environment.
pub fn command(
    c: &CommandLine,
    env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
    out: Stdio,
    err: Stdio,
) -> Result<Command, String> {
    let mut cmd = match c {
        CommandLine::Shell(s) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(s);
            c
        }
        CommandLine::Argv(v) => {
            let (prog, args) = v.split_first().ok_or("the command is empty")?;
            let mut c = Command::new(prog);
            c.args(args);
            c
        }
    };
    cmd.envs(env).stdin(Stdio::null()).stdout(out).stderr(err);
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    cmd.process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            Ok(())
        });
    }
    Ok(cmd)
}

/// Process groups (and postmasters) started and not yet stopped: what [`kill_all`] ends when
/// the process must exit at once (a third Ctrl-C) and no destructor will run.
static LIVE: std::sync::Mutex<Vec<(u32, bool)>> = std::sync::Mutex::new(Vec::new());

/// Remembers a live process group (`group`) or a single process to kill on a hard exit.
pub fn register(pid: u32, group: bool) {
    if let Ok(mut l) = LIVE.lock() {
        l.push((pid, group));
    }
}

pub fn unregister(pid: u32) {
    if let Ok(mut l) = LIVE.lock() {
        l.retain(|(p, _)| *p != pid);
    }
}

/// SIGKILLs every registered group and SIGQUITs (PostgreSQL's immediate shutdown) every
/// registered single process. For the last resort before `exit`, when teardown cannot run.
pub fn kill_all() {
    let list = LIVE.lock().map(|l| l.clone()).unwrap_or_default();
    for (pid, group) in list {
        if group {
            signal_group(pid, libc::SIGKILL);
        } else {
            // SAFETY: a plain syscall.
            unsafe { libc::kill(pid as i32, libc::SIGQUIT) };
        }
    }
}

/// The command as the user reads it (for errors).
pub fn show(c: &CommandLine) -> String {
    match c {
        CommandLine::Shell(s) => s.clone(),
        CommandLine::Argv(v) => v.join(" "),
    }
}

/// Sends `sig` to every process of group `pgid`.
pub fn signal_group(pgid: u32, sig: i32) {
    if pgid > 1 {
        // SAFETY: a plain syscall; a negative pid addresses the process group.
        unsafe { libc::kill(-(pgid as i32), sig) };
    }
}

/// Live (not zombie) processes of group `pgid`: (pid, command name).
pub fn group_members(pgid: u32) -> Vec<(u32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_string();
        let mut f = stat[close + 1..].split_whitespace();
        let (state, _ppid, pgrp) = (f.next(), f.next(), f.next());
        if state != Some("Z") && pgrp.and_then(|p| p.parse::<u32>().ok()) == Some(pgid) {
            out.push((pid, comm));
        }
    }
    out
}

/// Is process `pid` alive (and not a zombie)?
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rfind(')')
            .and_then(|i| s[i + 1..].split_whitespace().next())
            .is_some_and(|st| st != "Z"),
        Err(_) => false,
    }
}

/// Stops group `pgid` led by `child`: `sig`, up to `grace` for the group to empty, then
/// SIGKILL and up to 5 s more. `Err` lists what survived even SIGKILL.
pub fn stop_group(child: &mut Child, sig: i32, grace: Duration) -> Result<(), String> {
    let pgid = child.id();
    signal_group(pgid, sig);
    if wait_group_empty(child, grace) {
        return Ok(());
    }
    signal_group(pgid, libc::SIGKILL);
    if wait_group_empty(child, Duration::from_secs(5)) {
        return Ok(());
    }
    let left: Vec<String> = group_members(pgid)
        .iter()
        .map(|(p, c)| format!("{p} ({c})"))
        .collect();
    Err(format!(
        "process group {pgid} still has processes after SIGKILL: {}",
        left.join(", ")
    ))
}

fn wait_group_empty(child: &mut Child, limit: Duration) -> bool {
    let start = Instant::now();
    loop {
        let _ = child.try_wait();
        if group_members(child.id()).is_empty() {
            let _ = child.try_wait();
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `child` up to `limit`; on timeout or Ctrl-C its group is killed. `Ok(None)`:
/// interrupted; `Err`: timed out.
pub fn wait(
    child: &mut Child,
    limit: Duration,
    ctl: &RunControl,
) -> Result<Option<ExitStatus>, String> {
    let start = Instant::now();
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            // Whatever it left in its group goes with it.
            signal_group(child.id(), libc::SIGKILL);
            return Ok(Some(st));
        }
        if ctl.is_stopped() || start.elapsed() >= limit {
            let _ = stop_group(child, libc::SIGTERM, Duration::from_secs(2));
            let _ = child.wait();
            if ctl.is_stopped() {
                return Ok(None);
            }
            return Err(format!(
                "still running after {}; stopped",
                crate::demo::flag_duration(limit)
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The last `n` lines of a log file (reading at most its last 64 KiB).
pub fn tail(path: &Path, n: usize) -> Vec<String> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let from = len.saturating_sub(64 * 1024);
    let _ = f.seek(SeekFrom::Start(from));
    let mut buf = Vec::new();
    let _ = f.take(64 * 1024).read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<&str> = text.lines().collect();
    let skip = usize::from(from > 0 && !lines.is_empty());
    let lines = &lines[skip..];
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| l.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_stopped_with_everything_it_forked() {
        // The shell forks a sleeper that ignores SIGTERM: only SIGKILL ends it.
        let c = CommandLine::Shell("trap '' TERM; sleep 30 & sleep 30; wait".into());
        let mut child = command(&c, &BTreeMap::new(), None, Stdio::null(), Stdio::null())
            .unwrap()
            .spawn()
            .unwrap();
        let pgid = child.id();
        let start = Instant::now();
        while group_members(pgid).len() < 3 && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(group_members(pgid).len() >= 2, "{:?}", group_members(pgid));
        stop_group(&mut child, libc::SIGTERM, Duration::from_millis(300)).unwrap();
        assert!(group_members(pgid).is_empty());
        assert!(!alive(pgid));
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        let p = std::env::temp_dir().join(format!("volley-tail-{}.log", std::process::id()));
        let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&p, text).unwrap();
        let t = tail(&p, 20);
        assert_eq!(t.len(), 20);
        assert_eq!(t[0], "line 11");
        assert_eq!(t[19], "line 30");
        let _ = std::fs::remove_file(&p);
    }
}
