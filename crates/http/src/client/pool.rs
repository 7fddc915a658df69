//! A VU's idle keep-alive connections, by origin: at most one per origin is kept (a VU sends
//! one request at a time, as in k6; a batch's extra connections close), and at most
//! [`IDLE_MAX`] in all. HTTP/2 connections (https origins whose server chose `h2`) are kept
//! apart: one per origin, shared by every request to it (a batch multiplexes on it); so are
//! the https dials in flight whose protocol is not known yet ([`Dialing`]), which the
//! origin's other new requests wait for.

use std::net::SocketAddr;
use std::rc::Rc;

use super::dialing::{Announce, Dialing};
use crate::h1::Connection;
use crate::http2::H2Connection;

/// Idle connections a VU keeps at most (the oldest is closed beyond this).
pub const IDLE_MAX: usize = 64;

/// An idle keep-alive connection (boxed: it moves in and out of every request's future)
/// and the address it is connected to.
type Idle = (Rc<str>, Box<Connection>, Option<SocketAddr>);

#[derive(Default)]
pub struct Pool {
    /// By origin: prepared requests of one origin share its `Rc<str>`, found by pointer.
    idle: Vec<Idle>,
    h2: Vec<(Rc<str>, H2Connection, Option<SocketAddr>)>,
    dialing: Vec<(Rc<str>, Rc<Dialing>)>,
}

impl Pool {
    /// The idle connection to `origin`, if there is one.
    pub fn take(&mut self, origin: &Rc<str>) -> Option<(Box<Connection>, Option<SocketAddr>)> {
        let i = self
            .idle
            .iter()
            .position(|(o, ..)| Rc::ptr_eq(o, origin) || **o == **origin)?;
        let (_, c, a) = self.idle.swap_remove(i);
        Some((c, a))
    }

    pub fn put(&mut self, origin: Rc<str>, c: Box<Connection>, a: Option<SocketAddr>) {
        if self.idle.len() >= IDLE_MAX {
            self.idle.remove(0);
        }
        self.idle.push((origin, c, a));
    }

    /// The HTTP/2 connection to `origin`, if there is one still open (it stays here).
    pub fn h2(&mut self, origin: &Rc<str>) -> Option<(H2Connection, Option<SocketAddr>)> {
        if self.h2.is_empty() {
            return None;
        }
        self.h2.retain(|(_, c, _)| !c.is_closed());
        let (_, c, a) = self
            .h2
            .iter()
            .find(|(o, ..)| Rc::ptr_eq(o, origin) || **o == **origin)?;
        Some((c.clone(), *a))
    }

    /// Keep `c` as `origin`'s HTTP/2 connection (replacing another one).
    pub fn put_h2(&mut self, origin: Rc<str>, c: H2Connection, a: Option<SocketAddr>) {
        self.h2.retain(|(o, ..)| **o != *origin);
        if self.h2.len() >= IDLE_MAX {
            self.h2.remove(0);
        }
        self.h2.push((origin, c, a));
    }

    /// Whether an idle HTTP/1.1 connection to `origin` is kept (the origin spoke HTTP/1.1).
    pub fn has_idle(&self, origin: &Rc<str>) -> bool {
        self.idle
            .iter()
            .any(|(o, ..)| Rc::ptr_eq(o, origin) || **o == **origin)
    }

    /// The dial to `origin` still waiting for its protocol, if there is one.
    pub fn dialing(&mut self, origin: &Rc<str>) -> Option<Rc<Dialing>> {
        if self.dialing.is_empty() {
            return None;
        }
        self.dialing.retain(|(_, d)| d.is_pending());
        let (_, d) = self
            .dialing
            .iter()
            .find(|(o, _)| Rc::ptr_eq(o, origin) || **o == **origin)?;
        Some(d.clone())
    }

    /// A new https dial to `origin`: the origin's next new requests wait for what it says.
    pub fn start_dialing(&mut self, origin: Rc<str>) -> Announce {
        let d = Dialing::new();
        self.dialing.retain(|(_, d)| d.is_pending());
        self.dialing.push((origin, d.clone()));
        Announce(d)
    }

    /// Free the buffers of the idle HTTP/1 connections (kept open): the bytes freed.
    pub fn release_buffers(&mut self) -> usize {
        self.idle
            .iter_mut()
            .map(|(_, c, _)| c.release_buffers())
            .sum()
    }

    /// Close every idle connection (`noVUConnectionReuse`, between iterations).
    pub fn clear(&mut self) {
        self.idle.clear();
        self.h2.clear();
        self.dialing.clear();
    }

    pub fn len(&self) -> usize {
        self.idle.len()
    }

    pub fn is_empty(&self) -> bool {
        self.idle.is_empty()
    }
}
