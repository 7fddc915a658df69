//! `volley run` on TypeScript files: exit codes and error positions in the .ts source, as
//! k6 v1.8.1 gives them for the same files (its output is quoted at each test).

mod common;

use common::{run, stderr};

const K6_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/k6/");

#[test]
fn typescript_script_passes_its_checks() {
    let o = run(&["run", "-q", &format!("{K6_DIR}typescript.ts")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn exception_in_ts_reports_the_ts_line() {
    // k6: "Error: failed in x\n\tat default (file:///.../ts_throw.ts:12:8(7))", exit 0.
    let o = run(&["run", "-q", &format!("{K6_DIR}ts_throw.ts")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("failed in x"), "{err}");
    assert!(err.contains("ts_throw.ts:12:"), "{err}");
}

#[test]
fn syntax_error_in_ts_exits_107_with_file_line_column() {
    // k6: "ts_syntax.ts: Line 5:28 Expected \">\" but found \"=\"", exit 107 (esbuild's
    // columns are 0-based; Volley's 1-based, as for .js files: the same `=`).
    let o = run(&["run", &format!("{K6_DIR}ts_syntax.ts")]);
    assert_eq!(o.status.code(), Some(107), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("ts_syntax.ts:5:29"), "{err}");
}
