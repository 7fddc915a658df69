//! Facts about this process that runs report.

/// Peak resident set size (VmHWM) in bytes, where the OS tells it.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(target_os = "linux")]
    fn peak_rss_is_plausible() {
        let v = super::peak_rss_bytes().expect("Linux has /proc/self/status");
        assert!(v > 100 * 1024 && v < 64 << 30, "{v}");
    }
}
