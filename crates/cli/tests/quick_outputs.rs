//! `volley http` on the one run layer: the outputs, thresholds, summary export and dashboard
//! export `volley run` has, from the same code (k6's NDJSON and CSV shapes, one sample per
//! request), against the built-in target.

mod common;

use common::{run, scratch, stderr, target};
use std::collections::BTreeMap;

#[test]
fn quick_mode_streams_k6s_ndjson_and_csv_with_thresholds_and_a_summary_export() {
    let t = target();
    let dir = scratch("quick-outputs");
    let (ndjson, csv, export, save, html) = (
        dir.join("points.ndjson"),
        dir.join("points.csv"),
        dir.join("export.json"),
        dir.join("run.json"),
        dir.join("dash.html"),
    );
    let url = format!("{}/", t.url());
    let o = run(&[
        "http",
        &url,
        "-n",
        "40",
        "-c",
        "2",
        "--quiet",
        "--out",
        &format!("json={}", ndjson.display()),
        "--out",
        &format!("csv={}", csv.display()),
        "--threshold",
        "http_req_duration:p(95)<60000",
        "--threshold",
        "http_reqs:count==40",
        "--summary-export",
        export.to_str().unwrap(),
        "--save",
        save.to_str().unwrap(),
        "--dashboard",
        "127.0.0.1:0",
        "--dashboard-export",
        html.to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");

    // k6's NDJSON: a Metric declaration (with its thresholds) before its Points, one Point
    // per request for the request metrics, each with k6's request tags.
    let text = std::fs::read_to_string(&ndjson).unwrap();
    let mut declared: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    let mut points: BTreeMap<String, u64> = BTreeMap::new();
    for line in text.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let metric = v["metric"].as_str().unwrap().to_string();
        match v["type"].as_str() {
            Some("Metric") => {
                assert_eq!(v["data"]["name"], metric.as_str(), "{line}");
                declared.insert(metric, v["data"].clone());
            }
            Some("Point") => {
                assert!(
                    declared.contains_key(&metric),
                    "declared before use: {line}"
                );
                assert!(v["data"]["time"].as_str().unwrap().ends_with('Z'), "{line}");
                assert!(v["data"]["value"].is_number(), "{line}");
                if metric == "http_reqs" {
                    let tags = &v["data"]["tags"];
                    assert_eq!(tags["method"], "GET", "{line}");
                    assert_eq!(tags["status"], "200", "{line}");
                    assert_eq!(tags["url"], url.as_str(), "{line}");
                }
                *points.entry(metric).or_default() += 1;
            }
            t => panic!("unknown type {t:?}: {line}"),
        }
    }
    assert_eq!(points.get("http_reqs"), Some(&40), "{points:?}");
    assert_eq!(points.get("http_req_duration"), Some(&40), "{points:?}");
    assert_eq!(declared["http_req_duration"]["type"], "trend");
    assert_eq!(declared["http_req_duration"]["contains"], "time");
    assert_eq!(
        declared["http_req_duration"]["thresholds"],
        serde_json::json!(["p(95)<60000"])
    );

    // k6's CSV: the same samples, one row each.
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = csv_text.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("metric_name,timestamp,metric_value,"));
    let rows = lines.filter(|l| l.starts_with("http_reqs,")).count();
    assert_eq!(rows, 40);

    // k6's summary export and the verdicts in the result file.
    let e: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    assert_eq!(e["metrics"]["http_reqs"]["count"], 40, "{e}");
    assert_eq!(
        e["metrics"]["http_req_duration"]["thresholds"]["p(95)<60000"], false,
        "k6's export says false for a threshold that held: {e}"
    );
    let r = volley_metrics::RunResult::read(&save).unwrap();
    assert_eq!(r.thresholds.len(), 2);
    assert!(r.thresholds.iter().all(|t| t.ok));
    assert_eq!(r.meta.mode, "http");
    // The dashboard observed the run and wrote its report at the end.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<html") || page.contains("<!DOCTYPE"),
        "an HTML report"
    );
}
