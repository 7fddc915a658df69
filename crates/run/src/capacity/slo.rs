//! The SLO a breaking-point search keeps (`--slo 'p99<50ms,error_rate<0.1%'`): latency
//! percentiles (`p50` … `p99.9`, `max`) under a duration, and an error rate under a share.

use volley_metrics::capacity::Step;

/// One clause.
#[derive(Clone, Debug, PartialEq)]
enum Clause {
    /// `pNN<DURATION` (NN in 0..=100) or `max<DURATION`, in ms.
    Latency { pct: Option<f64>, limit_ms: f64 },
    /// `error_rate<X%` (or a fraction), as a fraction.
    ErrorRate(f64),
}

/// A parsed SLO.
#[derive(Clone, Debug, PartialEq)]
pub struct Slo {
    pub source: String,
    clauses: Vec<Clause>,
}

const HINT: &str = "write it as e.g. 'p99<50ms,error_rate<0.1%' (pNN or max under a duration; \
                    error_rate under a percentage)";

impl Slo {
    pub fn parse(s: &str) -> Result<Slo, String> {
        let mut clauses = Vec::new();
        let mut col = 1;
        for part in s.split(',') {
            let at = |m: &str| format!("--slo, column {col}: {m}\n  hint: {HINT}");
            let p = part.trim();
            let Some((name, limit)) = p.split_once('<') else {
                return Err(at(&format!("'{p}' has no '<'")));
            };
            let (name, limit) = (name.trim(), limit.trim().trim_start_matches('='));
            let clause = if name == "error_rate" {
                let v = match limit.strip_suffix('%') {
                    Some(pc) => pc.trim().parse::<f64>().map(|v| v / 100.0),
                    None => limit.parse::<f64>(),
                }
                .ok()
                .filter(|v| v.is_finite() && (0.0..=1.0).contains(v))
                .ok_or_else(|| at(&format!("'{limit}' is not a share such as 0.1% or 0.001")))?;
                Clause::ErrorRate(v)
            } else {
                let pct = match name {
                    "max" => None,
                    _ => Some(
                        name.strip_prefix('p')
                            .and_then(|n| n.trim_matches(['(', ')']).parse::<f64>().ok())
                            .filter(|v| (0.0..=100.0).contains(v))
                            .ok_or_else(|| {
                                at(&format!(
                                    "'{name}' is not p50, p95, p99, p99.9, max or error_rate"
                                ))
                            })?,
                    ),
                };
                let d = crate::capacity::parse_ms(limit)
                    .ok_or_else(|| at(&format!("'{limit}' is not a duration such as 50ms")))?;
                Clause::Latency { pct, limit_ms: d }
            };
            clauses.push(clause);
            col += part.chars().count() + 1;
        }
        Ok(Slo {
            source: s.trim().to_string(),
            clauses,
        })
    }

    /// The error rate the SLO allows (0 when it names none: any error breaks it).
    pub fn error_budget(&self) -> f64 {
        self.clauses
            .iter()
            .find_map(|c| match c {
                Clause::ErrorRate(v) => Some(*v),
                _ => None,
            })
            .unwrap_or(0.0)
    }

    /// The tightest latency limit, ms (for telling a slow server from a slow generator).
    pub fn latency_limit_ms(&self) -> Option<f64> {
        self.clauses
            .iter()
            .filter_map(|c| match c {
                Clause::Latency { limit_ms, .. } => Some(*limit_ms),
                _ => None,
            })
            .reduce(f64::min)
    }

    /// `Err(why)` naming every clause the step breaks, e.g. `p99 81.2ms ≥ 50ms`.
    pub fn check(&self, s: &Step) -> Result<(), String> {
        let mut why = Vec::new();
        for c in &self.clauses {
            match c {
                Clause::Latency { pct, limit_ms } => {
                    let (label, v) = match pct {
                        None => ("max".to_string(), s.max_ms),
                        Some(p) => (
                            format!("p{}", volley_metrics::fmt::short(*p)),
                            pct_ms(s, *p),
                        ),
                    };
                    if v >= *limit_ms {
                        why.push(format!("{label} {} ≥ {}", ms(v), ms(*limit_ms)));
                    }
                }
                Clause::ErrorRate(max) => {
                    if s.error_rate > *max || (s.requests == 0 && s.load > 0.0) {
                        why.push(format!("error_rate {} > {}", pc(s.error_rate), pc(*max)));
                    }
                }
            }
        }
        if why.is_empty() {
            Ok(())
        } else {
            Err(why.join(", "))
        }
    }
}

/// A percentile of a step: the stored ones directly, others from its histogram.
fn pct_ms(s: &Step, p: f64) -> f64 {
    match p {
        50.0 => s.p50_ms,
        95.0 => s.p95_ms,
        99.0 => s.p99_ms,
        _ => volley_metrics::hist::decode_trend(&s.hist)
            .map(|h| volley_metrics::hist::percentile(&h, p) / 1000.0)
            .unwrap_or(f64::INFINITY),
    }
}

fn ms(v: f64) -> String {
    volley_metrics::fmt::ms(v)
}

fn pc(v: f64) -> String {
    format!("{}%", volley_metrics::fmt::short(v * 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(p99: f64, err: f64) -> Step {
        crate::capacity::tests::step(100.0, 100.0, p99, err)
    }

    #[test]
    fn an_slo_names_every_clause_a_step_breaks() {
        let slo = Slo::parse("p99<50ms, error_rate<0.1%").unwrap();
        assert_eq!(slo.error_budget(), 0.001);
        assert_eq!(slo.latency_limit_ms(), Some(50.0));
        assert!(slo.check(&step(49.0, 0.0)).is_ok());
        let why = slo.check(&step(80.0, 0.01)).unwrap_err();
        assert!(
            why.contains("p99") && why.contains("error_rate 1%"),
            "{why}"
        );
        assert!(Slo::parse("max<1s")
            .unwrap()
            .check(&step(10.0, 0.0))
            .is_ok());
    }

    #[test]
    fn a_bad_slo_is_refused_with_its_column_and_a_hint() {
        let e = Slo::parse("p99<50ms,p101<3ms").unwrap_err();
        assert!(e.starts_with("--slo, column 10: 'p101'"), "{e}");
        assert!(e.contains("hint:"), "{e}");
        assert!(Slo::parse("p99>50ms").unwrap_err().contains("no '<'"));
        assert!(Slo::parse("error_rate<7 apples").is_err());
        assert!(Slo::parse("p99<fast").is_err());
    }
}
