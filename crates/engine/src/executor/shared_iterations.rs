//! `shared-iterations`: a fixed number of iterations shared by a number of VUs; fast VUs run
//! more of them. Ends when all are done or at `maxDuration`.

use super::{fmt_duration, iteration_fields, Fields};
use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
pub struct SharedIterations {
    pub vus: u64,
    pub iterations: u64,
    pub max_duration: Duration,
}

impl SharedIterations {
    pub(crate) fn from_json(f: &Fields<'_>) -> Result<SharedIterations, String> {
        let (vus, iterations, max_duration) = iteration_fields(f)?;
        if iterations < vus {
            return Err(format!(
                "{}: the number of iterations ({iterations}) can't be less than the number of \
                 VUs ({vus})",
                f.at("iterations")
            ));
        }
        Ok(SharedIterations {
            vus,
            iterations,
            max_duration,
        })
    }

    pub(crate) fn describe(&self) -> (String, Vec<String>) {
        (
            format!(
                "{} iterations shared among {} VUs",
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
    use std::time::Duration;

    #[test]
    fn parses_with_k6_defaults() {
        let s = Scenario::from_json("s", &json!({"executor": "shared-iterations"})).unwrap();
        let Executor::SharedIterations(e) = &s.executor else {
            panic!("{s:?}")
        };
        assert_eq!((e.vus, e.iterations), (1, 1));
        assert_eq!(e.max_duration, Duration::from_secs(600));
        assert_eq!(s.executor.total_iterations(), Some(1));
        assert_eq!(s.executor.duration(), Duration::from_secs(600));
    }

    #[test]
    fn fewer_iterations_than_vus_is_refused() {
        let e = Scenario::from_json(
            "s",
            &json!({"executor": "shared-iterations", "vus": 10, "iterations": 5}),
        )
        .unwrap_err();
        assert!(
            e.contains("the number of iterations (5) can't be less than the number of VUs (10)"),
            "{e}"
        );
    }

    #[test]
    fn describes_itself_like_k6() {
        let s = Scenario::from_json(
            "s",
            &json!({"executor": "shared-iterations", "vus": 10, "iterations": 200, "maxDuration": "30s"}),
        )
        .unwrap();
        assert_eq!(
            s.describe(),
            "200 iterations shared among 10 VUs (maxDuration: 30s, gracefulStop: 30s)"
        );
    }
}
