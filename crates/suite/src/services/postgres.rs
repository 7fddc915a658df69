//! `kind = "postgres"`: the machine's own PostgreSQL (volley-postgres: initdb into a
//! throwaway data dir, the server on the suite's chosen loopback port, ready when a real
//! connection succeeds, `init_sql` run; stop = fast shutdown and the data dir removed).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the suite file asks for.
pub struct Spec<'a> {
    pub user: &'a str,
    pub database: &'a str,
    pub password: Option<&'a str>,
    pub port: u16,
    pub init_sql: Vec<PathBuf>,
    pub log: &'a Path,
    pub timeout: Duration,
}

/// A running cluster.
pub struct Pg(volley_postgres::Cluster);

/// The URL `${services.NAME.url}` gives, known before the cluster starts: `Cluster::url`'s,
/// percent-encoded the same way (a password with `@` or `/` would otherwise break the URL).
pub fn url(user: &str, password: Option<&str>, port: u16, database: &str) -> String {
    volley_postgres::cluster::url(user, password, port, database)
}

pub fn start(s: &Spec) -> Result<Pg, String> {
    // Missing binaries: volley-postgres's message names them and how to install them.
    volley_postgres::find_binaries().map_err(|e| e.to_string())?;
    let opts = volley_postgres::ClusterOptions {
        user: s.user.to_string(),
        database: s.database.to_string(),
        password: s.password.map(str::to_string),
        port: Some(s.port),
        data_dir: None,
        log_file: Some(s.log.to_path_buf()),
        init_sql: s.init_sql.clone(),
    };
    volley_postgres::Cluster::start(&opts, s.timeout)
        .map(Pg)
        .map_err(|e| format!("{e}{}", super::ready::log_tail(s.log)))
}

impl Pg {
    pub fn pid(&self) -> u32 {
        self.0.pid()
    }

    pub fn url(&self) -> String {
        self.0.url()
    }

    /// Runs an SQL file (a seed step); the error is `file:line:column: message` when the
    /// server gave a position.
    pub fn run_sql_file(&self, path: &Path) -> Result<(), String> {
        self.0.run_sql_file(path).map_err(|e| e.to_string())
    }

    pub fn stop(self) -> Result<(), String> {
        self.0.stop().map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    /// Regression: user, password and database went into the URL raw.
    #[test]
    fn url_parts_that_need_it_are_percent_encoded() {
        assert_eq!(
            super::url("app user", Some("p@ss:w/rd#1"), 5433, "shop db"),
            "postgres://app%20user:p%40ss%3Aw%2Frd%231@127.0.0.1:5433/shop%20db"
        );
        assert_eq!(
            super::url("volley", None, 5433, "volley"),
            "postgres://volley@127.0.0.1:5433/volley"
        );
    }
}
