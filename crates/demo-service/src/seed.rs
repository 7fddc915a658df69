//! `volley demo seed`: the example suites' data set, created through the public API (as a
//! real team's seed script would), and idempotent: what exists is kept, only what is missing
//! is created, so running it twice gives the same counts.
//!
//! | what | full | `--small` |
//! |---|---|---|
//! | users | [`USER`], [`WEBDAV_USER`] (passwords [`PASSWORD`], [`WEBDAV_PASSWORD`]) | same |
//! | `list-100`, `list-1000`, `list-10000` folders | 100 / 1,000 / 10,000 files | `list-100`, `list-1000` |
//! | search | every 20th listed file is `report-NNNNN.txt` (search term [`SEARCH_TERM`]) | same |
//! | `downloads/fixture-5MiB.bin` | 5 MiB, byte *i* = `b'a' + i % 26` | same |
//! | `move-a`, `move-b` | 100 `move-NNN.txt` files across the two (batch move area) | 20 |
//! | `uploads` | empty folder for upload scenarios | same |
//! | WebDAV `/dav/webdav/` of [`WEBDAV_USER`] | 10 × 64 KiB `seed-NN.bin`, and `scratch/` | same |

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use base64::Engine;
use serde::Serialize;
use serde_json::json;

use crate::client::{multipart, multipart_type, Client};

pub const USER: &str = "bench_user";
pub const PASSWORD: &str = "bench-pass-1234";
pub const WEBDAV_USER: &str = "bench_webdav";
pub const WEBDAV_PASSWORD: &str = "bench-webdav-pass-1234";
pub const SEARCH_TERM: &str = "report";
pub const FIXTURE: &str = "fixture-5MiB.bin";
pub const FIXTURE_SIZE: usize = 5 << 20;
/// Parallel connections used to upload.
const CONNECTIONS: usize = 4;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SeedFolder {
    pub id: i64,
    pub files: i64,
}

/// What the data set holds after seeding (the counts are the same on every run) and what
/// this run had to create.
#[derive(Debug, Clone, Serialize)]
pub struct SeedReport {
    pub url: String,
    pub user: String,
    pub password: String,
    pub webdav_user: String,
    pub webdav_password: String,
    pub search_term: String,
    /// Folder name → id and file count.
    pub folders: BTreeMap<String, SeedFolder>,
    pub fixture_id: i64,
    pub fixture_size: u64,
    pub webdav_path: String,
    pub webdav_files: usize,
    /// Files (and WebDAV resources) created by this run; 0 on a re-run.
    pub created: u64,
    pub took_ms: u64,
}

/// The name of seeded listing file `i` (1-based): every 20th is a search hit.
pub fn list_name(i: usize) -> String {
    if i.is_multiple_of(20) {
        format!("{SEARCH_TERM}-{i:05}.txt")
    } else {
        format!("file-{i:05}.txt")
    }
}

fn list_content(i: usize) -> Vec<u8> {
    format!("volley demo seed file {i}\n")
        .repeat(i % 7 + 1)
        .into_bytes()
}

/// Byte `i` of the download fixture.
pub fn fixture_byte(i: usize) -> u8 {
    b'a' + (i % 26) as u8
}

fn err(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

fn expect(what: &str, r: &crate::client::Response, ok: &[u16]) -> Result<(), String> {
    if ok.contains(&r.status) {
        Ok(())
    } else {
        Err(format!("{what}: HTTP {} {}", r.status, r.text()))
    }
}

/// Seeds the service at `url` on a runtime of its own (for the CLI).
pub fn seed_blocking(url: &str, small: bool) -> Result<SeedReport, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| err("runtime", e))?
        .block_on(seed(url, small))
}

pub async fn seed(url: &str, small: bool) -> Result<SeedReport, String> {
    let start = Instant::now();
    let mut c = Client::new(url)?;
    for (u, p) in [(USER, PASSWORD), (WEBDAV_USER, WEBDAV_PASSWORD)] {
        let r = c
            .json(
                "POST",
                "/api/auth/register",
                &[],
                &json!({"username": u, "password": p, "email": format!("{u}@example.com")}),
            )
            .await
            .map_err(|e| err("register", e))?;
        expect("register", &r, &[201, 409])?;
    }
    let r = c
        .json(
            "POST",
            "/api/auth/login",
            &[],
            &json!({"username": USER, "password": PASSWORD}),
        )
        .await
        .map_err(|e| err("login", e))?;
    expect("login", &r, &[200])?;
    let token = r.json()["access_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let bearer = format!("Bearer {token}");
    let auth = [("authorization", bearer.as_str())];

    // Top-level folders.
    let r = c
        .request("GET", "/api/folders?limit=1", &auth, "")
        .await
        .map_err(|e| err("list root", e))?;
    expect("list root", &r, &[200])?;
    let mut top: BTreeMap<String, i64> = BTreeMap::new();
    for f in r.json()["folders"].as_array().into_iter().flatten() {
        top.insert(
            f["name"].as_str().unwrap_or_default().to_owned(),
            f["id"].as_i64().unwrap_or(0),
        );
    }
    let mut lists = vec![("list-100", 100usize), ("list-1000", 1000)];
    if !small {
        lists.push(("list-10000", 10_000));
    }
    let moves = if small { 20 } else { 100 };
    let mut names: Vec<&str> = lists.iter().map(|(n, _)| *n).collect();
    names.extend(["downloads", "move-a", "move-b", "uploads"]);
    for name in &names {
        if !top.contains_key(*name) {
            let r = c
                .json("POST", "/api/folders", &auth, &json!({"name": name}))
                .await
                .map_err(|e| err("create folder", e))?;
            expect("create folder", &r, &[201])?;
            top.insert(
                name.to_string(),
                r.json()["folder"]["id"].as_i64().unwrap_or(0),
            );
        }
    }

    // Files: find what is missing, upload it over a few connections.
    let mut todo: Vec<(i64, String, Vec<u8>)> = Vec::new();
    for (folder, n) in &lists {
        let id = top[*folder];
        let have = names_in(&mut c, &auth, id).await?;
        for i in 1..=*n {
            let name = list_name(i);
            if !have.contains(&name) {
                todo.push((id, name, list_content(i)));
            }
        }
    }
    let (ma, mb) = (top["move-a"], top["move-b"]);
    let mut have = names_in(&mut c, &auth, ma).await?;
    have.extend(names_in(&mut c, &auth, mb).await?);
    for i in 1..=moves {
        let name = format!("move-{i:03}.txt");
        if !have.contains(&name) {
            todo.push((ma, name, list_content(i)));
        }
    }
    let downloads = top["downloads"];
    if !names_in(&mut c, &auth, downloads).await?.contains(FIXTURE) {
        let data: Vec<u8> = (0..FIXTURE_SIZE).map(fixture_byte).collect();
        todo.push((downloads, FIXTURE.to_owned(), data));
    }
    let mut created = todo.len() as u64;
    upload_all(url, &bearer, todo).await?;

    let mut folders = BTreeMap::new();
    for name in &names {
        let id = top[*name];
        let r = c
            .request("GET", &format!("/api/folders/{id}?limit=1"), &auth, "")
            .await
            .map_err(|e| err("count", e))?;
        expect("count", &r, &[200])?;
        let files = r.json()["total_files"].as_i64().unwrap_or(-1);
        folders.insert(name.to_string(), SeedFolder { id, files });
    }
    let r = c
        .request(
            "GET",
            &format!("/api/folders/{downloads}?limit=10"),
            &auth,
            "",
        )
        .await
        .map_err(|e| err("fixture", e))?;
    let fixture = r.json()["files"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["name"] == FIXTURE)
        .cloned()
        .ok_or("fixture missing after seeding")?;

    // The WebDAV area.
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD
            .encode(format!("{WEBDAV_USER}:{WEBDAV_PASSWORD}"))
    );
    let dav = [("authorization", basic.as_str())];
    for col in ["/dav/webdav/", "/dav/webdav/scratch/"] {
        let r = c
            .request("MKCOL", col, &dav, "")
            .await
            .map_err(|e| err("MKCOL", e))?;
        expect("MKCOL", &r, &[201, 405])?;
        if r.status == 201 {
            created += 1;
        }
    }
    let mut h = dav.to_vec();
    h.push(("depth", "1"));
    let listing = c
        .request("PROPFIND", "/dav/webdav/", &h, "")
        .await
        .map_err(|e| err("PROPFIND", e))?;
    expect("PROPFIND", &listing, &[207])?;
    let listing = listing.text();
    let webdav_files = 10;
    for i in 1..=webdav_files {
        let name = format!("seed-{i:02}.bin");
        if listing.contains(&format!("<D:displayname>{name}</D:displayname>")) {
            continue;
        }
        let data = vec![b'0' + (i % 10) as u8; 64 * 1024];
        let r = c
            .request("PUT", &format!("/dav/webdav/{name}"), &dav, data)
            .await
            .map_err(|e| err("PUT", e))?;
        expect("PUT", &r, &[201, 204])?;
        created += 1;
    }

    Ok(SeedReport {
        url: url.to_owned(),
        user: USER.into(),
        password: PASSWORD.into(),
        webdav_user: WEBDAV_USER.into(),
        webdav_password: WEBDAV_PASSWORD.into(),
        search_term: SEARCH_TERM.into(),
        folders,
        fixture_id: fixture["id"].as_i64().unwrap_or(0),
        fixture_size: fixture["size"].as_u64().unwrap_or(0),
        webdav_path: "/dav/webdav/".into(),
        webdav_files,
        created,
        took_ms: start.elapsed().as_millis() as u64,
    })
}

/// Every file name in a folder (paged).
async fn names_in(
    c: &mut Client,
    auth: &[(&str, &str)],
    folder: i64,
) -> Result<HashSet<String>, String> {
    let mut out = HashSet::new();
    let mut offset = 0;
    loop {
        let r = c
            .request(
                "GET",
                &format!("/api/folders/{folder}?limit=1000&offset={offset}"),
                auth,
                "",
            )
            .await
            .map_err(|e| err("list", e))?;
        expect("list", &r, &[200])?;
        let v = r.json();
        let files = v["files"].as_array().cloned().unwrap_or_default();
        for f in &files {
            out.insert(f["name"].as_str().unwrap_or_default().to_owned());
        }
        offset += files.len();
        if files.is_empty() || offset as i64 >= v["total_files"].as_i64().unwrap_or(0) {
            return Ok(out);
        }
    }
}

async fn upload_all(
    url: &str,
    bearer: &str,
    todo: Vec<(i64, String, Vec<u8>)>,
) -> Result<(), String> {
    if todo.is_empty() {
        return Ok(());
    }
    let mut shares: Vec<Vec<(i64, String, Vec<u8>)>> =
        (0..CONNECTIONS).map(|_| Vec::new()).collect();
    for (i, t) in todo.into_iter().enumerate() {
        shares[i % CONNECTIONS].push(t);
    }
    let mut tasks = Vec::new();
    for share in shares {
        let (url, bearer) = (url.to_owned(), bearer.to_owned());
        tasks.push(tokio::spawn(async move {
            let mut c = Client::new(&url)?;
            let ct = multipart_type();
            for (folder, name, data) in share {
                let body = multipart(&[], &name, &data);
                let r = c
                    .request(
                        "POST",
                        &format!("/api/files/upload?folder_id={folder}"),
                        &[("authorization", &bearer), ("content-type", &ct)],
                        body,
                    )
                    .await
                    .map_err(|e| err("upload", e))?;
                // 409: another seeder got there first; the file exists either way.
                expect("upload", &r, &[201, 409])?;
            }
            Ok::<(), String>(())
        }));
    }
    for t in tasks {
        t.await.map_err(|e| err("upload task", e))??;
    }
    Ok(())
}
