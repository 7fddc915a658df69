//! Threshold grammar: k6's `p(95)<300` / `rate<0.01` expressions, `METRIC{tag:value}` keys,
//! Volley's drift checks (`slope<5MB/h`, `drift(p95)<10%`, `max<2GB`, also the check half of
//! `volley http --threshold`) and `options.thresholds` as a whole. Never panics; what parses
//! prints back to a canonical form that parses to the same thing.
//!
//! Input: `KEY\nEXPRESSION`, or just an expression (on `http_req_duration`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use volley_run::thresholds::{self, Op, Stat};
use volley_monitor::drift::{Aggregate, Field, Op as DOp};
use volley_monitor::Check;

fn stat_str(s: &Stat) -> String {
    match s {
        Stat::Count => "count".into(),
        Stat::Rate => "rate".into(),
        Stat::Value => "value".into(),
        Stat::Avg => "avg".into(),
        Stat::Min => "min".into(),
        Stat::Max => "max".into(),
        Stat::Med => "med".into(),
        Stat::P(p) => format!("p({p})"),
    }
}

fn op_str(o: Op) -> &'static str {
    match o {
        Op::Lt => "<",
        Op::Le => "<=",
        Op::Gt => ">",
        Op::Ge => ">=",
        Op::Eq => "==",
        Op::Ne => "!=",
    }
}

fn check_str(c: &Check) -> String {
    let lhs = match c.aggregate {
        Aggregate::Slope => "slope".to_string(),
        Aggregate::Max => "max".into(),
        Aggregate::Min => "min".into(),
        Aggregate::Last => "last".into(),
        Aggregate::Avg => "avg".into(),
        Aggregate::Drift(Field::P(p)) => format!("drift(p{p})"),
        Aggregate::Drift(_) => "drift(avg)".into(),
    };
    let op = match c.op {
        DOp::Lt => "<",
        DOp::Le => "<=",
        DOp::Gt => ">",
        DOp::Ge => ">=",
    };
    format!("{lhs}{op}{}", c.limit)
}

fn kind_of(name: &str) -> Option<volley_metrics::MetricKind> {
    volley_metrics::names::BUILTIN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, k)| *k)
        .or_else(|| {
            name.starts_with("monitor_")
                .then_some(volley_metrics::MetricKind::Gauge)
        })
}

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let (key, expr) = s.split_once('\n').unwrap_or(("http_req_duration", s));

    if let Ok((stat, op, target)) = thresholds::parse_expression(expr) {
        assert!(target.is_finite());
        let canon = format!("{}{}{}", stat_str(&stat), op_str(op), target);
        let back = thresholds::parse_expression(&canon)
            .unwrap_or_else(|e| panic!("{expr:?} → {canon:?} does not parse: {e}"));
        assert_eq!(back, (stat, op, target), "{expr:?} → {canon:?}");
    }

    if let Ok((name, tags)) = thresholds::parse_metric_key(key) {
        let canon = if tags.is_empty() {
            name.clone()
        } else {
            // Quoted: names and values keep inner spaces, which bare ones would lose.
            let t: Vec<String> = tags
                .iter()
                .map(|(k, v)| format!("\"{k}\":\"{v}\""))
                .collect();
            format!("{name}{{{}}}", t.join(","))
        };
        let back = thresholds::parse_metric_key(&canon)
            .unwrap_or_else(|e| panic!("{key:?} → {canon:?} does not parse: {e}"));
        assert_eq!(back, (name, tags), "{key:?} → {canon:?}");
    }

    if let Ok(c) = Check::parse(expr) {
        let canon = check_str(&c);
        let back = Check::parse(&canon)
            .unwrap_or_else(|e| panic!("{expr:?} → {canon:?} does not parse: {e}"));
        assert_eq!(
            (back.aggregate, back.op, back.limit.to_bits()),
            (c.aggregate, c.op, c.limit.to_bits()),
            "{expr:?} → {canon:?}"
        );
        let _ = c.passes(0.0);
    }

    // options.thresholds as a whole, with the expression alone and in the object form.
    let opts = serde_json::json!({ key: [expr, { "threshold": expr, "abortOnFail": true, "delayAbortEval": "10s" }] });
    if let Ok(ths) = thresholds::parse(&opts, kind_of) {
        assert_eq!(ths.len(), 2);
        for t in &ths {
            assert_eq!(t.source, expr.trim());
            assert!(kind_of(&t.name).is_some());
            let _ = t.check(None, 1.0);
        }
    }
});
