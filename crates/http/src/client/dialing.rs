//! One new https connection per origin at a time, as long as it may turn out to be HTTP/2.
//!
//! A VU's first requests to an https origin (`http.batch` of N requests, or several
//! `asyncRequest`s) do not know yet whether the server speaks `h2`. k6 (Go's net/http) dials
//! one TLS connection per concurrent request, and when ALPN says `h2` keeps the first and
//! closes the others unused, so every request ends up multiplexed on one connection
//! ("two goroutines made requests to the same host at the same time, both kicking off TCP
//! dials" in net/http's `upgradeFn`). Volley gets the same one connection without the extra
//! handshakes: the first request dials and announces what ALPN chose ([`Announce`]); the
//! others wait for it ([`Dialing::outcome`]) and then share the h2 connection, or — when the
//! server chose HTTP/1.1, or the dial failed — dial their own, since HTTP/1.1 carries one
//! request at a time.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;

use tokio::sync::Notify;

use crate::http2::H2Connection;

enum State {
    Pending,
    H2(H2Connection, Option<SocketAddr>),
    /// HTTP/1.1 (or no connection at all): each request needs its own.
    Own,
}

/// A dial in flight to one origin, shared by the requests waiting for it.
pub struct Dialing {
    state: RefCell<State>,
    done: Notify,
}

impl Dialing {
    pub fn new() -> Rc<Dialing> {
        Rc::new(Dialing {
            state: RefCell::new(State::Pending),
            done: Notify::new(),
        })
    }

    /// Still dialling (neither an h2 connection nor "dial your own" yet).
    pub fn is_pending(&self) -> bool {
        matches!(*self.state.borrow(), State::Pending)
    }

    /// The h2 connection it made (while open) and its address, or `None`: dial your own.
    pub async fn outcome(&self) -> Option<(H2Connection, Option<SocketAddr>)> {
        loop {
            let notified = self.done.notified();
            tokio::pin!(notified);
            // Registered before the check, so an announcement in between is not missed.
            notified.as_mut().enable();
            match &*self.state.borrow() {
                State::Pending => {}
                State::H2(c, a) => return (!c.is_closed()).then(|| (c.clone(), *a)),
                State::Own => return None,
            }
            notified.await;
        }
    }

    fn resolve(&self, s: State) {
        let mut st = self.state.borrow_mut();
        if matches!(*st, State::Pending) {
            *st = s;
            drop(st);
            self.done.notify_waiters();
        }
    }
}

/// The dialling request's side: says what ALPN chose. Dropped without a word (the dial
/// failed, timed out or was cancelled), it tells the waiters to dial their own.
pub struct Announce(pub Rc<Dialing>);

impl Announce {
    pub fn h2(&self, c: &H2Connection, addr: Option<SocketAddr>) {
        self.0.resolve(State::H2(c.clone(), addr));
    }

    pub fn own(&self) {
        self.0.resolve(State::Own);
    }
}

impl Drop for Announce {
    fn drop(&mut self) {
        self.0.resolve(State::Own);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn waiters_learn_the_outcome_or_to_dial_their_own_when_the_dialer_gives_up() {
        let d = Dialing::new();
        let a = Announce(d.clone());
        assert!(d.is_pending());
        a.own();
        assert!(!d.is_pending());
        assert!(d.outcome().await.is_none());
        // A dialer dropped unannounced releases its waiters too.
        let d = Dialing::new();
        let a = Announce(d.clone());
        let (d2, waiting) = (d.clone(), tokio::task::LocalSet::new());
        let got = waiting.run_until(async move {
            let w = tokio::task::spawn_local(async move { d2.outcome().await.is_none() });
            tokio::task::yield_now().await;
            drop(a);
            w.await.unwrap()
        });
        assert!(got.await);
    }
}
