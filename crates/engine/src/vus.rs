//! Closed-model VU scheduling: k6's `vus`/`duration`, `iterations` and `stages` shortcuts.
//!
//! A *VU* is anything that can run iterations: the engine only sees the [`VuBody`] trait, so
//! it stays free of JavaScript (the JS runtime in `volley-js` is one implementation). Bodies
//! are made by a [`VuFactory`] *on the worker thread that runs them*, which is what lets a
//! body hold `!Send` state (a QuickJS runtime, `Rc`s).
//!
//! Threads: one worker per core, each a current-thread tokio runtime with a `LocalSet`; every
//! VU is a local task on one worker. Workers record into a thread-local
//! [`Recorder`] (shared with the bodies through [`WorkerEnv`]) and hand a snapshot to the
//! coordinator once per second, as quick mode does; the coordinator itself records the `vus`
//! and `vus_max` gauges.
//!
//! Lifecycle, as k6: every VU is created (init) → [`Phase::Setup`] once on an extra VU with
//! id 0 on worker 0 → iterations under the executor → [`Phase::Teardown`] on VU 0. When the
//! executor's time is up, iterations in progress get `graceful_stop` to finish; after that
//! the bodies are told to cancel through [`WorkerEnv::hard_stop`].

use crate::control::RunControl;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::Notify;
use volley_metrics::{
    Aggregator, MetricKey, MetricKind, MetricTotal, Recorder, Series, Snapshot, TagSet, Unit,
};

/// One stage of a ramping-VUs executor: move linearly to `target` VUs over `duration`.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    pub duration: Duration,
    pub target: u64,
}

/// When iterations start and how many VUs run them (k6's shortcut executors).
#[derive(Clone, Debug, PartialEq)]
pub enum Executor {
    /// `vus` VUs loop over iterations for `duration` (k6 `constant-vus`).
    ConstantVus { vus: u64, duration: Duration },
    /// `vus` VUs share `iterations` in total, within `max_duration` (k6 `shared-iterations`).
    SharedIterations {
        vus: u64,
        iterations: u64,
        max_duration: Duration,
    },
    /// The active VU count follows linear `stages` from `start_vus` (k6 `ramping-vus`).
    RampingVus { start_vus: u64, stages: Vec<Stage> },
}

impl Executor {
    /// VUs that must exist for the whole run.
    pub fn max_vus(&self) -> u64 {
        match self {
            Executor::ConstantVus { vus, .. } | Executor::SharedIterations { vus, .. } => *vus,
            Executor::RampingVus { start_vus, stages } => stages
                .iter()
                .map(|s| s.target)
                .max()
                .unwrap_or(0)
                .max(*start_vus),
        }
    }

    /// How long iterations may be started.
    pub fn duration(&self) -> Duration {
        match self {
            Executor::ConstantVus { duration, .. } => *duration,
            Executor::SharedIterations { max_duration, .. } => *max_duration,
            Executor::RampingVus { stages, .. } => stages.iter().map(|s| s.duration).sum(),
        }
    }

    /// k6's executor name, for the result file.
    pub fn name(&self) -> &'static str {
        match self {
            Executor::ConstantVus { .. } => "constant-vus",
            Executor::SharedIterations { .. } => "shared-iterations",
            Executor::RampingVus { .. } => "ramping-vus",
        }
    }

    /// Ramping VUs: the VU count at `t` since the start (linear within a stage, truncated).
    fn target_at(&self, t: Duration) -> u64 {
        let Executor::RampingVus { start_vus, stages } = self else {
            return self.max_vus();
        };
        let mut from = *start_vus as f64;
        let mut at = Duration::ZERO;
        for s in stages {
            if t < at + s.duration {
                let f = (t - at).as_secs_f64() / s.duration.as_secs_f64().max(1e-9);
                return (from + (s.target as f64 - from) * f).floor() as u64;
            }
            at += s.duration;
            from = s.target as f64;
        }
        from as u64
    }

    /// Ramping VUs: the first time at or after `t` when VU `id` (1-based) is active, if any.
    fn next_active(&self, id: u64, t: Duration) -> Option<Duration> {
        let Executor::RampingVus { start_vus, stages } = self else {
            return Some(t);
        };
        if self.target_at(t) >= id {
            return Some(t);
        }
        let mut from = *start_vus as f64;
        let mut at = Duration::ZERO;
        for (i, s) in stages.iter().enumerate() {
            let end = at + s.duration;
            if end > t && (s.target as f64) >= id as f64 && s.target as f64 > from {
                // from + (target - from) * f >= id  ⇔  f >= (id - from) / (target - from)
                let f = ((id as f64 - from) / (s.target as f64 - from)).clamp(0.0, 1.0);
                let when = at + s.duration.mul_f64(f);
                let when = when.max(t);
                // The top VU of a ramp is reached exactly at the stage's end, which is where
                // the next stage (a plateau or ramp-down) starts with that many VUs; only the
                // end of the last stage is the end of the test.
                if when < end || (when == end && i + 1 < stages.len()) {
                    return Some(when);
                }
            }
            at = end;
            from = s.target as f64;
        }
        None
    }
}

/// Everything a VU run needs besides the bodies themselves.
#[derive(Clone, Debug)]
pub struct VuPlan {
    pub executor: Executor,
    /// Worker threads; 0 = one per available core (never more than the VUs).
    pub threads: usize,
    /// How long iterations still running at the end get to finish (k6 `gracefulStop`).
    pub graceful_stop: Duration,
    /// Tags on `iterations`, `iteration_duration` (k6: `scenario`, `group`).
    pub iteration_tags: TagSet,
    /// Targets to watch (`--monitor`): sampled on their own thread from the start of setup,
    /// reporting to the coordinator as one more worker, as in quick mode.
    pub monitor: crate::MonitorPlan,
}

/// Which part of the lifecycle a [`VuBody::run`] call is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Setup,
    /// One iteration; `scenario_iter` is its index across all VUs, when the executor knows it.
    Iteration {
        scenario_iter: Option<u64>,
    },
    Teardown,
}

/// How one [`VuBody::run`] call ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Ok,
    /// The iteration threw; it is counted (`iteration_errors`) and the test goes on.
    Error(String),
    /// Cut short by the hard stop; not counted as an iteration (as k6).
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
    /// Notified once when pending operations must be cancelled (see [`WorkerEnv::is_hard_stopped`]).
    pub hard_stop: Rc<Notify>,
    hard: Rc<Cell<bool>>,
}

impl WorkerEnv {
    /// True once in-flight work must be abandoned (graceful stop over, or a second Ctrl-C).
    pub fn is_hard_stopped(&self) -> bool {
        self.hard.get()
    }
}

/// A VU: runs the lifecycle phases, one call at a time.
pub trait VuBody {
    fn run(&mut self, phase: Phase) -> impl Future<Output = Outcome>;
}

/// Makes VUs. Called on the worker thread that will run the VU; `id` 0 is the
/// setup/teardown VU, iteration VUs are 1..=max_vus.
pub trait VuFactory: Send + Sync + 'static {
    type Body: VuBody + 'static;
    fn create(&self, env: &WorkerEnv, id: u64) -> Result<Self::Body, String>;
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
    start: std::sync::OnceLock<Instant>,
    /// Setup finished (GO) or failed (ABORT); set by worker 0.
    setup_gate: AtomicU8,
    teardown_gate: AtomicBool,
    hard: AtomicBool,
    /// Shared-iterations: the next iteration index.
    next_iter: AtomicU64,
    active: AtomicU64,
    /// Most VUs active at once since the coordinator last recorded the gauge.
    peak: AtomicU64,
    aborted: std::sync::Mutex<Option<(String, String)>>,
    teardown_error: std::sync::Mutex<Option<String>>,
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

/// Called by the coordinator once per second of run time with the totals so far and the time
/// since the start; returning `true` stops the test gracefully (k6 `abortOnFail` thresholds).
pub type TickHook<'a> = &'a mut dyn FnMut(&Aggregator, Duration) -> bool;

/// [`run_vus`] with a [`TickHook`].
pub fn run_vus_with<F: VuFactory>(
    plan: &VuPlan,
    factory: Arc<F>,
    user_ctl: &RunControl,
    hook: Option<TickHook<'_>>,
) -> Result<VuRunResult, String> {
    let ctl = user_ctl.child();
    let max_vus = plan.executor.max_vus();
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
        start: std::sync::OnceLock::new(),
        setup_gate: AtomicU8::new(WAIT),
        teardown_gate: AtomicBool::new(false),
        hard: AtomicBool::new(false),
        next_iter: AtomicU64::new(0),
        active: AtomicU64::new(0),
        peak: AtomicU64::new(0),
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
    let max_vus = s.plan.executor.max_vus() as f64;

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

    let mut done = vec![false; threads];
    let mut iter_done = 0;
    let mut ticks = 0u64;
    let mut iterations_start: Option<Instant> = None;
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
        if iterations_start.is_none() && s.setup_gate.load(Ordering::SeqCst) != WAIT {
            iterations_start = Some(now);
        }
        if let Some(t0) = iterations_start {
            if stop_at.is_none() && now >= t0 + s.plan.executor.duration() {
                s.ctl.stop();
            }
        }
        if s.ctl.is_stopped() && stop_at.is_none() {
            stop_at = Some(now);
        }
        let graceful_over = stop_at.is_some_and(|t| now >= t + s.plan.graceful_stop);
        if (graceful_over || s.ctl.is_hard_stopped()) && !s.hard.load(Ordering::Relaxed) {
            s.hard.store(true, Ordering::SeqCst);
        }
        // The vus gauges, once per second of run time.
        while now >= start + Duration::from_secs(ticks + 1) && elapsed.is_none() {
            let now_active = s.active.load(Ordering::Relaxed);
            let peak = s.peak.swap(now_active, Ordering::Relaxed).max(now_active);
            rec.add(vus_h, peak as f64);
            rec.add(vus_max_h, max_vus);
            agg.add(me, ticks, rec.snapshot());
            ticks += 1;
            if let Some(h) = hook.as_mut() {
                if h(&agg, start.elapsed()) && !s.ctl.is_stopped() {
                    s.ctl.stop();
                }
            }
        }
    }
    if ticks == 0 && s.start_gate.load(Ordering::SeqCst) == GO {
        // A run shorter than a second still reports its VUs.
        rec.add(vus_h, s.peak.load(Ordering::Relaxed) as f64);
        rec.add(vus_max_h, max_vus);
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

/// Hand out VU ids round-robin: worker `w` of `n` owns ids w+1, w+1+n, ...
fn vu_ids(w: usize, n: usize, max_vus: u64) -> impl Iterator<Item = u64> {
    ((w as u64 + 1)..=max_vus).step_by(n)
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
        hard_stop: Rc::new(Notify::new()),
        hard: Rc::new(Cell::new(false)),
    };
    let local = tokio::task::LocalSet::new();
    // Bodies are created inside the runtime context (they may spawn or use timers later).
    let _guard = rt.enter();
    let mut bodies = Vec::new();
    let mut err = None;
    let lifecycle = if id == 0 {
        match s.factory.create(&env, 0) {
            Ok(b) => Some(b),
            Err(e) => {
                err = Some(e);
                None
            }
        }
    } else {
        None
    };
    if err.is_none() {
        for vu in vu_ids(id, s.threads, s.plan.executor.max_vus()) {
            if s.start_gate.load(Ordering::Relaxed) == ABORT {
                break;
            }
            match s.factory.create(&env, vu) {
                Ok(b) => bodies.push((vu, b)),
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
    }
    trim_heap();
    let failed = err.is_some();
    let _ = tx.send(Msg::Ready { err });
    while s.start_gate.load(Ordering::SeqCst) == WAIT {
        std::thread::sleep(Duration::from_millis(2));
    }
    if failed || s.start_gate.load(Ordering::SeqCst) == ABORT {
        drop(bodies);
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
        let watcher = {
            let (env, s) = (env.clone(), s.clone());
            tokio::task::spawn_local(async move {
                loop {
                    if s.hard.load(Ordering::Relaxed) {
                        env.hard.set(true);
                        env.hard_stop.notify_waiters();
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
        let iterations_start = Instant::now();
        if s.setup_gate.load(Ordering::SeqCst) == GO {
            let mut tasks = Vec::new();
            for (vu, body) in bodies.drain(..) {
                let env = env.clone();
                tasks.push(tokio::task::spawn_local(vu_loop(
                    s.clone(),
                    env,
                    vu,
                    body,
                    iterations_start,
                )));
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
    drop(lifecycle);
    let snap = env.recorder.borrow_mut().snapshot();
    let _ = tx.send(Msg::Snapshot {
        worker: id,
        interval: ticks.get(),
        snap,
    });
    let _ = tx.send(Msg::Done { worker: id });
}

/// One VU's iterations under the executor.
async fn vu_loop<F: VuFactory>(
    s: Arc<Shared<F>>,
    env: WorkerEnv,
    vu: u64,
    mut body: F::Body,
    t0: Instant,
) {
    let tags = &s.plan.iteration_tags;
    let (iters, dur, errs) = {
        let mut rec = env.recorder.borrow_mut();
        let key = |n: &str| MetricKey {
            name: n.to_string(),
            tags: tags.clone(),
        };
        (
            rec.handle(key("iterations"), MetricKind::Counter, Unit::Default),
            rec.handle(key("iteration_duration"), MetricKind::Trend, Unit::Time),
            rec.handle(key("iteration_errors"), MetricKind::Counter, Unit::Default),
        )
    };
    let ex = &s.plan.executor;
    let mut active = false;
    // Spread the first iterations (see [`start_offset`]); ramping VUs are spread by their ramp.
    if !matches!(ex, Executor::RampingVus { .. }) {
        let off = start_offset(vu, ex.max_vus());
        if !off.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep_until((t0 + off).into()) => {}
                _ = wait_stop(&s) => {}
            }
        }
    }
    loop {
        if s.ctl.is_stopped() || env.is_hard_stopped() {
            break;
        }
        let scenario_iter = match ex {
            Executor::SharedIterations { iterations, .. } => {
                let i = s.next_iter.fetch_add(1, Ordering::Relaxed);
                if i >= *iterations {
                    break;
                }
                Some(i)
            }
            Executor::RampingVus { .. } => {
                let now = t0.elapsed();
                match ex.next_active(vu, now) {
                    Some(t) if t == now => None,
                    Some(t) if t < ex.duration() => {
                        if active {
                            active = false;
                            s.active.fetch_sub(1, Ordering::Relaxed);
                        }
                        // Sleep until active (or a stop), then look again.
                        let wake = t0 + t;
                        tokio::select! {
                            _ = tokio::time::sleep_until(wake.into()) => {}
                            _ = wait_stop(&s) => {}
                        }
                        continue;
                    }
                    _ => break,
                }
            }
            Executor::ConstantVus { duration, .. } => {
                // The coordinator stops the run within ~50 ms of the end; an iteration must
                // not start after it (k6 starts none past `duration`).
                if t0.elapsed() >= *duration {
                    break;
                }
                None
            }
        };
        if !active {
            active = true;
            let n = s.active.fetch_add(1, Ordering::Relaxed) + 1;
            s.peak.fetch_max(n, Ordering::Relaxed);
        }
        let began = Instant::now();
        let outcome = body.run(Phase::Iteration { scenario_iter }).await;
        let took = began.elapsed();
        let mut rec = env.recorder.borrow_mut();
        match outcome {
            Outcome::Interrupted => break,
            Outcome::Abort(e) => {
                drop(rec);
                let mut a = s.aborted.lock().unwrap();
                if a.is_none() {
                    *a = Some(("iteration".into(), e));
                }
                s.ctl.stop();
                break;
            }
            Outcome::Ok | Outcome::Error(_) => {
                if matches!(outcome, Outcome::Error(_)) {
                    rec.add(errs, 1.0);
                }
                rec.add(iters, 1.0);
                rec.trend_us(dur, took.as_micros() as u64);
            }
        }
    }
    if active {
        s.active.fetch_sub(1, Ordering::Relaxed);
    }
    drop(body);
}

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

/// When VU `vu` (1-based) of `max_vus` starts its first iteration, after the start: the
/// VUs' starts are spread evenly over `max_vus` × 200 µs, at most 1 s (50 VUs: 10 ms;
/// 5,000 VUs: 1 s), rather than all in one instant. Thousands of VUs that each request and
/// then sleep would otherwise stay in lock-step and hit the target in one burst every
/// period, and the burst's queueing would be all their latency shows. k6 does not fire
/// them in one instant either: its first 5,000 requests are spread over about 0.9 s.
fn start_offset(vu: u64, max_vus: u64) -> Duration {
    if max_vus <= 1 || vu == 0 {
        return Duration::ZERO;
    }
    let window = (START_SPREAD_PER_VU * max_vus.min(u32::MAX as u64) as u32).min(START_SPREAD_MAX);
    window.mul_f64((vu - 1) as f64 / max_vus as f64)
}

async fn wait_stop<F>(s: &Shared<F>) {
    while !s.ctl.is_stopped() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp() -> Executor {
        Executor::RampingVus {
            start_vus: 0,
            stages: vec![
                Stage {
                    duration: Duration::from_secs(10),
                    target: 10,
                },
                Stage {
                    duration: Duration::from_secs(10),
                    target: 10,
                },
                Stage {
                    duration: Duration::from_secs(10),
                    target: 0,
                },
            ],
        }
    }

    #[test]
    fn ramping_targets_are_linear_and_truncated() {
        let e = ramp();
        assert_eq!(e.max_vus(), 10);
        assert_eq!(e.duration(), Duration::from_secs(30));
        assert_eq!(e.target_at(Duration::ZERO), 0);
        assert_eq!(e.target_at(Duration::from_millis(5500)), 5);
        assert_eq!(e.target_at(Duration::from_secs(15)), 10);
        assert_eq!(e.target_at(Duration::from_secs(25)), 5);
        assert_eq!(e.target_at(Duration::from_secs(40)), 0);
    }

    #[test]
    fn next_activation_is_when_the_ramp_reaches_the_vu() {
        let e = ramp();
        assert_eq!(
            e.next_active(5, Duration::ZERO),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            e.next_active(10, Duration::from_secs(12)),
            Some(Duration::from_secs(12))
        );
        // Past the ramp-down point of VU 8 nothing brings it back.
        assert_eq!(e.next_active(8, Duration::from_secs(29)), None);
        assert_eq!(e.next_active(1, Duration::from_secs(31)), None);
    }

    /// Regression: `4:2s,4:3s` ran 3 VUs (k6 runs 4): the top VU of a ramp is reached exactly
    /// at the stage's end, which was rejected, and the plateau after it was skipped.
    #[test]
    fn the_top_vu_of_a_ramp_starts_when_a_plateau_follows() {
        let e = ramp();
        assert_eq!(
            e.next_active(10, Duration::ZERO),
            Some(Duration::from_secs(10))
        );
        let short = Executor::RampingVus {
            start_vus: 0,
            stages: vec![
                Stage {
                    duration: Duration::from_secs(2),
                    target: 4,
                },
                Stage {
                    duration: Duration::from_secs(3),
                    target: 4,
                },
            ],
        };
        assert_eq!(
            short.next_active(4, Duration::ZERO),
            Some(Duration::from_secs(2))
        );
        // A ramp that ends the test brings no VU in at its very end.
        let last = Executor::RampingVus {
            start_vus: 0,
            stages: vec![Stage {
                duration: Duration::from_secs(2),
                target: 4,
            }],
        };
        assert_eq!(last.next_active(4, Duration::ZERO), None);
    }

    #[test]
    fn first_iterations_are_spread_out() {
        assert_eq!(start_offset(1, 1), Duration::ZERO);
        assert_eq!(start_offset(1, 50), Duration::ZERO);
        assert_eq!(start_offset(50, 50), Duration::from_micros(9800));
        assert_eq!(start_offset(5000, 5000), Duration::from_micros(999_800));
        assert!(start_offset(100_000, 100_000) < START_SPREAD_MAX);
    }

    #[test]
    fn ids_are_shared_round_robin() {
        let a: Vec<u64> = vu_ids(0, 2, 5).collect();
        let b: Vec<u64> = vu_ids(1, 2, 5).collect();
        assert_eq!(a, vec![1, 3, 5]);
        assert_eq!(b, vec![2, 4]);
    }
}
