//! The JSON API handlers for folders and files: direct uploads, downloads with `Range`,
//! listing, search and batch move, plus the helpers the other handler modules share. Database work and password hashing run on
//! tokio's blocking pool ([`blocking`]).

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Map, Value};
use tokio::io::AsyncSeekExt;

use crate::auth::{self, Principal};
use crate::body::{self, Resp, RespBody};
use crate::db::{self, FileRow, FolderRow};
use crate::error::ApiError;
use crate::multipart::{self, Multipart};
use crate::router::{percent_encode, query};
use crate::server::App;
use crate::store::read_body;

/// Largest page of a listing or search.
const MAX_LIMIT: i64 = 1000;
const DEFAULT_LIMIT: i64 = 100;
/// Most entries one batch move may name.
const MAX_BATCH: usize = 1000;

/// Runs database or CPU-heavy work off the async workers.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(ApiError::internal)?
}

/// A file or folder name: 1..=255 bytes, not `.`/`..`, no `/`, `\`, NUL or control characters.
pub(crate) fn check_name(name: &str) -> Result<(), ApiError> {
    let bad = name.is_empty()
        || name.len() > 255
        || name == "."
        || name == ".."
        || name
            .chars()
            .any(|c| c == '/' || c == '\\' || c.is_control());
    if bad {
        return Err(ApiError::bad_request(
            "invalid_name",
            format!("invalid name {name:?}: 1-255 bytes, not . or .., no / \\ NUL or control characters"),
        ));
    }
    Ok(())
}

pub(crate) async fn json_body(
    app: &App,
    req: Request<Incoming>,
) -> Result<Map<String, Value>, ApiError> {
    let limit = app.max_json;
    if content_length(req.headers()).is_some_and(|n| n > limit) {
        return Err(ApiError::too_large(limit));
    }
    let mut body = req.into_body();
    let bytes = read_body(&mut body, limit).await?;
    if bytes.is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::bad_request(
            "bad_json",
            "the body must be a JSON object",
        )),
        Err(e) => Err(ApiError::bad_request(
            "bad_json",
            format!("invalid JSON: {e}"),
        )),
    }
}

pub(crate) fn content_length(h: &HeaderMap) -> Option<u64> {
    h.get(header::CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
}

pub(crate) fn str_field<'a>(m: &'a Map<String, Value>, k: &str) -> Result<&'a str, ApiError> {
    m.get(k)
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::bad_request("invalid_field", format!("{k:?} must be a string")))
}

pub(crate) fn opt_i64(m: &Map<String, Value>, k: &str) -> Result<Option<i64>, ApiError> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_i64().map(Some).ok_or_else(|| {
            ApiError::bad_request("invalid_field", format!("{k:?} must be an integer"))
        }),
    }
}

fn ids(m: &Map<String, Value>, k: &str) -> Result<Vec<i64>, ApiError> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_i64().ok_or_else(|| {
                    ApiError::bad_request("invalid_field", format!("{k:?} must be an array of ids"))
                })
            })
            .collect(),
        Some(_) => Err(ApiError::bad_request(
            "invalid_field",
            format!("{k:?} must be an array of ids"),
        )),
    }
}

pub(crate) fn who(app: &App, req: &Request<Incoming>) -> Result<Principal, ApiError> {
    auth::authenticate(&app.sessions, req.method(), req.headers()).map(|(p, _)| p)
}

pub(crate) async fn ready(app: &Arc<App>) -> Result<Resp, ApiError> {
    let a = app.clone();
    let db_ok = blocking(move || Ok(a.db.ping())).await.unwrap_or(false);
    let tmp_ok = app.store.temp().await.is_ok();
    let status = if db_ok && tmp_ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    Ok(body::json(
        status,
        &json!({"status": if status == StatusCode::OK {"ready"} else {"not ready"}, "database": db_ok, "storage": tmp_ok}),
    ))
}

// ---- folders ----

pub(crate) async fn create_folder(
    app: &Arc<App>,
    req: Request<Incoming>,
) -> Result<Resp, ApiError> {
    let p = who(app, &req)?;
    let m = json_body(app, req).await?;
    let name = str_field(&m, "name")?.to_owned();
    check_name(&name)?;
    let parent = opt_i64(&m, "parent_id")?.unwrap_or(p.root);
    let a = app.clone();
    let folder = blocking(move || a.db.create_folder(p.user_id, parent, &name)).await?;
    Ok(body::json(
        StatusCode::CREATED,
        &json!({ "folder": folder.json() }),
    ))
}

pub(crate) async fn delete_folder(
    app: &Arc<App>,
    req: Request<Incoming>,
    id: i64,
) -> Result<Resp, ApiError> {
    let p = who(app, &req)?;
    if id == p.root {
        return Err(ApiError::bad_request(
            "invalid_target",
            "the root folder cannot be deleted",
        ));
    }
    let a = app.clone();
    let blobs = blocking(move || a.db.delete_folder(p.user_id, id)).await?;
    app.store.remove(blobs).await;
    Ok(body::status(StatusCode::NO_CONTENT))
}

/// Paging and sorting of a listing (`limit`, `offset`, `sort`, `order`).
struct Page {
    limit: i64,
    offset: i64,
    sort: &'static str,
    desc: bool,
}

fn page(pairs: &[(String, String)]) -> Result<Page, ApiError> {
    let mut p = Page {
        limit: DEFAULT_LIMIT,
        offset: 0,
        sort: "name",
        desc: false,
    };
    let bad = |m: &str| ApiError::bad_request("invalid_query", m.to_owned());
    for (k, v) in pairs {
        match k.as_str() {
            "limit" => {
                p.limit = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=MAX_LIMIT).contains(n))
                    .ok_or_else(|| bad("limit: 1-1000"))?
            }
            "offset" => {
                p.offset = v
                    .parse()
                    .ok()
                    .filter(|n| *n >= 0)
                    .ok_or_else(|| bad("offset: >= 0"))?
            }
            "sort" => {
                p.sort = match v.as_str() {
                    "name" => "name",
                    "size" => "size",
                    "created" | "created_at" => "created_at",
                    _ => return Err(bad("sort: name, size or created")),
                }
            }
            "order" => {
                p.desc = match v.as_str() {
                    "asc" => false,
                    "desc" => true,
                    _ => return Err(bad("order: asc or desc")),
                }
            }
            _ => {}
        }
    }
    Ok(p)
}

pub(crate) async fn list(
    app: &Arc<App>,
    req: Request<Incoming>,
    id: Option<i64>,
) -> Result<Resp, ApiError> {
    let p = who(app, &req)?;
    let pg = page(&query(&req)?)?;
    let a = app.clone();
    let v = blocking(move || {
        let listing = db::Listing {
            sort: pg.sort,
            desc: pg.desc,
            limit: pg.limit,
            offset: pg.offset,
        };
        let (folder, folders, files, total) =
            a.db.list(p.user_id, id.unwrap_or(p.root), listing)?;
        let files: Vec<Value> = files.iter().map(FileRow::json).collect();
        let dir = if pg.desc { "DESC" } else { "ASC" };
        Ok(json!({
            "folder": folder.json(),
            "folders": folders.iter().map(FolderRow::json).collect::<Vec<_>>(),
            "files": files,
            "total_files": total,
            "total_folders": folders.len(),
            "limit": pg.limit,
            "offset": pg.offset,
            "sort": pg.sort,
            "order": dir.to_ascii_lowercase(),
        }))
    })
    .await?;
    Ok(body::json(StatusCode::OK, &v))
}

// ---- files ----

pub(crate) async fn file(
    app: &Arc<App>,
    req: Request<Incoming>,
    id: i64,
) -> Result<Resp, ApiError> {
    let p = who(app, &req)?;
    let delete = req.method() == Method::DELETE;
    let a = app.clone();
    let f = blocking(move || {
        if delete {
            a.db.delete_file(p.user_id, id)
        } else {
            a.db.file_of(p.user_id, id)
        }
    })
    .await?;
    if delete {
        app.store.remove(vec![f.blob]).await;
        return Ok(body::status(StatusCode::NO_CONTENT));
    }
    Ok(body::json(StatusCode::OK, &json!({ "file": f.json() })))
}

pub(crate) async fn download(
    app: &Arc<App>,
    req: Request<Incoming>,
    id: i64,
) -> Result<Resp, ApiError> {
    let p = who(app, &req)?;
    let a = app.clone();
    let f = blocking(move || a.db.file_of(p.user_id, id)).await?;
    serve_file(app, &f, req.headers(), req.method() == Method::HEAD).await
}

/// A file's content (or the requested range of it), streamed from disk.
pub(crate) async fn serve_file(
    app: &App,
    f: &FileRow,
    headers: &HeaderMap,
    head: bool,
) -> Result<Resp, ApiError> {
    let size = f.size as u64;
    let (status, start, len) = match headers.get(header::RANGE) {
        None => (StatusCode::OK, 0, size),
        Some(v) => match v.to_str().ok().map(|s| crate::range::parse(s, size)) {
            Some(Ok((a, b))) => (StatusCode::PARTIAL_CONTENT, a, b - a + 1),
            _ => {
                return Err(ApiError::new(
                    StatusCode::RANGE_NOT_SATISFIABLE,
                    "range_not_satisfiable",
                    format!("cannot serve that range of a {size}-byte file (one range: bytes=a-b, a-, or -n)"),
                )
                .with_header(header::CONTENT_RANGE, &format!("bytes */{size}")))
            }
        },
    };
    let mut file = match tokio::fs::File::open(app.store.blob_path(&f.blob)).await {
        Ok(file) => file,
        // Replaced or deleted between the lookup and now.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ApiError::not_found("file"))
        }
        Err(e) => return Err(e.into()),
    };
    if start > 0 {
        file.seek(std::io::SeekFrom::Start(start)).await?;
    }
    let body = if head || len == 0 {
        RespBody::empty()
    } else {
        RespBody::file(file, len, app.metrics.download_bytes.clone())
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if status == StatusCode::PARTIAL_CONTENT {
        if let Ok(v) = HeaderValue::from_str(&format!("bytes {start}-{}/{size}", start + len - 1)) {
            h.insert(header::CONTENT_RANGE, v);
        }
    }
    if let Ok(v) = HeaderValue::from_str(&format!("\"{}-{}\"", f.id, f.modified_at)) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&http_date(f.modified_at)) {
        h.insert(header::LAST_MODIFIED, v);
    }
    if let Ok(v) = HeaderValue::from_str(&format!(
        "attachment; filename*=UTF-8''{}",
        percent_encode(&f.name, false)
    )) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(resp)
}

pub(crate) fn http_date(ms: i64) -> String {
    httpdate::fmt_http_date(
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64),
    )
}

/// Direct upload: `multipart/form-data` with one file part (any field name; its filename is
/// the file's name). The folder is `?folder_id=`, a `folder_id` field sent before the file
/// part, or the root. `?overwrite=true` replaces a file of the same name (else 409).
pub(crate) async fn upload(app: &Arc<App>, req: Request<Incoming>) -> Result<Resp, ApiError> {
    let p = who(app, &req)?;
    let q = query(&req)?;
    let mut folder = match q.iter().find(|(k, _)| k == "folder_id") {
        Some((_, v)) => Some(crate::router::parse_id(v)?),
        None => None,
    };
    let overwrite = q.iter().any(|(k, v)| k == "overwrite" && v == "true");
    let ct = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let Some(boundary) = multipart::boundary(ct) else {
        return Err(ApiError::bad_request(
            "bad_multipart",
            "expected Content-Type: multipart/form-data; boundary=...",
        ));
    };
    // Room for the part headers and boundaries around the largest allowed file.
    let limit = app.max_upload.saturating_add(64 * 1024);
    if content_length(req.headers()).is_some_and(|n| n > limit) {
        return Err(ApiError::too_large(app.max_upload));
    }
    let mut mp = Multipart::new(req.into_body(), &boundary, limit);
    let mut stored = None;
    while let Some(part) = mp.next_part().await? {
        match part.filename {
            None if part.name == "folder_id" => {
                let v = mp.text(32).await?;
                folder = Some(crate::router::parse_id(v.trim())?);
            }
            Some(name) if stored.is_none() => {
                check_name(&name)?;
                let folder_id = folder.unwrap_or(p.root);
                let a = app.clone();
                blocking(move || a.db.folder_of(p.user_id, folder_id).map(|_| ())).await?;
                let mut tmp = app.store.temp().await?;
                while let Some(chunk) = mp.chunk().await? {
                    if tmp.len + chunk.len() as u64 > app.max_upload {
                        return Err(ApiError::too_large(app.max_upload));
                    }
                    tmp.write(&chunk).await?;
                }
                stored = Some((name, folder_id, tmp));
            }
            _ => {}
        }
    }
    let Some((name, folder_id, tmp)) = stored else {
        return Err(ApiError::bad_request(
            "missing_file",
            "no file part (a part with a filename) in the form",
        ));
    };
    let f = publish(app, &p, folder_id, name, tmp, overwrite).await?;
    Ok(body::json(
        StatusCode::CREATED,
        &json!({ "file": f.json() }),
    ))
}

/// Makes a complete temp file visible as `name` in `folder` (rename, then the row).
pub(crate) async fn publish(
    app: &Arc<App>,
    p: &Principal,
    folder: i64,
    name: String,
    tmp: crate::store::TempFile,
    overwrite: bool,
) -> Result<FileRow, ApiError> {
    let size = tmp.len;
    let blob = app.store.commit(tmp).await?;
    let (a, user, b) = (app.clone(), p.user_id, blob.clone());
    let r = blocking(move || a.db.put_file(user, folder, &name, size, &b, overwrite)).await;
    match r {
        Ok((row, old)) => {
            app.metrics
                .upload_bytes
                .fetch_add(size, std::sync::atomic::Ordering::Relaxed);
            app.store.remove(old.into_iter().collect()).await;
            Ok(row)
        }
        Err(e) => {
            app.store.remove(vec![blob]).await;
            Err(e)
        }
    }
}

// ---- search and batch move ----

pub(crate) async fn search(app: &Arc<App>, req: Request<Incoming>) -> Result<Resp, ApiError> {
    let p = who(app, &req)?;
    let pairs = query(&req)?;
    let pg = page(&pairs)?;
    let q = pairs
        .iter()
        .find(|(k, _)| k == "q")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let terms = db::search_terms(&q);
    if terms.is_empty() {
        return Err(ApiError::bad_request(
            "invalid_query",
            "q: at least one letter or digit",
        ));
    };
    let a = app.clone();
    let v = blocking(move || {
        let (files, total) = a.db.search(p.user_id, &terms, pg.limit, pg.offset)?;
        let files: Vec<Value> = files.iter().map(FileRow::json).collect();
        Ok(json!({"query": q, "total": total, "files": files, "limit": pg.limit, "offset": pg.offset}))
    })
    .await?;
    Ok(body::json(StatusCode::OK, &v))
}

/// `{"file_ids": [...], "folder_ids": [...], "target_folder_id": N}`: all or nothing. A name
/// clash in the target is a 409; moving a folder into itself or below itself is a 400.
pub(crate) async fn batch_move(app: &Arc<App>, req: Request<Incoming>) -> Result<Resp, ApiError> {
    let p = who(app, &req)?;
    let m = json_body(app, req).await?;
    let files = ids(&m, "file_ids")?;
    let folders = ids(&m, "folder_ids")?;
    let target = opt_i64(&m, "target_folder_id")?.ok_or_else(|| {
        ApiError::bad_request("invalid_field", "\"target_folder_id\" is required")
    })?;
    if files.is_empty() && folders.is_empty() {
        return Err(ApiError::bad_request("invalid_field", "nothing to move"));
    }
    if files.len() + folders.len() > MAX_BATCH {
        return Err(ApiError::bad_request(
            "invalid_field",
            "at most 1000 entries per batch",
        ));
    }
    let a = app.clone();
    let (nf, nd) = (files.len(), folders.len());
    blocking(move || a.db.move_batch(p.user_id, p.root, target, &files, &folders)).await?;
    Ok(body::json(
        StatusCode::OK,
        &json!({"moved_files": nf, "moved_folders": nd, "target_folder_id": target}),
    ))
}
