//! Classified request failures.
//!
//! A load test reports failures by class (refused, reset, timeout, ...) rather than by
//! message, so every error the client can hit is mapped to one [`ErrorClass`] here.

use std::fmt;
use std::io;

/// Why a request failed, coarse enough to aggregate into per-class counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorClass {
    /// The peer actively refused the TCP connection.
    Refused,
    /// A connect or request deadline passed.
    Timeout,
    /// The connection was reset or closed before the response was complete.
    Reset,
    /// TLS handshake, certificate or record-layer failure.
    Tls,
    /// Name resolution failed.
    Dns,
    /// The server sent something that is not valid HTTP/1.x.
    Protocol,
    /// Anything else (local I/O, misuse of the API).
    Other,
}

impl ErrorClass {
    /// Every class, in declaration order (handy for fixed-size counter arrays).
    pub const ALL: [ErrorClass; 7] = [
        ErrorClass::Refused,
        ErrorClass::Timeout,
        ErrorClass::Reset,
        ErrorClass::Tls,
        ErrorClass::Dns,
        ErrorClass::Protocol,
        ErrorClass::Other,
    ];

    /// Stable lower-case name, used in summaries, tags and result files.
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorClass::Refused => "refused",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Reset => "reset",
            ErrorClass::Tls => "tls",
            ErrorClass::Dns => "dns",
            ErrorClass::Protocol => "protocol",
            ErrorClass::Other => "other",
        }
    }

    /// Inverse of [`ErrorClass::as_str`].
    // Returns Option rather than Result, so it is deliberately not `FromStr`.
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(s: &str) -> Option<Self> {
        ErrorClass::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// Index into [`ErrorClass::ALL`].
    pub fn index(&self) -> usize {
        *self as usize
    }

    /// Classifies an I/O error. rustls errors wrapped in `io::Error` count as TLS.
    pub fn of_io(e: &io::Error) -> ErrorClass {
        if is_rustls(e) {
            return ErrorClass::Tls;
        }
        match e.kind() {
            io::ErrorKind::ConnectionRefused => ErrorClass::Refused,
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof => ErrorClass::Reset,
            io::ErrorKind::TimedOut => ErrorClass::Timeout,
            _ => ErrorClass::Other,
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn is_rustls(e: &io::Error) -> bool {
    e.get_ref()
        .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some())
}

/// A failed request: its class, a human-readable message, and the bytes that had
/// already crossed the wire for it (so data counters stay exact even on failure).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpError {
    pub class: ErrorClass,
    pub message: String,
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

impl HttpError {
    /// An error with no bytes attributed yet.
    pub fn new(class: ErrorClass, message: impl Into<String>) -> HttpError {
        HttpError {
            class,
            message: message.into(),
            bytes_sent: 0,
            bytes_received: 0,
        }
    }

    /// Wraps an I/O error, prefixing `context` (what we were doing).
    pub fn io(e: &io::Error, context: &str) -> HttpError {
        HttpError::new(ErrorClass::of_io(e), format!("{context}: {e}"))
    }

    /// A kept response body passed the cap set with
    /// [`Connection::set_max_body`](crate::Connection::set_max_body).
    pub fn body_too_large(limit: u64) -> HttpError {
        HttpError::new(
            ErrorClass::Other,
            format!(
                "{BODY_TOO_LARGE} the {} limit: the rest was not read and the connection was \
                 closed",
                size(limit)
            ),
        )
    }

    /// Made by [`HttpError::body_too_large`] (callers give it its own error code).
    pub fn is_body_too_large(&self) -> bool {
        self.class == ErrorClass::Other && self.message.starts_with(BODY_TOO_LARGE)
    }
}

/// How [`HttpError::body_too_large`] messages start.
const BODY_TOO_LARGE: &str = "response body larger than";

/// `n` bytes in the largest binary unit that divides it.
fn size(n: u64) -> String {
    const KIB: u64 = 1024;
    match n {
        0 => "0 bytes".into(),
        n if n % (KIB * KIB * KIB) == 0 => format!("{} GiB", n / (KIB * KIB * KIB)),
        n if n % (KIB * KIB) == 0 => format!("{} MiB", n / (KIB * KIB)),
        n if n % KIB == 0 => format!("{} KiB", n / KIB),
        n => format!("{n} bytes"),
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.class, self.message)
    }
}

impl std::error::Error for HttpError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (i, c) in ErrorClass::ALL.into_iter().enumerate() {
            assert_eq!(ErrorClass::from_str(c.as_str()), Some(c));
            assert_eq!(c.index(), i);
        }
        assert_eq!(ErrorClass::from_str("nope"), None);
    }

    #[test]
    fn body_too_large_is_recognised_and_names_the_limit() {
        let e = HttpError::body_too_large(64 << 20);
        assert!(e.is_body_too_large());
        assert!(e.message.contains("the 64 MiB limit"), "{e}");
        assert!(HttpError::body_too_large(1000)
            .message
            .contains("1000 bytes"));
        assert!(!HttpError::new(ErrorClass::Other, "x").is_body_too_large());
    }

    #[test]
    fn io_kinds_are_classified() {
        let k = |kind| ErrorClass::of_io(&io::Error::from(kind));
        assert_eq!(k(io::ErrorKind::ConnectionRefused), ErrorClass::Refused);
        assert_eq!(k(io::ErrorKind::ConnectionReset), ErrorClass::Reset);
        assert_eq!(k(io::ErrorKind::BrokenPipe), ErrorClass::Reset);
        assert_eq!(k(io::ErrorKind::UnexpectedEof), ErrorClass::Reset);
        assert_eq!(k(io::ErrorKind::TimedOut), ErrorClass::Timeout);
        assert_eq!(k(io::ErrorKind::PermissionDenied), ErrorClass::Other);
        let tls = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::General("bad".into()),
        );
        assert_eq!(ErrorClass::of_io(&tls), ErrorClass::Tls);
    }
}
