//! Helpers for the demo service's integration tests: a service on 127.0.0.1:0 with a scratch
//! data directory, and accounts.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::{json, Value};
use volley_demo_service::client::{multipart, multipart_type, Client, Response};
use volley_demo_service::{spawn, DemoConfig, RunningDemo};

pub struct Service {
    pub demo: RunningDemo,
    pub dir: PathBuf,
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
    tweak(&mut cfg);
    Service {
        demo: spawn(cfg).expect("demo service starts"),
        dir,
    }
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
