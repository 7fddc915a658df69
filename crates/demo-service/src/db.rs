//! SQLite: schema, a small connection pool, and the row types.
//!
//! WAL mode lets the readers run while the single writer commits. Listing is served by
//! `(folder_id, name|size|created_at)` indexes (the rowid breaks ties), so a page of a
//! 10,000-entry folder is an index range scan; name search goes through the FTS5 table
//! `files_name_fts` (external content on `files.name`, kept in sync by triggers).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, OptionalExtension, Row};
use serde_json::{json, Value};

use crate::error::ApiError;

const READERS: usize = 4;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS users (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    email TEXT,
    password_hash TEXT NOT NULL,
    root_folder_id INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS folders (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL,
    parent_id INTEGER,
    name TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS folders_parent_name ON folders(parent_id, name);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL,
    folder_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    size INTEGER NOT NULL,
    blob TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    modified_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS files_folder_name ON files(folder_id, name);
CREATE INDEX IF NOT EXISTS files_folder_size ON files(folder_id, size);
CREATE INDEX IF NOT EXISTS files_folder_created ON files(folder_id, created_at);
CREATE INDEX IF NOT EXISTS files_user ON files(user_id);
CREATE VIRTUAL TABLE IF NOT EXISTS files_name_fts USING fts5(name, content='files', content_rowid='id');
CREATE TRIGGER IF NOT EXISTS files_fts_ai AFTER INSERT ON files BEGIN
    INSERT INTO files_name_fts(rowid, name) VALUES (new.id, new.name);
END;
CREATE TRIGGER IF NOT EXISTS files_fts_ad AFTER DELETE ON files BEGIN
    INSERT INTO files_name_fts(files_name_fts, rowid, name) VALUES ('delete', old.id, old.name);
END;
CREATE TRIGGER IF NOT EXISTS files_fts_au AFTER UPDATE OF name ON files BEGIN
    INSERT INTO files_name_fts(files_name_fts, rowid, name) VALUES ('delete', old.id, old.name);
    INSERT INTO files_name_fts(rowid, name) VALUES (new.id, new.name);
END;
CREATE TABLE IF NOT EXISTS uploads (
    id TEXT PRIMARY KEY,
    user_id INTEGER NOT NULL,
    folder_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    size INTEGER NOT NULL,
    chunk_size INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
";

/// The search query (shared with the query-plan test so they cannot drift apart).
pub(crate) const SEARCH_SQL: &str =
    "SELECT f.id, f.user_id, f.folder_id, f.name, f.size, f.blob, f.created_at, f.modified_at
     FROM files_name_fts JOIN files f ON f.id = files_name_fts.rowid
     WHERE files_name_fts MATCH ?1 AND f.user_id = ?2
     ORDER BY f.name LIMIT ?3 OFFSET ?4";
pub(crate) const SEARCH_COUNT_SQL: &str =
    "SELECT COUNT(*) FROM files_name_fts JOIN files f ON f.id = files_name_fts.rowid
     WHERE files_name_fts MATCH ?1 AND f.user_id = ?2";

/// One writer and a few readers; callers run on tokio's blocking pool.
pub(crate) struct Db {
    writer: Mutex<Connection>,
    readers: Vec<Mutex<Connection>>,
    next: AtomicUsize,
}

impl Db {
    pub(crate) fn open(path: &Path) -> rusqlite::Result<Db> {
        let writer = open_conn(path)?;
        writer.execute_batch(SCHEMA)?;
        let mut readers = Vec::new();
        for _ in 0..READERS {
            let c = open_conn(path)?;
            c.execute_batch("PRAGMA query_only = ON;")?;
            readers.push(Mutex::new(c));
        }
        Ok(Db {
            writer: Mutex::new(writer),
            readers,
            next: AtomicUsize::new(0),
        })
    }

    pub(crate) fn writer(&self) -> MutexGuard<'_, Connection> {
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn reader(&self) -> MutexGuard<'_, Connection> {
        for r in &self.readers {
            if let Ok(g) = r.try_lock() {
                return g;
            }
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.readers.len();
        self.readers[i].lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn open_conn(path: &Path) -> rusqlite::Result<Connection> {
    let c = Connection::open(path)?;
    c.busy_timeout(std::time::Duration::from_secs(10))?;
    c.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")?;
    c.set_prepared_statement_cache_capacity(64);
    Ok(c)
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
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

pub(crate) fn user_by_name(c: &Connection, name: &str) -> rusqlite::Result<Option<UserRow>> {
    c.prepare_cached(
        "SELECT id, username, email, password_hash, root_folder_id, created_at FROM users WHERE username = ?1",
    )?
    .query_row([name], |r| {
        Ok(UserRow {
            id: r.get(0)?,
            username: r.get(1)?,
            email: r.get(2)?,
            password_hash: r.get(3)?,
            root: r.get(4)?,
            created_at: r.get(5)?,
        })
    })
    .optional()
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
    pub(crate) fn from_row(r: &Row) -> rusqlite::Result<FolderRow> {
        Ok(FolderRow {
            id: r.get(0)?,
            user_id: r.get(1)?,
            parent_id: r.get(2)?,
            name: r.get(3)?,
            created_at: r.get(4)?,
        })
    }

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
    pub(crate) fn from_row(r: &Row) -> rusqlite::Result<FileRow> {
        Ok(FileRow {
            id: r.get(0)?,
            user_id: r.get(1)?,
            folder_id: r.get(2)?,
            name: r.get(3)?,
            size: r.get(4)?,
            blob: r.get(5)?,
            created_at: r.get(6)?,
            modified_at: r.get(7)?,
        })
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

/// A folder owned by `user` (someone else's folder is "not found": ids do not leak).
pub(crate) fn folder_of(c: &Connection, user: i64, id: i64) -> Result<FolderRow, ApiError> {
    c.prepare_cached(&format!("SELECT {FOLDER_COLS} FROM folders WHERE id = ?1"))?
        .query_row([id], FolderRow::from_row)
        .optional()?
        .filter(|f| f.user_id == user)
        .ok_or_else(|| ApiError::not_found("folder"))
}

pub(crate) fn file_of(c: &Connection, user: i64, id: i64) -> Result<FileRow, ApiError> {
    c.prepare_cached(&format!("SELECT {FILE_COLS} FROM files WHERE id = ?1"))?
        .query_row([id], FileRow::from_row)
        .optional()?
        .filter(|f| f.user_id == user)
        .ok_or_else(|| ApiError::not_found("file"))
}

pub(crate) fn child_folder(
    c: &Connection,
    parent: i64,
    name: &str,
) -> rusqlite::Result<Option<FolderRow>> {
    c.prepare_cached(&format!(
        "SELECT {FOLDER_COLS} FROM folders WHERE parent_id = ?1 AND name = ?2"
    ))?
    .query_row(rusqlite::params![parent, name], FolderRow::from_row)
    .optional()
}

pub(crate) fn child_file(
    c: &Connection,
    folder: i64,
    name: &str,
) -> rusqlite::Result<Option<FileRow>> {
    c.prepare_cached(&format!(
        "SELECT {FILE_COLS} FROM files WHERE folder_id = ?1 AND name = ?2"
    ))?
    .query_row(rusqlite::params![folder, name], FileRow::from_row)
    .optional()
}

pub(crate) fn subfolders(c: &Connection, parent: i64) -> rusqlite::Result<Vec<FolderRow>> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {FOLDER_COLS} FROM folders WHERE parent_id = ?1 ORDER BY name"
    ))?;
    let rows = st.query_map([parent], FolderRow::from_row)?;
    rows.collect()
}

/// Creates a folder; a duplicate name in the parent is a 409.
pub(crate) fn create_folder(
    c: &Connection,
    user: i64,
    parent: Option<i64>,
    name: &str,
) -> Result<FolderRow, ApiError> {
    let now = now_ms();
    c.prepare_cached(
        "INSERT INTO folders (user_id, parent_id, name, created_at) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(rusqlite::params![user, parent, name, now])?;
    Ok(FolderRow {
        id: c.last_insert_rowid(),
        user_id: user,
        parent_id: parent,
        name: name.to_owned(),
        created_at: now,
    })
}

/// Inserts a file row for a blob already in place, or (with `overwrite`) points an existing
/// file of that name at the new blob. Returns the row and the replaced blob, if any.
pub(crate) fn put_file(
    c: &mut Connection,
    user: i64,
    folder: i64,
    name: &str,
    size: u64,
    blob: &str,
    overwrite: bool,
) -> Result<(FileRow, Option<String>), ApiError> {
    let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let now = now_ms();
    let existing = child_file(&tx, folder, name)?;
    let (row, old) =
        match existing {
            Some(_) if !overwrite => {
                return Err(ApiError::conflict(format!(
                    "a file named {name:?} already exists in this folder"
                )))
            }
            Some(mut f) => {
                tx.prepare_cached(
                    "UPDATE files SET size = ?1, blob = ?2, modified_at = ?3 WHERE id = ?4",
                )?
                .execute(rusqlite::params![size as i64, blob, now, f.id])?;
                let old = std::mem::replace(&mut f.blob, blob.to_owned());
                f.size = size as i64;
                f.modified_at = now;
                (f, Some(old))
            }
            None => {
                tx.prepare_cached(
                "INSERT INTO files (user_id, folder_id, name, size, blob, created_at, modified_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
            )?
            .execute(rusqlite::params![user, folder, name, size as i64, blob, now])?;
                let row = FileRow {
                    id: tx.last_insert_rowid(),
                    user_id: user,
                    folder_id: folder,
                    name: name.to_owned(),
                    size: size as i64,
                    blob: blob.to_owned(),
                    created_at: now,
                    modified_at: now,
                };
                (row, None)
            }
        };
    tx.commit()?;
    Ok((row, old))
}

/// Deletes a folder and everything below it; returns the blobs to remove from disk.
pub(crate) fn delete_folder_tree(c: &mut Connection, folder: i64) -> Result<Vec<String>, ApiError> {
    let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    const TREE: &str = "WITH RECURSIVE sub(id) AS (SELECT ?1 UNION ALL SELECT f.id FROM folders f JOIN sub ON f.parent_id = sub.id)";
    let blobs: Vec<String> = {
        let mut st = tx.prepare(&format!(
            "{TREE} SELECT blob FROM files WHERE folder_id IN (SELECT id FROM sub)"
        ))?;
        let rows = st.query_map([folder], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    tx.execute(
        &format!("{TREE} DELETE FROM files WHERE folder_id IN (SELECT id FROM sub)"),
        [folder],
    )?;
    tx.execute(
        &format!("{TREE} DELETE FROM folders WHERE id IN (SELECT id FROM sub)"),
        [folder],
    )?;
    tx.commit()?;
    Ok(blobs)
}

/// The ids of `folder` and all its ancestors.
pub(crate) fn ancestors(c: &Connection, folder: i64) -> rusqlite::Result<Vec<i64>> {
    let mut st = c.prepare_cached(
        "WITH RECURSIVE up(id, parent) AS (
             SELECT id, parent_id FROM folders WHERE id = ?1
             UNION ALL SELECT f.id, f.parent_id FROM folders f JOIN up ON f.id = up.parent)
         SELECT id FROM up",
    )?;
    let rows = st.query_map([folder], |r| r.get(0))?;
    rows.collect()
}

/// Turns user input into an FTS5 query: each word becomes a quoted prefix term, so
/// operators and quotes in the input are plain text, never query syntax.
pub(crate) fn fts_query(q: &str) -> Option<String> {
    let terms: Vec<String> = q
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{}\"*", w.replace('"', "\"\"")))
        .collect();
    if terms.is_empty() {
        None
    } else {
        Some(terms.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_db(name: &str) -> (Db, std::path::PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("volley-demo-db-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        (Db::open(&dir.join("demo.db")).unwrap(), dir)
    }

    #[test]
    fn bundled_sqlite_has_fts5() {
        let c = Connection::open_in_memory().unwrap();
        let on: i64 = c
            .query_row("SELECT sqlite_compileoption_used('ENABLE_FTS5')", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(on, 1);
    }

    #[test]
    fn search_uses_the_fts_index() {
        let (db, dir) = temp_db("plan");
        let mut c = db.writer();
        let root = create_folder(&c, 1, None, "root").unwrap();
        for i in 0..200 {
            let name = if i % 20 == 0 {
                format!("report-{i:05}.txt")
            } else {
                format!("file-{i:05}.txt")
            };
            put_file(&mut c, 1, root.id, &name, 10, "x", false).unwrap();
        }
        let plan: Vec<String> = {
            let mut st = c
                .prepare(&format!("EXPLAIN QUERY PLAN {SEARCH_SQL}"))
                .unwrap();
            let rows = st
                .query_map(rusqlite::params!["\"report\"*", 1, 50, 0], |r| {
                    r.get::<_, String>(3)
                })
                .unwrap();
            rows.map(|r| r.unwrap()).collect()
        };
        let text = plan.join("\n");
        assert!(
            text.contains("files_name_fts VIRTUAL TABLE INDEX"),
            "{text}"
        );
        assert!(text.contains("USING INTEGER PRIMARY KEY"), "{text}");
        assert!(
            !text.contains("SCAN f\n") && !text.ends_with("SCAN f"),
            "no full scan of files: {text}"
        );
        let n: i64 = c
            .query_row(SEARCH_COUNT_SQL, rusqlite::params!["\"report\"*", 1], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(n, 10);
        drop(c);
        drop(db);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn listing_pages_use_the_folder_indexes() {
        let (db, dir) = temp_db("listplan");
        let c = db.writer();
        for (col, idx) in [
            ("name", "files_folder_name"),
            ("size", "files_folder_size"),
            ("created_at", "files_folder_created"),
        ] {
            for order in ["ASC", "DESC"] {
                let sql = format!("EXPLAIN QUERY PLAN SELECT {FILE_COLS} FROM files WHERE folder_id = 1 ORDER BY {col} {order}, id {order} LIMIT 50 OFFSET 100");
                let mut st = c.prepare(&sql).unwrap();
                let text: Vec<String> = st
                    .query_map([], |r| r.get::<_, String>(3))
                    .unwrap()
                    .map(|r| r.unwrap())
                    .collect();
                let text = text.join("\n");
                assert!(text.contains(idx), "{sql}: {text}");
                assert!(!text.contains("TEMP B-TREE"), "no sort step: {sql}: {text}");
            }
        }
        drop(c);
        drop(db);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn fts_query_quotes_user_input() {
        assert_eq!(fts_query("report").as_deref(), Some("\"report\"*"));
        assert_eq!(
            fts_query("a\" OR b").as_deref(),
            Some("\"a\"* \"OR\"* \"b\"*")
        );
        assert_eq!(fts_query("  -- "), None);
    }
}
