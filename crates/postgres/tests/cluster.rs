//! Real clusters from the machine's PostgreSQL (each test skips with a message when it is
//! absent; .ci/run installs it).

use std::time::Duration;
use volley_postgres::{find_binaries, Cluster, ClusterOptions};

const START: Duration = Duration::from_secs(60);

fn installed() -> bool {
    match find_binaries() {
        Ok(_) => true,
        Err(e) => {
            eprintln!("SKIP: {e}");
            false
        }
    }
}

fn scratch(name: &str) -> volley_testkit::Scratch {
    volley_testkit::scratch("volley-pg-test", name)
}

/// Whether a process with this pid exists (and is not a zombie we failed to reap).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

/// Processes whose command line mentions `needle` (the data dir names its server's backends).
fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(needle) && alive(pid) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn start_connect_init_sql_and_stop_leaves_nothing() {
    if !installed() {
        return;
    }
    let dir = scratch("init");
    let sql = dir.join("init.sql");
    std::fs::write(&sql, "CREATE TABLE t (id int PRIMARY KEY, name text);\nINSERT INTO t VALUES (1, 'one'), (2, 'two');\n").unwrap();
    let opts = ClusterOptions {
        database: "shop".into(),
        init_sql: vec![sql],
        ..Default::default()
    };
    let cluster = Cluster::start(&opts, START).unwrap();
    let url = cluster.url();
    assert_eq!(
        url,
        format!("postgres://volley@127.0.0.1:{}/shop", cluster.port())
    );
    let mut client =
        volley_postgres::postgres::Client::connect(&url, volley_postgres::postgres::NoTls).unwrap();
    let row = client
        .query_one(
            "SELECT count(*), current_database(), current_user FROM t",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 2);
    assert_eq!(row.get::<_, String>(1), "shop");
    assert_eq!(row.get::<_, String>(2), "volley");
    drop(client);
    let (pid, data) = (cluster.pid(), cluster.data_dir().to_path_buf());
    assert!(alive(pid));
    assert!(data.join("PG_VERSION").exists());
    cluster.stop().unwrap();
    assert!(!alive(pid), "postmaster {pid} survived stop");
    assert!(!data.exists(), "{} survived stop", data.display());
    let data = data.to_string_lossy().into_owned();
    assert_eq!(processes_mentioning(&data), Vec::<u32>::new());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn drop_stops_the_server_and_removes_the_temp_dir() {
    if !installed() {
        return;
    }
    let cluster = Cluster::start(&ClusterOptions::default(), START).unwrap();
    let (pid, data) = (cluster.pid(), cluster.data_dir().to_path_buf());
    drop(cluster);
    assert!(!alive(pid));
    assert!(!data.exists());
}

#[test]
fn password_logins_use_scram_and_the_url_carries_the_password() {
    if !installed() {
        return;
    }
    let opts = ClusterOptions {
        password: Some("s3cret@x".into()),
        ..Default::default()
    };
    let cluster = Cluster::start(&opts, START).unwrap();
    assert!(
        cluster.url().contains(":s3cret%40x@127.0.0.1:"),
        "{}",
        cluster.url()
    );
    let pg = volley_postgres::postgres::Client::connect;
    let mut client = pg(&cluster.url(), volley_postgres::postgres::NoTls).unwrap();
    let method: String = client
        .query_one(
            "SELECT rolpassword FROM pg_authid WHERE rolname = current_user",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(method.starts_with("SCRAM-SHA-256$"), "{method}");
    let wrong = format!("postgres://volley:nope@127.0.0.1:{}/volley", cluster.port());
    let Err(err) = pg(&wrong, volley_postgres::postgres::NoTls) else {
        panic!("a wrong password logged in")
    };
    let message = err
        .as_db_error()
        .map(|e| e.message().to_owned())
        .unwrap_or_default();
    assert!(
        message.contains("password authentication failed"),
        "{err:?}"
    );
    cluster.stop().unwrap();
}

#[test]
fn a_given_data_dir_and_log_file_are_used_and_kept() {
    if !installed() {
        return;
    }
    let dir = scratch("given");
    let data = dir.join("data");
    let log = dir.join("server.log");
    let opts = ClusterOptions {
        data_dir: Some(data.clone()),
        log_file: Some(log.clone()),
        ..Default::default()
    };
    let cluster = Cluster::start(&opts, START).unwrap();
    cluster
        .connect()
        .unwrap()
        .batch_execute("CREATE TABLE kept (x int)")
        .unwrap();
    cluster.stop().unwrap();
    assert!(
        data.join("PG_VERSION").exists(),
        "a given data dir is not removed"
    );
    assert!(
        std::fs::metadata(&log).unwrap().len() > 0,
        "the server logged nowhere"
    );
    // Reused without initdb: the table is still there.
    let cluster = Cluster::start(&opts, START).unwrap();
    cluster
        .connect()
        .unwrap()
        .batch_execute("SELECT * FROM kept")
        .unwrap();
    cluster.stop().unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_failing_init_sql_file_names_file_line_and_column() {
    if !installed() {
        return;
    }
    let dir = scratch("badsql");
    let sql = dir.join("bad.sql");
    std::fs::write(&sql, "CREATE TABLE ok (x int);\n  SELEC 1;\n").unwrap();
    let opts = ClusterOptions {
        init_sql: vec![sql.clone()],
        ..Default::default()
    };
    let err = Cluster::start(&opts, START).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("{}:2:3: ERROR: syntax error", sql.display())),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_taken_port_fails_with_the_server_log() {
    if !installed() {
        return;
    }
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let opts = ClusterOptions {
        port: Some(port),
        ..Default::default()
    };
    let err = Cluster::start(&opts, START).unwrap_err().to_string();
    assert!(err.contains("exited") && err.contains("could not"), "{err}");
    assert!(err.contains("last lines of"), "{err}");
}
