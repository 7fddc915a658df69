//! Finding the server binaries: the first PATH directory holding both `initdb` and
//! `postgres`, else the newest `/usr/lib/postgresql/<version>/bin` (Debian/Ubuntu keep them
//! off PATH there).

use crate::error::Error;
use std::path::{Path, PathBuf};

/// Where the server binaries are.
#[derive(Debug, Clone)]
pub struct PgBinaries {
    pub initdb: PathBuf,
    pub postgres: PathBuf,
}

/// The machine's `initdb` and `postgres`; the error names what is missing and how to install.
pub fn find_binaries() -> Result<PgBinaries, Error> {
    let path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    find_binaries_in(&path, &[Path::new("/usr/lib/postgresql")])
}

/// [`find_binaries`] over given PATH dirs and version roots (`<root>/<version>/bin`); tests
/// point it at an empty dir.
#[doc(hidden)]
pub fn find_binaries_in(path: &[PathBuf], roots: &[&Path]) -> Result<PgBinaries, Error> {
    let mut candidates: Vec<PathBuf> = path.to_vec();
    for root in roots {
        candidates.extend(versioned_bins(root));
    }
    let mut seen_initdb = false;
    for dir in &candidates {
        let initdb = dir.join("initdb");
        let postgres = dir.join("postgres");
        seen_initdb |= is_file(&initdb);
        if is_file(&initdb) && is_file(&postgres) {
            return Ok(PgBinaries { initdb, postgres });
        }
    }
    let mut searched: Vec<PathBuf> = roots.iter().map(|r| r.join("*/bin")).collect();
    searched.dedup();
    Err(Error::NotInstalled {
        missing: if seen_initdb { "postgres" } else { "initdb" },
        searched,
    })
}

/// `<root>/<version>/bin`, newest version first (numeric order: 9.6 < 10 < 17).
fn versioned_bins(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut found: Vec<(Vec<u64>, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let version: Option<Vec<u64>> = name.split('.').map(|p| p.parse().ok()).collect();
            Some((version?, e.path().join("bin")))
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0));
    found.into_iter().map(|(_, p)| p).collect()
}

fn is_file(p: &Path) -> bool {
    p.metadata().map(|m| m.is_file()).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_version_first() {
        let root = std::env::temp_dir().join(format!("volley-pg-bins-{}", std::process::id()));
        for v in ["9.6", "10", "17", "notaversion"] {
            let bin = root.join(v).join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            std::fs::write(bin.join("initdb"), "").unwrap();
            std::fs::write(bin.join("postgres"), "").unwrap();
        }
        let found = find_binaries_in(&[], &[&root]).unwrap();
        assert_eq!(found.initdb, root.join("17/bin/initdb"));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn missing_names_the_binary_and_the_hint() {
        let empty = std::env::temp_dir().join(format!("volley-pg-empty-{}", std::process::id()));
        std::fs::create_dir_all(&empty).unwrap();
        let err = find_binaries_in(std::slice::from_ref(&empty), &[&empty]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("`initdb` not found"), "{text}");
        assert!(text.contains("apt install postgresql"), "{text}");
        assert!(text.contains("brew install postgresql"), "{text}");
        std::fs::remove_dir_all(&empty).unwrap();
    }
}
