//! `--out junit=FILE`: the run's verdicts as JUnit XML for CI dashboards, written at the end.
//!
//! One test suite `thresholds` with a test case per threshold expression (a failure when it
//! was crossed, with the observed value) and one suite `checks` with a test case per check
//! (per group; a failure when any run of the check failed, with the counts).

use std::collections::BTreeMap;
use volley_metrics::{RunResult, TotalValue};

/// XML text and attribute escaping.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            // Characters XML 1.0 cannot carry at all.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

struct Case {
    name: String,
    class: String,
    failure: Option<String>,
}

/// Checks summed over tag sets: (group, name) → (passes, total).
fn checks(r: &RunResult) -> BTreeMap<(String, String), (u64, u64)> {
    let mut m = BTreeMap::new();
    for t in r.metrics.iter().filter(|m| m.name == "checks") {
        if let TotalValue::Rate { trues, total } = &t.value {
            let group = t.tags.get("group").cloned().unwrap_or_default();
            let name = t.tags.get("check").cloned().unwrap_or_default();
            let e = m.entry((group, name)).or_insert((0, 0));
            e.0 += trues;
            e.1 += total;
        }
    }
    m
}

fn suite(out: &mut String, name: &str, cases: &[Case], secs: f64) {
    let failures = cases.iter().filter(|c| c.failure.is_some()).count();
    out.push_str(&format!(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{secs:.3}\">\n",
        escape(name),
        cases.len()
    ));
    for c in cases {
        let head = format!(
            "    <testcase name=\"{}\" classname=\"{}\"",
            escape(&c.name),
            escape(&c.class)
        );
        match &c.failure {
            None => out.push_str(&format!("{head}/>\n")),
            Some(msg) => out.push_str(&format!(
                "{head}>\n      <failure message=\"{m}\">{m}</failure>\n    </testcase>\n",
                m = escape(msg)
            )),
        }
    }
    out.push_str("  </testsuite>\n");
}

/// The whole document.
pub fn render(r: &RunResult) -> String {
    let ths: Vec<Case> = r
        .thresholds
        .iter()
        .map(|t| Case {
            name: format!("{}: {}", t.metric, t.expression),
            class: "volley.thresholds".into(),
            failure: (!t.ok).then(|| {
                let obs = t
                    .observed
                    .map_or_else(|| "no data".to_string(), |v| format!("observed {v}"));
                let abort = if t.aborted { "; aborted the test" } else { "" };
                format!(
                    "threshold crossed: {} {} ({obs}){abort}",
                    t.metric, t.expression
                )
            }),
        })
        .collect();
    let cks: Vec<Case> = checks(r)
        .into_iter()
        .map(|((group, name), (pass, total))| Case {
            name: if group.is_empty() {
                name.clone()
            } else {
                format!("{group}::{name}")
            },
            class: "volley.checks".into(),
            failure: (pass < total)
                .then(|| format!("{} of {total} failed ({pass} passed)", total - pass)),
        })
        .collect();
    let tests = ths.len() + cks.len();
    let failures = ths
        .iter()
        .chain(&cks)
        .filter(|c| c.failure.is_some())
        .count();
    let secs = r.meta.duration_s;
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" time=\"{secs:.3}\">\n",
        escape(&format!("volley {}", r.meta.name))
    ));
    suite(&mut out, "thresholds", &ths, secs);
    suite(&mut out, "checks", &cks, secs);
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_characters_are_escaped() {
        assert_eq!(
            escape("a<b & \"c\"\u{1}"),
            "a&lt;b &amp; &quot;c&quot;\u{fffd}"
        );
    }
}
