//! Thresholds, sub-metrics and the summary shapes, run against the built-in target with
//! `tests/k6/thresholds*.js` (library level: exact verdicts and observed values).

mod common;
use common::*;

use volley_js::RunError;
use volley_run::Summary;

use common::run_script as run;

#[test]
fn thresholds_pass_on_metrics_and_tagged_sub_metrics() {
    let t = target();
    let out = run("thresholds.js", &t, &[]).unwrap_or_else(|e| panic!("{e}"));
    let th = &out.result.thresholds;
    let failed: Vec<_> = th.iter().filter(|t| !t.ok).collect();
    assert!(failed.is_empty(), "{failed:#?}");
    assert!(!out.thresholds_failed());
    let get = |m: &str, e: &str| {
        th.iter()
            .find(|t| t.metric == m && t.expression == e)
            .unwrap_or_else(|| panic!("{m} {e}"))
            .observed
            .unwrap()
    };
    assert_eq!(get("http_reqs", "count==8"), 8.0);
    assert_eq!(get("http_req_failed", "rate<=0.5"), 0.5);
    assert_eq!(get("http_reqs{name:verify}", "count==4"), 4.0);
    assert_eq!(get("checks{check:status is 200}", "rate==1"), 1.0);
    assert!(get("group_duration{group:::login}", "min>0") > 0.0);
    assert_eq!(get("http_reqs{group:::login,method:GET}", "count==4"), 4.0);
    assert_eq!(get("things", "count==12"), 12.0);
    assert_eq!(get("sizes", "max==30"), 30.0);
    // The summary marks metrics with thresholds and lists the sub-metrics under them.
    let s = Summary::from_result(&out.result).unwrap();
    let text = s.render_text();
    assert!(text.contains("✓ http_reqs"), "{text}");
    assert!(text.contains("✓ { name:verify }"), "{text}");
    assert!(text.contains("{ expected_response:true }"), "{text}");
    let e = s.export();
    assert_eq!(e["metrics"]["http_reqs"]["thresholds"]["count==8"], false);
    assert_eq!(
        e["metrics"]["http_req_duration{name:verify}"]["thresholds"]["p(95)<5000"],
        false
    );
}

#[test]
fn failing_thresholds_are_reported_with_their_metrics() {
    let t = target();
    let out = run("thresholds.js", &t, &[("FAIL", "1")]).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.thresholds_failed());
    let msg = out.thresholds_message().unwrap();
    assert!(
        msg.contains("checks") && msg.contains("http_reqs{name:verify}"),
        "{msg}"
    );
    let c = out
        .result
        .thresholds
        .iter()
        .find(|t| t.metric == "checks")
        .unwrap();
    assert_eq!((c.ok, c.observed), (false, Some(0.5)));
    let text = Summary::from_result(&out.result).unwrap().render_text();
    assert!(text.contains("✗ checks"), "{text}");
    assert!(text.contains("✗ { name:verify }"), "{text}");
}

#[test]
fn bad_thresholds_are_config_errors() {
    let t = target();
    match run("thresholds_bad.js", &t, &[]) {
        Err(RunError::Config(e)) => {
            assert!(
                e.contains("options.thresholds[\"http_req_duration\"][1]"),
                "{e}"
            );
            assert!(e.contains("p95"), "{e}");
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted"),
    }
    match run("thresholds_unknown.js", &t, &[]) {
        Err(RunError::Config(e)) => assert!(e.contains("no_such_metric"), "{e}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted"),
    }
}
