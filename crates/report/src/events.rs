//! The report's view of a run's events (faults injected with `--fault`): marks on the charts
//! over time and a table of what happened when, with the connections each fault affected.

use crate::fmt::esc;
use crate::svg::Mark;
use crate::Labeled;
use std::fmt::Write as _;

/// Every run's events as chart marks (several runs: each label says which run).
pub fn marks(runs: &[Labeled]) -> Vec<Mark> {
    let many = runs.len() > 1;
    runs.iter()
        .flat_map(|r| {
            r.run.events.iter().map(move |e| Mark {
                from_s: e.at_s,
                to_s: e.end_s,
                label: if many {
                    format!("{}: {}", r.label, e.describe())
                } else {
                    e.describe()
                },
            })
        })
        .collect()
}

/// The "Faults" table, when any run has events.
pub fn section(o: &mut String, runs: &[Labeled]) {
    if runs.iter().all(|r| r.run.events.is_empty()) {
        return;
    }
    o.push_str("<h2>Faults</h2><div class=\"wrap\"><table><tr><th>run</th><th>fault</th><th>target</th><th class=\"n\">from</th><th class=\"n\">to</th><th class=\"n\">connections affected</th><th>error</th></tr>");
    for r in runs {
        for e in &r.run.events {
            let _ = write!(
                o,
                "<tr><td>{}</td><td class=\"code\">{}</td><td>{}</td><td class=\"n\">{:.1}s</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"bad\">{}</td></tr>",
                esc(&r.label),
                esc(if e.detail.is_empty() { &e.kind } else { &e.detail }),
                esc(&e.target),
                e.at_s,
                e.end_s.map_or(String::new(), |t| format!("{t:.1}s")),
                e.affected.map_or(String::new(), volley_metrics::fmt::count),
                esc(e.error.as_deref().unwrap_or("")),
            );
        }
    }
    o.push_str("</table></div>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_metrics::Event;

    #[test]
    fn faults_show_as_a_table_and_as_marks_on_the_charts() {
        let mut r = crate::view::tests::synthetic("t", 10, 100, 5.0, 0);
        r.events.push(Event {
            kind: "latency".into(),
            target: "api<1>".into(),
            at_s: 3.0,
            end_s: Some(6.0),
            detail: "latency=200ms".into(),
            affected: Some(1234),
            error: None,
        });
        let runs = [Labeled {
            label: "a".into(),
            run: &r,
            raw: None,
        }];
        let html = crate::render_report(&runs);
        assert!(html.contains("<h2>Faults</h2>"), "{html}");
        assert!(html.contains("api&lt;1&gt;") && html.contains("1,234"));
        assert!(
            html.contains("<rect class=\"mark\""),
            "no mark on the charts"
        );
        assert!(html.contains("latency=200ms on api&lt;1&gt; 3s–6s"));
    }
}
