//! volley-history: the run history behind `--history`, `volley history` and
//! `volley compare --baseline`.
//!
//! Teams ask "did this change make it slower?" against *some earlier run*: the last one, or the
//! last one from `main`. Keeping result files around by hand does not scale, so every run can
//! be appended to a database: an embedded SQLite file by default (`.volley/history.db`, no
//! server to run), or PostgreSQL when a team shares one history.
//!
//! Each row keeps what a listing needs as columns (test name, mode, start, git revision,
//! labels, requests, requests/s, p50/p95/p99, error rate) and the whole result file,
//! zlib-compressed, so a stored run can be compared, reported or summarised exactly as the
//! file it came from.
//!
//! # Layout
//!
//! - this file: [`Location`] (where the history lives), [`Record`] (one run's row),
//!   [`History`] (append, list, find a baseline, load a run) and the SQL shared by both
//!   backends.
//! - [`listing`]: `volley history`'s table and `volley compare --baseline`'s lookup.
//! - [`preflight`]: the pre-run check of every output a run writes afterwards (files and the
//!   history location), so an unwritable target fails before the load starts.
//! - [`sqlite`]: the embedded backend (rusqlite, bundled SQLite).
//! - [`pg`]: the PostgreSQL backend (the `postgres` crate via `volley-postgres`: TLS per
//!   `sslmode`, every login method).

pub mod listing;
pub mod pg;
pub mod preflight;
pub mod sqlite;

use serde::Serialize;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use volley_metrics::RunResult;
use volley_report::view::{total_figure, Sel};
use volley_report::Figure;

/// The default database when `--history` is given without a value.
pub const DEFAULT_DB: &str = ".volley/history.db";

/// Where a history lives.
#[derive(Clone, Debug, PartialEq)]
pub enum Location {
    /// An SQLite database file (created with its directory when missing).
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL (`postgres://user:pass@host:port/db`).
    Postgres(String),
}

impl Location {
    /// `None` or empty → [`DEFAULT_DB`]; a `postgres://` / `postgresql://` URL → PostgreSQL; a
    /// path ending in `.db`, `.sqlite` or `.sqlite3`, or an existing file → that file; any
    /// other path is a directory holding `history.db`.
    pub fn parse(spec: Option<&str>) -> Location {
        let s = spec.unwrap_or("").trim();
        if s.is_empty() {
            return Location::Sqlite(PathBuf::from(DEFAULT_DB));
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Location::Postgres(s.to_string());
        }
        let p = PathBuf::from(s);
        let is_file_name = [".db", ".sqlite", ".sqlite3"]
            .iter()
            .any(|ext| s.ends_with(ext));
        if is_file_name || p.is_file() {
            Location::Sqlite(p)
        } else {
            Location::Sqlite(p.join("history.db"))
        }
    }

    /// For messages: the file path, or the URL without its password.
    pub fn display(&self) -> String {
        match self {
            Location::Sqlite(p) => p.display().to_string(),
            Location::Postgres(u) => pg::redact(u),
        }
    }
}

/// Where a run came from: the git revision and the user's labels (`--label main`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Provenance {
    pub git_rev: Option<String>,
    pub labels: Vec<String>,
}

impl Provenance {
    /// The revision from `VOLLEY_GIT_REV`, else `git rev-parse --short HEAD` in the current
    /// directory (none outside a repository or without git).
    pub fn detect(labels: Vec<String>) -> Provenance {
        let env = std::env::var("VOLLEY_GIT_REV")
            .ok()
            .filter(|s| !s.is_empty());
        let git_rev = env.or_else(|| {
            let out = std::process::Command::new("git")
                .args(["rev-parse", "--short", "HEAD"])
                .stderr(std::process::Stdio::null())
                .output()
                .ok()?;
            let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
            (out.status.success() && !s.is_empty()).then_some(s)
        });
        Provenance { git_rev, labels }
    }
}

/// Check a `--label`: non-empty, at most 100 characters, no commas or control characters.
pub fn validate_label(l: &str) -> Result<(), String> {
    if l.is_empty() || l.len() > 100 || l.contains(',') || l.chars().any(char::is_control) {
        return Err(format!(
            "--label '{l}': expected a short name without commas (e.g. main, nightly, pr-123)"
        ));
    }
    Ok(())
}

/// One stored run, as `volley history` lists it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Record {
    pub id: i64,
    /// The test's name: the URL in quick mode, the script path in script mode.
    pub test: String,
    /// `http` or `run`.
    pub mode: String,
    pub started_at: String,
    pub started_unix_ms: u64,
    pub duration_s: f64,
    pub git_rev: Option<String>,
    pub labels: Vec<String>,
    pub requests: u64,
    /// Requests per second over the run.
    pub rps: f64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// `http_req_failed` in percent.
    pub error_rate: Option<f64>,
    pub interrupted: bool,
    /// A breaking-point search's answer (`--find-max-rate`): the highest rate that met the
    /// SLO, requests/s. None for other runs (and for runs stored before the column existed).
    pub max_rate: Option<f64>,
}

impl Record {
    /// The row for `r` (id 0 until stored).
    pub fn from_result(r: &RunResult, prov: &Provenance) -> Record {
        let dur = Sel::all(volley_metrics::names::HTTP_REQ_DURATION);
        let requests = r.counter_sum(volley_metrics::names::HTTP_REQS);
        Record {
            id: 0,
            test: r.meta.name.clone(),
            mode: r.meta.mode.clone(),
            started_at: r.meta.started_at.clone(),
            started_unix_ms: r.meta.started_unix_ms,
            duration_s: r.meta.duration_s,
            git_rev: prov.git_rev.clone(),
            labels: prov.labels.clone(),
            requests: requests as u64,
            rps: if r.meta.duration_s > 0.0 {
                requests / r.meta.duration_s
            } else {
                0.0
            },
            p50_ms: total_figure(r, &dur, Figure::P50),
            p95_ms: total_figure(r, &dur, Figure::P95),
            p99_ms: total_figure(r, &dur, Figure::P99),
            error_rate: total_figure(
                r,
                &Sel::all(volley_metrics::names::HTTP_REQ_FAILED),
                Figure::ErrorRate,
            ),
            interrupted: r.meta.interrupted,
            max_rate: r.capacity.as_ref().and_then(|c| c.max_rate),
        }
    }
}

/// Which stored run `volley compare --baseline` compares against.
#[derive(Clone, Debug, PartialEq)]
pub enum Baseline {
    /// The newest run of the same test.
    Last,
    /// The newest run of the same test carrying this label (or at this git revision).
    Label(String),
}

impl Baseline {
    pub fn parse(s: &str) -> Baseline {
        if s == "last" {
            Baseline::Last
        } else {
            Baseline::Label(s.to_string())
        }
    }
}

/// Filters for [`History::list`].
#[derive(Clone, Debug, Default)]
pub struct Query {
    /// Exact test name, or a suffix of it after a `/` (`script.js` finds `/ci/script.js`).
    pub test: Option<String>,
    /// Only runs carrying this label.
    pub label: Option<String>,
    /// Newest first, at most this many.
    pub limit: Option<u64>,
}

/// A value bound to a statement parameter or read from a row (both backends).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Value {
    fn int(&self) -> i64 {
        match self {
            Value::Int(i) => *i,
            Value::Real(f) => *f as i64,
            Value::Text(s) => s.parse().unwrap_or(0),
            _ => 0,
        }
    }

    fn real(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Real(f) => Some(*f),
            Value::Text(s) => s.parse().ok(),
            _ => None,
        }
    }

    fn text(&self) -> Option<String> {
        match self {
            Value::Text(s) => Some(s.clone()),
            Value::Int(i) => Some(i.to_string()),
            _ => None,
        }
    }
}

fn opt_real(v: Option<f64>) -> Value {
    v.filter(|x| x.is_finite()).map_or(Value::Null, Value::Real)
}

/// What a backend does: run SQL with `?N` placeholders.
pub trait Backend {
    /// Create the table if missing (the DDL differs per database).
    fn init(&mut self) -> Result<(), String>;
    /// Run a statement that returns rows; every value as a [`Value`].
    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String>;
}

/// Columns of a listing, in [`row_to_record`]'s order.
const COLUMNS: &str = "id, test, mode, started_at, started_unix_ms, duration_s, git_rev, labels, \
                       requests, rps, p50_ms, p95_ms, p99_ms, error_rate, interrupted, max_rate";

fn row_to_record(row: &[Value]) -> Record {
    let labels = row[7].text().unwrap_or_default();
    Record {
        id: row[0].int(),
        test: row[1].text().unwrap_or_default(),
        mode: row[2].text().unwrap_or_default(),
        started_at: row[3].text().unwrap_or_default(),
        started_unix_ms: row[4].int() as u64,
        duration_s: row[5].real().unwrap_or(0.0),
        git_rev: row[6].text().filter(|s| !s.is_empty()),
        labels: labels
            .split(',')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
        requests: row[8].int() as u64,
        rps: row[9].real().unwrap_or(0.0),
        p50_ms: row[10].real(),
        p95_ms: row[11].real(),
        p99_ms: row[12].real(),
        error_rate: row[13].real(),
        interrupted: row[14].int() != 0,
        max_rate: row[15].real(),
    }
}

/// An open history.
pub struct History {
    backend: Box<dyn Backend>,
    location: Location,
}

impl History {
    /// Open (creating when missing) the history at `loc`.
    pub fn open(loc: &Location) -> Result<History, String> {
        let mut backend: Box<dyn Backend> = match loc {
            Location::Sqlite(p) => Box::new(sqlite::Sqlite::open(p)?),
            Location::Postgres(u) => Box::new(pg::Postgres::connect(u)?),
        };
        backend
            .init()
            .map_err(|e| format!("history {}: {e}", loc.display()))?;
        Ok(History {
            backend,
            location: loc.clone(),
        })
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Append a finished run; returns its id.
    pub fn append(&mut self, r: &RunResult, prov: &Provenance) -> Result<i64, String> {
        for l in &prov.labels {
            validate_label(l)?;
        }
        let rec = Record::from_result(r, prov);
        let json = serde_json::to_vec(r).map_err(|e| e.to_string())?;
        let labels = if rec.labels.is_empty() {
            String::new()
        } else {
            format!(",{},", rec.labels.join(","))
        };
        let rows = self.backend.query(
            "INSERT INTO volley_runs (test, mode, started_at, started_unix_ms, duration_s, \
             git_rev, labels, requests, rps, p50_ms, p95_ms, p99_ms, error_rate, interrupted, \
             result, max_rate) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, \
             ?14, ?15, ?16) RETURNING id",
            &[
                Value::Text(rec.test),
                Value::Text(rec.mode),
                Value::Text(rec.started_at),
                Value::Int(rec.started_unix_ms as i64),
                Value::Real(rec.duration_s),
                rec.git_rev.map_or(Value::Null, Value::Text),
                Value::Text(labels),
                Value::Int(rec.requests as i64),
                Value::Real(rec.rps),
                opt_real(rec.p50_ms),
                opt_real(rec.p95_ms),
                opt_real(rec.p99_ms),
                opt_real(rec.error_rate),
                Value::Int(rec.interrupted as i64),
                Value::Blob(compress(&json)),
                opt_real(rec.max_rate),
            ],
        )?;
        Ok(rows.first().and_then(|r| r.first()).map_or(0, Value::int))
    }

    /// Stored runs, newest first.
    pub fn list(&mut self, q: &Query) -> Result<Vec<Record>, String> {
        let mut sql = format!("SELECT {COLUMNS} FROM volley_runs WHERE 1 = 1");
        let mut params = Vec::new();
        if let Some(t) = &q.test {
            params.push(Value::Text(t.clone()));
            params.push(Value::Text(format!("%/{}", like_escape(t))));
            sql.push_str(&format!(
                " AND (test = ?{} OR test LIKE ?{} ESCAPE '!')",
                params.len() - 1,
                params.len()
            ));
        }
        if let Some(l) = &q.label {
            params.push(Value::Text(format!("%,{},%", like_escape(l))));
            sql.push_str(&format!(" AND labels LIKE ?{} ESCAPE '!'", params.len()));
        }
        sql.push_str(" ORDER BY started_unix_ms DESC, id DESC");
        if let Some(n) = q.limit {
            sql.push_str(&format!(" LIMIT {n}"));
        }
        let rows = self.backend.query(&sql, &params)?;
        Ok(rows.iter().map(|r| row_to_record(r)).collect())
    }

    /// The baseline for `new`: the newest stored run of the same test (and label, for
    /// [`Baseline::Label`], which also matches a git revision), leaving out `new` itself
    /// (same test and start time).
    pub fn baseline(
        &mut self,
        new: &RunResult,
        which: &Baseline,
    ) -> Result<Option<(Record, RunResult)>, String> {
        let mut sql =
            format!("SELECT {COLUMNS} FROM volley_runs WHERE test = ?1 AND started_unix_ms <> ?2");
        let mut params = vec![
            Value::Text(new.meta.name.clone()),
            Value::Int(new.meta.started_unix_ms as i64),
        ];
        if let Baseline::Label(l) = which {
            params.push(Value::Text(format!("%,{},%", like_escape(l))));
            params.push(Value::Text(l.clone()));
            sql.push_str(" AND (labels LIKE ?3 ESCAPE '!' OR git_rev = ?4)");
        }
        sql.push_str(" ORDER BY started_unix_ms DESC, id DESC LIMIT 1");
        let rows = self.backend.query(&sql, &params)?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let rec = row_to_record(row);
        let run = self.load(rec.id)?;
        Ok(Some((rec, run)))
    }

    /// The full result file of stored run `id`.
    pub fn load(&mut self, id: i64) -> Result<RunResult, String> {
        let rows = self.backend.query(
            "SELECT result FROM volley_runs WHERE id = ?1",
            &[Value::Int(id)],
        )?;
        let Some(Value::Blob(b)) = rows.first().and_then(|r| r.first()) else {
            return Err(format!("no stored run with id {id}"));
        };
        let json = decompress(b)?;
        let text = String::from_utf8(json).map_err(|e| format!("run {id}: {e}"))?;
        RunResult::from_json(&text).map_err(|e| format!("run {id}: {e}"))
    }
}

/// `!` escapes LIKE's wildcards (and itself).
fn like_escape(s: &str) -> String {
    s.replace('!', "!!").replace('%', "!%").replace('_', "!_")
}

fn compress(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    let _ = e.write_all(b);
    e.finish().unwrap_or_default()
}

/// Inflate a stored result, no larger than a result file may be (a damaged or crafted row
/// cannot inflate without limit).
fn decompress(b: &[u8]) -> Result<Vec<u8>, String> {
    let max = volley_metrics::result::MAX_FILE_BYTES;
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(b)
        .take(max + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("stored result is damaged: {e}"))?;
    if out.len() as u64 > max {
        return Err(format!(
            "stored result inflates to more than {} MiB, the limit for result files",
            max >> 20
        ));
    }
    Ok(out)
}

/// Make the SQLite file's directory (`.volley/`).
pub(crate) fn ensure_parent(p: &Path) -> Result<(), String> {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => {
            std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_result_inflating_past_the_file_limit_is_refused() {
        // 257 MiB of spaces (valid JSON padding) in ~250 KiB: inflated whole before.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        let chunk = vec![b' '; 1 << 20];
        for _ in 0..257 {
            z.write_all(&chunk).unwrap();
        }
        let bomb = z.finish().unwrap();
        let e = decompress(&bomb).unwrap_err();
        assert!(e.contains("256 MiB"), "{e}");
        assert_eq!(decompress(&compress(b"{}")).unwrap(), b"{}");
    }

    /// Regression: a capacity search's max rate was not stored; a history made before the
    /// column existed gets it when opened.
    #[test]
    fn a_searchs_max_rate_is_stored_and_old_histories_gain_the_column() {
        let p =
            std::env::temp_dir().join(format!("volley-history-maxrate-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&p);
        {
            // The table as earlier versions made it.
            let c = rusqlite::Connection::open(&p).unwrap();
            c.execute_batch(
                "CREATE TABLE volley_runs (id INTEGER PRIMARY KEY AUTOINCREMENT, test TEXT NOT NULL, \
                 mode TEXT NOT NULL, started_at TEXT NOT NULL, started_unix_ms INTEGER NOT NULL, \
                 duration_s REAL NOT NULL, git_rev TEXT, labels TEXT NOT NULL DEFAULT '', \
                 requests INTEGER NOT NULL, rps REAL NOT NULL, p50_ms REAL, p95_ms REAL, \
                 p99_ms REAL, error_rate REAL, interrupted INTEGER NOT NULL DEFAULT 0, \
                 result BLOB NOT NULL);",
            )
            .unwrap();
        }
        let mut r = RunResult::new(
            volley_metrics::RunMeta::new("http", "http://a/", Vec::new()),
            serde_json::Value::Null,
            Vec::new(),
            Default::default(),
        );
        let mut h = History::open(&Location::Sqlite(p.clone())).unwrap();
        let prov = Provenance::default();
        h.append(&r, &prov).unwrap();
        r.meta.started_unix_ms += 1;
        r.capacity = Some(volley_metrics::capacity::Capacity {
            kind: "search".into(),
            variable: "rate".into(),
            slo: Some("p99<50ms".into()),
            steps: Vec::new(),
            knee: None,
            max_rate: Some(850.0),
            failed_rate: Some(900.0),
            confirmed: Some(true),
            finding: "capacity".into(),
            message: String::new(),
        });
        h.append(&r, &prov).unwrap();
        let runs = h.list(&Query::default()).unwrap();
        assert_eq!(runs[0].max_rate, Some(850.0));
        assert_eq!(runs[1].max_rate, None);
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn locations() {
        assert_eq!(
            Location::parse(None),
            Location::Sqlite(PathBuf::from(DEFAULT_DB))
        );
        assert_eq!(
            Location::parse(Some("hist")),
            Location::Sqlite(PathBuf::from("hist/history.db"))
        );
        assert_eq!(
            Location::parse(Some("x/runs.sqlite")),
            Location::Sqlite(PathBuf::from("x/runs.sqlite"))
        );
        assert!(matches!(
            Location::parse(Some("postgres://u@127.0.0.1/db")),
            Location::Postgres(_)
        ));
    }

    #[test]
    fn labels_are_checked() {
        assert!(validate_label("main").is_ok());
        assert!(validate_label("a,b").is_err());
        assert!(validate_label("").is_err());
    }

    #[test]
    fn compression_round_trips() {
        let s = b"{\"format\":\"volley-result\"}".repeat(50);
        assert_eq!(decompress(&compress(&s)).unwrap(), s);
    }
}
