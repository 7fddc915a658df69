//! `volley report`: one self-contained HTML page for one or more result files.
//!
//! Self-contained means: inline CSS, inline SVG charts, no JavaScript, no fonts, images or
//! styles from anywhere else — the page works from disk, offline, in a CI artifact. Every piece
//! of text that comes from a file (URLs, tag values, metric and check names, the command line)
//! goes through [`esc`]. Sections are drawn only when the files have the data for them.
//! Layout of the page: `docs/report.md`.

use crate::compare::{self, CompareOptions, Verdict};
use crate::fmt::esc;
use crate::svg::{self, Bars, Line, PALETTE};
use crate::view::{self, tags_label, Figure, Sel};
use crate::Labeled;
use std::fmt::Write as _;
use volley_metrics::agg::TrendAgg;
use volley_metrics::fmt::{bytes, bytes_tick, ms, ms_tick, num, short};
use volley_metrics::{Agg, MetricKind, RunResult, TagSet, TotalValue, Unit};

const CSS: &str = r#"
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#f6f8fa;--card:#fff;--bad:#c62828;--good:#2e7d32}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1200px;margin:0 auto;padding:24px 20px 48px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}
.sub{color:var(--muted);margin:0 0 16px;word-break:break-all}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(160px,1fr));gap:10px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 14px}
.card .k{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}.card .v{font-size:20px;font-weight:600}
table{border-collapse:collapse;background:var(--card);border:1px solid var(--line);border-radius:6px;width:100%;font-variant-numeric:tabular-nums}
th,td{padding:5px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:#eef1f4;font-weight:600;font-size:13px}
td.n,th.n{text-align:right;white-space:nowrap}
tr:last-child td{border-bottom:0}
.wrap{overflow-x:auto}
.code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;word-break:break-all}
.ok{color:var(--good);font-weight:600}.bad{color:var(--bad);font-weight:600}.muted{color:var(--muted)}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;vertical-align:baseline}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:14px}
figure.chart{margin:0;background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 12px 8px}
figure.chart figcaption{font-weight:600;margin-bottom:4px}
figure.chart svg{width:100%;height:auto;display:block}
svg .grid{stroke:#e5e9ee;stroke-width:1}svg .axis{stroke:#8c959f;stroke-width:1}
svg .tick{font-size:11px;fill:#59636e}svg .empty{font-size:14px;fill:#8c959f}
svg .pt{opacity:0}svg .pt:hover{opacity:1}
svg rect:hover{opacity:.75}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;color:var(--muted);margin-top:4px}
.legend span{display:inline-flex;align-items:center;gap:5px;white-space:nowrap}
details{margin-top:8px}summary{cursor:pointer;color:var(--muted)}
pre{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:10px;overflow-x:auto;font-size:12px}
footer{margin-top:36px;color:var(--muted);font-size:12px}
"#;

/// Render the page. The first file is the base of the comparison table.
pub fn render_report(runs: &[Labeled]) -> String {
    let mut o = String::with_capacity(64 * 1024);
    let title = match runs {
        [one] => format!("Volley report: {}", one.run.meta.name),
        _ => format!("Volley report: {} runs", runs.len()),
    };
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{}</title><style>{CSS}</style></head><body><main>",
        esc(&title)
    );
    let _ = write!(o, "<h1>{}</h1>", esc(&title));
    if let Some(first) = runs.first() {
        let m = &first.run.meta;
        let _ = write!(
            o,
            "<p class=\"sub\">{} · started {} · {:.1}s{}</p>",
            esc(&m.mode),
            esc(&m.started_at),
            m.duration_s,
            if m.interrupted { " · interrupted" } else { "" }
        );
    }
    if runs.len() == 1 {
        cards(&mut o, runs[0].run);
    }
    meta_table(&mut o, runs);
    if runs.len() > 1 {
        comparison(&mut o, runs);
    }
    thresholds(&mut o, runs);
    checks(&mut o, runs);
    crate::events::section(&mut o, runs);
    crate::capacity::section(&mut o, runs);
    charts(&mut o, runs);
    for (i, r) in runs.iter().enumerate() {
        metric_table(&mut o, r, i, runs.len());
    }
    let _ = writeln!(
        o,
        "<footer>Written by Volley {} from result files alone. Self-contained: no scripts, no network requests.</footer></main></body></html>",
        esc(runs.first().map_or("", |r| r.run.meta.volley_version.as_str()))
    );
    o
}

fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

fn swatch(i: usize) -> String {
    format!(
        "<span class=\"sw\" style=\"background:{}\"></span>",
        color(i)
    )
}

fn cards(o: &mut String, r: &RunResult) {
    let reqs = r.counter_sum(volley_metrics::names::HTTP_REQS);
    let all = |n: &str, f| view::total_figure(r, &Sel::all(n), f);
    let mut items: Vec<(&str, String)> = vec![("requests", num(reqs))];
    if let Some(v) = all(volley_metrics::names::HTTP_REQS, Figure::Rate) {
        items.push(("rate", format!("{}/s", num(v))));
    }
    if let Some(v) = all(volley_metrics::names::HTTP_REQ_FAILED, Figure::ErrorRate) {
        items.push(("error rate", format!("{v:.2}%")));
    }
    for (k, f) in [
        ("p50", Figure::P50),
        ("p95", Figure::P95),
        ("p99", Figure::P99),
    ] {
        if let Some(v) = all(volley_metrics::names::HTTP_REQ_DURATION, f) {
            items.push((k, ms(v)));
        }
    }
    let recv = r.counter_sum(volley_metrics::names::DATA_RECEIVED);
    if recv > 0.0 {
        items.push(("received", bytes(recv)));
    }
    o.push_str("<div class=\"cards\">");
    for (k, v) in items {
        let _ = write!(
            o,
            "<div class=\"card\"><div class=\"k\">{}</div><div class=\"v\">{}</div></div>",
            esc(k),
            esc(&v)
        );
    }
    o.push_str("</div>");
}

fn meta_table(o: &mut String, runs: &[Labeled]) {
    o.push_str("<h2>Run</h2><div class=\"wrap\"><table><tr><th></th>");
    for (i, r) in runs.iter().enumerate() {
        let _ = write!(o, "<th>{}{}</th>", swatch(i), esc(&r.label));
    }
    o.push_str("</tr>");
    type Field = fn(&RunResult) -> String;
    let fields: [(&str, Field); 11] = [
        ("test", |r| r.meta.name.clone()),
        ("mode", |r| r.meta.mode.clone()),
        ("started", |r| r.meta.started_at.clone()),
        ("ended", |r| r.meta.ended_at.clone()),
        ("duration", |r| format!("{:.2}s", r.meta.duration_s)),
        ("interrupted", |r| {
            if r.meta.interrupted { "yes" } else { "no" }.into()
        }),
        ("instances", |r| r.meta.instances.to_string()),
        ("host", |r| {
            let h = &r.meta.host;
            format!("{} ({}/{}, {} CPUs)", h.hostname, h.os, h.arch, h.cpus)
        }),
        ("volley", |r| r.meta.volley_version.clone()),
        ("peak RSS", |r| {
            r.meta
                .peak_rss_bytes
                .map_or("-".into(), |b| bytes(b as f64))
        }),
        ("command", |r| r.meta.command.join(" ")),
    ];
    for (k, f) in fields {
        let _ = write!(o, "<tr><th>{}</th>", esc(k));
        for r in runs {
            let class = if k == "command" {
                " class=\"code\""
            } else {
                ""
            };
            let _ = write!(o, "<td{class}>{}</td>", esc(&f(r.run)));
        }
        o.push_str("</tr>");
    }
    o.push_str("<tr><th>options</th>");
    for r in runs {
        let text = serde_json::to_string_pretty(&r.run.options).unwrap_or_default();
        let _ = write!(
            o,
            "<td><details><summary>show</summary><pre>{}</pre></details></td>",
            esc(&text)
        );
    }
    o.push_str("</tr></table></div>");
}

/// Key figures of every file against the first, with the comparison's verdicts.
fn comparison(o: &mut String, runs: &[Labeled]) {
    let base = &runs[0];
    let opts = CompareOptions::default();
    let cmps: Vec<_> = runs[1..]
        .iter()
        .map(|r| compare::compare((&base.label, base.run), (&r.label, r.run), &opts, &[]))
        .collect();
    o.push_str("<h2>Comparison</h2><div class=\"wrap\"><table><tr><th>metric</th><th>figure</th>");
    let _ = write!(
        o,
        "<th class=\"n\">{}{} (base)</th>",
        swatch(0),
        esc(&base.label)
    );
    for (i, r) in runs[1..].iter().enumerate() {
        let _ = write!(
            o,
            "<th class=\"n\">{}{}</th><th>change</th>",
            swatch(i + 1),
            esc(&r.label)
        );
    }
    o.push_str("</tr>");
    let Some(first) = cmps.first() else { return };
    for (k, row) in first.rows.iter().enumerate() {
        // Only the combined rows keep the table short; per-tag rows are in `volley compare`.
        if row.tags.is_some() {
            continue;
        }
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td>",
            esc(&row.label()),
            row.figure.name(),
            esc(&row.figure.format(row.unit, row.base))
        );
        for c in &cmps {
            let same = c
                .rows
                .get(k)
                .filter(|x| x.metric == row.metric && x.figure == row.figure);
            match same {
                Some(x) => {
                    let class = match x.verdict {
                        Verdict::Regression => "bad",
                        Verdict::Improvement => "ok",
                        Verdict::WithinNoise => "muted",
                    };
                    let verdict = if x.note.is_some() {
                        "(too few intervals to judge)"
                    } else {
                        x.verdict.label()
                    };
                    let _ = write!(
                        o,
                        "<td class=\"n\">{}</td><td><span class=\"{class}\">{} {}</span></td>",
                        esc(&x.figure.format(x.unit, x.new)),
                        esc(&x.change_text()),
                        verdict
                    );
                }
                None => o.push_str("<td class=\"n\">-</td><td></td>"),
            }
        }
        o.push_str("</tr>");
    }
    o.push_str("</table></div><p class=\"muted\">Verdicts as in <code>volley compare</code> (docs/compare.md): Mann-Whitney U test on per-second values, alpha 0.05; the change must also exceed the runs&#39; interval noise and 5 % (0.1 points for error rates).</p>");
}

/// Thresholds, when a file carries them (script mode). Read tolerantly from the raw JSON:
/// an array of `{metric, threshold|source, ok, value}` objects, or an object mapping metric
/// names to such arrays.
fn thresholds(o: &mut String, runs: &[Labeled]) {
    let mut rows = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let Some(t) = r.raw.and_then(|v| v.get("thresholds")) else {
            continue;
        };
        let mut push = |metric: &str, e: &serde_json::Value| {
            let s = |keys: &[&str]| {
                keys.iter()
                    .find_map(|k| e.get(*k))
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                    .unwrap_or_default()
            };
            let ok = ["ok", "passed", "pass"]
                .iter()
                .find_map(|k| e.get(*k).and_then(|v| v.as_bool()));
            let metric = if metric.is_empty() {
                s(&["metric", "name"])
            } else {
                metric.to_string()
            };
            let expr = if e.is_string() {
                e.as_str().unwrap_or("").to_string()
            } else {
                s(&["threshold", "source", "expression"])
            };
            rows.push((i, metric, expr, s(&["value", "observed"]), ok));
        };
        match t {
            serde_json::Value::Array(a) => a.iter().for_each(|e| push("", e)),
            serde_json::Value::Object(m) => {
                for (name, v) in m {
                    match v {
                        serde_json::Value::Array(a) => a.iter().for_each(|e| push(name, e)),
                        e => push(name, e),
                    }
                }
            }
            _ => {}
        }
    }
    if rows.is_empty() {
        return;
    }
    o.push_str("<h2>Thresholds</h2><div class=\"wrap\"><table><tr><th></th><th>run</th><th>metric</th><th>threshold</th><th class=\"n\">observed</th></tr>");
    for (i, metric, expr, value, ok) in rows {
        let mark = match ok {
            Some(true) => "<span class=\"ok\">✓</span>",
            Some(false) => "<span class=\"bad\">✗</span>",
            None => "<span class=\"muted\">?</span>",
        };
        let _ = write!(
            o,
            "<tr><td>{mark}</td><td>{}{}</td><td>{}</td><td class=\"code\">{}</td><td class=\"n\">{}</td></tr>",
            swatch(i),
            esc(&runs[i].label),
            esc(&metric),
            esc(&expr),
            esc(&value)
        );
    }
    o.push_str("</table></div>");
}

/// Checks: the `checks` rate metric, one tag set per check (tag `check`).
fn checks(o: &mut String, runs: &[Labeled]) {
    let mut rows = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        for m in r.run.metrics_named("checks") {
            if let TotalValue::Rate { trues, total } = m.value {
                let name = m
                    .tags
                    .get("check")
                    .cloned()
                    .unwrap_or_else(|| tags_label(&m.tags));
                let mut rest = m.tags.clone();
                rest.remove("check");
                rows.push((i, name, tags_label(&rest), trues, total));
            }
        }
    }
    if rows.is_empty() {
        return;
    }
    o.push_str("<h2>Checks</h2><div class=\"wrap\"><table><tr><th></th><th>run</th><th>check</th><th>tags</th><th class=\"n\">passes</th><th class=\"n\">fails</th><th class=\"n\">pass rate</th></tr>");
    for (i, name, tags, trues, total) in rows {
        let fails = total - trues;
        let mark = if fails == 0 {
            "<span class=\"ok\">✓</span>"
        } else {
            "<span class=\"bad\">✗</span>"
        };
        let rate = if total > 0 {
            trues as f64 / total as f64 * 100.0
        } else {
            0.0
        };
        let _ = write!(
            o,
            "<tr><td>{mark}</td><td>{}{}</td><td>{}</td><td class=\"muted\">{}</td><td class=\"n\">{trues}</td><td class=\"n\">{fails}</td><td class=\"n\">{rate:.2}%</td></tr>",
            swatch(i),
            esc(&runs[i].label),
            esc(&name),
            esc(&tags)
        );
    }
    o.push_str("</table></div>");
}

fn has(r: &RunResult, name: &str) -> bool {
    r.metrics.iter().any(|m| m.name == name)
}

/// One line per file of a figure over time (the usual multi-file overlay).
fn per_file(runs: &[Labeled], sel: &Sel, fig: Figure) -> Vec<Line> {
    runs.iter()
        .enumerate()
        .filter(|(_, r)| has(r.run, &sel.name))
        .map(|(i, r)| Line {
            label: r.label.clone(),
            color: color(i),
            dash: None,
            points: view::intervals(r.run, sel, fig, 0.2),
        })
        .collect()
}

fn charts(o: &mut String, runs: &[Labeled]) {
    let any = |n: &str| runs.iter().any(|r| has(r.run, n));
    let mut out: Vec<String> = Vec::new();
    let plain = |v: f64| short(v);
    let marks = crate::events::marks(runs);
    if any(volley_metrics::names::HTTP_REQS) {
        let lines = per_file(
            runs,
            &Sel::all(volley_metrics::names::HTTP_REQS),
            Figure::Rate,
        );
        out.push(svg::line_chart_marked(
            "Request rate (requests/s)",
            &lines,
            false,
            &plain,
            &|v| format!("{}/s", num(v)),
            &marks,
        ));
    }
    if any(volley_metrics::names::HTTP_REQ_FAILED) {
        let lines = per_file(
            runs,
            &Sel::all(volley_metrics::names::HTTP_REQ_FAILED),
            Figure::ErrorRate,
        );
        out.push(svg::line_chart_marked(
            "Error rate (% of requests)",
            &lines,
            false,
            &|v| format!("{}%", short(v)),
            &|v| format!("{v:.2}%"),
            &marks,
        ));
    }
    for (metric, title) in [
        (
            volley_metrics::names::HTTP_REQ_DURATION,
            "Latency (http_req_duration)",
        ),
        (
            "http_req_corrected",
            "Latency from intended start (coordinated omission corrected)",
        ),
    ] {
        if !any(metric) {
            continue;
        }
        let sel = Sel::all(metric);
        let mut lines = Vec::new();
        let single = runs.len() == 1;
        for (i, r) in runs.iter().enumerate() {
            for (k, (fig, dash)) in [
                (Figure::P50, None),
                (Figure::P95, Some("6 3")),
                (Figure::P99, Some("2 3")),
            ]
            .into_iter()
            .enumerate()
            {
                lines.push(Line {
                    label: if single {
                        fig.name().to_string()
                    } else {
                        format!("{} {}", r.label, fig.name())
                    },
                    color: if single { color(k) } else { color(i) },
                    dash: if single { None } else { dash },
                    points: view::intervals(r.run, &sel, fig, 0.2),
                });
            }
        }
        out.push(svg::line_chart(
            title,
            &lines,
            false,
            &|v| ms_tick(v),
            &|v| ms(v),
        ));
    }
    if any(volley_metrics::names::DATA_RECEIVED) || any(volley_metrics::names::DATA_SENT) {
        let mut lines = Vec::new();
        for (i, r) in runs.iter().enumerate() {
            for (k, (name, what, dash)) in [
                (volley_metrics::names::DATA_RECEIVED, "received", None),
                (volley_metrics::names::DATA_SENT, "sent", Some("6 3")),
            ]
            .into_iter()
            .enumerate()
            {
                if !has(r.run, name) {
                    continue;
                }
                let single = runs.len() == 1;
                lines.push(Line {
                    label: if single {
                        what.to_string()
                    } else {
                        format!("{} {what}", r.label)
                    },
                    color: if single { color(k) } else { color(i) },
                    dash: if single { None } else { dash },
                    points: view::intervals(r.run, &Sel::all(name), Figure::Rate, 0.2),
                });
            }
        }
        out.push(svg::line_chart(
            "Throughput (bytes/s)",
            &lines,
            true,
            &|v| bytes_tick(v),
            &|v| format!("{}/s", bytes(v)),
        ));
    }
    if any("vus") {
        let lines = per_file(runs, &Sel::all("vus"), Figure::Last);
        out.push(svg::line_chart("Active VUs", &lines, false, &plain, &|v| {
            num(v)
        }));
    }
    // Monitor series of the target: one chart per metric, a line per file and tag set.
    let mut monitor: Vec<(String, MetricKind, Unit)> = Vec::new();
    for r in runs {
        for m in r
            .run
            .metrics
            .iter()
            .filter(|m| m.name.starts_with("monitor_"))
        {
            if !monitor.iter().any(|x| x.0 == m.name) {
                monitor.push((m.name.clone(), m.kind(), m.unit));
            }
        }
    }
    for (name, kind, unit) in monitor {
        let fig = match kind {
            MetricKind::Gauge => Figure::Last,
            MetricKind::Counter => Figure::Rate,
            MetricKind::Trend => Figure::P50,
            MetricKind::Rate => Figure::ErrorRate,
        };
        let mut lines = Vec::new();
        for (i, r) in runs.iter().enumerate() {
            let tagsets: Vec<TagSet> = r.run.metrics_named(&name).map(|m| m.tags.clone()).collect();
            for (k, t) in tagsets.iter().enumerate() {
                let mut label = if runs.len() > 1 {
                    r.label.clone()
                } else {
                    String::new()
                };
                if !t.is_empty() {
                    label = format!("{label} {}", tags_label(t)).trim().to_string();
                }
                if label.is_empty() {
                    label = name.clone();
                }
                lines.push(Line {
                    label,
                    color: if runs.len() > 1 { color(i) } else { color(k) },
                    dash: None,
                    points: view::intervals(r.run, &Sel::exact(&name, t), fig, 0.2),
                });
            }
        }
        let suffix = if fig == Figure::Rate { "/s" } else { "" };
        let tick = move |v: f64| match unit {
            Unit::Data => bytes_tick(v),
            Unit::Time => ms_tick(v),
            Unit::Default => short(v),
        };
        let title = format!("Target: {name} ({}{suffix})", fig.name());
        out.push(svg::line_chart(
            &title,
            &lines,
            unit == Unit::Data,
            &tick,
            &move |v| format!("{}{suffix}", fig.format(unit, v)),
        ));
    }
    if let Some(h) = histogram(runs) {
        out.push(h);
    }
    if out.is_empty() {
        return;
    }
    o.push_str("<h2>Over time</h2><div class=\"charts\">");
    for c in out {
        o.push_str(&c);
    }
    o.push_str("</div>");
}

fn latency_trend(r: &RunResult) -> Option<TrendAgg> {
    match view::total(r, &Sel::all(volley_metrics::names::HTTP_REQ_DURATION))? {
        (Agg::Trend(t), _) if t.count > 0 => Some(*t),
        _ => None,
    }
}

/// The latency distribution from each file's HDR histogram: share of requests per bucket,
/// log-spaced buckets when the range spans a decade or more.
fn histogram(runs: &[Labeled]) -> Option<String> {
    let trends: Vec<(usize, TrendAgg)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| latency_trend(r.run).map(|t| (i, t)))
        .collect();
    if trends.is_empty() {
        return None;
    }
    let lo = trends
        .iter()
        .map(|t| t.1.min)
        .fold(f64::INFINITY, f64::min)
        .max(0.001);
    let hi = trends
        .iter()
        .map(|t| t.1.max)
        .fold(0.0, f64::max)
        .max(lo * 1.001);
    let (bounds, log) = volley_metrics::agg::display_bounds(lo, hi, 24);
    let groups = trends
        .iter()
        .map(|(i, t)| {
            let counts = t.bucket_counts(&bounds);
            let total = t.count.max(1) as f64;
            Bars {
                label: runs[*i].label.clone(),
                color: color(*i),
                values: counts.iter().map(|c| *c as f64 / total * 100.0).collect(),
            }
        })
        .collect::<Vec<_>>();
    let labels: Vec<String> = bounds.iter().map(|b| ms(*b)).collect();
    let title = format!(
        "Latency histogram (http_req_duration, % of requests{})",
        if log { ", log-spaced buckets" } else { "" }
    );
    Some(svg::bar_chart(&title, &labels, &groups, &|v| {
        format!("{}%", short(v))
    }))
}

fn metric_table(o: &mut String, r: &Labeled, i: usize, n: usize) {
    let run = r.run;
    if n == 1 {
        o.push_str("<h2>Metrics</h2>");
    } else {
        let _ = write!(o, "<h2>{}Metrics: {}</h2>", swatch(i), esc(&r.label));
    }
    o.push_str("<div class=\"wrap\"><table><tr><th>metric</th><th>kind</th><th class=\"n\">count</th><th class=\"n\">avg</th><th class=\"n\">p50</th><th class=\"n\">p90</th><th class=\"n\">p95</th><th class=\"n\">p99</th><th class=\"n\">max</th><th class=\"n\">rate</th></tr>");
    let d = run.meta.duration_s;
    for m in &run.metrics {
        let label = Sel::exact(&m.name, &m.tags).label();
        let v = |x: f64| match m.unit {
            Unit::Time => ms(x),
            Unit::Data => bytes(x),
            Unit::Default => num(x),
        };
        let mut c: [String; 8] = Default::default();
        match m.to_agg() {
            Ok(Agg::Counter { sum, .. }) => {
                c[0] = v(sum);
                if d > 0.0 {
                    c[7] = format!("{}/s", v(sum / d));
                }
            }
            Ok(Agg::Gauge { last, min, max, n }) if n > 0 => {
                c[0] = n.to_string();
                c[1] = format!("last {}", v(last));
                c[2] = format!("min {}", v(min));
                c[6] = v(max);
            }
            Ok(Agg::Rate { trues, total }) => {
                c[0] = format!("{trues} / {total}");
                if total > 0 {
                    c[7] = format!("{:.2}%", trues as f64 / total as f64 * 100.0);
                }
            }
            Ok(Agg::Trend(t)) if t.count > 0 => {
                c[0] = t.count.to_string();
                c[1] = v(t.mean());
                c[2] = v(t.percentile(50.0));
                c[3] = v(t.percentile(90.0));
                c[4] = v(t.percentile(95.0));
                c[5] = v(t.percentile(99.0));
                c[6] = v(t.max);
            }
            Ok(_) => {}
            Err(e) => c[0] = format!("unreadable: {e}"),
        }
        let kind = format!("{:?}", m.kind()).to_lowercase();
        let _ = write!(
            o,
            "<tr><td class=\"code\">{}</td><td>{kind}</td>",
            esc(&label)
        );
        for x in c {
            let _ = write!(o, "<td class=\"n\">{}</td>", esc(&x));
        }
        o.push_str("</tr>");
    }
    o.push_str("</table></div>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::tests::synthetic;

    fn labeled(r: &RunResult) -> Labeled<'_> {
        Labeled {
            label: "run.json".into(),
            run: r,
            raw: None,
        }
    }

    #[test]
    fn single_run_has_every_section_and_no_external_reference() {
        let r = synthetic(
            "http://127.0.0.1/<script>alert(1)</script>",
            5,
            200,
            5.0,
            50,
        );
        let html = render_report(&[labeled(&r)]);
        assert!(html.starts_with("<!DOCTYPE html>"));
        for s in [
            "Request rate",
            "Error rate",
            "Latency (http_req_duration)",
            "Throughput",
            "Active VUs",
            "Latency histogram",
            "<h2>Metrics</h2>",
        ] {
            assert!(html.contains(s), "missing {s}");
        }
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!html.contains("<script"));
        // The only http:// text is the run's own (escaped) URL.
        assert_eq!(
            html.matches("http://").count(),
            html.matches("http://127.0.0.1/&lt;script").count()
        );
        assert!(!html.contains("https://"));
        assert!(!html.contains("Checks"), "no checks in this file");
    }

    #[test]
    fn several_runs_overlay_and_compare() {
        let a = synthetic("http://x/", 6, 300, 5.0, 0);
        let b = synthetic("http://x/", 6, 200, 15.0, 0);
        let runs = [
            Labeled {
                label: "base.json".into(),
                run: &a,
                raw: None,
            },
            Labeled {
                label: "new.json".into(),
                run: &b,
                raw: None,
            },
        ];
        let html = render_report(&runs);
        assert!(html.contains("<h2>Comparison</h2>"));
        assert!(html.contains("regression"));
        assert!(html.contains(PALETTE[0]) && html.contains(PALETTE[1]));
        assert!(html.contains("Metrics: new.json"));
    }

    #[test]
    fn checks_thresholds_and_monitor_series_render_when_present() {
        let mut r = synthetic("http://x/", 4, 100, 5.0, 0);
        let tags: TagSet = [("check".to_string(), "status is <200>".to_string())].into();
        r.metrics.push(volley_metrics::MetricTotal {
            name: "checks".into(),
            tags,
            unit: Unit::Default,
            value: TotalValue::Rate {
                trues: 9,
                total: 10,
            },
        });
        let mut mon = r.metrics.iter().find(|m| m.name == "vus").unwrap().clone();
        mon.name = "monitor_rss".into();
        mon.unit = Unit::Data;
        r.metrics.push(mon);
        let raw = serde_json::json!({"thresholds": {"http_req_duration": [{"source": "p(95)<200", "ok": true, "value": 5.1}]}});
        let html = render_report(&[Labeled {
            label: "r".into(),
            run: &r,
            raw: Some(&raw),
        }]);
        assert!(html.contains("<h2>Checks</h2>") && html.contains("status is &lt;200&gt;"));
        assert!(html.contains("<h2>Thresholds</h2>") && html.contains("p(95)&lt;200"));
        assert!(html.contains("Target: monitor_rss"));
    }
}
