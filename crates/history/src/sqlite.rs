//! The embedded backend: one SQLite file (rusqlite with SQLite compiled in).

use crate::{Backend, Value};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ToSql};
use std::path::Path;

pub struct Sqlite {
    conn: Connection,
}

impl Sqlite {
    pub fn open(path: &Path) -> Result<Sqlite, String> {
        crate::ensure_parent(path)?;
        let conn = Connection::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        // Two runs finishing together (parallel CI jobs) wait for each other, not fail.
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Sqlite { conn })
    }
}

impl ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            Value::Real(f) => ToSqlOutput::Borrowed(ValueRef::Real(*f)),
            Value::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Value::Blob(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS volley_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    test TEXT NOT NULL,
    mode TEXT NOT NULL,
    started_at TEXT NOT NULL,
    started_unix_ms INTEGER NOT NULL,
    duration_s REAL NOT NULL,
    git_rev TEXT,
    labels TEXT NOT NULL DEFAULT '',
    requests INTEGER NOT NULL,
    rps REAL NOT NULL,
    p50_ms REAL,
    p95_ms REAL,
    p99_ms REAL,
    error_rate REAL,
    interrupted INTEGER NOT NULL DEFAULT 0,
    result BLOB NOT NULL,
    max_rate REAL
);
CREATE INDEX IF NOT EXISTS volley_runs_test ON volley_runs (test, started_unix_ms);
";

impl Backend for Sqlite {
    fn init(&mut self) -> Result<(), String> {
        self.conn.execute_batch(SCHEMA).map_err(|e| e.to_string())?;
        // Histories made before the column existed get it (SQLite has no ADD COLUMN IF NOT
        // EXISTS).
        let has: i64 = self
            .conn
            .query_row(
                "SELECT COUNT(*) FROM pragma_table_info('volley_runs') WHERE name = 'max_rate'",
                [],
                |r| r.get(0),
            )
            .map_err(|e| e.to_string())?;
        if has == 0 {
            self.conn
                .execute_batch("ALTER TABLE volley_runs ADD COLUMN max_rate REAL")
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String> {
        let mut st = self.conn.prepare(sql).map_err(|e| e.to_string())?;
        let n = st.column_count();
        let p: Vec<&dyn ToSql> = params.iter().map(|v| v as &dyn ToSql).collect();
        let mut rows = st.query(p.as_slice()).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| e.to_string())? {
            let mut vals = Vec::with_capacity(n);
            for i in 0..n {
                let v = match row.get_ref(i).map_err(|e| e.to_string())? {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(i) => Value::Int(i),
                    ValueRef::Real(f) => Value::Real(f),
                    ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Blob(b) => Value::Blob(b.to_vec()),
                };
                vals.push(v);
            }
            out.push(vals);
        }
        Ok(out)
    }
}
