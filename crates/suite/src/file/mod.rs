//! The suite file (`volley.toml`) as written: the serde model, read with the `toml` crate so
//! every value keeps its span, and [`FileError`] (file:line:column, message, hint) for
//! whatever is wrong with it. Unknown keys are refused by serde (`deny_unknown_fields`), so a
//! typo is an error at the key, not a silently ignored setting. What the values mean is
//! checked in [`crate::check`], which turns this model into the runnable [`crate::check::Suite`].
//!
//! Layout: this file (model, reading, locations); [`interp`]: `${...}` interpolation.

pub mod interp;

use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The name of the suite file in a suite directory.
pub const FILE_NAME: &str = "volley.toml";

/// Where the reference lives; every hint can point there.
pub const DOCS: &str = "docs/suite.md";

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSuite {
    /// The results directory's name (default: the suite directory's name).
    pub name: Option<String>,
    /// `KEY = "value"` given to every script step (`__ENV`) and command.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub services: BTreeMap<String, Spanned<RawService>>,
    #[serde(default)]
    pub seed: Vec<Spanned<RawStep>>,
    #[serde(default)]
    pub profiles: BTreeMap<String, Spanned<RawProfile>>,
    #[serde(default)]
    pub outputs: RawOutputs,
}

/// A command: one string runs under `sh -c`; an array runs that program directly.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum CommandLine {
    Shell(String),
    Argv(Vec<String>),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawService {
    /// `command` (default) or `postgres`.
    pub kind: Option<Spanned<String>>,
    pub command: Option<CommandLine>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    #[serde(default)]
    pub depends_on: Vec<Spanned<String>>,
    #[serde(default)]
    pub ready: RawReady,
    /// How long readiness may take.
    pub timeout: Option<Spanned<String>>,
    pub stop_signal: Option<Spanned<String>>,
    pub stop_timeout: Option<Spanned<String>>,
    /// A fixed port instead of a free one (`${port}`).
    pub port: Option<u16>,
    /// What `${services.NAME.url}` is (default `http://127.0.0.1:${port}`; for postgres the
    /// connection URL).
    pub url: Option<String>,
    // kind = "postgres"
    pub user: Option<String>,
    pub database: Option<String>,
    pub password: Option<String>,
    #[serde(default)]
    pub init_sql: Vec<String>,
}

/// Readiness probes; every one given must pass.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawReady {
    pub http: Option<String>,
    pub tcp: Option<String>,
    pub log: Option<Spanned<String>>,
    pub command: Option<CommandLine>,
    /// Time between attempts (default 100ms).
    pub interval: Option<Spanned<String>>,
}

/// A seed step or a profile step: exactly one of `run`, `http`, `command`, `sql`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStep {
    pub name: Option<String>,
    /// A k6 script (`volley run`).
    pub run: Option<String>,
    /// A URL to blast (`volley http`).
    pub http: Option<String>,
    /// A shell command (string) or argv (array); exit status 0 passes.
    pub command: Option<CommandLine>,
    /// An SQL file for a `kind = "postgres"` service (seed steps).
    pub sql: Option<String>,
    /// The postgres service `sql` runs against (default: the only one).
    pub service: Option<Spanned<String>>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    /// Commands: how long they may run (default 10m).
    pub timeout: Option<Spanned<String>>,
    // Load options (run: k6 overrides; http: quick mode).
    pub vus: Option<u64>,
    pub duration: Option<Spanned<String>>,
    pub iterations: Option<u64>,
    pub stages: Option<Vec<RawStage>>,
    #[serde(default)]
    pub thresholds: BTreeMap<String, OneOrMany>,
    // http
    pub vs: Option<String>,
    pub rounds: Option<u32>,
    pub connections: Option<u64>,
    pub requests: Option<u64>,
    pub rate: Option<f64>,
    pub pipeline: Option<u32>,
    pub http2: Option<bool>,
    pub method: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub body: Option<String>,
    /// A command benchmark (`volley bench`).
    pub bench: Option<Spanned<RawBench>>,
    /// run steps: faults in volley-faults' grammar (`at=2s,for=1s,kill=api`); process faults
    /// name services.
    #[serde(default)]
    pub faults: Vec<Spanned<String>>,
    /// run steps: a fault proxy per NAME in front of `services.X` (or a `HOST:PORT`).
    #[serde(default)]
    pub proxies: BTreeMap<String, Spanned<String>>,
    /// http steps: a capacity sweep, `rate=1000:20000:1000` or `connections=10,25,50`.
    pub sweep: Option<Spanned<String>>,
    /// http steps: a breaking-point search, `{ slo = "p99<50ms" }`.
    pub find_max_rate: Option<Spanned<RawSearch>>,
}

/// `find_max_rate = { slo = "...", ... }`: `volley http --find-max-rate`'s flags as keys.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSearch {
    pub slo: Option<String>,
    pub start_rate: Option<f64>,
    pub max_rate: Option<f64>,
    pub tolerance: Option<String>,
}

/// `bench = { command = "...", runs = 5, ... }`: `volley bench`'s flags as keys.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBench {
    pub command: Option<CommandLine>,
    pub runs: Option<u32>,
    pub min_time: Option<Spanned<String>>,
    pub warmup: Option<u32>,
    #[serde(default)]
    pub params: BTreeMap<String, OneOrMany>,
    pub parse: Option<Spanned<String>>,
    pub prepare: Option<String>,
    pub cleanup: Option<String>,
    pub shell: Option<String>,
    /// Per run.
    pub timeout: Option<Spanned<String>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStage {
    pub duration: Spanned<String>,
    pub target: u64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn list(&self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProfile {
    pub extends: Option<Spanned<String>>,
    pub description: Option<String>,
    /// Added to every step's environment (a step's own wins).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Added to every `run`/`http` step's thresholds.
    #[serde(default)]
    pub thresholds: BTreeMap<String, OneOrMany>,
    /// Defaults for every `run` step that sets none itself.
    pub vus: Option<u64>,
    pub duration: Option<Spanned<String>>,
    pub iterations: Option<u64>,
    pub stages: Option<Vec<RawStage>>,
    pub steps: Option<Vec<Spanned<RawStep>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOutputs {
    /// k6's `--summary-export` JSON per step (default true).
    #[serde(default = "yes")]
    pub summary_export: bool,
    /// `--out json` NDJSON per `run` step (default false: it grows with every request).
    #[serde(default)]
    pub ndjson: bool,
    /// HTML report per step (default true).
    #[serde(default = "yes")]
    pub report: bool,
    /// A history database (path or postgres:// URL) every step's result is appended to.
    pub history: Option<String>,
    /// Labels stored with each run in the history.
    #[serde(default)]
    pub labels: Vec<String>,
    /// Where results go (default `results` beside the suite file).
    pub dir: Option<String>,
}

fn yes() -> bool {
    true
}

impl Default for RawOutputs {
    fn default() -> Self {
        RawOutputs {
            summary_export: true,
            ndjson: false,
            report: true,
            history: None,
            labels: Vec::new(),
            dir: None,
        }
    }
}

/// Something wrong with the suite file, at a place in it.
#[derive(Clone, Debug, PartialEq)]
pub struct FileError {
    pub path: PathBuf,
    pub line: usize,
    pub col: usize,
    pub msg: String,
    pub hint: Option<String>,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.path.display(),
            self.line,
            self.col,
            self.msg
        )?;
        if let Some(h) = &self.hint {
            write!(f, "\n  hint: {h}")?;
        }
        Ok(())
    }
}

/// A read suite file: its text (for locations) and model.
pub struct Source {
    pub path: PathBuf,
    pub text: String,
}

impl Source {
    /// 1-based line and column (in characters) of byte offset `at`.
    pub fn line_col(&self, at: usize) -> (usize, usize) {
        let at = at.min(self.text.len());
        let before = self.text.get(..at).unwrap_or("");
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }

    pub fn error(&self, at: usize, msg: impl Into<String>, hint: impl Into<String>) -> FileError {
        let (line, col) = self.line_col(at);
        let hint: String = hint.into();
        FileError {
            path: self.path.clone(),
            line,
            col,
            msg: msg.into(),
            hint: (!hint.is_empty()).then_some(hint),
        }
    }
}

/// `FILE` or `DIR` (its `volley.toml`), or `None` (the current directory's).
pub fn locate(arg: Option<&Path>) -> PathBuf {
    let p = arg.map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    if p.is_dir() {
        p.join(FILE_NAME)
    } else {
        p
    }
}

/// Largest suite file read: a suite file is hand-written; anything this big is a mistake
/// (and reading it whole must stay bounded).
const MAX_FILE: u64 = 4 << 20;

/// Reads and parses `path`. Errors are located (a missing file is at 1:1).
pub fn read(path: &Path) -> Result<(Source, RawSuite), FileError> {
    let at_start = |msg: String, hint: &str| FileError {
        path: path.to_path_buf(),
        line: 1,
        col: 1,
        msg,
        hint: Some(hint.to_string()),
    };
    let meta = std::fs::metadata(path).map_err(|e| {
        at_start(
            format!("cannot read the suite file: {e}"),
            "give a suite file or a directory holding volley.toml",
        )
    })?;
    if meta.len() > MAX_FILE {
        return Err(at_start(
            format!("the suite file is {} bytes; at most {MAX_FILE}", meta.len()),
            "a suite file lists services and steps; data belongs in seed files",
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| {
        at_start(
            format!("cannot read the suite file: {e}"),
            "the suite file must be UTF-8 text",
        )
    })?;
    let src = Source {
        path: path.to_path_buf(),
        text,
    };
    let raw: RawSuite = toml::from_str(&src.text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        let msg = e.message().trim().to_string();
        let hint = if msg.contains("unknown field") {
            format!("check the spelling; {DOCS} lists every key")
        } else if msg.contains("did not match any variant") {
            "a command is a string (run by sh -c) or an array of strings (argv)".to_string()
        } else if msg.contains("invalid type") {
            format!("see {DOCS} for the type of this key")
        } else {
            "the file must be valid TOML (https://toml.io)".to_string()
        };
        src.error(at, msg, hint)
    })?;
    Ok((src, raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RawSuite, FileError> {
        let dir = std::env::temp_dir().join(format!("volley-suite-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("t{}.toml", text.len()));
        std::fs::write(&p, text).unwrap();
        read(&p).map(|(_, r)| r)
    }

    #[test]
    fn an_unknown_key_is_located_at_the_key_with_a_hint() {
        let e = parse("[services.api]\ncommand = \"x\"\nreadyy = 1\n")
            .err()
            .unwrap();
        assert_eq!((e.line, e.col), (3, 1), "{e}");
        assert!(e.msg.contains("readyy"), "{e}");
        assert!(e.hint.unwrap().contains("docs/suite.md"));
    }

    #[test]
    fn commands_are_strings_or_argv() {
        let s = parse("[services.a]\ncommand = [\"volley\", \"target\"]\n[services.b]\ncommand = \"sleep 1\"\n").unwrap();
        assert_eq!(
            s.services["a"].get_ref().command,
            Some(CommandLine::Argv(vec!["volley".into(), "target".into()]))
        );
        assert_eq!(
            s.services["b"].get_ref().command,
            Some(CommandLine::Shell("sleep 1".into()))
        );
    }

    #[test]
    fn line_and_column_count_characters() {
        let src = Source {
            path: "f".into(),
            text: "ab\nçd = 1\n".into(),
        };
        assert_eq!(src.line_col(0), (1, 1));
        assert_eq!(src.line_col(3), (2, 1));
        assert_eq!(src.line_col(6), (2, 3));
    }
}
