//! `per-vu-iterations`: each VU runs exactly `iterations` iterations (or stops at
//! `maxDuration`).

use super::{fmt_duration, iteration_fields, Fields};
use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
pub struct PerVuIterations {
    pub vus: u64,
    pub iterations: u64,
    pub max_duration: Duration,
}

impl PerVuIterations {
    pub(crate) fn from_json(f: &Fields<'_>) -> Result<PerVuIterations, String> {
        let (vus, iterations, max_duration) = iteration_fields(f)?;
        if iterations == 0 {
            return Err(format!(
                "{}: the number of iterations must be more than 0",
                f.at("iterations")
            ));
        }
        Ok(PerVuIterations {
            vus,
            iterations,
            max_duration,
        })
    }

    pub(crate) fn describe(&self) -> (String, Vec<String>) {
        (
            format!(
                "{} iterations for each of {} VUs",
                self.iterations, self.vus
            ),
            vec![format!("maxDuration: {}", fmt_duration(self.max_duration))],
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::executor::{Executor, Scenario};
    use serde_json::json;

    #[test]
    fn totals_are_vus_times_iterations() {
        let s = Scenario::from_json(
            "p",
            &json!({"executor": "per-vu-iterations", "vus": 3, "iterations": 7}),
        )
        .unwrap();
        assert!(matches!(s.executor, Executor::PerVuIterations(_)));
        assert_eq!(s.executor.total_iterations(), Some(21));
        assert_eq!(s.executor.max_vus(), 3);
        assert_eq!(
            s.describe(),
            "7 iterations for each of 3 VUs (maxDuration: 10m0s, gracefulStop: 30s)"
        );
    }

    #[test]
    fn zero_iterations_is_refused() {
        let e = Scenario::from_json(
            "p",
            &json!({"executor": "per-vu-iterations", "iterations": 0}),
        )
        .unwrap_err();
        assert!(e.contains("iterations must be more than 0"), "{e}");
    }
}
