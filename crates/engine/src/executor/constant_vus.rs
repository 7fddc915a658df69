//! `constant-vus`: a fixed number of VUs loop over iterations for a fixed time.

use super::{fmt_duration, Fields};
use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
pub struct ConstantVus {
    pub vus: u64,
    pub duration: Duration,
}

impl ConstantVus {
    pub(crate) fn from_json(f: &Fields<'_>) -> Result<ConstantVus, String> {
        let vus = f.count("vus")?.unwrap_or(1);
        let duration = f
            .duration("duration")?
            .ok_or_else(|| format!("{}: the duration is required", f.at("duration")))?;
        let e = ConstantVus { vus, duration };
        e.validate(f)?;
        Ok(e)
    }

    fn validate(&self, f: &Fields<'_>) -> Result<(), String> {
        if self.vus == 0 {
            return Err(format!(
                "{}: the number of VUs must be more than 0",
                f.at("vus")
            ));
        }
        if self.duration < Duration::from_secs(1) {
            return Err(format!(
                "{}: the duration must be at least 1s, got {}",
                f.at("duration"),
                fmt_duration(self.duration)
            ));
        }
        Ok(())
    }

    pub(crate) fn describe(&self) -> (String, Vec<String>) {
        (
            format!(
                "{} looping VUs for {}",
                self.vus,
                fmt_duration(self.duration)
            ),
            Vec::new(),
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::executor::{Executor, Scenario};
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn parses_with_k6_defaults() {
        let s = Scenario::from_json("c", &json!({"executor": "constant-vus", "duration": "30s"}))
            .unwrap();
        let Executor::ConstantVus(e) = &s.executor else {
            panic!("wrong executor: {s:?}")
        };
        assert_eq!(e.vus, 1);
        assert_eq!(e.duration, Duration::from_secs(30));
        assert_eq!(s.executor.max_vus(), 1);
        assert_eq!(s.executor.initial_vus(), 1);
        assert_eq!(s.executor.total_iterations(), None);
        assert!(s.executor.arrivals().is_none());
    }

    #[test]
    fn refuses_missing_or_zero_values() {
        let e =
            Scenario::from_json("c", &json!({"executor": "constant-vus", "vus": 2})).unwrap_err();
        assert!(e.contains("duration is required"), "{e}");
        let e = Scenario::from_json(
            "c",
            &json!({"executor": "constant-vus", "vus": 0, "duration": "1s"}),
        )
        .unwrap_err();
        assert!(e.contains("must be more than 0"), "{e}");
        let e = Scenario::from_json(
            "c",
            &json!({"executor": "constant-vus", "vus": -1, "duration": "1s"}),
        )
        .unwrap_err();
        assert!(e.contains("whole number"), "{e}");
    }
}
