//! `volley demo serve` and `volley demo seed`: the demo service as a process, seeded twice
//! with the reduced data set (same counts, nothing created the second time), stopped by
//! SIGTERM; the same on a throwaway PostgreSQL cluster (`--database`), and bad or unreachable
//! database URLs.

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

/// `volley demo serve --listen 127.0.0.1:0 --data DIR EXTRA…`: the process, its URL and its
/// first line.
fn serve(dir: &std::path::Path, extra: &[&str]) -> (Serve, String, String) {
    let mut child = volley()
        .args(["demo", "serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(dir)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("volley demo serve starts");
    let out = child.stdout.take().unwrap();
    let serve = Serve(child);
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line).unwrap();
    assert!(
        line.starts_with("volley demo service listening on http://127.0.0.1:"),
        "{line}"
    );
    let url = line.split_whitespace().nth(5).unwrap().to_owned();
    (serve, url, line)
}

/// SIGTERM stops the service cleanly (exit 0) within 10 s.
fn stop(mut serve: Serve) {
    let pid = serve.0.id().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = serve.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "volley demo serve did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
}

#[test]
fn demo_serve_then_seed_small_twice() {
    let dir = scratch("demo-service");
    let (serve, url, line) = serve(&dir, &[]);
    assert!(line.contains("SQLite"), "{line}");
    assert!(dir.join("demo.db").exists());

    let seed = || {
        let start = Instant::now();
        let o = run(&["demo", "seed", "--url", &url, "--small", "--json"]);
        assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
        (json(&o), start.elapsed())
    };
    let (first, took) = seed();
    assert!(took < Duration::from_secs(60), "bounded: {took:?}");
    let folders = first["folders"].clone();
    assert_eq!(folders["list-100"]["files"], 100);
    assert_eq!(folders["list-1000"]["files"], 1000);
    assert!(
        folders.get("list-10000").is_none(),
        "--small has no 10,000-file folder"
    );
    assert_eq!(folders["move-a"]["files"], 20);
    assert_eq!(first["fixture_size"], 5 << 20);
    assert_eq!(first["webdav_files"], 10);
    assert!(first["created"].as_u64().unwrap() > 1100);
    let (second, _) = seed();
    assert_eq!(second["folders"], folders, "same folders and counts");
    assert_eq!(second["created"], 0, "nothing created the second time");

    // The text report names the credentials and folders.
    let o = run(&["demo", "seed", "--url", &url, "--small"]);
    assert!(stdout(&o).contains("folder list-1000"), "{}", stdout(&o));

    stop(serve);
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
    let (serve, url, line) = serve(&dir, &["--database", &cluster.url()]);
    assert!(
        line.contains("database postgres://volley@127.0.0.1:"),
        "{line}"
    );
    assert!(!line.contains("pw-demo"), "password redacted: {line}");
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
    assert_eq!(second["folders"], first["folders"]);
    assert_eq!(second["created"], 0, "idempotent on PostgreSQL too");

    // The rows are in PostgreSQL.
    let mut c = cluster.connect().unwrap();
    let files: i64 = c
        .query_one("SELECT COUNT(*) FROM files", &[])
        .unwrap()
        .get(0);
    assert!(files > 1100, "{files} files");
    stop(serve);
    drop(c);
    cluster.stop().unwrap();
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn demo_serve_with_a_bad_or_unreachable_database_exits_1() {
    let dir = scratch("demo-pg-bad");
    let port = closed_port();
    let unreachable = format!("postgres://volley:s3cret@127.0.0.1:{port}/demo");
    for (url, says) in [
        (unreachable.as_str(), format!("127.0.0.1:{port}")),
        ("mysql://volley@127.0.0.1/demo", "postgres://".to_owned()),
    ] {
        let d = dir.to_str().unwrap();
        let o = run(&[
            "demo",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data",
            d,
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
fn demo_seed_reports_an_unreachable_service() {
    let url = format!("http://127.0.0.1:{}", closed_port());
    let o = run(&["demo", "seed", "--url", &url, "--small"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("seeding"), "{}", stderr(&o));
}

#[test]
fn demo_without_subcommand_is_still_the_tour() {
    let o = run(&["demo", "--help"]);
    let out = stdout(&o);
    assert!(
        out.contains("serve") && out.contains("seed") && out.contains("--duration"),
        "{out}"
    );
    let o = run(&["demo", "-z", "1s", "serve"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "tour flags and subcommands do not mix"
    );
}
