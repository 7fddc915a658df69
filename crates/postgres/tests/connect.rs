//! Clients by URL against a real cluster: TLS per `sslmode` (rustls) and every password login
//! method (SCRAM-SHA-256, MD5, cleartext). Skips with a message when PostgreSQL is absent.

use std::time::Duration;
use volley_postgres::{connect, find_binaries, Cluster, ClusterOptions};

fn start(password: Option<&str>) -> Option<Cluster> {
    if let Err(e) = find_binaries() {
        eprintln!("SKIP: {e}");
        return None;
    }
    let opts = ClusterOptions {
        password: password.map(String::from),
        ..Default::default()
    };
    Some(Cluster::start(&opts, Duration::from_secs(60)).unwrap())
}

fn reload(cluster: &Cluster, sql: &str) {
    let mut c = cluster.connect().unwrap();
    c.batch_execute(sql).unwrap();
    c.batch_execute("SELECT pg_reload_conf()").unwrap();
    // The postmaster applies a reload asynchronously; new sessions see it shortly after.
    std::thread::sleep(Duration::from_millis(500));
}

fn uses_tls(client: &mut volley_postgres::postgres::Client) -> bool {
    client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get(0)
}

fn db_message(e: volley_postgres::Error) -> String {
    e.to_string()
}

#[test]
fn sslmodes_over_rustls() {
    let Some(cluster) = start(None) else { return };
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    cluster
        .enable_tls(&ck.cert.pem(), &ck.signing_key.serialize_pem())
        .unwrap();
    let dir = volley_testkit::scratch("volley-pg", "tls");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, ck.cert.pem()).unwrap();
    let port = cluster.port();
    let url = |host: &str, query: &str| format!("postgres://volley@{host}:{port}/volley?{query}");
    let ca_q = format!("sslrootcert={}", ca.display());

    assert!(!uses_tls(
        &mut connect(&url("127.0.0.1", "sslmode=disable")).unwrap()
    ));
    assert!(
        uses_tls(&mut connect(&url("127.0.0.1", "")).unwrap()),
        "prefer uses TLS when offered"
    );
    assert!(uses_tls(
        &mut connect(&url("127.0.0.1", "sslmode=require")).unwrap()
    ));
    // The certificate names localhost: verify-ca accepts 127.0.0.1, verify-full does not.
    let ca_only = url("127.0.0.1", &format!("sslmode=verify-ca&{ca_q}"));
    assert!(uses_tls(&mut connect(&ca_only).unwrap()));
    let full = url("localhost", &format!("sslmode=verify-full&{ca_q}"));
    assert!(uses_tls(&mut connect(&full).unwrap()));
    let wrong_name = url("127.0.0.1", &format!("sslmode=verify-full&{ca_q}"));
    let err = format!(
        "{:?}",
        connect(&wrong_name)
            .err()
            .expect("verify-full accepted a wrong name")
    );
    assert!(err.contains("NotValidForName"), "{err}");
    let unknown_ca = url("localhost", "sslmode=verify-full");
    let err = format!(
        "{:?}",
        connect(&unknown_ca)
            .err()
            .expect("verify-full accepted an unknown CA")
    );
    assert!(err.contains("UnknownIssuer"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
    cluster.stop().unwrap();
}

#[test]
fn scram_md5_and_cleartext_password_logins() {
    let Some(cluster) = start(Some("s3cret")) else {
        return;
    };
    reload(
        &cluster,
        "SET password_encryption = 'md5';
         CREATE ROLE m5 LOGIN PASSWORD 'md5pw';
         CREATE ROLE clear LOGIN PASSWORD 'clearpw';",
    );
    let hba = cluster.data_dir().join("pg_hba.conf");
    let old = std::fs::read_to_string(&hba).unwrap();
    let lines =
        format!("host all m5 127.0.0.1/32 md5\nhost all clear 127.0.0.1/32 password\n{old}");
    cluster.write_server_file("pg_hba.conf", &lines).unwrap();
    reload(&cluster, "SELECT 1");
    let port = cluster.port();
    let who = |user: &str, pw: &str| {
        let url = format!("postgres://{user}:{pw}@127.0.0.1:{port}/volley?sslmode=disable");
        connect(&url).map(|mut c| {
            c.query_one("SELECT current_user::text", &[])
                .unwrap()
                .get::<_, String>(0)
        })
    };
    assert_eq!(who("volley", "s3cret").unwrap(), "volley");
    assert_eq!(who("m5", "md5pw").unwrap(), "m5");
    assert_eq!(who("clear", "clearpw").unwrap(), "clear");
    let err = db_message(who("m5", "nope").unwrap_err());
    assert!(
        err.contains("password authentication failed for user \"m5\""),
        "{err}"
    );
    let err = db_message(who("volley", "nope").unwrap_err());
    assert!(
        err.contains("cannot connect to postgres://volley@127.0.0.1"),
        "{err}"
    );
    assert!(!err.contains("nope"), "the password leaked: {err}");
    cluster.stop().unwrap();
}
