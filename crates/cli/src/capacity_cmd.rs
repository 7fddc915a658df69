//! Capacity flags and their runs: `volley http URL --sweep …` / `--find-max-rate --slo …`
//! (quick mode) and `volley run script.js --find-max-rate …` / `--sweep vus=…` (a script's
//! scenarios scaled). What to run and how to judge it is `volley_run::capacity`; method:
//! docs/capacity.md.

use crate::args::HttpArgs;
use crate::exit;
use clap::Args;
use std::time::Duration;
use volley_engine::{MonitorPlan, QuickConfig, RunControl};
use volley_metrics::capacity::Capacity;
use volley_metrics::RunResult;
use volley_run::capacity::{self as cap, plan::Plan, probe, slo::Slo, sweep::Sweep};

/// The search's flags, shared by `volley http` and `volley run`.
#[derive(Args, Debug, Default)]
pub struct SearchArgs {
    /// Breaking-point search: the highest rate that meets --slo (volley http: the open
    /// model's -q; volley run: the arrival-rate scenarios scaled; docs/capacity.md)
    #[arg(long, requires = "slo")]
    pub find_max_rate: bool,
    /// The service level a step must meet, e.g. 'p99<50ms,error_rate<0.1%'
    #[arg(long, value_name = "SLO")]
    pub slo: Option<String>,
    /// Search: the first probe's rate (default: 100/s; a script's own rate)
    #[arg(long, value_name = "R", value_parser = positive_rate)]
    pub start_rate: Option<f64>,
    /// Search: never probe above this rate
    #[arg(long, default_value_t = cap::plan::DEFAULT_MAX_RATE, value_name = "R", value_parser = positive_rate)]
    pub max_rate: f64,
    /// Search: stop bisecting when the bracket is this narrow, e.g. 5%
    #[arg(long, default_value = "5%", value_parser = cap::plan::tolerance)]
    pub tolerance: f64,
}

/// `volley http`'s capacity flags.
#[derive(Args, Debug, Default)]
pub struct CapacityArgs {
    /// Capacity sweep: one run per level, e.g. rate=1000:20000:1000 (open model, -q per step)
    /// or connections=10,25,50; prints a table and the knee (docs/capacity.md)
    #[arg(long, value_name = "VAR=LEVELS", conflicts_with = "find_max_rate")]
    pub sweep: Option<String>,
    #[command(flatten)]
    pub search: SearchArgs,
    /// Measured window of each sweep step
    #[arg(long, default_value = "5s", value_parser = volley_engine::parse_duration)]
    pub step_duration: Duration,
    /// Measured window of each search probe
    #[arg(long, default_value = "5s", value_parser = volley_engine::parse_duration)]
    pub probe_duration: Duration,
    /// Warm-up run at the same load before each step or probe, not measured (0s: none)
    #[arg(long, default_value = "1s", value_parser = volley_engine::parse_duration)]
    pub warmup: Duration,
}

impl CapacityArgs {
    pub fn active(&self) -> bool {
        self.sweep.is_some() || self.search.find_max_rate
    }
}

/// `volley run`'s capacity flags: the script's own durations apply.
#[derive(Args, Debug, Default)]
pub struct ScriptCapacityArgs {
    /// Capacity sweep over the script's VU executors, e.g. vus=10,20,50 (docs/capacity.md)
    #[arg(long, value_name = "vus=LEVELS", conflicts_with = "find_max_rate")]
    pub sweep: Option<String>,
    #[command(flatten)]
    pub search: SearchArgs,
}

impl ScriptCapacityArgs {
    pub fn active(&self) -> bool {
        self.sweep.is_some() || self.search.find_max_rate
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

/// What to run, from the flags: a sweep (of one of `variables`) or a search.
fn plan(sweep: Option<&str>, s: &SearchArgs, variables: &[&str]) -> Result<Plan, String> {
    let slo = s.slo.as_deref().map(Slo::parse).transpose()?;
    match (sweep, slo) {
        (Some(sw), slo) => Ok(Plan::Sweep(Sweep::parse(sw, variables)?, slo)),
        (None, Some(slo)) => Ok(Plan::Search {
            slo,
            start: s.start_rate,
            tolerance: s.tolerance,
            max_rate: s.max_rate,
        }),
        (None, None) => Err("--find-max-rate needs --slo".into()),
    }
}

/// `volley http`: the sweep or the search in quick mode.
pub fn run(
    a: &HttpArgs,
    cfg: QuickConfig,
    monitor: &MonitorPlan,
    ctl: &RunControl,
    after: volley_run::after::AfterRun,
) -> i32 {
    let c = &a.capacity;
    let one_run = [
        ("--vs", a.outputs.vs.is_some()),
        ("--out", !a.outputs.out.is_empty()),
        ("--threshold", !a.outputs.thresholds.is_empty()),
        ("--rate-stages", a.load.rate_stages.is_some()),
        ("--dashboard", a.dashboard.dashboard.is_some()),
        (
            "-q/--rate",
            a.load.rate.is_some() && c.sweep.as_deref().is_none_or(|s| s.starts_with("rate")),
        ),
    ];
    if let Some((flag, _)) = one_run.iter().find(|(_, given)| *given) {
        return exit::usage(&format!(
            "{flag} is for one run; not with --sweep or --find-max-rate (see docs/capacity.md)"
        ));
    }
    let plan = match plan(c.sweep.as_deref(), &c.search, &["rate", "connections"]) {
        Ok(p) => p,
        Err(e) => return exit::usage(&e),
    };
    let (variable, measure) = match &plan {
        Plan::Sweep(sw, _) => (sw.variable.clone(), c.step_duration),
        Plan::Search { .. } => ("rate".to_string(), c.probe_duration),
    };
    let quiet = a.outputs.quiet || a.outputs.json;
    let windows = (c.warmup, measure);
    let mut probe = probe::QuickProbe::new(cfg, &variable, monitor, ctl, windows, quiet);
    let done = plan.drive(&mut probe, |_| Ok(100.0));
    finish(done, after, (a.outputs.json, a.outputs.quiet))
}

/// `volley run`: the sweep or the search over the script's scenarios; `prepare` makes a
/// fresh run of the script for each step.
pub fn run_script<F: volley_engine::vus::VuFactory>(
    c: &ScriptCapacityArgs,
    prepare: probe::Prepare<'_, F>,
    ctl: &RunControl,
    after: volley_run::after::AfterRun,
    quiet: bool,
) -> i32 {
    use cap::scale::Knob;
    let plan = match plan(c.sweep.as_deref(), &c.search, &["vus"]) {
        Ok(p) => p,
        Err(e) => return exit::usage(&e),
    };
    let knob = match plan {
        Plan::Sweep(..) => Knob::Vus,
        Plan::Search { .. } => Knob::Rate,
    };
    let mut probe = probe::PlanProbe::new(prepare, knob, ctl, quiet);
    let base = probe.base_load();
    let done = plan.drive(&mut probe, |_| base);
    finish(done, after, (false, quiet))
}

/// Print the table (or `--json`) and the finding, then the after-run chain on the reference
/// run with the steps attached; the exit code.
fn finish(
    done: Result<(Capacity, Option<RunResult>), String>,
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
    let outcome = cap::plan::outcome(&capacity);
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
