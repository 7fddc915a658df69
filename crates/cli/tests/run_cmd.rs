//! `volley run`: the binary end to end — k6 exit codes, error positions, summary text,
//! `--summary-export`, `--save`, `-e`.

mod common;

use common::{run, stderr, stdout, target};
use std::path::PathBuf;

fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/k6")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn syntax_error_exits_107_with_file_line_column() {
    let o = run(&["run", &script("syntax_error.js")]);
    assert_eq!(o.status.code(), Some(107), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("syntax_error.js:4:"), "{err}");
    assert!(err.contains("SyntaxError"), "{err}");
}

#[test]
fn summary_export_and_result_file() {
    let t = target();
    let dir = std::env::temp_dir().join(format!("volley-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let export = dir.join("summary.json");
    let save = dir.join("run.json");
    let base = format!("BASE=http://{}", t.local_addr());
    let o = run(&[
        "run",
        &script("checks.js"),
        "-e",
        &base,
        "-u",
        "1",
        "-i",
        "4",
        "--summary-export",
        export.to_str().unwrap(),
        "--save",
        save.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("✓ status is 200"), "{text}");
    assert!(text.contains("http_reqs"), "{text}");
    assert!(text.contains("iterations"), "{text}");
    let e: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    assert_eq!(e["metrics"]["iterations"]["count"], 4.0);
    assert_eq!(e["metrics"]["http_reqs"]["count"], 8.0);
    assert_eq!(e["metrics"]["checks"]["fails"], 4);
    let r = volley_metrics::RunResult::read(&save).unwrap();
    assert_eq!(r.meta.mode, "run");
    assert_eq!(r.counter_sum("http_reqs"), 8.0);
    assert_eq!(t.stats().requests, 8);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn exception_in_setup_exits_107() {
    let dir = std::env::temp_dir().join(format!("volley-run-setup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let s = dir.join("setup_throws.js");
    std::fs::write(
        &s,
        "export function setup() {\n  throw new Error('no token');\n}\nexport default function () {}\n",
    )
    .unwrap();
    let o = run(&["run", s.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(107), "{}", stderr(&o));
    assert!(stderr(&o).contains("setup_throws.js:2:"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}
