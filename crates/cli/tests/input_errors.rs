//! Small input mistakes get the documented exit code and a message that says what is wrong,
//! once, at a readable length.

mod common;
use common::*;

fn assert_error(o: &std::process::Output, code: i32, needle: &str, what: &str) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "{what}: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert!(err.contains(needle), "{what}: should say {needle:?}: {err}");
    err
}

#[test]
fn a_header_with_cr_or_lf_is_a_usage_error() {
    let o = run(&[
        "http",
        "http://127.0.0.1:1/",
        "-n",
        "1",
        "-H",
        "X-A: b\r\nX-B: c",
    ]);
    assert_error(&o, 2, "CR, LF or NUL", "-H with CRLF");
}

#[test]
fn cacert_naming_a_directory_says_it_is_a_directory() {
    let dir = std::env::temp_dir();
    let o = run(&[
        "http",
        "https://127.0.0.1:1/",
        "-n",
        "1",
        "--cacert",
        dir.to_str().unwrap(),
    ]);
    let err = assert_error(&o, 2, "is a directory", "--cacert DIR");
    assert!(!err.contains("no such file"), "{err}");
}

#[test]
fn an_unresolvable_host_is_named_once() {
    let o = run(&["http", "http://nosuch.invalid/", "-n", "1"]);
    let err = assert_error(&o, 1, "cannot resolve 'nosuch.invalid'", "DNS");
    assert_eq!(err.matches("cannot resolve").count(), 1, "{err}");
}

#[test]
fn a_threshold_on_a_metric_that_is_never_recorded_is_a_usage_error() {
    let _serial = exclusive();
    let o = run(&[
        "http",
        "http://127.0.0.1:1/",
        "-n",
        "1",
        "--threshold",
        "nosuch:max<5",
    ]);
    assert_error(&o, 2, "no metric 'nosuch'", "volley http");
    let o = run(&[
        "monitor",
        "pid:1",
        "-z",
        "1s",
        "--threshold",
        "nosuch:max<5",
    ]);
    assert_error(&o, 2, "no metric 'nosuch'", "volley monitor");
    // Known metrics still work, and fail with 99 when crossed.
    let t = target();
    let url = format!("{}/", t.url());
    let o = run(&[
        "http",
        &url,
        "-n",
        "5",
        "--quiet",
        "--threshold",
        "http_req_duration:max<0",
    ]);
    assert_eq!(o.status.code(), Some(99), "{}", stderr(&o));
    t.shutdown();
}

#[test]
fn compare_baseline_with_a_missing_db_errors_and_creates_nothing() {
    let _serial = exclusive();
    let t = target();
    let dir = scratch("compare-db");
    let new = dir.join("new.json");
    let url = format!("{}/", t.url());
    let o = run(&[
        "http",
        &url,
        "-n",
        "5",
        "--quiet",
        "--save",
        new.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let db = dir.join("typo").join("history.db");
    let o = run(&[
        "compare",
        "--baseline",
        "last",
        "--db",
        db.to_str().unwrap(),
        new.to_str().unwrap(),
    ]);
    assert_error(&o, 1, "no history at", "compare --db NEWPATH");
    assert!(!db.exists(), "an empty database was created");
    assert!(!dir.join("typo").exists(), "its folder was created");
    std::fs::remove_dir_all(dir).ok();
    t.shutdown();
}

#[test]
fn result_file_errors_name_the_version_and_where_a_type_is_wrong() {
    let dir = scratch("result-errors");
    let f = dir.join("r.json");
    std::fs::write(&f, r#"{"format": "volley-result", "version": 99}"#).unwrap();
    let err = assert_error(
        &run(&["summary", f.to_str().unwrap()]),
        1,
        "version 99",
        "v99",
    );
    assert!(!err.contains("Some("), "{err}");
    std::fs::write(&f, r#"{"format": "volley-result"}"#).unwrap();
    let err = assert_error(
        &run(&["summary", f.to_str().unwrap()]),
        1,
        "no \"version\"",
        "none",
    );
    assert!(!err.contains("None"), "{err}");
    // A valid file with one value of the wrong type: the error says where.
    let t = target();
    let url = format!("{}/", t.url());
    let o = run(&[
        "http",
        &url,
        "-n",
        "3",
        "--quiet",
        "--save",
        f.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&f).unwrap();
    let bad = text.replacen("\"instances\": 1", "\"instances\": \"one\"", 1);
    assert_ne!(bad, text, "the file has meta.instances");
    std::fs::write(&f, &bad).unwrap();
    let line = bad.lines().position(|l| l.contains("\"one\"")).unwrap() + 1;
    let err = assert_error(
        &run(&["summary", f.to_str().unwrap()]),
        1,
        "invalid result",
        "type",
    );
    assert!(
        err.contains(&format!("line {line}")),
        "names line {line}: {err}"
    );
    std::fs::remove_dir_all(dir).ok();
    t.shutdown();
}

#[test]
fn demo_serve_data_naming_a_file_says_it_is_a_file() {
    let dir = scratch("demo-data-file");
    let f = dir.join("not-a-dir");
    std::fs::write(&f, "x").unwrap();
    let o = run(&[
        "demo",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data",
        f.to_str().unwrap(),
    ]);
    let err = assert_error(&o, 2, "is a file, not a directory", "--data FILE");
    assert!(!err.contains("File exists"), "{err}");
    std::fs::remove_dir_all(dir).ok();
}
