//! A target with a known capacity (`volley target --workers N --delay MS`): at most N requests
//! are in service at once, each held for the delay, so the target serves N × 1000 / MS
//! requests per second and requests beyond that queue (latency climbs as queueing theory
//! says). `--fail-above RPS` makes it answer 500 while the arrival rate is above RPS, for
//! tests of a target that breaks under load.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Most workers (each is an instant in a list scanned per request).
const MAX_WORKERS: usize = 4096;

/// The capacity knobs ([`crate::spawn_limited`], [`crate::run_blocking_limited`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    /// At most this many requests in service at once (the rest wait in arrival order).
    pub workers: Option<usize>,
    /// Answer 500 while more than this many requests per second arrive.
    pub fail_above: Option<f64>,
}

/// Shared by all connections of a target with [`Limits`].
///
/// The workers run on virtual time: each remembers when it is next free, and an arriving
/// request takes the worker free first, starting at that time (or now) and ending `delay`
/// later. A sleeping task wakes a little late (timer ticks, a busy machine), but that lateness
/// does not delay the next request, so the capacity is exactly N × 1000 / MS and the queue
/// is first come, first served.
pub(crate) struct Gate {
    /// When each worker is next free.
    workers: Option<Mutex<Vec<tokio::time::Instant>>>,
    fail_above: Option<f64>,
    /// Arrivals in the current and the previous one-second window.
    window: Mutex<Window>,
}

struct Window {
    start: Instant,
    current: u64,
    previous: u64,
}

impl Gate {
    pub(crate) fn new(l: Limits) -> Option<Gate> {
        if l.workers.is_none() && l.fail_above.is_none() {
            return None;
        }
        Some(Gate {
            workers: l
                .workers
                .map(|n| Mutex::new(vec![tokio::time::Instant::now(); n.clamp(1, MAX_WORKERS)])),
            fail_above: l.fail_above,
            window: Mutex::new(Window {
                start: Instant::now(),
                current: 0,
                previous: 0,
            }),
        })
    }

    /// Count an arrival; true when the arrival rate is above `fail_above`.
    pub(crate) fn overloaded(&self) -> bool {
        let Some(limit) = self.fail_above else {
            return false;
        };
        let mut w = self.window.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let mut age = now.duration_since(w.start);
        if age >= Duration::from_secs(2) {
            (w.previous, w.current, w.start) = (0, 0, now);
            age = Duration::ZERO;
        } else if age >= Duration::from_secs(1) {
            w.previous = w.current;
            w.current = 0;
            w.start += Duration::from_secs(1);
            age -= Duration::from_secs(1);
        }
        w.current += 1;
        // A sliding one-second window: the previous window weighted by how much of it is
        // still inside the last second.
        let rate = w.previous as f64 * (1.0 - age.as_secs_f64()) + w.current as f64;
        rate > limit
    }

    /// Wait for a free worker and hold it for `delay` (a worker is busy for the whole service
    /// time, as a thread of a thread-per-request server).
    pub(crate) async fn serve(&self, delay: Option<Duration>) {
        let delay = delay.unwrap_or_default();
        let end = match &self.workers {
            Some(w) => {
                let mut free = w.lock().unwrap_or_else(|e| e.into_inner());
                let now = tokio::time::Instant::now();
                let (i, at) = free
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, t)| **t)
                    .map(|(i, t)| (i, *t))
                    .unwrap_or((0, now));
                let end = at.max(now) + delay;
                if let Some(slot) = free.get_mut(i) {
                    *slot = end;
                }
                end
            }
            None => tokio::time::Instant::now() + delay,
        };
        tokio::time::sleep_until(end).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arrival_rate_is_judged_over_the_last_second() {
        let g = Gate::new(Limits {
            workers: None,
            fail_above: Some(5.0),
        })
        .unwrap();
        let first: Vec<bool> = (0..8).map(|_| g.overloaded()).collect();
        assert_eq!(first.iter().filter(|o| !**o).count(), 5, "{first:?}");
        assert!(first[5..].iter().all(|o| *o));
        assert!(Gate::new(Limits::default()).is_none());
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn workers_bound_the_requests_in_service() {
        let g = std::sync::Arc::new(
            Gate::new(Limits {
                workers: Some(2),
                fail_above: None,
            })
            .unwrap(),
        );
        let start = tokio::time::Instant::now();
        let tasks: Vec<_> = (0..6)
            .map(|_| {
                let g = g.clone();
                tokio::spawn(async move { g.serve(Some(Duration::from_millis(10))).await })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        // 6 requests, 2 at a time, 10 ms each: three rounds.
        assert_eq!(start.elapsed(), Duration::from_millis(30));
    }
}
