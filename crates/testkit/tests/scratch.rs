//! The guard's promise, observed on the file system: gone after drop, kept after a panic
//! only with `VOLLEY_KEEP_SCRATCH=1`. One test so the variable is set for this binary only.

use volley_testkit::{scratch, KEEP_ENV};

#[test]
fn removed_on_drop_and_kept_after_a_panic_only_on_request() {
    let d = scratch("volley-testkit-test", "plain");
    std::fs::create_dir_all(d.join("a/b")).unwrap();
    std::fs::write(d.join("a/b/file"), "x").unwrap();
    let path = d.to_path_buf();
    assert!(path.join("a/b/file").exists());
    // The same name while the first is alive: another directory, untouched by its drop.
    let twin = scratch("volley-testkit-test", "plain");
    assert_ne!(twin.path(), path);
    std::fs::write(twin.join("f"), "x").unwrap();
    drop(d);
    assert!(!path.exists(), "{} should be gone", path.display());
    assert!(twin.join("f").exists());
    let twin_path = twin.to_path_buf();
    drop(twin);
    assert!(!twin_path.exists());

    // The path of a dir whose test panicked after writing a file into it.
    let after_a_panic = |name: &str| {
        let p = std::panic::catch_unwind(|| {
            let d = scratch("volley-testkit-test", name);
            std::fs::write(d.join("f"), "x").unwrap();
            std::panic::panic_any(d.to_path_buf())
        })
        .unwrap_err();
        *p.downcast::<std::path::PathBuf>().unwrap()
    };
    // A panic without the variable: still removed.
    let path = after_a_panic("panic");
    assert!(!path.exists(), "{} should be gone", path.display());

    // A panic with it: kept for inspection.
    std::env::set_var(KEEP_ENV, "1");
    let path = after_a_panic("keep");
    std::env::remove_var(KEEP_ENV);
    assert!(path.join("f").exists(), "{} should be kept", path.display());
    std::fs::remove_dir_all(&path).unwrap();
}
