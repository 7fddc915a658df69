//! The quick-mode probe (`volley http --sweep/--find-max-rate`, `volley demo`): one step is
//! a warm-up run and then the measured run at the step's load, each an ordinary run of the
//! run layer ([`crate::execute`]); after an overloaded step it rests so the target's queue
//! drains before the next one.

use super::busy::BusyWatch;
use super::{load_text, rate_text, Probe, Probed};
use std::time::{Duration, Instant};
use volley_engine::quick::QuickFactory;
use volley_engine::{MonitorPlan, QuickConfig, RateSchedule, RunControl};
use volley_metrics::capacity::Step;
use volley_metrics::RunResult;

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
    /// No progress lines on stderr.
    pub quiet: bool,
    /// A pause before the next step: an overloaded step leaves a queue at the target that
    /// would otherwise spill into the next one.
    rest: Duration,
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
            quiet,
            rest: Duration::ZERO,
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

    fn once(
        &self,
        cfg: &QuickConfig,
        monitor: &MonitorPlan,
        watch: Option<BusyWatch>,
    ) -> Result<RunResult, String> {
        let spec = spec(cfg, monitor, watch)?;
        crate::execute(spec, self.ctl)
            .map(|f| f.result)
            .map_err(|o| format!("{o:?}"))
    }
}

/// Quick mode as a run of the run layer, without outputs or thresholds (a step is judged by
/// the capacity module, and `--out` is not offered with sweeps and searches).
fn spec(
    cfg: &QuickConfig,
    monitor: &MonitorPlan,
    watch: Option<BusyWatch>,
) -> Result<crate::RunSpec<QuickFactory>, String> {
    let (plan, factory) = volley_engine::quick::plan(cfg, monitor)?;
    let shaper = factory.clone();
    let observers: Vec<Box<dyn crate::Observer>> = match watch {
        Some(w) => vec![Box::new(w)],
        None => vec![],
    };
    Ok(crate::RunSpec {
        plan,
        factory,
        thresholds: vec![],
        outputs: crate::outputs::Outputs::start(&[])?,
        json_out: None,
        observers,
        meta: volley_metrics::RunMeta::new(volley_engine::quick::RUN_KIND, cfg.url.clone(), vec![]),
        options: Default::default(),
        late_options: None,
        result_of: Some(Box::new(move |r| shaper.result(r))),
    })
}

impl Probe for QuickProbe<'_> {
    fn run(&mut self, load: f64, role: &str) -> Result<Probed, String> {
        let rest_until = Instant::now() + std::mem::take(&mut self.rest);
        while Instant::now() < rest_until && !self.ctl.is_stopped() {
            std::thread::sleep(Duration::from_millis(50));
        }
        if !self.quiet {
            eprint!("  {} ({role}) …", load_text(&self.variable, load));
        }
        if !self.warmup.is_zero() {
            self.once(
                &self.config(load, self.warmup),
                &MonitorPlan::default(),
                None,
            )?;
        }
        let cfg = self.config(load, self.measure);
        let threads = match cfg.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let (watch, busy) = BusyWatch::new(threads);
        let result = self.once(&cfg, self.monitor, Some(watch))?;
        let generator_busy = *busy.lock().unwrap_or_else(|e| e.into_inner());
        Ok(Probed {
            result,
            generator_busy,
            threads,
        })
    }

    fn stopped(&self) -> bool {
        self.ctl.is_stopped()
    }

    fn step_done(&mut self, s: &Step) {
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
