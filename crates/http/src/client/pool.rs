//! A VU's idle keep-alive connections, by origin: at most one per origin is kept (a VU sends
//! one request at a time, as in k6; a batch's extra connections close), and at most
//! [`IDLE_MAX`] in all.

use std::net::SocketAddr;
use std::rc::Rc;

use crate::h1::Connection;

/// Idle connections a VU keeps at most (the oldest is closed beyond this).
pub const IDLE_MAX: usize = 64;

/// An idle keep-alive connection (boxed: it moves in and out of every request's future)
/// and the address it is connected to.
type Idle = (Rc<str>, Box<Connection>, Option<SocketAddr>);

#[derive(Default)]
pub struct Pool {
    /// By origin: prepared requests of one origin share its `Rc<str>`, found by pointer.
    idle: Vec<Idle>,
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

    /// Close every idle connection (`noVUConnectionReuse`, between iterations).
    pub fn clear(&mut self) {
        self.idle.clear();
    }

    pub fn len(&self) -> usize {
        self.idle.len()
    }

    pub fn is_empty(&self) -> bool {
        self.idle.is_empty()
    }
}
