//! TypeScript scripts (`tests/k6/typescript.ts` with `lib/ts_*.ts|js`) and the data modules
//! `k6/experimental/fs` and `k6/experimental/csv` (`tests/k6/data_files.js` over
//! `tests/k6/data/*`): every check of the scripts passes, as under k6 v1.8.1. Error positions
//! of .ts files are asserted on the binary in `crates/cli/tests/typescript.rs`.

mod common;
use common::*;

/// Every check passed: (passes, total) of `checks` is (total, total).
fn all_checks_pass(out: &volley_js::RunOutput, total: u64) {
    assert_eq!(rate(&out.result, "checks", &[]), (total, total));
}

#[test]
fn typescript_script_and_modules_run_with_types_removed() {
    let t = target();
    let out = run_script("typescript.ts", &t, &[]).unwrap_or_else(|e| panic!("{e}"));
    // 6 checks × 2 iterations: interfaces, generics, `as`, `satisfies`, enums, parameter
    // properties, type-only imports (`k6/options` too), .ts ⇄ .js imports.
    all_checks_pass(&out, 12);
}

#[test]
fn typescript_syntax_error_names_the_ts_file_line_and_column() {
    let err = match volley_js::script::load(&script("ts_syntax.ts"), Default::default()) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("ts_syntax.ts compiled"),
    };
    // k6 v1.8.1 (esbuild): "ts_syntax.ts: Line 5:28 Expected \">\" but found \"=\"": the
    // same `=`, at esbuild's 0-based column; Volley's columns are 1-based, as for .js files.
    assert!(err.contains("ts_syntax.ts:5:29: SyntaxError"), "{err}");
}

#[test]
fn fs_and_csv_read_shared_files_as_k6_does() {
    let t = target();
    let out = run_script("data_files.js", &t, &[]).unwrap_or_else(|e| panic!("{e}"));
    // 13 checks × 4 iterations: stat/read/seek and their errors, open only in init,
    // csv.parse with each option, csv.Parser to `done`.
    all_checks_pass(&out, 52);
    // Each VU streams its own Parser from the first record: one row per iteration.
    assert_eq!(counter(&out.result, "csv_rows_streamed", &[]), 4.0);
    assert!(counter(&out.result, "csv_rows_streamed", &[("city", "Paris, FR")]) >= 1.0);
}
