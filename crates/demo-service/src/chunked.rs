//! Chunked uploads: init → PUT chunk N (any order, retries replace) → complete. Chunks wait
//! in `chunks/<upload id>/`; the file becomes visible only when `complete` has assembled
//! them, so an abandoned upload never shows up.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use serde_json::{json, Value};

use crate::auth::Principal;
use crate::body::{self, Resp};
use crate::db::{self, UploadRow};
use crate::error::ApiError;
use crate::files::{
    blocking, check_name, content_length, json_body, opt_i64, publish, str_field, who,
};
use crate::server::App;
use crate::store::random_hex;

/// Default and bounds of a chunked upload's chunk size.
const DEFAULT_CHUNK: u64 = 5 << 20;
const MAX_CHUNK: u64 = 64 << 20;
const MAX_CHUNKS: u64 = 10_000;

impl UploadRow {
    fn chunks(&self) -> u64 {
        self.size.div_ceil(self.chunk_size)
    }

    fn chunk_len(&self, n: u64) -> u64 {
        self.chunk_size.min(self.size - n * self.chunk_size)
    }

    fn json(&self) -> Value {
        json!({
            "upload_id": self.id,
            "name": self.name,
            "folder_id": self.folder_id,
            "size": self.size,
            "chunk_size": self.chunk_size,
            "chunks": self.chunks(),
        })
    }
}

async fn upload_of(app: &Arc<App>, p: &Principal, id: String) -> Result<UploadRow, ApiError> {
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ApiError::not_found("upload"));
    }
    let (a, user) = (app.clone(), p.user_id);
    blocking(move || {
        a.db.upload(&id)?
            .filter(|u| u.user_id == user)
            .ok_or_else(|| ApiError::not_found("upload"))
    })
    .await
}

pub(crate) async fn upload_init(app: &Arc<App>, req: Request<Incoming>) -> Result<Resp, ApiError> {
    let p = who(app, &req)?;
    let m = json_body(app, req).await?;
    let name = str_field(&m, "name")?.to_owned();
    check_name(&name)?;
    let size = opt_i64(&m, "size")?.filter(|s| *s >= 0).ok_or_else(|| {
        ApiError::bad_request("invalid_field", "\"size\" must be a non-negative integer")
    })? as u64;
    if size > app.max_upload {
        return Err(ApiError::too_large(app.max_upload));
    }
    let chunk_size = match opt_i64(&m, "chunk_size")? {
        None => DEFAULT_CHUNK,
        Some(c) if c >= 1 && c as u64 <= MAX_CHUNK => c as u64,
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_field",
                "\"chunk_size\": 1 byte to 64 MiB",
            ))
        }
    };
    if size.div_ceil(chunk_size) > MAX_CHUNKS {
        return Err(ApiError::bad_request(
            "invalid_field",
            "at most 10000 chunks",
        ));
    }
    let folder = opt_i64(&m, "folder_id")?.unwrap_or(p.root);
    sweep_stale_uploads(app).await;
    let u = UploadRow {
        id: random_hex(16),
        user_id: p.user_id,
        folder_id: folder,
        name,
        size,
        chunk_size,
    };
    tokio::fs::create_dir_all(app.store.chunk_dir(&u.id)).await?;
    let (a, row) = (app.clone(), u.clone());
    blocking(move || a.db.add_upload(&row)).await?;
    Ok(body::json(StatusCode::CREATED, &u.json()))
}

/// Chunked uploads untouched for this long are dropped (rows and chunks).
const STALE_UPLOAD_MS: i64 = 24 * 3600 * 1000;

/// Drops stale chunked uploads, at most once a minute (piggybacks on new uploads).
async fn sweep_stale_uploads(app: &Arc<App>) {
    use std::sync::atomic::Ordering;
    let now = db::now_ms();
    let last = app.last_sweep_ms.load(Ordering::Relaxed);
    if now - last < 60_000
        || app
            .last_sweep_ms
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
    {
        return;
    }
    let a = app.clone();
    let stale = blocking(move || a.db.sweep_uploads(now - STALE_UPLOAD_MS))
        .await
        .unwrap_or_default();
    for id in stale {
        let _ = tokio::fs::remove_dir_all(app.store.chunk_dir(&id)).await;
    }
}

async fn received(app: &App, u: &UploadRow) -> Vec<u64> {
    let mut got = Vec::new();
    for n in 0..u.chunks() {
        let path = app.store.chunk_dir(&u.id).join(n.to_string());
        if tokio::fs::metadata(&path)
            .await
            .is_ok_and(|m| m.len() == u.chunk_len(n))
        {
            got.push(n);
        }
    }
    got
}

pub(crate) async fn upload_state(
    app: &Arc<App>,
    req: Request<Incoming>,
    id: String,
) -> Result<Resp, ApiError> {
    let p = who(app, &req)?;
    let u = upload_of(app, &p, id).await?;
    if req.method() == Method::DELETE {
        drop_upload(app, &u.id).await?;
        return Ok(body::status(StatusCode::NO_CONTENT));
    }
    let mut v = u.json();
    v["received"] = json!(received(app, &u).await);
    Ok(body::json(StatusCode::OK, &v))
}

async fn drop_upload(app: &Arc<App>, id: &str) -> Result<(), ApiError> {
    let (a, i) = (app.clone(), id.to_owned());
    blocking(move || a.db.delete_upload(&i)).await?;
    let _ = tokio::fs::remove_dir_all(app.store.chunk_dir(id)).await;
    Ok(())
}

/// One chunk: exactly `chunk_size` bytes (the last one: the rest). Written to a temp file and
/// renamed into place, so a retried chunk replaces the old one whole.
pub(crate) async fn upload_chunk(
    app: &Arc<App>,
    req: Request<Incoming>,
    id: String,
    n: u64,
) -> Result<Resp, ApiError> {
    let p = who(app, &req)?;
    let u = upload_of(app, &p, id).await?;
    if n >= u.chunks() {
        return Err(ApiError::bad_request(
            "invalid_chunk",
            format!("chunk {n} is out of range (0..{})", u.chunks()),
        ));
    }
    let want = u.chunk_len(n);
    if content_length(req.headers()).is_some_and(|l| l > want) {
        return Err(ApiError::too_large(want));
    }
    let mut tmp = app.store.temp().await?;
    let mut body = req.into_body();
    tmp.write_body(&mut body, want).await?;
    if tmp.len != want {
        return Err(ApiError::bad_request(
            "chunk_size_mismatch",
            format!("chunk {n} must be {want} bytes, got {}", tmp.len),
        ));
    }
    let dest = app.store.chunk_dir(&u.id).join(n.to_string());
    app.store
        .persist(tmp, &dest)
        .await
        .map_err(|_| ApiError::not_found("upload"))?;
    app.metrics
        .upload_bytes
        .fetch_add(want, std::sync::atomic::Ordering::Relaxed);
    Ok(body::json(
        StatusCode::OK,
        &json!({"upload_id": u.id, "chunk": n, "size": want}),
    ))
}

pub(crate) async fn upload_complete(
    app: &Arc<App>,
    req: Request<Incoming>,
    id: String,
) -> Result<Resp, ApiError> {
    let p = who(app, &req)?;
    let u = upload_of(app, &p, id).await?;
    let got = received(app, &u).await;
    if got.len() as u64 != u.chunks() {
        let missing: Vec<u64> = (0..u.chunks())
            .filter(|n| !got.contains(n))
            .take(20)
            .collect();
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "incomplete_upload",
            format!(
                "{} of {} chunks received; missing {missing:?}",
                got.len(),
                u.chunks()
            ),
        ));
    }
    let mut tmp = app.store.temp().await?;
    for n in 0..u.chunks() {
        tmp.append_file(&app.store.chunk_dir(&u.id).join(n.to_string()))
            .await?;
    }
    let f = publish(app, &p, u.folder_id, u.name.clone(), tmp, false).await?;
    // Chunk bytes were counted as they arrived.
    app.metrics
        .upload_bytes
        .fetch_sub(f.size as u64, std::sync::atomic::Ordering::Relaxed);
    drop_upload(app, &u.id).await?;
    Ok(body::json(
        StatusCode::CREATED,
        &json!({ "file": f.json() }),
    ))
}
