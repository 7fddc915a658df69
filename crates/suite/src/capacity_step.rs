//! An http step with `sweep` or `find_max_rate`: the capacity library's plan driven by a
//! quick-mode probe, as `volley http --sweep/--find-max-rate` does. The table and the finding
//! go to `NAME.capacity.txt`; the reference run, with its `capacity` section, through the
//! step's after-run chain (`NAME.json`, history, report).

use crate::check::StepDef;
use crate::code;
use crate::steps::{after, test_name, Env, StepResult};
use std::time::Duration;
use volley_engine::{MonitorPlan, QuickConfig};
use volley_run::capacity::plan::{self, Plan};
use volley_run::capacity::probe::QuickProbe;
use volley_run::Outcome;

/// `volley http`'s default warm-up before each step or probe.
const WARMUP: Duration = Duration::from_secs(1);

pub(crate) fn run(
    step: &StepDef,
    plan: &Plan,
    cfg: QuickConfig,
    monitor: &MonitorPlan,
    env: &Env,
) -> StepResult {
    let mut r = StepResult::new(step);
    let variable = match plan {
        Plan::Sweep(sw, _) => sw.variable.clone(),
        Plan::Search { .. } => "rate".to_string(),
    };
    let measure = cfg.duration.unwrap_or(Duration::from_secs(5));
    // Progress lines on stderr, one per step or probe: a search takes minutes.
    let mut probe = QuickProbe::new(cfg, &variable, monitor, env.ctl, (WARMUP, measure), false);
    let (capacity, reference) = match plan.drive(&mut probe, |_| Ok(100.0)) {
        Ok(d) => d,
        Err(e) => return r.fail(code::FAILURE, e),
    };
    let outcome = plan::outcome(&capacity);
    let text = env.dir.join(format!("{}.capacity.txt", step.name));
    let table = format!(
        "{}{}\n",
        volley_run::capacity::table(&capacity),
        capacity.message
    );
    if let Err(e) = std::fs::write(&text, table) {
        return r.fail(
            code::FAILURE,
            format!("cannot write {}: {e}", text.display()),
        );
    }
    r.files.push(format!("{}.capacity.txt", step.name));
    let outcome = match reference {
        Some(mut result) => {
            result.meta.name = test_name(env, step);
            result.capacity = Some(capacity);
            let a = after(step, env, &mut r);
            let o = a.finish(&result, outcome, env.ctl.was_interrupted());
            r.result = Some(result);
            o
        }
        None => outcome,
    };
    r.code = outcome.exit_code();
    r.error = match &outcome {
        Outcome::Failure(e) | Outcome::ThresholdsFailed(e) => Some(e.clone()),
        _ => None,
    };
    r
}
