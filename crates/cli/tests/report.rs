//! `volley report`, `volley compare` and `volley http --report`, end to end against the
//! built-in target.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A `volley http` run of `secs` seconds with 4 connections, saved to `dir/name`.
fn saved_run(url: &str, secs: u64, dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let z = format!("{secs}s");
    let mut args = vec!["http", url, "-z", &z, "-c", "4", "--quiet", "--save"];
    let p = path.to_str().unwrap().to_string();
    args.push(&p);
    args.extend_from_slice(extra);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    path
}

fn compare_json(base: &Path, new: &Path, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut args = vec![
        "compare",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    (o.status.code(), json(&o))
}

fn row<'a>(j: &'a serde_json::Value, metric: &str, figure: &str) -> &'a serde_json::Value {
    j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric && r["figure"] == figure && r.get("tags").is_none())
        .unwrap_or_else(|| panic!("no {metric} {figure} row in {j:#}"))
}

/// The same target twice. It answers after a fixed 20 ms, so its latency and rate do not
/// depend on how busy this shared machine is from one run to the next (a target answering in
/// 100 µs does: its p95 moves by 20 % when another process compiles, and the runs really
/// differ — which `compare` then correctly reports).
#[test]
fn two_runs_of_the_same_target_are_within_noise() {
    let t = target_with(None, Some(Duration::from_millis(20)));
    let dir = scratch("compare-same");
    let url = format!("{}/", t.url());
    let a = saved_run(&url, 5, &dir, "a.json", &[]);
    let b = saved_run(&url, 5, &dir, "b.json", &[]);
    let (code, j) = compare_json(&a, &b, &["--fail-on", "p95:+10%,rate:-5%"]);
    for (m, f) in [("http_req_duration", "p95"), ("http_reqs", "rate")] {
        let r = row(&j, m, f);
        assert_eq!(r["verdict"], "within_noise", "{m} {f}: {r:#}");
        assert!(r["intervals"][0].as_u64().unwrap() >= 4, "{r:#}");
    }
    assert_eq!(code, Some(0), "{j:#}");
    assert_eq!(j["failed"], false);
    t.shutdown();
}

#[test]
fn added_delay_is_a_p95_regression_and_fails_the_build() {
    let fast = target();
    let slow = target_with(None, Some(Duration::from_millis(20)));
    let dir = scratch("compare-delay");
    let a = saved_run(&format!("{}/", fast.url()), 5, &dir, "base.json", &[]);
    let b = saved_run(&format!("{}/", slow.url()), 5, &dir, "new.json", &[]);

    let (code, j) = compare_json(&a, &b, &[]);
    assert_eq!(code, Some(0), "no --fail-on: verdicts only");
    let p95 = row(&j, "http_req_duration", "p95");
    assert_eq!(p95["verdict"], "regression", "{p95:#}");
    assert!(p95["change"].as_f64().unwrap() > 1.0, "{p95:#}");
    assert!(p95["p_value"].as_f64().unwrap() < 0.05);
    assert_eq!(row(&j, "http_reqs", "rate")["verdict"], "regression");

    let (code, j) = compare_json(&a, &b, &["--fail-on", "p95:+10%"]);
    assert_eq!(code, Some(4), "regression beyond --fail-on exits 4: {j:#}");
    assert_eq!(j["failed"], true);
    assert_eq!(j["fail_on"][0]["violated"], true);

    // The other way round it is an improvement, and nothing fails.
    let (code, j) = compare_json(&b, &a, &["--fail-on", "p95:+10%,rate:-5%"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        row(&j, "http_req_duration", "p95")["verdict"],
        "improvement"
    );

    // Terminal text names the verdicts and the failed rule.
    let o = run(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--fail-on",
        "p95:+10%",
    ]);
    assert_eq!(o.status.code(), Some(4));
    let text = stdout(&o);
    assert!(
        text.contains("regression") && text.contains("FAILED"),
        "{text}"
    );

    // Markdown: a GitHub-flavoured table (header, separator, rows of the same width).
    let o = run(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--markdown",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let md = stdout(&o);
    let table: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(table.len() >= 3, "{md}");
    let cols = |l: &str| l.replace("\\|", "").matches('|').count();
    assert!(
        table
            .iter()
            .all(|l| l.ends_with('|') && cols(l) == cols(table[0])),
        "{md}"
    );
    let sep = table[1];
    assert!(
        sep.trim_matches('|')
            .split('|')
            .all(|c| !c.is_empty() && c.chars().all(|ch| ch == '-' || ch == ':')),
        "separator row: {sep}"
    );
    assert!(md.contains("**regression**"));
    fast.shutdown();
    slow.shutdown();
}

#[test]
fn compare_rejects_bad_rules_and_files() {
    let dir = scratch("compare-bad");
    let junk = dir.join("junk.json");
    std::fs::write(&junk, "{}").unwrap();
    let j = junk.to_str().unwrap();
    let o = run(&["compare", j, j, "--fail-on", "p95:-10%"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("goes up"), "{}", stderr(&o));
    let o = run(&["compare", j, j]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not a Volley result file"));
}

/// Render `html` in headless Chromium when it is installed: a screenshot of real size, and
/// the DOM as Chromium parsed it.
fn chromium_check(html: &Path, dir: &Path) {
    let bin = Path::new("/usr/bin/chromium");
    if !bin.exists() {
        println!("skipped: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    }
    let shot = dir.join("shot.png");
    let profile = dir.join("profile");
    let url = format!("file://{}", html.display());
    let common = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
    ];
    let run_chromium = |extra: &[String]| {
        std::process::Command::new(bin)
            .args(common)
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(extra)
            .arg(&url)
            .output()
            .expect("chromium runs")
    };
    let o = run_chromium(&[
        format!("--screenshot={}", shot.display()),
        "--window-size=1200,2000".into(),
    ]);
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(
        size > 30_000,
        "screenshot of {size} bytes; chromium said: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = run_chromium(&[
        "--dump-dom".into(),
        "--enable-logging=stderr".into(),
        "--v=0".into(),
    ]);
    let dom = String::from_utf8_lossy(&o.stdout);
    assert!(
        dom.contains("<svg") && dom.contains("polyline"),
        "charts in the DOM"
    );
    assert!(!dom.contains("<script"), "no script element was created");
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(
        !log.contains("Uncaught") && !log.contains("CONSOLE("),
        "console messages: {log}"
    );
}

#[test]
fn html_report_is_one_safe_file_with_charts() {
    let t = target();
    let dir = scratch("report-html");
    // A URL whose query carries markup: it must show as text, never as an element.
    let url = format!("{}/get?q=<script>alert(1)</script>", t.url());
    let html = dir.join("run.html");
    let a = saved_run(
        &url,
        3,
        &dir,
        "a.json",
        &["--report", html.to_str().unwrap()],
    );
    let page = std::fs::read_to_string(&html).expect("--report wrote the page");
    assert!(page.contains("<svg"));
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!page.contains("<script"), "no script element at all");
    let own = t.url().to_string();
    for scheme in ["http://", "https://"] {
        for (i, _) in page.match_indices(scheme) {
            assert!(
                page[i..].starts_with(&own),
                "external reference at {i}: {}",
                &page[i..(i + 60).min(page.len())]
            );
        }
    }
    for forbidden in ["<link", "src=", "@import", "url("] {
        assert!(!page.contains(forbidden), "{forbidden} in the page");
    }

    // `volley report` with two files: overlaid series and a comparison table.
    let b = saved_run(&format!("{}/", t.url()), 3, &dir, "b.json", &[]);
    let out = dir.join("both.html");
    let o = run(&[
        "report",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let both = std::fs::read_to_string(&out).unwrap();
    assert!(both.contains("<h2>Comparison</h2>") && both.contains("b.json"));
    assert!(both.contains("Latency histogram"));
    assert!(!both.contains("<script"));
    chromium_check(&out, &dir);

    let o = run(&[
        "report",
        dir.join("missing.json").to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    t.shutdown();
}
