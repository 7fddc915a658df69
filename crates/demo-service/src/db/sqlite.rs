//! The SQLite backend (the default): schema, a small connection pool, the operations.
//!
//! WAL mode lets the readers run while the single writer commits. Listing is served by
//! `(folder_id, name|size|created_at)` indexes (the rowid breaks ties), so a page of a
//! 10,000-entry folder is an index range scan; name search goes through the FTS5 table
//! `files_name_fts` (external content on `files.name`, kept in sync by triggers).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::{
    name_taken, now_ms, FileRow, FolderRow, Listed, Listing, Storage, UploadRow, UserRow,
    FILE_COLS, FOLDER_COLS,
};
use crate::error::ApiError;
use rusqlite::{Connection, OptionalExtension, Row};

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
pub(crate) struct SqliteDb {
    writer: Mutex<Connection>,
    readers: Vec<Mutex<Connection>>,
    next: AtomicUsize,
}

impl SqliteDb {
    pub(crate) fn open(path: &Path) -> rusqlite::Result<SqliteDb> {
        let writer = open_conn(path)?;
        writer.execute_batch(SCHEMA)?;
        let mut readers = Vec::new();
        for _ in 0..READERS {
            let c = open_conn(path)?;
            c.execute_batch("PRAGMA query_only = ON;")?;
            readers.push(Mutex::new(c));
        }
        Ok(SqliteDb {
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
}

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
            Some(_) if !overwrite => return Err(name_taken(name)),
            Some(f) => {
                tx.prepare_cached(
                    "UPDATE files SET size = ?1, blob = ?2, modified_at = ?3 WHERE id = ?4",
                )?
                .execute(rusqlite::params![size as i64, blob, now, f.id])?;
                f.repointed(size as i64, blob, now)
            }
            None => {
                tx.prepare_cached(
                "INSERT INTO files (user_id, folder_id, name, size, blob, created_at, modified_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
            )?
            .execute(rusqlite::params![user, folder, name, size as i64, blob, now])?;
                let id = tx.last_insert_rowid();
                (
                    FileRow::new_at(id, user, folder, name, size as i64, blob, now),
                    None,
                )
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

/// Turns search terms into an FTS5 query: each word becomes a quoted prefix term, so
/// operators and quotes in the input are plain text, never query syntax.
pub(crate) fn fts_query(terms: &[String]) -> String {
    let quoted: Vec<String> = terms
        .iter()
        .map(|w| format!("\"{}\"*", w.replace('"', "\"\"")))
        .collect();
    quoted.join(" ")
}

fn immediate(c: &mut Connection) -> rusqlite::Result<rusqlite::Transaction<'_>> {
    c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
}

impl Storage for SqliteDb {
    fn ping(&self) -> bool {
        self.reader()
            .query_row("SELECT 1", [], |r| r.get::<_, i64>(0))
            .is_ok()
    }

    fn user_by_name(&self, name: &str) -> Result<Option<UserRow>, ApiError> {
        Ok(user_by_name(&self.reader(), name)?)
    }

    fn register(&self, name: &str, email: Option<&str>, hash: &str) -> Result<UserRow, ApiError> {
        let mut c = self.writer();
        let tx = immediate(&mut c)?;
        if user_by_name(&tx, name)?.is_some() {
            return Err(super::username_taken());
        }
        tx.execute(
            "INSERT INTO users (username, email, password_hash, created_at) VALUES (?1, ?2, ?3, ?4)",
            rusqlite::params![name, email, hash, now_ms()],
        )?;
        let id = tx.last_insert_rowid();
        let root = create_folder(&tx, id, None, &format!("root-{id}"))?;
        tx.execute(
            "UPDATE users SET root_folder_id = ?1 WHERE id = ?2",
            [root.id, id],
        )?;
        let user = user_by_name(&tx, name)?.ok_or_else(|| ApiError::internal("user vanished"))?;
        tx.commit()?;
        Ok(user)
    }

    fn folder_of(&self, user: i64, id: i64) -> Result<FolderRow, ApiError> {
        folder_of(&self.reader(), user, id)
    }

    fn file_of(&self, user: i64, id: i64) -> Result<FileRow, ApiError> {
        file_of(&self.reader(), user, id)
    }

    fn child_folder(&self, parent: i64, name: &str) -> Result<Option<FolderRow>, ApiError> {
        Ok(child_folder(&self.reader(), parent, name)?)
    }

    fn child_file(&self, folder: i64, name: &str) -> Result<Option<FileRow>, ApiError> {
        Ok(child_file(&self.reader(), folder, name)?)
    }

    fn create_folder(&self, user: i64, parent: i64, name: &str) -> Result<FolderRow, ApiError> {
        let c = self.writer();
        folder_of(&c, user, parent)?;
        create_folder(&c, user, Some(parent), name)
    }

    fn delete_file(&self, user: i64, id: i64) -> Result<FileRow, ApiError> {
        let c = self.writer();
        let f = file_of(&c, user, id)?;
        c.prepare_cached("DELETE FROM files WHERE id = ?1")?
            .execute([id])?;
        Ok(f)
    }

    fn delete_folder(&self, user: i64, id: i64) -> Result<Vec<String>, ApiError> {
        let mut c = self.writer();
        folder_of(&c, user, id)?;
        delete_folder_tree(&mut c, id)
    }

    fn list(&self, user: i64, folder: i64, pg: Listing) -> Result<Listed, ApiError> {
        let c = self.reader();
        let folder = folder_of(&c, user, folder)?;
        let folders = subfolders(&c, folder.id)?;
        let dir = if pg.desc { "DESC" } else { "ASC" };
        let mut st = c.prepare_cached(&format!(
            "SELECT {FILE_COLS} FROM files WHERE folder_id = ?1 ORDER BY {} {dir}, id {dir} LIMIT ?2 OFFSET ?3",
            pg.sort
        ))?;
        let files = st
            .query_map(
                rusqlite::params![folder.id, pg.limit, pg.offset],
                FileRow::from_row,
            )?
            .collect::<rusqlite::Result<_>>()?;
        let total: i64 = c
            .prepare_cached("SELECT COUNT(*) FROM files WHERE folder_id = ?1")?
            .query_row([folder.id], |r| r.get(0))?;
        Ok((folder, folders, files, total))
    }

    fn children(&self, folder: i64) -> Result<(Vec<FolderRow>, Vec<FileRow>), ApiError> {
        let c = self.reader();
        let folders = subfolders(&c, folder)?;
        let mut st = c.prepare_cached(&format!(
            "SELECT {FILE_COLS} FROM files WHERE folder_id = ?1 ORDER BY name"
        ))?;
        let files = st
            .query_map([folder], FileRow::from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok((folders, files))
    }

    fn put_file(
        &self,
        user: i64,
        folder: i64,
        name: &str,
        size: u64,
        blob: &str,
        overwrite: bool,
    ) -> Result<(FileRow, Option<String>), ApiError> {
        let mut c = self.writer();
        folder_of(&c, user, folder)?;
        put_file(&mut c, user, folder, name, size, blob, overwrite)
    }

    fn search(
        &self,
        user: i64,
        terms: &[String],
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<FileRow>, i64), ApiError> {
        let fts = fts_query(terms);
        let c = self.reader();
        let files = c
            .prepare_cached(SEARCH_SQL)?
            .query_map(
                rusqlite::params![fts, user, limit, offset],
                FileRow::from_row,
            )?
            .collect::<rusqlite::Result<_>>()?;
        let total: i64 = c
            .prepare_cached(SEARCH_COUNT_SQL)?
            .query_row(rusqlite::params![fts, user], |r| r.get(0))?;
        Ok((files, total))
    }

    fn move_batch(
        &self,
        user: i64,
        root: i64,
        target: i64,
        files: &[i64],
        folders: &[i64],
    ) -> Result<(), ApiError> {
        let mut c = self.writer();
        let tx = immediate(&mut c)?;
        folder_of(&tx, user, target)?;
        let above = ancestors(&tx, target)?;
        for id in folders {
            folder_of(&tx, user, *id)?;
            if *id == root || above.contains(id) {
                return Err(super::invalid_move());
            }
            tx.prepare_cached("UPDATE folders SET parent_id = ?1 WHERE id = ?2")?
                .execute([target, *id])?;
        }
        for id in files {
            file_of(&tx, user, *id)?;
            tx.prepare_cached("UPDATE files SET folder_id = ?1 WHERE id = ?2")?
                .execute([target, *id])?;
        }
        tx.commit()?;
        Ok(())
    }

    fn upload(&self, id: &str) -> Result<Option<UploadRow>, ApiError> {
        let c = self.reader();
        let row = c
            .prepare_cached(
                "SELECT id, user_id, folder_id, name, size, chunk_size FROM uploads WHERE id = ?1",
            )?
            .query_row([id], |r| {
                Ok(UploadRow {
                    id: r.get(0)?,
                    user_id: r.get(1)?,
                    folder_id: r.get(2)?,
                    name: r.get(3)?,
                    size: r.get::<_, i64>(4)? as u64,
                    chunk_size: r.get::<_, i64>(5)? as u64,
                })
            })
            .optional()?;
        Ok(row)
    }

    fn add_upload(&self, u: &UploadRow) -> Result<(), ApiError> {
        let c = self.writer();
        folder_of(&c, u.user_id, u.folder_id)?;
        c.execute(
            "INSERT INTO uploads (id, user_id, folder_id, name, size, chunk_size, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            rusqlite::params![u.id, u.user_id, u.folder_id, u.name, u.size as i64, u.chunk_size as i64, now_ms()],
        )?;
        Ok(())
    }

    fn sweep_uploads(&self, before: i64) -> Result<Vec<String>, ApiError> {
        let c = self.writer();
        let ids: Vec<String> = c
            .prepare("SELECT id FROM uploads WHERE created_at < ?1")?
            .query_map([before], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        c.execute("DELETE FROM uploads WHERE created_at < ?1", [before])?;
        Ok(ids)
    }

    fn delete_upload(&self, id: &str) -> Result<(), ApiError> {
        self.writer()
            .execute("DELETE FROM uploads WHERE id = ?1", [id])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_db(name: &str) -> (SqliteDb, std::path::PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("volley-demo-db-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        (SqliteDb::open(&dir.join("demo.db")).unwrap(), dir)
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
        let q = |s: &str| fts_query(&super::super::search_terms(s));
        assert_eq!(q("report"), "\"report\"*");
        assert_eq!(q("a\" OR b"), "\"a\"* \"OR\"* \"b\"*");
        assert!(super::super::search_terms("  -- ").is_empty());
    }
}
