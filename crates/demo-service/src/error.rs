//! [`ApiError`]: the one error type handlers return. It always becomes a JSON body
//! `{"error": MESSAGE, "code": CODE}`; bad input is a 4xx, never a 500.

use std::fmt;

use hyper::header::{HeaderName, HeaderValue};
use hyper::StatusCode;

use crate::body::{self, Resp};

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    /// Stable, machine-readable: `invalid_name`, `not_found`, `body_too_large`, ...
    pub code: &'static str,
    pub message: String,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            headers: Vec::new(),
        }
    }

    pub(crate) fn with_header(mut self, name: HeaderName, value: &str) -> Self {
        if let Ok(v) = HeaderValue::from_str(value) {
            self.headers.push((name, v));
        }
        self
    }

    pub(crate) fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub(crate) fn not_found(what: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{what} not found"),
        )
    }

    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }

    pub(crate) fn too_large(limit: u64) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("request body is larger than {limit} bytes"),
        )
    }

    pub(crate) fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "method not allowed",
        )
    }

    /// A fault of the service itself (disk, database), not of the request.
    pub(crate) fn internal(e: impl fmt::Display) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string())
    }

    pub(crate) fn into_response(self) -> Resp {
        let mut resp = body::json(
            self.status,
            &serde_json::json!({ "error": self.message, "code": self.code }),
        );
        for (k, v) in self.headers {
            resp.headers_mut().append(k, v);
        }
        resp
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.status.as_u16(),
            self.code,
            self.message
        )
    }
}

impl std::error::Error for ApiError {}

impl From<rusqlite::Error> for ApiError {
    fn from(e: rusqlite::Error) -> Self {
        match &e {
            rusqlite::Error::SqliteFailure(f, _)
                if f.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                ApiError::conflict("an entry with that name already exists")
            }
            rusqlite::Error::QueryReturnedNoRows => ApiError::not_found("entry"),
            _ => ApiError::internal(e),
        }
    }
}

impl From<std::io::Error> for ApiError {
    fn from(e: std::io::Error) -> Self {
        ApiError::internal(e)
    }
}
