//! VU stacks given back below the suspension point during idle waits
//! (`crates/js/src/vu/stack.rs`): this file's process releases at every idle wait
//! (`VOLLEY_STACK_RELEASE_MS=0`), so a wrong margin would crash or corrupt a VU here.

mod common;
use common::*;

#[test]
fn vus_resume_intact_after_their_stacks_were_released_at_every_sleep() {
    // Read once per process, before the first VU (the only test of this file).
    std::env::set_var("VOLLEY_STACK_RELEASE_MS", "0");
    let t = target();
    let before = volley_js::vu::stack_releases();
    let out = run_script("stack_release.js", &t, &[]).unwrap_or_else(|e| panic!("{e}"));
    let checks = all_checks_pass(&out);
    assert_eq!(checks.len(), 2, "{checks:?}");
    for (name, passes, _) in &checks {
        assert_eq!(*passes, 24, "{name}");
    }
    // 24 iterations of 3 sleeps, and one release after each VU's init.
    let released = volley_js::vu::stack_releases() - before;
    assert!(released >= 72, "{released} stack releases");
    assert!(out
        .result
        .metrics_named("iteration_errors")
        .next()
        .is_none());
}
