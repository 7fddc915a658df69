//! `volley coordinator` and `volley agent` (docs/distributed-protocol.md): a coordinator and
//! its agents as real processes on loopback against the built-in target. Every test's load is
//! bounded in iterations and time; every process is killed if the test fails.

mod common;

use common::{closed_port, exclusive, scratch, target};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "test-token-7f3a";

/// The coordinator and its agents; killed on drop (a failed assertion leaves no process).
struct Cluster {
    dir: common::Scratch,
    port: u16,
    coordinator: Child,
    agents: Vec<Child>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for c in self
            .agents
            .iter_mut()
            .chain(std::iter::once(&mut self.coordinator))
        {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn volley_logged(dir: &Path, name: &str) -> Command {
    let mut c = common::volley();
    c.stdout(std::fs::File::create(dir.join(format!("{name}.out"))).unwrap())
        .stderr(std::fs::File::create(dir.join(format!("{name}.err"))).unwrap())
        .stdin(Stdio::null());
    c
}

impl Cluster {
    /// A coordinator of `script` for `n` agents, with `extra` flags, and `n` agents.
    fn start(name: &str, script: &str, base: &str, n: usize, extra: &[&str]) -> Cluster {
        let mut c = Cluster::coordinator(name, script, base, n, extra);
        for i in 0..n {
            c.agent(&format!("agent{i}"), TOKEN, &[]);
        }
        c
    }

    fn coordinator(name: &str, script: &str, base: &str, n: usize, extra: &[&str]) -> Cluster {
        let dir = scratch(&format!("coord-{name}"));
        std::fs::write(dir.join("test.js"), script).unwrap();
        let port = closed_port();
        let coordinator = volley_logged(&dir, "coordinator")
            .arg("coordinator")
            .arg(dir.join("test.js"))
            .args(["--instances", &n.to_string()])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--token", TOKEN, "-e", &format!("BASE={base}")])
            .arg("--save")
            .arg(dir.join("merged.json"))
            .args(extra)
            .spawn()
            .unwrap();
        Cluster {
            dir,
            port,
            coordinator,
            agents: Vec::new(),
        }
    }

    /// An agent (retrying for 20 s unless `extra` says otherwise).
    fn agent(&mut self, name: &str, token: &str, extra: &[&str]) {
        let a = self.agent_command(name, token, extra).spawn().unwrap();
        self.agents.push(a);
    }

    /// The command [`Cluster::agent`] spawns, to change before spawning.
    fn agent_command(&self, name: &str, token: &str, extra: &[&str]) -> Command {
        let extra: Vec<&str> = if extra.contains(&"--retry-for") {
            extra.to_vec()
        } else {
            [extra, &["--retry-for", "20s"]].concat()
        };
        let mut c = volley_logged(&self.dir, name);
        c.arg("agent")
            .args(["--coordinator", &format!("127.0.0.1:{}", self.port)])
            .args(["--token", token, "--name", name, "--threads", "1"])
            .args(extra);
        c
    }

    /// The coordinator's exit status, waiting at most `limit`.
    fn wait(&mut self, limit: Duration) -> ExitStatus {
        wait_within(&mut self.coordinator, limit, "the coordinator")
    }

    fn agent_statuses(&mut self, limit: Duration) -> Vec<ExitStatus> {
        let n = self.agents.len();
        (0..n)
            .map(|i| wait_within(&mut self.agents[i], limit, "an agent"))
            .collect()
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_default()
    }

    fn merged(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(self.dir.join("merged.json")).unwrap_or_else(|e| {
            panic!(
                "no merged result ({e}); coordinator stderr:\n{}",
                self.log("coordinator.err")
            )
        });
        serde_json::from_str(&text).unwrap()
    }

    /// Every agent's stderr, concatenated.
    fn agent_logs(&self) -> String {
        (0..self.agents.len())
            .map(|i| self.log(&format!("agent{i}.err")))
            .collect()
    }
}

fn wait_within(c: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(s) = c.try_wait().unwrap() {
            return s;
        }
        assert!(
            start.elapsed() < limit,
            "{what} did not end within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn http_reqs(r: &serde_json::Value) -> f64 {
    common::counter(r, "http_reqs")
}

/// 300 requests shared by 3 VUs; setup's data logged by every VU's first iteration, and by
/// teardown.
const SHARED: &str = r#"
import http from 'k6/http';
export const options = {
  scenarios: { s: { executor: 'shared-iterations', vus: 3, iterations: 300, maxDuration: '30s' } },
};
export function setup() { console.log('SETUP-RAN'); return { secret: 'from-setup-' + 42 }; }
export default function (d) {
  http.get(`${__ENV.BASE}/`);
  if (__ITER === 0) console.log(`DATA=${JSON.stringify(d)}`);
}
export function teardown(d) { console.log(`TEARDOWN=${JSON.stringify(d)}`); }
"#;

#[test]
fn merged_count_equals_the_targets_and_setup_data_reaches_every_agent() {
    let _g = exclusive();
    let t = target();
    let mut c = Cluster::start("count", SHARED, &t.url(), 3, &[]);
    let status = c.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{}", c.log("coordinator.err"));
    assert!(c
        .agent_statuses(Duration::from_secs(10))
        .iter()
        .all(|s| s.success()));
    let r = c.merged();
    assert_eq!(http_reqs(&r), 300.0);
    assert_eq!(
        t.stats().requests,
        300,
        "the target saw what the merge counts"
    );
    // The per-second series (merged live on the coordinator) holds every request too.
    let in_series: u64 = common::per_second(&r).iter().map(|s| s.0).sum();
    assert_eq!(in_series, 300);
    assert_eq!(r["meta"]["instances"], 3);
    let logs = c.agent_logs();
    assert_eq!(logs.matches("SETUP-RAN").count(), 1, "{logs}");
    let data = r#"DATA={\"secret\":\"from-setup-42\"}"#;
    assert_eq!(
        logs.matches(data).count(),
        3,
        "one VU per agent sees setup's data: {logs}"
    );
    assert_eq!(
        logs.matches(r#"TEARDOWN={\"secret\":\"from-setup-42\"}"#)
            .count(),
        1,
        "{logs}"
    );
}

/// 10 requests per agent: `count<25` holds on each agent's share and fails on the whole.
const COMBINED: &str = r#"
import http from 'k6/http';
export const options = {
  scenarios: { s: { executor: 'per-vu-iterations', vus: 3, iterations: 10, maxDuration: '30s' } },
  thresholds: { http_reqs: ['count<25'] },
};
export default function () { http.get(`${__ENV.BASE}/`); }
"#;

#[test]
fn a_threshold_only_the_combined_load_crosses_fails_with_99() {
    let _g = exclusive();
    let t = target();
    let mut c = Cluster::start("combined", COMBINED, &t.url(), 3, &[]);
    let status = c.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(99), "{}", c.log("coordinator.err"));
    assert!(c
        .agent_statuses(Duration::from_secs(10))
        .iter()
        .all(|s| s.success()));
    let r = c.merged();
    assert_eq!(http_reqs(&r), 30.0);
    assert_eq!(r["thresholds"][0]["ok"], false);
    assert!(c
        .log("coordinator.err")
        .contains("thresholds on metrics 'http_reqs' have been crossed"));
}

/// A minute of load unless abortOnFail stops it: 50 requests in all cross the threshold.
const ABORT: &str = r#"
import http from 'k6/http';
import { sleep } from 'k6';
export const options = {
  scenarios: { s: { executor: 'constant-vus', vus: 3, duration: '60s' } },
  thresholds: { http_reqs: [{ threshold: 'count<50', abortOnFail: true }] },
};
export default function () { http.get(`${__ENV.BASE}/`); sleep(0.01); }
"#;

#[test]
fn abort_on_fail_on_the_merged_figures_stops_every_agent_within_two_seconds() {
    let _g = exclusive();
    let t = target();
    let mut c = Cluster::start("abort", ABORT, &t.url(), 3, &[]);
    let status = c.wait(Duration::from_secs(30));
    let agents = c.agent_statuses(Duration::from_secs(5));
    assert_eq!(status.code(), Some(99), "{}", c.log("coordinator.err"));
    assert!(agents.iter().all(|s| s.success()), "{}", c.agent_logs());
    let r = c.merged();
    assert_eq!(r["thresholds"][0]["aborted"], true);
    // Crossed within the first second of the merged figures (judged once a second), the
    // stop reaches the agents with their next snapshot's answer (a second): generous on a
    // shared machine, far from the minute the test would otherwise last.
    let d = r["meta"]["duration_s"].as_f64().unwrap();
    assert!(d < 2.0 + 3.0, "the agents ran {d}s");
    assert!(c.log("coordinator.err").contains("abortOnFail"));
}

/// 60 paced iterations per agent (6 s): an agent killed half way stops short.
const PACED: &str = r#"
import http from 'k6/http';
import { sleep } from 'k6';
export const options = {
  scenarios: { s: { executor: 'per-vu-iterations', vus: 3, iterations: 60, maxDuration: '30s' } },
};
export default function () { http.get(`${__ENV.BASE}/`); sleep(0.1); }
"#;

#[test]
fn an_agent_killed_mid_run_is_reported_lost_and_the_others_data_is_intact() {
    let _g = exclusive();
    let t = target();
    let mut c = Cluster::start("lost", PACED, &t.url(), 3, &["--agent-timeout", "2s"]);
    let begun = Instant::now();
    while t.stats().requests < 45 {
        assert!(
            begun.elapsed() < Duration::from_secs(30),
            "the run did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(1500));
    c.agents[2].kill().unwrap();
    let status = c.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{}", c.log("coordinator.err"));
    let err = c.log("coordinator.err");
    assert!(
        err.contains("agent 'agent2'") && err.contains("lost"),
        "{err}"
    );
    let r = c.merged();
    let agents = r["options"]["distributed"]["agents"].as_array().unwrap();
    let lost: Vec<_> = agents
        .iter()
        .filter(|a| !a["lost_at_s"].is_null())
        .collect();
    assert_eq!(lost.len(), 1, "{agents:?}");
    assert_eq!(lost[0]["name"], "agent2");
    let events = r["events"].as_array().unwrap();
    assert!(events
        .iter()
        .any(|e| e["kind"] == "agent_lost" && e["target"] == "agent2"));
    // The survivors' 60 requests each, and what the lost one had reported (some, not all).
    let partial = lost[0]["http_reqs"].as_f64().unwrap();
    assert!(
        partial > 0.0 && partial < 60.0,
        "lost agent's share: {partial}"
    );
    assert_eq!(http_reqs(&r), 120.0 + partial);
    assert!(t.stats().requests as f64 >= http_reqs(&r));
}

#[test]
fn a_wrong_token_is_refused_and_the_agent_says_so() {
    let t = target();
    let mut c = Cluster::coordinator("token", COMBINED, &t.url(), 1, &["--start-timeout", "3s"]);
    c.agent("agent0", "not-the-token", &[]);
    let agent = c.agent_statuses(Duration::from_secs(30));
    assert_eq!(agent[0].code(), Some(1));
    let err = c.log("agent0.err");
    assert!(err.contains("refused the token (HTTP 401)"), "{err}");
    let status = c.wait(Duration::from_secs(30));
    assert_eq!(status.code(), Some(1));
    assert!(c
        .log("coordinator.err")
        .contains("0 of 1 agents registered"));
    assert_eq!(t.stats().requests, 0);
}

#[test]
fn an_agent_of_a_tls_coordinator_needs_its_ca() {
    let _g = exclusive();
    let t = target();
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let dir = scratch("coord-tls-pki");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    let (cert_s, key_s) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let flags = [
        "--tls-cert",
        cert_s,
        "--tls-key",
        key_s,
        "--start-timeout",
        "20s",
    ];
    let mut c = Cluster::coordinator("tls", COMBINED, &t.url(), 1, &flags);
    // A plain-text agent cannot talk to it; one that trusts the CA can.
    c.agent("agent0", TOKEN, &["--retry-for", "1s"]);
    let plain = c.agent_statuses(Duration::from_secs(30));
    assert_eq!(plain[0].code(), Some(1), "{}", c.log("agent0.err"));
    c.agents.clear();
    c.agent("agent0", TOKEN, &["--tls-ca", cert_s]);
    let status = c.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(99), "{}", c.log("coordinator.err"));
    assert_eq!(http_reqs(&c.merged()), 30.0);
}

#[test]
fn the_coordinator_wants_a_token() {
    let o = common::volley()
        .args([
            "coordinator",
            "x.js",
            "--instances",
            "2",
            "--listen",
            "127.0.0.1:0",
        ])
        .env_remove("VOLLEY_TOKEN")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(common::stderr(&o).contains("no token: give --token T or set VOLLEY_TOKEN"));
}

/// Network namespaces, each joined to the host by a veth pair with its own /30; deleted on
/// drop (deleting a namespace deletes its end of the pair, and with it the host's end).
struct Namespaces {
    names: Vec<String>,
    /// Per namespace: (host side, namespace side) addresses.
    addrs: Vec<(String, String)>,
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let o = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}

impl Namespaces {
    /// `n` namespaces, or why they cannot be made (not root, no `ip netns`).
    fn create(n: usize) -> Result<Namespaces, String> {
        if uid() != 0 {
            return Err("not running as root".into());
        }
        let pid = std::process::id();
        // A subnet per test process: 10.X.Y.0/24 cut into /30s, one per namespace.
        let (x, y) = (100 + pid % 100, (pid / 100) % 250);
        let mut ns = Namespaces {
            names: Vec::new(),
            addrs: Vec::new(),
        };
        for i in 0..n {
            let name = format!("vlc{pid}n{i}");
            let (host_if, ns_if) = (format!("vh{pid}{i}"), format!("vn{pid}{i}"));
            let host = format!("10.{x}.{y}.{}", 4 * i + 1);
            let inner = format!("10.{x}.{y}.{}", 4 * i + 2);
            ip(&["netns", "add", &name])?;
            ns.names.push(name.clone());
            ip(&[
                "link", "add", &host_if, "type", "veth", "peer", "name", &ns_if,
            ])?;
            ip(&["link", "set", &ns_if, "netns", &name])?;
            ip(&["addr", "add", &format!("{host}/30"), "dev", &host_if])?;
            ip(&["link", "set", &host_if, "up"])?;
            let inside = |a: &[&str]| ip(&[&["netns", "exec", &name, "ip"], a].concat());
            inside(&["addr", "add", &format!("{inner}/30"), "dev", &ns_if])?;
            inside(&["link", "set", &ns_if, "up"])?;
            inside(&["link", "set", "lo", "up"])?;
            inside(&["route", "add", "default", "via", &host])?;
            ns.addrs.push((host, inner));
        }
        Ok(ns)
    }
}

fn uid() -> u32 {
    // Whether the test may create namespaces (`id -u`: no unsafe call needed).
    Command::new("id")
        .arg("-u")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(u32::MAX)
}

#[test]
fn agents_in_three_network_namespaces_reach_the_target_from_three_addresses() {
    let _g = exclusive();
    let ns = match Namespaces::create(3) {
        Ok(ns) => ns,
        Err(e) => {
            eprintln!("skipped: cannot create network namespaces ({e})");
            return;
        }
    };
    // The target and the coordinator on the first pair's host address: a local address every
    // namespace reaches through its own veth (its default route).
    let host = ns.addrs[0].0.clone();
    let t = volley_testserver::spawn(volley_testserver::TargetConfig {
        listen: format!("{host}:0").parse().unwrap(),
        threads: 1,
        tls: None,
        delay_all: None,
    })
    .unwrap();
    let base = format!("http://{}", t.local_addr());
    let dir = scratch("coord-netns");
    std::fs::write(dir.join("test.js"), SHARED).unwrap();
    let port = {
        let l = std::net::TcpListener::bind(format!("{host}:0")).unwrap();
        l.local_addr().unwrap().port()
    };
    let coordinator = volley_logged(&dir, "coordinator")
        .arg("coordinator")
        .arg(dir.join("test.js"))
        .args(["--instances", "3", "--listen", &format!("{host}:{port}")])
        .args(["--token", TOKEN, "-e", &format!("BASE={base}")])
        .arg("--save")
        .arg(dir.join("merged.json"))
        .spawn()
        .unwrap();
    let mut c = Cluster {
        dir,
        port,
        coordinator,
        agents: Vec::new(),
    };
    for (i, name) in ns.names.iter().enumerate() {
        let a = Command::new("ip")
            .args(["netns", "exec", name, env!("CARGO_BIN_EXE_volley"), "agent"])
            .args(["--coordinator", &format!("{host}:{port}")])
            .args(["--token", TOKEN, "--name", &format!("agent{i}")])
            .args(["--threads", "1", "--retry-for", "20s"])
            .stdout(std::fs::File::create(c.dir.join(format!("agent{i}.out"))).unwrap())
            .stderr(std::fs::File::create(c.dir.join(format!("agent{i}.err"))).unwrap())
            .spawn()
            .unwrap();
        c.agents.push(a);
    }
    let status = c.wait(Duration::from_secs(60));
    assert_eq!(
        status.code(),
        Some(0),
        "{}{}",
        c.log("coordinator.err"),
        c.agent_logs()
    );
    assert_eq!(http_reqs(&c.merged()), 300.0);
    assert_eq!(t.stats().requests, 300);
    let mut seen: Vec<String> = t.peers().iter().map(|p| p.to_string()).collect();
    seen.sort();
    let mut expected: Vec<String> = ns.addrs.iter().map(|a| a.1.clone()).collect();
    expected.sort();
    assert_eq!(seen, expected, "one source address per namespace");
}

#[test]
fn ctrl_c_while_waiting_for_agents_says_the_test_had_not_started() {
    let _g = exclusive();
    let t = target();
    let mut c = Cluster::coordinator("sigint", COMBINED, &t.url(), 2, &[]);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !c.log("coordinator.err").contains("listening")
        && !c.log("coordinator.out").contains("listening")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the coordinator never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = c.coordinator.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let status = c.wait(Duration::from_secs(30));
    assert_eq!(status.code(), Some(105));
    let err = c.log("coordinator.err");
    // It prepared the script itself, but no agent ran any of it: not "the script's init code".
    assert!(!err.contains("init code"), "{err}");
    assert!(
        err.contains("interrupted while waiting for the agents"),
        "{err}"
    );
    assert_eq!(t.stats().requests, 0);
}

/// Throws in init code on the agent of the second segment (the coordinator, which prepares
/// the whole test without a segment, and the first agent get past it).
const FAILS_ON_ONE: &str = r#"
import exec from 'k6/execution';
if (exec.instance.executionSegment === '1/2:1') { throw new Error('no config on this agent'); }
export const options = { vus: 2, iterations: 2 };
export default function () {}
"#;

/// Regression: an agent whose script failed to prepare exited alone; the coordinator waited
/// for the rest of --start-timeout and then blamed the missing agent.
#[test]
fn an_agent_whose_script_fails_to_prepare_ends_the_run_at_once_with_its_error() {
    let _g = exclusive();
    let flags = ["--start-timeout", "90s"];
    let mut c = Cluster::start("failed", FAILS_ON_ONE, "-", 2, &flags);
    let status = c.wait(Duration::from_secs(30));
    let err = c.log("coordinator.err");
    assert_eq!(status.code(), Some(107), "{err}");
    assert!(err.contains(", segment 1/2:1) failed: "), "{err}");
    assert!(err.contains("no config on this agent"), "{err}");
    let mut codes: Vec<Option<i32>> = c
        .agent_statuses(Duration::from_secs(10))
        .iter()
        .map(|s| s.code())
        .collect();
    codes.sort();
    // The failing agent ends with its error; the other is told the run will not start.
    assert_eq!(codes, vec![Some(1), Some(107)], "{}", c.agent_logs());
}

/// A gauge limit (a drift check, judged on the timeline) with abortOnFail: crossed from the
/// first second, in a test of 40 s.
const GAUGE_LIMIT: &str = r#"
import { Gauge } from 'k6/metrics';
import { sleep } from 'k6';
const level = new Gauge('level');
export const options = {
  vus: 1, duration: '40s',
  thresholds: { level: [{ threshold: 'max<3', abortOnFail: true }] },
};
export default function () { level.add(5); sleep(0.1); }
"#;

/// Regression: the coordinator judged drift checks only at the end, so abortOnFail on one
/// never stopped a distributed test.
#[test]
fn a_drift_check_with_abort_on_fail_stops_the_agents_during_the_run() {
    let _g = exclusive();
    let mut c = Cluster::start("drift", GAUGE_LIMIT, "-", 2, &[]);
    let status = c.wait(Duration::from_secs(25));
    let agents = c.agent_statuses(Duration::from_secs(5));
    assert_eq!(status.code(), Some(99), "{}", c.log("coordinator.err"));
    assert!(agents.iter().all(|s| s.success()), "{}", c.agent_logs());
    let r = c.merged();
    assert_eq!(r["thresholds"][0]["ok"], false);
    assert_eq!(r["thresholds"][0]["aborted"], true, "{}", r["thresholds"]);
    let d = r["meta"]["duration_s"].as_f64().unwrap();
    assert!(d < 15.0, "the agents ran {d}s of 40");
}

/// `volley run --coordinator ADDR` is `volley agent --coordinator ADDR`.
#[test]
fn volley_run_with_coordinator_joins_as_an_agent() {
    let _g = exclusive();
    let t = target();
    let mut c = Cluster::coordinator("run-alias", SHARED, &t.url(), 1, &[]);
    let a = volley_logged(&c.dir, "agent0")
        .args(["run", "--coordinator", &format!("127.0.0.1:{}", c.port)])
        .env("VOLLEY_TOKEN", TOKEN)
        .spawn()
        .unwrap();
    c.agents.push(a);
    let status = c.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{}", c.log("coordinator.err"));
    assert!(c.agent_statuses(Duration::from_secs(10))[0].success());
    assert_eq!(http_reqs(&c.merged()), 300.0);
    assert_eq!(t.stats().requests, 300);
    // A script and --coordinator together are refused.
    let o = common::volley()
        .args(["run", "x.js", "--coordinator", "127.0.0.1:1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// 2 VUs per agent for 3 s: enough seconds for the InfluxDB output to stream during the run.
const STREAMED: &str = r#"
import http from 'k6/http';
import { sleep } from 'k6';
export const options = {
  scenarios: { s: { executor: 'constant-vus', vus: 4, duration: '3s' } },
};
export default function () { http.get(`${__ENV.BASE}/`); sleep(0.05); }
"#;

/// The coordinator streams the merged per-second series to InfluxDB: every merged second is
/// written once, so the written points add up to the merged result's totals.
#[test]
fn influxdb_from_the_coordinator_adds_up_to_the_merged_totals() {
    let _g = exclusive();
    let t = target();
    let (port, got) = common::recorder(Duration::from_secs(60));
    let out = format!("influxdb=http://127.0.0.1:{port}/merged");
    let mut c = Cluster::start("influx", STREAMED, &t.url(), 2, &["--out", &out]);
    let status = c.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{}", c.log("coordinator.err"));
    let r = c.merged();
    let reqs = got.lock().unwrap().clone();
    assert!(reqs.len() >= 2, "batches during the run: {}", reqs.len());
    use volley_run::outputs::influx::parse::{line, Field};
    let (mut sums, mut seconds) = (BTreeMap::<String, f64>::new(), BTreeSet::new());
    for (request, _, body) in &reqs {
        assert_eq!(request, "POST /write?db=merged HTTP/1.1");
        for l in String::from_utf8(body.clone()).unwrap().lines() {
            let (m, _, fields, ts) = line(l).unwrap_or_else(|e| panic!("{e}"));
            let v = match (fields.get("value"), fields.get("count")) {
                (_, Some(Field::Int(n))) => *n as f64,
                (Some(Field::Float(v)), _) => *v,
                _ => continue,
            };
            *sums.entry(m.clone()).or_default() += v;
            if m == "http_reqs" {
                assert!(seconds.insert(ts), "second {ts} written twice");
            }
        }
    }
    assert_eq!(http_reqs(&r), t.stats().requests as f64);
    assert_eq!(sums["http_reqs"], http_reqs(&r), "{sums:?}");
    assert_eq!(sums["iterations"], common::counter(&r, "iterations"));
    let trend_count: f64 = r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] == "http_req_duration")
        .map(|m| m["count"].as_f64().unwrap())
        .sum();
    assert_eq!(sums["http_req_duration"], trend_count, "{sums:?}");
}

#[test]
fn the_coordinator_help_lists_the_outputs_it_takes_and_refuses_per_sample_ones() {
    let o = common::run(&["coordinator", "--help"]);
    let help = common::stdout(&o);
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    let out = help.split("--out").nth(1).unwrap_or_default();
    assert!(
        out.contains("influxdb=") && out.contains("prometheus="),
        "{help}"
    );
    assert!(
        out.contains("junit=FILE") && out.contains("Not json=/csv="),
        "{help}"
    );
    for kind in ["json=x.ndjson", "csv=x.csv"] {
        let o = common::run(&[
            "coordinator",
            "x.js",
            "--instances",
            "1",
            "--listen",
            "127.0.0.1:0",
            "--token",
            TOKEN,
            "--out",
            kind,
        ]);
        assert_eq!(o.status.code(), Some(2), "{kind}");
        assert!(common::stderr(&o).contains("per-sample outputs (json=, csv=)"));
    }
}
