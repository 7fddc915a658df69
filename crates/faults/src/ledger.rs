//! The ledger: an append-only NDJSON file of what the service acknowledged during a run
//! (`ledger.ack(kind, id, {sha256, size, ...})` in scripts), and of the faults injected, so a
//! verify step can check afterwards that nothing acknowledged was lost.
//!
//! Each line is one `write(2)` on a file opened with `O_APPEND` and no user-space buffer:
//! once `ack` returns, the line is the kernel's, and a crash (even SIGKILL) of Volley keeps
//! it. A power loss may not (no fsync per line: it would cost milliseconds per ack).

use serde_json::{Map, Value};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Longest ledger line read back (1 MiB): a longer one is an error, not an allocation.
const MAX_LINE: usize = 1 << 20;
/// Most entries read back (10 million, a few GB of memory at most): a larger ledger is an
/// error naming the limit.
pub const MAX_ENTRIES: usize = 10_000_000;

/// An open ledger file.
pub struct Ledger {
    path: PathBuf,
    file: Mutex<File>,
}

impl Ledger {
    /// Open (create) `path` for appending.
    pub fn open(path: &Path) -> Result<Ledger, String> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| {
                format!(
                    "--ledger {}: {e}\n  hint: give a file in a writable directory",
                    path.display()
                )
            })?;
        Ok(Ledger {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Record an acknowledged operation: `kind` (e.g. `upload`), its `id`, and what to check
    /// (`sha256`, `size`, anything the verifier reads).
    pub fn ack(&self, kind: &str, id: &str, fields: Map<String, Value>) -> Result<(), String> {
        let mut line = Map::new();
        line.insert("kind".into(), kind.into());
        line.insert("id".into(), id.into());
        for (k, v) in fields {
            if k != "kind" && k != "id" {
                line.insert(k, v);
            }
        }
        line.insert("ts_ms".into(), now_ms().into());
        self.write(Value::Object(line))
    }

    /// Record a fault's start or end (lines with `fault`, not acknowledgements).
    pub fn fault(&self, phase: &str, ev: &volley_metrics::Event) -> Result<(), String> {
        self.write(serde_json::json!({
            "fault": phase,
            "event": ev,
            "ts_ms": now_ms(),
        }))
    }

    fn write(&self, v: Value) -> Result<(), String> {
        let mut text = v.to_string();
        text.push('\n');
        self.file
            .lock()
            .unwrap()
            .write_all(text.as_bytes())
            .map_err(|e| format!("ledger {}: {e}", self.path.display()))
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The process's ledger (`--ledger FILE`), which scripts' `ledger.ack` writes to.
static GLOBAL: OnceLock<Arc<Ledger>> = OnceLock::new();

/// Open `path` as the process's ledger (once; a second call keeps the first).
pub fn open_global(path: &Path) -> Result<Arc<Ledger>, String> {
    if let Some(l) = GLOBAL.get() {
        return Ok(l.clone());
    }
    let l = Arc::new(Ledger::open(path)?);
    Ok(GLOBAL.get_or_init(|| l).clone())
}

/// The process's ledger, if one was opened.
pub fn global() -> Option<Arc<Ledger>> {
    GLOBAL.get().cloned()
}

/// One acknowledged operation read back.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub kind: String,
    pub id: String,
    /// The whole line (kind, id, sha256, size ...).
    pub fields: Map<String, Value>,
}

/// A ledger read back: the acknowledgements and the faults.
#[derive(Debug, Default)]
pub struct Contents {
    pub entries: Vec<Entry>,
    /// Fault starts recorded.
    pub faults: u64,
    /// A last line cut short (Volley killed mid-write): not counted, said in the report.
    pub torn_tail: bool,
}

/// Read a ledger. A bad line is an error with its line number, except a last line without
/// its newline, which a crash may leave and which is skipped.
pub fn read(path: &Path) -> Result<Contents, String> {
    let name = path.display();
    let f = File::open(path).map_err(|e| format!("--ledger {name}: {e}"))?;
    let mut r = BufReader::new(f);
    let mut out = Contents::default();
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    loop {
        buf.clear();
        let n = (&mut r)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| format!("{name}: {e}"))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if buf.len() > MAX_LINE {
            return Err(format!(
                "{name}:{line_no}: line longer than 1 MiB\n  hint: a ledger holds one short JSON \
                 object per line (ledger.ack(kind, id, fields))"
            ));
        }
        let complete = buf.last() == Some(&b'\n');
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let v: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(_) if !complete => {
                out.torn_tail = true;
                break;
            }
            Err(e) => {
                return Err(format!(
                    "{name}:{line_no}:{}: {e}\n  hint: the ledger is NDJSON written by \
                     ledger.ack; was the file edited?",
                    e.column()
                ))
            }
        };
        let Value::Object(map) = v else {
            return Err(format!("{name}:{line_no}:1: expected a JSON object"));
        };
        if map.get("fault").and_then(Value::as_str) == Some("start") {
            out.faults += 1;
            continue;
        }
        if map.contains_key("fault") {
            continue;
        }
        let s = |k: &str| match map.get(k) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let (Some(kind), Some(id)) = (s("kind"), s("id")) else {
            return Err(format!(
                "{name}:{line_no}:1: an entry needs \"kind\" and \"id\"\n  hint: ledger.ack(kind, \
                 id, fields)"
            ));
        };
        if out.entries.len() == MAX_ENTRIES {
            return Err(format!(
                "{name}:{line_no}: more than {MAX_ENTRIES} entries, the most Volley verifies at \
                 once\n  hint: split the run, or give each run its own --ledger"
            ));
        }
        out.entries.push(Entry {
            kind,
            id,
            fields: map,
        });
    }
    Ok(out)
}

use std::io::Read as _;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_read_back_and_a_torn_last_line_is_skipped() {
        let dir = std::env::temp_dir().join(format!("volley-ledger-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("l.ndjson");
        let _ = std::fs::remove_file(&p);
        let l = Ledger::open(&p).unwrap();
        let mut f = Map::new();
        f.insert("size".into(), 3.into());
        l.ack("upload", "a", f).unwrap();
        l.ack("upload", "b", Map::new()).unwrap();
        drop(l);
        // What a kill in the middle of a write leaves.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"{\"kind\":\"upl")
            .unwrap();
        let c = read(&p).unwrap();
        assert_eq!(c.entries.len(), 2);
        assert_eq!(c.entries[0].id, "a");
        assert_eq!(c.entries[0].fields["size"], 3);
        assert!(c.torn_tail);
        std::fs::write(&p, "{\"kind\":\"x\",\"id\":\"1\"}\nnot json\n").unwrap();
        let e = read(&p).unwrap_err();
        assert!(e.contains("l.ndjson:2:"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
