//! The fault grammar shared by `--fault` and suite steps: one fault per string, comma-separated
//! `key=value` tokens, e.g. `at=10s,for=5s,proxy=api,latency=200ms,jitter=20ms` or
//! `after=500,kill=pid:1234`. Errors name the bad token and give a hint (docs/faults.md).

use std::fmt;
use std::time::Duration;

/// The faults of one run, in the order given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schedule {
    pub faults: Vec<Fault>,
}

/// One fault: when it starts, how long it lasts, what it does.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    pub trigger: Trigger,
    /// `for=D`: the window (proxy faults without one last to the end of the run; `pause`
    /// resumes after it; `kill`/`term` restart the target after it when it can be restarted).
    pub window: Option<Duration>,
    pub action: Action,
    /// The fault as written, for events and messages.
    pub text: String,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Trigger {
    /// `at=10s`: that long after the run started.
    At(Duration),
    /// `after=N`: once N iterations have completed.
    AfterIterations(u64),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// A network fault on the named `--proxy`.
    Proxy {
        proxy: String,
        toxic: Toxic,
        /// The share of connections it acts on (0..=1), picked by a seeded hash.
        share: f64,
        seed: u64,
    },
    /// A signal to (or restart of) a process.
    Process { target: Target, op: ProcessOp },
}

/// Which process a process fault hits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `pid:N`: any process (cannot be restarted).
    Pid(u32),
    /// A `--fault-target NAME=CMD` or a suite service.
    Named(String),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Pid(p) => write!(f, "pid:{p}"),
            Target::Named(n) => f.write_str(n),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessOp {
    /// SIGKILL.
    Kill,
    /// SIGTERM.
    Term,
    /// SIGSTOP, SIGCONT after the window.
    Pause,
    /// Stop and start again (needs a restart hook).
    Restart,
}

impl ProcessOp {
    pub fn name(self) -> &'static str {
        match self {
            ProcessOp::Kill => "kill",
            ProcessOp::Term => "term",
            ProcessOp::Pause => "pause",
            ProcessOp::Restart => "restart",
        }
    }
}

/// Which way data flows through the proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Client to service.
    Up,
    /// Service to client (toxiproxy's default).
    Down,
    Both,
}

impl Direction {
    pub fn includes(self, d: Direction) -> bool {
        self == Direction::Both || self == d
    }
}

/// A network fault of the proxy.
#[derive(Clone, Debug, PartialEq)]
pub enum Toxic {
    /// Each chunk is held `latency ± jitter` (order kept).
    Latency {
        latency: Duration,
        jitter: Duration,
        dir: Direction,
    },
    /// At most this many bytes per second per connection.
    Bandwidth { bytes_per_s: u64, dir: Direction },
    /// RST (SO_LINGER 0, then close): new connections, and open ones when `existing`.
    Reset { existing: bool },
    /// Accept and read, never answer: clients time out.
    Blackhole,
    /// Hold the FIN this long after the service closed.
    SlowClose(Duration),
    /// Close a connection once this many bytes passed (both directions together).
    LimitData(u64),
}

impl Toxic {
    pub fn kind(&self) -> &'static str {
        match self {
            Toxic::Latency { .. } => "latency",
            Toxic::Bandwidth { .. } => "bandwidth",
            Toxic::Reset { .. } => "reset",
            Toxic::Blackhole => "blackhole",
            Toxic::SlowClose(_) => "slow_close",
            Toxic::LimitData(_) => "limit_data",
        }
    }
}

impl Fault {
    /// `latency`, `kill` ...
    pub fn kind(&self) -> &'static str {
        match &self.action {
            Action::Proxy { toxic, .. } => toxic.kind(),
            Action::Process { op, .. } => op.name(),
        }
    }

    /// The proxy or process it hits.
    pub fn target(&self) -> String {
        match &self.action {
            Action::Proxy { proxy, .. } => proxy.clone(),
            Action::Process { target, .. } => target.to_string(),
        }
    }

    /// The fault without its timing (`latency=200ms,jitter=20ms`), for events.
    pub fn detail(&self) -> String {
        self.text
            .split(',')
            .map(str::trim)
            .filter(|t| {
                let k = t.split('=').next().unwrap_or("");
                !matches!(k, "at" | "after" | "for" | "proxy")
            })
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// A fault string that does not parse: which token, why, and what would do.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultError {
    pub fault: String,
    pub token: String,
    pub message: String,
    pub hint: String,
}

impl fmt::Display for FaultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "--fault '{}': '{}': {}\n  hint: {}",
            self.fault, self.token, self.message, self.hint
        )
    }
}

impl std::error::Error for FaultError {}

const EXAMPLE: &str = "e.g. 'at=10s,for=5s,proxy=api,latency=200ms,jitter=20ms' or \
                       'at=5s,kill=pid:1234' (docs/faults.md)";

impl Schedule {
    /// Parse every `--fault` string.
    pub fn parse<S: AsRef<str>>(faults: &[S]) -> Result<Schedule, FaultError> {
        let faults = faults
            .iter()
            .map(|f| Fault::parse(f.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(Schedule { faults })
    }

    /// The proxy names the faults use.
    pub fn proxies(&self) -> Vec<&str> {
        let mut v: Vec<&str> = Vec::new();
        for f in &self.faults {
            if let Action::Proxy { proxy, .. } = &f.action {
                if !v.contains(&proxy.as_str()) {
                    v.push(proxy);
                }
            }
        }
        v
    }

    /// The named process targets the faults use.
    pub fn targets(&self) -> Vec<&str> {
        let mut v: Vec<&str> = Vec::new();
        for f in &self.faults {
            if let Action::Process {
                target: Target::Named(n),
                ..
            } = &f.action
            {
                if !v.contains(&n.as_str()) {
                    v.push(n);
                }
            }
        }
        v
    }
}

impl Fault {
    pub fn parse(text: &str) -> Result<Fault, FaultError> {
        let err = |token: &str, message: String, hint: &str| FaultError {
            fault: text.to_string(),
            token: token.to_string(),
            message,
            hint: hint.to_string(),
        };
        let mut trigger = None;
        let mut window = None;
        let mut proxy = None;
        let mut share = 1.0;
        let mut seed = 0u64;
        let mut jitter = Duration::ZERO;
        let mut dir = None;
        let mut toxic: Option<(String, Toxic)> = None;
        let mut process: Option<(String, Target, ProcessOp)> = None;
        for token in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (key, value) = match token.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (token, None),
            };
            let need = |what: &str| {
                value.filter(|v| !v.is_empty()).ok_or_else(|| {
                    err(
                        token,
                        format!("'{key}' needs a value"),
                        &format!("write {key}={what}"),
                    )
                })
            };
            let dur = |what: &str| -> Result<Duration, FaultError> {
                let v = need(what)?;
                volley_engine::parse_duration(v).map_err(|e| err(token, e, EXAMPLE))
            };
            let mut set_toxic = |t: Toxic| -> Result<(), FaultError> {
                if let Some((prev, _)) = &toxic {
                    return Err(err(
                        token,
                        format!("a fault does one thing and '{prev}' came first"),
                        "give each network fault its own --fault",
                    ));
                }
                toxic = Some((token.to_string(), t));
                Ok(())
            };
            match key {
                "at" | "after" if trigger.is_some() => {
                    return Err(err(
                        token,
                        "a fault has one start".into(),
                        "give either at=DURATION or after=N iterations, once",
                    ))
                }
                "at" => trigger = Some(Trigger::At(dur("10s")?)),
                "after" => {
                    let v = need("500")?;
                    let n = v
                        .trim_end_matches("iterations")
                        .trim_end_matches("iteration")
                        .trim_end_matches("iters")
                        .trim();
                    let n = n.parse::<u64>().map_err(|_| {
                        err(
                            token,
                            "expected a number of iterations".into(),
                            "write after=500 (the fault starts once 500 iterations completed)",
                        )
                    })?;
                    trigger = Some(Trigger::AfterIterations(n));
                }
                "for" => window = Some(dur("5s")?),
                "proxy" => proxy = Some(need("NAME (a --proxy NAME=...)")?.to_string()),
                "share" => {
                    let v = need("0.3")?;
                    share = v
                        .parse::<f64>()
                        .ok()
                        .filter(|s| (0.0..=1.0).contains(s))
                        .ok_or_else(|| {
                            err(
                                token,
                                "expected a fraction from 0 to 1".into(),
                                "share=0.3 acts on 30 % of the connections",
                            )
                        })?;
                }
                "seed" => {
                    seed = need("1")?
                        .parse()
                        .map_err(|_| err(token, "expected a whole number".into(), "seed=1"))?;
                }
                "jitter" => jitter = dur("20ms")?,
                "direction" => {
                    dir = Some(match need("down")? {
                        "up" | "upstream" => Direction::Up,
                        "down" | "downstream" => Direction::Down,
                        "both" => Direction::Both,
                        v => {
                            return Err(err(
                                token,
                                format!("unknown direction '{v}'"),
                                "direction=up (client to service), down or both",
                            ))
                        }
                    })
                }
                "latency" => set_toxic(Toxic::Latency {
                    latency: dur("200ms")?,
                    jitter: Duration::ZERO,
                    dir: Direction::Down,
                })?,
                "bandwidth" => set_toxic(Toxic::Bandwidth {
                    bytes_per_s: bytes(need("100KB")?).ok_or_else(|| {
                        err(
                            token,
                            "expected bytes per second".into(),
                            "bandwidth=100KB (KB = 1000 B, KiB = 1024 B; /s optional)",
                        )
                    })?,
                    dir: Direction::Down,
                })?,
                "reset" => set_toxic(Toxic::Reset {
                    existing: match value {
                        None | Some("all") => true,
                        Some("new") => false,
                        Some(v) => {
                            return Err(err(
                                token,
                                format!("unknown reset mode '{v}'"),
                                "reset (new and open connections) or reset=new",
                            ))
                        }
                    },
                })?,
                "blackhole" | "black_hole" if value.is_none() => set_toxic(Toxic::Blackhole)?,
                "slow_close" => set_toxic(Toxic::SlowClose(dur("2s")?))?,
                "limit_data" => set_toxic(Toxic::LimitData(
                    bytes(need("10KB")?).filter(|n| *n > 0).ok_or_else(|| {
                        err(
                            token,
                            "expected a byte count above 0".into(),
                            "limit_data=10KB closes a connection after 10,000 bytes",
                        )
                    })?,
                ))?,
                "kill" | "term" | "pause" | "restart" => {
                    let op = match key {
                        "kill" => ProcessOp::Kill,
                        "term" => ProcessOp::Term,
                        "pause" => ProcessOp::Pause,
                        _ => ProcessOp::Restart,
                    };
                    if process.is_some() {
                        return Err(err(
                            token,
                            "a fault does one thing".into(),
                            "give each process fault its own --fault",
                        ));
                    }
                    let v = need("pid:1234 or a --fault-target name")?;
                    let target = match v.strip_prefix("pid:") {
                        Some(p) => {
                            Target::Pid(p.parse().ok().filter(|p| *p > 0).ok_or_else(|| {
                                err(token, "expected a process id".into(), "kill=pid:1234")
                            })?)
                        }
                        None => Target::Named(v.to_string()),
                    };
                    process = Some((token.to_string(), target, op));
                }
                _ => {
                    return Err(err(
                        token,
                        format!("unknown key '{key}'"),
                        "keys: at, after, for, proxy, share, seed, latency, jitter, direction, \
                         bandwidth, reset, blackhole, slow_close, limit_data, kill, term, pause, \
                         restart (docs/faults.md)",
                    ))
                }
            }
        }
        let whole = |message: &str, hint: &str| err(text, message.to_string(), hint);
        let trigger = trigger.ok_or_else(|| {
            whole(
                "no start",
                "add at=DURATION (run time) or after=N (completed iterations)",
            )
        })?;
        let action = match (toxic, process) {
            (Some(_), Some((t, ..))) => {
                return Err(err(
                    &t,
                    "a fault is either a network fault or a process fault".into(),
                    "give each its own --fault",
                ))
            }
            (None, None) => {
                return Err(whole(
                    "says nothing to do",
                    "add latency=, bandwidth=, reset, blackhole, slow_close=, limit_data= \
                     (with proxy=NAME) or kill=, term=, pause=, restart=",
                ))
            }
            (Some((t, mut toxic)), None) => {
                let proxy = proxy.ok_or_else(|| {
                    err(
                        &t,
                        "a network fault needs the proxy it acts on".into(),
                        "add proxy=NAME and start it with --proxy NAME=LISTEN->UPSTREAM",
                    )
                })?;
                match &mut toxic {
                    Toxic::Latency {
                        jitter: j, dir: d, ..
                    } => {
                        *j = jitter;
                        *d = dir.unwrap_or(Direction::Down);
                    }
                    Toxic::Bandwidth { dir: d, .. } => *d = dir.unwrap_or(Direction::Down),
                    _ => {}
                }
                Action::Proxy {
                    proxy,
                    toxic,
                    share,
                    seed,
                }
            }
            (None, Some((t, target, op))) => {
                if proxy.is_some() || share < 1.0 {
                    return Err(err(
                        &t,
                        "proxy= and share= belong to network faults".into(),
                        "a process fault acts on the whole process",
                    ));
                }
                if op == ProcessOp::Pause && window.is_none() {
                    return Err(err(
                        &t,
                        "pause needs a window".into(),
                        "add for=DURATION: SIGSTOP at the start, SIGCONT after it",
                    ));
                }
                Action::Process { target, op }
            }
        };
        Ok(Fault {
            trigger,
            window,
            action,
            text: text.trim().to_string(),
        })
    }
}

/// `100KB`, `1.5MiB/s`, `4096`: bytes (KB = 1000, KiB = 1024).
pub fn bytes(s: &str) -> Option<u64> {
    let s = s.trim().trim_end_matches("/s");
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult = match unit.trim() {
        "" | "B" => 1.0,
        "KB" | "kB" | "K" | "k" => 1e3,
        "MB" | "M" => 1e6,
        "GB" | "G" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let v = n * mult;
    (0.0..1e18).contains(&v).then_some(v as u64)
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
