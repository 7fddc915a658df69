//! `client.load()`'s file names as k6 reads them, for protox.
//!
//! k6 joins each name to every import path in turn (the script's directory when none is
//! given), so `client.load([], "../protos/x.proto")` reads a file beside that directory, as
//! k6's own examples load theirs; protox wants files *under* an import path.

use std::path::{Path, PathBuf};

/// A name that leaves its import path (a leading `..` once normalised, or an absolute path
/// under none) becomes the file's normalised path, and its directory (of the first candidate
/// `exists` finds, else of the first import path's) is added as the last import path; other
/// names are kept. The path, not the bare name, goes to protox: it resolves a path to its name
/// under the import path that holds it, where a bare name could be taken for one under ".".
pub(super) fn k6_names(
    import_paths: &[PathBuf],
    files: &[String],
    exists: impl Fn(&Path) -> bool,
) -> (Vec<PathBuf>, Vec<String>) {
    let lexical = |p: &Path| PathBuf::from(crate::script::normalize(&p.to_string_lossy()));
    let mut dirs = import_paths.to_vec();
    let mut names = Vec::with_capacity(files.len());
    for f in files {
        let path = Path::new(f);
        let full = if path.is_absolute() {
            let under = import_paths.iter().any(|d| path.starts_with(d));
            (!under).then(|| lexical(path))
        } else if lexical(path).starts_with("..") {
            let tried: Vec<PathBuf> = import_paths
                .iter()
                .map(|d| lexical(&d.join(path)))
                .collect();
            tried.iter().find(|p| exists(p)).or(tried.first()).cloned()
        } else {
            None
        };
        match full.as_ref().and_then(|p| Some((p, p.parent()?))) {
            Some((path, dir)) => {
                if !dirs.iter().any(|d| d == dir) {
                    dirs.push(dir.to_path_buf());
                }
                names.push(path.to_string_lossy().into_owned());
            }
            None => names.push(f.clone()),
        }
    }
    (dirs, names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_outside_their_import_path_are_rebased() {
        let dirs = vec![PathBuf::from("/s/scripts")];
        let files: Vec<String> = [
            "a.proto",
            "sub/b.proto",
            "../protos/c.proto",
            "/abs/d.proto",
            "x/../../e.proto",
            "/s/scripts/sub/f.proto",
        ]
        .map(String::from)
        .to_vec();
        let (d, f) = k6_names(&dirs, &files, |_| true);
        let want = [
            "a.proto",
            "sub/b.proto",
            "/s/protos/c.proto",
            "/abs/d.proto",
            "/s/e.proto",
            "/s/scripts/sub/f.proto",
        ];
        assert_eq!(f, want);
        let want: Vec<PathBuf> = ["/s/scripts", "/s/protos", "/abs", "/s"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(d, want);
        // The script run as `volley run x.js`: its directory is "", the file's is "..".
        let (d, f) = k6_names(&[PathBuf::new()], &["../r.proto".into()], |_| false);
        assert_eq!(d, [PathBuf::new(), PathBuf::from("..")]);
        assert_eq!(f, ["../r.proto"]);
        // The first import path that has the file wins.
        let two = [PathBuf::from("/a/x"), PathBuf::from("/b/y")];
        let (d, _) = k6_names(&two, &["../p.proto".into()], |p| p.starts_with("/b"));
        assert_eq!(d[2], PathBuf::from("/b"));
    }
}
