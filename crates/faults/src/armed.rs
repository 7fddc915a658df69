//! A run's faults from the command line's words to the finished result: `--proxy
//! NAME=LISTEN->UPSTREAM` proxies started, `--fault-target NAME=CMD` commands started,
//! `--fault` schedules checked against both ([`Armed::arm`]); then attached to a
//! [`volley_run::RunSpec`] (the injector's observer, the clock started) and, after the run,
//! the events written into the result and turned into summary lines ([`Armed::finish`]).

use crate::inject::Injector;
use crate::ledger::Ledger;
use crate::process::{CommandTarget, ProcessTarget};
use crate::proxy::{Proxy, ProxyHandle};
use crate::schedule::Schedule;
use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

/// Why faults could not be armed: bad words (exit 2) or a failure to start (exit 1).
#[derive(Debug, PartialEq)]
pub enum ArmError {
    Usage(String),
    Failure(String),
}

/// `NAME=LISTEN->UPSTREAM`, e.g. `api=127.0.0.1:0->127.0.0.1:8080`.
#[derive(Clone, Debug, PartialEq)]
pub struct ProxySpec {
    pub name: String,
    pub listen: SocketAddr,
    pub upstream: SocketAddr,
}

const PROXY_HINT: &str = "write --proxy NAME=LISTEN->UPSTREAM, e.g. \
                          api=127.0.0.1:0->127.0.0.1:8080 (port 0 picks a free one)";

impl ProxySpec {
    pub fn parse(s: &str) -> Result<ProxySpec, String> {
        let bad = |m: &str| format!("--proxy '{s}': {m}\n  hint: {PROXY_HINT}");
        let (name, rest) = s.split_once('=').ok_or_else(|| bad("no NAME="))?;
        let name = name.trim();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(bad("NAME must be letters, digits, '_' or '-'"));
        }
        let (listen, upstream) = rest.split_once("->").ok_or_else(|| bad("no '->'"))?;
        let addr = |a: &str, what: &str| -> Result<SocketAddr, String> {
            a.trim()
                .to_socket_addrs()
                .ok()
                .and_then(|mut i| i.next())
                .ok_or_else(|| bad(&format!("{what} '{}' is not HOST:PORT", a.trim())))
        };
        Ok(ProxySpec {
            name: name.to_string(),
            listen: addr(listen, "LISTEN")?,
            upstream: addr(upstream, "UPSTREAM")?,
        })
    }

    /// The environment variable a script finds the proxy's address in: `VOLLEY_PROXY_API`.
    pub fn env_name(name: &str) -> String {
        let up: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect();
        format!("VOLLEY_PROXY_{up}")
    }
}

/// A run's proxies, targets and schedule, started and checked.
#[derive(Default)]
pub struct Armed {
    /// Name and handle of each proxy, in the order given.
    pub proxies: Vec<(String, Arc<ProxyHandle>)>,
    injector: Option<Injector>,
}

impl Armed {
    /// Start the proxies and targets, and check the schedule against them. Nothing given:
    /// nothing started.
    pub fn arm(
        faults: &[String],
        proxies: &[String],
        targets: &[String],
        ledger: Option<Arc<Ledger>>,
    ) -> Result<Armed, ArmError> {
        let schedule = Schedule::parse(faults).map_err(|e| ArmError::Usage(e.to_string()))?;
        let specs = proxies
            .iter()
            .map(|p| ProxySpec::parse(p))
            .collect::<Result<Vec<_>, _>>()
            .map_err(ArmError::Usage)?;
        let mut named: Vec<(String, String)> = Vec::new();
        for t in targets {
            match t.split_once('=') {
                Some((n, c)) if !n.trim().is_empty() && !c.trim().is_empty() => {
                    named.push((n.trim().to_string(), c.to_string()))
                }
                _ => {
                    return Err(ArmError::Usage(format!(
                        "--fault-target '{t}': expected NAME=COMMAND\n  hint: e.g. --fault-target \
                         'api=volley demo serve --listen 127.0.0.1:8090 --data /tmp/drive'"
                    )))
                }
            }
        }
        let mut procs: BTreeMap<String, Box<dyn ProcessTarget>> = BTreeMap::new();
        for (n, c) in named {
            let t = CommandTarget::start(&n, &c).map_err(ArmError::Failure)?;
            procs.insert(n, Box::new(t));
        }
        Armed::arm_targets(schedule, specs, procs, ledger)
    }

    /// [`Armed::arm`] with the schedule parsed and the process targets already made (a
    /// suite's services): starts the proxies and checks the schedule against both.
    pub fn arm_targets(
        schedule: Schedule,
        specs: Vec<ProxySpec>,
        procs: BTreeMap<String, Box<dyn ProcessTarget>>,
        ledger: Option<Arc<Ledger>>,
    ) -> Result<Armed, ArmError> {
        let mut armed = Armed::default();
        let mut by_name = BTreeMap::new();
        for s in specs {
            if by_name.contains_key(&s.name) {
                return Err(ArmError::Usage(format!("--proxy {}: given twice", s.name)));
            }
            let h = Proxy::start(s.listen, s.upstream).map_err(|e| {
                ArmError::Failure(format!(
                    "--proxy {}: cannot listen on {}: {e}",
                    s.name, s.listen
                ))
            })?;
            let h = Arc::new(h);
            by_name.insert(s.name.clone(), h.clone());
            armed.proxies.push((s.name, h));
        }
        if !schedule.faults.is_empty() || !procs.is_empty() {
            let inj = Injector::new(schedule, by_name, procs).map_err(ArmError::Usage)?;
            armed.injector = Some(inj.with_ledger(ledger));
        }
        Ok(armed)
    }

    /// `VOLLEY_PROXY_<NAME>=HOST:PORT` for each proxy (scripts read it from `__ENV`).
    pub fn env(&self) -> Vec<(String, String)> {
        self.proxies
            .iter()
            .map(|(n, h)| (ProxySpec::env_name(n), h.addr().to_string()))
            .collect()
    }

    /// `$VOLLEY_PROXY_API` / `${VOLLEY_PROXY_API}` in `s` replaced by the proxy's address
    /// (`volley http`'s URL).
    pub fn expand(&self, s: &str) -> String {
        let mut out = s.to_string();
        for (k, v) in self.env() {
            out = out
                .replace(&format!("${{{k}}}"), &v)
                .replace(&format!("${k}"), &v);
        }
        out
    }

    /// One line per proxy: where it listens and where it forwards.
    pub fn describe(&self) -> Vec<String> {
        self.proxies
            .iter()
            .map(|(n, h)| {
                format!(
                    "volley: proxy {n} listening on {} -> {} (${})",
                    h.addr(),
                    h.upstream(),
                    ProxySpec::env_name(n)
                )
            })
            .collect()
    }

    /// Watch the run (its clock and iterations) and start the fault clock: call right
    /// before [`volley_run::execute`].
    pub fn attach<F: volley_engine::vus::VuFactory>(&mut self, spec: &mut volley_run::RunSpec<F>) {
        if let Some(inj) = &mut self.injector {
            spec.observers.push(inj.observer());
            inj.start();
        }
    }

    /// The run is over: end open faults, put the events in `result`, and return the summary
    /// lines (`fault: latency=200ms on api 10s–15s, 1,234 connections affected`).
    pub fn finish(&mut self, result: &mut volley_metrics::RunResult) -> Vec<String> {
        let Some(inj) = &mut self.injector else {
            return Vec::new();
        };
        result.events = inj.finish();
        volley_metrics::events::summary_lines(&result.events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_specs() {
        let p = ProxySpec::parse("api=127.0.0.1:0->127.0.0.1:8080").unwrap();
        assert_eq!(p.name, "api");
        assert_eq!(p.upstream.port(), 8080);
        assert_eq!(ProxySpec::env_name("my-api"), "VOLLEY_PROXY_MY_API");
        let e = ProxySpec::parse("api=127.0.0.1:0").unwrap_err();
        assert!(e.contains("no '->'") && e.contains("hint:"), "{e}");
        let e = ProxySpec::parse("=a->b").unwrap_err();
        assert!(e.contains("NAME"), "{e}");
    }

    #[test]
    fn a_fault_on_a_missing_proxy_is_a_usage_error() {
        let e = Armed::arm(&["at=1s,proxy=db,reset".into()], &[], &[], None)
            .err()
            .unwrap();
        assert!(matches!(e, ArmError::Usage(m) if m.contains("--proxy db=")));
        let a = Armed::arm(&[], &["api=127.0.0.1:0->127.0.0.1:9".into()], &[], None).unwrap();
        let env = a.env();
        assert_eq!(env[0].0, "VOLLEY_PROXY_API");
        assert_eq!(
            a.expand("http://${VOLLEY_PROXY_API}/x"),
            format!("http://{}/x", env[0].1)
        );
    }
}
