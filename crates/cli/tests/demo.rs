//! `volley demo` is the README's first command: it must work end to end on a fresh machine.

mod common;
use common::*;

#[test]
fn demo_tours_quick_mode_and_a_k6_script() {
    let dir = scratch("demo");
    let o = run(&[
        "demo",
        "-z",
        "1s",
        "-c",
        "4",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    let out = stdout(&o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout:\n{out}\nstderr:\n{}",
        stderr(&o)
    );
    assert!(
        out.contains("(exact match)"),
        "quick mode counts match the target:\n{out}"
    );
    assert!(
        out.contains("✓ login status is 200"),
        "the k6 step ran its checks:\n{out}"
    );
    assert!(
        out.contains("✓ http_req_duration"),
        "thresholds are shown as passed:\n{out}"
    );
    for f in [
        "quick.json",
        "quick.html",
        "quickstart.js",
        "quickstart.json",
        "quickstart.html",
    ] {
        assert!(dir.join(f).exists(), "{f} was written");
    }
    // The saved files are real result files.
    let s = run(&[
        "summary",
        dir.join("quick.json").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(s.status.code(), Some(0), "{}", stderr(&s));
    std::fs::remove_dir_all(dir).ok();
}
