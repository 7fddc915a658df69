//! Reading a cgroup v2 directory: memory, CPU usage and pressure stall information.

use std::fs;
use std::io;
use std::path::Path;

/// One reading of a cgroup. CPU times are microseconds since the cgroup was created.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CgroupSample {
    pub memory_current: Option<u64>,
    pub anon: Option<u64>,
    pub file: Option<u64>,
    pub usage_usec: Option<u64>,
    pub user_usec: Option<u64>,
    pub system_usec: Option<u64>,
    pub pids: Option<u64>,
    /// `some avg10` of memory.pressure / cpu.pressure (percent of time stalled).
    pub memory_pressure: Option<f64>,
    pub cpu_pressure: Option<f64>,
}

/// `key value` lines (memory.stat, cpu.stat).
fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok())?
    })
}

/// `some avg10=1.23 avg60=... total=...` → 1.23
fn pressure_some_avg10(text: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|f| f.strip_prefix("avg10="))
        .and_then(|v| v.parse().ok())
}

fn read_opt(dir: &Path, file: &str) -> Option<String> {
    fs::read_to_string(dir.join(file)).ok()
}

/// Read a cgroup. `Err(NotFound)` when the directory is gone; a directory that is not a
/// cgroup v2 one (no cgroup.procs) is an error too.
pub fn sample_cgroup(dir: &Path) -> io::Result<CgroupSample> {
    if !dir.join("cgroup.procs").exists() {
        return Err(if dir.exists() {
            io::Error::other(format!(
                "{} is not a cgroup v2 directory (no cgroup.procs)",
                dir.display()
            ))
        } else {
            io::Error::new(io::ErrorKind::NotFound, "cgroup is gone")
        });
    }
    let mut s = CgroupSample {
        memory_current: read_opt(dir, "memory.current").and_then(|t| t.trim().parse().ok()),
        pids: read_opt(dir, "pids.current").and_then(|t| t.trim().parse().ok()),
        ..CgroupSample::default()
    };
    if let Some(t) = read_opt(dir, "memory.stat") {
        s.anon = keyed(&t, "anon");
        s.file = keyed(&t, "file");
    }
    if let Some(t) = read_opt(dir, "cpu.stat") {
        s.usage_usec = keyed(&t, "usage_usec");
        s.user_usec = keyed(&t, "user_usec");
        s.system_usec = keyed(&t, "system_usec");
    }
    s.memory_pressure = read_opt(dir, "memory.pressure").and_then(|t| pressure_some_avg10(&t));
    s.cpu_pressure = read_opt(dir, "cpu.pressure").and_then(|t| pressure_some_avg10(&t));
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cgroup_files() {
        let d = std::env::temp_dir().join(format!("volley-cg-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("cgroup.procs"), "1\n").unwrap();
        fs::write(d.join("memory.current"), "1048576\n").unwrap();
        fs::write(d.join("memory.stat"), "anon 4096\nfile 8192\nanon_thp 0\n").unwrap();
        fs::write(
            d.join("cpu.stat"),
            "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n",
        )
        .unwrap();
        fs::write(
            d.join("memory.pressure"),
            "some avg10=1.50 avg60=0.00 avg300=0.00 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
        )
        .unwrap();
        let s = sample_cgroup(&d).unwrap();
        assert_eq!(s.memory_current, Some(1 << 20));
        assert_eq!((s.anon, s.file), (Some(4096), Some(8192)));
        assert_eq!(s.usage_usec, Some(1_500_000));
        assert_eq!(
            (s.user_usec, s.system_usec),
            (Some(1_000_000), Some(500_000))
        );
        assert_eq!(s.memory_pressure, Some(1.5));
        assert_eq!(s.cpu_pressure, None);
        fs::remove_dir_all(&d).unwrap();
        assert_eq!(
            sample_cgroup(&d).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }
}
