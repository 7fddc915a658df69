//! `volley demo seed` against a real service: the full data set (folders of 100, 1,000 and
//! 10,000 files), listing pages and sorting at 10,000 entries, FTS search of every 20th file,
//! the download fixture, the WebDAV area, and idempotence.

mod common;
use common::*;
use volley_demo_service::seed::{self, fixture_byte, list_name};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_seed_lists_searches_and_is_idempotent() {
    let svc = start("seed");
    let url = svc.demo.url();
    let first = seed::seed(&url, false).await.expect("seed");
    let counts = |r: &seed::SeedReport| {
        r.folders
            .iter()
            .map(|(k, v)| (k.clone(), v.files))
            .collect::<Vec<_>>()
    };
    let want: Vec<(String, i64)> = [
        ("downloads", 1),
        ("list-100", 100),
        ("list-1000", 1000),
        ("list-10000", 10_000),
        ("move-a", 100),
        ("move-b", 0),
        ("uploads", 0),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), *v))
    .collect();
    assert_eq!(counts(&first), want);
    assert!(first.created > 11_000);
    assert_eq!(first.fixture_size, seed::FIXTURE_SIZE as u64);

    let again = seed::seed(&url, false).await.expect("re-seed");
    assert_eq!(counts(&again), want, "same counts the second time");
    assert_eq!(again.created, 0, "nothing created the second time");
    assert_eq!(again.folders, first.folders, "same folders");

    let mut c = svc.client();
    let s = login(&mut c, seed::USER, seed::PASSWORD).await;
    let big = first.folders["list-10000"].id;

    // Paging by name: pages are consecutive and disjoint.
    let p1 = list(&mut c, &s, big, "limit=1000&offset=0").await;
    let p2 = list(&mut c, &s, big, "limit=1000&offset=1000").await;
    assert_eq!(p1["total_files"], 10_000);
    let name = |v: &serde_json::Value, i: usize| v["files"][i]["name"].as_str().unwrap().to_owned();
    let mut sorted: Vec<String> = (1..=10_000).map(list_name).collect();
    sorted.sort();
    let page = |v: &serde_json::Value| -> Vec<String> {
        v["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(page(&p1), sorted[..1000]);
    assert_eq!(page(&p2), sorted[1000..2000]);
    let last = list(&mut c, &s, big, "limit=50&offset=9990").await;
    assert_eq!(page(&last), sorted[9990..]);
    let desc = list(&mut c, &s, big, "limit=3&sort=name&order=desc").await;
    assert_eq!(name(&desc, 0), sorted[9999]);
    assert_eq!(name(&desc, 2), sorted[9997]);
    // By size: non-decreasing ascending, non-increasing descending, across a page boundary.
    for order in ["asc", "desc"] {
        let mut sizes = Vec::new();
        for offset in [0, 100] {
            let v = list(
                &mut c,
                &s,
                big,
                &format!("limit=100&offset={offset}&sort=size&order={order}"),
            )
            .await;
            sizes.extend(
                v["files"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f["size"].as_i64().unwrap()),
            );
        }
        let mut sorted = sizes.clone();
        sorted.sort();
        if order == "desc" {
            sorted.reverse();
        }
        assert_eq!(sizes, sorted, "{order}");
        assert_eq!(sizes.len(), 200);
    }
    // By creation time.
    let v = list(&mut c, &s, big, "limit=500&sort=created&order=asc").await;
    let ids: Vec<i64> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_i64().unwrap())
        .collect();
    let created: Vec<i64> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["created_at"].as_i64().unwrap())
        .collect();
    // Ordered by creation time, ties by id. (Ids need not follow creation time across ties:
    // concurrent seeding inserts take ids in commit order.)
    let rows: Vec<(i64, i64)> = created.iter().copied().zip(ids.iter().copied()).collect();
    assert!(
        rows.windows(2)
            .all(|w| w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1)),
        "{rows:?}"
    );

    // Search finds exactly every 20th file of every listing folder.
    let mut found = std::collections::BTreeSet::new();
    let mut total = 0;
    for offset in (0..).step_by(1000) {
        let r = c
            .request(
                "GET",
                &format!("/api/search?q=report&limit=1000&offset={offset}"),
                &s.auth(),
                "",
            )
            .await
            .unwrap();
        assert_eq!(r.status, 200);
        let v = r.json();
        total = v["total"].as_i64().unwrap();
        let files = v["files"].as_array().unwrap().clone();
        if files.is_empty() {
            break;
        }
        for f in files {
            let n = f["name"].as_str().unwrap();
            assert!(n.starts_with("report-"), "{n}");
            found.insert((f["folder_id"].as_i64().unwrap(), n.to_owned()));
        }
    }
    assert_eq!(total, 5 + 50 + 500);
    assert_eq!(found.len(), 555);
    let in_big: Vec<&String> = found
        .iter()
        .filter(|(f, _)| *f == big)
        .map(|(_, n)| n)
        .collect();
    let expect: Vec<String> = (1..=10_000)
        .filter(|i| i % 20 == 0)
        .map(list_name)
        .collect();
    assert_eq!(in_big.len(), 500);
    assert!(in_big.iter().zip(&expect).all(|(a, b)| *a == b));

    // The fixture downloads whole and by range.
    let url = format!("/api/files/{}/download", first.fixture_id);
    let r = c.request("GET", &url, &s.auth(), "").await.unwrap();
    assert_eq!(r.body.len(), seed::FIXTURE_SIZE);
    assert!(r
        .body
        .iter()
        .enumerate()
        .step_by(4099)
        .all(|(i, b)| *b == fixture_byte(i)));
    let r = c
        .request(
            "GET",
            &url,
            &[s.auth()[0], ("range", "bytes=1048576-1048586")],
            "",
        )
        .await
        .unwrap();
    assert_eq!(r.status, 206);
    assert_eq!(
        &r.body[..],
        &(1_048_576..=1_048_586)
            .map(fixture_byte)
            .collect::<Vec<_>>()[..]
    );
    let m = c.request("GET", "/metrics", &[], "").await.unwrap().text();
    assert!(
        m.contains("volley_demo_download_bytes_total 5242891"),
        "{}",
        m.lines()
            .filter(|l| l.contains("bytes"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
