//! The pre-run check of everything a run writes after it ends (`--save`, `--summary-export`,
//! `--report`, `--out json=/csv=`, `--history`): one function every command calls before it
//! sends the first request, so an unwritable target costs a second, not the run's results.

use crate::{pg, Location};
use std::path::Path;
use volley_metrics::output::check_writable;

/// Check each `(flag, path)` file target and the `--history` location. A PostgreSQL URL is
/// checked for syntax only (connecting is the run's job: a database may start with the run).
pub fn check(files: &[(&str, &Path)], history: Option<&str>) -> Result<(), String> {
    for (flag, path) in files {
        check_writable(flag, path)?;
    }
    let Some(spec) = history else { return Ok(()) };
    match Location::parse(Some(spec)) {
        Location::Postgres(url) => pg::check_url(&url).map_err(|e| {
            format!(
                "--history {}: {e}; nothing was run\n  hint: postgres://user:password@host:port/db[?sslmode=require]",
                pg::redact(&url)
            )
        }),
        Location::Sqlite(db) => {
            if db.exists() {
                return check_writable("--history", &db);
            }
            // History::open creates missing directories: check the nearest that exists.
            let mut dir = db.parent();
            while let Some(d) = dir {
                if d.as_os_str().is_empty() || d.exists() {
                    break;
                }
                dir = d.parent();
            }
            let base = match dir {
                Some(d) if !d.as_os_str().is_empty() => d.join(".volley-history-check"),
                _ => Path::new(".volley-history-check").to_path_buf(),
            };
            check_writable("--history", &base).map_err(|e| {
                e.replace(
                    &format!("--history {}", base.display()),
                    &format!("--history {}", db.display()),
                )
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::check;
    use std::path::Path;

    #[test]
    fn history_targets_are_checked_without_creating_them() {
        let dir = std::env::temp_dir().join(format!("volley-preflight-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let new_db = dir.join("a/b/h.db");
        assert_eq!(check(&[], Some(new_db.to_str().unwrap())), Ok(()));
        assert!(!dir.join("a").exists(), "nothing created");
        let file = dir.join("file");
        std::fs::write(&file, "").unwrap();
        let e = check(&[], Some(file.join("h.db").to_str().unwrap())).unwrap_err();
        assert!(
            e.starts_with("--history ") && e.contains("not a directory"),
            "{e}"
        );
        let e = check(&[], Some("postgres://u@host:notaport/db")).unwrap_err();
        assert!(e.starts_with("--history postgres://"), "{e}");
        let e = check(&[("--save", Path::new(&dir))], None).unwrap_err();
        assert!(e.starts_with("--save "), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
