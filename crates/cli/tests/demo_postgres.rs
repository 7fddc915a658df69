//! `volley demo serve --database postgres://…`: the demo service on a throwaway PostgreSQL
//! cluster as a process, seeded with `volley demo seed`; bad and unreachable URLs end with a
//! clear error and exit code 1.

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

struct Serve(std::process::Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn demo_serve_with_a_bad_or_unreachable_database_exits_1() {
    let dir = scratch("demo-pg-bad");
    let port = closed_port();
    let unreachable = format!("postgres://volley:s3cret@127.0.0.1:{port}/demo");
    for (url, says) in [
        (unreachable.as_str(), format!("127.0.0.1:{port}")),
        ("mysql://volley@127.0.0.1/demo", "postgres".to_owned()),
    ] {
        let o = run(&[
            "demo",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data",
            dir.to_str().unwrap(),
            "--database",
            url,
        ]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{url}: {err}");
        assert!(
            err.contains("--database") && err.contains(&says),
            "{url}: {err}"
        );
        assert!(!err.contains("s3cret"), "password redacted: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn demo_serve_on_postgres_then_seed_small() {
    if let Err(e) = volley_postgres::find_binaries() {
        eprintln!("SKIP: PostgreSQL is not installed: {e}");
        return;
    }
    let cluster = volley_postgres::Cluster::start(
        &volley_postgres::ClusterOptions {
            password: Some("pw-demo".into()),
            ..Default::default()
        },
        Duration::from_secs(60),
    )
    .expect("cluster starts");
    let dir = scratch("demo-pg");
    let mut child = volley()
        .args(["demo", "serve", "--listen", "127.0.0.1:0"])
        .args([
            "--database",
            &cluster.url(),
            "--data",
            dir.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("volley demo serve starts");
    let out = child.stdout.take().unwrap();
    let mut serve = Serve(child);
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line).unwrap();
    assert!(
        line.starts_with("volley demo service listening on http://127.0.0.1:"),
        "{line}"
    );
    assert!(
        line.contains("database postgres://volley@127.0.0.1:"),
        "{line}"
    );
    assert!(!line.contains("pw-demo"), "password redacted: {line}");
    let url = line.split_whitespace().nth(5).unwrap().to_owned();
    assert!(!dir.join("demo.db").exists(), "no SQLite file");

    let seed = || {
        let o = run(&["demo", "seed", "--url", &url, "--small", "--json"]);
        assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
        json(&o)
    };
    let first = seed();
    assert_eq!(first["folders"]["list-1000"]["files"], 1000);
    assert_eq!(first["webdav_files"], 10);
    let second = seed();
    assert_eq!(second["created"], 0, "idempotent on PostgreSQL too");

    // The rows are in PostgreSQL.
    let mut c = cluster.connect().unwrap();
    let files: i64 = c
        .query_one("SELECT COUNT(*) FROM files", &[])
        .unwrap()
        .get(0);
    assert!(files > 1100, "{files} files");

    let pid = serve.0.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = serve.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
    drop(c);
    cluster.stop().unwrap();
    std::fs::remove_dir_all(dir).ok();
}
