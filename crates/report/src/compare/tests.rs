use super::*;
use crate::view::tests::synthetic;

fn row<'a>(c: &'a Comparison, metric: &str, f: Figure) -> &'a Row {
    c.rows
        .iter()
        .find(|r| r.metric == metric && r.figure == f && r.tags.is_none())
        .unwrap_or_else(|| panic!("no row {metric} {f:?}"))
}

#[test]
fn same_run_is_within_noise() {
    let a = synthetic("http://x/", 8, 500, 10.0, 0);
    let c = compare(("a", &a), ("b", &a), &CompareOptions::default(), &[]);
    assert!(c.rows.iter().all(|r| r.verdict == Verdict::WithinNoise));
    assert_eq!(row(&c, "http_reqs", Figure::Rate).change, Some(0.0));
}

#[test]
fn slower_run_is_a_regression_and_trips_fail_on() {
    let a = synthetic("http://x/", 8, 500, 10.0, 0);
    let b = synthetic("http://x/", 8, 400, 30.0, 0);
    let rules = FailRule::parse_list("p95:+10%,rate:-5%,http_req_duration.p90:+500%").unwrap();
    let c = compare(("a", &a), ("b", &b), &CompareOptions::default(), &rules);
    let p95 = row(&c, "http_req_duration", Figure::P95);
    assert_eq!(p95.verdict, Verdict::Regression);
    assert!(p95.p_value.unwrap() < 0.01);
    assert!((p95.change.unwrap() - 2.0).abs() < 0.1);
    assert_eq!(
        row(&c, "http_reqs", Figure::Rate).verdict,
        Verdict::Regression
    );
    // p90 was added for the rule; +200% is under its +500% limit.
    assert_eq!(
        row(&c, "http_req_duration", Figure::P90).verdict,
        Verdict::Regression
    );
    let violated: Vec<_> = c.fail_on.iter().map(|f| f.violated).collect();
    assert_eq!(violated, [true, true, false]);
    assert!(c.failed);
    // Reversed, the same change is an improvement and fails nothing.
    let c = compare(("b", &b), ("a", &a), &CompareOptions::default(), &rules);
    assert_eq!(
        row(&c, "http_req_duration", Figure::P95).verdict,
        Verdict::Improvement
    );
    assert!(!c.failed);
}

#[test]
fn small_changes_are_within_noise_even_when_consistent() {
    let a = synthetic("http://x/", 8, 500, 10.0, 0);
    let b = synthetic("http://x/", 8, 500, 10.3, 0);
    let c = compare(("a", &a), ("b", &b), &CompareOptions::default(), &[]);
    let p50 = row(&c, "http_req_duration", Figure::P50);
    assert!(p50.p_value.unwrap() < 0.05, "the shift is consistent");
    assert_eq!(p50.verdict, Verdict::WithinNoise, "but only 3 %");
}

#[test]
fn error_rate_changes_in_points() {
    let a = synthetic("http://x/", 6, 500, 10.0, 0);
    let b = synthetic("http://x/", 6, 500, 10.0, 20);
    let rules = FailRule::parse_list("error_rate:+1%").unwrap();
    let c = compare(("a", &a), ("b", &b), &CompareOptions::default(), &rules);
    let e = row(&c, "http_req_failed", Figure::ErrorRate);
    assert!((e.change.unwrap() - 5.0).abs() < 0.1, "{:?}", e.change);
    assert!(e.change_text().starts_with("+4.9") && e.change_text().ends_with(" pp"));
    assert_eq!(e.verdict, Verdict::Regression);
    assert!(c.failed);
}

#[test]
fn short_runs_are_not_judged() {
    let a = synthetic("http://x/", 2, 500, 10.0, 0);
    let b = synthetic("http://x/", 2, 500, 50.0, 0);
    let c = compare(("a", &a), ("b", &b), &CompareOptions::default(), &[]);
    let r = row(&c, "http_req_duration", Figure::P95);
    assert_eq!(r.verdict, Verdict::WithinNoise);
    assert!(r.note.as_ref().unwrap().contains("too few"));
}

#[test]
fn fail_on_grammar() {
    let r = FailRule::parse("p95:+10%").unwrap();
    assert_eq!(
        (r.metric.as_str(), r.figure, r.limit),
        ("http_req_duration", Figure::P95, 0.1)
    );
    let r = FailRule::parse("rate:5%").unwrap();
    assert_eq!((r.metric.as_str(), r.limit), ("http_reqs", 0.05));
    let r = FailRule::parse("error_rate:+0.5%").unwrap();
    assert_eq!(r.limit, 0.5);
    let r = FailRule::parse("http_req_waiting.p99:+20%").unwrap();
    assert_eq!(r.metric, "http_req_waiting");
    assert!(FailRule::parse("rate:+5%")
        .unwrap_err()
        .contains("goes down"));
    assert!(FailRule::parse("p95:-5%").unwrap_err().contains("goes up"));
    assert!(FailRule::parse("p97:+5%")
        .unwrap_err()
        .contains("unknown figure"));
    assert!(FailRule::parse("p95:+5").unwrap_err().contains("% sign"));
    assert!(FailRule::parse("p95").is_err());
    assert!(FailRule::parse("p95:+x%").is_err());
    assert_eq!(FailRule::parse_list("p95:+10%, rate:-5%").unwrap().len(), 2);
}

#[test]
fn markdown_is_a_table_and_escapes_cells() {
    let a = synthetic("http://x/<b>|", 5, 100, 10.0, 0);
    let c = compare(("a|1", &a), ("b", &a), &CompareOptions::default(), &[]);
    let md = c.render_markdown();
    assert!(md.contains("a\\|1"));
    assert!(md.contains("&lt;b&gt;"));
    let rows: Vec<_> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert!(rows.len() >= 3);
    let cols = |l: &str| l.replace("\\|", "").matches('|').count();
    assert!(rows.iter().all(|l| cols(l) == 9));
    assert!(rows[1].starts_with("|---|"));
    let text = c.render_text(false);
    assert!(text.contains("within noise"));
    assert!(c.to_json()["rows"][0]["verdict"].is_string());
}
