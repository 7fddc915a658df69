//! `kind = "postgres"` end to end through the runner: a throwaway cluster from the machine's
//! binaries with `init_sql`, a command service that depends on it, `sql` seed steps (one of
//! them an assertion in SQL), teardown that leaves no postmaster; and an SQL error located at
//! file:line:column. Skips with a message when PostgreSQL is not installed.

use std::path::Path;
use volley_engine::RunControl;
use volley_suite::runner::{run, RunOptions};

fn have_postgres() -> bool {
    match volley_postgres::find_binaries() {
        Ok(_) => true,
        Err(e) => {
            eprintln!("skipping: {e}");
            false
        }
    }
}

fn scratch(name: &str) -> volley_testkit::Scratch {
    volley_testkit::scratch("volley-suite-pg", name)
}

fn results(dir: &Path) -> serde_json::Value {
    let base = dir.join("results/pg/smoke");
    let run = std::fs::read_dir(&base)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    serde_json::from_str(&std::fs::read_to_string(run.join("suite.json")).unwrap()).unwrap()
}

fn smoke(dir: &Path) -> RunOptions {
    RunOptions {
        path: Some(dir.to_path_buf()),
        profile: "smoke".into(),
        results: None,
        keep_going: false,
        baseline: None,
        history: None,
    }
}

fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rfind(')')
            .is_some_and(|i| !s[i + 1..].trim_start().starts_with('Z'))
    })
}

const SUITE: &str = r#"
name = "pg"

[services.db]
kind = "postgres"
database = "shop"
init_sql = ["schema.sql"]

[services.client]
command = "echo using ${services.db.url}; exec sleep 30"
depends_on = ["db"]
ready.tcp = "127.0.0.1:${services.db.port}"
ready.log = "using postgres://volley@127.0.0.1:[0-9]+/shop"

[[seed]]
sql = "seed.sql"

[[seed]]
name = "verify"
sql = "verify.sql"

[profiles.smoke]
[[profiles.smoke.steps]]
command = "test -n '${services.db.url}'"
"#;

#[test]
fn a_postgres_service_is_provisioned_seeded_and_removed() {
    if !have_postgres() {
        return;
    }
    let dir = scratch("ok");
    std::fs::write(dir.join("volley.toml"), SUITE).unwrap();
    std::fs::write(
        dir.join("schema.sql"),
        "CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL);\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("seed.sql"),
        "INSERT INTO items VALUES (1, 'a'), (2, 'b'), (3, 'c');\n",
    )
    .unwrap();
    // Fails the seed unless the schema and the seed both ran, in order, on the same database.
    std::fs::write(
        dir.join("verify.sql"),
        "DO $$ BEGIN IF (SELECT count(*) FROM items) <> 3 THEN RAISE EXCEPTION 'wrong count'; END IF; END $$;\n",
    )
    .unwrap();
    let code = run(&smoke(&dir), &RunControl::new());
    let j = results(&dir);
    assert_eq!(code, 0, "{j:#}");
    let steps: Vec<&str> = j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["seed-1", "verify", "command-1"]);
    let db = &j["services"][0];
    assert_eq!(db["name"], "db");
    assert!(db["url"]
        .as_str()
        .unwrap()
        .starts_with("postgres://volley@127.0.0.1:"));
    for s in j["services"].as_array().unwrap() {
        let pid = s["pid"].as_u64().unwrap();
        assert!(!alive(pid), "{} (pid {pid}) survived teardown", s["name"]);
    }
}

#[test]
fn an_sql_seed_error_is_located_and_stops_the_run() {
    if !have_postgres() {
        return;
    }
    let dir = scratch("bad");
    std::fs::write(
        dir.join("volley.toml"),
        "name = \"pg\"\n[services.db]\nkind = \"postgres\"\n\n[[seed]]\nname = \"broken\"\nsql = \"broken.sql\"\n\n[profiles.smoke]\n[[profiles.smoke.steps]]\ncommand = \"touch ran\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("broken.sql"), "SELECT 1;\nSELEC 2;\n").unwrap();
    assert_eq!(run(&smoke(&dir), &RunControl::new()), 1);
    let j = results(&dir);
    let e = j["steps"][0]["error"].as_str().unwrap();
    assert!(e.contains("broken.sql:2:"), "{e}");
    assert!(j["notes"][0]
        .as_str()
        .unwrap()
        .contains("seed step 'broken' failed"));
    assert!(!dir.join("ran").exists());
    assert!(!alive(j["services"][0]["pid"].as_u64().unwrap()));
}
