//! Checks, before a run starts, that a file it will write afterwards can be written: a run of
//! an hour whose `--save` path is a typo must fail in the first second, not lose its results
//! at the end. Used by every command through `volley_history::preflight`.

use std::io::ErrorKind;
use std::path::Path;

/// Can `path` be written (created, or replaced by a rename as [`crate::RunResult::write`]
/// does)? Nothing is left behind: an existing file is opened without truncating it, and the
/// directory is probed with a temporary file that is removed at once. `flag` names the option
/// in the message (`--save`).
pub fn check_writable(flag: &str, path: &Path) -> Result<(), String> {
    let fail = |why: String| {
        Err(format!(
            "{flag} {}: {why}; nothing was run\n  hint: give a path in an existing, writable directory",
            path.display()
        ))
    };
    if path.as_os_str().is_empty() {
        return fail("empty path".into());
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return fail("is a directory, not a file".into()),
        Ok(_) => {
            if let Err(e) = std::fs::OpenOptions::new().append(true).open(path) {
                return fail(format!("cannot be written: {e}"));
            }
        }
        // A missing file, or a path through a file: the parent check below says which.
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {}
        Err(e) => return fail(e.to_string()),
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return fail(format!("{} is not a directory", dir.display())),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return fail(format!("directory {} does not exist", dir.display()))
        }
        Err(e) if e.kind() == ErrorKind::NotADirectory => {
            return fail(format!("{} is not a directory", dir.display()))
        }
        Err(e) => return fail(format!("{}: {e}", dir.display())),
    }
    let probe = dir.join(format!(".volley-write-check-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) => fail(format!("cannot create files in {}: {e}", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::check_writable;

    #[test]
    fn unwritable_targets_are_named_with_their_flag() {
        let dir = std::env::temp_dir().join(format!("volley-out-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(check_writable("--save", &dir.join("run.json")), Ok(()));
        let e = check_writable("--save", &dir.join("missing/run.json")).unwrap_err();
        assert!(
            e.starts_with("--save ") && e.contains("does not exist"),
            "{e}"
        );
        let e = check_writable("--report", &dir).unwrap_err();
        assert!(e.contains("is a directory"), "{e}");
        let file = dir.join("f");
        std::fs::write(&file, "keep").unwrap();
        assert_eq!(check_writable("--summary-export", &file), Ok(()));
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "keep",
            "not truncated"
        );
        let e = check_writable("--out", &file.join("x.json")).unwrap_err();
        assert!(e.contains("is not a directory"), "{e}");
        let left = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(left, 1, "no probe left behind");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
