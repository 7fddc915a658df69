//! What a capacity run does, decided once for every front end (`volley http`/`run`'s flags,
//! a suite's `sweep`/`find_max_rate` keys): a [`Plan`] (sweep or search) driven by a probe,
//! and the run's [`outcome`] from its finding.

use super::search::{self, SearchConfig};
use super::slo::Slo;
use super::sweep::{self, Sweep};
use super::Probe;
use crate::Outcome;
use volley_metrics::capacity::Capacity;
use volley_metrics::RunResult;

/// A sweep (with an optional SLO each step is judged by) or a breaking-point search.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    Sweep(Sweep, Option<Slo>),
    Search {
        slo: Slo,
        /// The first probe's rate; None: the caller's default.
        start: Option<f64>,
        tolerance: f64,
        max_rate: f64,
    },
}

/// The search's defaults (`--max-rate`, `--tolerance`).
pub const DEFAULT_MAX_RATE: f64 = 1_000_000.0;
pub const DEFAULT_TOLERANCE: f64 = 0.05;

impl Plan {
    /// Run it with `probe`; `start` gives the search's first rate when the plan has none.
    pub fn drive(
        &self,
        probe: &mut dyn Probe,
        start: impl FnOnce(&mut dyn Probe) -> Result<f64, String>,
    ) -> Result<(Capacity, Option<RunResult>), String> {
        match self {
            Plan::Sweep(sw, slo) => {
                sweep::run(sw, slo.as_ref(), probe).map(|s| (s.capacity, s.reference))
            }
            Plan::Search {
                slo,
                start: first,
                tolerance,
                max_rate,
            } => {
                let start = match first {
                    Some(r) => *r,
                    None => start(probe)?,
                };
                let sc = SearchConfig {
                    start,
                    factor: 2.0,
                    tolerance: *tolerance,
                    max_rate: *max_rate,
                };
                search::find_max_rate(&sc, slo, probe).map(|s| (s.capacity, s.reference))
            }
        }
    }
}

/// How a capacity run ends: interrupted (105); a search that found no rate meeting the SLO
/// or hit hard failures fails like a threshold (99); one bound by the generator itself
/// cannot answer (1); anything else passed (a sweep only reports).
pub fn outcome(c: &Capacity) -> Outcome {
    match c.finding.as_str() {
        "interrupted" => Outcome::Interrupted,
        "slo-unmet" | "hard-failure" if c.kind == "search" => {
            Outcome::ThresholdsFailed(c.message.clone())
        }
        "generator-bound" if c.kind == "search" => Outcome::Failure(c.message.clone()),
        _ => Outcome::Passed,
    }
}

/// A search's tolerance: `5%` or `0.05`, strictly between 0 and 1.
pub fn tolerance(s: &str) -> Result<f64, String> {
    let t = s.trim();
    match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .ok()
    .filter(|v| *v > 0.0 && *v < 1.0)
    .ok_or_else(|| format!("'{s}' is not a tolerance: give a share such as 5% or 0.05"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances_and_outcomes() {
        assert_eq!(tolerance("5%").unwrap(), 0.05);
        assert_eq!(tolerance("0.1").unwrap(), 0.1);
        assert!(tolerance("100%").is_err() && tolerance("x").is_err());
        let mut c = Capacity {
            kind: "search".into(),
            variable: "rate".into(),
            slo: None,
            steps: Vec::new(),
            knee: None,
            max_rate: None,
            failed_rate: None,
            confirmed: None,
            finding: "slo-unmet".into(),
            message: "m".into(),
        };
        assert_eq!(outcome(&c).exit_code(), 99);
        c.finding = "generator-bound".into();
        assert_eq!(outcome(&c).exit_code(), 1);
        c.kind = "sweep".into();
        assert_eq!(outcome(&c).exit_code(), 0);
        c.finding = "interrupted".into();
        assert_eq!(outcome(&c).exit_code(), 105);
    }
}
