//! Unit tests of the A/B comparison on synthetic rounds.

use super::*;
use crate::view::tests::synthetic;

fn rounds(url: &str, rps: &[u64], lat_ms: f64) -> Vec<RunResult> {
    rps.iter()
        .map(|&n| synthetic(url, 6, n, lat_ms, 0))
        .collect()
}

fn row<'a>(r: &'a AbReport, metric: &str) -> &'a Row {
    r.rows.iter().find(|x| x.metric == metric).unwrap()
}

#[test]
fn a_slower_b_is_worse_on_rate_and_latency() {
    let a = rounds("http://a/", &[1000, 1000], 1.0);
    let b = rounds("http://b/", &[500, 500], 3.0);
    let r = AbReport::new(&a, &b);
    assert_eq!(
        (r.a_url.as_str(), r.b_url.as_str(), r.rounds),
        ("http://a/", "http://b/", 2)
    );
    let rps = row(&r, "requests/s");
    assert!((rps.ratio.unwrap() - 0.5).abs() < 0.02, "{rps:?}");
    assert_eq!(rps.verdict, "B worse");
    assert_eq!(row(&r, "p95 ms").verdict, "B worse");
    assert_eq!(row(&r, "avg ms").verdict, "B worse");
    assert_eq!(row(&r, "MiB/s received").verdict, "B worse");
    // Both sides answer everything: identical shares are no difference.
    let ok = row(&r, "success rate");
    assert_eq!(
        (ok.a, ok.b, ok.verdict.as_str()),
        (1.0, 1.0, "within noise")
    );
    let text = r.render_text();
    assert!(text.contains("B/A") && text.contains("B worse"), "{text}");
    assert!(text.contains("0.500"), "ratio column: {text}");
}

/// The former rule called any pair of non-overlapping round ranges a difference, so two
/// rounds 1 % apart were "B better" (a 1 in 3 chance under no difference at all with 2
/// rounds). The shared rule also wants the 5 % minimum effect.
#[test]
fn separated_rounds_a_percent_apart_are_within_noise() {
    let a = rounds("http://a/", &[1000, 1001], 1.0);
    let b = rounds("http://b/", &[1010, 1012], 1.0);
    let r = AbReport::new(&a, &b);
    let rps = row(&r, "requests/s");
    assert!(rps.b > rps.a && rps.ratio.unwrap() < 1.02, "{rps:?}");
    assert_eq!(rps.verdict, "within noise");
}

/// A round-to-round spread larger than the gap keeps it within noise, even when each
/// round's seconds are steady.
#[test]
fn round_to_round_spread_counts_as_noise() {
    let a = rounds("http://a/", &[1000, 1000, 1000], 1.0);
    let b = rounds("http://b/", &[700, 1100, 1500], 1.0);
    assert_eq!(
        row(&AbReport::new(&a, &b), "requests/s").verdict,
        "within noise"
    );
}

#[test]
fn one_round_has_no_verdict() {
    let a = rounds("http://a/", &[1000], 1.0);
    let b = rounds("http://b/", &[100], 9.0);
    let r = AbReport::new(&a, &b);
    assert!(
        r.rows.iter().all(|x| x.verdict == "n/a (1 round)"),
        "{:?}",
        r.rows
    );
    let j = r.to_json(
        vec![serde_json::json!({"rps": 1})],
        vec![serde_json::json!({})],
    );
    assert_eq!(j["a"]["url"], "http://a/");
    assert_eq!(j["a"]["rounds"][0]["rps"], 1);
    assert_eq!(j["rounds"], 1);
    assert_eq!(j["comparison"][0]["metric"], "requests/s");
    assert!(j["comparison"][0]["ratio"].as_f64().unwrap() < 0.2);
}
