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
    /// A child stops when its parent does, but stopping a child leaves the parent running.
    parent: Option<Arc<Flags>>,
}

impl Flags {
    fn get(&self, f: fn(&Flags) -> &AtomicBool) -> bool {
        f(self).load(Ordering::Relaxed) || self.parent.as_ref().is_some_and(|p| p.get(f))
    }
}

impl RunControl {
    pub fn new() -> Self {
        Self::default()
    }

    /// A control for one run inside a longer session (e.g. one A/B round): the run's own
    /// deadline stops only the child, while Ctrl-C on the parent stops every child.
    pub fn child(&self) -> RunControl {
        RunControl {
            inner: Arc::new(Flags {
                parent: Some(self.inner.clone()),
                ..Flags::default()
            }),
        }
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
        self.inner.get(|f| &f.stop)
    }

    pub fn is_hard_stopped(&self) -> bool {
        self.inner.get(|f| &f.hard)
    }

    pub fn was_interrupted(&self) -> bool {
        self.inner.get(|f| &f.interrupted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_follow_parents_not_the_reverse() {
        let parent = RunControl::new();
        let a = parent.child();
        a.stop();
        assert!(a.is_stopped() && !parent.is_stopped());
        let b = parent.child();
        assert!(!b.is_stopped());
        parent.interrupt();
        assert!(b.is_stopped() && b.was_interrupted() && !b.is_hard_stopped());
        parent.hard_stop();
        assert!(b.is_hard_stopped());
    }
}
