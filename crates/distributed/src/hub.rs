//! The coordinator's state: who registered, the start barrier, each agent's latest
//! snapshot and series, their final results, who was lost and when, and the stop flag
//! every answer carries. The HTTP handlers ([`crate::server`]) and the coordinator's
//! once-a-second loop ([`crate::coordinator`]) share it behind one mutex; nothing slow
//! happens while it is held.

use crate::live::LiveSeries;
use crate::proto::{self, Assignment, Failed, Final, Ready, Register, Reply, Snapshot};
use std::sync::{Mutex, MutexGuard};
use std::time::{Instant, SystemTime};
use volley_metrics::Point;

/// What the coordinator hands out.
pub struct HubConfig {
    pub instances: usize,
    /// The archive, base64.
    pub archive: String,
    pub env: Vec<(String, String)>,
}

/// One agent as the coordinator sees it.
pub struct Agent {
    pub name: String,
    pub index: usize,
    pub segment: String,
    pub last_seen: Instant,
    pub ready: bool,
    /// Its latest running totals.
    pub latest: Option<Snapshot>,
    /// Its run's start (its points' t = 0) and how far its points have come.
    pub started_unix_ms: Option<u64>,
    pub next_t: u64,
    pub done: Option<Final>,
    pub lost_at: Option<SystemTime>,
}

impl Agent {
    /// Still expected to report (neither finished nor lost).
    pub fn active(&self) -> bool {
        self.done.is_none() && self.lost_at.is_none()
    }
}

/// Everything shared between the handlers and the loop.
pub struct State {
    pub agents: Vec<Agent>,
    pub setup_data: Option<String>,
    /// The start barrier passed (all agents ready), when.
    pub started: Option<Instant>,
    pub started_wall: Option<SystemTime>,
    pub stop: bool,
    /// The run cannot start: every waiting agent is told why.
    pub fail: Option<String>,
    /// A snapshot came since the coordinator last merged.
    pub fresh: bool,
    /// Every agent's points, merged as they come.
    pub live: LiveSeries,
    /// When the last final result came.
    pub last_final: Option<Instant>,
    /// Agents that said their part cannot run (`failed`), not yet acted on.
    pub failed: Vec<Failed>,
}

impl State {
    /// What to say about an agent's `failed` message.
    pub fn failure(&self, f: &Failed) -> String {
        match self.agents.get(f.agent) {
            Some(a) => format!(
                "agent {} ('{}', segment {}) failed: {}",
                a.index, a.name, a.segment, f.error
            ),
            None => format!("agent {} failed: {}", f.agent, f.error),
        }
    }
}

pub struct Hub {
    cfg: HubConfig,
    state: Mutex<State>,
}

/// An error answer: status and message.
pub type Refusal = (u16, String);

impl Hub {
    pub fn new(cfg: HubConfig) -> Hub {
        Hub {
            cfg,
            state: Mutex::new(State {
                agents: Vec::new(),
                setup_data: None,
                started: None,
                started_wall: None,
                stop: false,
                fail: None,
                fresh: false,
                live: LiveSeries::new(volley_metrics::time::unix_ms(SystemTime::now())),
                last_final: None,
                failed: Vec::new(),
            }),
        }
    }

    pub fn instances(&self) -> usize {
        self.cfg.instances
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn register(&self, r: Register) -> Result<Assignment, Refusal> {
        if r.version != proto::VERSION {
            return Err((
                409,
                format!(
                    "the coordinator runs Volley {}, this agent {}: run the same version on both",
                    proto::VERSION,
                    r.version
                ),
            ));
        }
        let mut st = self.lock();
        let index = st.agents.len();
        if index >= self.cfg.instances || st.fail.is_some() {
            return Err((
                410,
                format!(
                    "the run already has its {} agents (or has ended)",
                    self.cfg.instances
                ),
            ));
        }
        let (segment, sequence) = proto::segment(index, self.cfg.instances);
        let name = if r.name.is_empty() {
            format!("agent-{index}")
        } else {
            r.name.chars().take(100).collect()
        };
        st.agents.push(Agent {
            name,
            index,
            segment: segment.clone(),
            last_seen: Instant::now(),
            ready: false,
            latest: None,
            started_unix_ms: None,
            next_t: 0,
            done: None,
            lost_at: None,
        });
        Ok(Assignment {
            agent: index,
            index,
            instances: self.cfg.instances,
            segment,
            sequence,
            archive: self.cfg.archive.clone(),
            env: self.cfg.env.clone(),
        })
    }

    /// The agent behind `id`, seen now; refused when unknown or already lost.
    fn seen(agents: &mut [Agent], id: usize) -> Result<&mut Agent, Refusal> {
        let a = agents
            .get_mut(id)
            .ok_or_else(|| (404, format!("no agent {id}: register first")))?;
        if a.lost_at.is_some() {
            return Err((410, "this agent was marked lost; its part is over".into()));
        }
        a.last_seen = Instant::now();
        Ok(a)
    }

    fn reply(&self, st: &State) -> Reply {
        Reply {
            go: st.started.is_some(),
            stop: st.stop,
            fail: st.fail.clone(),
            setup_data: st.setup_data.clone(),
        }
    }

    /// An agent is at the start barrier; the barrier passes when all are.
    pub fn ready(&self, r: Ready) -> Result<Reply, Refusal> {
        let mut st = self.lock();
        let a = Self::seen(&mut st.agents, r.agent)?;
        a.ready = true;
        if a.index == 0 {
            st.setup_data = r.setup_data;
        }
        if st.started.is_none()
            && st.fail.is_none()
            && st.agents.len() == self.cfg.instances
            && st.agents.iter().all(|a| a.ready)
        {
            st.started = Some(Instant::now());
            st.started_wall = Some(SystemTime::now());
            st.live
                .start_at(volley_metrics::time::unix_ms(SystemTime::now()));
        }
        Ok(self.reply(&st))
    }

    pub fn snapshot(&self, s: Snapshot) -> Result<Reply, Refusal> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let a = Self::seen(&mut st.agents, s.agent)?;
        // A snapshot sent before the agent's first tick says 0 (not known yet): keeping that
        // placed every point of the agent as if it had started at the barrier's second.
        if s.started_unix_ms > 0 && a.started_unix_ms.is_none() {
            a.started_unix_ms = Some(s.started_unix_ms);
        }
        let start = a.started_unix_ms.unwrap_or(s.started_unix_ms);
        take_points(&mut st.live, a, start, &s.points);
        if !s.metrics.is_empty() {
            a.latest = Some(Snapshot {
                points: Vec::new(),
                ..s
            });
            st.fresh = true;
        }
        Ok(self.reply(st))
    }

    /// Agent 0 asks whether teardown may run: once every other agent has finished or is lost.
    pub fn teardown(&self, id: usize) -> Result<Reply, Refusal> {
        let mut st = self.lock();
        Self::seen(&mut st.agents, id)?;
        let others_done = st.agents.iter().all(|a| a.index == id || !a.active());
        let mut r = self.reply(&st);
        r.go = others_done;
        Ok(r)
    }

    pub fn finish(&self, f: Final) -> Result<Reply, Refusal> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let a = Self::seen(&mut st.agents, f.agent)?;
        // The points sent since its last snapshot come with the result.
        let start = *a
            .started_unix_ms
            .get_or_insert(f.result.meta.started_unix_ms);
        take_points(&mut st.live, a, start, &f.result.series.points);
        // Only the totals are merged at the end: free the points now, while others still run.
        let mut f = f;
        f.result.series.points = Vec::new();
        a.done = Some(f);
        st.last_final = Some(Instant::now());
        Ok(self.reply(st))
    }
}

impl Hub {
    /// An agent cannot run its part. Before the start nobody will: every agent waiting at
    /// the barrier is told to give up, and the coordinator ends with the agent's error.
    pub fn failed(&self, f: Failed) -> Result<Reply, Refusal> {
        let mut st = self.lock();
        Self::seen(&mut st.agents, f.agent)?;
        let what = st.failure(&f);
        if st.started.is_none() {
            st.fail.get_or_insert(what);
        }
        st.failed.push(f);
        Ok(self.reply(&st))
    }
}

/// The agent's points not seen yet, into the live series.
fn take_points(live: &mut LiveSeries, a: &mut Agent, start: u64, points: &[Point]) {
    for p in points {
        if p.t >= a.next_t {
            live.add(start, p);
            a.next_t = p.t + p.w;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hub(n: usize) -> Hub {
        Hub::new(HubConfig {
            instances: n,
            archive: String::new(),
            env: Vec::new(),
        })
    }

    fn reg(h: &Hub, name: &str) -> Result<Assignment, Refusal> {
        h.register(Register {
            name: name.into(),
            version: proto::VERSION.into(),
        })
    }

    #[test]
    fn another_version_is_refused_and_extra_agents_too() {
        let h = hub(1);
        let old = h.register(Register {
            name: "a".into(),
            version: "0.0.1".into(),
        });
        assert_eq!(old.unwrap_err().0, 409);
        assert_eq!(reg(&h, "a").unwrap().segment, "0:1");
        assert_eq!(reg(&h, "b").unwrap_err().0, 410);
    }

    #[test]
    fn the_barrier_opens_when_every_agent_is_ready_with_setups_data() {
        let h = hub(2);
        let (a, b) = (reg(&h, "a").unwrap(), reg(&h, "b").unwrap());
        let r = h
            .ready(Ready {
                agent: b.agent,
                setup_data: Some("ignored: not agent 0".into()),
            })
            .unwrap();
        assert!(!r.go);
        let r = h
            .ready(Ready {
                agent: a.agent,
                setup_data: Some("{\"k\":1}".into()),
            })
            .unwrap();
        assert!(r.go);
        assert_eq!(r.setup_data.as_deref(), Some("{\"k\":1}"));
        // Agent 0's teardown waits for the other agent's end.
        assert!(!h.teardown(a.agent).unwrap().go);
        h.lock().agents[1].lost_at = Some(SystemTime::now());
        assert!(h.teardown(a.agent).unwrap().go);
        // A lost agent is not heard again.
        let late = h.snapshot(Snapshot {
            agent: b.agent,
            ..Snapshot::default()
        });
        assert_eq!(late.unwrap_err().0, 410);
    }

    /// Regression: the first snapshot (before the agent's first tick) says started 0, and
    /// that 0 was kept: the agent's points were placed at the barrier's second instead of
    /// its own start's, and the coordinator's outputs could not tell which seconds were done.
    #[test]
    fn an_agents_start_is_learnt_from_its_first_snapshot_that_knows_it() {
        let h = hub(1);
        let a = reg(&h, "a").unwrap();
        h.lock().live = LiveSeries::new(100_000);
        let snap = |started_unix_ms, points| Snapshot {
            agent: a.agent,
            started_unix_ms,
            points,
            ..Snapshot::default()
        };
        h.snapshot(snap(0, vec![])).unwrap();
        let p = volley_metrics::Point {
            t: 0,
            w: 1,
            values: vec![],
        };
        h.snapshot(snap(102_500, vec![p])).unwrap();
        let st = h.lock();
        assert_eq!(st.agents[0].started_unix_ms, Some(102_500));
        assert_eq!(st.live.series().points[0].t, 2);
    }
}
