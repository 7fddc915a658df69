//! `volley demo` is the README's first command: it must work end to end on a fresh machine.
//! The full tour runs here with `-z 1s` (every step shortened to a second): the intro against
//! the built-in target, then every example suite against the demo service. The assertions
//! read what the tour saved (`results/tour.json`, the result files), not only its text.

mod common;
use common::*;

use serde_json::Value;
use std::path::Path;
use volley_metrics::RunResult;

/// Every example of the tour, in table order.
const EXAMPLES: [&str; 11] = [
    "auth-login",
    "auth-refresh",
    "folder-list",
    "search",
    "download",
    "upload-direct",
    "upload-chunked",
    "batch-move",
    "webdav-rw",
    "mixed-ramp",
    "soak-mixed",
];

fn demo(dir: &Path, extra: &[&str]) -> (std::process::Output, String) {
    let mut args = vec![
        "demo",
        "-z",
        "1s",
        "-c",
        "4",
        "--out-dir",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    let why = format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(&o),
        stderr(&o)
    );
    (o, why)
}

fn tour_json(dir: &Path, why: &str) -> Value {
    let path = dir.join("results/tour.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}\n{why}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}\n{why}"))
}

/// The table row of `name`: the stdout line after the header that starts with it.
fn table_row<'a>(out: &'a str, name: &str) -> Option<&'a str> {
    out.lines()
        .skip_while(|l| !l.starts_with("scenario "))
        .find(|l| l.split_whitespace().next() == Some(name))
}

#[test]
fn demo_tours_the_built_in_target_and_every_example() {
    let _serial = exclusive();
    let dir = scratch("demo");
    let (o, why) = demo(&dir, &[]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{why}");

    // The intro: quick mode and the k6 script against the built-in target.
    assert!(
        out.contains("(exact match)"),
        "quick mode counts match:\n{why}"
    );
    assert!(
        out.contains("✓ login status is 200"),
        "the k6 step ran its checks:\n{why}"
    );
    assert!(
        out.contains("    http_req_duration\n    ✓ '"),
        "thresholds shown as passed:\n{why}"
    );
    // The capacity step: a short search against a target of known capacity (#21).
    assert!(
        out.contains("max rate under SLO (p99<50ms): "),
        "the search found an answer:\n{why}"
    );
    for f in [
        "quick.json",
        "quick.html",
        "quickstart.js",
        "quickstart.json",
        "quickstart.html",
        "capacity.json",
        "capacity.html",
        "examples/lib/config.js",
    ] {
        assert!(dir.join(f).exists(), "{f} was written\n{why}");
    }
    let s = run(&[
        "summary",
        dir.join("quick.json").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(s.status.code(), Some(0), "{}", stderr(&s));

    // The table lists every example with 100 % checks and every threshold met.
    for name in EXAMPLES {
        let row = table_row(&out, name).unwrap_or_else(|| panic!("no row for {name}\n{why}"));
        assert!(
            row.contains(" 100% "),
            "{name}: checks not all passed: {row}\n{why}"
        );
        assert!(row.contains("✓ "), "{name}: thresholds: {row}\n{why}");
        assert!(!row.contains('✗'), "{name}: {row}\n{why}");
    }

    // tour.json agrees, and every saved result file parses and holds the same checks.
    let tour = tour_json(&dir, &why);
    assert_eq!(tour["exit_code"], 0, "{why}");
    assert_eq!(tour["profile"], "smoke");
    let rows = tour["examples"].as_array().expect("examples");
    let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, EXAMPLES, "{why}");
    for r in rows {
        let name = r["name"].as_str().unwrap();
        assert_eq!(r["exit_code"], 0, "{name}: {r}");
        let passed = r["checks"]["passed"].as_u64().unwrap();
        assert!(passed > 0, "{name}: no checks ran: {r}");
        assert_eq!(r["checks"]["total"].as_u64(), Some(passed), "{name}: {r}");
        let t = &r["thresholds"];
        assert!(t["total"].as_u64().unwrap() >= 3, "{name}: {r}");
        assert_eq!(t["passed"], t["total"], "{name}: {r}");
        assert!(r["http_reqs_per_s"].as_f64().unwrap() > 0.0, "{name}: {r}");

        let file = dir.join(format!("results/{name}.json"));
        let saved = RunResult::read(&file).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(saved.meta.mode, "run");
        let (trues, total) =
            saved
                .metrics_named("checks")
                .fold((0.0, 0.0), |(t, n), m| match &m.value {
                    volley_metrics::TotalValue::Rate { trues, total } => {
                        (t + *trues as f64, n + *total as f64)
                    }
                    _ => (t, n),
                });
        assert_eq!(trues, passed as f64, "{name}: saved checks");
        assert_eq!(total, passed as f64, "{name}: saved checks");
        assert!(saved.thresholds.iter().all(|t| t.ok), "{name}");
        assert!(dir.join(format!("results/{name}.html")).exists(), "{name}");
    }

    // Body bytes: what the scripts counted equals what the service reports on /metrics.
    let row = |name: &str| rows.iter().find(|r| r["name"] == name).unwrap();
    let download = &row("download")["body_bytes"]["downloaded"];
    let script = download["script"].as_f64().expect("download counted");
    assert!(
        script >= (5 << 20) as f64,
        "a whole fixture at least: {download}"
    );
    assert_eq!(download["service"].as_f64(), Some(script), "{download}");
    // ... and equals the counter in the saved result file.
    let saved = RunResult::read(&dir.join("results/download.json")).unwrap();
    assert_eq!(saved.counter_sum("bytes_downloaded"), script);
    for name in ["upload-direct", "upload-chunked"] {
        let up = &row(name)["body_bytes"]["uploaded"];
        assert!(up["script"].as_f64().unwrap() > 0.0, "{name}: {up}");
        assert_eq!(up["service"], up["script"], "{name}: {up}");
    }
    assert!(out.contains("equal the service's /metrics"), "{why}");
    std::fs::remove_dir_all(dir).ok();
}

/// A crossed threshold fails the tour with k6's 99, shown as ✗ in the table.
#[test]
fn demo_fails_when_an_example_crosses_a_threshold() {
    let _serial = exclusive();
    let dir = scratch("demo-fail");
    // p(95) < 0 ms cannot hold.
    let (o, why) = demo(&dir, &["--only", "search", "-e", "P95_MS=0"]);
    assert_eq!(o.status.code(), Some(99), "{why}");
    let out = stdout(&o);
    let row = table_row(&out, "search").unwrap_or_else(|| panic!("no search row\n{why}"));
    assert!(row.contains('✗'), "{row}\n{why}");
    assert!(
        table_row(&out, "download").is_none(),
        "--only runs one example\n{why}"
    );
    assert!(
        stderr(&o).contains("search: threshold search_duration p(95)<0 crossed"),
        "{why}"
    );
    let tour = tour_json(&dir, &why);
    assert_eq!(tour["exit_code"], 99);
    let r = &tour["examples"][0];
    assert_eq!(r["name"], "search");
    assert_eq!(r["exit_code"], 99);
    assert!(r["thresholds"]["passed"].as_u64() < r["thresholds"]["total"].as_u64());
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn demo_refuses_bad_flags_before_running_anything() {
    let dir = scratch("demo-flags");
    for (bad, says) in [
        (&["--only", "serach"][..], "no such example"),
        (&["-e", "BASE_URL=http://192.0.2.1"][..], "BASE_URL"),
        (&["-e", "P95_MS"][..], "KEY=VALUE"),
        (&["-z", "0s"][..], "longer than 0"),
        (&["--profile", "turbo"][..], "turbo"),
    ] {
        let mut args = vec!["demo", "--out-dir", dir.to_str().unwrap()];
        args.extend_from_slice(bad);
        let o = run(&args);
        let why = format!("stdout:\n{}\nstderr:\n{}", stdout(&o), stderr(&o));
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {why}");
        assert!(stderr(&o).contains(says), "{bad:?}: {why}");
        assert!(
            !dir.join("quick.json").exists(),
            "{bad:?} ran the demo\n{why}"
        );
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn demo_quick_is_only_the_blast() {
    let _serial = exclusive();
    let dir = scratch("demo-quick");
    let (o, why) = demo(&dir, &["--quick"]);
    assert_eq!(o.status.code(), Some(0), "{why}");
    assert!(stdout(&o).contains("(exact match)"), "{why}");
    assert!(dir.join("quick.json").exists(), "{why}");
    for f in ["quickstart.json", "results", "examples"] {
        assert!(!dir.join(f).exists(), "--quick wrote {f}\n{why}");
    }
    std::fs::remove_dir_all(dir).ok();
}
