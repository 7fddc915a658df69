//! VU scheduling: scenarios with k6's six executors, run concurrently from one pool of VUs.
//!
//! A *VU* is anything that can run iterations: the engine only sees the [`VuBody`] trait, so
//! it stays free of JavaScript (the JS runtime in `volley-js` is one implementation). Bodies
//! are made by a [`VuFactory`] *on the worker thread that runs them*, which is what lets a
//! body hold `!Send` state (a QuickJS runtime, `Rc`s).
//!
//! Threads: one worker per core, each a current-thread tokio runtime with a `LocalSet`; every
//! VU is a local task on one worker. Workers record into a thread-local [`Recorder`] (shared
//! with the bodies through [`WorkerEnv`]) and hand a snapshot to the coordinator once per
//! second, as quick mode does; the coordinator itself records the `vus` and `vus_max` gauges.
//!
//! VUs: every scenario owns a block of VU ids (`vus_max` is the sum of what the scenarios
//! need), handed to the workers round-robin. The looping executors run one task per VU
//! ([`vu_loop`]); the arrival-rate executors run one dispatcher per worker ([`arrivals`]) that
//! starts its share of the iterations when they are due on an idle VU of its pool, creates VUs
//! up to `maxVUs` when none is idle, and counts `dropped_iterations` beyond that.
//!
//! Lifecycle, as k6: every VU is created (init) → [`Phase::Setup`] once on an extra VU with
//! id 0 on worker 0 → the scenarios, each from its `startTime` → [`Phase::Teardown`] on VU 0.
//! An iteration still running when its scenario ends (or when its ramping VU is ramped down)
//! gets `gracefulStop` (`gracefulRampDown`) to finish; then its [`StopToken`] fires and the
//! body must cancel what it waits on. The iteration counts as interrupted, not failed.

use crate::control::RunControl;
pub use crate::executor::{Executor, Scenario, Stage};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::Notify;
use volley_metrics::{
    Aggregator, Handle, MetricKey, MetricKind, MetricTotal, Recorder, Series, Snapshot, TagSet,
    Unit,
};

/// Everything a VU run needs besides the bodies themselves.
#[derive(Clone, Debug)]
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
    /// reporting to the coordinator as one more worker, as in quick mode.
    pub monitor: crate::MonitorPlan,
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

/// A scenario's live counters, readable by bodies (`k6/execution`) and the progress display.
#[derive(Debug)]
pub struct ScenarioState {
    pub spec: Scenario,
    started: OnceLock<(Instant, SystemTime)>,
    /// Iterations handed out (the next one's index in the scenario).
    next: AtomicU64,
    completed: AtomicU64,
    interrupted: AtomicU64,
    dropped: AtomicU64,
    active: AtomicU64,
}

impl ScenarioState {
    fn new(spec: Scenario) -> ScenarioState {
        ScenarioState {
            spec,
            started: OnceLock::new(),
            next: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            interrupted: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            active: AtomicU64::new(0),
        }
    }

    /// When the scenario started (None before its `startTime`).
    pub fn started(&self) -> Option<(Instant, SystemTime)> {
        self.started.get().copied()
    }

    pub fn completed(&self) -> u64 {
        self.completed.load(Ordering::Relaxed)
    }

    pub fn interrupted(&self) -> u64 {
        self.interrupted.load(Ordering::Relaxed)
    }

    /// Iterations the arrival-rate executors could not start (no VU free, `maxVUs` reached).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// VUs inside an iteration now.
    pub fn active(&self) -> u64 {
        self.active.load(Ordering::Relaxed)
    }

    /// Past its duration, or all its iterations done.
    pub fn has_ended(&self) -> bool {
        let exhausted = self
            .spec
            .executor
            .total_iterations()
            .is_some_and(|n| self.completed() + self.interrupted() >= n);
        exhausted
            || self
                .started()
                .is_some_and(|(t, _)| t.elapsed() >= self.spec.executor.duration())
    }

    /// 0..1: iterations done of the total for iteration-based executors, time elapsed of the
    /// duration for the others (k6's `exec.scenario.progress`).
    pub fn progress(&self) -> f64 {
        let Some((t, _)) = self.started() else {
            return 0.0;
        };
        let p = match self.spec.executor.total_iterations() {
            Some(n) if n > 0 => {
                let by_iter = (self.completed() + self.interrupted()) as f64 / n as f64;
                let by_time = t.elapsed().as_secs_f64()
                    / self.spec.executor.duration().as_secs_f64().max(1e-9);
                by_iter.max(by_time)
            }
            _ => t.elapsed().as_secs_f64() / self.spec.executor.duration().as_secs_f64().max(1e-9),
        };
        p.clamp(0.0, 1.0)
    }
}

/// A scenario's final counts.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioStats {
    pub name: String,
    pub executor: &'static str,
    pub completed: u64,
    pub interrupted: u64,
    pub dropped: u64,
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

/// Tells an iteration that it must give up what it waits on: its graceful time is over, or
/// the whole run is stopping hard (second Ctrl-C, graceful stop over after an abort).
#[derive(Clone, Debug)]
pub struct StopToken {
    hard_at: Option<Instant>,
    /// `hard_at` comes before the scenario's own hard stop (a ramp-down), so waiting needs a
    /// timer; otherwise the worker's watcher wakes `wake` at the scenario's hard stop, which
    /// spares every request a timer of its own.
    own_timer: bool,
    global: Arc<AtomicBool>,
    wake: Rc<HardStop>,
}

/// A scenario's hard stop on one worker, as its watcher saw it.
#[derive(Debug, Default)]
struct HardStop {
    notify: Notify,
    /// Set by the watcher when it wakes `notify` (its hard stop has passed).
    fired: Cell<bool>,
}

impl StopToken {
    /// Cheap enough for a JS interrupt handler: an atomic load and a clock read. (The
    /// clock, not the watcher's flag: a busy script keeps the watcher from running.)
    pub fn is_stopped(&self) -> bool {
        self.global.load(Ordering::Relaxed)
            || self.wake.fired.get()
            || self.hard_at.is_some_and(|t| Instant::now() >= t)
    }

    /// [`StopToken::is_stopped`] as the watcher saw it: no clock read unless this token has
    /// a deadline of its own. For waits, which let the watcher run.
    fn is_stopped_waiting(&self) -> bool {
        self.global.load(Ordering::Relaxed)
            || self.wake.fired.get()
            || (self.own_timer && self.hard_at.is_some_and(|t| Instant::now() >= t))
    }

    /// Completes when the token is stopped (at the latest one watcher tick, 20 ms, after
    /// [`StopToken::is_stopped`] became true). Every request and sleep of a VU waits on this
    /// beside its own future, so it reads no clock in the common case.
    pub async fn stopped(&self) {
        loop {
            let n = self.wake.notify.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if self.is_stopped_waiting() {
                return;
            }
            match self.hard_at.filter(|_| self.own_timer) {
                Some(t) => {
                    tokio::select! {
                        _ = n => {}
                        _ = tokio::time::sleep_until(t.into()) => {}
                    }
                }
                None => n.await,
            }
        }
    }
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
    /// Woken when the run stops gracefully.
    stop_wake: Rc<Notify>,
    /// Per scenario: woken at its hard stop (end + gracefulStop) or the run's.
    hard_wake: Rc<Vec<Rc<HardStop>>>,
    hard: Arc<AtomicBool>,
}

impl WorkerEnv {
    /// True once all in-flight work must be abandoned (second Ctrl-C, graceful stop over).
    pub fn is_hard_stopped(&self) -> bool {
        self.hard.load(Ordering::Relaxed)
    }

    /// The stop signal of an iteration of scenario `sc` that must end by `hard_at`
    /// (`scenario_hard`: the scenario's own hard stop, which the watcher signals).
    fn token(&self, sc: usize, hard_at: Instant, scenario_hard: Instant) -> StopToken {
        StopToken {
            hard_at: Some(hard_at),
            own_timer: hard_at < scenario_hard,
            global: self.hard.clone(),
            wake: self.hard_wake[sc].clone(),
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
}

impl<F> Shared<F> {
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
    let threads = match plan.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .clamp(1, max_vus.max(1) as usize);
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
    });
    let started = SystemTime::now();
    let (tx, rx) = mpsc::channel();
    let mut joins = Vec::new();
    for w in 0..threads {
        let (wtx, wshared) = (tx.clone(), shared.clone());
        let j = std::thread::Builder::new()
            .name(format!("volley-vu-{w}"))
            .spawn(move || worker(w, wshared, wtx));
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
    let result = coordinate(&shared, rx, started, hook, monitor_tx);
    for j in joins {
        let _ = j.join();
    }
    Ok(result)
}

fn coordinate<F: VuFactory>(
    s: &Shared<F>,
    rx: mpsc::Receiver<Msg>,
    started: SystemTime,
    mut hook: Option<TickHook<'_>>,
    monitor_tx: Option<mpsc::Sender<Msg>>,
) -> VuRunResult {
    let threads = s.threads;
    // The coordinator is the aggregator's extra "worker" for the vus gauges; the monitor
    // sampler, when there is one, the next.
    let me = threads;
    let workers = threads + 1 + usize::from(monitor_tx.is_some());
    let mut agg = Aggregator::new(workers, volley_metrics::series::DEFAULT_MAX_POINTS);
    let mut rec = Recorder::new();
    let vus_h = rec.handle(MetricKey::new("vus"), MetricKind::Gauge, Unit::Default);
    let vus_max_h = rec.handle(MetricKey::new("vus_max"), MetricKind::Gauge, Unit::Default);

    // Init: every worker creates its VUs.
    let mut ready = 0;
    let mut init_err = None;
    while ready < threads {
        match rx.recv() {
            Ok(Msg::Ready { err, .. }) => {
                ready += 1;
                if init_err.is_none() {
                    init_err = err;
                }
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    if let Some(e) = init_err {
        *s.aborted.lock().unwrap() = Some(("init".into(), e));
        s.start_gate.store(ABORT, Ordering::SeqCst);
    } else {
        let _ = s.start.set(Instant::now());
        s.start_gate.store(GO, Ordering::SeqCst);
    }
    let start = *s.start.get_or_init(Instant::now);
    let monitor_stop = Arc::new(AtomicBool::new(false));
    let sampler = monitor_tx.and_then(|tx| spawn_monitor(s, tx, start, &monitor_stop));
    if sampler.is_none() {
        // No sampler (none asked for, or it could not start): nothing to wait for.
        agg.worker_done(me + 1);
    }
    // After a stop (Ctrl-C, abort), each scenario's iterations get its own gracefulStop (the
    // workers' watchers interrupt them); the run itself ends at the longest one at the latest.
    let grace = s
        .plan
        .scenarios
        .iter()
        .map(|x| x.graceful_stop)
        .max()
        .unwrap_or(crate::executor::GRACEFUL_STOP);

    let mut done = vec![false; threads];
    let mut iter_done = 0;
    let mut ticks = 0u64;
    let mut stop_at: Option<Instant> = None;
    let mut elapsed = None;
    while done.iter().any(|d| !d) {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Msg::Snapshot {
                worker,
                interval,
                snap,
            }) => agg.add(worker, interval, snap),
            Ok(Msg::IterationsDone) => {
                iter_done += 1;
                if iter_done == threads {
                    elapsed = Some(start.elapsed());
                    s.teardown_gate.store(true, Ordering::SeqCst);
                }
            }
            Ok(Msg::Done { worker }) => {
                done[worker] = true;
                agg.worker_done(worker);
            }
            Ok(Msg::Ready { .. }) => {}
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        let now = Instant::now();
        if s.ctl.is_stopped() && stop_at.is_none() {
            stop_at = Some(now);
        }
        let graceful_over = stop_at.is_some_and(|t| now >= t + grace);
        if (graceful_over || s.ctl.is_hard_stopped()) && !s.hard.load(Ordering::Relaxed) {
            s.hard.store(true, Ordering::SeqCst);
        }
        // The vus gauges, once per second of run time.
        while now >= start + Duration::from_secs(ticks + 1) && elapsed.is_none() {
            let now_active = s.active.load(Ordering::Relaxed);
            let peak = s.peak.swap(now_active, Ordering::Relaxed).max(now_active);
            let vus_max = s.initialized.load(Ordering::Relaxed);
            rec.add(vus_h, peak as f64);
            rec.add(vus_max_h, vus_max as f64);
            agg.add(me, ticks, rec.snapshot());
            ticks += 1;
            if let Some(h) = hook.as_mut() {
                let tick = Tick {
                    agg: &agg,
                    elapsed: start.elapsed(),
                    scenarios: &s.scen,
                    vus: now_active,
                    vus_max,
                };
                if h(&tick) && !s.ctl.is_stopped() {
                    s.ctl.stop();
                }
            }
        }
    }
    if ticks == 0 && s.start_gate.load(Ordering::SeqCst) == GO {
        // A run shorter than a second still reports its VUs.
        rec.add(vus_h, s.peak.load(Ordering::Relaxed) as f64);
        rec.add(vus_max_h, s.initialized.load(Ordering::Relaxed) as f64);
        agg.add(me, 0, rec.snapshot());
    }
    agg.worker_done(me);
    if let Some(j) = sampler {
        // Its last snapshot (the end value) is in the channel once the thread is gone.
        monitor_stop.store(true, Ordering::Relaxed);
        let _ = j.join();
        while let Ok(m) = rx.try_recv() {
            if let Msg::Snapshot {
                worker,
                interval,
                snap,
            } = m
            {
                agg.add(worker, interval, snap);
            }
        }
        agg.worker_done(me + 1);
    }
    let (metrics, series) = agg.finish();
    VuRunResult {
        metrics,
        series,
        elapsed: elapsed.unwrap_or_else(|| start.elapsed()),
        started,
        ended: SystemTime::now(),
        interrupted: s.ctl.was_interrupted(),
        aborted: s.aborted.lock().unwrap().take(),
        teardown_error: s.teardown_error.lock().unwrap().take(),
        scenarios: s
            .scen
            .iter()
            .map(|x| ScenarioStats {
                name: x.spec.name.clone(),
                executor: x.spec.executor.name(),
                completed: x.completed(),
                interrupted: x.interrupted(),
                dropped: x.dropped(),
            })
            .collect(),
    }
}

/// Start the `--monitor` sampler as aggregator worker `threads + 1` (None when init failed
/// or the thread cannot start: the run goes on without it).
fn spawn_monitor<F: VuFactory>(
    s: &Shared<F>,
    tx: mpsc::Sender<Msg>,
    start: Instant,
    stop: &Arc<AtomicBool>,
) -> Option<std::thread::JoinHandle<()>> {
    if s.start_gate.load(Ordering::SeqCst) != GO {
        return None;
    }
    let worker = s.threads + 1;
    let send = move |interval, snap, tick: Option<volley_monitor::Tick>| {
        for n in tick.iter().flat_map(|t| &t.notes) {
            eprintln!("volley: monitor: {n}");
        }
        let _ = tx.send(Msg::Snapshot {
            worker,
            interval,
            snap,
        });
    };
    let m = &s.plan.monitor;
    volley_monitor::spawn_sampler(m.specs.clone(), m.interval, start, stop.clone(), send)
        .map_err(|e| eprintln!("volley: cannot start the monitor thread: {e}"))
        .ok()
}

/// One scenario's VUs on one worker: those created at init, and (arrival-rate) the ids it may
/// still create.
struct Pool<B> {
    ready: Vec<(u64, B)>,
    spare: Vec<u64>,
}

fn worker<F: VuFactory>(id: usize, s: Arc<Shared<F>>, tx: mpsc::Sender<Msg>) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = tx.send(Msg::Ready {
                err: Some(format!("cannot start a runtime: {e}")),
            });
            let _ = tx.send(Msg::IterationsDone);
            let _ = tx.send(Msg::Done { worker: id });
            return;
        }
    };
    let env = WorkerEnv {
        worker: id,
        recorder: Rc::new(RefCell::new(Recorder::new())),
        scenarios: s.scen.clone(),
        stop_wake: Rc::new(Notify::new()),
        hard_wake: Rc::new(
            s.plan
                .scenarios
                .iter()
                .map(|_| Rc::new(HardStop::default()))
                .collect(),
        ),
        hard: s.hard.clone(),
    };
    let local = tokio::task::LocalSet::new();
    // Bodies are created inside the runtime context (they may spawn or use timers later).
    let _guard = rt.enter();
    let mut err = None;
    let lifecycle = if id == 0 {
        match s.factory.create(&env, 0, None) {
            Ok(b) => Some(b),
            Err(e) => {
                err = Some(e);
                None
            }
        }
    } else {
        None
    };
    let mut pools: Vec<Pool<F::Body>> = Vec::new();
    for (sc, spec) in s.plan.scenarios.iter().enumerate() {
        let mut pool = Pool {
            ready: Vec::new(),
            spare: Vec::new(),
        };
        let initial = spec.executor.initial_vus();
        for slot in 0..spec.executor.max_vus() {
            let vu = s.blocks[sc] + slot + 1;
            if s.owner(vu) != id {
                continue;
            }
            if slot >= initial {
                pool.spare.push(vu);
                continue;
            }
            if err.is_some() || s.start_gate.load(Ordering::Relaxed) == ABORT {
                break;
            }
            match s.factory.create(&env, vu, Some(sc)) {
                Ok(b) => {
                    s.initialized.fetch_add(1, Ordering::Relaxed);
                    pool.ready.push((vu, b));
                }
                Err(e) => err = Some(e),
            }
        }
        // Lazily created VUs come lowest id first.
        pool.spare.reverse();
        pools.push(pool);
    }
    trim_heap();
    let failed = err.is_some();
    let _ = tx.send(Msg::Ready { err });
    while s.start_gate.load(Ordering::SeqCst) == WAIT {
        std::thread::sleep(Duration::from_millis(2));
    }
    if failed || s.start_gate.load(Ordering::SeqCst) == ABORT {
        drop(pools);
        drop(lifecycle);
        let _ = tx.send(Msg::IterationsDone);
        let _ = tx.send(Msg::Done { worker: id });
        return;
    }
    let start = *s.start.get().expect("set before GO");
    let ticks = Rc::new(Cell::new(0u64));
    let mut lifecycle = lifecycle;
    local.block_on(&rt, async {
        let ticker = {
            let (rec, ticks, tx) = (env.recorder.clone(), ticks.clone(), tx.clone());
            tokio::task::spawn_local(async move {
                let mut iv = tokio::time::interval_at(
                    (start + Duration::from_secs(1)).into(),
                    Duration::from_secs(1),
                );
                iv.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    iv.tick().await;
                    let snap = rec.borrow_mut().snapshot();
                    let interval = ticks.get();
                    ticks.set(interval + 1);
                    let _ = tx.send(Msg::Snapshot {
                        worker: id,
                        interval,
                        snap,
                    });
                }
            })
        };
        // Turns the coordinator's stop flags into wake-ups for this worker's waiters.
        let watcher = {
            let (env, s) = (env.clone(), s.clone());
            tokio::task::spawn_local(async move {
                // When this watcher first saw the run stop (Ctrl-C, an abort): from then on
                // each scenario's running iterations get that scenario's own gracefulStop.
                let mut stopped: Option<Instant> = None;
                let mut fired = vec![false; s.plan.scenarios.len()];
                loop {
                    if stopped.is_none() && s.ctl.is_stopped() {
                        stopped = Some(Instant::now());
                        env.stop_wake.notify_waiters();
                    }
                    let hard = s.hard.load(Ordering::Relaxed);
                    let now = Instant::now();
                    for (sc, f) in fired.iter_mut().enumerate() {
                        let grace = s.plan.scenarios[sc].graceful_stop;
                        let due =
                            s.t0.get()
                                .is_some_and(|t0| now >= scenario_hard(&s, sc, *t0))
                                || stopped.is_some_and(|t| now >= t + grace);
                        if !*f && (hard || due) {
                            *f = true;
                            env.hard_wake[sc].fired.set(true);
                            env.hard_wake[sc].notify.notify_waiters();
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
        };

        // Setup on worker 0; everyone else waits for its verdict.
        if id == 0 {
            let verdict = match lifecycle.as_mut() {
                Some(b) => b.run(Phase::Setup).await,
                None => Outcome::Ok,
            };
            let _ = s.t0.set(Instant::now());
            match verdict {
                Outcome::Abort(e) | Outcome::Error(e) => {
                    *s.aborted.lock().unwrap() = Some(("setup".into(), e));
                    s.setup_gate.store(ABORT, Ordering::SeqCst);
                }
                Outcome::Interrupted => s.setup_gate.store(ABORT, Ordering::SeqCst),
                Outcome::Ok => s.setup_gate.store(GO, Ordering::SeqCst),
            }
        }
        while s.setup_gate.load(Ordering::SeqCst) == WAIT {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        if s.setup_gate.load(Ordering::SeqCst) == GO {
            let mut tasks = Vec::new();
            for (sc, pool) in pools.drain(..).enumerate() {
                let spec = &s.plan.scenarios[sc];
                if pool.ready.is_empty() && pool.spare.is_empty() {
                    continue;
                }
                let h = Rc::new(IterHandles::new(&s, &env, sc));
                if spec.executor.arrivals().is_some() {
                    tasks.push(tokio::task::spawn_local(arrivals(
                        s.clone(),
                        env.clone(),
                        sc,
                        pool,
                        h,
                    )));
                } else {
                    for (vu, body) in pool.ready {
                        tasks.push(tokio::task::spawn_local(vu_loop(
                            s.clone(),
                            env.clone(),
                            sc,
                            vu,
                            body,
                            h.clone(),
                        )));
                    }
                }
            }
            for t in tasks {
                let _ = t.await;
            }
        }
        let _ = tx.send(Msg::IterationsDone);
        if id == 0 {
            while !s.teardown_gate.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            if s.setup_gate.load(Ordering::SeqCst) == GO {
                if let Some(b) = lifecycle.as_mut() {
                    match b.run(Phase::Teardown).await {
                        Outcome::Ok | Outcome::Interrupted => {}
                        Outcome::Error(e) | Outcome::Abort(e) => {
                            *s.teardown_error.lock().unwrap() = Some(e)
                        }
                    }
                }
            }
        }
        ticker.abort();
        watcher.abort();
    });
    drop(pools);
    drop(lifecycle);
    let snap = env.recorder.borrow_mut().snapshot();
    let _ = tx.send(Msg::Snapshot {
        worker: id,
        interval: ticks.get(),
        snap,
    });
    let _ = tx.send(Msg::Done { worker: id });
}

/// When scenario `sc`'s iterations are interrupted: its end plus its `gracefulStop`.
fn scenario_hard<F>(s: &Shared<F>, sc: usize, t0: Instant) -> Instant {
    let spec = &s.plan.scenarios[sc];
    t0 + spec.start_time + spec.executor.duration() + spec.graceful_stop
}

/// A scenario's iteration metrics on one worker, resolved once.
struct IterHandles {
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
        IterHandles {
            iterations: handle("iterations", MetricKind::Counter, Unit::Default),
            duration: handle("iteration_duration", MetricKind::Trend, Unit::Time),
            errors: handle("iteration_errors", MetricKind::Counter, Unit::Default),
            dropped: handle("dropped_iterations", MetricKind::Counter, Unit::Default),
            corrected: spec.executor.arrivals().map(|_| {
                handle(
                    "iteration_duration_corrected",
                    MetricKind::Trend,
                    Unit::Time,
                )
            }),
        }
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
    outcome
}

/// Sleep until `t`; false when the run stopped first.
async fn wait_until<F>(s: &Shared<F>, env: &WorkerEnv, t: Instant) -> bool {
    loop {
        let n = env.stop_wake.notified();
        tokio::pin!(n);
        n.as_mut().enable();
        if s.ctl.is_stopped() || s.hard.load(Ordering::Relaxed) {
            return false;
        }
        if Instant::now() >= t {
            return true;
        }
        tokio::select! {
            _ = tokio::time::sleep_until(t.into()) => return !s.ctl.is_stopped(),
            _ = n => {}
        }
    }
}

/// One VU of a looping executor (constant-vus, ramping-vus, shared-iterations,
/// per-vu-iterations): iterations back to back while the executor says so.
async fn vu_loop<F: VuFactory>(
    s: Arc<Shared<F>>,
    env: WorkerEnv,
    sc: usize,
    vu: u64,
    mut body: F::Body,
    h: Rc<IterHandles>,
) {
    let spec = &s.plan.scenarios[sc];
    let st = &s.scen[sc];
    let ex = &spec.executor;
    let idx = vu - s.blocks[sc];
    let t0 = *s.t0.get().expect("set before the scenarios start");
    let begin = t0 + spec.start_time;
    let end = begin + ex.duration();
    let hard_end = end + spec.graceful_stop;
    // Spread the first iterations (see [`start_offset`]); ramping VUs are spread by their ramp.
    let off = match ex {
        Executor::RampingVus(_) => Duration::ZERO,
        _ => start_offset(idx, ex.max_vus()),
    };
    if !wait_until(&s, &env, begin).await {
        return;
    }
    let _ = st.started.set((begin, SystemTime::now()));
    if !off.is_zero() && !wait_until(&s, &env, begin + off).await {
        return;
    }
    let mut mine = 0u64;
    loop {
        if s.ctl.is_stopped() || s.hard.load(Ordering::Relaxed) {
            break;
        }
        let now = Instant::now();
        // k6 starts no iteration past the scenario's duration.
        if now >= end {
            break;
        }
        let mut hard_at = hard_end;
        let iteration = match ex {
            Executor::ConstantVus(_) => st.next.fetch_add(1, Ordering::Relaxed),
            Executor::SharedIterations(e) => {
                let i = st.next.fetch_add(1, Ordering::Relaxed);
                if i >= e.iterations {
                    break;
                }
                i
            }
            Executor::PerVuIterations(e) => {
                if mine >= e.iterations {
                    break;
                }
                st.next.fetch_add(1, Ordering::Relaxed)
            }
            Executor::RampingVus(r) => {
                let t = now - begin;
                match r.next_active(idx, t) {
                    Some(x) if x == t => {
                        if let Some(off) = r.next_inactive(idx, t) {
                            hard_at = hard_at.min(begin + off + r.graceful_ramp_down);
                        }
                        st.next.fetch_add(1, Ordering::Relaxed)
                    }
                    Some(x) if x < r.duration() => {
                        // Not active now: sleep until the ramp brings this VU in.
                        if !wait_until(&s, &env, begin + x).await {
                            break;
                        }
                        continue;
                    }
                    _ => break,
                }
            }
            Executor::ConstantArrivalRate(_) | Executor::RampingArrivalRate(_) => break,
        };
        let outcome = run_iteration(&s, &env, &h, sc, &mut body, iteration, hard_at, None).await;
        mine += 1;
        if matches!(outcome, Outcome::Abort(_)) {
            break;
        }
    }
    drop(body);
}

/// The arrival-rate executors on one worker: start this worker's share of the iterations when
/// they are due, each on an idle VU of the pool; create VUs (up to the worker's share of
/// `maxVUs`) when none is idle; count the rest as `dropped_iterations`.
async fn arrivals<F: VuFactory>(
    s: Arc<Shared<F>>,
    env: WorkerEnv,
    sc: usize,
    pool: Pool<F::Body>,
    h: Rc<IterHandles>,
) {
    let spec = &s.plan.scenarios[sc];
    let st = &s.scen[sc];
    let Some(schedule) = spec.executor.arrivals() else {
        return;
    };
    let t0 = *s.t0.get().expect("set before the scenarios start");
    let begin = t0 + spec.start_time;
    let end = begin + spec.executor.duration();
    let hard_at = end + spec.graceful_stop;
    let max = spec.executor.max_vus().max(1);
    let block = s.blocks[sc];
    // Arrival k goes to the worker owning the k-th VU slot, so each worker's share of the
    // iterations matches its share of the VUs.
    let mine = |k: u64| s.owner(block + k % max + 1) == env.worker;
    let idle = Rc::new(RefCell::new(pool.ready));
    let mut spare = pool.spare;
    let inflight = Rc::new(Cell::new(0usize));
    let drained = Rc::new(Notify::new());
    let mut warned = false;
    let mut k = 0u64;
    if wait_until(&s, &env, begin).await {
        let _ = st.started.set((begin, SystemTime::now()));
        loop {
            if s.ctl.is_stopped() || s.hard.load(Ordering::Relaxed) {
                break;
            }
            while !mine(k) {
                k += 1;
            }
            let Some(at) = schedule.arrival(k) else {
                break;
            };
            let due = begin + Duration::from_secs_f64(at);
            // k6's ramping-arrival-rate still starts the iteration due exactly at the end.
            if due > end || (due == end && !schedule.starts_at_end()) {
                break;
            }
            k += 1;
            // The timer fires on whole milliseconds after the deadline: aim up to 1 ms early
            // so starts scatter around `due` instead of all landing ~1 ms late.
            let wake = due.checked_sub(TIMER_SLACK).unwrap_or(due);
            if wake > Instant::now() && !wait_until(&s, &env, wake).await {
                break;
            }
            let next = idle.borrow_mut().pop();
            let vu = match next {
                Some(v) => Some(v),
                None => match spare.pop() {
                    Some(id) => match s.factory.create(&env, id, Some(sc)) {
                        Ok(b) => {
                            s.initialized.fetch_add(1, Ordering::Relaxed);
                            Some((id, b))
                        }
                        Err(e) => {
                            s.abort("init", e);
                            break;
                        }
                    },
                    None => None,
                },
            };
            let Some((id, mut body)) = vu else {
                st.dropped.fetch_add(1, Ordering::Relaxed);
                env.recorder.borrow_mut().add(h.dropped, 1.0);
                if !warned {
                    warned = true;
                    crate::log::log(
                        crate::log::Level::Warn,
                        &format!(
                            "Insufficient VUs, reached {} active VUs and cannot initialize more",
                            spec.executor.max_vus()
                        ),
                        &[("executor", spec.executor.name()), ("scenario", &spec.name)],
                    );
                }
                continue;
            };
            let iteration = st.next.fetch_add(1, Ordering::Relaxed);
            inflight.set(inflight.get() + 1);
            let (s2, env2, h2) = (s.clone(), env.clone(), h.clone());
            let (idle2, inflight2, drained2) = (idle.clone(), inflight.clone(), drained.clone());
            tokio::task::spawn_local(async move {
                run_iteration(
                    &s2,
                    &env2,
                    &h2,
                    sc,
                    &mut body,
                    iteration,
                    hard_at,
                    Some(due),
                )
                .await;
                idle2.borrow_mut().push((id, body));
                inflight2.set(inflight2.get() - 1);
                if inflight2.get() == 0 {
                    drained2.notify_waiters();
                }
            });
        }
    }
    // Iterations in flight finish (or are interrupted at `hard_at`) before the VUs go.
    loop {
        let n = drained.notified();
        tokio::pin!(n);
        n.as_mut().enable();
        if inflight.get() == 0 {
            break;
        }
        n.await;
    }
    drop(idle);
}

/// The timer's granularity (tokio's wheel ticks in milliseconds).
const TIMER_SLACK: Duration = Duration::from_millis(1);

/// Hand the memory freed while VUs were created (compiling, loading, temporaries) back to
/// the OS: with thousands of VUs it is scattered over the heap and would stay resident.
fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: glibc's malloc_trim only releases free memory; it has no preconditions.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// Per VU, how much the first iteration's start is spread out.
const START_SPREAD_PER_VU: Duration = Duration::from_micros(200);
/// The most the first iterations are spread over.
const START_SPREAD_MAX: Duration = Duration::from_secs(1);

/// When VU `vu` (1-based within its scenario) of `max_vus` starts its first iteration, after
/// the scenario's start: the VUs' starts are spread evenly over `max_vus` × 200 µs, at most
/// 1 s (50 VUs: 10 ms; 5,000 VUs: 1 s), rather than all in one instant. Thousands of VUs that
/// each request and then sleep would otherwise stay in lock-step and hit the target in one
/// burst every period, and the burst's queueing would be all their latency shows. k6 does not
/// fire them in one instant either: its first 5,000 requests are spread over about 0.9 s.
fn start_offset(vu: u64, max_vus: u64) -> Duration {
    if max_vus <= 1 || vu == 0 {
        return Duration::ZERO;
    }
    let window = (START_SPREAD_PER_VU * max_vus.min(u32::MAX as u64) as u32).min(START_SPREAD_MAX);
    window.mul_f64((vu - 1) as f64 / max_vus as f64)
}

#[cfg(test)]
mod tests;
