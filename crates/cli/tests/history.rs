//! Run history: `--history` on `volley http`/`volley run`, `volley history`, and
//! `volley compare --baseline` — in SQLite always, and in a throwaway PostgreSQL cluster on
//! 127.0.0.1 where Debian's postgresql is installed (skipped with a message otherwise).

mod common;

use common::{closed_port, json, scratch, stderr, target, volley};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// Debian's PostgreSQL server binaries, if installed.
fn pg_bindir() -> Option<PathBuf> {
    let root = Path::new("/usr/lib/postgresql");
    let mut versions: Vec<PathBuf> = std::fs::read_dir(root)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|b| b.join("initdb").is_file() && b.join("pg_ctl").is_file())
        .collect();
    versions.sort();
    versions.pop()
}

/// A throwaway cluster; stopped (immediate mode) when dropped.
struct Cluster {
    bin: PathBuf,
    data: PathBuf,
    as_user: Option<&'static str>,
}

impl Cluster {
    fn cmd(&self, prog: &str) -> Command {
        let path = self.bin.join(prog);
        match self.as_user {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--"]).arg(path);
                c
            }
            None => Command::new(path),
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self
            .cmd("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "stop"])
            .output();
    }
}

#[test]
fn postgres_history_when_a_server_is_installed() {
    let Some(bin) = pg_bindir() else {
        println!("SKIP: PostgreSQL server binaries (Debian's postgresql) not installed");
        return;
    };
    // PostgreSQL refuses to run as root: run it as the `postgres` user then.
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let as_user = if root {
        let has = Command::new("id")
            .arg("postgres")
            .output()
            .is_ok_and(|o| o.status.success());
        if !has {
            println!("SKIP: running as root and there is no 'postgres' user to run the server");
            return;
        }
        Some("postgres")
    } else {
        None
    };
    let dir = scratch("history-pg");
    let data = dir.join("data");
    let pwfile = dir.join("pw");
    std::fs::write(&pwfile, "s3cret\n").unwrap();
    if root {
        let ok = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        // The scratch dir's parents must be traversable by postgres (the temp dir is).
        if !ok {
            println!("SKIP: cannot hand the cluster directory to the postgres user");
            return;
        }
    }
    let cluster = Cluster {
        bin,
        data: data.clone(),
        as_user,
    };
    let o = cluster
        .cmd("initdb")
        .arg("-D")
        .arg(&data)
        .args(["-U", "volley", "--auth=scram-sha-256", "--no-sync"])
        .arg(format!("--pwfile={}", pwfile.display()))
        .output()
        .unwrap();
    if !o.status.success() {
        println!(
            "SKIP: initdb failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
        return;
    }
    let port = closed_port();
    let opts = format!(
        "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
        dir.display()
    );
    let o = cluster
        .cmd("pg_ctl")
        .arg("-D")
        .arg(&data)
        .args(["-o", &opts, "-w", "-t", "30", "-l"])
        .arg(dir.join("log"))
        .arg("start")
        .output()
        .unwrap();
    if !o.status.success() {
        println!(
            "SKIP: the server did not start: {} {}",
            String::from_utf8_lossy(&o.stdout).trim(),
            std::fs::read_to_string(dir.join("log")).unwrap_or_default()
        );
        return;
    }
    // SCRAM-SHA-256 login (PostgreSQL's default), then the same checks as with SQLite.
    let url = format!("postgres://volley:s3cret@127.0.0.1:{port}/postgres");
    exercise(&url, &dir);
    // A wrong password is a clear error.
    let o = volley()
        .args(["history", "--db"])
        .arg(format!("postgres://volley:wrong@127.0.0.1:{port}/postgres"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("password authentication failed"),
        "{}",
        stderr(&o)
    );
    drop(cluster);
}
