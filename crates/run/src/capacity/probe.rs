//! The probes: [`QuickProbe`] (`volley http --sweep/--find-max-rate`, `volley demo`) runs a
//! warm-up run and then the measured run at the step's load; [`PlanProbe`] (`volley run
//! script.js --find-max-rate/--sweep vus=…`) runs a freshly prepared plan scaled to the load
//! ([`super::scale`]). Each run is an ordinary run of the run layer ([`crate::execute`]);
//! after an overloaded step both rest so the target's queue drains before the next one.

use super::busy::BusyWatch;
use super::scale::{scale_to, Knob};
use super::{load_text, rate_text, Probe, Probed};
use std::time::{Duration, Instant};
use volley_engine::quick::QuickFactory;
use volley_engine::vus::VuFactory;
use volley_engine::{MonitorPlan, QuickConfig, RateSchedule, RunControl};
use volley_metrics::capacity::Step;

/// Longest pause between steps.
const MAX_REST: Duration = Duration::from_secs(10);

/// Runs quick mode at one load.
pub struct QuickProbe<'a> {
    pub base: QuickConfig,
    /// `rate` (sets `-q`) or `connections` (sets `-c`).
    pub variable: String,
    pub monitor: &'a MonitorPlan,
    pub ctl: &'a RunControl,
    pub warmup: Duration,
    pub measure: Duration,
    pace: Pace,
}

/// Progress lines and the rest between steps, shared by the probes.
struct Pace {
    variable: String,
    /// No progress lines on stderr.
    quiet: bool,
    /// A pause before the next step: an overloaded step leaves a queue at the target that
    /// would otherwise spill into the next one.
    rest: Duration,
}

impl Pace {
    fn before(&mut self, ctl: &RunControl, load: f64, role: &str) {
        let until = Instant::now() + std::mem::take(&mut self.rest);
        while Instant::now() < until && !ctl.is_stopped() {
            std::thread::sleep(Duration::from_millis(50));
        }
        if !self.quiet {
            eprint!("  {} ({role}) …", load_text(&self.variable, load));
        }
    }

    fn after(&mut self, s: &Step) {
        let overloaded = s.slo_ok == Some(false)
            || (self.variable == "rate" && s.throughput < super::judge::SUSTAINED * s.load);
        if overloaded {
            // The target's queue holds at most about its worst latency of work.
            self.rest = Duration::from_secs_f64(s.max_ms / 1000.0).min(MAX_REST);
        }
        if self.quiet {
            return;
        }
        let verdict = match s.slo_ok {
            Some(true) => "SLO ok".to_string(),
            Some(false) => format!("SLO broken: {}", s.why),
            None => s.why.clone(),
        };
        eprintln!(
            " {} p99 {} errors {}% {verdict}",
            rate_text(s.throughput),
            volley_metrics::fmt::ms(s.p99_ms),
            volley_metrics::fmt::short(s.error_rate * 100.0)
        );
    }
}

/// Worker threads a plan of `threads` (0: one per core) runs on.
fn worker_threads(threads: usize) -> usize {
    match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// Run `spec` watching the generator's threads.
fn measured<F: VuFactory>(
    mut spec: crate::RunSpec<F>,
    ctl: &RunControl,
    comparable: bool,
) -> Result<Probed, String> {
    let threads = worker_threads(spec.plan.threads);
    let (watch, busy) = BusyWatch::new(threads);
    spec.observers.push(Box::new(watch));
    let result = crate::execute(spec, ctl)
        .map(|f| f.result)
        .map_err(|o| format!("{o:?}"))?;
    let generator_busy = *busy.lock().unwrap_or_else(|e| e.into_inner());
    Ok(Probed {
        result,
        generator_busy,
        threads,
        comparable,
    })
}

impl<'a> QuickProbe<'a> {
    pub fn new(
        base: QuickConfig,
        variable: &str,
        monitor: &'a MonitorPlan,
        ctl: &'a RunControl,
        (warmup, measure): (Duration, Duration),
        quiet: bool,
    ) -> QuickProbe<'a> {
        QuickProbe {
            base,
            variable: variable.to_string(),
            monitor,
            ctl,
            warmup,
            measure,
            pace: Pace {
                variable: variable.to_string(),
                quiet,
                rest: Duration::ZERO,
            },
        }
    }

    fn config(&self, load: f64, d: Duration) -> QuickConfig {
        let mut c = self.base.clone();
        match self.variable.as_str() {
            "rate" => c.rate = Some(RateSchedule::constant(load)),
            _ => {
                c.connections = load as usize;
                c.max_connections = c.max_connections.max(c.connections);
            }
        }
        c.duration = Some(d);
        c.requests = None;
        c
    }
}

/// Quick mode as a run of the run layer, without outputs or thresholds (a step is judged by
/// the capacity module, and `--out` is not offered with sweeps and searches).
fn spec(cfg: &QuickConfig, monitor: &MonitorPlan) -> Result<crate::RunSpec<QuickFactory>, String> {
    let (plan, factory) = volley_engine::quick::plan(cfg, monitor)?;
    let shaper = factory.clone();
    Ok(crate::RunSpec {
        plan,
        factory,
        thresholds: vec![],
        outputs: crate::outputs::Outputs::start(&[])?,
        json_out: None,
        observers: vec![],
        meta: volley_metrics::RunMeta::new(volley_engine::quick::RUN_KIND, cfg.url.clone(), vec![]),
        options: Default::default(),
        late_options: None,
        result_of: Some(Box::new(move |r| shaper.result(r))),
    })
}

impl Probe for QuickProbe<'_> {
    fn run(&mut self, load: f64, role: &str) -> Result<Probed, String> {
        self.pace.before(self.ctl, load, role);
        if !self.warmup.is_zero() {
            let warm = spec(&self.config(load, self.warmup), &MonitorPlan::default())?;
            crate::execute(warm, self.ctl).map_err(|o| format!("{o:?}"))?;
        }
        let cfg = self.config(load, self.measure);
        measured(spec(&cfg, self.monitor)?, self.ctl, self.variable == "rate")
    }

    fn stopped(&self) -> bool {
        self.ctl.is_stopped()
    }

    fn step_done(&mut self, s: &Step) {
        self.pace.after(s);
    }
}

/// Prepares a fresh run of the plan (a script's init code runs each time).
pub type Prepare<'a, F> = Box<dyn FnMut() -> Result<crate::RunSpec<F>, String> + 'a>;

/// Runs a prepared plan (a k6 script) scaled to each step's load; the script's own
/// durations apply.
pub struct PlanProbe<'a, F: VuFactory> {
    prepare: Prepare<'a, F>,
    knob: Knob,
    ctl: &'a RunControl,
    pace: Pace,
}

impl<'a, F: VuFactory> PlanProbe<'a, F> {
    pub fn new(prepare: Prepare<'a, F>, knob: Knob, ctl: &'a RunControl, quiet: bool) -> Self {
        PlanProbe {
            prepare,
            knob,
            ctl,
            pace: Pace {
                variable: knob.variable().to_string(),
                quiet,
                rest: Duration::ZERO,
            },
        }
    }

    /// The load the script offers as written (the search's default start).
    pub fn base_load(&mut self) -> Result<f64, String> {
        let spec = (self.prepare)()?;
        Ok(super::scale::load(&spec.plan.scenarios, self.knob))
    }
}

impl<F: VuFactory> Probe for PlanProbe<'_, F> {
    fn run(&mut self, load: f64, role: &str) -> Result<Probed, String> {
        self.pace.before(self.ctl, load, role);
        let mut spec = (self.prepare)()?;
        scale_to(&mut spec.plan.scenarios, self.knob, load)?;
        // Iterations per second and VUs are not requests per second: the load is judged as
        // sustained by its dropped iterations instead.
        measured(spec, self.ctl, false)
    }

    fn stopped(&self) -> bool {
        self.ctl.is_stopped()
    }

    fn step_done(&mut self, s: &Step) {
        self.pace.after(s);
    }
}
