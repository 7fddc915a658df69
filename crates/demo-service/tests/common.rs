//! Helpers for the demo service's integration tests: a service on 127.0.0.1:0 with a scratch
//! data directory, and accounts.
//!
//! In the `postgres` test binary (tests/postgres.rs includes the other test files), every
//! service gets its own database in a throwaway `volley_postgres::Cluster` shared by the
//! tests running at the same time; without PostgreSQL those tests run on SQLite and say so.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use volley_postgres::{Cluster, ClusterOptions};

use serde_json::{json, Value};
use volley_demo_service::client::{multipart, multipart_type, Client, Response};
use volley_demo_service::{spawn, DemoConfig, RunningDemo};

pub struct Service {
    pub demo: RunningDemo,
    pub dir: PathBuf,
    /// Kept alive while the service runs (PostgreSQL tests only); dropped after `demo`.
    cluster: Option<Arc<Cluster>>,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("volley-demo-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

pub fn start(name: &str) -> Service {
    start_with(name, |_| {})
}

pub fn start_with(name: &str, tweak: impl FnOnce(&mut DemoConfig)) -> Service {
    let dir = scratch(name);
    let mut cfg = DemoConfig::new(&dir);
    let cluster = if on_postgres() {
        postgres_database(name).map(|(cluster, url)| {
            cfg.database = Some(url);
            cluster
        })
    } else {
        None
    };
    tweak(&mut cfg);
    Service {
        demo: spawn(cfg).expect("demo service starts"),
        dir,
        cluster,
    }
}

/// True in the `postgres` test binary.
pub fn on_postgres() -> bool {
    env!("CARGO_CRATE_NAME") == "postgres"
}

/// The shared cluster (started by the first test that needs it, stopped when the last
/// service holding it is dropped) and a URL to a new database named after the test; `None`
/// (with a message) when PostgreSQL is not installed.
pub fn postgres_database(name: &str) -> Option<(Arc<Cluster>, String)> {
    // The synchronous client cannot run inside the test's async runtime.
    std::thread::scope(|s| s.spawn(|| create_database(name)).join().unwrap())
}

fn create_database(name: &str) -> Option<(Arc<Cluster>, String)> {
    static SHARED: Mutex<Weak<Cluster>> = Mutex::new(Weak::new());
    let cluster = {
        let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
        match shared.upgrade() {
            Some(c) => c,
            None => {
                if let Err(e) = volley_postgres::find_binaries() {
                    eprintln!("SKIP PostgreSQL backend (running on SQLite): {e}");
                    return None;
                }
                let c = Cluster::start(
                    &ClusterOptions::default(),
                    std::time::Duration::from_secs(60),
                )
                .expect("PostgreSQL cluster starts");
                let c = Arc::new(c);
                *shared = Arc::downgrade(&c);
                c
            }
        }
    };
    let db: String = format!("demo_{name}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    let mut admin = cluster.connect().expect("connect to the cluster");
    for sql in [
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ] {
        admin.batch_execute(&sql).expect("create the test database");
    }
    let base = cluster.url();
    let url = format!("{}/{db}", &base[..base.rfind('/').unwrap()]);
    Some((cluster, url))
}

impl Service {
    pub fn client(&self) -> Client {
        let mut c = Client::new(&self.demo.url()).unwrap();
        c.timeout = std::time::Duration::from_secs(30);
        c
    }
}

/// A user's session: the bearer header and the cookie/CSRF pair.
pub struct Session {
    pub bearer: String,
    pub cookie: String,
    pub csrf: String,
    pub refresh: String,
    pub root: i64,
    pub login: Value,
}

impl Session {
    pub fn auth(&self) -> [(&str, &str); 1] {
        [("authorization", self.bearer.as_str())]
    }
}

pub async fn register(c: &mut Client, user: &str, pass: &str) -> Response {
    c.json(
        "POST",
        "/api/auth/register",
        &[],
        &json!({"username": user, "password": pass}),
    )
    .await
    .unwrap()
}

pub async fn login(c: &mut Client, user: &str, pass: &str) -> Session {
    let r = c
        .json(
            "POST",
            "/api/auth/login",
            &[],
            &json!({"username": user, "password": pass}),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    let cookies: Vec<String> = r
        .set_cookies()
        .iter()
        .map(|c| c.split(';').next().unwrap().to_owned())
        .collect();
    Session {
        bearer: format!("Bearer {}", v["access_token"].as_str().unwrap()),
        cookie: cookies.join("; "),
        csrf: v["csrf_token"].as_str().unwrap().to_owned(),
        refresh: v["refresh_token"].as_str().unwrap().to_owned(),
        root: v["user"]["root_folder_id"].as_i64().unwrap(),
        login: v,
    }
}

pub async fn user(c: &mut Client, name: &str) -> Session {
    let r = register(c, name, "password-123").await;
    assert_eq!(r.status, 201, "{}", r.text());
    login(c, name, "password-123").await
}

pub async fn upload(c: &mut Client, s: &Session, folder: i64, name: &str, data: &[u8]) -> Response {
    let ct = multipart_type();
    c.request(
        "POST",
        &format!("/api/files/upload?folder_id={folder}"),
        &[("authorization", &s.bearer), ("content-type", &ct)],
        multipart(&[], name, data),
    )
    .await
    .unwrap()
}

pub async fn mkdir(c: &mut Client, s: &Session, parent: i64, name: &str) -> i64 {
    let r = c
        .json(
            "POST",
            "/api/folders",
            &s.auth(),
            &json!({"name": name, "parent_id": parent}),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["folder"]["id"].as_i64().unwrap()
}

pub async fn list(c: &mut Client, s: &Session, folder: i64, q: &str) -> Value {
    let r = c
        .request("GET", &format!("/api/folders/{folder}?{q}"), &s.auth(), "")
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

/// Asserts a 4xx with the JSON error shape; returns the code.
#[track_caller]
pub fn assert_4xx(r: &Response, status: u16, what: &str) -> String {
    assert_eq!(r.status, status, "{what}: {}", r.text());
    let v = r.json();
    assert!(
        v["error"].is_string(),
        "{what}: error message in {}",
        r.text()
    );
    v["code"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: code in {}", r.text()))
        .to_owned()
}
