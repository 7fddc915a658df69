//! Connecting to any PostgreSQL by URL: `postgres://user:password@host:port/db?sslmode=…`.
//!
//! The `postgres` crate parses the URL and does every login method (trust, password, MD5,
//! SCRAM-SHA-256 with channel binding); this module adds what it lacks: libpq's
//! `sslmode=verify-ca|verify-full` and `sslrootcert=FILE` (TLS is rustls, [`crate::tls`]),
//! the old history client's defaults (user `postgres`), a connect timeout, and a redacted
//! form of the URL for messages.

use crate::error::Error;
use crate::tls::{self, Verify};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// libpq's `sslmode` values (`allow` is treated as `prefer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// A parsed connection URL.
#[derive(Clone, Debug)]
pub struct Target {
    pub config: postgres::Config,
    pub ssl_mode: SslMode,
    /// `sslrootcert`: a PEM file of trusted CAs (else the webpki roots).
    pub root_cert: Option<PathBuf>,
}

const URL_HINT: &str = "postgres://user:password@host:port/db (options: ?sslmode=disable|prefer|require|verify-ca|verify-full&sslrootcert=ca.pem)";

/// Parses `url`; errors name the (redacted) URL and the accepted shape.
pub fn parse_url(url: &str) -> Result<Target, Error> {
    let bad = |message: String| Error::Url {
        url: redact(url),
        message,
        hint: URL_HINT,
    };
    if !url.starts_with("postgres://") && !url.starts_with("postgresql://") {
        return Err(bad("not a postgres:// URL".into()));
    }
    // Take out what the postgres crate does not know (verify-*, sslrootcert), pass the rest.
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut kept = Vec::new();
    let (mut ssl_mode, mut root_cert) = (SslMode::Prefer, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => {
                ssl_mode = match value {
                    "disable" => SslMode::Disable,
                    "allow" | "prefer" => SslMode::Prefer,
                    "require" => SslMode::Require,
                    "verify-ca" => SslMode::VerifyCa,
                    "verify-full" => SslMode::VerifyFull,
                    other => return Err(bad(format!("unknown sslmode {other:?}"))),
                }
            }
            "sslrootcert" => root_cert = Some(PathBuf::from(percent_decode(value))),
            _ => kept.push(pair),
        }
    }
    let rest = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    let mut config = postgres::Config::from_str(&rest).map_err(|e| bad(e.to_string()))?;
    if config.get_hosts().is_empty() {
        config.host("localhost");
    }
    if config.get_user().is_none() {
        config.user("postgres");
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(10));
    }
    if config.get_application_name().is_none() {
        config.application_name("volley");
    }
    // libpq: a root certificate with sslmode=require verifies the chain (as verify-ca).
    if ssl_mode == SslMode::Require && root_cert.is_some() {
        ssl_mode = SslMode::VerifyCa;
    }
    config.ssl_mode(match ssl_mode {
        SslMode::Disable => postgres::config::SslMode::Disable,
        SslMode::Prefer => postgres::config::SslMode::Prefer,
        _ => postgres::config::SslMode::Require,
    });
    Ok(Target {
        config,
        ssl_mode,
        root_cert,
    })
}

/// Connects to `url` (TLS per its `sslmode`, `prefer` by default as libpq).
pub fn connect(url: &str) -> Result<postgres::Client, Error> {
    let target = parse_url(url)?;
    let context = format!("cannot connect to {}", redact(url));
    let client = match target.ssl_mode {
        SslMode::Disable => target.config.connect(postgres::NoTls),
        mode => {
            let verify = match mode {
                SslMode::VerifyFull => Verify::Full,
                SslMode::VerifyCa => Verify::Chain,
                _ => Verify::Nothing,
            };
            let tls = tls::connector(verify, target.root_cert.as_deref())?;
            target.config.connect(tls)
        }
    };
    client.map_err(|source| Error::Client { context, source })
}

/// `postgres://user@host:port/db` — the URL without its password (or `postgres://...` when
/// it does not parse), for messages.
pub fn redact(url: &str) -> String {
    let rest = url.split_once('?').map_or(url, |(b, _)| b);
    let Ok(c) = postgres::Config::from_str(rest) else {
        return "postgres://...".into();
    };
    let host = match c.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) if h.contains(':') => format!("[{h}]"),
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        Some(postgres::config::Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = c.get_ports().first().copied().unwrap_or(5432);
    let user = c.get_user().unwrap_or("postgres");
    let db = c.get_dbname().unwrap_or(user);
    format!("postgres://{user}@{host}:{port}/{db}")
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = (b[i] == b'%').then(|| s.get(i + 1..i + 3)).flatten();
        if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_defaults_and_redact() {
        let t = parse_url("postgres://bob:s%40cret@127.0.0.1:5433/hist").unwrap();
        assert_eq!(t.config.get_user(), Some("bob"));
        assert_eq!(t.config.get_password(), Some(&b"s@cret"[..]));
        assert_eq!(t.config.get_ports(), &[5433]);
        assert_eq!(t.config.get_dbname(), Some("hist"));
        assert_eq!(t.ssl_mode, SslMode::Prefer);
        assert_eq!(redact("postgres://a:pw@h:1/d"), "postgres://a@h:1/d");
        assert_eq!(
            redact("postgresql://me@[::1]/"),
            "postgres://me@[::1]:5432/me"
        );
        let t = parse_url("postgres://db.local/x").unwrap();
        assert_eq!(t.config.get_user(), Some("postgres"));
    }

    #[test]
    fn ssl_modes_and_root_cert() {
        let mode = |q: &str| {
            parse_url(&format!("postgres://u@h/d?{q}"))
                .unwrap()
                .ssl_mode
        };
        assert_eq!(mode("sslmode=disable"), SslMode::Disable);
        assert_eq!(mode("sslmode=require"), SslMode::Require);
        assert_eq!(
            mode("sslmode=verify-full&application_name=x"),
            SslMode::VerifyFull
        );
        assert_eq!(
            mode("sslmode=require&sslrootcert=%2Ftmp%2Fca.pem"),
            SslMode::VerifyCa
        );
        let t = parse_url("postgres://u@h/d?sslrootcert=/tmp/ca.pem&sslmode=verify-ca").unwrap();
        assert_eq!(
            t.root_cert.as_deref(),
            Some(std::path::Path::new("/tmp/ca.pem"))
        );
    }

    #[test]
    fn bad_urls_name_the_problem_without_the_password() {
        for (url, says) in [
            ("postgres://u:pw@127.0.0.1:nope/db", "port"),
            ("postgres://u:pw@h/d?sslmode=sometimes", "unknown sslmode"),
            ("mysql://u:pw@h/d", "not a postgres:// URL"),
        ] {
            let text = parse_url(url).unwrap_err().to_string();
            assert!(text.contains(says), "{url}: {text}");
            assert!(!text.contains("pw"), "{url}: {text}");
            assert!(
                text.contains("hint: postgres://user:password@host"),
                "{text}"
            );
        }
    }
}
