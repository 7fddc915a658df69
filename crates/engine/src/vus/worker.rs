//! A worker thread: creates its share of the VUs (init), then on its current-thread runtime
//! runs setup (worker 0), its VUs' iterations, teardown (worker 0), a ticker that hands its
//! recorder's snapshot to the coordinator once per second, and the watcher that turns the
//! run's stops into wake-ups for its waiting VUs.

use super::*;

/// One scenario's VUs on one worker: those created at init, and (arrival-rate) the ids it may
/// still create.
pub(super) struct Pool<B> {
    pub(super) ready: Vec<(u64, B)>,
    pub(super) spare: Vec<u64>,
}

pub(super) fn worker<F: VuFactory>(id: usize, s: Arc<Shared<F>>, tx: mpsc::Sender<Msg>) {
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
        segment: s.plan.segment.clone(),
        stop_wake: Rc::new(Notify::new()),
        hard_wake: Rc::new(
            s.plan
                .scenarios
                .iter()
                .map(|_| Rc::new(HardStop::default()))
                .collect(),
        ),
        soft_wake: Rc::default(),
        hard: s.hard.clone(),
        ctl: s.ctl.clone(),
        waits: s.waits.clone(),
    };
    // The plan's raw outputs and series guard, before any body records.
    {
        let mut rec = env.recorder.borrow_mut();
        if let Some(sink) = s.plan.sample_sink.as_ref().and_then(|m| (m.0)()) {
            rec.set_sink(sink);
        }
        if let Some(g) = &s.plan.series_guard {
            rec.set_guard(g.clone());
        }
    }
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
            // Ctrl-C during init: create no more VUs.
            if err.is_some() || s.start_gate.load(Ordering::Relaxed) == ABORT || s.ctl.is_stopped()
            {
                break;
            }
            match s.factory.create(&env, vu, Some(sc)) {
                Ok(b) => {
                    s.initialized.fetch_add(1, Ordering::Relaxed);
                    s.ctl.status().vus_created.fetch_add(1, Ordering::Relaxed);
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
                // When the user interrupted: idle waits end now, requests get a short grace.
                let mut interrupted: Option<Instant> = None;
                let mut fired = vec![false; s.plan.scenarios.len()];
                loop {
                    if stopped.is_none() && s.ctl.is_stopped() {
                        stopped = Some(Instant::now());
                        env.stop_wake.notify_waiters();
                    }
                    if interrupted.is_none() {
                        if let Some(t) = s.ctl.interrupted_at() {
                            interrupted = Some(t);
                            env.soft_wake.fire();
                        }
                    }
                    let hard = s.hard.load(Ordering::Relaxed);
                    let now = Instant::now();
                    for (sc, f) in fired.iter_mut().enumerate() {
                        let grace = s.plan.scenarios[sc].graceful_stop;
                        let due = s
                            .t0
                            .get()
                            .is_some_and(|t0| now >= scenario_hard(&s, sc, *t0))
                            || stopped.is_some_and(|t| now >= t + grace)
                            || interrupted.is_some_and(|t| now >= t + grace.min(INTERRUPT_GRACE));
                        if !*f && (hard || due) {
                            *f = true;
                            env.hard_wake[sc].fire();
                            // Idle waits listen on `soft_wake` alone (see StopToken::interrupted).
                            env.soft_wake.notify.notify_waiters();
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
        };

        // Setup on worker 0; everyone else waits for its verdict.
        if id == 0 {
            s.set_phase(RunPhase::Setup);
            let verdict = match lifecycle.as_mut() {
                Some(b) => b.run(Phase::Setup).await,
                None => Outcome::Ok,
            };
            if let (Outcome::Ok, Some(g)) = (&verdict, &s.plan.gates) {
                while !g.0.may_start() && !s.ctl.is_stopped() {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }
            let _ = s.t0.set(Instant::now());
            match verdict {
                Outcome::Abort(e) | Outcome::Error(e) => {
                    *s.aborted.lock().unwrap() = Some(("setup".into(), e));
                    s.setup_gate.store(ABORT, Ordering::SeqCst);
                }
                Outcome::Interrupted => s.setup_gate.store(ABORT, Ordering::SeqCst),
                Outcome::Ok => {
                    s.set_phase(RunPhase::Iterations);
                    s.setup_gate.store(GO, Ordering::SeqCst)
                }
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
            if let Some(g) = &s.plan.gates {
                while !g.0.may_teardown() && !s.ctl.is_hard_stopped() {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }
            // A second Ctrl-C skips teardown (k6 exits at once); one still runs it.
            if s.setup_gate.load(Ordering::SeqCst) == GO && !s.ctl.is_hard_stopped() {
                s.set_phase(RunPhase::Teardown);
                if let Some(b) = lifecycle.as_mut() {
                    match b.run(Phase::Teardown).await {
                        Outcome::Ok => {}
                        Outcome::Interrupted => {
                            eprintln!(
                                "WARN[{:04}] teardown() was interrupted",
                                start.elapsed().as_secs()
                            );
                        }
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
