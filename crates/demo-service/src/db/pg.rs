//! The PostgreSQL backend: the same tables as SQLite in PostgreSQL's dialect, and a small
//! pool of synchronous clients (callers are on tokio's blocking pool).
//!
//! Names are `COLLATE "C"` so listings sort byte-wise like SQLite's default collation on
//! any server. Name search: a GIN index on `to_tsvector('simple', name with punctuation
//! turned into spaces)`, queried with `term:*` prefix terms joined by `&` — like the FTS5
//! index (unicode61 tokens, quoted prefix terms): case-insensitive, each word of the query
//! must start a word of the name. Writes that check a tree (batch move) take a transaction
//! advisory lock, as SQLite's single writer serialises them (see `TREE_LOCK`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use volley_postgres::postgres::{self, error::SqlState, Client, GenericClient, Row};

use super::{
    name_taken, now_ms, FileRow, FolderRow, Listed, Listing, Storage, UploadRow, UserRow,
    FILE_COLS, FOLDER_COLS,
};
use crate::error::ApiError;

const POOL: usize = 6;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS users (
    id BIGSERIAL PRIMARY KEY,
    username TEXT COLLATE "C" NOT NULL UNIQUE,
    email TEXT,
    password_hash TEXT NOT NULL,
    root_folder_id BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS folders (
    id BIGSERIAL PRIMARY KEY,
    user_id BIGINT NOT NULL,
    parent_id BIGINT,
    name TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS folders_parent_name ON folders(parent_id, name);
CREATE TABLE IF NOT EXISTS files (
    id BIGSERIAL PRIMARY KEY,
    user_id BIGINT NOT NULL,
    folder_id BIGINT NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    size BIGINT NOT NULL,
    blob TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    modified_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS files_folder_name ON files(folder_id, name);
CREATE INDEX IF NOT EXISTS files_folder_size ON files(folder_id, size);
CREATE INDEX IF NOT EXISTS files_folder_created ON files(folder_id, created_at);
CREATE INDEX IF NOT EXISTS files_user ON files(user_id);
CREATE INDEX IF NOT EXISTS files_name_search ON files USING GIN (NAME_DOC);
CREATE TABLE IF NOT EXISTS uploads (
    id TEXT PRIMARY KEY,
    user_id BIGINT NOT NULL,
    folder_id BIGINT NOT NULL,
    name TEXT NOT NULL,
    size BIGINT NOT NULL,
    chunk_size BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
"#;

/// The indexed search document of a file name (the search query repeats it exactly, so the
/// planner can use the GIN index).
const NAME_DOC: &str =
    "to_tsvector('simple', regexp_replace(name, '[[:punct:][:space:][:cntrl:]]+', ' ', 'g'))";

pub(crate) struct PgDb {
    url: String,
    clients: Vec<Mutex<Client>>,
    next: AtomicUsize,
}

impl PgDb {
    /// Connects the pool and creates the schema; errors name the (redacted) URL.
    pub(crate) fn open(url: &str) -> Result<PgDb, String> {
        let connect = || volley_postgres::connect(url).map_err(|e| format!("--database: {e}"));
        let mut first = connect()?;
        first
            .batch_execute(&SCHEMA.replace("NAME_DOC", NAME_DOC))
            .map_err(|e| {
                format!(
                    "--database {}: creating the schema failed: {}",
                    volley_postgres::redact(url),
                    describe(&e)
                )
            })?;
        let mut clients = vec![Mutex::new(first)];
        for _ in 1..POOL {
            clients.push(Mutex::new(connect()?));
        }
        Ok(PgDb {
            url: url.to_owned(),
            clients,
            next: AtomicUsize::new(0),
        })
    }

    /// A free client if any, else the next one in turn; a closed one is reconnected.
    fn client(&self) -> Result<MutexGuard<'_, Client>, ApiError> {
        let mut guard = self
            .clients
            .iter()
            .find_map(|c| c.try_lock().ok())
            .unwrap_or_else(|| {
                let i = self.next.fetch_add(1, Ordering::Relaxed) % self.clients.len();
                self.clients[i].lock().unwrap_or_else(|p| p.into_inner())
            });
        if guard.is_closed() {
            *guard = volley_postgres::connect(&self.url).map_err(ApiError::internal)?;
        }
        Ok(guard)
    }
}

impl Drop for PgDb {
    /// Closing a client blocks on its own runtime, which panics on a thread that drives
    /// async tasks (the service's last `App` reference goes away on one): close elsewhere.
    fn drop(&mut self) {
        let clients = std::mem::take(&mut self.clients);
        let _ = std::thread::spawn(move || drop(clients)).join();
    }
}

/// The server's message (the crate's Display says only "db error").
pub(crate) fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => format!("{}: {}", d.severity(), d.message()),
        None => e.to_string(),
    }
}

impl From<postgres::Error> for ApiError {
    fn from(e: postgres::Error) -> Self {
        if e.code() == Some(&SqlState::UNIQUE_VIOLATION) {
            ApiError::conflict("an entry with that name already exists")
        } else {
            ApiError::internal(describe(&e))
        }
    }
}

fn folder(r: &Row) -> FolderRow {
    FolderRow {
        id: r.get(0),
        user_id: r.get(1),
        parent_id: r.get(2),
        name: r.get(3),
        created_at: r.get(4),
    }
}

fn file(r: &Row) -> FileRow {
    FileRow {
        id: r.get(0),
        user_id: r.get(1),
        folder_id: r.get(2),
        name: r.get(3),
        size: r.get(4),
        blob: r.get(5),
        created_at: r.get(6),
        modified_at: r.get(7),
    }
}

fn user_by_name(c: &mut impl GenericClient, name: &str) -> Result<Option<UserRow>, ApiError> {
    let r = c.query_opt(
        "SELECT id, username, email, password_hash, root_folder_id, created_at FROM users WHERE username = $1",
        &[&name],
    )?;
    Ok(r.map(|r| UserRow {
        id: r.get(0),
        username: r.get(1),
        email: r.get(2),
        password_hash: r.get(3),
        root: r.get(4),
        created_at: r.get(5),
    }))
}

fn folder_of(c: &mut impl GenericClient, user: i64, id: i64) -> Result<FolderRow, ApiError> {
    c.query_opt(
        &format!("SELECT {FOLDER_COLS} FROM folders WHERE id = $1"),
        &[&id],
    )?
    .map(|r| folder(&r))
    .filter(|f| f.user_id == user)
    .ok_or_else(|| ApiError::not_found("folder"))
}

fn file_of(c: &mut impl GenericClient, user: i64, id: i64) -> Result<FileRow, ApiError> {
    c.query_opt(
        &format!("SELECT {FILE_COLS} FROM files WHERE id = $1"),
        &[&id],
    )?
    .map(|r| file(&r))
    .filter(|f| f.user_id == user)
    .ok_or_else(|| ApiError::not_found("file"))
}

fn insert_folder(
    c: &mut impl GenericClient,
    user: i64,
    parent: Option<i64>,
    name: &str,
) -> Result<FolderRow, ApiError> {
    let now = now_ms();
    let r = c.query_one(
        "INSERT INTO folders (user_id, parent_id, name, created_at) VALUES ($1, $2, $3, $4) RETURNING id",
        &[&user, &parent, &name, &now],
    )?;
    Ok(FolderRow {
        id: r.get(0),
        user_id: user,
        parent_id: parent,
        name: name.to_owned(),
        created_at: now,
    })
}

/// `to_tsquery` text: every term a prefix, all required (terms are letters and digits only).
fn ts_query(terms: &[String]) -> String {
    let t: Vec<String> = terms.iter().map(|w| format!("{w}:*")).collect();
    t.join(" & ")
}

/// The search query ($1 tsquery text, $2 user; a page: $3 limit, $4 offset) or its count.
fn search_sql(count: bool) -> String {
    let cond = format!("{NAME_DOC} @@ to_tsquery('simple', $1) AND user_id = $2");
    if count {
        format!("SELECT COUNT(*) FROM files WHERE {cond}")
    } else {
        format!("SELECT {FILE_COLS} FROM files WHERE {cond} ORDER BY name LIMIT $3 OFFSET $4")
    }
}

/// The advisory lock of the folder tree: moves and folder deletes hold it exclusively, writes
/// into a folder share it — so no file lands in a folder a concurrent delete is removing and
/// no two moves build a cycle (SQLite's single writer serialises all of these).
const TREE_LOCK: i64 = 0x766f_6c6c_6579;

fn lock_tree(tx: &mut postgres::Transaction<'_>, exclusive: bool) -> Result<(), ApiError> {
    let f = if exclusive {
        "pg_advisory_xact_lock"
    } else {
        "pg_advisory_xact_lock_shared"
    };
    tx.execute(&format!("SELECT {f}($1)"), &[&TREE_LOCK])?;
    Ok(())
}

const TREE: &str = "WITH RECURSIVE sub(id) AS (SELECT $1::BIGINT UNION ALL SELECT f.id FROM folders f JOIN sub ON f.parent_id = sub.id)";

impl Storage for PgDb {
    fn ping(&self) -> bool {
        self.client()
            .map(|mut c| c.query_one("SELECT 1", &[]).is_ok())
            .unwrap_or(false)
    }

    fn user_by_name(&self, name: &str) -> Result<Option<UserRow>, ApiError> {
        user_by_name(&mut *self.client()?, name)
    }

    fn register(&self, name: &str, email: Option<&str>, hash: &str) -> Result<UserRow, ApiError> {
        let mut c = self.client()?;
        let mut tx = c.transaction()?;
        if user_by_name(&mut tx, name)?.is_some() {
            return Err(super::username_taken());
        }
        let id: i64 = tx
            .query_one(
                "INSERT INTO users (username, email, password_hash, created_at) VALUES ($1, $2, $3, $4) RETURNING id",
                &[&name, &email, &hash, &now_ms()],
            )
            .map_err(|e| match e.code() {
                Some(&SqlState::UNIQUE_VIOLATION) => super::username_taken(),
                _ => e.into(),
            })?
            .get(0);
        let root = insert_folder(&mut tx, id, None, &format!("root-{id}"))?;
        tx.execute(
            "UPDATE users SET root_folder_id = $1 WHERE id = $2",
            &[&root.id, &id],
        )?;
        let user =
            user_by_name(&mut tx, name)?.ok_or_else(|| ApiError::internal("user vanished"))?;
        tx.commit()?;
        Ok(user)
    }

    fn folder_of(&self, user: i64, id: i64) -> Result<FolderRow, ApiError> {
        folder_of(&mut *self.client()?, user, id)
    }

    fn file_of(&self, user: i64, id: i64) -> Result<FileRow, ApiError> {
        file_of(&mut *self.client()?, user, id)
    }

    fn child_folder(&self, parent: i64, name: &str) -> Result<Option<FolderRow>, ApiError> {
        let r = self.client()?.query_opt(
            &format!("SELECT {FOLDER_COLS} FROM folders WHERE parent_id = $1 AND name = $2"),
            &[&parent, &name],
        )?;
        Ok(r.map(|r| folder(&r)))
    }

    fn child_file(&self, folder: i64, name: &str) -> Result<Option<FileRow>, ApiError> {
        let r = self.client()?.query_opt(
            &format!("SELECT {FILE_COLS} FROM files WHERE folder_id = $1 AND name = $2"),
            &[&folder, &name],
        )?;
        Ok(r.map(|r| file(&r)))
    }

    fn create_folder(&self, user: i64, parent: i64, name: &str) -> Result<FolderRow, ApiError> {
        let mut c = self.client()?;
        let mut tx = c.transaction()?;
        lock_tree(&mut tx, false)?;
        folder_of(&mut tx, user, parent)?;
        let f = insert_folder(&mut tx, user, Some(parent), name)?;
        tx.commit()?;
        Ok(f)
    }

    fn delete_file(&self, user: i64, id: i64) -> Result<FileRow, ApiError> {
        let mut c = self.client()?;
        let f = file_of(&mut *c, user, id)?;
        c.execute("DELETE FROM files WHERE id = $1", &[&id])?;
        Ok(f)
    }

    fn delete_folder(&self, user: i64, id: i64) -> Result<Vec<String>, ApiError> {
        let mut c = self.client()?;
        let mut tx = c.transaction()?;
        lock_tree(&mut tx, true)?;
        folder_of(&mut tx, user, id)?;
        let blobs = tx
            .query(
                &format!("{TREE} DELETE FROM files WHERE folder_id IN (SELECT id FROM sub) RETURNING blob"),
                &[&id],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        tx.execute(
            &format!("{TREE} DELETE FROM folders WHERE id IN (SELECT id FROM sub)"),
            &[&id],
        )?;
        tx.commit()?;
        Ok(blobs)
    }

    fn list(&self, user: i64, folder_id: i64, pg: Listing) -> Result<Listed, ApiError> {
        let mut c = self.client()?;
        let f = folder_of(&mut *c, user, folder_id)?;
        let folders = c
            .query(
                &format!("SELECT {FOLDER_COLS} FROM folders WHERE parent_id = $1 ORDER BY name"),
                &[&f.id],
            )?
            .iter()
            .map(folder)
            .collect();
        let dir = if pg.desc { "DESC" } else { "ASC" };
        let files = c
            .query(
                &format!(
                    "SELECT {FILE_COLS} FROM files WHERE folder_id = $1 ORDER BY {} {dir}, id {dir} LIMIT $2 OFFSET $3",
                    pg.sort
                ),
                &[&f.id, &pg.limit, &pg.offset],
            )?
            .iter()
            .map(file)
            .collect();
        let total: i64 = c
            .query_one("SELECT COUNT(*) FROM files WHERE folder_id = $1", &[&f.id])?
            .get(0);
        Ok((f, folders, files, total))
    }

    fn children(&self, id: i64) -> Result<(Vec<FolderRow>, Vec<FileRow>), ApiError> {
        let mut c = self.client()?;
        let folders = c
            .query(
                &format!("SELECT {FOLDER_COLS} FROM folders WHERE parent_id = $1 ORDER BY name"),
                &[&id],
            )?
            .iter()
            .map(folder)
            .collect();
        let files = c
            .query(
                &format!("SELECT {FILE_COLS} FROM files WHERE folder_id = $1 ORDER BY name"),
                &[&id],
            )?
            .iter()
            .map(file)
            .collect();
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
        let mut c = self.client()?;
        let mut tx = c.transaction()?;
        lock_tree(&mut tx, false)?;
        folder_of(&mut tx, user, folder)?;
        let now = now_ms();
        let size = size as i64;
        let existing = tx.query_opt(
            &format!("SELECT {FILE_COLS} FROM files WHERE folder_id = $1 AND name = $2 FOR UPDATE"),
            &[&folder, &name],
        )?;
        let out = match existing.map(|r| file(&r)) {
            Some(_) if !overwrite => return Err(name_taken(name)),
            Some(f) => {
                tx.execute(
                    "UPDATE files SET size = $1, blob = $2, modified_at = $3 WHERE id = $4",
                    &[&size, &blob, &now, &f.id],
                )?;
                f.repointed(size, blob, now)
            }
            None => {
                let id: i64 = tx
                    .query_one(
                        "INSERT INTO files (user_id, folder_id, name, size, blob, created_at, modified_at)
                         VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id",
                        &[&user, &folder, &name, &size, &blob, &now],
                    )
                    .map_err(|e| match e.code() {
                        Some(&SqlState::UNIQUE_VIOLATION) => name_taken(name),
                        _ => e.into(),
                    })?
                    .get(0);
                (
                    FileRow::new_at(id, user, folder, name, size, blob, now),
                    None,
                )
            }
        };
        tx.commit()?;
        Ok(out)
    }

    fn search(
        &self,
        user: i64,
        terms: &[String],
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<FileRow>, i64), ApiError> {
        let q = ts_query(terms);
        let mut c = self.client()?;
        let files = c
            .query(&search_sql(false), &[&q, &user, &limit, &offset])?
            .iter()
            .map(file)
            .collect();
        let total: i64 = c.query_one(&search_sql(true), &[&q, &user])?.get(0);
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
        let mut c = self.client()?;
        let mut tx = c.transaction()?;
        lock_tree(&mut tx, true)?;
        folder_of(&mut tx, user, target)?;
        let above: Vec<i64> = tx
            .query(
                "WITH RECURSIVE up(id, parent) AS (
                     SELECT id, parent_id FROM folders WHERE id = $1
                     UNION ALL SELECT f.id, f.parent_id FROM folders f JOIN up ON f.id = up.parent)
                 SELECT id FROM up",
                &[&target],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        for id in folders {
            folder_of(&mut tx, user, *id)?;
            if *id == root || above.contains(id) {
                return Err(super::invalid_move());
            }
            tx.execute(
                "UPDATE folders SET parent_id = $1 WHERE id = $2",
                &[&target, id],
            )?;
        }
        for id in files {
            file_of(&mut tx, user, *id)?;
            tx.execute(
                "UPDATE files SET folder_id = $1 WHERE id = $2",
                &[&target, id],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    fn upload(&self, id: &str) -> Result<Option<UploadRow>, ApiError> {
        let r = self.client()?.query_opt(
            "SELECT id, user_id, folder_id, name, size, chunk_size FROM uploads WHERE id = $1",
            &[&id],
        )?;
        Ok(r.map(|r| UploadRow {
            id: r.get(0),
            user_id: r.get(1),
            folder_id: r.get(2),
            name: r.get(3),
            size: r.get::<_, i64>(4) as u64,
            chunk_size: r.get::<_, i64>(5) as u64,
        }))
    }

    fn add_upload(&self, u: &UploadRow) -> Result<(), ApiError> {
        let mut c = self.client()?;
        folder_of(&mut *c, u.user_id, u.folder_id)?;
        c.execute(
            "INSERT INTO uploads (id, user_id, folder_id, name, size, chunk_size, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            &[&u.id, &u.user_id, &u.folder_id, &u.name, &(u.size as i64), &(u.chunk_size as i64), &now_ms()],
        )?;
        Ok(())
    }

    fn sweep_uploads(&self, before: i64) -> Result<Vec<String>, ApiError> {
        let rows = self.client()?.query(
            "DELETE FROM uploads WHERE created_at < $1 RETURNING id",
            &[&before],
        )?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn delete_upload(&self, id: &str) -> Result<(), ApiError> {
        self.client()?
            .execute("DELETE FROM uploads WHERE id = $1", &[&id])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Search semantics next to FTS5's (case-insensitive word prefixes, every term
    /// required, punctuation separates words) and the GIN index in the plan.
    #[test]
    fn search_matches_word_prefixes_through_the_gin_index() {
        if let Err(e) = volley_postgres::find_binaries() {
            eprintln!("SKIP: PostgreSQL is not installed: {e}");
            return;
        }
        let cluster = volley_postgres::Cluster::start(
            &Default::default(),
            std::time::Duration::from_secs(60),
        )
        .unwrap();
        let db = PgDb::open(&cluster.url()).unwrap();
        let user = db.register("ann", None, "h").unwrap();
        for i in 0..200 {
            let name = if i % 20 == 0 {
                format!("Report-{i:05}.txt")
            } else {
                format!("file_{i:05}.bin")
            };
            db.put_file(user.id, user.root, &name, 1, "b", false)
                .unwrap();
        }
        let search = |q: &str| {
            let (rows, n) = db
                .search(user.id, &super::super::search_terms(q), 50, 0)
                .unwrap();
            assert_eq!(rows.len() as i64, n.min(50), "{q}");
            (rows.first().map(|f| f.name.clone()), n)
        };
        assert_eq!(search("report"), (Some("Report-00000.txt".into()), 10));
        assert_eq!(search("REP 0002"), (Some("Report-00020.txt".into()), 1));
        assert_eq!(search("eport").1, 0, "a prefix of a word, not a substring");
        assert_eq!(search("file bin").1, 190);
        assert_eq!(search("report bin").1, 0, "every term is required");
        assert_eq!(search("a\" OR b:*").1, 0, "operators are plain words");
        let other = db.register("bob", None, "h").unwrap();
        let (_, n) = db.search(other.id, &["report".to_owned()], 50, 0).unwrap();
        assert_eq!(n, 0, "only the user's own files");

        let mut c = db.client().unwrap();
        c.batch_execute("ANALYZE files; SET enable_seqscan = off")
            .unwrap();
        let plan: Vec<String> = c
            .query(
                &format!("EXPLAIN {}", search_sql(false)),
                &[&"report:*", &user.id, &50i64, &0i64],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let plan = plan.join("\n");
        assert!(plan.contains("files_name_search"), "{plan}");
        drop(c);
        drop(db);
        cluster.stop().unwrap();
    }

    #[test]
    fn search_terms_become_prefix_conjunctions() {
        let terms = super::super::search_terms("Report 2024-q1");
        assert_eq!(ts_query(&terms), "Report:* & 2024:* & q1:*");
    }
}
