//! Bounded series (issue #13, section 1): requests with distinct URLs must not make a series
//! per URL. A named request is keyed by its `name`; every metric keeps at most
//! `--max-series` tag sets and folds the rest into one `{overflow:true}` series with one
//! warning; raw outputs (`--out json/csv`) still carry each sample's real `url`; a threshold
//! that selects by `url` still sees its URL.

mod common;

use common::{scratch, stderr, target};
use std::path::Path;
use volley_metrics::{RunResult, TotalValue};

/// Requests this many distinct URLs (one per iteration).
const ITERATIONS: &str = "1500";

fn run(dir: &Path, name: &str, script: &str, extra: &[&str]) -> (std::process::Output, RunResult) {
    let t = target();
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    let save = dir.join(format!("{name}.json"));
    let o = common::volley()
        .arg("run")
        .arg(&path)
        .args(["-e", &format!("BASE=http://{}", t.local_addr()), "-q"])
        .args(["-u", "4", "-i", ITERATIONS])
        .args(["--save", save.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    let r = RunResult::read(&save).unwrap_or_else(|e| panic!("{e}\n{}", stderr(&o)));
    (o, r)
}

fn counter_sum(r: &RunResult, name: &str) -> f64 {
    r.metrics_named(name)
        .map(|m| match m.value {
            TotalValue::Counter { sum, .. } => sum,
            _ => panic!("{name} is not a counter"),
        })
        .sum()
}

const NAMED: &str = r#"
import http from "k6/http";
export default function () {
  http.get(`${__ENV.BASE}/get?id=${__VU}-${__ITER}`, { tags: { name: "get" } });
}
"#;

#[test]
fn named_requests_with_distinct_urls_keep_one_series_and_raw_outputs_keep_the_url() {
    let dir = scratch("bounded-named");
    let ndjson = dir.join("out.ndjson");
    let (o, r) = run(
        &dir,
        "named.js",
        NAMED,
        &["--out", &format!("json={}", ndjson.display())],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let n: f64 = ITERATIONS.parse().unwrap();
    assert_eq!(counter_sum(&r, "http_reqs"), n);
    // One tag set (name=get, status 200...) per http metric, whatever the URLs.
    let reqs: Vec<_> = r.metrics_named("http_reqs").collect();
    assert_eq!(
        reqs.len(),
        1,
        "{:?}",
        reqs.iter().map(|m| &m.tags).collect::<Vec<_>>()
    );
    assert_eq!(reqs[0].tags.get("name").map(String::as_str), Some("get"));
    assert!(!reqs[0].tags.contains_key("url"), "{:?}", reqs[0].tags);
    assert!(r.metrics.len() < 30, "{} series", r.metrics.len());
    let size = std::fs::metadata(dir.join("named.js.json")).unwrap().len();
    assert!(size < 200_000, "result file of {size} bytes");
    assert!(!stderr(&o).contains("overflow"), "{}", stderr(&o));

    // The raw stream still has every request's own URL.
    let text = std::fs::read_to_string(&ndjson).unwrap();
    let mut urls = std::collections::HashSet::new();
    for l in text.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        if v["type"] == "Point" && v["metric"] == "http_reqs" {
            assert_eq!(v["data"]["tags"]["name"], "get", "{l}");
            urls.insert(v["data"]["tags"]["url"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(urls.len(), n as usize);
    assert!(urls.iter().all(|u| u.contains("/get?id=")));
}

const UNNAMED: &str = r#"
import http from "k6/http";
import { check, group } from "k6";
import { Trend } from "k6/metrics";
const t = new Trend("per_id");
export default function () {
  const r = http.get(`${__ENV.BASE}/get?id=${__VU}-${__ITER}`);
  check(r, { [`ok ${__VU}-${__ITER}`]: (r) => r.status === 200 });
  t.add(1, { id: `${__VU}-${__ITER}` });
  group(`g ${__ITER % 40}`, () => {});
}
"#;

#[test]
fn tag_sets_beyond_max_series_fold_into_one_overflow_series_with_one_warning() {
    let dir = scratch("bounded-overflow");
    let csv = dir.join("out.csv");
    let (o, r) = run(
        &dir,
        "unnamed.js",
        UNNAMED,
        &[
            "--max-series",
            "20",
            "--out",
            &format!("csv={}", csv.display()),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let n: f64 = ITERATIONS.parse().unwrap();
    let err = stderr(&o);
    for m in [
        "http_reqs",
        "http_req_duration",
        "data_received",
        "checks",
        "per_id",
        "group_duration",
    ] {
        let series: Vec<_> = r.metrics_named(m).collect();
        assert!(series.len() <= 21, "{m}: {} series", series.len());
        let over: Vec<_> = series
            .iter()
            .filter(|s| s.tags.get("overflow").map(String::as_str) == Some("true"))
            .collect();
        assert_eq!(over.len(), 1, "{m} has one overflow series");
        // It keeps only the few-valued tags the summary and thresholds select by.
        let kept = ["overflow", "expected_response", "scenario", "status"];
        assert!(
            over[0].tags.keys().all(|k| kept.contains(&k.as_str())),
            "{:?}",
            over[0].tags
        );
        let warned = err
            .lines()
            .filter(|l| l.contains(&format!("metric '{m}'")))
            .count();
        assert_eq!(warned, 1, "{m}: one warning\n{err}");
    }
    // Nothing is lost: totals still count every sample.
    assert_eq!(counter_sum(&r, "http_reqs"), n);
    let checks: u64 = r
        .metrics_named("checks")
        .map(|m| match m.value {
            TotalValue::Rate { total, .. } => total,
            _ => panic!(),
        })
        .sum();
    assert_eq!(checks as f64, n);
    // The warnings name the tag that exploded and the fix.
    let first = |m: &str| {
        err.lines()
            .find(|l| l.contains(&format!("metric '{m}' reached 20 tag sets")))
            .unwrap_or_else(|| panic!("{m}\n{err}"))
            .to_string()
    };
    let w = first("http_reqs");
    assert!(w.contains("tag 'url'") && w.contains("name"), "{w}");
    assert!(first("checks").contains("tag 'check'"));
    assert!(first("per_id").contains("tag 'id'"));
    assert!(first("group_duration").contains("tag 'group'"));
    // Raw rows keep the folded samples' own tags.
    let text = std::fs::read_to_string(&csv).unwrap();
    let urls: std::collections::HashSet<&str> = text
        .lines()
        .filter(|l| l.starts_with("http_reqs,"))
        .map(|l| l.split(',').nth(16).unwrap())
        .collect();
    assert_eq!(urls.len() as f64, n, "a row per request, each with its url");
    assert!(urls.iter().all(|u| u.contains("/get?id=")));
    assert!(!text.contains("overflow"));
}

const URL_THRESHOLD: &str = r#"
import http from "k6/http";
import exec from "k6/execution";
export const options = {
  thresholds: {
    [`http_reqs{url:${__ENV.BASE}/get?id=fixed}`]: ["count==20", "count<20"],
    "http_reqs{name:get}": ["count>1000"],
  },
};
export default function () {
  const fixed = exec.scenario.iterationInTest < 20;
  const url = fixed ? `${__ENV.BASE}/get?id=fixed` : `${__ENV.BASE}/get?id=${__VU}-${__ITER}`;
  http.get(url, { tags: { name: "get" } });
}
"#;

#[test]
fn threshold_on_a_url_tagged_sub_metric_still_sees_its_url() {
    let dir = scratch("bounded-url-threshold");
    let (o, r) = run(&dir, "url.js", URL_THRESHOLD, &[]);
    // `count<20` is crossed on purpose.
    assert_eq!(o.status.code(), Some(99), "{}", stderr(&o));
    let th = |e: &str| {
        r.thresholds
            .iter()
            .find(|t| t.expression == e)
            .unwrap_or_else(|| panic!("{e}: {:#?}", r.thresholds))
    };
    assert!(th("count==20").ok, "{:#?}", r.thresholds);
    assert_eq!(th("count==20").observed, Some(20.0));
    assert!(!th("count<20").ok);
    assert!(th("count>1000").ok);
}

#[test]
fn max_series_out_of_range_is_an_invalid_option() {
    let dir = scratch("bounded-bad-option");
    let path = dir.join("bad.js");
    std::fs::write(
        &path,
        "export const options = { maxSeriesPerMetric: 0 };\nexport default function () {}\n",
    )
    .unwrap();
    let o = common::run(&["run", "-q", "-i", "1", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(104), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("options.maxSeriesPerMetric: expected a number of tag sets"),
        "{}",
        stderr(&o)
    );
    let ok = dir.join("ok.js");
    std::fs::write(&ok, "export default function () {}\n").unwrap();
    let o = common::run(&[
        "run",
        "-q",
        "-i",
        "1",
        "--max-series",
        "2000000",
        ok.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(104), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--max-series: expected"),
        "{}",
        stderr(&o)
    );
}
