//! The coordinator's run: start the server, wait for the start barrier (or
//! `--start-timeout`), then once a second merge the agents' latest running totals, show the
//! progress, judge `abortOnFail` thresholds on the merged figures and watch for lost agents;
//! at the end merge the final results (a lost agent's last totals and points stand in for
//! its final result) into one judged [`RunResult`] and say how the run ended. `--out`
//! InfluxDB/Prometheus outputs get each merged second once every running agent reported
//! past it.

use crate::hub::{Hub, HubConfig, State};
use crate::proto::Snapshot;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio_rustls::TlsAcceptor;
use volley_engine::control::RunPhase;
use volley_engine::RunControl;
use volley_metrics::{Agg, Event, RunMeta, RunResult, TagSet};
use volley_run::execute::{holds_now, judge, thresholds_message, AbortWatch};
use volley_run::outputs::merged::MergedOutputs;
use volley_run::thresholds::Threshold;
use volley_run::Outcome;

/// The shortest time between two live judgements of `abortOnFail` thresholds.
const JUDGE_EVERY: Duration = Duration::from_millis(200);

/// What the coordinator does when an agent stops reporting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossPolicy {
    /// Mark it lost, keep what it sent, finish with the others.
    Continue,
    /// Stop every agent and end with [`Outcome::Aborted`] (k6's 108).
    Abort,
}

pub struct Config {
    pub instances: usize,
    pub listen: String,
    pub token: String,
    pub tls: Option<TlsAcceptor>,
    pub on_agent_loss: LossPolicy,
    /// All agents must be at the barrier within this.
    pub start_timeout: Duration,
    /// An agent silent this long is lost.
    pub agent_timeout: Duration,
    pub archive: Vec<u8>,
    pub env: Vec<(String, String)>,
    /// Judged on the merged figures: live (`abortOnFail`) and at the end.
    pub thresholds: Vec<Threshold>,
    pub max_duration_s: f64,
    /// The whole test's meta (mode, name, command line) and options, for the merged result.
    pub meta: RunMeta,
    pub options: serde_json::Value,
    /// Print a progress line (every second on a terminal, every 10 s otherwise).
    pub progress: Option<Duration>,
    /// `--out` outputs fed from the merged series (finished with the merged result).
    pub outputs: Option<MergedOutputs>,
}

/// A finished distributed run.
pub struct Ended {
    pub result: RunResult,
    pub outcome: Outcome,
    /// k6's message when `abortOnFail` thresholds stopped the test.
    pub threshold_abort: Option<String>,
    /// One line per lost agent (name, segment, when).
    pub lost: Vec<String>,
    /// From the last agent's final result to the judged merged result.
    pub merge_time: Duration,
    /// What the outputs could not do (warnings; the outcome stands).
    pub output_problems: Vec<String>,
}

/// Run the coordinator until every agent finished or was lost. `listening` is told the bound
/// address (a port 0 in `--listen` picks one).
pub fn run(
    mut cfg: Config,
    ctl: &RunControl,
    listening: impl FnOnce(std::net::SocketAddr),
) -> Result<Ended, Outcome> {
    use base64::Engine;
    let hub = Arc::new(Hub::new(HubConfig {
        instances: cfg.instances,
        archive: base64::engine::general_purpose::STANDARD.encode(&cfg.archive),
        env: cfg.env.clone(),
    }));
    let server = crate::server::start(&cfg.listen, cfg.token.clone(), cfg.tls.clone(), hub.clone())
        .map_err(Outcome::Failure)?;
    listening(server.addr);
    // The test was prepared here (init phase), but no VU of this process runs it: until the
    // barrier opens a Ctrl-C stops a test that has not started (not "the script's init code").
    ctl.status().set_phase(RunPhase::Starting);
    let began = Instant::now();
    let mut watch = AbortWatch::new(&cfg.thresholds, cfg.max_duration_s);
    let mut aborted: Option<String> = None;
    let mut next_tick = Instant::now();
    let mut last_progress = Instant::now();
    let mut last_judged = Instant::now();
    let watching = cfg.thresholds.iter().any(|t| t.abort_on_fail);
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let mut st = hub.lock();
        if ctl.was_interrupted() {
            st.stop = true;
        }
        let Some(started) = st.started else {
            // An agent that cannot prepare the test: nobody will start it, say why now.
            if let Some(f) = st.failed.first() {
                let msg = st.failure(f);
                let outcome = prepare_failure(f.code, msg);
                drop(st);
                linger(&hub);
                return Err(outcome);
            }
            if ctl.was_interrupted() {
                st.fail = Some("the coordinator was interrupted before the start".into());
                drop(st);
                linger(&hub);
                return Err(Outcome::InterruptedBeforeStart(
                    "interrupted while waiting for the agents".into(),
                ));
            }
            if began.elapsed() >= cfg.start_timeout {
                let msg = format!(
                    "{} of {} agents registered and {} ready within --start-timeout {}s: \
                     start the missing agents (volley agent --coordinator {}) or raise \
                     --start-timeout",
                    st.agents.len(),
                    cfg.instances,
                    st.agents.iter().filter(|a| a.ready).count(),
                    cfg.start_timeout.as_secs(),
                    server.addr
                );
                st.fail = Some(msg.clone());
                drop(st);
                linger(&hub);
                return Err(Outcome::Failure(msg));
            }
            continue;
        };
        if ctl.status().phase() != RunPhase::Iterations {
            ctl.status().set_phase(RunPhase::Iterations);
        }
        // An agent that failed after the start (its setup) is lost now, not at its timeout.
        for f in std::mem::take(&mut st.failed) {
            let msg = st.failure(&f);
            if let Some(a) = st.agents.get_mut(f.agent).filter(|a| a.active()) {
                a.lost_at = Some(SystemTime::now());
                volley_engine::log::warn(&msg);
            }
        }
        // Loss: an agent silent too long (killed, cut off, stuck).
        for a in st.agents.iter_mut().filter(|a| a.active()) {
            if a.last_seen.elapsed() >= cfg.agent_timeout {
                a.lost_at = Some(SystemTime::now() - a.last_seen.elapsed());
                volley_engine::log::warn(&format!(
                    "agent '{}' (segment {}) lost: nothing from it for {:.0}s",
                    a.name,
                    a.segment,
                    a.last_seen.elapsed().as_secs_f64()
                ));
                if cfg.on_agent_loss == LossPolicy::Abort && aborted.is_none() {
                    aborted = Some(format!(
                        "agent '{}' was lost and --on-agent-loss is abort",
                        a.name
                    ));
                }
            }
        }
        if aborted.is_some() {
            st.stop = true;
        }
        if !st.agents.iter().any(|a| a.active()) {
            break;
        }
        // Judged once a second, and (with abortOnFail thresholds) soon after each new
        // snapshot, so a crossing stops the agents within about a snapshot period.
        let due = Instant::now() >= next_tick;
        let fresh = watching && st.fresh && last_judged.elapsed() >= JUDGE_EVERY;
        if !due && !fresh {
            continue;
        }
        if due {
            next_tick = Instant::now() + Duration::from_secs(1);
        }
        st.fresh = false;
        last_judged = Instant::now();
        let elapsed = started.elapsed();
        let totals = live_totals(&st);
        let series = || totals.iter().map(|(k, a)| (k.0.as_str(), &k.1, a));
        let warmup_s = watch.warmup_s();
        // Drift checks on the merged timeline (t = 0 at the barrier), as volley run judges
        // them on its own: slopes after the warm-up, gauge limits at once.
        let timeline = st.live.series();
        if watch.judge(&cfg.thresholds, elapsed, |th| match th.drift {
            Some(_) => {
                th.check_live_on(series(), timeline, elapsed.as_secs_f64(), warmup_s) != Some(false)
            }
            None => holds_now(th, series(), elapsed),
        }) {
            st.stop = true;
            if let Some(m) = watch.message() {
                volley_engine::log::error(m);
            }
        }
        if let (true, Some(o)) = (due, cfg.outputs.as_mut()) {
            o.feed(
                st.live.base_unix_s(),
                &st.live.series().points,
                complete_t(&st),
            );
        }
        if let Some(every) = cfg.progress {
            if last_progress.elapsed() >= every {
                last_progress = Instant::now();
                eprintln!("{}", progress_line(&st, &totals, elapsed));
            }
        }
    }
    let mut st = hub.lock();
    let teardown_error = st
        .agents
        .iter()
        .find_map(|a| a.done.as_ref()?.teardown_error.clone());
    let script_abort = st
        .agents
        .iter()
        .find_map(|a| a.done.as_ref()?.aborted.clone());
    let merging = Instant::now();
    let (result, lost) = merged(&cfg, &mut st, watch.aborted(), ctl.was_interrupted())?;
    // From the last final result (or the start of the merge) to the judged result.
    let merge_time = st.last_final.unwrap_or(merging).elapsed();
    drop(st);
    let output_problems = match cfg.outputs.take() {
        Some(o) => o.finish(&result),
        None => Vec::new(),
    };
    let outcome = match Outcome::of_run(
        teardown_error.as_deref(),
        aborted.as_deref().or(script_abort.as_deref()),
        thresholds_message(&result),
        result.meta.interrupted,
        false,
    ) {
        Outcome::ThresholdsFailed(m) if watch.message().is_some() => Outcome::ThresholdsAborted(m),
        o => o,
    };
    Ok(Ended {
        result,
        outcome,
        threshold_abort: watch.message().map(str::to_string),
        lost,
        merge_time,
        output_problems,
    })
}

/// The live series' offset before which every second is final: each agent not lost has sent
/// its points up to there. A done agent counts with the seconds its snapshots reached: its
/// last seconds came only in its final result, so they are sent from the merged result at
/// the end (counting it as complete sent those seconds without its share, and never again).
/// Lost agents send no more.
fn complete_t(st: &State) -> u64 {
    let base_s = st.live.base_unix_s();
    st.agents
        .iter()
        .filter(|a| a.lost_at.is_none())
        .map(|a| match a.started_unix_ms {
            Some(ms) => (ms / 1000 + a.next_t).saturating_sub(base_s),
            None => 0,
        })
        .min()
        .unwrap_or(u64::MAX)
}

/// The coordinator's ending for an agent's `failed` message with exit code `code`: the same
/// kind of error (and so the same exit code) as the agent's.
fn prepare_failure(code: i32, msg: String) -> Outcome {
    use volley_run::outcome::code;
    match code {
        code::INVALID_CONFIG => Outcome::ConfigError(msg),
        code::SETUP_TIMEOUT => Outcome::SetupTimeout(msg),
        code::INTERRUPTED => Outcome::InterruptedBeforeStart(msg),
        code::FAILURE => Outcome::Failure(msg),
        _ => Outcome::ScriptError(msg),
    }
}

/// Keep answering a moment so waiting agents hear why the run will not start.
fn linger(hub: &Hub) {
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until && hub.lock().agents.iter().any(|a| a.ready) {
        std::thread::sleep(Duration::from_millis(100));
    }
}

type Totals = BTreeMap<(String, TagSet), Agg>;

/// Every agent's latest running totals, merged (histograms add).
fn live_totals(st: &State) -> Totals {
    let mut out = Totals::new();
    for s in st.agents.iter().filter_map(|a| a.latest.as_ref()) {
        for m in &s.metrics {
            let Ok(agg) = m.to_agg() else { continue };
            match out.entry((m.name.clone(), m.tags.clone())) {
                std::collections::btree_map::Entry::Occupied(mut e) => {
                    volley_metrics::merge::combine_instance(&m.name, e.get_mut(), &agg)
                }
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(agg);
                }
            }
        }
    }
    out
}

fn progress_line(st: &State, totals: &Totals, elapsed: Duration) -> String {
    let count = |name: &str| -> f64 {
        totals
            .iter()
            .filter(|(k, _)| k.0 == name)
            .map(|(_, a)| match a {
                Agg::Counter { sum, .. } => *sum,
                _ => 0.0,
            })
            .sum()
    };
    let active = st.agents.iter().filter(|a| a.active()).count();
    let lost = st.agents.iter().filter(|a| a.lost_at.is_some()).count();
    let secs = elapsed.as_secs_f64().max(1e-3);
    let reqs = count(volley_metrics::names::HTTP_REQS);
    format!(
        "running ({:.1}s), {active}/{} agents running{}, {} iterations, {} requests ({:.1}/s)",
        elapsed.as_secs_f64(),
        st.agents.len(),
        if lost > 0 {
            format!(", {lost} lost")
        } else {
            String::new()
        },
        count(volley_metrics::names::ITERATIONS),
        reqs,
        reqs / secs
    )
}

/// A counter's sum over its series in a snapshot's totals.
fn counter_sum(metrics: &[volley_metrics::MetricTotal], name: &str) -> f64 {
    metrics
        .iter()
        .filter(|m| m.name == name)
        .filter_map(|m| match m.to_agg() {
            Ok(Agg::Counter { sum, .. }) => Some(sum),
            _ => None,
        })
        .sum()
}

fn at(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// A lost agent's part: its last running totals (its points are in the live series).
fn partial(
    cfg: &Config,
    template: &serde_json::Value,
    s: &Snapshot,
    lost_at: SystemTime,
) -> RunResult {
    let start = at(s.started_unix_ms);
    let meta = cfg.meta.clone().timed(
        start,
        lost_at,
        Duration::from_secs_f64(s.elapsed_s.max(0.0)),
        false,
    );
    RunResult::new(
        meta,
        template.clone(),
        s.metrics.clone(),
        volley_metrics::Series::default(),
    )
}

/// One judged result from the final results (moved out of `st`) and the lost agents' parts.
fn merged(
    cfg: &Config,
    st: &mut State,
    aborted: &[bool],
    interrupted: bool,
) -> Result<(RunResult, Vec<String>), Outcome> {
    let template = st
        .agents
        .iter()
        .find_map(|a| Some(a.done.as_ref()?.result.options.clone()))
        .unwrap_or_else(|| cfg.options.clone());
    let t0 = st.started_wall.unwrap_or_else(SystemTime::now);
    let mut parts: Vec<(String, RunResult)> = Vec::new();
    let mut lost = Vec::new();
    let mut events = Vec::new();
    let mut agents = Vec::new();
    for a in st.agents.iter_mut() {
        let lost_at_s = a
            .lost_at
            .map(|t| t.duration_since(t0).unwrap_or_default().as_secs_f64());
        let reqs = match (&a.done, &a.latest) {
            (Some(f), _) => f.result.counter_sum(volley_metrics::names::HTTP_REQS),
            (None, Some(s)) => counter_sum(&s.metrics, volley_metrics::names::HTTP_REQS),
            (None, None) => 0.0,
        };
        agents.push(serde_json::json!({
            "name": a.name, "segment": a.segment, "lost_at_s": lost_at_s, "http_reqs": reqs,
        }));
        match (a.done.take(), a.lost_at) {
            // The series is the live one (below): only the totals are merged here.
            (Some(f), _) => parts.push((a.name.clone(), f.result)),
            (None, Some(when)) => {
                let at_s = lost_at_s.unwrap_or_default();
                lost.push(format!(
                    "agent '{}' (segment {}) was lost {at_s:.1}s into the run; its data up to \
                     then is kept",
                    a.name, a.segment
                ));
                events.push(Event {
                    kind: "agent_lost".into(),
                    target: a.name.clone(),
                    at_s,
                    end_s: None,
                    detail: format!("segment {}", a.segment),
                    affected: None,
                    error: None,
                });
                if let Some(s) = &a.latest {
                    parts.push((a.name.clone(), partial(cfg, &template, s, when)));
                }
            }
            (None, None) => {}
        }
    }
    if parts.is_empty() {
        return Err(Outcome::Failure(
            "every agent was lost before it sent any data: there is no result".into(),
        ));
    }
    let inputs: Vec<(&str, &RunResult)> = parts.iter().map(|(n, r)| (n.as_str(), r)).collect();
    // Forced: a lost agent's part carries the template's options, not its own segment.
    let mut result = volley_metrics::merge::merge(&inputs, true)
        .map_err(|e| Outcome::Failure(format!("cannot merge the agents' results: {e}")))?;
    let live = std::mem::replace(&mut st.live, crate::live::LiveSeries::new(0));
    result.series = live.rebased(result.meta.started_unix_ms);
    result.meta.command = cfg.meta.command.clone();
    result.meta.name = cfg.meta.name.clone();
    result.meta.host = cfg.meta.host.clone();
    result.meta.instances = st.agents.len() as u32;
    result.meta.interrupted |= interrupted;
    result.events.extend(events);
    if let Some(o) = result.options.as_object_mut() {
        o.insert(
            "distributed".into(),
            serde_json::json!({ "instances": cfg.instances, "agents": agents }),
        );
    }
    judge(&cfg.thresholds, aborted, &mut result);
    Ok((result, lost))
}
