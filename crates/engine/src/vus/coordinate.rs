//! The coordinator: waits for init, opens the gates, merges the workers' snapshots once per
//! second, records the `vus` gauges, runs the tick hook, and turns a stop (Ctrl-C, an abort)
//! into the hard stop when its grace is over.

use super::*;

pub(super) fn coordinate<F: VuFactory>(
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
    // Self-paced bodies (quick mode) are no k6 VUs: without another scenario, no vus gauges
    // (the coordinator still reports each second, empty, so the intervals complete).
    let gauges = s.plan.scenarios.iter().any(|x| !x.self_paced).then(|| {
        (
            rec.handle(MetricKey::new("vus"), MetricKind::Gauge, Unit::Default),
            rec.handle(MetricKey::new("vus_max"), MetricKind::Gauge, Unit::Default),
        )
    });

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
    if s.ctl.was_interrupted() {
        // Ctrl-C during init: no setup, no iterations; an init cut short is no error.
        s.start_gate.store(ABORT, Ordering::SeqCst);
    } else if let Some(e) = init_err {
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
    let mut warned = false;
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
        // After Ctrl-C, requests in flight get INTERRUPT_GRACE (waits end at once).
        let interrupt_over = s
            .ctl
            .interrupted_at()
            .is_some_and(|t| now >= t + INTERRUPT_GRACE);
        let graceful_over = stop_at.is_some_and(|t| now >= t + grace) || interrupt_over;
        if (graceful_over || s.ctl.is_hard_stopped()) && !s.hard.load(Ordering::Relaxed) {
            s.hard.store(true, Ordering::SeqCst);
            let left = s.ctl.status().waiting().requests;
            if s.ctl.was_interrupted() && left > 0 && !warned {
                warned = true;
                eprintln!("volley: abandoning {left} request(s) still in flight");
            }
        }
        // The vus gauges, once per second of run time.
        while now >= start + Duration::from_secs(ticks + 1) && elapsed.is_none() {
            let now_active = s.active.load(Ordering::Relaxed);
            let peak = s.peak.swap(now_active, Ordering::Relaxed).max(now_active);
            let vus_max = s.initialized.load(Ordering::Relaxed);
            if let Some((vus_h, vus_max_h)) = gauges {
                rec.add(vus_h, peak as f64);
                rec.add(vus_max_h, vus_max as f64);
            }
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
    if let Some((vus_h, vus_max_h)) = gauges.filter(|_| ticks == 0) {
        if s.start_gate.load(Ordering::SeqCst) == GO {
            // A run shorter than a second still reports its VUs.
            rec.add(vus_h, s.peak.load(Ordering::Relaxed) as f64);
            rec.add(vus_max_h, s.initialized.load(Ordering::Relaxed) as f64);
            agg.add(me, 0, rec.snapshot());
        }
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
