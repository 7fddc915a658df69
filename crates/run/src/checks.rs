//! The `--threshold` flags' grammar shared by every command (`METRIC{tag:value}:EXPR`), and
//! Volley's per-series checks (`volley_monitor::Check`: slope, drift, limits on gauges) that
//! `volley http` and `volley monitor` judge beside k6's thresholds; what a crossed drift
//! threshold observed, for the end-of-run message; `volley http`'s k6 thresholds on quick mode's
//! metrics and the verdict lines it prints.

use volley_metrics::{RunResult, TagSet};
use volley_monitor::watch::show;
use volley_monitor::Check;

/// `METRIC:EXPR` → (metric key, expression); a key's `{tag:value}` selector holds ':' itself,
/// so then the separator is the first ':' after its '}'.
pub fn split_flag(s: &str) -> Option<(String, String)> {
    let colon = s.find(':')?;
    let at = match s.find('{') {
        Some(open) if open < colon => s[open..].find('}')? + open + 1,
        _ => colon,
    };
    let (key, expr) = (s[..at].trim(), s[at..].strip_prefix(':')?.trim());
    (!key.is_empty() && !key.starts_with('{') && !expr.is_empty())
        .then(|| (key.to_string(), expr.to_string()))
}

/// One `--threshold METRIC[{tag:value,...}]:CHECK`.
pub struct MonitorCheck {
    pub metric: String,
    pub tags: TagSet,
    pub check: Check,
}

impl MonitorCheck {
    pub fn parse(s: &str) -> Result<MonitorCheck, String> {
        let hint = || {
            format!(
                "--threshold '{s}': expected METRIC:CHECK, e.g. monitor_rss_bytes:slope<5MB/h, \
                 monitor_rss_bytes{{target:api}}:max<2GB or http_req_duration:drift(p95)<10%"
            )
        };
        let (key, expr) = split_flag(s).ok_or_else(hint)?;
        let (metric, tags) = crate::thresholds::parse_metric_key(&key).map_err(|_| hint())?;
        if metric.is_empty() {
            return Err(hint());
        }
        Ok(MonitorCheck {
            metric,
            tags: tags.into_iter().collect(),
            check: Check::parse(&expr).map_err(|e| format!("--threshold: {e}"))?,
        })
    }
}

pub fn parse_checks(list: &[String]) -> Result<Vec<MonitorCheck>, String> {
    list.iter().map(|s| MonitorCheck::parse(s)).collect()
}

fn tags_label(t: &TagSet) -> String {
    if t.is_empty() {
        return String::new();
    }
    let v: Vec<String> = t.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{{{}}}", v.join(","))
}

/// Judge the drift/limit checks on a finished run and print one line per series on stderr
/// (passed ones only when not `quiet`); returns k6's message naming the failed metrics, if any.
pub fn judge_checks(r: &RunResult, list: &[MonitorCheck], quiet: bool) -> Option<String> {
    let mut failed: Vec<&str> = Vec::new();
    for t in list {
        for o in volley_monitor::evaluate(r, &t.metric, &t.tags, &t.check) {
            if !o.passed && !failed.contains(&t.metric.as_str()) {
                failed.push(&t.metric);
            }
            if quiet && o.passed {
                continue;
            }
            let seen = match o.observed {
                Some(v) if t.check.aggregate == volley_monitor::drift::Aggregate::Slope => {
                    format!("{}/h", show(&t.metric, v))
                }
                Some(v)
                    if matches!(
                        t.check.aggregate,
                        volley_monitor::drift::Aggregate::Drift(_)
                    ) =>
                {
                    format!("{v:+.1}%")
                }
                Some(v) => show(&t.metric, v),
                None => "no data".to_string(),
            };
            eprintln!(
                "{} {}{} {}  (observed {seen})",
                if o.passed { "✓" } else { "✗" },
                t.metric,
                tags_label(&o.tags),
                t.check.source,
            );
        }
    }
    (!failed.is_empty()).then(|| {
        format!(
            "thresholds on metrics '{}' have been crossed",
            failed.join(", ")
        )
    })
}

/// What a crossed drift threshold observed (k6's summary shows only ✗), e.g.
/// `monitor_rss_bytes slope<1MB/h: observed 15.0 GiB/h`; None for k6's own expressions.
pub fn drift_note(t: &volley_metrics::ThresholdResult) -> Option<String> {
    let drift = volley_monitor::is_drift_check(&t.expression);
    if !drift && !t.metric.starts_with("monitor_") {
        return None;
    }
    let bytes = t.metric.contains("_bytes");
    let seen = match t.observed {
        None => "no data".to_string(),
        Some(v) if t.expression.trim_start().starts_with("drift(") => format!("{v:+.1}%"),
        Some(v) if bytes => volley_metrics::fmt::bytes_prec(v, 1),
        Some(v) => format!("{v:.2}"),
    };
    let per_hour = if t.expression.trim_start().starts_with("slope") && t.observed.is_some() {
        "/h"
    } else {
        ""
    };
    Some(format!(
        "{} {}: observed {seen}{per_hour}",
        t.metric, t.expression
    ))
}

/// A drift or monitor check (`volley_monitor::Check`, judged per series), not k6's grammar.
pub fn is_check_flag(flag: &str) -> bool {
    match split_flag(flag) {
        Some((key, expr)) => key.starts_with("monitor_") || volley_monitor::is_drift_check(&expr),
        // Malformed: the checks' parser words the usage error.
        None => true,
    }
}

/// What a quick mode records, for its `--threshold` flags: the metric names, the one metric
/// tagged (and by which tag), and each metric's kind.
#[derive(Clone, Copy)]
pub struct ModeMetrics {
    pub names: &'static [&'static str],
    /// The metric whose series carry a tag (`http_reqs` by `status`).
    pub tagged: (&'static str, &'static str),
    pub kind: fn(&str) -> volley_metrics::MetricKind,
}

/// `volley http`'s metrics.
pub const HTTP_QUICK: ModeMetrics = ModeMetrics {
    names: volley_engine::quick::METRICS,
    tagged: (volley_metrics::names::HTTP_REQS, "status"),
    kind: quick_kind,
};

/// `volley http`'s `--threshold` flags in k6's grammar → the run layer's thresholds, on quick
/// mode's metrics.
pub fn quick_thresholds(flags: &[String]) -> Result<Vec<crate::thresholds::Threshold>, String> {
    mode_thresholds(flags, &HTTP_QUICK)
}

/// A quick mode's `--threshold` flags in k6's grammar → the run layer's thresholds, on the
/// metrics `m` names.
pub fn mode_thresholds(
    flags: &[String],
    m: &ModeMetrics,
) -> Result<Vec<crate::thresholds::Threshold>, String> {
    let mut map = serde_json::Map::new();
    for f in flags {
        let (key, expr) = split_flag(f).ok_or_else(|| {
            format!(
                "--threshold '{f}': expected METRIC:EXPR, e.g. {}:p(95)<300",
                m.names.first().copied().unwrap_or("metric")
            )
        })?;
        let list = map
            .entry(key)
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let Some(l) = list.as_array_mut() {
            l.push(expr.into());
        }
    }
    if map.is_empty() {
        return Ok(Vec::new());
    }
    let quick = m.names;
    let (tagged, tag) = m.tagged;
    // Quick mode tags only one metric (by one tag): any other selector would judge an empty
    // series as zeros and pass whatever the run did.
    for key in map.keys() {
        let (name, tags) = crate::thresholds::parse_metric_key(key)
            .map_err(|e| format!("--threshold '{key}': {e}"))?;
        if !quick.contains(&name.as_str()) {
            return Err(format!(
                "--threshold: quick mode records no metric '{name}'; it records {} (and \
                 monitor_* with --monitor)",
                quick.join(", ")
            ));
        }
        let ok = tags.is_empty() || (name == tagged && tags.iter().all(|(k, _)| k == tag));
        if !ok {
            return Err(format!(
                "--threshold '{key}': quick mode tags only {tagged}, by {tag} (e.g. \
                 '{tagged}{{{tag}:...}}:count>0'); other metrics take no {{tag:value}} selector"
            ));
        }
    }
    crate::thresholds::parse(&serde_json::Value::Object(map), |name| {
        quick.contains(&name).then(|| (m.kind)(name))
    })
    .map_err(|e| {
        format!(
            "--threshold: {e}\n  hint: quick mode records {}",
            quick.join(", ")
        )
    })
}

/// The kind quick mode records each of its metrics as.
fn quick_kind(name: &str) -> volley_metrics::MetricKind {
    use volley_metrics::MetricKind;
    match name {
        "http_req_corrected" => MetricKind::Trend,
        "connections_opened" | "missed_starts" | "dropped_requests" => MetricKind::Counter,
        n => volley_metrics::names::builtin_kind(n).unwrap_or(MetricKind::Counter),
    }
}

/// k6's threshold verdicts, one line each on stderr (failed ones even with --quiet).
pub fn print_verdicts(r: &volley_metrics::RunResult, quiet: bool) {
    for t in &r.thresholds {
        if quiet && t.ok {
            continue;
        }
        let seen = t
            .observed
            .map_or_else(|| "no data".to_string(), |v| format!("{v:.3}"));
        eprintln!(
            "{} {} {}  (observed {seen})",
            if t.ok { "✓" } else { "✗" },
            t.metric,
            t.expression
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_flags_split_after_the_tag_selector() {
        let kv = |a: &str, b: &str| Some((a.to_string(), b.to_string()));
        assert_eq!(
            split_flag("monitor_rss_bytes:slope<5MB/h"),
            kv("monitor_rss_bytes", "slope<5MB/h")
        );
        assert_eq!(
            split_flag("monitor_rss_bytes{target:api}:max<2GB"),
            kv("monitor_rss_bytes{target:api}", "max<2GB")
        );
        assert_eq!(
            split_flag("http_req_duration:p(95)<200"),
            kv("http_req_duration", "p(95)<200")
        );
        for bad in ["nope", "x{a:b}", "x{a:b:c", ":p(95)<1", "x:"] {
            assert_eq!(split_flag(bad), None, "{bad}");
        }
    }

    #[test]
    fn crossed_drift_thresholds_say_what_they_observed() {
        let t = |metric: &str, expression: &str, observed| volley_metrics::ThresholdResult {
            metric: metric.into(),
            expression: expression.into(),
            ok: false,
            observed,
            aborted: false,
        };
        assert_eq!(
            drift_note(&t("monitor_rss_bytes", "slope<1MB/h", Some(2097152.0))).unwrap(),
            "monitor_rss_bytes slope<1MB/h: observed 2.0 MiB/h"
        );
        assert_eq!(
            drift_note(&t("http_req_duration", "drift(p95)<10%", Some(12.34))).unwrap(),
            "http_req_duration drift(p95)<10%: observed +12.3%"
        );
        assert_eq!(
            drift_note(&t("monitor_fds{target:a}", "max<100", None)).unwrap(),
            "monitor_fds{target:a} max<100: observed no data"
        );
        assert_eq!(
            drift_note(&t("http_req_duration", "p(95)<1", Some(2.0))),
            None
        );
    }

    #[test]
    fn monitor_checks_parse_tags_and_refuse_malformed_flags() {
        let c = MonitorCheck::parse("monitor_rss_bytes{target:api}:max<2GB").unwrap();
        assert_eq!(c.metric, "monitor_rss_bytes");
        assert_eq!(c.tags.get("target").map(String::as_str), Some("api"));
        assert_eq!(c.check.source, "max<2GB");
        for bad in ["nope", "{a:b}:max<1", "x{a}:max<1", "x:bogus"] {
            assert!(MonitorCheck::parse(bad).is_err(), "{bad}");
        }
    }
}
