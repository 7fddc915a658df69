//! The resident memory of a live process tree, read from `/proc`.
//!
//! `wait4`'s `ru_maxrss` is the peak of the *largest single process* of the reaped tree (the
//! kernel keeps the maximum, not the sum, when it folds a child's usage into its parent), so
//! a shell running two 100 MiB workers side by side reports 100 MiB. Sampling the tree while
//! it runs and summing gives the whole tree's footprint; a process that lives shorter than
//! the sampling interval is missed, which is why the run reports the larger of the two.

use std::fs;

/// At most this many processes are summed per sample (a fork bomb must not make the sampler
/// allocate without bound).
const MAX_PROCS: usize = 4096;

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// Resident bytes of one process (`statm`'s second field), 0 when it is gone.
fn rss_of(pid: u32, page: u64) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/statm"))
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * page)
}

/// The children of every thread of `pid` (`/proc/PID/task/TID/children`).
fn children_of(pid: u32, out: &mut Vec<u32>) {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return;
    };
    for t in tasks.flatten() {
        let mut p = t.path();
        p.push("children");
        if let Ok(s) = fs::read_to_string(&p) {
            out.extend(s.split_whitespace().filter_map(|x| x.parse::<u32>().ok()));
        }
    }
}

/// Sums the resident memory of a process and all its descendants.
pub struct TreeSampler {
    root: u32,
    page: u64,
    /// The largest sum seen.
    pub peak: u64,
    pub samples: u64,
    /// `/proc/PID/task/*/children` exists (CONFIG_PROC_CHILDREN); without it only the root
    /// is seen.
    pub sees_children: bool,
    stack: Vec<u32>,
}

impl TreeSampler {
    pub fn new(root: u32) -> Self {
        TreeSampler {
            root,
            page: page_size(),
            peak: 0,
            samples: 0,
            sees_children: fs::metadata(format!("/proc/{root}/task/{root}/children")).is_ok(),
            stack: Vec::new(),
        }
    }

    /// Take one sample; returns the tree's resident bytes now.
    pub fn sample(&mut self) -> u64 {
        self.stack.clear();
        self.stack.push(self.root);
        let (mut sum, mut seen) = (0u64, 0usize);
        while let Some(pid) = self.stack.pop() {
            seen += 1;
            if seen > MAX_PROCS {
                break;
            }
            sum += rss_of(pid, self.page);
            children_of(pid, &mut self.stack);
        }
        self.samples += 1;
        self.peak = self.peak.max(sum);
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_resident_memory() {
        let mut t = TreeSampler::new(std::process::id());
        let now = t.sample();
        assert!(now > 100 * 1024, "{now}");
        assert_eq!(t.peak, now);
        assert_eq!(TreeSampler::new(u32::MAX - 1).sample(), 0);
    }
}
