//! Scratch directories for tests that clean up after themselves: [`Scratch`], made by
//! [`scratch`], derefs to `&Path` so tests keep writing `dir.join("x")`, and removes the
//! directory when dropped. Integration tests used to leave one `/tmp/volley-*-PID` directory
//! per test and run (≈160 per CLI run, some with result files of megabytes) because nothing
//! owned them.
//!
//! A failing test's files are often what explains the failure, so a directory dropped while
//! its thread panics is kept when `VOLLEY_KEEP_SCRATCH=1` is set (its path is printed).

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The variable that keeps a panicking test's scratch directory for inspection.
pub const KEEP_ENV: &str = "VOLLEY_KEEP_SCRATCH";

/// A directory removed (with its contents) when this value is dropped.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
}

/// Paths of the guards alive in this process: two tests (threads) asking for the same name at
/// once get different directories, so one test's drop never deletes another's files.
static LIVE: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// A fresh, empty directory `<temp>/<prefix>-<name>-<pid>` (with `-2`, `-3`… appended while
/// that one is in use by another guard); anything left there by an earlier process with the
/// same id is removed first.
pub fn scratch(prefix: &str, name: &str) -> Scratch {
    let base = std::env::temp_dir().join(format!("{prefix}-{name}-{}", std::process::id()));
    let path = {
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        let mut path = base.clone();
        let mut n = 1;
        while live.contains(&path) {
            n += 1;
            path = PathBuf::from(format!("{}-{n}", base.display()));
        }
        live.insert(path.clone());
        path
    };
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&path)
        .unwrap_or_else(|e| panic!("cannot create scratch dir {}: {e}", path.display()));
    Scratch { path }
}

impl Scratch {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Whether a directory dropped now is kept: only for a panicking test, and only on request.
fn keep(panicking: bool, env: Option<&OsStr>) -> bool {
    panicking && env.is_some_and(|v| v == "1")
}

impl Drop for Scratch {
    fn drop(&mut self) {
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.path);
        if keep(
            std::thread::panicking(),
            std::env::var_os(KEEP_ENV).as_deref(),
        ) {
            eprintln!("kept scratch dir {} ({KEEP_ENV}=1)", self.path.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

impl Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<OsStr> for Scratch {
    fn as_ref(&self) -> &OsStr {
        self.path.as_os_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_only_when_panicking_and_asked() {
        let one = Some(OsStr::new("1"));
        assert!(keep(true, one));
        assert!(!keep(false, one));
        assert!(!keep(true, None));
        assert!(!keep(true, Some(OsStr::new("0"))));
    }
}
