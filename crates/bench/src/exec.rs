//! One timed run of a command: spawn it in a process group of its own, wait for it on a
//! pidfd (the wake-up is the exit itself, so the wall time is not rounded to a polling
//! tick), sample the tree's memory meanwhile, read its stdout for metrics, kill the whole
//! group at `--timeout` or on Ctrl-C, then reap it with `wait4` for its rusage.
//!
//! Everything happens on the calling thread: one `ppoll` over the pidfd and the stdout pipe
//! whose timeout is the next memory sample or the deadline. Kernels without `pidfd_open`
//! (before 5.3) fall back to checking `waitid(WNOWAIT)` at every tick.

use crate::parse::{Format, OutputParser, Parsed};
use crate::tree::TreeSampler;
use std::io::Write as _;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use volley_engine::RunControl;

/// After the command exits, how long its stdout may stay open (a background grandchild
/// holding it) before reading stops.
const DRAIN_GRACE: Duration = Duration::from_secs(1);
/// The first memory sample comes this soon after the spawn; the interval then doubles up to
/// the launch's `sample_max`.
const FIRST_SAMPLE: Duration = Duration::from_millis(1);

/// How to run a command once.
#[derive(Clone, Debug)]
pub struct Launch<'a> {
    pub argv: &'a [String],
    /// `--input FILE` (else /dev/null).
    pub stdin: Option<&'a Path>,
    pub parse: Option<Format>,
    /// Pass the command's stdout and stderr through (`--show-output`).
    pub show_output: bool,
    pub timeout: Option<Duration>,
    /// Longest interval between memory samples.
    pub sample_max: Duration,
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Exited(i32),
    Signaled(i32),
    TimedOut,
    Interrupted,
}

impl Status {
    pub fn ok(&self) -> bool {
        *self == Status::Exited(0)
    }

    pub fn describe(&self, timeout: Option<Duration>) -> String {
        match self {
            Status::Exited(c) => format!("exit status {c}"),
            Status::Signaled(s) => format!("killed by signal {s} ({})", signal_name(*s)),
            Status::TimedOut => format!(
                "timed out after {} (process group killed)",
                timeout.map_or_else(String::new, |t| volley_metrics::fmt::ms(
                    t.as_secs_f64() * 1e3
                ))
            ),
            Status::Interrupted => "interrupted (process group killed)".into(),
        }
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGINT => "SIGINT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGPIPE => "SIGPIPE",
        _ => "signal",
    }
}

/// What one run measured.
#[derive(Clone, Debug)]
pub struct Measured {
    pub wall_ms: f64,
    pub user_ms: f64,
    pub sys_ms: f64,
    /// `wait4`'s `ru_maxrss`: the largest single process of the tree, bytes; `None` when it
    /// is not above Volley's own peak (see [`own_peak_rss`]).
    pub ru_maxrss: Option<u64>,
    /// The largest sum over the live tree that the sampler saw, bytes.
    pub tree_peak: u64,
    pub voluntary_cs: u64,
    pub involuntary_cs: u64,
    pub status: Status,
    pub parsed: Option<Parsed>,
    /// Something to tell about the output (a pipe still open after the exit).
    pub note: Option<String>,
}

impl Measured {
    /// Peak RSS of the whole tree: the sampled sum, or `ru_maxrss` when a process lived too
    /// briefly to be sampled (it is a lower bound of the tree's peak); `None` when neither
    /// saw anything.
    pub fn peak_rss(&self) -> Option<u64> {
        let p = self.tree_peak.max(self.ru_maxrss.unwrap_or(0));
        (p > 0).then_some(p)
    }
}

/// This process's own peak RSS (`VmHWM`), bytes.
///
/// Linux records the *spawner's* memory in the child's `ru_maxrss`: at `exec` the kernel
/// folds the high-water mark of the address space being replaced into the process's maximum,
/// and after `vfork`/`posix_spawn` that address space is Volley's (after `fork`, a copy as
/// large). A child's `ru_maxrss` at or below this value therefore says nothing about the
/// child, and only the sampler's figure is used.
pub fn own_peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kib| kib * 1024)
}

fn ms(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 * 1e3 + tv.tv_usec as f64 / 1e3
}

fn pidfd_open(pid: u32) -> Option<i32> {
    // SAFETY: a plain syscall with integer arguments; the fd it returns is ours to close.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0) };
    (fd >= 0).then_some(fd as i32)
}

/// Has `pid` exited (without reaping it)?
fn has_exited(pid: u32) -> bool {
    // SAFETY: siginfo is plain data; waitid with WNOWAIT only inspects our own child.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        r == 0 && info.si_pid() != 0
    }
}

fn kill_group(pid: u32) {
    // SAFETY: signalling the process group we created for this child (it is not reaped yet,
    // so its id cannot have been reused).
    unsafe {
        libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
    }
}

fn set_nonblocking(fd: i32) {
    // SAFETY: fcntl on a pipe fd we own.
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
}

/// `ppoll` on `fds` for at most `d`; EINTR counts as a timeout.
fn wait_fds(fds: &mut [libc::pollfd], d: Duration) {
    let ts = libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `fds` is a valid slice of pollfd for the duration of the call.
    unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        );
    }
}

/// Stdout of a run being read: the pipe, the parser, and whether to echo.
struct Reader {
    pipe: std::process::ChildStdout,
    parser: Option<OutputParser>,
    echo: bool,
    open: bool,
}

impl Reader {
    /// Read what is available; closes on EOF or error.
    fn read_available(&mut self) {
        use std::io::Read as _;
        let mut buf = [0u8; 16 * 1024];
        loop {
            match self.pipe.read(&mut buf) {
                Ok(0) => {
                    self.open = false;
                    return;
                }
                Ok(n) => {
                    if let Some(p) = &mut self.parser {
                        p.feed(&buf[..n]);
                    }
                    if self.echo {
                        let _ = std::io::stdout().lock().write_all(&buf[..n]);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.open = false;
                    return;
                }
            }
        }
    }
}

/// Run `l` once. `Err` only when the command cannot be started at all (not found, not
/// executable): a failing run is an `Ok` with its [`Status`].
pub fn run_once(l: &Launch, ctl: &RunControl) -> Result<Measured, String> {
    let (prog, args) = l
        .argv
        .split_first()
        .ok_or_else(|| "empty command".to_string())?;
    let mut cmd = Command::new(prog);
    cmd.args(args).process_group(0);
    match l.stdin {
        Some(p) => {
            let f = std::fs::File::open(p).map_err(|e| format!("--input {}: {e}", p.display()))?;
            cmd.stdin(f);
        }
        None => {
            cmd.stdin(Stdio::null());
        }
    }
    let capture = l.parse.is_some();
    cmd.stdout(if capture {
        Stdio::piped()
    } else if l.show_output {
        Stdio::inherit()
    } else {
        Stdio::null()
    });
    cmd.stderr(if l.show_output {
        Stdio::inherit()
    } else {
        Stdio::null()
    });
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run '{prog}': {e}"))?;
    let pid = child.id();
    let pidfd = pidfd_open(pid);
    let mut reader = child.stdout.take().map(|pipe| {
        set_nonblocking(pipe.as_raw_fd());
        Reader {
            pipe,
            parser: l.parse.map(OutputParser::new),
            echo: l.show_output,
            open: true,
        }
    });
    let mut sampler = TreeSampler::new(pid);
    let deadline = l.timeout.map(|t| start + t);
    let (mut interval, mut next_sample) = (FIRST_SAMPLE, start + FIRST_SAMPLE);
    let mut ended: Option<Status> = None;
    let end = loop {
        let now = Instant::now();
        let mut until = next_sample.saturating_duration_since(now);
        if let Some(d) = deadline.filter(|_| ended.is_none()) {
            until = until.min(d.saturating_duration_since(now));
        }
        // Interruption is noticed within one sampling interval.
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(2);
        if let Some(fd) = pidfd {
            fds.push(libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            });
        }
        if let Some(r) = reader.as_ref().filter(|r| r.open) {
            fds.push(libc::pollfd {
                fd: r.pipe.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        if pidfd.is_none() {
            until = until.min(FIRST_SAMPLE);
        }
        wait_fds(&mut fds, until);
        if let Some(r) = reader.as_mut().filter(|r| r.open) {
            r.read_available();
        }
        let exited = match pidfd {
            Some(_) => fds[0].revents & libc::POLLIN != 0,
            None => has_exited(pid),
        };
        if exited {
            break Instant::now();
        }
        let now = Instant::now();
        if now >= next_sample {
            sampler.sample();
            interval = (interval * 2).min(l.sample_max);
            next_sample = now + interval;
        }
        if ended.is_none() {
            if deadline.is_some_and(|d| now >= d) {
                ended = Some(Status::TimedOut);
                kill_group(pid);
            } else if ctl.is_stopped() {
                ended = Some(Status::Interrupted);
                kill_group(pid);
            }
        }
    };
    let wall_ms = end.duration_since(start).as_secs_f64() * 1e3;
    if let Some(fd) = pidfd {
        // SAFETY: closing the pidfd we opened.
        unsafe { libc::close(fd) };
    }
    // SAFETY: reaping our own exited child; status and rusage are plain out-parameters.
    let (status_word, ru) = unsafe {
        let mut st: libc::c_int = 0;
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::wait4(pid as libc::pid_t, &mut st, 0, &mut ru);
        (st, ru)
    };
    // Read after the exec: anything the spawn itself added to Volley's address space (the
    // vfork child's stack, other threads meanwhile) is in this figure too.
    let spawner_peak = own_peak_rss();
    // std would otherwise try to reap it again on drop (it never does for a spawned-and-
    // dropped child, but be explicit that the pid is gone).
    drop(child);
    let status = ended.unwrap_or(if libc::WIFEXITED(status_word) {
        Status::Exited(libc::WEXITSTATUS(status_word))
    } else if libc::WIFSIGNALED(status_word) {
        Status::Signaled(libc::WTERMSIG(status_word))
    } else {
        Status::Exited(-1)
    });
    let mut note = None;
    if let Some(r) = reader.as_mut() {
        let until = Instant::now() + DRAIN_GRACE;
        while r.open {
            let now = Instant::now();
            if now >= until {
                note = Some(
                    "stdout still open 1 s after the command exited (a background process \
                     holds it); stopped reading"
                        .to_string(),
                );
                break;
            }
            let mut fds = [libc::pollfd {
                fd: r.pipe.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            wait_fds(&mut fds, until - now);
            r.read_available();
        }
    }
    Ok(Measured {
        wall_ms,
        user_ms: ms(ru.ru_utime),
        sys_ms: ms(ru.ru_stime),
        ru_maxrss: Some((ru.ru_maxrss.max(0) as u64) * 1024).filter(|m| *m > spawner_peak),
        tree_peak: sampler.peak,
        voluntary_cs: ru.ru_nvcsw.max(0) as u64,
        involuntary_cs: ru.ru_nivcsw.max(0) as u64,
        status,
        parsed: reader.and_then(|r| r.parser.map(OutputParser::finish)),
        note,
    })
}

/// Run a helper command (`--prepare`, `--cleanup`) through `sh -c`, untimed, output shown only
/// with `show`; `Err` says how it failed.
pub fn run_helper(what: &str, cmd: &str, show: bool) -> Result<(), String> {
    let out = |s: bool| if s { Stdio::inherit() } else { Stdio::null() };
    let status = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .stdout(out(show))
        .stderr(out(show))
        .status()
        .map_err(|e| format!("{what} '{cmd}': cannot start sh: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} '{cmd}' failed ({status})\n  hint: run it by hand, or add --show-output to see its output"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(argv: &[String]) -> Launch<'_> {
        Launch {
            argv,
            stdin: None,
            parse: Some(Format::Kv),
            show_output: false,
            timeout: Some(Duration::from_secs(10)),
            sample_max: Duration::from_millis(5),
        }
    }

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    #[test]
    fn exit_status_and_printed_metrics_are_read() {
        let argv = sh("echo ops=42 lat=3ms; exit 3");
        let m = run_once(&launch(&argv), &RunControl::new()).unwrap();
        assert_eq!(m.status, Status::Exited(3));
        let p = m.parsed.unwrap();
        assert_eq!(p.values[0].1.value, 42.0);
        assert!(m.wall_ms > 0.0);
    }

    #[test]
    fn a_timeout_kills_the_whole_process_group() {
        // The grandchild would keep stdout open for 30 s if it survived the kill.
        let argv = sh("sleep 30 & sleep 30; echo never");
        let mut l = launch(&argv);
        l.timeout = Some(Duration::from_millis(200));
        let t = Instant::now();
        let m = run_once(&l, &RunControl::new()).unwrap();
        assert_eq!(m.status, Status::TimedOut);
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert!(m.note.is_none(), "{:?}", m.note);
    }

    #[test]
    fn a_missing_program_is_an_error_not_a_run() {
        let argv = vec!["/nonexistent/volley-bench-x".to_string()];
        let e = run_once(&launch(&argv), &RunControl::new()).unwrap_err();
        assert!(
            e.starts_with("cannot run '/nonexistent/volley-bench-x'"),
            "{e}"
        );
    }
}
