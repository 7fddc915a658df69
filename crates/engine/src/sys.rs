//! Facts about this process that runs report, and its open-file limit.

/// Peak resident set size (VmHWM) in bytes, where the OS tells it.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Raise the soft open-file limit (RLIMIT_NOFILE) to the hard limit. `Err`: a warning
/// when the hard limit is below `wanted` (then that many sockets cannot be open at once).
pub fn raise_open_files(wanted: u64) -> Result<u64, String> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain system calls on a local struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(0);
    }
    // An unlimited hard limit still stops at the kernel's per-process maximum.
    let top = if lim.rlim_max == libc::RLIM_INFINITY {
        std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(1 << 20)
    } else {
        lim.rlim_max
    };
    if lim.rlim_cur < top {
        let raised = libc::rlimit {
            rlim_cur: top,
            rlim_max: lim.rlim_max,
        };
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim.rlim_cur = top;
        }
    }
    let have: u64 = lim.rlim_cur;
    if have < wanted {
        return Err(format!(
            "the open-file limit is {have} (hard limit {}), below the ~{wanted} this run may \
             need (a connection per VU): VUs beyond it fail to connect (\"too many open \
             files\"); raise the hard limit (ulimit -Hn as root, systemd LimitNOFILE=, \
             docker --ulimit nofile=)",
            lim.rlim_max
        ));
    }
    Ok(have)
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(target_os = "linux")]
    fn the_open_file_limit_is_raised_to_the_hard_limit() {
        let have = super::raise_open_files(0).unwrap();
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        if lim.rlim_max != libc::RLIM_INFINITY {
            assert_eq!(lim.rlim_cur, lim.rlim_max);
        }
        assert_eq!(have, lim.rlim_cur);
        let e = super::raise_open_files(u64::MAX).unwrap_err();
        assert!(e.contains("hard limit"), "{e}");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn peak_rss_is_plausible() {
        let v = super::peak_rss_bytes().expect("Linux has /proc/self/status");
        assert!(v > 100 * 1024 && v < 64 << 30, "{v}");
    }
}
