//! Run history: `--history` on `volley http`/`volley run`, `volley history`, and
//! `volley compare --baseline` — in SQLite always, and in a throwaway PostgreSQL cluster on
//! 127.0.0.1 (volley-postgres) where PostgreSQL is installed (skipped with a message otherwise).

mod common;

use common::{json, scratch, stderr, target, volley};
use std::path::Path;
use std::process::Output;
use std::time::Duration;
use volley_postgres::{Cluster, ClusterOptions};

/// `volley http` against the target with a history, a revision and labels.
fn store(url: &str, history: &str, rev: &str, labels: &[&str], save: Option<&Path>) -> Output {
    let mut c = volley();
    c.args([
        "http",
        url,
        "-c",
        "2",
        "-n",
        "200",
        "--quiet",
        "--history",
        history,
    ]);
    for l in labels {
        c.args(["--label", l]);
    }
    if let Some(s) = save {
        c.args(["--save", s.to_str().unwrap()]);
    }
    c.env("VOLLEY_GIT_REV", rev);
    c.output().unwrap()
}

fn history_json(db: &str) -> Vec<serde_json::Value> {
    let o = volley()
        .args(["history", "--db", db, "--json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    json(&o).as_array().unwrap().clone()
}

/// Two runs appended, listed newest first with revisions and labels; `--baseline last` picks
/// the earlier one (not NEW itself), `--baseline LABEL` the labelled one.
fn exercise(db: &str, dir: &Path) {
    let t = target();
    let url = format!("http://{}/", t.local_addr());
    let o = store(&url, db, "rev1", &["main"], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let new = dir.join("new.json");
    let o = store(&url, db, "rev2", &["pr-7", "nightly"], Some(&new));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    let runs = history_json(db);
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0]["git_rev"], "rev2");
    assert_eq!(runs[0]["labels"], serde_json::json!(["pr-7", "nightly"]));
    assert_eq!(runs[1]["git_rev"], "rev1");
    assert_eq!(runs[1]["labels"], serde_json::json!(["main"]));
    for r in &runs {
        assert_eq!(r["test"], url.as_str());
        assert_eq!(r["mode"], "http");
        assert_eq!(r["requests"], 200);
        assert!(r["p95_ms"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["error_rate"], 0.0);
    }
    let first_id = runs[1]["id"].as_i64().unwrap();

    // The text listing names both revisions.
    let o = volley().args(["history", "--db", db]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("rev1") && text.contains("rev2"), "{text}");
    assert!(text.contains("pr-7,nightly"), "{text}");

    for which in ["last", "main", "rev1"] {
        let o = volley()
            .args(["compare", "--baseline", which, "--db", db, "--json"])
            .arg(&new)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{which}: {}", stderr(&o));
        let c = json(&o);
        assert_eq!(
            c["base"]["label"],
            format!("run {first_id} @rev1"),
            "--baseline {which}"
        );
        assert_eq!(c["new"]["label"], "new.json");
    }
    let o = volley()
        .args(["compare", "--baseline", "nope", "--db", db])
        .arg(&new)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("labelled 'nope'"), "{}", stderr(&o));

    // --test filters; a label filter too.
    let o = volley()
        .args(["history", "--db", db, "--json", "--label", "main"])
        .output()
        .unwrap();
    assert_eq!(json(&o).as_array().unwrap().len(), 1);
    let o = volley()
        .args([
            "history",
            "--db",
            db,
            "--json",
            "--test",
            "http://elsewhere/",
        ])
        .output()
        .unwrap();
    assert_eq!(json(&o).as_array().unwrap().len(), 0);
}

#[test]
fn sqlite_history_lists_runs_and_compare_finds_the_baseline() {
    let dir = scratch("history-sqlite");
    // A directory: the database is DIR/history.db.
    let db = dir.join("hist");
    exercise(db.to_str().unwrap(), &dir);
    assert!(db.join("history.db").is_file());
}

#[test]
fn history_without_a_value_uses_dot_volley_and_script_runs_are_stored() {
    let dir = scratch("history-default");
    let t = target();
    let script = dir.join("s.js");
    std::fs::write(
        &script,
        "import http from 'k6/http';\nexport default function () { http.get(`${__ENV.BASE}/`); }\n",
    )
    .unwrap();
    let o = volley()
        .current_dir(&dir)
        .args([
            "run",
            "s.js",
            "-u",
            "1",
            "-i",
            "3",
            "-q",
            "--history",
            "--label",
            "main",
        ])
        .arg("-e")
        .arg(format!("BASE=http://{}", t.local_addr()))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(dir.join(".volley/history.db").is_file());
    let o = volley()
        .current_dir(&dir)
        .args(["history", "--json", "--test", "s.js"])
        .output()
        .unwrap();
    let runs = json(&o);
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    assert_eq!(runs[0]["mode"], "run");
    assert_eq!(runs[0]["requests"], 3);
    assert_eq!(runs[0]["labels"], serde_json::json!(["main"]));
    // A bad label is a usage error before anything runs.
    let o = volley()
        .current_dir(&dir)
        .args(["run", "s.js", "--history", "--label", "a,b"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn postgres_history_when_a_server_is_installed() {
    if let Err(e) = volley_postgres::find_binaries() {
        println!("SKIP: {e}");
        return;
    }
    let dir = scratch("history-pg");
    let opts = ClusterOptions {
        password: Some("s3cret".into()),
        database: "perf".into(),
        ..Default::default()
    };
    let cluster = Cluster::start(&opts, Duration::from_secs(60)).unwrap();
    // SCRAM-SHA-256 login (PostgreSQL's default), then the same checks as with SQLite.
    let port = cluster.port();
    let plain = format!("postgres://volley:s3cret@127.0.0.1:{port}/perf?sslmode=disable");
    exercise(&plain, &dir);
    // A wrong password is a clear error, without the password.
    let o = volley()
        .args(["history", "--db"])
        .arg(format!("postgres://volley:wrong@127.0.0.1:{port}/perf"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("password authentication failed"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("wrong"), "{}", stderr(&o));
    // Over TLS: the same history, reached with sslmode=require (and refused with
    // verify-full against a self-signed certificate).
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    cluster
        .enable_tls(&ck.cert.pem(), &ck.signing_key.serialize_pem())
        .unwrap();
    let tls = format!("postgres://volley:s3cret@127.0.0.1:{port}/perf?sslmode=require");
    assert_eq!(history_json(&tls).len(), 2);
    let o = volley()
        .args(["history", "--db"])
        .arg(format!("{tls}&sslmode=verify-full"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("certificate"), "{}", stderr(&o));
    cluster.stop().unwrap();
}
