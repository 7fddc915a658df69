//! A `run` step's `faults` and `proxies`: the services its process faults name are lent to
//! fault targets ([`crate::services::target`]), its proxies are started in front of services
//! (scripts find them in `VOLLEY_PROXY_<NAME>`, as with `volley run --proxy`), and the one
//! [`volley_faults::Armed`] path of `volley run --fault` runs the schedule on the run's clock
//! and writes the events into the step's result. After the step the services go back.

use crate::check::StepFaults;
use crate::services::{target::Slot, Services};
use crate::steps::Env;
use std::collections::BTreeMap;
use volley_faults::{Action, Armed, ProcessTarget, ProxySpec, Schedule, Target};

/// A step's faults, armed.
#[derive(Default)]
pub struct StepArm {
    pub armed: Option<Armed>,
    lent: Vec<Slot>,
}

/// Lend the services and start the proxies; nothing when the step has no faults.
pub fn arm(f: &StepFaults, env: &Env, services: &mut Services) -> Result<StepArm, String> {
    let mut out = StepArm::default();
    if f.faults.is_empty() && f.proxies.is_empty() {
        return Ok(out);
    }
    let schedule = Schedule::parse(&f.faults).map_err(|e| e.to_string())?;
    let mut specs = Vec::new();
    for (name, up) in &f.proxies {
        let upstream = match up.strip_prefix("services.") {
            Some(s) => match env.ctx.services.get(s) {
                Some(x) => format!("127.0.0.1:{}", x.port),
                None => return Err(format!("proxies.{name}: no service '{s}'")),
            },
            None => up.clone(),
        };
        specs.push(ProxySpec::parse(&format!(
            "{name}=127.0.0.1:0->{upstream}"
        ))?);
    }
    let mut targets: BTreeMap<String, Box<dyn ProcessTarget>> = BTreeMap::new();
    for fault in &schedule.faults {
        if let Action::Process {
            target: Target::Named(n),
            ..
        } = &fault.action
        {
            if targets.contains_key(n) {
                continue;
            }
            let logs = env.dir.join("logs");
            let Some((slot, t)) = services.lend(n, env.suite, env.ctx, logs) else {
                out.restore(services, env);
                return Err(format!(
                    "fault '{}': service '{n}' is not running",
                    fault.text
                ));
            };
            out.lent.push(slot);
            targets.insert(n.clone(), Box::new(t));
        }
    }
    match Armed::arm_targets(schedule, specs, targets, None) {
        Ok(a) => out.armed = Some(a),
        Err(volley_faults::ArmError::Usage(e) | volley_faults::ArmError::Failure(e)) => {
            out.restore(services, env);
            return Err(e);
        }
    }
    Ok(out)
}

impl StepArm {
    /// `VOLLEY_PROXY_<NAME>=HOST:PORT` for the script's environment.
    pub fn env(&self) -> Vec<(String, String)> {
        self.armed.as_ref().map_or_else(Vec::new, Armed::env)
    }

    /// The lent services back into `services` (restarted ones under their new pid).
    pub fn restore(&mut self, services: &mut Services, env: &Env) {
        for slot in self.lent.drain(..) {
            services.put_back(&slot, env.suite);
        }
    }
}
