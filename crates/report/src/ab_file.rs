//! The `volley-ab` file that `volley http URL_A --vs URL_B --save FILE` writes: every round's
//! full result file for both sides plus the comparison table, so the run can be looked at
//! again (or re-judged by a later Volley) without repeating it.
//!
//! ```json
//! { "format": "volley-ab", "version": 1,
//!   "a": [ <result file>, ... ], "b": [ <result file>, ... ],
//!   "comparison": [ { "metric": "requests/s", "a": 1.0, "b": 2.0, "ratio": 2.0, "verdict": "..." } ] }
//! ```
//!
//! Reading is validated as result files are ([`RunResult::from_json`]'s checks on each round,
//! the same size limit), with errors that name the JSON path and end with a hint.

use crate::ab::Row;
use serde::{Deserialize, Serialize};
use std::path::Path;
use volley_metrics::result::{self as result_file, read_text};
use volley_metrics::RunResult;

pub const FORMAT: &str = "volley-ab";
pub const VERSION: u32 = 1;

const HINT: &str = "the file is damaged, truncated or not written by `volley http --vs --save`";

/// An A/B run as saved: side A's and side B's rounds (same count, in run order) and the table.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AbFile {
    pub format: String,
    pub version: u32,
    pub a: Vec<RunResult>,
    pub b: Vec<RunResult>,
    pub comparison: Vec<Row>,
}

impl AbFile {
    pub fn new(a: Vec<RunResult>, b: Vec<RunResult>, comparison: Vec<Row>) -> AbFile {
        AbFile {
            format: FORMAT.to_string(),
            version: VERSION,
            a,
            b,
            comparison,
        }
    }

    /// Write atomically (temporary file + rename), as result files are written.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        result_file::write_json(path, self)
    }

    /// Read and validate a `volley-ab` file (size-limited like a result file); errors start
    /// with the file name.
    pub fn read(path: &Path) -> Result<AbFile, String> {
        let text = read_text(path)?;
        Self::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parse and validate: the envelope first (a result file or another JSON file gets a
    /// message saying what it is), then every round as a result file.
    pub fn from_json(text: &str) -> Result<AbFile, String> {
        Self::parse(text).map_err(|e| format!("{e}\n  hint: {HINT}"))
    }

    fn parse(text: &str) -> Result<AbFile, String> {
        #[derive(Deserialize)]
        struct Envelope {
            format: Option<serde_json::Value>,
            version: Option<serde_json::Value>,
        }
        let at = |e: serde_json::Error| format!("line {}, column {}: {e}", e.line(), e.column());
        let env: Envelope =
            serde_json::from_str(text).map_err(|e| format!("not valid JSON at {}", at(e)))?;
        match env.format.as_ref().and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            Some(result_file::FORMAT) => {
                return Err(format!(
                    "a result file, not an A/B file (expected \"format\": \"{FORMAT}\"); read it with `volley summary`"
                ))
            }
            _ => return Err(format!("not an A/B file (expected \"format\": \"{FORMAT}\")")),
        }
        match env.version.as_ref().and_then(|v| v.as_u64()) {
            Some(v) if v == VERSION as u64 => {}
            Some(v) => {
                return Err(format!(
                    "A/B file version {v} is not supported by this Volley (reads version {VERSION})"
                ))
            }
            None => {
                return Err(format!(
                    "A/B file has no \"version\" number (this Volley reads version {VERSION})"
                ))
            }
        }
        let f: AbFile =
            serde_json::from_str(text).map_err(|e| format!("invalid A/B file at {}", at(e)))?;
        if f.a.is_empty() || f.a.len() != f.b.len() {
            return Err(format!(
                "invalid A/B file: {} round(s) of A and {} of B (expected the same number, at least 1)",
                f.a.len(),
                f.b.len()
            ));
        }
        for (side, runs) in [("a", &f.a), ("b", &f.b)] {
            for (i, r) in runs.iter().enumerate() {
                if r.format != result_file::FORMAT || r.version != result_file::VERSION {
                    return Err(format!(
                        "{side}[{i}]: not a version {} result file",
                        result_file::VERSION
                    ));
                }
                r.validate().map_err(|e| format!("{side}[{i}]: {e}"))?;
            }
        }
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ab::AbReport;
    use crate::view::tests::synthetic;

    fn file() -> AbFile {
        let a = vec![synthetic("http://a/", 4, 100, 1.0, 0)];
        let b = vec![synthetic("http://b/", 4, 50, 2.0, 0)];
        let rows = AbReport::new(&a, &b).rows;
        AbFile::new(a, b, rows)
    }

    #[test]
    fn round_trip_keeps_every_round_and_the_table() {
        let dir = std::env::temp_dir().join(format!("volley-ab-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ab.json");
        let f = file();
        f.write(&path).unwrap();
        let back = AbFile::read(&path).unwrap();
        assert_eq!((back.format.as_str(), back.version), (FORMAT, VERSION));
        assert_eq!((back.a.len(), back.b.len()), (1, 1));
        assert_eq!(back.a[0].meta.name, "http://a/");
        assert_eq!(back.comparison, f.comparison);
        // The rounds read back give the same table.
        assert_eq!(AbReport::new(&back.a, &back.b).rows, f.comparison);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let good = serde_json::to_value(file()).unwrap();
        let err = |v: serde_json::Value| AbFile::from_json(&v.to_string()).unwrap_err();
        let result = serde_json::to_value(&good["a"][0]).unwrap();
        assert!(err(result).contains("a result file, not an A/B file"));
        let mut v = good.clone();
        v["version"] = 9.into();
        assert!(err(v).contains("version 9 is not supported"));
        let mut v = good.clone();
        v["b"] = serde_json::json!([]);
        assert!(err(v).contains("1 round(s) of A and 0 of B"));
        let mut v = good.clone();
        v["a"][0]["meta"]["duration_s"] = (-1.0).into();
        let e = err(v);
        assert!(
            e.contains("a[0]: meta.duration_s") && e.contains("hint:"),
            "{e}"
        );
        let mut v = good;
        v["comparison"] = serde_json::json!("x");
        assert!(err(v).contains("invalid A/B file at line 1"));
        assert!(AbFile::from_json("{")
            .unwrap_err()
            .contains("not valid JSON"));
    }
}
