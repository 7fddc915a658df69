//! volley-postgres: a throwaway PostgreSQL cluster from the machine's own binaries.
//!
//! `volley suite`'s `kind = "postgres"` services, the demo service's PostgreSQL tests and the
//! run history's tests need a real server without Docker: [`Cluster::start`] runs `initdb`
//! into a temporary data dir, starts `postgres` on a free 127.0.0.1 port (its unix socket
//! inside the data dir, so no `/var/run/postgresql` is needed), waits for a real connection,
//! creates the database and runs the init SQL files. [`Cluster::stop`] (or dropping it) does a
//! fast shutdown and removes a temporary data dir.
//!
//! `initdb` and `postgres` refuse to run as root; as root (containers, CI) both run as the
//! `postgres` system user when it exists, else `nobody`, and the data dir is chowned to it.
//!
//! # Layout
//!
//! - this file: the public API re-exported, and [`ClusterOptions`].
//! - [`binaries`]: finding `initdb`/`postgres` (PATH, then `/usr/lib/postgresql/*/bin`).
//! - [`cluster`]: [`Cluster`]'s lifecycle (initdb, start, readiness, SQL, stop).
//! - [`connect`]: clients by URL (`sslmode`, `sslrootcert`, defaults, redaction), for any
//!   server — the history and the demo service connect through it.
//! - [`tls`]: rustls connectors for `require`, `verify-ca` and `verify-full`.
//! - [`error`]: [`Error`], whose messages name what failed and a hint.
//! - [`user`]: the unprivileged account the server runs as when we are root.

pub mod binaries;
pub mod cluster;
pub mod connect;
pub mod error;
pub mod tls;
pub mod user;

pub use binaries::{find_binaries, PgBinaries};
pub use cluster::Cluster;
pub use connect::{connect, redact};
pub use error::Error;
/// The client crate, re-exported so users connect with the same version.
pub use postgres;

use std::path::PathBuf;

/// What [`Cluster::start`] sets up.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// The superuser `initdb` creates (and the URL's user).
    pub user: String,
    /// The database created after start (and the URL's database).
    pub database: String,
    /// `Some`: password (SCRAM-SHA-256) logins over TCP; `None`: trust on loopback.
    pub password: Option<String>,
    /// `None`: a free loopback port.
    pub port: Option<u16>,
    /// `None`: a temporary dir, removed on stop. An existing cluster dir (with `PG_VERSION`)
    /// is reused without `initdb`; a given dir is never removed.
    pub data_dir: Option<PathBuf>,
    /// The server's stdout/stderr; `None`: `volley-postgres.log` in the data dir.
    pub log_file: Option<PathBuf>,
    /// SQL files run in order against the database after it is created.
    pub init_sql: Vec<PathBuf>,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            user: "volley".into(),
            database: "volley".into(),
            password: None,
            port: None,
            data_dir: None,
            log_file: None,
            init_sql: Vec::new(),
        }
    }
}
