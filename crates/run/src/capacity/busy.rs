//! Is the load generator itself the limit? [`BusyWatch`] watches this process's threads
//! during a run (Linux: `/proc/self/task/*/schedstat`, each thread's time on a CPU and time
//! waiting for one) and reports how busy its busiest threads were: a worker thread that was
//! running *or runnable* for the whole window had more work than it could do. Counting the
//! wait for a CPU matters on a shared machine, where a starved generator uses little CPU yet
//! is still the bottleneck.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Per thread: running + runnable nanoseconds, at the first and the latest tick.
type Snap = HashMap<u32, u64>;

/// A run observer; read [`BusyWatch::share`] after the run.
pub struct BusyWatch {
    first: Option<(Instant, Snap)>,
    last: Option<(Instant, Snap)>,
    threads: usize,
    out: Arc<Mutex<Option<f64>>>,
}

impl BusyWatch {
    /// Watch for the `threads` busiest threads (the generator's workers).
    pub fn new(threads: usize) -> (BusyWatch, Arc<Mutex<Option<f64>>>) {
        let out = Arc::new(Mutex::new(None));
        (
            BusyWatch {
                first: None,
                last: None,
                threads: threads.max(1),
                out: out.clone(),
            },
            out,
        )
    }

    fn snap() -> Option<Snap> {
        let mut m = Snap::new();
        for e in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let Some(tid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(s) = std::fs::read_to_string(e.path().join("schedstat")) else {
                continue;
            };
            let mut f = s.split_whitespace().map(|v| v.parse::<u64>().unwrap_or(0));
            let (run, wait) = (f.next().unwrap_or(0), f.next().unwrap_or(0));
            m.insert(tid, run + wait);
        }
        (!m.is_empty()).then_some(m)
    }

    /// Mean busy share (0..1) of the busiest `threads` threads between the two snapshots.
    fn share(&self) -> Option<f64> {
        let ((t0, a), (t1, b)) = (self.first.as_ref()?, self.last.as_ref()?);
        let wall = t1.duration_since(*t0).as_nanos() as f64;
        if wall <= 0.0 {
            return None;
        }
        let mut busy: Vec<f64> = b
            .iter()
            .filter_map(|(tid, v)| Some(v.saturating_sub(*a.get(tid)?) as f64 / wall))
            .collect();
        busy.sort_by(|x, y| y.total_cmp(x));
        busy.truncate(self.threads);
        (!busy.is_empty()).then(|| (busy.iter().sum::<f64>() / busy.len() as f64).min(1.0))
    }
}

impl crate::Observer for BusyWatch {
    fn tick(&mut self, _tick: &volley_engine::vus::Tick<'_>) {
        if let Some(s) = Self::snap() {
            let now = (Instant::now(), s);
            if self.first.is_none() {
                self.first = Some(now);
            } else {
                self.last = Some(now);
            }
        }
    }

    fn ended(
        &mut self,
        _run: &volley_engine::vus::VuRunResult,
        _plan: &volley_engine::vus::VuPlan,
    ) {
        *self.out.lock().unwrap_or_else(|e| e.into_inner()) = self.share();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_spins_is_found_busy() {
        let (mut w, _) = BusyWatch::new(1);
        if BusyWatch::snap().is_none() {
            eprintln!("skipped: no /proc/self/task/*/schedstat here");
            return;
        }
        let stop = Instant::now() + std::time::Duration::from_millis(500);
        let spin = std::thread::spawn(move || {
            let mut x = 0u64;
            while Instant::now() < stop {
                x = x.wrapping_add(1);
            }
            std::hint::black_box(x);
        });
        // Both snapshots while the thread spins (it waits for a CPU on a busy machine, which
        // counts as busy too).
        std::thread::sleep(std::time::Duration::from_millis(50));
        w.first = Some((Instant::now(), BusyWatch::snap().unwrap()));
        std::thread::sleep(std::time::Duration::from_millis(300));
        w.last = Some((Instant::now(), BusyWatch::snap().unwrap()));
        spin.join().unwrap();
        let share = w.share().unwrap();
        assert!(
            share > 0.8,
            "a spinning thread is busy the whole window: {share}"
        );
    }
}
