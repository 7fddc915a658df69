//! The WebDAV subset under `/dav/`, over the same folders and files as the JSON API (`/dav/`
//! is the user's root folder): OPTIONS, PROPFIND (Depth 0 or 1; an absent Depth means 1,
//! `infinity` is refused with 403), GET/HEAD (with `Range`), PUT (create or replace; the
//! parent must exist), DELETE (files, and folders with their contents) and MKCOL.
//!
//! Authentication is HTTP Basic with the account's username and password. A verified
//! `Authorization` value is remembered for [`CACHE_TTL`] (bounded to [`CACHE_MAX`] entries) so
//! WebDAV benchmarks measure file work, not argon2 on every request.

use std::fmt::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use crate::accounts::check_password;
use crate::auth::Principal;
use crate::body::{self, Resp};
use crate::db::{FileRow, FolderRow, Storage};
use crate::error::ApiError;
use crate::files::{blocking, check_name, http_date, publish, serve_file};
use crate::router::{percent_decode, percent_encode};
use crate::server::App;

const CACHE_TTL: Duration = Duration::from_secs(300);
const CACHE_MAX: usize = 10_000;

enum Res {
    Folder(FolderRow),
    File(FileRow),
    /// The last segment names nothing in an existing folder.
    Missing(FolderRow, String),
    /// A folder on the way does not exist.
    NoParent,
}

pub(crate) async fn handle(app: &Arc<App>, req: Request<Incoming>) -> Result<Resp, ApiError> {
    let p = authenticate(app, req.headers()).await?;
    let raw = req.uri().path().to_owned();
    let mut segs = Vec::new();
    for s in raw
        .trim_start_matches("/dav")
        .split('/')
        .filter(|s| !s.is_empty())
    {
        let name = percent_decode(s, false).ok_or_else(|| {
            ApiError::bad_request("invalid_name", "malformed percent-encoding in the path")
        })?;
        check_name(&name)?;
        segs.push(name);
    }
    let method = req.method().clone();
    if method == Method::OPTIONS {
        let mut r = body::status(StatusCode::OK);
        r.headers_mut().insert("dav", HeaderValue::from_static("1"));
        r.headers_mut().insert(
            header::ALLOW,
            HeaderValue::from_static("OPTIONS, PROPFIND, GET, HEAD, PUT, DELETE, MKCOL"),
        );
        return Ok(r);
    }
    let (a, who, s) = (app.clone(), p.clone(), segs.clone());
    let res = blocking(move || resolve(&*a.db, &who, &s)).await?;
    match method.as_str() {
        "PROPFIND" => propfind(app, req.headers(), &segs, res).await,
        "GET" | "HEAD" => match res {
            Res::File(f) => serve_file(app, &f, req.headers(), method == Method::HEAD).await,
            Res::Folder(_) => Err(ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "is_collection",
                "that is a collection: use PROPFIND to list it",
            )),
            _ => Err(ApiError::not_found("resource")),
        },
        "PUT" => {
            let (parent, name, existed) = match res {
                Res::File(f) => (f.folder_id, f.name, true),
                Res::Missing(parent, name) => (parent.id, name, false),
                Res::Folder(_) => {
                    return Err(ApiError::new(
                        StatusCode::METHOD_NOT_ALLOWED,
                        "is_collection",
                        "cannot PUT over a collection",
                    ))
                }
                Res::NoParent => {
                    return Err(ApiError::conflict("the parent collection does not exist"))
                }
            };
            let limit = app.max_upload;
            let len = req
                .headers()
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
            if len.is_some_and(|n| n > limit) {
                return Err(ApiError::too_large(limit));
            }
            let mut tmp = app.store.temp().await?;
            let mut body = req.into_body();
            tmp.write_body(&mut body, limit).await?;
            publish(app, &p, parent, name, tmp, true).await?;
            Ok(body::status(if existed {
                StatusCode::NO_CONTENT
            } else {
                StatusCode::CREATED
            }))
        }
        "DELETE" => {
            let a = app.clone();
            let blobs = match res {
                Res::File(f) => {
                    blocking(move || a.db.delete_file(p.user_id, f.id).map(|f| vec![f.blob]))
                        .await?
                }
                Res::Folder(f) if f.id == p.root => {
                    return Err(ApiError::new(
                        StatusCode::FORBIDDEN,
                        "forbidden",
                        "the root cannot be deleted",
                    ))
                }
                Res::Folder(f) => blocking(move || a.db.delete_folder(p.user_id, f.id)).await?,
                _ => return Err(ApiError::not_found("resource")),
            };
            app.store.remove(blobs).await;
            Ok(body::status(StatusCode::NO_CONTENT))
        }
        "MKCOL" => match res {
            Res::Missing(parent, name) => {
                let a = app.clone();
                blocking(move || a.db.create_folder(p.user_id, parent.id, &name)).await?;
                Ok(body::status(StatusCode::CREATED))
            }
            Res::NoParent => Err(ApiError::conflict("the parent collection does not exist")),
            _ => Err(ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "exists",
                "that resource already exists",
            )),
        },
        _ => Err(ApiError::method_not_allowed()),
    }
}

fn resolve(c: &dyn Storage, p: &Principal, segs: &[String]) -> Result<Res, ApiError> {
    let mut folder = c.folder_of(p.user_id, p.root)?;
    for (i, s) in segs.iter().enumerate() {
        if let Some(f) = c.child_folder(folder.id, s)? {
            folder = f;
            continue;
        }
        if i + 1 < segs.len() {
            return Ok(Res::NoParent);
        }
        return Ok(match c.child_file(folder.id, s)? {
            Some(f) => Res::File(f),
            None => Res::Missing(folder, s.clone()),
        });
    }
    Ok(Res::Folder(folder))
}

async fn authenticate(app: &Arc<App>, headers: &HeaderMap) -> Result<Principal, ApiError> {
    let unauthorized = |msg: &str| {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthenticated", msg.to_owned())
            .with_header(header::WWW_AUTHENTICATE, "Basic realm=\"volley-demo\"")
    };
    let value = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| unauthorized("WebDAV needs HTTP Basic authentication"))?;
    let b64 = value
        .strip_prefix("Basic ")
        .ok_or_else(|| unauthorized("WebDAV needs HTTP Basic authentication"))?;
    {
        let cache = app.dav_cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((p, at)) = cache.get(value) {
            if at.elapsed() < CACHE_TTL {
                return Ok(p.clone());
            }
        }
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| unauthorized("malformed Basic credentials"))?;
    let (user, pass) = decoded
        .split_once(':')
        .ok_or_else(|| unauthorized("malformed Basic credentials"))?;
    let p = check_password(app, user.to_owned(), pass.to_owned())
        .await
        .map_err(|_| unauthorized("wrong username or password"))?;
    let mut cache = app.dav_cache.lock().unwrap_or_else(|p| p.into_inner());
    if cache.len() >= CACHE_MAX {
        cache.clear();
    }
    cache.insert(value.to_owned(), (p.clone(), Instant::now()));
    Ok(p)
}

async fn propfind(
    app: &Arc<App>,
    headers: &HeaderMap,
    segs: &[String],
    res: Res,
) -> Result<Resp, ApiError> {
    let depth = match headers
        .get("depth")
        .map(|v| v.to_str().unwrap_or("?").trim().to_owned())
    {
        None => 1,
        Some(d) if d == "0" => 0,
        Some(d) if d == "1" => 1,
        Some(d) if d.eq_ignore_ascii_case("infinity") => {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "propfind_depth",
                "Depth: infinity is not supported; use 0 or 1",
            ))
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_depth",
                "Depth must be 0 or 1",
            ))
        }
    };
    let base: String = segs
        .iter()
        .map(|s| format!("/{}", percent_encode(s, false)))
        .collect();
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:multistatus xmlns:D=\"DAV:\">\n",
    );
    match res {
        Res::File(f) => file_entry(&mut xml, &format!("/dav{base}"), &f),
        Res::Folder(folder) => {
            folder_entry(
                &mut xml,
                &format!("/dav{base}/"),
                &folder,
                segs.last().map(String::as_str).unwrap_or(""),
            );
            if depth == 1 {
                let a = app.clone();
                let id = folder.id;
                let (folders, files) = blocking(move || a.db.children(id)).await?;
                for d in &folders {
                    folder_entry(
                        &mut xml,
                        &format!("/dav{base}/{}/", percent_encode(&d.name, false)),
                        d,
                        &d.name,
                    );
                }
                for f in &files {
                    file_entry(
                        &mut xml,
                        &format!("/dav{base}/{}", percent_encode(&f.name, false)),
                        f,
                    );
                }
            }
        }
        _ => return Err(ApiError::not_found("resource")),
    }
    xml.push_str("</D:multistatus>\n");
    let mut resp = Response::new(xml.into());
    *resp.status_mut() = StatusCode::MULTI_STATUS;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml; charset=utf-8"),
    );
    Ok(resp)
}

fn folder_entry(xml: &mut String, href: &str, f: &FolderRow, name: &str) {
    let _ = writeln!(
        xml,
        "<D:response><D:href>{}</D:href><D:propstat><D:prop><D:displayname>{}</D:displayname><D:resourcetype><D:collection/></D:resourcetype><D:getlastmodified>{}</D:getlastmodified></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>",
        escape(href),
        escape(name),
        http_date(f.created_at)
    );
}

fn file_entry(xml: &mut String, href: &str, f: &FileRow) {
    let _ = writeln!(
        xml,
        "<D:response><D:href>{}</D:href><D:propstat><D:prop><D:displayname>{}</D:displayname><D:resourcetype/><D:getcontentlength>{}</D:getcontentlength><D:getcontenttype>application/octet-stream</D:getcontenttype><D:getetag>\"{}-{}\"</D:getetag><D:getlastmodified>{}</D:getlastmodified></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>",
        escape(href),
        escape(&f.name),
        f.size,
        f.id,
        f.modified_at,
        http_date(f.modified_at)
    );
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
