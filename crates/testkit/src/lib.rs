//! volley-testkit: helpers that the tests of several crates need, kept out of the product
//! crates (this crate is only ever a dev-dependency).
//!
//! # Layout
//!
//! * `scratch` — [`Scratch`]: a temp directory removed when the test ends.
//! * `pki` — [`Pki`]: a throwaway CA with a server and a client certificate (rcgen).
//! * `front` — [`TlsFront`]: a TLS listener on loopback that counts the connections it
//!   accepts, optionally requires client certificates, and pipes each to a plain backend.

mod front;
mod pki;
mod scratch;

pub use front::{FrontConfig, TlsFront};
pub use pki::Pki;
pub use scratch::{scratch, Scratch, KEEP_ENV};
