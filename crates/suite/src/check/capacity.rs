//! An http step's `sweep = "rate=..."` or `find_max_rate = { slo = "..." }`: checked as
//! `volley http --sweep/--find-max-rate` checks its flags, into the capacity library's
//! [`Plan`] (volley_run::capacity).

use super::Checker;
use crate::file::{RawStep, DOCS};
use volley_run::capacity::plan::{self, Plan};
use volley_run::capacity::{slo::Slo, sweep::Sweep};

/// The step's plan, None when it asks for none (or, with errors, when it cannot run).
pub(super) fn plan(c: &mut Checker, at: usize, where_: &str, r: &RawStep) -> Option<Plan> {
    let hint = format!("see {DOCS}, \"Capacity steps\"");
    let plan = match (&r.sweep, &r.find_max_rate) {
        (None, None) => return None,
        (Some(_), Some(f)) => {
            c.err(
                f.span().start,
                format!("{where_}: sweep and find_max_rate are two kinds of capacity run"),
                "give one of them per step",
            );
            return None;
        }
        (Some(sw), None) => match Sweep::parse(sw.get_ref(), &["rate", "connections"]) {
            Ok(s) => Plan::Sweep(s, None),
            Err(e) => {
                c.err(sw.span().start, format!("{where_}.sweep: {e}"), hint);
                return None;
            }
        },
        (None, Some(f)) => {
            let (fat, f) = (f.span().start, f.get_ref());
            let Some(slo) = &f.slo else {
                c.err(
                    fat,
                    format!("{where_}.find_max_rate: needs slo"),
                    "e.g. find_max_rate = { slo = \"p99<50ms,error_rate<0.1%\" }",
                );
                return None;
            };
            let rate = |c: &mut Checker, key: &str, v: Option<f64>| match v {
                Some(x) if !(x.is_finite() && x > 0.0) => {
                    c.err(
                        fat,
                        format!("{where_}.find_max_rate.{key} {x}: give requests per second, more than 0"),
                        "",
                    );
                    None
                }
                other => Some(other),
            };
            let start = rate(c, "start_rate", f.start_rate);
            let max_rate = rate(c, "max_rate", f.max_rate);
            let tolerance = f.tolerance.as_deref().map(plan::tolerance).transpose();
            let slo = Slo::parse(slo);
            match (start, max_rate, tolerance, slo) {
                (Some(start), Some(max_rate), Ok(tolerance), Ok(slo)) => Plan::Search {
                    slo,
                    start,
                    tolerance: tolerance.unwrap_or(plan::DEFAULT_TOLERANCE),
                    max_rate: max_rate.unwrap_or(plan::DEFAULT_MAX_RATE),
                },
                (_, _, Err(e), _) | (_, _, _, Err(e)) => {
                    c.err(fat, format!("{where_}.find_max_rate: {e}"), hint);
                    return None;
                }
                _ => return None,
            }
        }
    };
    // As the flags: these shape one run, a capacity run makes many.
    let rate_varies = match &plan {
        Plan::Sweep(s, _) => s.variable == "rate",
        Plan::Search { .. } => true,
    };
    let one_run = [
        ("vs", r.vs.is_some()),
        ("requests", r.requests.is_some()),
        ("thresholds", !r.thresholds.is_empty()),
        ("rate", r.rate.is_some() && rate_varies),
    ];
    if let Some((key, _)) = one_run.iter().find(|(_, given)| *given) {
        c.err(
            at,
            format!("{where_}: {key} is for one run; not with sweep or find_max_rate"),
            "a search judges each probe by its slo; duration is each step's measured window",
        );
        return None;
    }
    Some(plan)
}
