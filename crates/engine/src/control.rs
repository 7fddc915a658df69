//! Stop switches shared between a run, its timers and signal handlers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Cheap to clone; every clone controls the same run.
#[derive(Clone, Default, Debug)]
pub struct RunControl {
    inner: Arc<Flags>,
}

#[derive(Default, Debug)]
struct Flags {
    stop: AtomicBool,
    hard: AtomicBool,
    interrupted: AtomicBool,
}

impl RunControl {
    pub fn new() -> Self {
        Self::default()
    }

    /// Start no new requests; in-flight ones finish or time out.
    pub fn stop(&self) {
        self.inner.stop.store(true, Ordering::Relaxed);
    }

    /// Like [`stop`](Self::stop), and remember that the user asked for it (Ctrl-C).
    pub fn interrupt(&self) {
        self.inner.interrupted.store(true, Ordering::Relaxed);
        self.stop();
    }

    /// Abandon in-flight requests too (second Ctrl-C). Results recorded so far are kept.
    pub fn hard_stop(&self) {
        self.inner.hard.store(true, Ordering::Relaxed);
        self.interrupt();
    }

    #[inline]
    pub fn is_stopped(&self) -> bool {
        self.inner.stop.load(Ordering::Relaxed)
    }

    pub fn is_hard_stopped(&self) -> bool {
        self.inner.hard.load(Ordering::Relaxed)
    }

    pub fn was_interrupted(&self) -> bool {
        self.inner.interrupted.load(Ordering::Relaxed)
    }
}
