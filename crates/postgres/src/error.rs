//! [`Error`]: every way starting, using or stopping a cluster fails, each with what failed
//! and, where one helps, a hint.

use std::fmt;
use std::path::PathBuf;

/// The install hint shown when PostgreSQL's server binaries are missing.
pub const INSTALL_HINT: &str = "install PostgreSQL's server: `apt install postgresql` \
(Debian/Ubuntu), `dnf install postgresql-server` (Fedora), `brew install postgresql` (macOS); \
or put the directory holding `initdb` and `postgres` on PATH";

#[derive(Debug)]
pub enum Error {
    /// `initdb`/`postgres` not found; `searched` lists where we looked.
    NotInstalled {
        missing: &'static str,
        searched: Vec<PathBuf>,
    },
    /// A file or process operation failed.
    Io {
        context: String,
        source: std::io::Error,
    },
    /// A step (initdb, server start, readiness) failed; `detail` holds its output or log tail.
    Failed { step: String, detail: String },
    /// An SQL file failed: `location` is `file:line:column` when the server gave a position.
    Sql { location: String, message: String },
    /// A connection URL does not parse (`url` is redacted).
    Url {
        url: String,
        message: String,
        hint: &'static str,
    },
    /// A client operation (connect, query) failed.
    Client {
        context: String,
        source: postgres::Error,
    },
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }
    pub(crate) fn failed(step: impl Into<String>, detail: impl Into<String>) -> Error {
        Error::Failed {
            step: step.into(),
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotInstalled { missing, searched } => {
                let dirs: Vec<String> = searched.iter().map(|p| p.display().to_string()).collect();
                write!(f, "PostgreSQL's `{missing}` not found (searched PATH")?;
                if !dirs.is_empty() {
                    write!(f, ": {}", dirs.join(", "))?;
                }
                write!(f, ")\nhint: {INSTALL_HINT}")
            }
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::Failed { step, detail } => {
                write!(f, "{step}")?;
                if !detail.trim().is_empty() {
                    write!(f, "\n{}", detail.trim_end())?;
                }
                Ok(())
            }
            Error::Sql { location, message } => write!(f, "{location}: {message}"),
            Error::Url { url, message, hint } => write!(f, "{url}: {message}\nhint: {hint}"),
            Error::Client { context, source } => match source.as_db_error() {
                Some(db) => write!(f, "{context}: {}: {}", db.severity(), db.message()),
                None => {
                    // "error performing TLS handshake" alone hides the reason: show the chain.
                    write!(f, "{context}: {source}")?;
                    let mut cause = std::error::Error::source(source);
                    while let Some(c) = cause {
                        write!(f, ": {c}")?;
                        cause = c.source();
                    }
                    Ok(())
                }
            },
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Client { source, .. } => Some(source),
            _ => None,
        }
    }
}
