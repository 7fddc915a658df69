//! VU scheduling: scenarios with k6's six executors, run concurrently from one pool of VUs.
//!
//! A *VU* is anything that can run iterations: the engine only sees the [`VuBody`] trait, so
//! it stays free of JavaScript (the JS runtime in `volley-js` is one implementation). Bodies
//! are made by a [`VuFactory`] *on the worker thread that runs them*, which is what lets a
//! body hold `!Send` state (a QuickJS runtime, `Rc`s).
//!
//! Threads: one worker per core, each a current-thread tokio runtime with a `LocalSet`; every
//! VU is a local task on one worker. Workers record into a thread-local [`Recorder`] (shared
//! with the bodies through [`WorkerEnv`], and given the plan's raw-output sink and series guard
//! when the worker starts, so every body gets them) and hand a snapshot to the coordinator once
//! per second; the coordinator itself records the `vus` and `vus_max` gauges. Quick mode is one
//! more body ([`crate::quick`]): its scenario is *self-paced* ([`Scenario::self_paced`]), so
//! the scheduler records none of k6's iteration or VU metrics for it.
//!
//! VUs: every scenario owns a block of VU ids (`vus_max` is the sum of what the scenarios
//! need), handed to the workers round-robin. The looping executors run one task per VU
//! (`drive::vu_loop`); the arrival-rate executors run one dispatcher per worker (`drive::arrivals`) that
//! starts its share of the iterations when they are due on an idle VU of its pool, creates VUs
//! up to `maxVUs` when none is idle, and counts `dropped_iterations` beyond that.
//!
//! Lifecycle, as k6: every VU is created (init) → [`Phase::Setup`] once on an extra VU with
//! id 0 on worker 0 → the scenarios, each from its `startTime` → [`Phase::Teardown`] on VU 0.
//! An iteration still running when its scenario ends (or when its ramping VU is ramped down)
//! gets `gracefulStop` (`gracefulRampDown`) to finish; then its [`StopToken`] fires and the
//! body must cancel what it waits on. The iteration counts as interrupted, not failed.
//! Ctrl-C/SIGTERM ends waits at once and gives requests in flight a short grace
//! ([`stop`](StopToken)); the run's [`RunStatus`](crate::control::RunStatus) tells the signal
//! handler what it waits for.
//!
//! Files: this one (plan, bodies, iterations, the executors' loops), `worker` (a worker
//! thread), `coordinate` (the coordinator), `stop` ([`StopToken`]), `state` (scenario
//! counters).

use crate::control::{RunControl, RunPhase, WaitCounts, INTERRUPT_GRACE};
pub use crate::executor::{Executor, Scenario, Stage};
use drive::{arrivals, trim_heap, vu_loop};
#[cfg(test)]
use drive::{start_offset, START_SPREAD_MAX};
pub use state::{ScenarioState, ScenarioStats};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};
use stop::HardStop;
pub use stop::StopToken;
use tokio::sync::Notify;
use volley_metrics::{
    Aggregator, Handle, MetricKey, MetricKind, MetricTotal, Recorder, Series, Snapshot, TagSet,
    Unit,
};
use worker::Pool;

/// Everything a VU run needs besides the bodies themselves.
#[derive(Clone, Debug, Default)]
pub struct VuPlan {
    /// Run concurrently, each from its `start_time` (at least one).
    pub scenarios: Vec<Scenario>,
    /// Worker threads; 0 = one per available core (never more than the VUs).
    pub threads: usize,
    /// Tags on `iterations`, `iteration_duration`, `dropped_iterations` besides each
    /// scenario's own `tags` (k6: the run's `tags`, `group`).
    pub iteration_tags: TagSet,
    /// Add k6's `scenario` system tag to those metrics.
    pub scenario_tag: bool,
    /// Targets to watch (`--monitor`): sampled on their own thread from the start of setup,
    /// reporting to the coordinator as one more worker.
    pub monitor: crate::MonitorPlan,
    /// Raw per-sample outputs (`--out json/csv`): each worker's recorder gets the sink this
    /// makes when the worker starts, whatever the body (script VUs, quick mode).
    pub sample_sink: Option<SinkMaker>,
    /// The run's cardinality guard, shared by every worker's recorder (issue #13).
    pub series_guard: Option<Arc<volley_metrics::SeriesGuard>>,
    /// The execution segment this instance runs ([`VuPlan::segmented`]); None: the whole test.
    pub segment: Option<Arc<crate::segment::Segmented>>,
    /// Holds the scenarios' start and teardown for something outside the run (a distributed
    /// run's barriers, volley-distributed); None: they go at once.
    pub gates: Option<GatesHandle>,
}

/// Lets something outside the run hold it between its phases. Polled (every few ms) on the
/// worker that runs setup, so an implementation answers at once and waits elsewhere.
pub trait Gates: Send + Sync {
    /// Setup is over (successfully): may the scenarios start?
    fn may_start(&self) -> bool;
    /// The iterations are over: may teardown run?
    fn may_teardown(&self) -> bool;
}

/// [`VuPlan::gates`]: a shared [`Gates`].
#[derive(Clone)]
pub struct GatesHandle(pub Arc<dyn Gates>);

impl std::fmt::Debug for GatesHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Gates")
    }
}

/// Makes one worker's [`SampleSink`](volley_metrics::SampleSink) (called on the worker
/// thread: a sink buffers per worker and need not be `Send`); `None` when there is nothing to
/// feed.
#[derive(Clone)]
pub struct SinkMaker(
    pub Arc<dyn Fn() -> Option<Box<dyn volley_metrics::SampleSink>> + Send + Sync>,
);

impl std::fmt::Debug for SinkMaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SinkMaker")
    }
}

impl VuPlan {
    /// VUs the run may use: the sum over its scenarios (k6's `vus_max`).
    pub fn max_vus(&self) -> u64 {
        self.scenarios.iter().map(|s| s.executor.max_vus()).sum()
    }

    /// The longest the iterations can last, graceful stops included.
    pub fn max_duration(&self) -> Duration {
        self.scenarios
            .iter()
            .map(Scenario::max_end)
            .max()
            .unwrap_or_default()
    }

    /// Scenario `i`'s VU ids are `blocks()[i] + 1 ..= blocks()[i] + max_vus`.
    fn blocks(&self) -> Vec<u64> {
        let mut at = 0;
        self.scenarios
            .iter()
            .map(|s| {
                let b = at;
                at += s.executor.max_vus();
                b
            })
            .collect()
    }
}

/// Which part of the lifecycle a [`VuBody::run`] call is.
#[derive(Clone, Debug)]
pub enum Phase {
    Setup,
    Iteration(IterCtx),
    Teardown,
}

/// What an iteration is: its scenario (an index into [`WorkerEnv::scenarios`]), its index
/// among the scenario's iterations, and when it must stop.
#[derive(Clone, Debug)]
pub struct IterCtx {
    pub scenario: usize,
    pub iteration: u64,
    pub stop: StopToken,
}

/// How one [`VuBody::run`] call ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Ok,
    /// The iteration threw; it is counted (`iteration_errors`) and the test goes on.
    Error(String),
    /// Cut short by its [`StopToken`]; counted as interrupted, not as an iteration (as k6).
    Interrupted,
    /// The whole test must stop (an exception in setup, an abort call).
    Abort(String),
}

/// What a body gets from its worker.
#[derive(Clone)]
pub struct WorkerEnv {
    pub worker: usize,
    /// This thread's recorder: record with handles, never across threads.
    pub recorder: Rc<RefCell<Recorder>>,
    /// Every scenario's spec and live counters (index = [`IterCtx::scenario`]).
    pub scenarios: Arc<Vec<ScenarioState>>,
    /// The run's execution segment: test-wide VU ids and iteration indexes
    /// (`exec.vu.idInTest`, `exec.scenario.iterationInTest`) are [`Tuple::global`] of the
    /// local ones.
    ///
    /// [`Tuple::global`]: crate::segment::Tuple::global
    pub segment: Option<Arc<crate::segment::Segmented>>,
    /// Woken when the run stops gracefully.
    stop_wake: Rc<Notify>,
    /// Per scenario: woken at its hard stop (end + gracefulStop) or the run's.
    hard_wake: Rc<Vec<Rc<HardStop>>>,
    /// Woken when the user interrupts (Ctrl-C, SIGTERM): idle waits end.
    soft_wake: Rc<HardStop>,
    hard: Arc<AtomicBool>,
    ctl: RunControl,
    /// Per worker: what its VUs wait on (for the stop message).
    waits: Arc<[WaitCounts]>,
}

impl WorkerEnv {
    /// True once all in-flight work must be abandoned (second Ctrl-C, graceful stop over).
    pub fn is_hard_stopped(&self) -> bool {
        self.hard.load(Ordering::Relaxed)
    }

    /// The user interrupted the run (Ctrl-C, SIGTERM): VU init code stops too.
    pub fn is_interrupted(&self) -> bool {
        self.ctl.was_interrupted()
    }

    /// The run's control: a self-paced body stops it at its own deadline (quick mode's `-z`).
    pub(crate) fn ctl(&self) -> &RunControl {
        &self.ctl
    }

    /// Test-wide id (1-based) of local VU `id` (k6's `exec.vu.idInTest`).
    pub fn vu_id_in_test(&self, id: u64) -> u64 {
        match (&self.segment, id) {
            (Some(s), 1..) => s.tuple.global(id - 1) + 1,
            _ => id,
        }
    }

    /// Test-wide index of local iteration `i` (k6's `exec.scenario.iterationInTest`).
    pub fn iteration_in_test(&self, i: u64) -> u64 {
        self.segment.as_ref().map_or(i, |s| s.tuple.global(i))
    }

    /// This worker's wait counters: a body counts its waits here (requests, sleeps).
    pub fn waits(&self) -> &WaitCounts {
        &self.waits[self.worker]
    }

    /// The stop signal of `setup()` (`teardown: false`) or `teardown()`: the phase's
    /// timeout, the user's interrupt (setup: at once; teardown: after a grace, as k6 still
    /// runs teardown after Ctrl-C), a hard stop.
    pub fn lifecycle_token(&self, timeout: Duration, teardown: bool) -> StopToken {
        StopToken::lifecycle(self.ctl.clone(), timeout, !teardown)
    }

    /// The stop signal of an iteration of scenario `sc` that must end by `hard_at`
    /// (`scenario_hard`: the scenario's own hard stop, which the watcher signals).
    fn token(&self, sc: usize, hard_at: Instant, scenario_hard: Instant) -> StopToken {
        let grace = self.scenarios[sc].spec.graceful_stop.min(INTERRUPT_GRACE);
        StopToken {
            hard_at: Some(hard_at),
            own_timer: hard_at < scenario_hard,
            global: self.hard.clone(),
            wake: self.hard_wake[sc].clone(),
            soft_wake: self.soft_wake.clone(),
            ctl: self.ctl.clone(),
            soft: true,
            grace,
            begun: Instant::now(),
            poll: false,
        }
    }
}

/// A VU: runs the lifecycle phases, one call at a time.
pub trait VuBody {
    fn run(&mut self, phase: Phase) -> impl Future<Output = Outcome>;
}

/// Makes VUs. Called on the worker thread that will run the VU; `id` 0 is the
/// setup/teardown VU (no scenario), iteration VUs are 1..=vus_max, each in one scenario.
pub trait VuFactory: Send + Sync + 'static {
    type Body: VuBody + 'static;
    fn create(
        &self,
        env: &WorkerEnv,
        id: u64,
        scenario: Option<usize>,
    ) -> Result<Self::Body, String>;

    /// Did a body ask the test to stop (k6's `exec.test.abort()`), as opposed to failing?
    /// An abort in setup is then an abort, not a script error.
    fn aborted_by_body(&self) -> bool {
        false
    }
}

/// Where the run ended up.
#[derive(Debug)]
pub struct VuRunResult {
    pub metrics: Vec<MetricTotal>,
    pub series: Series,
    /// Start of setup to the end of the last iteration (the rate denominator).
    pub elapsed: Duration,
    pub started: SystemTime,
    pub ended: SystemTime,
    pub interrupted: bool,
    /// Why the test stopped early (init, setup or an abort), with the phase's name.
    pub aborted: Option<(String, String)>,
    /// An error in teardown (the result is still complete).
    pub teardown_error: Option<String>,
    pub scenarios: Vec<ScenarioStats>,
}

enum Msg {
    Ready {
        err: Option<String>,
    },
    Snapshot {
        worker: usize,
        interval: u64,
        snap: Snapshot,
    },
    IterationsDone,
    Done {
        worker: usize,
    },
}

const WAIT: u8 = 0;
const GO: u8 = 1;
const ABORT: u8 = 2;

/// State shared by the coordinator and every worker.
struct Shared<F> {
    plan: VuPlan,
    factory: Arc<F>,
    ctl: RunControl,
    threads: usize,
    /// Workers proceed past init when this is GO (ABORT: tear down quietly).
    start_gate: AtomicU8,
    start: OnceLock<Instant>,
    /// Setup finished (GO) or failed (ABORT); set by worker 0.
    setup_gate: AtomicU8,
    /// When the scenarios' clock starts (set by worker 0 when setup is done).
    t0: OnceLock<Instant>,
    teardown_gate: AtomicBool,
    hard: Arc<AtomicBool>,
    scen: Arc<Vec<ScenarioState>>,
    blocks: Vec<u64>,
    active: AtomicU64,
    /// Most VUs active at once since the coordinator last recorded the gauge.
    peak: AtomicU64,
    /// Iteration VUs created so far (k6's `vus_max`).
    initialized: AtomicU64,
    aborted: std::sync::Mutex<Option<(String, String)>>,
    teardown_error: std::sync::Mutex<Option<String>>,
    waits: Arc<[WaitCounts]>,
}

impl<F> Shared<F> {
    /// Tell the signal handler where the run is; a self-paced run (quick mode) has no k6
    /// lifecycle to describe, so a Ctrl-C there keeps the generic words.
    fn set_phase(&self, p: RunPhase) {
        if self.plan.scenarios.iter().any(|s| !s.self_paced) {
            self.ctl.status().set_phase(p);
        }
    }

    fn owner(&self, id: u64) -> usize {
        ((id - 1) % self.threads as u64) as usize
    }

    fn abort(&self, phase: &str, e: String) {
        let mut a = self.aborted.lock().unwrap();
        if a.is_none() {
            *a = Some((phase.into(), e));
        }
        drop(a);
        self.ctl.stop();
    }
}

/// Run `plan` with VUs from `factory`. Ctrl-C on `user_ctl` stops gracefully (iterations
/// finish), a hard stop cancels in-flight work.
pub fn run_vus<F: VuFactory>(
    plan: &VuPlan,
    factory: Arc<F>,
    user_ctl: &RunControl,
) -> Result<VuRunResult, String> {
    run_vus_with(plan, factory, user_ctl, None)
}

/// What the coordinator shows a [`TickHook`] once per second of run time.
pub struct Tick<'a> {
    pub agg: &'a Aggregator,
    /// Since the start of setup.
    pub elapsed: Duration,
    pub scenarios: &'a [ScenarioState],
    pub vus: u64,
    pub vus_max: u64,
}

/// Called by the coordinator once per second of run time; returning `true` stops the test
/// gracefully (k6 `abortOnFail` thresholds).
pub type TickHook<'a> = &'a mut dyn FnMut(&Tick<'_>) -> bool;

/// [`run_vus`] with a [`TickHook`].
pub fn run_vus_with<F: VuFactory>(
    plan: &VuPlan,
    factory: Arc<F>,
    user_ctl: &RunControl,
    hook: Option<TickHook<'_>>,
) -> Result<VuRunResult, String> {
    if plan.scenarios.is_empty() {
        return Err("no scenarios to run".into());
    }
    let ctl = user_ctl.child();
    let max_vus = plan.max_vus();
    // A connection per VU (plus the process's own files): as Go does for k6, take the
    // open-file hard limit; say so when even that is too low.
    if let Err(w) = crate::sys::raise_open_files(max_vus.saturating_add(256)) {
        crate::log::log(crate::log::Level::Warn, &w, &[]);
    }
    let threads = match plan.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .clamp(1, max_vus.max(1) as usize);
    let status = ctl.status();
    if plan.scenarios.iter().any(|s| !s.self_paced) {
        status.set_phase(RunPhase::Init);
    }
    status.vus_created.store(0, Ordering::Relaxed);
    let planned: u64 = plan
        .scenarios
        .iter()
        .map(|s| s.executor.initial_vus())
        .sum();
    status.vus_planned.store(planned, Ordering::Relaxed);
    let waits = status.new_workers(threads);
    let shared = Arc::new(Shared {
        plan: plan.clone(),
        factory,
        ctl: ctl.clone(),
        threads,
        start_gate: AtomicU8::new(WAIT),
        start: OnceLock::new(),
        setup_gate: AtomicU8::new(WAIT),
        t0: OnceLock::new(),
        teardown_gate: AtomicBool::new(false),
        hard: Arc::new(AtomicBool::new(false)),
        scen: Arc::new(
            plan.scenarios
                .iter()
                .cloned()
                .map(ScenarioState::new)
                .collect(),
        ),
        blocks: plan.blocks(),
        active: AtomicU64::new(0),
        peak: AtomicU64::new(0),
        initialized: AtomicU64::new(0),
        aborted: Default::default(),
        teardown_error: Default::default(),
        waits,
    });
    let started = SystemTime::now();
    let (tx, rx) = mpsc::channel();
    let mut joins = Vec::new();
    for w in 0..threads {
        let (wtx, wshared) = (tx.clone(), shared.clone());
        let j = std::thread::Builder::new()
            .name(format!("volley-vu-{w}"))
            .spawn(move || worker::worker(w, wshared, wtx));
        match j {
            Ok(j) => joins.push(j),
            Err(e) => {
                // Let the workers already started wind down before reporting.
                shared.start_gate.store(ABORT, Ordering::SeqCst);
                drop(tx);
                for j in joins {
                    let _ = j.join();
                }
                return Err(format!("cannot start worker thread: {e}"));
            }
        }
    }
    // The monitor sampler reports through the same channel (see `coordinate`).
    let monitor_tx = (!plan.monitor.specs.is_empty()).then(|| tx.clone());
    drop(tx);
    let result = coordinate::coordinate(&shared, rx, started, hook, monitor_tx);
    for j in joins {
        let _ = j.join();
    }
    shared.set_phase(RunPhase::Finishing);
    Ok(result)
}

/// When scenario `sc`'s iterations are interrupted: its end plus its `gracefulStop`.
fn scenario_hard<F>(s: &Shared<F>, sc: usize, t0: Instant) -> Instant {
    let spec = &s.plan.scenarios[sc];
    t0 + spec.start_time + spec.executor.duration() + spec.graceful_stop
}

/// A scenario's iteration metrics on one worker, resolved once (None: a self-paced
/// scenario, which records none).
struct IterHandles(Option<IterMetrics>);

struct IterMetrics {
    iterations: Handle,
    duration: Handle,
    errors: Handle,
    dropped: Handle,
    /// Arrival-rate only: from the time the iteration was due (coordinated omission).
    corrected: Option<Handle>,
}

impl IterHandles {
    fn new<F>(s: &Shared<F>, env: &WorkerEnv, sc: usize) -> IterHandles {
        let spec = &s.plan.scenarios[sc];
        if spec.self_paced {
            return IterHandles(None);
        }
        let mut tags = s.plan.iteration_tags.clone();
        for (k, v) in &spec.tags {
            tags.insert(k.clone(), v.clone());
        }
        if s.plan.scenario_tag {
            tags.insert("scenario".into(), spec.name.clone());
        }
        let mut rec = env.recorder.borrow_mut();
        let mut handle = |name: &str, kind, unit| {
            rec.handle(
                MetricKey {
                    name: name.to_string(),
                    tags: tags.clone(),
                },
                kind,
                unit,
            )
        };
        IterHandles(Some(IterMetrics {
            iterations: handle("iterations", MetricKind::Counter, Unit::Default),
            duration: handle(
                volley_metrics::names::ITERATION_DURATION,
                MetricKind::Trend,
                Unit::Time,
            ),
            errors: handle(
                volley_metrics::names::ITERATION_ERRORS,
                MetricKind::Counter,
                Unit::Default,
            ),
            dropped: handle(
                volley_metrics::names::DROPPED_ITERATIONS,
                MetricKind::Counter,
                Unit::Default,
            ),
            corrected: spec.executor.arrivals().map(|_| {
                handle(
                    volley_metrics::names::ITERATION_DURATION_CORRECTED,
                    MetricKind::Trend,
                    Unit::Time,
                )
            }),
        }))
    }
}

/// Run one iteration of scenario `sc` on `body` and account for it. `due`: when an
/// arrival-rate executor wanted it to start.
#[allow(clippy::too_many_arguments)]
async fn run_iteration<F: VuFactory>(
    s: &Shared<F>,
    env: &WorkerEnv,
    h: &IterHandles,
    sc: usize,
    body: &mut F::Body,
    iteration: u64,
    hard_at: Instant,
    due: Option<Instant>,
) -> Outcome {
    let st = &s.scen[sc];
    let n = s.active.fetch_add(1, Ordering::Relaxed) + 1;
    s.peak.fetch_max(n, Ordering::Relaxed);
    st.active.fetch_add(1, Ordering::Relaxed);
    let began = Instant::now();
    let t0 = *s.t0.get().expect("set before the scenarios start");
    let ctx = IterCtx {
        scenario: sc,
        iteration,
        stop: env.token(sc, hard_at, scenario_hard(s, sc, t0)),
    };
    let outcome = body.run(Phase::Iteration(ctx)).await;
    let ended = Instant::now();
    st.active.fetch_sub(1, Ordering::Relaxed);
    s.active.fetch_sub(1, Ordering::Relaxed);
    let mut rec = env.recorder.borrow_mut();
    match &outcome {
        Outcome::Interrupted => {
            st.interrupted.fetch_add(1, Ordering::Relaxed);
        }
        Outcome::Abort(e) => {
            drop(rec);
            s.abort("iteration", e.clone());
        }
        Outcome::Ok | Outcome::Error(_) => {
            st.completed.fetch_add(1, Ordering::Relaxed);
            if let Some(h) = &h.0 {
                if matches!(outcome, Outcome::Error(_)) {
                    rec.add(h.errors, 1.0);
                }
                rec.add(h.iterations, 1.0);
                rec.trend_us(h.duration, (ended - began).as_micros() as u64);
                if let (Some(c), Some(due)) = (h.corrected, due) {
                    rec.trend_us(c, ended.saturating_duration_since(due).as_micros() as u64);
                }
            }
        }
    }
    outcome
}

mod coordinate;
mod drive;
#[cfg(test)]
mod segment_tests;
mod state;
mod stop;
#[cfg(test)]
mod tests;
mod worker;
