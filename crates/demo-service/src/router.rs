//! Method + path → handler. Each route has a fixed label (its path template) for `/metrics`.
//!
//! | method | path | handler |
//! |---|---|---|
//! | GET | `/health`, `/health/ready` | liveness; readiness (database and data directory) |
//! | GET | `/metrics` | Prometheus text |
//! | POST | `/api/auth/{register,login,refresh,logout}` | accounts and sessions |
//! | GET | `/api/auth/me` | the current user |
//! | GET | `/api/folders`, `/api/folders/{id}` | list (root, or a folder): paging, sorting |
//! | POST | `/api/folders` | create a folder |
//! | DELETE | `/api/folders/{id}` | delete a folder and its contents |
//! | POST | `/api/files/upload` | direct multipart upload |
//! | GET, DELETE | `/api/files/{id}` | file metadata; delete |
//! | GET, HEAD | `/api/files/{id}/download` | content, with `Range` |
//! | POST | `/api/uploads` | start a chunked upload |
//! | GET, DELETE | `/api/uploads/{id}` | its state; abort |
//! | PUT | `/api/uploads/{id}/chunks/{n}` | one chunk |
//! | POST | `/api/uploads/{id}/complete` | assemble and publish |
//! | GET | `/api/search?q=` | FTS5 name search |
//! | POST | `/api/batch/move` | move files and folders |
//! | any | `/dav/...` | WebDAV subset |

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use serde_json::json;

use crate::body::{self, Resp};
use crate::error::ApiError;
use crate::server::App;
use crate::{accounts, chunked, dav, files};

pub(crate) async fn handle(app: &Arc<App>, req: Request<Incoming>) -> (&'static str, Resp) {
    let path = req.uri().path().to_owned();
    let method = req.method().clone();
    if path == "/dav" || path.starts_with("/dav/") {
        return (
            "/dav",
            dav::handle(app, req)
                .await
                .unwrap_or_else(ApiError::into_response),
        );
    }
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    use Method as M;
    let (route, result): (&'static str, Result<Resp, ApiError>) = match (&method, segs.as_slice()) {
        (&M::GET, ["health"]) => (
            "/health",
            Ok(body::json(StatusCode::OK, &json!({"status": "ok"}))),
        ),
        (&M::GET, ["health", "ready"]) => ("/health/ready", files::ready(app).await),
        (&M::GET, ["metrics"]) => ("/metrics", Ok(metrics(app))),
        (&M::POST, ["api", "auth", "register"]) => {
            ("/api/auth/register", accounts::register(app, req).await)
        }
        (&M::POST, ["api", "auth", "login"]) => {
            ("/api/auth/login", accounts::login(app, req).await)
        }
        (&M::POST, ["api", "auth", "refresh"]) => {
            ("/api/auth/refresh", accounts::refresh(app, req).await)
        }
        (&M::POST, ["api", "auth", "logout"]) => ("/api/auth/logout", accounts::logout(app, req)),
        (&M::GET, ["api", "auth", "me"]) => ("/api/auth/me", accounts::me(app, req).await),
        (&M::GET, ["api", "folders"]) => ("/api/folders/{id}", files::list(app, req, None).await),
        (&M::POST, ["api", "folders"]) => ("/api/folders", files::create_folder(app, req).await),
        (&M::GET, ["api", "folders", id]) => {
            let id = parse_id(id);
            (
                "/api/folders/{id}",
                match id {
                    Ok(id) => files::list(app, req, Some(id)).await,
                    Err(e) => Err(e),
                },
            )
        }
        (&M::DELETE, ["api", "folders", id]) => {
            let id = parse_id(id);
            (
                "/api/folders/{id}",
                match id {
                    Ok(id) => files::delete_folder(app, req, id).await,
                    Err(e) => Err(e),
                },
            )
        }
        (&M::POST, ["api", "files", "upload"]) => {
            ("/api/files/upload", files::upload(app, req).await)
        }
        (&M::GET | &M::DELETE, ["api", "files", id]) => {
            let id = parse_id(id);
            (
                "/api/files/{id}",
                match id {
                    Ok(id) => files::file(app, req, id).await,
                    Err(e) => Err(e),
                },
            )
        }
        (&M::GET | &M::HEAD, ["api", "files", id, "download"]) => {
            let id = parse_id(id);
            (
                "/api/files/{id}/download",
                match id {
                    Ok(id) => files::download(app, req, id).await,
                    Err(e) => Err(e),
                },
            )
        }
        (&M::POST, ["api", "uploads"]) => ("/api/uploads", chunked::upload_init(app, req).await),
        (&M::GET | &M::DELETE, ["api", "uploads", id]) => {
            let id = id.to_string();
            (
                "/api/uploads/{id}",
                chunked::upload_state(app, req, id).await,
            )
        }
        (&M::PUT, ["api", "uploads", id, "chunks", n]) => {
            let (id, n) = (id.to_string(), n.parse::<u64>());
            (
                "/api/uploads/{id}/chunks/{n}",
                match n {
                    Ok(n) => chunked::upload_chunk(app, req, id, n).await,
                    Err(_) => Err(ApiError::bad_request(
                        "invalid_chunk",
                        "chunk number must be a non-negative integer",
                    )),
                },
            )
        }
        (&M::POST, ["api", "uploads", id, "complete"]) => {
            let id = id.to_string();
            (
                "/api/uploads/{id}/complete",
                chunked::upload_complete(app, req, id).await,
            )
        }
        (&M::GET, ["api", "search"]) => ("/api/search", files::search(app, req).await),
        (&M::POST, ["api", "batch", "move"]) => {
            ("/api/batch/move", files::batch_move(app, req).await)
        }
        _ => {
            let known = matches!(
                segs.as_slice(),
                ["health"]
                    | ["health", "ready"]
                    | ["metrics"]
                    | ["api", "auth", _]
                    | ["api", "folders"]
                    | ["api", "folders", _]
                    | ["api", "files", _]
                    | ["api", "files", _, "download"]
                    | ["api", "uploads"]
                    | ["api", "uploads", _]
                    | ["api", "uploads", _, "chunks", _]
                    | ["api", "uploads", _, "complete"]
                    | ["api", "search"]
                    | ["api", "batch", "move"]
            );
            if known {
                ("other", Err(ApiError::method_not_allowed()))
            } else {
                ("other", Err(ApiError::not_found(&format!("route {path}"))))
            }
        }
    };
    (route, result.unwrap_or_else(ApiError::into_response))
}

fn metrics(app: &App) -> Resp {
    body::with_type(
        hyper::Response::new(app.metrics.render(app.sessions.len()).into()),
        "text/plain; version=0.0.4; charset=utf-8",
    )
}

pub(crate) fn parse_id(s: &str) -> Result<i64, ApiError> {
    s.parse::<i64>()
        .ok()
        .filter(|i| *i > 0)
        .ok_or_else(|| ApiError::bad_request("invalid_id", format!("{s:?} is not an id")))
}

/// Percent-decodes `s` (with `plus`, `+` is a space, as in query strings); `None` when the
/// result is not UTF-8 or an escape is malformed.
pub(crate) fn percent_decode(s: &str, plus: bool) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Percent-encodes everything but unreserved characters (for hrefs and headers).
pub(crate) fn percent_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || (keep_slash && b == b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The decoded query pairs of a request.
pub(crate) fn query(req: &Request<Incoming>) -> Result<Vec<(String, String)>, ApiError> {
    let Some(q) = req.uri().query() else {
        return Ok(Vec::new());
    };
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            match (percent_decode(k, true), percent_decode(v, true)) {
                (Some(k), Some(v)) => Ok((k, v)),
                _ => Err(ApiError::bad_request(
                    "invalid_query",
                    "malformed query string",
                )),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_round_trip() {
        assert_eq!(percent_decode("a%20b+c", true).as_deref(), Some("a b c"));
        assert_eq!(percent_decode("a+b", false).as_deref(), Some("a+b"));
        assert_eq!(percent_decode("%zz", false), None);
        assert_eq!(percent_decode("%ff", false), None);
        assert_eq!(percent_encode("a b/ü", true), "a%20b/%C3%BC");
    }
}
