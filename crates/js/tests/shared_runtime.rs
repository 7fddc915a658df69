//! VUs sharing a QuickJS runtime per worker (`VOLLEY_VU_RUNTIME=shared`,
//! `crates/js/src/vu/shared.rs`): isolation, suspension deep in a call, recursion and
//! interrupts with several VUs per runtime. This file's process runs every VU that way.

mod common;
use common::*;

use volley_metrics::TotalValue;

/// One test at a time: the first counts the runtimes this process makes.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn shared_mode() -> std::sync::MutexGuard<'static, ()> {
    // Read once per process, before the first VU; every test here sets the same value.
    std::env::set_var("VOLLEY_VU_RUNTIME", "shared");
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every check of `r` passed, `n` of them, each at least 6 times; the VU spinning in
/// scenario `spinning` was cut by gracefulStop and no iteration of `working` was.
fn checks_pass_and_only_the_spinning_vu_was_cut(r: &volley_metrics::RunResult, n: usize) {
    let checks: Vec<_> = r
        .metrics_named("checks")
        .map(|m| {
            (
                m.tags.get("check").cloned().unwrap_or_default(),
                m.value.clone(),
            )
        })
        .collect();
    assert_eq!(checks.len(), n, "{checks:?}");
    for (name, v) in &checks {
        match v {
            TotalValue::Rate { trues, total } => {
                assert!(*total >= 6, "{name}: {total} checks");
                assert_eq!(trues, total, "{name} failed {} times", total - trues);
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    let list = r.options["scenarios"].as_array().unwrap();
    let counts = |name: &str| {
        let s = list.iter().find(|s| s["name"] == name).unwrap();
        (
            s["completed_iterations"].as_u64().unwrap(),
            s["interrupted_iterations"].as_u64().unwrap(),
        )
    };
    assert_eq!(counts("spinning"), (0, 1));
    let (done, cut) = counts("working");
    assert!(done >= 6, "working: {done} completed");
    assert_eq!(cut, 0, "a working VU was interrupted");
    assert!(r.metrics_named("iteration_errors").next().is_none());
}

#[test]
fn vus_sharing_a_runtime_keep_their_globals_stacks_recursion_and_interrupts() {
    let _one = shared_mode();
    let t = target();
    let before = volley_js::vu::shared_runtimes_made();
    let out = run_script("shared_vus.js", &t, &[]).unwrap_or_else(|e| panic!("{e}"));
    // 7 VUs on 2 workers: at most one runtime per worker (plus none per VU).
    let made = volley_js::vu::shared_runtimes_made() - before;
    assert!((1..=2).contains(&made), "{made} runtimes for 7 VUs");
    checks_pass_and_only_the_spinning_vu_was_cut(&out.result, 5);
}

/// The compiled code of a module is one copy per runtime (the vendored QuickJS's shared
/// code, run in the calling VU's realm): VUs calling the same functions of a module and of
/// the k6 shims still see their own globals, `__VU`, module state and builtins (errors,
/// closures, objects made there), across awaits resumed by promise jobs; a module with a
/// tagged template keeps its own (realm-bound) copy; gracefulStop cuts only the VU that
/// spins in a shared function.
#[test]
fn vus_calling_shared_module_code_stay_isolated() {
    let _one = shared_mode();
    let t = target();
    let out = run_script("shared_code.js", &t, &[]).unwrap_or_else(|e| panic!("{e}"));
    checks_pass_and_only_the_spinning_vu_was_cut(&out.result, 6);
}

/// Natives and k6/http parts made on first use (crates/js/src/rt/lazy.rs, the shims'
/// `more()`) are each VU's: a VU that replaces a native before or after it was made, or
/// changes k6/http's default object, `Response.prototype` or a lazily made class, changes
/// nothing for the VUs of its runtime, which get objects of their own realm.
#[test]
fn lazily_made_natives_and_shim_parts_are_each_vus_own() {
    let _one = shared_mode();
    let t = target();
    let out = run_script("lazy_shims.js", &t, &[]).unwrap_or_else(|e| panic!("{e}"));
    let checks = all_checks_pass(&out);
    assert_eq!(checks.len(), 4, "{checks:?}");
    assert!(checks.iter().all(|(_, _, n)| *n == 24), "{checks:?}");
}

/// What a script sees of the shims (every export, property, descriptor, function name and
/// length, prototype, what the helpers return) is the same with their rarely used parts
/// made on first use (the default) and with the VU (`VOLLEY_LAZY_SHIMS=0`), and equals what
/// the shims showed before they were made lazily (tests/k6/lib/shims_surface.json).
#[test]
fn the_shims_look_the_same_made_lazily_or_eagerly() {
    let _one = shared_mode();
    let t = target();
    for eager in [false, true] {
        if eager {
            std::env::set_var("VOLLEY_LAZY_SHIMS", "0");
        }
        let out = run_script(
            "shims_surface.js",
            &t,
            &[("EAGER", if eager { "1" } else { "0" })],
        );
        std::env::remove_var("VOLLEY_LAZY_SHIMS");
        let out = out.unwrap_or_else(|e| panic!("{e}"));
        let checks = all_checks_pass(&out);
        assert_eq!(checks.len(), 2, "eager {eager}: {checks:?}");
    }
}
