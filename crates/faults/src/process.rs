//! Process faults: what a fault can do to a process ([`ProcessTarget`]), for a bare pid
//! ([`PidTarget`], no restart) and for a command Volley starts and can start again
//! ([`CommandTarget`], `--fault-target NAME=CMD`). A suite implements [`ProcessTarget`] for
//! its services (their process groups, their restart with the same data).

use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

/// Something a process fault can hit.
pub trait ProcessTarget: Send {
    /// SIGKILL.
    fn kill(&mut self) -> Result<(), String>;
    /// SIGTERM.
    fn term(&mut self) -> Result<(), String>;
    /// SIGSTOP.
    fn pause(&mut self) -> Result<(), String>;
    /// SIGCONT.
    fn resume(&mut self) -> Result<(), String>;
    /// Start it again (after a kill or term, or stop it first if it still runs).
    fn restart(&mut self) -> Result<(), String>;
    /// Whether [`ProcessTarget::restart`] can work (a bare pid cannot be started again).
    fn can_restart(&self) -> bool {
        true
    }
}

fn signal(pid: i32, sig: i32, what: &str) -> Result<(), String> {
    // SAFETY: kill(2) with a pid and a signal number; no memory is shared.
    let r = unsafe { libc::kill(pid, sig) };
    if r == 0 {
        Ok(())
    } else {
        Err(format!(
            "{what} of pid {pid}: {}",
            std::io::Error::last_os_error()
        ))
    }
}

/// A process by id (`kill=pid:1234`): signals only.
pub struct PidTarget(pub u32);

impl ProcessTarget for PidTarget {
    fn kill(&mut self) -> Result<(), String> {
        signal(self.0 as i32, libc::SIGKILL, "SIGKILL")
    }
    fn term(&mut self) -> Result<(), String> {
        signal(self.0 as i32, libc::SIGTERM, "SIGTERM")
    }
    fn pause(&mut self) -> Result<(), String> {
        signal(self.0 as i32, libc::SIGSTOP, "SIGSTOP")
    }
    fn resume(&mut self) -> Result<(), String> {
        signal(self.0 as i32, libc::SIGCONT, "SIGCONT")
    }
    fn restart(&mut self) -> Result<(), String> {
        Err(format!(
            "pid:{} cannot be restarted: Volley did not start it (give --fault-target NAME=CMD)",
            self.0
        ))
    }
    fn can_restart(&self) -> bool {
        false
    }
}

/// A command Volley runs (`sh -c CMD`) in its own process group, so signals reach the
/// whole tree; started at once, restarted on demand, killed when dropped.
pub struct CommandTarget {
    pub name: String,
    command: String,
    child: Mutex<Option<Child>>,
}

impl CommandTarget {
    /// Start `command` now.
    pub fn start(name: &str, command: &str) -> Result<CommandTarget, String> {
        let t = CommandTarget {
            name: name.to_string(),
            command: command.to_string(),
            child: Mutex::new(None),
        };
        t.spawn()?;
        Ok(t)
    }

    fn spawn(&self) -> Result<(), String> {
        use std::os::unix::process::CommandExt;
        let child = Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| {
                format!(
                    "--fault-target {}: cannot start '{}': {e}",
                    self.name, self.command
                )
            })?;
        *self.child.lock().unwrap() = Some(child);
        Ok(())
    }

    /// The process group (the shell's pid), while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.lock().unwrap().as_ref().map(Child::id)
    }

    fn group(&self, sig: i32, what: &str) -> Result<(), String> {
        let pid = self
            .pid()
            .ok_or_else(|| format!("{}: not running", self.name))?;
        signal(-(pid as i32), sig, what).map_err(|e| format!("{}: {e}", self.name))
    }

    /// SIGKILL the group and reap the shell.
    fn stop_now(&self) {
        let _ = self.group(libc::SIGKILL, "SIGKILL");
        if let Some(mut c) = self.child.lock().unwrap().take() {
            let _ = c.wait();
        }
    }
}

impl ProcessTarget for CommandTarget {
    fn kill(&mut self) -> Result<(), String> {
        let r = self.group(libc::SIGKILL, "SIGKILL");
        if let Some(c) = self.child.lock().unwrap().as_mut() {
            let _ = c.wait();
        }
        r
    }
    fn term(&mut self) -> Result<(), String> {
        self.group(libc::SIGTERM, "SIGTERM")
    }
    fn pause(&mut self) -> Result<(), String> {
        self.group(libc::SIGSTOP, "SIGSTOP")
    }
    fn resume(&mut self) -> Result<(), String> {
        self.group(libc::SIGCONT, "SIGCONT")
    }
    fn restart(&mut self) -> Result<(), String> {
        self.stop_now();
        self.spawn()
    }
}

impl Drop for CommandTarget {
    fn drop(&mut self) {
        // A paused group would ignore SIGTERM; SIGKILL ends it either way.
        self.stop_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn alive(pid: u32) -> bool {
        // SAFETY: signal 0 only checks that the process exists.
        unsafe { libc::kill(pid as i32, 0) == 0 }
    }

    #[test]
    fn a_command_target_is_killed_and_started_again() {
        let mut t = CommandTarget::start("sleeper", "exec sleep 30").unwrap();
        let first = t.pid().unwrap();
        assert!(alive(first));
        t.kill().unwrap();
        let t0 = Instant::now();
        while alive(first) && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!alive(first), "SIGKILL did not end pid {first}");
        t.restart().unwrap();
        let second = t.pid().unwrap();
        assert_ne!(first, second);
        assert!(alive(second));
        drop(t);
        assert!(!alive(second));
    }

    #[test]
    fn a_pid_cannot_be_restarted() {
        let mut t = PidTarget(u32::MAX / 2);
        assert!(!t.can_restart());
        assert!(t.restart().unwrap_err().contains("--fault-target"));
        assert!(t.kill().is_err());
    }
}
