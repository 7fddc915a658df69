//! When a VU's call must give up: [`StopToken`]s and the per-worker wake-ups behind them.
//!
//! Three kinds of stop reach a call. A scenario's end plus its `gracefulStop` (or a ramp-down
//! plus `gracefulRampDown`) cuts everything the iteration waits on. The user's Ctrl-C/SIGTERM
//! ([`RunControl::interrupt`]) ends *idle* waits (`sleep`, timers) and busy scripts at once
//! and gives requests already in flight a short grace ([`INTERRUPT_GRACE`], at most the
//! scenario's `gracefulStop`). A hard stop (second Ctrl-C) cuts everything at once.

use crate::control::{RunControl, INTERRUPT_GRACE};
use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How often a token without a watcher (setup, teardown) looks at its deadlines.
const POLL: Duration = Duration::from_millis(20);

/// Tells a call that it must give up what it waits on (see the module docs).
#[derive(Clone, Debug)]
pub struct StopToken {
    pub(super) hard_at: Option<Instant>,
    /// `hard_at` comes before the scenario's own hard stop (a ramp-down), so waiting needs a
    /// timer; otherwise the worker's watcher wakes `wake` at the scenario's hard stop, which
    /// spares every request a timer of its own.
    pub(super) own_timer: bool,
    pub(super) global: Arc<AtomicBool>,
    pub(super) wake: Rc<HardStop>,
    /// Fired by the watcher when the user interrupts.
    pub(super) soft_wake: Rc<HardStop>,
    pub(super) ctl: RunControl,
    /// An interrupt ends idle waits and busy scripts at once (iterations, setup); teardown
    /// (`false`) still gets the grace for all of it, as k6 runs teardown after Ctrl-C.
    pub(super) soft: bool,
    /// How long requests in flight may take after an interrupt.
    pub(super) grace: Duration,
    /// When the call began (teardown's grace counts from here when it starts after Ctrl-C).
    pub(super) begun: Instant,
    /// No watcher fires `wake`/`soft_wake` for this token: poll (setup, teardown).
    pub(super) poll: bool,
}

/// A stop as a worker's watcher saw it.
#[derive(Debug, Default)]
pub(super) struct HardStop {
    pub(super) notify: Notify,
    /// Set by the watcher when it wakes `notify`.
    pub(super) fired: Cell<bool>,
}

impl HardStop {
    pub(super) fn fire(&self) {
        self.fired.set(true);
        self.notify.notify_waiters();
    }

    async fn fired(&self) {
        loop {
            let n = self.notify.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if self.fired.get() {
                return;
            }
            n.await;
        }
    }
}

impl StopToken {
    /// A token for setup (`soft`) or teardown: gives up at `begun + timeout`, on a hard stop,
    /// or [`INTERRUPT_GRACE`] after an interrupt.
    pub(super) fn lifecycle(ctl: RunControl, timeout: Duration, soft: bool) -> StopToken {
        let begun = Instant::now();
        StopToken {
            hard_at: begun.checked_add(timeout),
            own_timer: true,
            global: Arc::new(AtomicBool::new(false)),
            wake: Rc::default(),
            soft_wake: Rc::default(),
            ctl,
            soft,
            grace: INTERRUPT_GRACE,
            begun,
            poll: true,
        }
    }

    /// Everything must be given up now: cheap enough for a JS interrupt handler (atomic
    /// loads and a clock read; the clock, not the watcher's flag: a busy script keeps the
    /// watcher from running).
    pub fn is_stopped(&self) -> bool {
        if self.global.load(Ordering::Relaxed) || self.wake.fired.get() {
            return true;
        }
        let now = Instant::now();
        self.hard_at.is_some_and(|t| now >= t) || self.grace_over(now)
    }

    /// The user interrupted and this call must end its idle waits and busy code now.
    #[inline]
    pub fn is_interrupted(&self) -> bool {
        self.soft && self.ctl.was_interrupted()
    }

    /// The call should end now: stopped, or interrupted (for the JS interrupt handler).
    pub fn must_end(&self) -> bool {
        self.is_interrupted() || self.is_stopped()
    }

    /// The timeout (`hard_at`) passed before any interrupt: setup/teardown timed out.
    pub fn timed_out(&self) -> bool {
        let Some(t) = self.hard_at else {
            return false;
        };
        Instant::now() >= t && self.ctl.interrupted_at().is_none_or(|i| i >= t)
    }

    fn grace_over(&self, now: Instant) -> bool {
        self.ctl.is_hard_stopped()
            || self
                .ctl
                .interrupted_at()
                .is_some_and(|t| now >= t.max(self.begun) + self.grace)
    }

    /// [`StopToken::is_stopped`] as the watcher saw it: no clock read unless this token has
    /// a deadline of its own. For waits, which let the watcher run.
    fn is_stopped_waiting(&self) -> bool {
        self.global.load(Ordering::Relaxed)
            || self.wake.fired.get()
            || (self.own_timer && self.hard_at.is_some_and(|t| Instant::now() >= t))
    }

    /// Completes when the token is stopped (at the latest one watcher tick, 20 ms, after
    /// [`StopToken::is_stopped`] became true). Every request of a VU waits on this beside its
    /// own future, so it reads no clock in the common case.
    ///
    /// The rare cases (polling, a deadline of its own) are boxed: this future lives in every
    /// VU's task while it waits, so its size is paid per VU (docs/vus.md, "Outside QuickJS").
    pub async fn stopped(&self) {
        if self.poll {
            return Box::pin(async {
                while !self.is_stopped() {
                    tokio::time::sleep(POLL).await;
                }
            })
            .await;
        }
        loop {
            let n = self.wake.notify.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if self.is_stopped_waiting() {
                return;
            }
            match self.hard_at.filter(|_| self.own_timer) {
                Some(t) => {
                    Box::pin(async {
                        tokio::select! {
                            _ = n => {}
                            _ = tokio::time::sleep_until(t.into()) => {}
                        }
                    })
                    .await
                }
                None => n.await,
            }
        }
    }

    /// Completes when an idle wait (`sleep`, a timer) must end: the token is stopped, or the
    /// user interrupted (within a watcher tick).
    /// Every sleeping VU's task holds this future: the rare cases are boxed, as in
    /// [`StopToken::stopped`].
    pub async fn interrupted(&self) {
        if !self.soft {
            return Box::pin(self.stopped()).await;
        }
        if self.poll {
            return Box::pin(async {
                while !self.must_end() {
                    tokio::time::sleep(POLL).await;
                }
            })
            .await;
        }
        if self.own_timer {
            // A ramp-down's own deadline (rare): its timer beside the interrupt.
            return Box::pin(async {
                tokio::select! {
                    _ = self.stopped() => {}
                    _ = self.soft_wake.fired() => {}
                }
            })
            .await;
        }
        // One registration per sleep: the watcher wakes `soft_wake` at the interrupt and at
        // every hard stop it fires, and each wake-up checks both.
        loop {
            let n = self.soft_wake.notify.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if self.ctl.was_interrupted() || self.is_stopped_waiting() {
                return;
            }
            n.await;
        }
    }
}
