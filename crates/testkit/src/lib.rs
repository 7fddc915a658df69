//! volley-testkit: helpers that the tests of several crates need, kept out of the product
//! crates (this crate is only ever a dev-dependency).
//!
//! # Layout
//!
//! * `scratch` — [`Scratch`]: a temp directory removed when the test ends.

mod scratch;

pub use scratch::{scratch, Scratch, KEEP_ENV};
