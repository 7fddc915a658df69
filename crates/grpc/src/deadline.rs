//! Unary calls' deadlines without a timer per call: each connection keeps one tokio `Sleep`
//! that a call borrows for its duration. A borrowed timer set for a later instant is moved
//! earlier; one set for an earlier instant (a previous call's deadline) is left alone, and
//! when it fires before this call's deadline it is set again. Load tests repeat calls with
//! one timeout (k6's default: 2 minutes), so the timer is armed about once per timeout
//! instead of registered and removed in the runtime's timer wheel on every call (a lock and
//! a wheel update each way, plus a runtime-handle clone).
//!
//! Calls that find the timer borrowed (concurrent calls on one connection) use
//! `tokio::time::timeout_at` as before. The outcome is the same either way: `None` once
//! `deadline` has passed, else the call's output.

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::Mutex;
use std::task::Poll;
use tokio::time::{Instant, Sleep};

/// A connection's reusable timer.
#[derive(Default)]
pub(crate) struct Timer(Mutex<Slot>);

#[derive(Default)]
enum Slot {
    /// Not made yet (made inside the runtime, at the first call).
    #[default]
    Unmade,
    Free(Pin<Box<Sleep>>),
    Borrowed,
}

/// The borrowed timer; goes back to its connection when the call ends or is dropped.
struct Lease<'a> {
    home: &'a Timer,
    /// Always `Some` until dropped.
    sleep: Option<Pin<Box<Sleep>>>,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let (Some(sleep), Ok(mut s)) = (self.sleep.take(), self.home.0.lock()) {
            *s = Slot::Free(sleep);
        }
    }
}

impl Timer {
    fn borrow(&self, deadline: Instant) -> Option<Lease<'_>> {
        let mut s = self.0.lock().ok()?;
        let sleep = match std::mem::replace(&mut *s, Slot::Borrowed) {
            Slot::Free(sleep) => sleep,
            Slot::Unmade => Box::pin(tokio::time::sleep_until(deadline)),
            Slot::Borrowed => return None,
        };
        Some(Lease {
            home: self,
            sleep: Some(sleep),
        })
    }

    /// `fut`'s output, or `None` when `deadline` passes first.
    pub(crate) async fn within<F: Future>(&self, deadline: Instant, fut: F) -> Option<F::Output> {
        let mut lease = self.borrow(deadline);
        let Some(sleep) = lease.as_mut().and_then(|l| l.sleep.as_mut()) else {
            return tokio::time::timeout_at(deadline, fut).await.ok();
        };
        if sleep.deadline() > deadline {
            sleep.as_mut().reset(deadline);
        }
        let mut fut = pin!(fut);
        poll_fn(|cx| {
            if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                return Poll::Ready(Some(v));
            }
            // A timer that fired for an earlier deadline is set again for this one.
            while sleep.as_mut().poll(cx).is_ready() {
                if Instant::now() >= deadline {
                    return Poll::Ready(None);
                }
                sleep.as_mut().reset(deadline);
            }
            Poll::Pending
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    const MS: Duration = Duration::from_millis(1);

    /// `f` timed out at its deadline: not before it, and well before the work would end.
    async fn times_out<F: Future>(t: &Timer, after: u32, f: F) {
        let start = Instant::now();
        assert!(t.within(start + MS * after, f).await.is_none());
        let took = start.elapsed();
        assert!(took >= MS * after && took < MS * 900, "{took:?}");
    }

    #[test]
    fn each_call_keeps_its_own_deadline_with_one_timer() {
        rt().block_on(async {
            let t = Timer::default();
            // A long deadline first arms the timer late; a shorter one after it still
            // fires on time, and a call that ends first gets its output.
            let long = t.within(Instant::now() + MS * 10_000, async { 1 }).await;
            assert_eq!(long, Some(1));
            times_out(&t, 50, tokio::time::sleep(MS * 1_000)).await;
            // The timer is now set for an earlier instant than the next deadline: it fires
            // first, is set again, and the call still runs to its own end or deadline.
            let r = t
                .within(Instant::now() + MS * 300, tokio::time::sleep(MS * 30))
                .await;
            assert_eq!(r, Some(()));
            times_out(&t, 60, tokio::time::sleep(MS * 1_000)).await;
        });
    }

    #[test]
    fn concurrent_calls_and_dropped_calls_keep_their_deadlines() {
        rt().block_on(async {
            let t = Timer::default();
            // Two at once: the second finds the timer borrowed and uses its own.
            let start = Instant::now();
            let (a, b) = tokio::join!(
                t.within(start + MS * 30, tokio::time::sleep(MS * 1_000)),
                t.within(start + MS * 500, tokio::time::sleep(MS * 60)),
            );
            assert_eq!((a, b), (None, Some(())));
            assert!(start.elapsed() < MS * 900);
            // A call dropped midway gives the timer back.
            let never = std::future::pending::<()>();
            let dropped = tokio::time::timeout(MS * 5, t.within(start + MS * 5_000, never));
            assert!(dropped.await.is_err());
            assert!(matches!(*t.0.lock().unwrap(), Slot::Free(_)));
            times_out(&t, 20, std::future::pending::<()>()).await;
        });
    }
}
