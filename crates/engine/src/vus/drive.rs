//! How the executors drive VUs on a worker: the looping executors' per-VU loop
//! ([`vu_loop`]), the arrival-rate executors' dispatch of due iterations to idle VUs
//! ([`arrivals`]), and the timing helpers they share (start spread, timer slack).

use super::*;

/// Sleep until `t`; false when the run stopped first.
pub(super) async fn wait_until<F>(s: &Shared<F>, env: &WorkerEnv, t: Instant) -> bool {
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
pub(super) async fn vu_loop<F: VuFactory>(
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
    // Self-paced bodies (quick mode's connections) start together, as their load is theirs.
    let off = match ex {
        Executor::RampingVus(_) => Duration::ZERO,
        _ if spec.self_paced => Duration::ZERO,
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
                // A segment's VUs follow the whole test's ramp by their test-wide ids.
                let (r, idx) = match &s.plan.segment {
                    Some(g) => match &g.whole[sc] {
                        Executor::RampingVus(w) => (w, env.vu_id_in_test(idx)),
                        _ => (r, idx),
                    },
                    None => (r, idx),
                };
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
pub(super) async fn arrivals<F: VuFactory>(
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
            // A segment starts its stripe of the whole test's arrivals.
            let Some(at) = schedule.arrival(env.iteration_in_test(k)) else {
                break;
            };
            let due = begin + crate::clamp_secs(at);
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
                            // Ctrl-C cut the new VU's init: that is no script error.
                            if !s.ctl.was_interrupted() {
                                s.abort("init", e);
                            }
                            break;
                        }
                    },
                    None => None,
                },
            };
            let Some((id, mut body)) = vu else {
                st.dropped.fetch_add(1, Ordering::Relaxed);
                if let Some(h) = &h.0 {
                    env.recorder.borrow_mut().add(h.dropped, 1.0);
                }
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
pub(super) fn trim_heap() {
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
pub(super) const START_SPREAD_MAX: Duration = Duration::from_secs(1);

/// When VU `vu` (1-based within its scenario) of `max_vus` starts its first iteration, after
/// the scenario's start: the VUs' starts are spread evenly over `max_vus` × 200 µs, at most
/// 1 s (50 VUs: 10 ms; 5,000 VUs: 1 s), rather than all in one instant. Thousands of VUs that
/// each request and then sleep would otherwise stay in lock-step and hit the target in one
/// burst every period, and the burst's queueing would be all their latency shows. k6 does not
/// fire them in one instant either: its first 5,000 requests are spread over about 0.9 s.
pub(super) fn start_offset(vu: u64, max_vus: u64) -> Duration {
    if max_vus <= 1 || vu == 0 {
        return Duration::ZERO;
    }
    let window = (START_SPREAD_PER_VU * max_vus.min(u32::MAX as u64) as u32).min(START_SPREAD_MAX);
    window.mul_f64((vu - 1) as f64 / max_vus as f64)
}
