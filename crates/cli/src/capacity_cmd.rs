//! `volley http URL --sweep …` and `--find-max-rate --slo …`: the flags, and the probe that
//! runs one step of quick mode on the one run pipeline. What to run and how to judge it is
//! `volley_run::capacity`; method: docs/capacity.md.

use crate::args::HttpArgs;
use crate::exit;
use clap::Args;
use std::time::Duration;
use volley_engine::{MonitorPlan, QuickConfig, RunControl};
use volley_run::capacity::{self as cap, probe::QuickProbe, search, slo::Slo, sweep::Sweep};
use volley_run::Outcome;

#[derive(Args, Debug, Default)]
pub struct CapacityArgs {
    /// Capacity sweep: one run per level, e.g. rate=1000:20000:1000 (open model, -q per step)
    /// or connections=10,25,50; prints a table and the knee (docs/capacity.md)
    #[arg(long, value_name = "VAR=LEVELS", conflicts_with_all = ["vs", "out", "thresholds", "rate_stages", "find_max_rate"])]
    pub sweep: Option<String>,
    /// Breaking-point search: the highest open-model rate that meets --slo (docs/capacity.md)
    #[arg(long, requires = "slo", conflicts_with_all = ["vs", "out", "thresholds", "rate_stages", "rate"])]
    pub find_max_rate: bool,
    /// The service level a step must meet, e.g. 'p99<50ms,error_rate<0.1%'
    #[arg(long, value_name = "SLO")]
    pub slo: Option<String>,
    /// Measured window of each sweep step
    #[arg(long, default_value = "5s", value_parser = volley_engine::parse_duration)]
    pub step_duration: Duration,
    /// Measured window of each search probe
    #[arg(long, default_value = "5s", value_parser = volley_engine::parse_duration)]
    pub probe_duration: Duration,
    /// Warm-up run at the same load before each step or probe, not measured (0s: none)
    #[arg(long, default_value = "1s", value_parser = volley_engine::parse_duration)]
    pub warmup: Duration,
    /// Search: the first probe's rate (requests/s; default 100)
    #[arg(long, value_name = "R", value_parser = positive_rate)]
    pub start_rate: Option<f64>,
    /// Search: never probe above this rate
    #[arg(long, default_value_t = 1_000_000.0, value_name = "R", value_parser = positive_rate)]
    pub max_rate: f64,
    /// Search: stop bisecting when the bracket is this narrow, e.g. 5%
    #[arg(long, default_value = "5%", value_parser = tolerance)]
    pub tolerance: f64,
}

impl CapacityArgs {
    pub fn active(&self) -> bool {
        self.sweep.is_some() || self.find_max_rate
    }
}

/// A rate flag: a finite number of requests per second above 0.
pub fn positive_rate(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .ok_or_else(|| format!("'{s}' is not a rate: give requests per second above 0, e.g. 500"))
}

fn tolerance(s: &str) -> Result<f64, String> {
    let t = s.trim();
    match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .ok()
    .filter(|v| *v > 0.0 && *v < 1.0)
    .ok_or_else(|| format!("'{s}' is not a tolerance: give a share such as 5% or 0.05"))
}

/// Run the sweep or the search, print the table and the finding, then the after-run chain
/// (--save, --report, --history) on the reference run with the steps attached.
pub fn run(
    a: &HttpArgs,
    cfg: QuickConfig,
    monitor: &MonitorPlan,
    ctl: &RunControl,
    after: volley_run::after::AfterRun,
) -> i32 {
    let c = &a.capacity;
    let slo = match c.slo.as_deref().map(Slo::parse).transpose() {
        Ok(s) => s,
        Err(e) => return exit::usage(&e),
    };
    let sweep = match c
        .sweep
        .as_deref()
        .map(|s| Sweep::parse(s, &["rate", "connections"]))
        .transpose()
    {
        Ok(s) => s,
        Err(e) => return exit::usage(&e),
    };
    if a.dashboard.dashboard.is_some() {
        return exit::usage("--dashboard watches one run; not with --sweep or --find-max-rate");
    }
    let quiet = a.quiet || a.json;
    let measure = if sweep.is_some() {
        c.step_duration
    } else {
        c.probe_duration
    };
    let variable = sweep.as_ref().map_or("rate", |s| s.variable.as_str());
    let mut probe = QuickProbe::new(cfg, variable, monitor, ctl, (c.warmup, measure), quiet);
    let done = match (&sweep, &slo) {
        (Some(sw), _) => {
            if !quiet {
                eprintln!("sweep of {} over {} levels:", sw.variable, sw.loads.len());
            }
            cap::sweep::run(sw, slo.as_ref(), &mut probe).map(|s| (s.capacity, s.reference))
        }
        (None, Some(slo)) => {
            let sc = search::SearchConfig {
                start: c.start_rate.unwrap_or(100.0),
                factor: 2.0,
                tolerance: c.tolerance,
                max_rate: c.max_rate,
            };
            if !quiet {
                eprintln!("searching the highest rate that meets {}:", slo.source);
            }
            search::find_max_rate(&sc, slo, &mut probe).map(|s| (s.capacity, s.reference))
        }
        (None, None) => return exit::usage("--find-max-rate needs --slo"),
    };
    finish(done, after, (a.json, a.quiet))
}

/// Print the table (or `--json`) and the finding, then the after-run chain on the reference
/// run with the steps attached; the exit code.
fn finish(
    done: Result<
        (
            volley_metrics::capacity::Capacity,
            Option<volley_metrics::RunResult>,
        ),
        String,
    >,
    after: volley_run::after::AfterRun,
    (json, quiet): (bool, bool),
) -> i32 {
    let (capacity, reference) = match done {
        Ok(d) => d,
        Err(e) => return exit::fail(&e),
    };
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&capacity).unwrap_or_default()
        );
    } else if !quiet {
        exit::print(&cap::table(&capacity));
        outln!("{}", capacity.message);
    }
    let outcome = match capacity.finding.as_str() {
        "interrupted" => Outcome::Interrupted,
        "slo-unmet" | "hard-failure" if capacity.kind == "search" => {
            Outcome::ThresholdsFailed(capacity.message.clone())
        }
        "generator-bound" if capacity.kind == "search" => {
            Outcome::Failure(capacity.message.clone())
        }
        _ => Outcome::Passed,
    };
    let Some(mut result) = reference else {
        return exit::outcome(&outcome);
    };
    result.capacity = Some(capacity);
    let settled = after.finish(&result, outcome.clone(), false);
    if settled != outcome {
        return exit::outcome(&settled);
    }
    settled.exit_code()
}

/// `volley run script.js --find-max-rate --slo …` / `--sweep vus=…`: the script's scenarios
/// scaled by one factor (`volley_run::capacity::scale`); each probe runs the script as written
/// otherwise (its own durations).
#[derive(Args, Debug, Default)]
pub struct ScriptCapacityArgs {
    /// Capacity sweep over the script's VU executors, e.g. vus=10,20,50 (docs/capacity.md)
    #[arg(long, value_name = "vus=LEVELS", conflicts_with = "find_max_rate")]
    pub sweep: Option<String>,
    /// Breaking-point search over the script's arrival-rate scenarios (their rates scaled by
    /// one factor) that meets --slo (docs/capacity.md)
    #[arg(long, requires = "slo")]
    pub find_max_rate: bool,
    /// The service level a step must meet, e.g. 'p99<50ms,error_rate<0.1%'
    #[arg(long, value_name = "SLO")]
    pub slo: Option<String>,
    /// Search: the first probe's total arrival rate (iterations/s; default: the script's)
    #[arg(long, value_name = "R", value_parser = positive_rate)]
    pub start_rate: Option<f64>,
    /// Search: never probe above this rate
    #[arg(long, default_value_t = 1_000_000.0, value_name = "R", value_parser = positive_rate)]
    pub max_rate: f64,
    /// Search: stop bisecting when the bracket is this narrow, e.g. 5%
    #[arg(long, default_value = "5%", value_parser = tolerance)]
    pub tolerance: f64,
}

impl ScriptCapacityArgs {
    pub fn active(&self) -> bool {
        self.sweep.is_some() || self.find_max_rate
    }
}

/// Run a script's sweep or search; `prepare` makes a fresh run of the script each step.
pub fn run_script<F: volley_engine::vus::VuFactory>(
    c: &ScriptCapacityArgs,
    prepare: cap::probe::Prepare<'_, F>,
    ctl: &RunControl,
    after: volley_run::after::AfterRun,
    quiet: bool,
) -> i32 {
    use cap::scale::Knob;
    let slo = match c.slo.as_deref().map(Slo::parse).transpose() {
        Ok(s) => s,
        Err(e) => return exit::usage(&e),
    };
    let sweep = match c
        .sweep
        .as_deref()
        .map(|s| Sweep::parse(s, &["vus"]))
        .transpose()
    {
        Ok(s) => s,
        Err(e) => return exit::usage(&e),
    };
    let knob = if sweep.is_some() {
        Knob::Vus
    } else {
        Knob::Rate
    };
    let mut probe = cap::probe::PlanProbe::new(prepare, knob, ctl, quiet);
    let done = match (&sweep, &slo) {
        (Some(sw), _) => {
            cap::sweep::run(sw, slo.as_ref(), &mut probe).map(|s| (s.capacity, s.reference))
        }
        (None, Some(slo)) => {
            let start = match c.start_rate {
                Some(r) => Ok(r),
                None => probe.base_load(),
            };
            start.and_then(|start| {
                let sc = search::SearchConfig {
                    start,
                    factor: 2.0,
                    tolerance: c.tolerance,
                    max_rate: c.max_rate,
                };
                search::find_max_rate(&sc, slo, &mut probe).map(|s| (s.capacity, s.reference))
            })
        }
        (None, None) => return exit::usage("--find-max-rate needs --slo"),
    };
    finish(done, after, (false, quiet))
}
