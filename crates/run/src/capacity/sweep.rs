//! Load sweeps (`--sweep rate=1000:20000:1000`, `--sweep connections=10,25,50`,
//! `--sweep vus=…`): one ordinary run per level, in order, then the knee.

use super::judge::{judge, Verdict};
use super::slo::Slo;
use super::{step_of, Probe};
use volley_metrics::capacity::Capacity;
use volley_metrics::RunResult;

/// Most levels of one sweep.
pub const MAX_STEPS: usize = 200;

/// A parsed `--sweep`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// `rate`, `connections` or `vus`.
    pub variable: String,
    pub loads: Vec<f64>,
}

const HINT: &str = "write it as rate=FROM:TO:STEP (e.g. rate=1000:20000:1000) or a list \
                    (e.g. connections=10,25,50)";

impl Sweep {
    /// Parse `VAR=LIST` or `VAR=FROM:TO:STEP`; `allowed`: the variables this command sweeps.
    pub fn parse(s: &str, allowed: &[&str]) -> Result<Sweep, String> {
        let err = |m: String| format!("--sweep '{s}': {m}\n  hint: {HINT}");
        let (var, spec) = s
            .split_once('=')
            .ok_or_else(|| err("no '=' between the variable and its levels".into()))?;
        let var = var.trim();
        if !allowed.contains(&var) {
            return Err(err(format!(
                "cannot sweep '{var}' here; sweep one of: {}",
                allowed.join(", ")
            )));
        }
        let num = |t: &str| {
            t.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0)
                .ok_or_else(|| err(format!("'{}' is not a number above 0", t.trim())))
        };
        let loads = if let [a, b, st] = spec.split(':').collect::<Vec<_>>()[..] {
            let (a, b, st) = (num(a)?, num(b)?, num(st)?);
            if b < a {
                return Err(err(format!("TO ({b}) is below FROM ({a})")));
            }
            let n = ((b - a) / st + 1e-9).floor() + 1.0;
            if n > MAX_STEPS as f64 {
                return Err(err(format!("{n} levels, more than {MAX_STEPS}")));
            }
            (0..n as usize).map(|i| a + st * i as f64).collect()
        } else {
            let v = spec.split(',').map(num).collect::<Result<Vec<_>, _>>()?;
            if v.len() > MAX_STEPS {
                return Err(err(format!("{} levels, more than {MAX_STEPS}", v.len())));
            }
            v
        };
        if var != "rate" && loads.iter().any(|v| v.fract() != 0.0) {
            return Err(err(format!("{var} must be whole numbers")));
        }
        Ok(Sweep {
            variable: var.to_string(),
            loads,
        })
    }
}

/// A finished sweep and the run the file's metrics show (the knee step's, else the last).
pub struct Swept {
    pub capacity: Capacity,
    pub reference: Option<RunResult>,
}

/// Run every level of `sweep` with `probe`; judge each against `slo` when given. A target
/// failing hard (refusing connections, erroring far over the budget) ends the sweep.
pub fn run(sweep: &Sweep, slo: Option<&Slo>, probe: &mut dyn Probe) -> Result<Swept, String> {
    let open = sweep.variable == "rate";
    let mut steps = Vec::new();
    let mut results = Vec::new();
    let mut finding = "sweep".to_string();
    let mut message = String::new();
    let any = Slo::parse("error_rate<100%").expect("a valid SLO");
    for &load in &sweep.loads {
        if probe.stopped() {
            finding = "interrupted".into();
            message = "the sweep was interrupted".into();
            break;
        }
        let run = probe.run(load, "sweep")?;
        let mut s = step_of(&run, load, "sweep");
        let offered = if open && run.comparable { load } else { 0.0 };
        let v = judge(slo.unwrap_or(&any), &s, offered, run.threads);
        if slo.is_some() {
            s.slo_ok = Some(v == Verdict::Pass);
        }
        let stop = match &v {
            Verdict::Pass => false,
            Verdict::Fail(w) => {
                s.why = if slo.is_some() {
                    w.clone()
                } else {
                    String::new()
                };
                false
            }
            Verdict::Hard(w) => {
                s.why = format!("hard failure: {w}");
                true
            }
            Verdict::GeneratorBound(w) => {
                s.why = format!("generator-bound: {w}");
                false
            }
        };
        probe.step_done(&s);
        let interrupted = run.result.meta.interrupted;
        steps.push(s);
        results.push(run.result);
        if stop {
            finding = "hard-failure".into();
            message = format!(
                "the target failed hard at {}; the sweep stopped",
                super::load_text(&sweep.variable, load)
            );
            break;
        }
        if interrupted {
            finding = "interrupted".into();
            message = "the sweep was interrupted".into();
            break;
        }
    }
    let knee = super::knee::knee(&steps, open);
    if message.is_empty() {
        message = match knee {
            Some(k) => format!(
                "knee at {} (throughput {}, p99 {})",
                super::load_text(&sweep.variable, steps[k].load),
                super::rate_text(steps[k].throughput),
                volley_metrics::fmt::ms(steps[k].p99_ms)
            ),
            None => "no knee within the swept range".into(),
        };
    }
    let at = knee.unwrap_or(results.len().saturating_sub(1));
    let reference = (at < results.len()).then(|| results.swap_remove(at));
    Ok(Swept {
        capacity: Capacity {
            kind: "sweep".into(),
            variable: sweep.variable.clone(),
            slo: slo.map(|s| s.source.clone()),
            steps,
            knee,
            max_rate: None,
            failed_rate: None,
            confirmed: None,
            finding,
            message,
        },
        reference,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_are_ranges_or_lists_of_a_known_variable() {
        let s = Sweep::parse("rate=100:800:100", &["rate", "connections"]).unwrap();
        assert_eq!(s.loads.len(), 8);
        assert_eq!(s.loads[7], 800.0);
        let c = Sweep::parse("connections=10,25,50", &["rate", "connections"]).unwrap();
        assert_eq!(c.loads, [10.0, 25.0, 50.0]);
        let e = Sweep::parse("vus=1,2", &["rate", "connections"]).unwrap_err();
        assert!(
            e.contains("cannot sweep 'vus'") && e.contains("hint:"),
            "{e}"
        );
        assert!(Sweep::parse("rate=1:1000000:1", &["rate"])
            .unwrap_err()
            .contains("more than"));
        assert!(Sweep::parse("connections=1.5", &["connections"]).is_err());
        assert!(Sweep::parse("rate=800:100:100", &["rate"]).is_err());
        assert!(Sweep::parse("rate", &["rate"]).is_err());
    }
}
