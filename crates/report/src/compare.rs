//! `volley compare BASE NEW`: did the change make it slower?
//!
//! For every metric (and tag set) present in both files, each figure (request rate, p50, p95,
//! p99, error rate ...) is compared twice over: the whole-run values give the size of the
//! change, and the per-interval values from the series give the noise. A change is called a
//! regression or an improvement only when the Mann-Whitney U test on the interval values says
//! the two runs differ (p < alpha) *and* the change is at least the minimum effect; otherwise
//! it is within noise. `docs/compare.md` explains why and how.

mod runs;

use crate::stats;
use crate::view::{self, Figure, Sel};
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use volley_metrics::fmt;
use volley_metrics::text::escape_control as esc;
use volley_metrics::{Agg, RunResult, TagSet, Unit};

/// Fewer intervals than this per side cannot show significance at alpha 0.05 (the exact
/// two-sided p of 3 against 3 fully separated values is 0.1; of 4 against 4, 0.029).
pub const MIN_INTERVALS: usize = 4;

/// Tuning of the verdicts.
#[derive(Clone, Debug, Serialize)]
pub struct CompareOptions {
    /// Significance level of the rank test (two-sided).
    pub alpha: f64,
    /// Smallest relative change that can count (0.05 = 5 %), whatever the test says.
    pub min_effect: f64,
    /// Smallest change of an error rate that can count, in percentage points.
    pub min_error_points: f64,
    /// Extra (metric, figure) pairs to compute beyond the defaults (from `--fail-on`).
    #[serde(skip)]
    pub extra: Vec<(String, Figure)>,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            alpha: 0.05,
            min_effect: 0.05,
            min_error_points: 0.1,
            extra: Vec::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Regression,
    Improvement,
    WithinNoise,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::WithinNoise => "within noise",
        }
    }
}

/// One figure of one series, base against new.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub metric: String,
    /// The exact tag set, or absent when the row combines all of the metric's tag sets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<TagSet>,
    pub figure: Figure,
    #[serde(skip)]
    pub unit: Unit,
    pub base: f64,
    pub new: f64,
    /// `new / base - 1`; for `error_rate` the difference in percentage points. Absent when the
    /// base is 0 (no relative change exists).
    pub change: Option<f64>,
    /// `relative` or `points`.
    pub change_unit: &'static str,
    /// Two-sided Mann-Whitney p-value over the interval values; absent with too few intervals.
    pub p_value: Option<f64>,
    /// Interval-to-interval noise: the larger robust spread of the two runs' interval values
    /// (relative, or percentage points for error_rate). A change must exceed it to count.
    pub noise: Option<f64>,
    /// Interval values used on each side (base, new).
    pub intervals: [usize; 2],
    pub verdict: Verdict,
    /// Whether a higher value is worse for this figure of this metric.
    pub higher_is_worse: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Row {
    pub fn label(&self) -> String {
        Sel {
            name: self.metric.clone(),
            tags: self.tags.clone(),
        }
        .label()
    }

    pub fn change_text(&self) -> String {
        match self.change {
            Some(c) if self.figure == Figure::ErrorRate => format!("{c:+.2} pp"),
            Some(c) => fmt::pct_change(c),
            None if self.new == self.base => "±0".into(),
            None => "new".into(),
        }
    }

    pub fn p_text(&self) -> String {
        match self.p_value {
            Some(p) if p < 0.001 => "<0.001".into(),
            Some(p) if p < 0.1 => format!("{p:.4}"),
            Some(p) => format!("{p:.3}"),
            None => "-".into(),
        }
    }

    pub fn noise_text(&self) -> String {
        match self.noise {
            Some(n) if self.figure == Figure::ErrorRate => format!("±{n:.2} pp"),
            Some(n) => format!("±{}", fmt::pct_change(n).trim_start_matches('+')),
            None => "-".into(),
        }
    }

    /// The change in the worse direction (positive = worse), in the rule's unit.
    fn worsening(&self) -> Option<f64> {
        let c = self.change?;
        Some(if self.higher_is_worse { c } else { -c })
    }
}

/// What a result file is, for the headers of the comparison.
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    pub label: String,
    pub name: String,
    pub mode: String,
    pub started_at: String,
    pub duration_s: f64,
}

impl RunInfo {
    fn of(label: &str, r: &RunResult) -> RunInfo {
        RunInfo {
            label: label.to_string(),
            name: r.meta.name.clone(),
            mode: r.meta.mode.clone(),
            started_at: r.meta.started_at.clone(),
            duration_s: r.meta.duration_s,
        }
    }
}

/// `--fail-on` rule: `[METRIC.]FIGURE:[+|-]N%`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailRule {
    pub text: String,
    pub metric: String,
    pub figure: Figure,
    /// Fraction (0.1 = 10 %) or, for error_rate, percentage points.
    pub limit: f64,
}

impl FailRule {
    /// Parse a comma-separated list, e.g. `p95:+10%,rate:-5%,error_rate:+1%`.
    pub fn parse_list(s: &str) -> Result<Vec<FailRule>, String> {
        s.split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(FailRule::parse)
            .collect()
    }

    pub fn parse(s: &str) -> Result<FailRule, String> {
        let expect = "expected FIGURE:±N% (e.g. p95:+10%, rate:-5%, error_rate:+1%)";
        let (lhs, rhs) = s
            .split_once(':')
            .ok_or_else(|| format!("--fail-on '{s}': {expect}"))?;
        let (metric, fig) = match lhs.rsplit_once('.') {
            Some((m, f)) if !m.is_empty() => (Some(m.to_string()), f),
            _ => (None, lhs),
        };
        let figure = Figure::parse(fig.trim()).ok_or_else(|| {
            let names: Vec<_> = Figure::FAIL_ON.iter().map(|f| f.name()).collect();
            format!(
                "--fail-on '{s}': unknown figure '{fig}' (one of {})",
                names.join(", ")
            )
        })?;
        let metric = metric.unwrap_or_else(|| default_metric(figure).to_string());
        let rhs = rhs.trim();
        let num = rhs
            .strip_suffix('%')
            .ok_or_else(|| format!("--fail-on '{s}': the limit needs a % sign; {expect}"))?;
        let (sign, digits) = match num.as_bytes().first() {
            Some(b'+') => (Some(1.0), &num[1..]),
            Some(b'-') => (Some(-1.0), &num[1..]),
            _ => (None, num),
        };
        let n: f64 = digits
            .trim()
            .parse()
            .ok()
            .filter(|n: &f64| n.is_finite() && *n >= 0.0)
            .ok_or_else(|| format!("--fail-on '{s}': '{rhs}' is not a percentage; {expect}"))?;
        let worse = if figure.higher_is_worse(&metric) {
            1.0
        } else {
            -1.0
        };
        if let Some(sg) = sign {
            if sg != worse {
                return Err(format!(
                    "--fail-on '{s}': {} of {metric} gets worse when it goes {}; write {}:{}{n}%",
                    figure.name(),
                    if worse > 0.0 { "up" } else { "down" },
                    lhs,
                    if worse > 0.0 { '+' } else { '-' },
                ));
            }
        }
        Ok(FailRule {
            text: s.to_string(),
            metric,
            figure,
            limit: if figure == Figure::ErrorRate {
                n
            } else {
                n / 100.0
            },
        })
    }
}

/// The metric a bare figure refers to.
pub fn default_metric(f: Figure) -> &'static str {
    match f {
        Figure::Rate => volley_metrics::names::HTTP_REQS,
        Figure::ErrorRate => volley_metrics::names::HTTP_REQ_FAILED,
        _ => volley_metrics::names::HTTP_REQ_DURATION,
    }
}

/// The outcome of one `--fail-on` rule.
#[derive(Clone, Debug, Serialize)]
pub struct FailCheck {
    pub rule: String,
    /// The compared row's change, when the row exists.
    pub change: Option<f64>,
    pub verdict: Option<Verdict>,
    pub violated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub base: RunInfo,
    pub new: RunInfo,
    pub options: CompareOptions,
    pub rows: Vec<Row>,
    pub fail_on: Vec<FailCheck>,
    /// Some `--fail-on` rule was violated.
    pub failed: bool,
}

/// Display order: the headline metrics first, then the file's order.
fn priority(name: &str) -> usize {
    [
        volley_metrics::names::HTTP_REQS,
        volley_metrics::names::HTTP_REQ_DURATION,
        volley_metrics::names::HTTP_REQ_FAILED,
        "checks",
    ]
    .iter()
    .position(|n| *n == name)
    .unwrap_or(usize::MAX)
}

/// Compare `new` against `base`, then evaluate `rules`.
pub fn compare(
    base: (&str, &RunResult),
    new: (&str, &RunResult),
    opts: &CompareOptions,
    rules: &[FailRule],
) -> Comparison {
    let (b, n) = (base.1, new.1);
    let mut opts = opts.clone();
    for r in rules {
        opts.extra.push((r.metric.clone(), r.figure));
    }
    let mut names: Vec<&str> = Vec::new();
    for m in &b.metrics {
        if !names.contains(&m.name.as_str()) && n.metrics.iter().any(|x| x.name == m.name) {
            names.push(&m.name);
        }
    }
    names.sort_by_key(|x| priority(x));
    let mut rows = Vec::new();
    for name in names {
        let tags_of = |r: &RunResult| -> BTreeSet<TagSet> {
            r.metrics_named(name).map(|m| m.tags.clone()).collect()
        };
        let (tb, tn) = (tags_of(b), tags_of(n));
        let mut sels = vec![Sel::all(name)];
        if tb.len() > 1 || tn.len() > 1 {
            sels.extend(tb.intersection(&tn).map(|t| Sel::exact(name, t)));
        }
        let Some((agg, _)) = view::total(b, &sels[0]) else {
            continue;
        };
        let mut figures: Vec<Figure> = match agg {
            _ if runs::both(b, n) => runs::figures(&agg),
            Agg::Counter { .. } => vec![Figure::Rate],
            Agg::Trend(_) => vec![Figure::P50, Figure::P95, Figure::P99],
            Agg::Rate { .. } => vec![Figure::ErrorRate],
            Agg::Gauge { .. } => vec![],
        };
        for (m, f) in &opts.extra {
            if m == name && !figures.contains(f) {
                figures.push(*f);
            }
        }
        figures.sort();
        for sel in &sels {
            for &fig in &figures {
                if let Some(row) = compare_one(b, n, sel, fig, &opts) {
                    rows.push(row);
                }
            }
        }
    }
    let fail_on: Vec<FailCheck> = rules.iter().map(|r| check_rule(r, &rows)).collect();
    Comparison {
        base: RunInfo::of(base.0, b),
        new: RunInfo::of(new.0, n),
        failed: fail_on.iter().any(|c| c.violated),
        options: opts,
        rows,
        fail_on,
    }
}

fn compare_one(
    b: &RunResult,
    n: &RunResult,
    sel: &Sel,
    fig: Figure,
    o: &CompareOptions,
) -> Option<Row> {
    let bv = view::total_figure(b, sel, fig)?;
    let nv = view::total_figure(n, sel, fig)?;
    let unit = view::total(b, sel).map_or(Unit::Default, |x| x.1);
    if fig == Figure::Rate && bv == 0.0 && nv == 0.0 {
        return None;
    }
    let bench = runs::both(b, n);
    // No failed run on either side: nothing to say.
    if bench && fig == Figure::ErrorRate && bv == 0.0 && nv == 0.0 {
        return None;
    }
    let per = |r: &RunResult| -> Vec<f64> {
        if bench {
            return runs::values(r, sel, fig);
        }
        view::intervals(r, sel, fig, 0.5)
            .into_iter()
            .map(|x| x.1)
            .collect()
    };
    let (xs, ys) = (per(b), per(n));
    let points = fig == Figure::ErrorRate;
    let rule = stats::Rule {
        alpha: o.alpha,
        floor: if points {
            o.min_error_points
        } else {
            o.min_effect
        },
        points,
        min_n: MIN_INTERVALS,
    };
    let stats::Judgement {
        change,
        p_value: p,
        noise,
        differs,
    } = stats::judge(&xs, &ys, bv, nv, rule, None);
    let enough = xs.len() >= MIN_INTERVALS && ys.len() >= MIN_INTERVALS;
    let worse_up = if bench {
        runs::higher_is_worse(b, &sel.name, fig)
    } else {
        fig.higher_is_worse(&sel.name)
    };
    let verdict = match differs {
        true if (nv > bv) == worse_up => Verdict::Regression,
        true => Verdict::Improvement,
        false => Verdict::WithinNoise,
    };
    let note = (!enough).then(|| {
        format!(
            "too few {} ({} and {}; {MIN_INTERVALS} needed)",
            if bench { "runs" } else { "intervals" },
            xs.len(),
            ys.len()
        )
    });
    Some(Row {
        metric: sel.name.clone(),
        tags: sel.tags.clone(),
        figure: fig,
        unit,
        base: bv,
        new: nv,
        change,
        change_unit: if points { "points" } else { "relative" },
        p_value: p,
        noise,
        intervals: [xs.len(), ys.len()],
        verdict,
        higher_is_worse: worse_up,
        note,
    })
}

fn check_rule(r: &FailRule, rows: &[Row]) -> FailCheck {
    let row = rows
        .iter()
        .find(|x| x.metric == r.metric && x.figure == r.figure && x.tags.is_none());
    match row {
        None => FailCheck {
            rule: r.text.clone(),
            change: None,
            verdict: None,
            violated: false,
            note: Some(format!(
                "{} of {} is not in both files",
                r.figure.name(),
                r.metric
            )),
        },
        Some(x) => {
            let beyond = match x.worsening() {
                Some(w) => w > r.limit,
                // From zero to something: worse by any relative amount.
                None => (x.new > x.base) == x.higher_is_worse && x.new != x.base,
            };
            FailCheck {
                rule: r.text.clone(),
                change: x.change,
                verdict: Some(x.verdict),
                violated: beyond && x.verdict == Verdict::Regression,
                note: None,
            }
        }
    }
}

impl Comparison {
    pub fn regressions(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.verdict == Verdict::Regression)
            .count()
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    fn cells(&self) -> Vec<[String; 8]> {
        self.rows
            .iter()
            .map(|r| {
                [
                    esc(&r.label()).into_owned(),
                    r.figure.name().to_string(),
                    r.figure.format(r.unit, r.base),
                    r.figure.format(r.unit, r.new),
                    r.change_text(),
                    r.noise_text(),
                    r.p_text(),
                    r.verdict.label().to_string(),
                ]
            })
            .collect()
    }

    /// What the noise is measured over: runs for two bench results, else intervals.
    fn unit_of_noise(&self) -> &'static str {
        if self.base.mode == "bench" && self.new.mode == "bench" {
            "run"
        } else {
            "interval"
        }
    }

    fn method_line(&self) -> String {
        format!(
            "Verdict: a difference is called when the Mann-Whitney U test on per-{} values says so (two-sided, alpha {}) and the change exceeds both the {} noise and {} ({} pp for error rates).",
            self.unit_of_noise(),
            self.options.alpha,
            self.unit_of_noise(),
            fmt::pct_change(self.options.min_effect).trim_start_matches('+'),
            self.options.min_error_points
        )
    }

    /// The terminal table. `color` adds ANSI colours to verdicts; names from the files are
    /// shown with control characters escaped.
    pub fn render_text(&self, color: bool) -> String {
        let mut o = String::new();
        for (side, info) in [("base", &self.base), ("new ", &self.new)] {
            let _ = writeln!(
                o,
                "{side}  {}  {}  ({:.1}s, started {})",
                esc(&info.label),
                esc(&info.name),
                info.duration_s,
                esc(&info.started_at)
            );
        }
        o.push('\n');
        let head = [
            "metric", "figure", "base", "new", "change", "noise", "p", "verdict",
        ];
        let cells = self.cells();
        let mut w = head.map(|h| h.chars().count());
        for c in &cells {
            for (i, x) in c.iter().enumerate() {
                w[i] = w[i].max(x.chars().count());
            }
        }
        let line = |o: &mut String, c: &[String; 8], verdict_color: &str| {
            let pad = |s: &str, n: usize, right: bool| {
                let k = n.saturating_sub(s.chars().count());
                if right {
                    format!("{}{s}", " ".repeat(k))
                } else {
                    format!("{s}{}", " ".repeat(k))
                }
            };
            let _ = writeln!(
                o,
                "{}  {}  {}  {}  {}  {}  {}  {verdict_color}{}{}",
                pad(&c[0], w[0], false),
                pad(&c[1], w[1], false),
                pad(&c[2], w[2], true),
                pad(&c[3], w[3], true),
                pad(&c[4], w[4], true),
                pad(&c[5], w[5], true),
                pad(&c[6], w[6], true),
                c[7],
                if verdict_color.is_empty() {
                    ""
                } else {
                    "\x1b[0m"
                }
            );
        };
        line(&mut o, &head.map(String::from), "");
        for (c, r) in cells.iter().zip(&self.rows) {
            let vc = match (color, r.verdict) {
                (false, _) | (_, Verdict::WithinNoise) => "",
                (true, Verdict::Regression) => "\x1b[31m",
                (true, Verdict::Improvement) => "\x1b[32m",
            };
            line(&mut o, c, vc);
        }
        let _ = writeln!(o, "\n{}", self.method_line());
        let short: Vec<_> = self
            .rows
            .iter()
            .filter(|r| r.note.is_some())
            .map(|r| format!("{} {}", esc(&r.label()), r.figure.name()))
            .collect();
        if !short.is_empty() {
            let _ = writeln!(
                o,
                "Too few {}s to judge (within noise by default): {}",
                self.unit_of_noise(),
                short.join(", ")
            );
        }
        for c in &self.fail_on {
            let _ = writeln!(o, "{}", fail_line(c));
        }
        o
    }

    /// A GitHub-flavoured Markdown table, for a pull-request comment.
    pub fn render_markdown(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "### Volley compare: {} → {}\n",
            md(&self.base.label),
            md(&self.new.label)
        );
        let _ = writeln!(
            o,
            "Base {} ({:.1}s), new {} ({:.1}s). {} regression(s).\n",
            md(&self.base.name),
            self.base.duration_s,
            md(&self.new.name),
            self.new.duration_s,
            self.regressions()
        );
        let _ = writeln!(
            o,
            "| metric | figure | base | new | change | noise | p | verdict |"
        );
        let _ = writeln!(o, "|---|---|--:|--:|--:|--:|--:|---|");
        for (c, r) in self.cells().iter().zip(&self.rows) {
            let v = match r.verdict {
                Verdict::Regression => format!("**{}**", c[7]),
                Verdict::Improvement => format!("_{}_", c[7]),
                Verdict::WithinNoise => c[7].clone(),
            };
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {} | {v} |",
                md(&c[0]),
                md(&c[1]),
                md(&c[2]),
                md(&c[3]),
                md(&c[4]),
                md(&c[5]),
                md(&c[6]),
            );
        }
        let _ = writeln!(o, "\n{}", self.method_line());
        let short: Vec<_> = self
            .rows
            .iter()
            .filter(|r| r.note.is_some())
            .map(|r| format!("{} {}", md(&r.label()), r.figure.name()))
            .collect();
        if !short.is_empty() {
            let _ = writeln!(
                o,
                "\nToo few {}s to judge (reported as within noise): {}.",
                self.unit_of_noise(),
                short.join(", ")
            );
        }
        if !self.fail_on.is_empty() {
            o.push('\n');
            for c in &self.fail_on {
                let _ = writeln!(o, "- {}", md(&fail_line(c)));
            }
        }
        o
    }
}

fn fail_line(c: &FailCheck) -> String {
    let what = match (&c.note, c.change, c.verdict) {
        (Some(n), _, _) => n.clone(),
        (None, Some(ch), Some(v)) => format!("{} ({})", fmt::pct_change(ch), v.label()),
        (None, _, Some(v)) => v.label().to_string(),
        _ => String::new(),
    };
    format!(
        "--fail-on {}: {} — {what}",
        c.rule,
        if c.violated { "FAILED" } else { "ok" }
    )
}

/// Escape text for a Markdown table cell (pipes, and HTML, which GitHub would interpret).
fn md(s: &str) -> String {
    crate::fmt::esc(&esc(s))
        .replace('|', "\\|")
        .replace('`', "\\`")
        .replace('\n', " ")
}

#[cfg(test)]
mod tests;
