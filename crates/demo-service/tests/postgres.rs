//! The demo service's integration tests again, on the PostgreSQL backend: the same test files,
//! compiled into this binary, where `common::start` gives each service its own database in a
//! throwaway `volley_postgres::Cluster` (SQLite, with a SKIP message, when PostgreSQL is not
//! installed). Same HTTP API, same assertions.

// Each included file declares its own `mod common;` (so it also builds as its own binary);
// here that makes one copy per file, each with its own shared cluster.
#![allow(clippy::duplicate_mod)]

#[path = "auth.rs"]
mod auth;
#[path = "bad_input.rs"]
mod bad_input;
#[path = "dav.rs"]
mod dav;
#[path = "files.rs"]
mod files;
#[path = "seed.rs"]
mod seed;
