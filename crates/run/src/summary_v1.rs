//! k6 v1's end-of-test summary: `--summary-mode compact` (the default) and `full`.
//!
//! The layout follows k6 v1.8's `summary.js` line by line: a THRESHOLDS section, TOTAL
//! RESULTS (checks_total/succeeded/failed, the checks in first-seen order, then the metrics
//! in CUSTOM / HTTP / EXECUTION / NETWORK / ... blocks), and in `full` mode one section per
//! group (of the default scenario) and per named scenario, with nested groups under `↳`.
//! Column widths are computed per block of lines, as k6 does (its global width computation
//! ends up unused), and trend columns keep their padding (k6's lines end with spaces).

use crate::summary::Summary;
use std::collections::BTreeMap;
use volley_metrics::fmt::k6::{humanize, num, pct};
use volley_metrics::text::escape_control as esc;
use volley_metrics::{Agg, TagSet, Unit};

/// Which end-of-test summary to print (`--summary-mode`, `K6_SUMMARY_MODE`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SummaryMode {
    /// k6 v1's default: thresholds and total results.
    #[default]
    Compact,
    /// `compact` plus every HTTP timing, and a section per group and per scenario.
    Full,
    /// The pre-1.0 layout (k6 0.x).
    Legacy,
}

impl SummaryMode {
    pub fn parse(s: &str) -> Option<SummaryMode> {
        match s {
            "compact" => Some(SummaryMode::Compact),
            "full" => Some(SummaryMode::Full),
            "legacy" => Some(SummaryMode::Legacy),
            _ => None,
        }
    }
}

/// One metric line's values, formatted.
pub(crate) enum Cells {
    Trend(Vec<String>),
    Other(String, Vec<String>),
}

/// Column widths of one block of metric lines (k6's `computeSummaryInfo`).
#[derive(Default)]
struct Widths {
    name: usize,
    trend: Vec<usize>,
    value: usize,
    extras: Vec<usize>,
}

/// A metric as shown: key (`name` or `name{tags}`), unit, totals.
type Shown = (String, Unit, Agg);

/// The metrics and checks of one section (total, group or scenario).
#[derive(Default)]
struct Node {
    metrics: BTreeMap<String, (Unit, Agg)>,
    /// check name → (passes, fails); None when no check ran here.
    checks: Option<BTreeMap<String, (u64, u64)>>,
    /// Path of this node's group (`::a::b`), "" for a scenario or the root.
    path: String,
    children: Vec<(String, Node)>,
}

const W: fn(&str) -> usize = |s| s.chars().count();

fn indent(level: usize) -> String {
    " ".repeat(level * 2)
}

/// k6's section blocks in order (custom first); `None`: not shown in this mode.
fn category(name: &str, full: bool) -> Option<usize> {
    let any = |ps: &[&str]| ps.iter().any(|p| name.starts_with(p));
    if any(&["checks", volley_metrics::names::GROUP_DURATION]) {
        return None;
    }
    let timings = [
        volley_metrics::names::HTTP_REQ_BLOCKED,
        volley_metrics::names::HTTP_REQ_CONNECTING,
        volley_metrics::names::HTTP_REQ_RECEIVING,
        volley_metrics::names::HTTP_REQ_SENDING,
        volley_metrics::names::HTTP_REQ_TLS_HANDSHAKING,
        volley_metrics::names::HTTP_REQ_WAITING,
    ];
    if !full && any(&timings) {
        return None;
    }
    Some(
        if any(&timings)
            || any(&[
                volley_metrics::names::HTTP_REQS,
                volley_metrics::names::HTTP_REQ_FAILED,
                volley_metrics::names::HTTP_REQ_DURATION,
            ])
        {
            1
        } else if any(&[
            "vus",
            "vus_max",
            "iterations",
            volley_metrics::names::ITERATION_DURATION,
            volley_metrics::names::DROPPED_ITERATIONS,
        ]) {
            2
        } else if any(&[
            volley_metrics::names::DATA_SENT,
            volley_metrics::names::DATA_RECEIVED,
        ]) {
            3
        } else if name.starts_with("browser_web_vital_") {
            5
        } else if name.starts_with("browser_") {
            4
        } else if name.starts_with("grpc_") {
            6
        } else if name.starts_with("ws_") {
            7
        } else {
            0
        },
    )
}

const CATEGORIES: [&str; 8] = [
    "CUSTOM",
    "HTTP",
    "EXECUTION",
    "NETWORK",
    "BROWSER",
    "WEB_VITALS",
    "GRPC",
    "WEBSOCKET",
];

/// k6's metric order: by parent name, then sub-metric.
fn sort_by_name(keys: &mut [String]) {
    let split = |k: &str| -> (String, String) {
        let i = k.find('{').unwrap_or(k.len());
        (k[..i].to_string(), k[i..].to_string())
    };
    keys.sort_by_key(|k| split(k));
}

fn display_name(key: &str) -> String {
    match key.find('{') {
        Some(i) => format!("  {{ {} }}", esc(&key[i + 1..key.len() - 1])),
        None => esc(key).into_owned(),
    }
}

impl Summary {
    /// The end-of-test text in `mode`'s layout.
    pub fn render(&self, mode: SummaryMode) -> String {
        match mode {
            SummaryMode::Legacy => self.render_text(),
            SummaryMode::Compact => self.render_v1(false),
            SummaryMode::Full => self.render_v1(true),
        }
    }

    /// The summary in k6 v1's layout (`full`: with group and scenario sections).
    pub fn render_v1(&self, full: bool) -> String {
        let mut items: Vec<String> = Vec::new();
        let mut section = |title: &str, content: Vec<String>| {
            items.push(format!("{}█ {title} \n", indent(1)));
            items.extend(content);
            items.push("\n".into());
        };
        let th = self.thresholds_block();
        if !th.is_empty() {
            section("THRESHOLDS", th);
        }
        let total = self.total_node(full);
        let mut content = self.checks_block(&total, 0);
        content.extend(self.metrics_block(&total.metrics, 0, full));
        section("TOTAL RESULTS", content);
        if full {
            let root = self.group_tree(|t| {
                t.get("scenario")
                    .is_none_or(|s| s.is_empty() || s == "default")
            });
            for (name, g) in &root.children {
                section(&format!("GROUP: {}", esc(name)), self.group_content(g, 0));
            }
            let mut names: Vec<&str> = self
                .series
                .iter()
                .filter_map(|(_, t, _, _)| t.get("scenario").map(String::as_str))
                .filter(|s| !s.is_empty() && *s != "default")
                .collect();
            names.sort_unstable();
            names.dedup();
            for sc in names {
                let in_sc = |t: &TagSet| t.get("scenario").map(String::as_str) == Some(sc);
                let mut node = self.node(|t| in_sc(t), "", None);
                node.children = self.group_tree(in_sc).children;
                section(
                    &format!("SCENARIO: {}", esc(sc)),
                    self.group_content(&node, 0),
                );
            }
        }
        // k6's `build()`: a bare newline item ends the text so far, any other starts a line.
        let mut out = String::from("\n");
        for it in items {
            if it != "\n" {
                out.push('\n');
            }
            out.push_str(&it);
        }
        out.push_str(&volley_monitor::summary::render_text(&self.targets, "", ""));
        out.push_str("\n\n");
        out
    }

    /// TOTAL RESULTS' metrics: every metric and sub-metric of the run.
    fn total_node(&self, _full: bool) -> Node {
        let metrics = self
            .metrics
            .iter()
            .map(|(k, m)| (k.clone(), (m.unit, m.agg.clone())))
            .collect();
        let checks = self.metrics.contains_key("checks").then(|| {
            let mut by_name: BTreeMap<String, (u64, u64)> = BTreeMap::new();
            for cs in self.checks.values() {
                for (n, (p, f)) in cs {
                    let e = by_name.entry(n.clone()).or_default();
                    e.0 += p;
                    e.1 += f;
                }
            }
            by_name
        });
        Node {
            metrics,
            checks,
            ..Default::default()
        }
    }

    /// Merge the series `keep` selects (optionally only those of group `group`).
    fn node(&self, keep: impl Fn(&TagSet) -> bool, path: &str, group: Option<&str>) -> Node {
        let mut node = Node {
            path: path.to_string(),
            ..Default::default()
        };
        for (name, tags, unit, agg) in &self.series {
            if !keep(tags) {
                continue;
            }
            if let Some(g) = group {
                // k6 sends the bytes on the wire per iteration, outside any group.
                let wire = name == volley_metrics::names::DATA_SENT
                    || name == volley_metrics::names::DATA_RECEIVED;
                if wire || tags.get("group").map(String::as_str).unwrap_or("") != g {
                    continue;
                }
            }
            if name == "checks" {
                if let Agg::Rate { trues, total } = agg {
                    let c = tags.get("check").cloned().unwrap_or_default();
                    let e = node
                        .checks
                        .get_or_insert_with(BTreeMap::new)
                        .entry(c)
                        .or_default();
                    e.0 += trues;
                    e.1 += total - trues;
                }
            }
            match node.metrics.get_mut(name) {
                Some((_, a)) => a.merge(agg),
                None => {
                    node.metrics.insert(name.clone(), (*unit, agg.clone()));
                }
            }
        }
        node
    }

    /// The groups of the series `keep` selects, nested, each with its own series only.
    fn group_tree(&self, keep: impl Fn(&TagSet) -> bool + Copy) -> Node {
        let mut paths: Vec<String> = Vec::new();
        for (_, tags, _, _) in &self.series {
            let Some(g) = tags.get("group").filter(|g| !g.is_empty()) else {
                continue;
            };
            let norm = g.strip_prefix("::").unwrap_or(g);
            if !keep(tags) || norm == "setup" || norm == "teardown" {
                continue;
            }
            // Parents exist even without series of their own.
            let mut p = g.as_str();
            while !p.is_empty() {
                paths.push(p.to_string());
                p = p.rfind("::").map_or("", |i| &p[..i]);
            }
        }
        paths.sort();
        paths.dedup();
        self.build_tree("", &paths, keep)
    }

    fn build_tree(
        &self,
        path: &str,
        paths: &[String],
        keep: impl Fn(&TagSet) -> bool + Copy,
    ) -> Node {
        let mut node = self.node(keep, path, Some(path));
        let mut kids: Vec<&String> = paths
            .iter()
            .filter(|p| {
                p.strip_prefix(path)
                    .and_then(|r| r.strip_prefix("::"))
                    .is_some_and(|r| !r.contains("::"))
            })
            .collect();
        // First-seen order (by their first check), then by name.
        kids.sort_by_key(|p| (self.first_seen_group(p), (*p).clone()));
        for k in kids {
            let name = k[path.len() + 2..].to_string();
            node.children.push((name, self.build_tree(k, paths, keep)));
        }
        node
    }

    /// k6's `_renderGroupContent`: checks, metrics, nested groups.
    fn group_content(&self, node: &Node, ctx: usize) -> Vec<String> {
        let mut out = self.checks_block(node, ctx);
        out.extend(self.metrics_block(&node.metrics, ctx, true));
        for (name, child) in &node.children {
            out.push(format!("{}↳ GROUP: {} \n", indent(ctx + 2), esc(name)));
            out.extend(self.group_content(child, ctx + 1));
        }
        out
    }

    /// Checks of a node in first-seen order (the ones the order misses after, by name).
    fn ordered_checks(&self, node: &Node) -> Vec<(String, u64, u64)> {
        let Some(cs) = &node.checks else {
            return Vec::new();
        };
        let mut names: Vec<&String> = Vec::new();
        for (g, n) in &self.check_order {
            let here = node.path.is_empty() || *g == node.path;
            if here && cs.contains_key(n) && !names.contains(&n) {
                names.push(n);
            }
        }
        let rest: Vec<&String> = cs.keys().filter(|n| !names.contains(n)).collect();
        names.extend(rest);
        names
            .into_iter()
            .map(|n| (n.clone(), cs[n].0, cs[n].1))
            .collect()
    }

    /// checks_total/succeeded/failed, then one line per check (k6's `renderChecks`).
    fn checks_block(&self, node: &Node, ctx: usize) -> Vec<String> {
        let Some(cs) = &node.checks else {
            return Vec::new();
        };
        let ctx = ctx + 1;
        let (passes, fails) = cs.values().fold((0, 0), |a, c| (a.0 + c.0, a.1 + c.1));
        let total = passes + fails;
        let metrics: Vec<Shown> = vec![
            (
                "checks_total".into(),
                Unit::Default,
                Agg::Counter {
                    sum: total as f64,
                    n: total,
                },
            ),
            (
                "checks_succeeded".into(),
                Unit::Default,
                Agg::Rate {
                    trues: passes,
                    total,
                },
            ),
            (
                "checks_failed".into(),
                Unit::Default,
                Agg::Rate {
                    trues: fails,
                    total,
                },
            ),
        ];
        let mut out = self.metric_lines(&metrics, ctx);
        out.push("\n".into());
        for (name, p, f) in self.ordered_checks(node) {
            let name = esc(&name);
            if f == 0 {
                out.push(format!("{}✓ {name}", indent(ctx + 1)));
            } else {
                let succ = (100 * p) / (p + f);
                out.push(format!(
                    "{}✗ {name}\n{}↳  {succ}% — ✓ {p} / ✗ {f}",
                    indent(ctx + 1),
                    indent(2 * ctx + 1)
                ));
            }
        }
        out.push("\n".into());
        out
    }

    /// The metric blocks (CUSTOM first), each titled, with widths shared by all of them.
    fn metrics_block(
        &self,
        metrics: &BTreeMap<String, (Unit, Agg)>,
        ctx: usize,
        full: bool,
    ) -> Vec<String> {
        let ctx = ctx + 1;
        let mut cats: Vec<Vec<String>> = vec![Vec::new(); CATEGORIES.len()];
        for k in metrics.keys() {
            if let Some(c) = category(k, full) {
                cats[c].push(k.clone());
            }
        }
        let all: Vec<Shown> = cats
            .iter()
            .flatten()
            .map(|k| (k.clone(), metrics[k].0, metrics[k].1.clone()))
            .collect();
        let w = self.widths(&all, ctx);
        let mut out = Vec::new();
        for (i, keys) in cats.iter_mut().enumerate() {
            if keys.is_empty() {
                continue;
            }
            sort_by_name(keys);
            out.push(format!("{}{}", indent(ctx + 1), CATEGORIES[i]));
            for k in keys.iter() {
                let (unit, agg) = &metrics[k];
                out.push(self.metric_line(k, &self.cells(*unit, agg), &w, ctx));
            }
            out.push("\n".into());
        }
        out
    }

    fn cells(&self, unit: Unit, agg: &Agg) -> Cells {
        self.value_cells(unit, agg, |trues, total| {
            vec![format!("{trues} out of {total}")]
        })
    }

    /// A metric's formatted values (trend stats, or a value and its extras), for both the
    /// v1 and the legacy layout; `rate` gives a rate's extras (the layouts differ there).
    pub(crate) fn value_cells(
        &self,
        unit: Unit,
        agg: &Agg,
        rate: impl Fn(u64, u64) -> Vec<String>,
    ) -> Cells {
        let tu = self.options.time_unit.as_str();
        let fmt = |v: f64| humanize(v, unit, tu);
        match agg {
            Agg::Trend(t) => Cells::Trend(
                self.options
                    .trend_stats
                    .iter()
                    .map(|s| {
                        let v = Self::trend_value(t, s);
                        if s == "count" {
                            num(v)
                        } else {
                            fmt(v)
                        }
                    })
                    .collect(),
            ),
            Agg::Counter { sum, .. } => {
                Cells::Other(fmt(*sum), vec![format!("{}/s", fmt(self.rate_of(*sum)))])
            }
            Agg::Rate { trues, total } => Cells::Other(pct(*trues, *total), rate(*trues, *total)),
            Agg::Gauge { last, min, max, n } => {
                let (l, mi, ma) = if *n == 0 {
                    (0.0, 0.0, 0.0)
                } else {
                    (*last, *min, *max)
                };
                Cells::Other(
                    fmt(l),
                    vec![format!("min={}", fmt(mi)), format!("max={}", fmt(ma))],
                )
            }
        }
    }

    fn widths(&self, metrics: &[Shown], ctx: usize) -> Widths {
        let mut w = Widths {
            trend: vec![0; self.options.trend_stats.len()],
            ..Default::default()
        };
        for (k, unit, agg) in metrics {
            w.name = w.name.max(W(&indent(ctx + 1)) + W(&display_name(k)));
            match self.cells(*unit, agg) {
                Cells::Trend(cols) => {
                    for (i, c) in cols.iter().enumerate() {
                        w.trend[i] = w.trend[i].max(W(c));
                    }
                }
                Cells::Other(v, ex) => {
                    w.value = w.value.max(W(&v));
                    for (i, e) in ex.iter().enumerate() {
                        if w.extras.len() <= i {
                            w.extras.push(0);
                        }
                        w.extras[i] = w.extras[i].max(W(e));
                    }
                }
            }
        }
        w
    }

    /// Lines of a block sized on its own (the checks' three metrics).
    fn metric_lines(&self, metrics: &[Shown], ctx: usize) -> Vec<String> {
        let w = self.widths(metrics, ctx);
        metrics
            .iter()
            .map(|(k, unit, agg)| self.metric_line(k, &self.cells(*unit, agg), &w, ctx))
            .collect()
    }

    /// k6's `renderMetricLine`: name, dots to the block's width (at least 3), `:`, values.
    fn metric_line(&self, key: &str, cells: &Cells, w: &Widths, ctx: usize) -> String {
        let ind = indent(ctx + 1);
        let name = display_name(key);
        let dots = (w.name + 3).saturating_sub(W(&name) + W(&ind)).max(3);
        let data = match cells {
            Cells::Trend(cols) => self
                .options
                .trend_stats
                .iter()
                .zip(cols)
                .enumerate()
                .map(|(i, (s, c))| format!("{s}={c}{}", " ".repeat(w.trend[i] - W(c))))
                .collect::<Vec<_>>()
                .join(" "),
            Cells::Other(v, ex) => {
                let mut s = format!("{v}{}", " ".repeat(w.value - W(v)));
                if ex.len() == 1 {
                    s.push(' ');
                    s.push_str(&ex[0]);
                } else if ex.len() > 1 {
                    let parts: Vec<String> = ex
                        .iter()
                        .enumerate()
                        .map(|(i, e)| format!("{e}{}", " ".repeat(w.extras[i] - W(e))))
                        .collect();
                    s.push(' ');
                    s.push_str(&parts.join(" "));
                }
                s
            }
        };
        format!("{ind}{name}{}: {data}", ".".repeat(dots))
    }

    /// THRESHOLDS: each metric with thresholds, then `✓ 'expr' agg=value` per expression.
    fn thresholds_block(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .metrics
            .iter()
            .filter(|(_, m)| !m.thresholds.is_empty())
            .map(|(k, _)| k.clone())
            .collect();
        sort_by_name(&mut keys);
        let mut out = Vec::new();
        for k in &keys {
            let m = &self.metrics[k];
            let parent = &k[..k.find('{').unwrap_or(k.len())];
            let nested = parent.len() < k.len() && keys.iter().any(|x| x == parent);
            let ind = indent(if nested { 3 } else { 2 });
            let shown = if nested { &k[parent.len()..] } else { k };
            out.push(format!("{ind}{}", esc(shown)));
            let cells = self.cells(m.unit, &m.agg);
            for (expr, ok) in &m.thresholds {
                let agg = expr.split(['=', '>', '<']).next().unwrap_or("").trim();
                let value = match (&m.agg, &cells) {
                    (Agg::Trend(t), Cells::Trend(cols)) => {
                        match self.options.trend_stats.iter().position(|s| s == agg) {
                            Some(i) => cols[i].clone(),
                            None if agg == "count" => num(Self::trend_value(t, agg)),
                            None => {
                                humanize(Self::trend_value(t, agg), m.unit, &self.options.time_unit)
                            }
                        }
                    }
                    (Agg::Counter { .. }, Cells::Other(v, ex)) if agg != "count" => {
                        ex.first().cloned().unwrap_or_else(|| v.clone())
                    }
                    (_, Cells::Other(v, _)) => v.clone(),
                    _ => String::new(),
                };
                let mark = if *ok { '✓' } else { '✗' };
                // Volley's own expressions (drift, slope) have no k6 aggregate to show.
                let known = match &m.agg {
                    Agg::Trend(_) => crate::summary::valid_trend_stat(agg),
                    Agg::Counter { .. } => matches!(agg, "count" | "rate"),
                    Agg::Rate { .. } => agg == "rate",
                    Agg::Gauge { .. } => matches!(agg, "value" | "min" | "max"),
                };
                let shown = if known {
                    format!(" {}={value}", esc(agg))
                } else {
                    String::new()
                };
                out.push(format!("{ind}{mark} '{}'{shown}", esc(expr.trim())));
            }
            out.push("\n".into());
        }
        out
    }
}
