//! Storage: the operations the handlers need, implemented by two backends with the same
//! behaviour — embedded SQLite (the default, `sqlite`) and PostgreSQL (`pg`, with
//! `volley demo serve --database postgres://…`).
//!
//! # Layout
//!
//! * this file: the [`Storage`] trait, [`open`], the row types and their JSON.
//! * `sqlite`: rusqlite pool (one writer, a few readers), schema with the FTS5 name index.
//! * `pg`: a pool of `postgres::Client`s from `volley_postgres::connect`, schema in
//!   PostgreSQL's dialect, name search by `to_tsvector('simple', …)` prefix terms.
//!
//! Every method runs blocking I/O: callers are on tokio's blocking pool. Ownership checks
//! (someone else's folder or file is "not found") happen inside the backends so a check and
//! the write that depends on it share one transaction.

mod pg;
mod sqlite;

use std::path::Path;

use serde_json::{json, Value};

use crate::error::ApiError;

/// The database behind the service.
pub(crate) type Db = Box<dyn Storage>;

/// SQLite in `data_dir/demo.db`, or PostgreSQL when `database` is a `postgres://` URL.
pub(crate) fn open(data_dir: &Path, database: Option<&str>) -> Result<Db, String> {
    match database {
        None => sqlite::SqliteDb::open(&data_dir.join("demo.db"))
            .map(|d| Box::new(d) as Db)
            .map_err(|e| format!("database: {e}")),
        // On its own thread: the synchronous client runs its own runtime, which cannot start
        // inside an async context (a test's, or a caller's).
        Some(url) => std::thread::scope(|s| {
            s.spawn(|| pg::PgDb::open(url).map(|d| Box::new(d) as Db))
                .join()
                .unwrap_or_else(|_| Err("--database: the connection thread panicked".into()))
        }),
    }
}

/// A page of a folder listing (`sort` is a column name the handler has checked).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Listing {
    pub sort: &'static str,
    pub desc: bool,
    pub limit: i64,
    pub offset: i64,
}

/// What a folder listing returns: the folder, its subfolders, a page of files, the file count.
pub(crate) type Listed = (FolderRow, Vec<FolderRow>, Vec<FileRow>, i64);

pub(crate) trait Storage: Send + Sync {
    /// `SELECT 1` (the readiness probe).
    fn ping(&self) -> bool;
    fn user_by_name(&self, name: &str) -> Result<Option<UserRow>, ApiError>;
    /// A new user with a root folder; a taken name is a 409.
    fn register(&self, name: &str, email: Option<&str>, hash: &str) -> Result<UserRow, ApiError>;
    fn folder_of(&self, user: i64, id: i64) -> Result<FolderRow, ApiError>;
    fn file_of(&self, user: i64, id: i64) -> Result<FileRow, ApiError>;
    fn child_folder(&self, parent: i64, name: &str) -> Result<Option<FolderRow>, ApiError>;
    fn child_file(&self, folder: i64, name: &str) -> Result<Option<FileRow>, ApiError>;
    /// A folder in `user`'s folder `parent`; a duplicate name is a 409.
    fn create_folder(&self, user: i64, parent: i64, name: &str) -> Result<FolderRow, ApiError>;
    /// Deletes `user`'s file; returns its row (for the blob).
    fn delete_file(&self, user: i64, id: i64) -> Result<FileRow, ApiError>;
    /// Deletes `user`'s folder and everything below it; returns the blobs to remove.
    fn delete_folder(&self, user: i64, id: i64) -> Result<Vec<String>, ApiError>;
    fn list(&self, user: i64, folder: i64, page: Listing) -> Result<Listed, ApiError>;
    /// Subfolders and files of a folder, by name (WebDAV's PROPFIND depth 1).
    fn children(&self, folder: i64) -> Result<(Vec<FolderRow>, Vec<FileRow>), ApiError>;
    /// A file row for a blob already in place in `user`'s `folder`, or (with `overwrite`)
    /// an existing file of that name pointed at it. Returns the row and the replaced blob.
    #[allow(clippy::too_many_arguments)]
    fn put_file(
        &self,
        user: i64,
        folder: i64,
        name: &str,
        size: u64,
        blob: &str,
        overwrite: bool,
    ) -> Result<(FileRow, Option<String>), ApiError>;
    /// `user`'s files whose name has a word starting with each term (by name), and the count.
    fn search(
        &self,
        user: i64,
        terms: &[String],
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<FileRow>, i64), ApiError>;
    /// Moves files and folders into `target`, all or nothing.
    fn move_batch(
        &self,
        user: i64,
        root: i64,
        target: i64,
        files: &[i64],
        folders: &[i64],
    ) -> Result<(), ApiError>;
    fn upload(&self, id: &str) -> Result<Option<UploadRow>, ApiError>;
    /// Records a chunked upload into `user`'s folder `u.folder_id`.
    fn add_upload(&self, u: &UploadRow) -> Result<(), ApiError>;
    /// Drops uploads created before `before` (ms); returns their ids.
    fn sweep_uploads(&self, before: i64) -> Result<Vec<String>, ApiError>;
    fn delete_upload(&self, id: &str) -> Result<(), ApiError>;
}

/// The words of a search (letters and digits); each matches as a prefix of a word of a name.
/// Empty: nothing to search for. Operators and quotes in the input are plain text.
pub(crate) fn search_terms(q: &str) -> Vec<String> {
    q.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A chunked upload in progress.
#[derive(Debug, Clone)]
pub(crate) struct UploadRow {
    pub id: String,
    pub user_id: i64,
    pub folder_id: i64,
    pub name: String,
    pub size: u64,
    pub chunk_size: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct UserRow {
    pub id: i64,
    pub username: String,
    pub email: Option<String>,
    pub password_hash: String,
    pub root: i64,
    pub created_at: i64,
}

impl UserRow {
    pub(crate) fn json(&self) -> Value {
        json!({
            "id": self.id,
            "username": self.username,
            "email": self.email,
            "root_folder_id": self.root,
            "created_at": self.created_at,
        })
    }
}

#[derive(Debug, Clone)]
pub(crate) struct FolderRow {
    pub id: i64,
    pub user_id: i64,
    pub parent_id: Option<i64>,
    pub name: String,
    pub created_at: i64,
}

pub(crate) const FOLDER_COLS: &str = "id, user_id, parent_id, name, created_at";

impl FolderRow {
    pub(crate) fn json(&self) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "parent_id": self.parent_id,
            "created_at": self.created_at,
        })
    }
}

#[derive(Debug, Clone)]
pub(crate) struct FileRow {
    pub id: i64,
    pub user_id: i64,
    pub folder_id: i64,
    pub name: String,
    pub size: i64,
    pub blob: String,
    pub created_at: i64,
    pub modified_at: i64,
}

pub(crate) const FILE_COLS: &str =
    "id, user_id, folder_id, name, size, blob, created_at, modified_at";

impl FileRow {
    /// The row of a file just inserted with `id`, created and modified `now`.
    pub(crate) fn new_at(
        id: i64,
        user: i64,
        folder: i64,
        name: &str,
        size: i64,
        blob: &str,
        now: i64,
    ) -> FileRow {
        FileRow {
            id,
            user_id: user,
            folder_id: folder,
            name: name.to_owned(),
            size,
            blob: blob.to_owned(),
            created_at: now,
            modified_at: now,
        }
    }

    /// The row once overwritten with a new blob; the replaced blob is returned for removal.
    pub(crate) fn repointed(
        mut self,
        size: i64,
        blob: &str,
        now: i64,
    ) -> (FileRow, Option<String>) {
        let old = std::mem::replace(&mut self.blob, blob.to_owned());
        self.size = size;
        self.modified_at = now;
        (self, Some(old))
    }

    pub(crate) fn json(&self) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "size": self.size,
            "folder_id": self.folder_id,
            "created_at": self.created_at,
            "modified_at": self.modified_at,
        })
    }
}

/// A conflict for a name taken in a folder (both backends' unique indexes).
pub(crate) fn name_taken(name: &str) -> ApiError {
    ApiError::conflict(format!(
        "a file named {name:?} already exists in this folder"
    ))
}

fn username_taken() -> ApiError {
    ApiError::new(
        hyper::StatusCode::CONFLICT,
        "username_taken",
        "that username is taken",
    )
}

fn invalid_move() -> ApiError {
    ApiError::bad_request(
        "invalid_move",
        "a folder cannot move into itself or below itself",
    )
}
