//! Carrying out a [`Schedule`] during a run: a thread that watches the run's clock (and its
//! completed iterations, fed once a second by [`Injector::observer`]) starts each fault when
//! its trigger fires, ends it after its window, and records both as [`Event`]s for the
//! result file, the report and the summary lines.

use crate::ledger::Ledger;
use crate::process::ProcessTarget;
use crate::proxy::{ProxyHandle, ToxicId};
use crate::schedule::{Action, Fault, ProcessOp, Schedule, Target, Trigger};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use volley_metrics::Event;

/// How often the injector looks at the clock: faults start within this of their time.
const POLL: Duration = Duration::from_millis(10);

/// Where a fault is in its life.
enum State {
    Pending,
    /// Started; ends at `until` (None: at the end of the run).
    Active {
        until: Option<Instant>,
        toxic: Option<ToxicId>,
        event: usize,
    },
    Done,
}

struct Inner {
    schedule: Schedule,
    proxies: BTreeMap<String, Arc<ProxyHandle>>,
    targets: Mutex<BTreeMap<String, Box<dyn ProcessTarget>>>,
    started: Mutex<Instant>,
    iterations: AtomicU64,
    events: Mutex<Vec<Event>>,
    states: Mutex<Vec<State>>,
    stop: AtomicBool,
    ledger: Option<Arc<Ledger>>,
}

/// Runs a schedule's faults against proxies and process targets.
pub struct Injector {
    inner: Arc<Inner>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Injector {
    /// Check that every proxy and named target the schedule uses is given (a usage error
    /// names the first one missing), ready to [`Injector::start`].
    pub fn new(
        schedule: Schedule,
        proxies: BTreeMap<String, Arc<ProxyHandle>>,
        targets: BTreeMap<String, Box<dyn ProcessTarget>>,
    ) -> Result<Injector, String> {
        for f in &schedule.faults {
            match &f.action {
                Action::Proxy { proxy, .. } if !proxies.contains_key(proxy) => {
                    return Err(format!(
                        "--fault '{}': no proxy named '{proxy}'\n  hint: start it with --proxy \
                         {proxy}=127.0.0.1:0->HOST:PORT",
                        f.text
                    ))
                }
                Action::Process {
                    target: Target::Named(n),
                    ..
                } if !targets.contains_key(n) => {
                    return Err(format!(
                        "--fault '{}': no process target named '{n}'\n  hint: give --fault-target \
                         {n}=COMMAND (Volley starts it and can restart it), or kill=pid:N",
                        f.text
                    ))
                }
                _ => {}
            }
        }
        let states = schedule.faults.iter().map(|_| State::Pending).collect();
        Ok(Injector {
            inner: Arc::new(Inner {
                schedule,
                proxies,
                targets: Mutex::new(targets),
                started: Mutex::new(Instant::now()),
                iterations: AtomicU64::new(0),
                events: Mutex::new(Vec::new()),
                states: Mutex::new(states),
                stop: AtomicBool::new(false),
                ledger: None,
            }),
            thread: None,
        })
    }

    /// Also write each fault to the ledger, so a verify step knows what the data went through.
    pub fn with_ledger(mut self, ledger: Option<Arc<Ledger>>) -> Injector {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.ledger = ledger;
        }
        self
    }

    /// Start the clock (the run starts now) and the thread that applies the faults.
    pub fn start(&mut self) {
        *self.inner.started.lock().unwrap() = Instant::now();
        let inner = self.inner.clone();
        self.thread = std::thread::Builder::new()
            .name("volley-faults".into())
            .spawn(move || {
                while !inner.stop.load(Ordering::Relaxed) {
                    inner.step(false);
                    std::thread::sleep(POLL);
                }
            })
            .ok();
    }

    /// Feed the run's completed iterations (`after=N` triggers).
    pub fn set_iterations(&self, n: u64) {
        self.inner.iterations.store(n, Ordering::Relaxed);
    }

    /// An observer of the run that feeds the clock and iteration count.
    pub fn observer(&self) -> Box<dyn volley_run::Observer> {
        Box::new(Feed(self.inner.clone()))
    }

    /// The run is over: end open faults (resume paused processes, switch toxics off) and
    /// return the events.
    pub fn finish(&mut self) -> Vec<Event> {
        self.inner.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.inner.step(true);
        self.events()
    }

    /// The events so far.
    pub fn events(&self) -> Vec<Event> {
        self.inner.events.lock().unwrap().clone()
    }
}

impl Drop for Injector {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.finish();
        }
    }
}

struct Feed(Arc<Inner>);

impl volley_run::Observer for Feed {
    fn tick(&mut self, tick: &volley_engine::vus::Tick<'_>) {
        let count = |name: &str| -> f64 {
            tick.agg
                .totals()
                .filter(|(d, _)| d.key.name == name)
                .map(|(_, a)| match a {
                    volley_metrics::Agg::Counter { sum, .. } => *sum,
                    _ => 0.0,
                })
                .sum()
        };
        // Quick mode has no iterations: each request is one.
        let mut n = count(volley_metrics::names::ITERATIONS);
        if n == 0.0 {
            n = count(volley_metrics::names::HTTP_REQS);
        }
        self.0.iterations.store(n as u64, Ordering::Relaxed);
        // The run's own clock (it started with setup) is the one faults are scheduled on.
        if let Some(t) = Instant::now().checked_sub(tick.elapsed) {
            *self.0.started.lock().unwrap() = t;
        }
    }
}

impl Inner {
    fn elapsed(&self) -> Duration {
        self.started.lock().unwrap().elapsed()
    }

    /// Start what is due and end what is over (`last`: the run ended, end everything).
    fn step(&self, last: bool) {
        let now = Instant::now();
        let at = self.elapsed();
        let iters = self.iterations.load(Ordering::Relaxed);
        let mut states = self.states.lock().unwrap();
        for (i, f) in self.schedule.faults.iter().enumerate() {
            match &states[i] {
                State::Pending if !last => {
                    let due = match f.trigger {
                        Trigger::At(d) => at >= d,
                        Trigger::AfterIterations(n) => iters >= n,
                    };
                    if due {
                        states[i] = self.begin(f, at);
                    }
                }
                State::Active {
                    until,
                    toxic,
                    event,
                } if last || until.is_some_and(|u| now >= u) => {
                    self.end(f, *toxic, *event, self.elapsed());
                    states[i] = State::Done;
                }
                _ => {}
            }
        }
    }

    fn begin(&self, f: &Fault, at: Duration) -> State {
        let mut ev = Event {
            kind: f.kind().to_string(),
            target: f.target(),
            at_s: at.as_secs_f64(),
            end_s: None,
            detail: f.detail(),
            affected: None,
            error: None,
        };
        let until = f.window.map(|w| Instant::now() + w);
        let mut toxic = None;
        let mut windowed = f.window.is_some();
        match &f.action {
            Action::Proxy {
                proxy,
                toxic: t,
                share,
                seed,
            } => {
                // Checked in `new`.
                if let Some(p) = self.proxies.get(proxy) {
                    toxic = Some(p.add(t.clone(), *share, *seed));
                }
                windowed = true;
            }
            Action::Process { target, op } => {
                let r = self.with_target(target, |t| match op {
                    ProcessOp::Kill => t.kill(),
                    ProcessOp::Term => t.term(),
                    ProcessOp::Pause => t.pause(),
                    ProcessOp::Restart => t.restart(),
                });
                if let Err(e) = r {
                    ev.error = Some(e);
                    windowed = false;
                }
                if *op == ProcessOp::Restart {
                    windowed = false;
                }
            }
        }
        self.note(&ev, "start");
        let mut events = self.events.lock().unwrap();
        events.push(ev);
        let event = events.len() - 1;
        if windowed {
            State::Active {
                until,
                toxic,
                event,
            }
        } else {
            State::Done
        }
    }

    fn end(&self, f: &Fault, toxic: Option<ToxicId>, event: usize, at: Duration) {
        let mut error = None;
        let mut affected = None;
        match &f.action {
            Action::Proxy { proxy, .. } => {
                if let (Some(p), Some(id)) = (self.proxies.get(proxy), toxic) {
                    affected = Some(p.remove(id));
                }
            }
            Action::Process { target, op } => {
                let r = self.with_target(target, |t| match op {
                    ProcessOp::Pause => t.resume(),
                    // A kill or term with a window: the target comes back after it.
                    ProcessOp::Kill | ProcessOp::Term if t.can_restart() => t.restart(),
                    _ => Ok(()),
                });
                error = r.err();
            }
        }
        let ev = {
            let mut events = self.events.lock().unwrap();
            let ev = &mut events[event];
            ev.end_s = Some(at.as_secs_f64());
            ev.affected = affected;
            if ev.error.is_none() {
                ev.error = error;
            }
            ev.clone()
        };
        self.note(&ev, "end");
    }

    fn with_target(
        &self,
        target: &Target,
        act: impl FnOnce(&mut dyn ProcessTarget) -> Result<(), String>,
    ) -> Result<(), String> {
        match target {
            Target::Pid(p) => act(&mut crate::process::PidTarget(*p)),
            Target::Named(n) => {
                let mut targets = self.targets.lock().unwrap();
                match targets.get_mut(n) {
                    Some(t) => act(t.as_mut()),
                    None => Err(format!("no process target named '{n}'")),
                }
            }
        }
    }

    /// Tell the ledger (when there is one) so verification knows what happened.
    fn note(&self, ev: &Event, phase: &str) {
        if let Some(l) = &self.ledger {
            let _ = l.fault(phase, ev);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_proxies_and_targets_are_refused_with_a_hint() {
        let s = Schedule::parse(&["at=1s,proxy=api,reset"]).unwrap();
        let e = Injector::new(s, BTreeMap::new(), BTreeMap::new())
            .err()
            .unwrap();
        assert!(e.contains("--proxy api="), "{e}");
        let s = Schedule::parse(&["at=1s,kill=db"]).unwrap();
        let e = Injector::new(s, BTreeMap::new(), BTreeMap::new())
            .err()
            .unwrap();
        assert!(e.contains("--fault-target db="), "{e}");
    }

    #[test]
    fn a_windowed_fault_starts_and_ends_on_the_clock() {
        let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let p = crate::proxy::Proxy::start(
            "127.0.0.1:0".parse().unwrap(),
            upstream.local_addr().unwrap(),
        )
        .unwrap();
        let mut proxies = BTreeMap::new();
        proxies.insert("api".to_string(), Arc::new(p));
        let s = Schedule::parse(&[
            "at=50ms,for=100ms,proxy=api,latency=5ms",
            "at=10s,proxy=api,reset",
        ])
        .unwrap();
        let mut inj = Injector::new(s, proxies, BTreeMap::new()).unwrap();
        inj.start();
        std::thread::sleep(Duration::from_millis(400));
        let ev = inj.finish();
        assert_eq!(ev.len(), 1, "{ev:?}");
        assert_eq!(ev[0].kind, "latency");
        assert!(ev[0].at_s >= 0.05 && ev[0].at_s < 0.3, "{ev:?}");
        let end = ev[0].end_s.unwrap();
        assert!(end - ev[0].at_s >= 0.1 && end < 0.4, "{ev:?}");
        assert_eq!(ev[0].affected, Some(0));
    }
}
