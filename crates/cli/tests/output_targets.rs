//! Outputs written after a run (`--save`, `--summary-export`, `--report`, `--out json=/csv=`,
//! `--history`) are checked before it: an unwritable target exits 1 naming the flag and path,
//! and not one request reaches the target (its /stats count stays 0).

mod common;
use common::*;
use std::path::Path;

/// `volley ARGS` must fail before the load: exit 1, the flag and path named, no request sent.
fn refused_before_the_run(
    t: &volley_testserver::RunningTarget,
    args: &[&str],
    flag: &str,
    path: &str,
) {
    let o = run(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    assert!(err.contains(&format!("{flag} {path}")), "{args:?}: {err}");
    assert!(err.contains("nothing was run"), "{args:?}: {err}");
    assert_eq!(t.stats().requests, 0, "{args:?} sent requests");
}

/// A directory this process cannot write into, or None when it can anyway (root).
fn read_only_dir(base: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let d = base.join("ro");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o555)).unwrap();
    if std::fs::write(d.join("probe"), "").is_ok() {
        return None;
    }
    Some(d.join("out.json").to_str().unwrap().to_string())
}

#[test]
fn unwritable_output_targets_stop_quick_mode_before_any_request() {
    let t = target();
    let dir = scratch("targets-http");
    let url = format!("{}/", t.url());
    let missing = dir.join("missing/run.json");
    let missing = missing.to_str().unwrap();
    let as_dir = dir.to_str().unwrap();
    let file = dir.join("file");
    std::fs::write(&file, "").unwrap();
    let under_file = file.join("run.json");
    let under_file = under_file.to_str().unwrap();
    let q = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["http", &url, "-n", "20", "-c", "1", "--quiet"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    for (extra, flag, path) in [
        (vec!["--save", missing], "--save", missing),
        (vec!["--save", as_dir], "--save", as_dir),
        (vec!["--report", under_file], "--report", under_file),
        (
            vec!["--history", "postgres://u@127.0.0.1:nope/db"],
            "--history",
            "postgres://",
        ),
        (vec!["--history", under_file], "--history", under_file),
    ] {
        let args = q(&extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused_before_the_run(&t, &args, flag, path);
    }
    if let Some(ro) = read_only_dir(&dir) {
        let args = q(&["--save", &ro]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused_before_the_run(&t, &args, "--save", &ro);
    }
    t.shutdown();
}

#[test]
fn unwritable_output_targets_stop_script_mode_before_any_request() {
    let t = target();
    let dir = scratch("targets-run");
    let script = dir.join("s.js");
    std::fs::write(
        &script,
        format!(
            "import http from 'k6/http';\nexport default function () {{ http.get('{}/'); }}\n",
            t.url()
        ),
    )
    .unwrap();
    let script = script.to_str().unwrap();
    let missing = dir.join("missing/out");
    let missing = missing.to_str().unwrap();
    let as_dir = dir.to_str().unwrap();
    let base = ["run", script, "-i", "5", "--quiet"];
    let cases: Vec<(Vec<String>, &str, String)> = vec![
        (
            vec!["--save".into(), missing.into()],
            "--save",
            missing.into(),
        ),
        (
            vec!["--summary-export".into(), missing.into()],
            "--summary-export",
            missing.into(),
        ),
        (
            vec!["--report".into(), as_dir.into()],
            "--report",
            as_dir.into(),
        ),
        (
            vec!["--out".into(), format!("json={missing}")],
            "--out",
            missing.into(),
        ),
        (
            vec!["--out".into(), format!("csv={as_dir}")],
            "--out",
            as_dir.into(),
        ),
        (
            vec!["--history".into(), "postgresql://u@[::1/db".into()],
            "--history",
            "postgres://".into(),
        ),
    ];
    for (extra, flag, path) in &cases {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(extra.iter().map(String::as_str));
        refused_before_the_run(&t, &args, flag, path);
    }
    // The same run with writable targets does run.
    let save = dir.join("ok.json");
    let o = run(&[
        "run",
        script,
        "-i",
        "5",
        "--quiet",
        "--save",
        save.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(t.stats().requests, 5);
    t.shutdown();
}
