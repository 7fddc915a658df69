//! `volley suite check`: the suite file as written ([`crate::file`]) → the runnable [`Suite`],
//! or every problem found, each at its place in the file with a hint: unknown kinds,
//! dependency cycles, unknown services, bad durations and signals, steps that are not exactly
//! one thing, profile inheritance (`extends`), and every `${...}` reference (expanded against a
//! dry context, so `check` and `run` agree on what is valid).
//!
//! Layout: this file (the checked model, services, start order); `steps` (steps and
//! profiles: `extends`, thresholds, load options); `capacity` (an http step's sweep or
//! search).

mod capacity;
mod extras;
mod steps;

use crate::file::interp::{Ctx, Exposed};
use crate::file::{CommandLine, FileError, RawProfile, RawService, RawSuite, Source, DOCS};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;
use toml::Spanned;

/// Defaults (docs/suite.md, "Services").
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);
pub const PG_READY_TIMEOUT: Duration = Duration::from_secs(60);
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);
pub const READY_INTERVAL: Duration = Duration::from_millis(100);
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

/// A checked suite: services in start order, seed steps, profiles with inheritance applied.
#[derive(Clone, Debug)]
pub struct Suite {
    pub name: String,
    pub file: PathBuf,
    pub dir: PathBuf,
    pub env: BTreeMap<String, String>,
    pub services: Vec<ServiceDef>,
    pub seed: Vec<StepDef>,
    pub profiles: BTreeMap<String, Vec<StepDef>>,
    pub outputs: Outputs,
}

#[derive(Clone, Debug)]
pub struct Outputs {
    pub summary_export: bool,
    pub ndjson: bool,
    pub report: bool,
    pub history: Option<String>,
    pub labels: Vec<String>,
    pub dir: PathBuf,
}

#[derive(Clone, Debug)]
pub enum Kind {
    Command {
        command: CommandLine,
        env: BTreeMap<String, String>,
        cwd: Option<String>,
    },
    Postgres {
        user: String,
        database: String,
        password: Option<String>,
        init_sql: Vec<String>,
    },
}

#[derive(Clone, Debug)]
pub enum Probe {
    Http(String),
    Tcp(String),
    Log(regex_lite::Regex),
    Command(CommandLine),
}

#[derive(Clone, Debug)]
pub struct ServiceDef {
    pub name: String,
    pub kind: Kind,
    pub depends_on: Vec<String>,
    pub ready: Vec<Probe>,
    pub ready_interval: Duration,
    pub timeout: Duration,
    pub stop_signal: (i32, String),
    pub stop_timeout: Duration,
    pub port: Option<u16>,
    pub url: Option<String>,
    /// file:line:column of its table, for run-time errors in its strings.
    pub at: String,
}

#[derive(Clone, Debug)]
pub struct StepDef {
    pub name: String,
    pub kind: StepKind,
    pub env: BTreeMap<String, String>,
    pub at: String,
}

#[derive(Clone, Debug)]
pub enum StepKind {
    Run(Load),
    Http(Http),
    Command {
        command: CommandLine,
        cwd: Option<String>,
        timeout: Duration,
    },
    Sql {
        file: String,
        service: String,
    },
    Bench(BenchDef),
}

impl StepKind {
    pub fn word(&self) -> &'static str {
        match self {
            StepKind::Run(_) => "run",
            StepKind::Http(_) => "http",
            StepKind::Command { .. } => "command",
            StepKind::Sql { .. } => "sql",
            StepKind::Bench(_) => "bench",
        }
    }
}

/// A `run` step: the script and k6 option overrides.
#[derive(Clone, Debug, Default)]
pub struct Load {
    pub script: String,
    pub vus: Option<u64>,
    pub duration: Option<Duration>,
    pub iterations: Option<u64>,
    /// (duration, target) as k6's `stages`.
    pub stages: Option<Vec<(Duration, u64)>>,
    /// (metric key, expression), the profile's then the step's.
    pub thresholds: Vec<(String, String)>,
    pub faults: StepFaults,
}

/// A run step's faults (volley-faults' grammar) and fault proxies (name, upstream as
/// written: `services.X` or `HOST:PORT`).
#[derive(Clone, Debug, Default)]
pub struct StepFaults {
    pub faults: Vec<String>,
    pub proxies: Vec<(String, String)>,
}

/// A `bench` step: `volley bench`'s options.
#[derive(Clone, Debug)]
pub struct BenchDef {
    pub command: CommandLine,
    pub runs: Option<u32>,
    pub min_time: Option<Duration>,
    pub warmup: u32,
    pub params: Vec<(String, Vec<String>)>,
    pub parse: Option<volley_bench::parse::Format>,
    pub prepare: Option<String>,
    pub cleanup: Option<String>,
    pub shell: Option<String>,
    pub timeout: Option<Duration>,
    pub thresholds: Vec<(String, String)>,
}

/// An `http` step (quick mode).
#[derive(Clone, Debug, Default)]
pub struct Http {
    pub url: String,
    pub vs: Option<String>,
    pub rounds: u32,
    pub connections: u64,
    pub duration: Option<Duration>,
    pub requests: Option<u64>,
    pub rate: Option<f64>,
    pub pipeline: u32,
    pub http2: bool,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    pub thresholds: Vec<(String, String)>,
    /// `sweep` or `find_max_rate`: many runs (`duration` is each one's measured window).
    pub capacity: Option<volley_run::capacity::plan::Plan>,
}

/// Collects every problem instead of stopping at the first.
pub(crate) struct Checker<'a> {
    pub(crate) src: &'a Source,
    pub(crate) errors: Vec<FileError>,
}

impl Checker<'_> {
    pub(crate) fn err(&mut self, at: usize, msg: impl Into<String>, hint: impl Into<String>) {
        self.errors.push(self.src.error(at, msg, hint));
    }

    pub(crate) fn at(&self, at: usize) -> String {
        let (l, c) = self.src.line_col(at);
        format!("{}:{l}:{c}", self.src.path.display())
    }

    pub(crate) fn duration(&mut self, d: &Option<Spanned<String>>, key: &str) -> Option<Duration> {
        let d = d.as_ref()?;
        match volley_engine::duration::parse_duration(d.get_ref()) {
            Ok(v) => Some(v),
            Err(e) => {
                self.err(
                    d.span().start,
                    format!("{key}: {e}"),
                    "e.g. \"30s\", \"1m30s\", \"500ms\"",
                );
                None
            }
        }
    }

    pub(crate) fn expand(&mut self, ctx: &Ctx, at: usize, what: &str, s: &str) {
        if let Err(e) = ctx.expand(s) {
            self.err(
                at,
                format!("{what}: {e}"),
                format!("see {DOCS}, \"Interpolation\""),
            );
        }
    }
}

/// Checks `raw` (read from `src`). `env`: what `${env.NAME}` sees.
pub fn check(
    src: &Source,
    raw: RawSuite,
    env: &BTreeMap<String, String>,
) -> Result<Suite, Vec<FileError>> {
    let mut c = Checker {
        src,
        errors: Vec::new(),
    };
    let dir = src
        .path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), PathBuf::from);
    let dir = dir.canonicalize().unwrap_or(dir);
    let name = raw.name.clone().unwrap_or_else(|| {
        dir.file_name()
            .map_or("suite".into(), |n| n.to_string_lossy().into_owned())
    });
    // The dry context: every service exists, ports are placeholders.
    let mut dry = Ctx {
        suite_dir: dir.display().to_string(),
        profile: "PROFILE".into(),
        results: "RESULTS".into(),
        tmp: "TMP".into(),
        volley: "volley".into(),
        env: env.clone(),
        ..Ctx::default()
    };
    for n in raw.services.keys() {
        dry.services.insert(n.clone(), Exposed::default());
    }
    let mut services = Vec::new();
    for (n, s) in &raw.services {
        if let Some(def) = service(&mut c, &dry, n, s) {
            services.push(def);
        }
    }
    let services = start_order(&mut c, &raw, services);
    let pg: Vec<&str> = services
        .iter()
        .filter(|s| matches!(s.kind, Kind::Postgres { .. }))
        .map(|s| s.name.as_str())
        .collect();
    let seed = steps::steps(
        &mut c,
        &dry,
        &raw.seed,
        &RawProfile::default(),
        &pg,
        true,
        "seed",
    );
    let mut profiles = BTreeMap::new();
    for (p, prof) in &raw.profiles {
        let Some(flat) = steps::flatten(&mut c, &raw.profiles, p, prof) else {
            continue;
        };
        let Some(list) = flat.steps.clone() else {
            c.err(
                prof.span().start,
                format!("profile '{p}' has no steps"),
                "add [[profiles.NAME.steps]] tables, or extends = \"another profile\"",
            );
            continue;
        };
        let mut ctx = dry.clone();
        ctx.profile = p.clone();
        let defs = steps::steps(
            &mut c,
            &ctx,
            &list,
            &flat,
            &pg,
            false,
            &format!("profiles.{p}"),
        );
        profiles.insert(p.clone(), defs);
    }
    if raw.profiles.is_empty() {
        c.err(
            0,
            "the suite has no profiles",
            "add [profiles.smoke] with [[profiles.smoke.steps]]",
        );
    }
    for k in raw.env.keys() {
        if k.is_empty() || k.contains('=') {
            c.err(0, format!("env: '{k}' is not a variable name"), "");
        }
    }
    let o = &raw.outputs;
    let outputs = Outputs {
        summary_export: o.summary_export,
        ndjson: o.ndjson,
        report: o.report,
        history: o.history.clone(),
        labels: o.labels.clone(),
        dir: o
            .dir
            .as_ref()
            .map_or_else(|| dir.join("results"), |d| dir.join(d)),
    };
    for l in &o.labels {
        if let Err(e) = volley_history::validate_label(l) {
            c.err(0, format!("outputs.labels: {e}"), "");
        }
    }
    if !c.errors.is_empty() {
        c.errors.sort_by_key(|e| (e.line, e.col));
        c.errors.dedup();
        return Err(c.errors);
    }
    Ok(Suite {
        name,
        file: src.path.clone(),
        dir,
        env: raw.env,
        services,
        seed,
        profiles,
        outputs,
    })
}

fn service(c: &mut Checker, dry: &Ctx, name: &str, s: &Spanned<RawService>) -> Option<ServiceDef> {
    let at = s.span().start;
    let r = s.get_ref();
    let mut ctx = dry.clone();
    ctx.this = Some(name.to_string());
    let where_ = format!("services.{name}");
    if name.is_empty()
        || !name
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_')
    {
        c.err(
            at,
            format!("service name '{name}': use letters, digits, '-' and '_'"),
            "",
        );
    }
    let kind_word = r.kind.as_ref().map_or("command", |k| k.get_ref().as_str());
    let kind = match kind_word {
        "command" => {
            let Some(command) = r.command.clone() else {
                c.err(
                    at,
                    format!("{where_}: no command"),
                    "give command = \"...\" (sh -c) or [\"prog\", \"arg\"], or kind = \"postgres\"",
                );
                return None;
            };
            if matches!(&command, CommandLine::Argv(v) if v.is_empty())
                || matches!(&command, CommandLine::Shell(s) if s.trim().is_empty())
            {
                c.err(at, format!("{where_}.command is empty"), "");
            }
            for (k, v) in &r.env {
                c.expand(&ctx, at, &format!("{where_}.env.{k}"), v);
            }
            Kind::Command {
                command,
                env: r.env.clone(),
                cwd: r.cwd.clone(),
            }
        }
        "postgres" => {
            if r.command.is_some() || r.cwd.is_some() || !r.env.is_empty() {
                c.err(at, format!("{where_}: a postgres service runs the machine's PostgreSQL; command, env and cwd are for kind = \"command\""), "remove them, or use kind = \"command\" (e.g. docker run ...)");
            }
            if r.stop_signal.is_some() {
                c.err(
                    at,
                    format!(
                        "{where_}.stop_signal: PostgreSQL is always stopped with a fast shutdown"
                    ),
                    "remove stop_signal",
                );
            }
            Kind::Postgres {
                user: r.user.clone().unwrap_or_else(|| "volley".into()),
                database: r.database.clone().unwrap_or_else(|| "volley".into()),
                password: r.password.clone(),
                init_sql: r.init_sql.clone(),
            }
        }
        other => {
            let at = r.kind.as_ref().map_or(at, |k| k.span().start);
            c.err(
                at,
                format!("{where_}.kind '{other}': expected \"command\" or \"postgres\""),
                "",
            );
            return None;
        }
    };
    if !matches!(kind, Kind::Postgres { .. })
        && (r.user.is_some()
            || r.database.is_some()
            || r.password.is_some()
            || !r.init_sql.is_empty())
    {
        c.err(
            at,
            format!("{where_}: user, database, password and init_sql are for kind = \"postgres\""),
            "",
        );
    }
    if let Some(cmd) = &r.command {
        for s in command_strings(cmd) {
            c.expand(&ctx, at, &format!("{where_}.command"), s);
        }
    }
    for f in &r.init_sql {
        c.expand(&ctx, at, &format!("{where_}.init_sql"), f);
    }
    for (what, v) in [("cwd", &r.cwd), ("url", &r.url)] {
        if let Some(v) = v {
            c.expand(&ctx, at, &format!("{where_}.{what}"), v);
        }
    }
    let mut ready = Vec::new();
    if let Some(u) = &r.ready.http {
        c.expand(&ctx, at, &format!("{where_}.ready.http"), u);
        if !u.starts_with("http://") {
            c.err(
                at,
                format!("{where_}.ready.http '{u}': expected an http:// URL"),
                "readiness probes speak plain HTTP on loopback; use ready.tcp for TLS ports",
            );
        }
        ready.push(Probe::Http(u.clone()));
    }
    if let Some(a) = &r.ready.tcp {
        c.expand(&ctx, at, &format!("{where_}.ready.tcp"), a);
        ready.push(Probe::Tcp(a.clone()));
    }
    if let Some(l) = &r.ready.log {
        match regex_lite::Regex::new(l.get_ref()) {
            Ok(re) => ready.push(Probe::Log(re)),
            Err(e) => c.err(
                l.span().start,
                format!("{where_}.ready.log: not a regular expression: {e}"),
                "e.g. \"listening on\"",
            ),
        }
    }
    if let Some(cmd) = &r.ready.command {
        for s in command_strings(cmd) {
            c.expand(&ctx, at, &format!("{where_}.ready.command"), s);
        }
        ready.push(Probe::Command(cmd.clone()));
    }
    if !ready.is_empty() && matches!(kind, Kind::Postgres { .. }) {
        c.err(at, format!("{where_}.ready: a postgres service is ready when a real connection succeeds; it takes no probes"), "remove ready.*");
    }
    let mut deps = Vec::new();
    for d in &r.depends_on {
        if !dry.services.contains_key(d.get_ref()) {
            let known: Vec<&str> = dry.services.keys().map(String::as_str).collect();
            c.err(
                d.span().start,
                format!("{where_}.depends_on: no service '{}'", d.get_ref()),
                format!("the suite has: {}", known.join(", ")),
            );
        } else if d.get_ref() == name {
            c.err(d.span().start, format!("{where_} depends on itself"), "");
        } else {
            deps.push(d.get_ref().clone());
        }
    }
    let stop_signal = match &r.stop_signal {
        None => (libc::SIGTERM, "SIGTERM".to_string()),
        Some(s) => match signal(s.get_ref()) {
            Some(v) => v,
            None => {
                c.err(
                    s.span().start,
                    format!("{where_}.stop_signal '{}': unknown signal", s.get_ref()),
                    "use SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2 or SIGKILL",
                );
                (libc::SIGTERM, "SIGTERM".into())
            }
        },
    };
    let default_timeout = if matches!(kind, Kind::Postgres { .. }) {
        PG_READY_TIMEOUT
    } else {
        READY_TIMEOUT
    };
    Some(ServiceDef {
        name: name.to_string(),
        kind,
        depends_on: deps,
        ready,
        ready_interval: c
            .duration(&r.ready.interval, &format!("{where_}.ready.interval"))
            .unwrap_or(READY_INTERVAL)
            .max(Duration::from_millis(10)),
        timeout: c
            .duration(&r.timeout, &format!("{where_}.timeout"))
            .unwrap_or(default_timeout),
        stop_signal,
        stop_timeout: c
            .duration(&r.stop_timeout, &format!("{where_}.stop_timeout"))
            .unwrap_or(STOP_TIMEOUT),
        port: r.port,
        url: r.url.clone(),
        at: c.at(at),
    })
}

pub fn command_strings(c: &CommandLine) -> Vec<&str> {
    match c {
        CommandLine::Shell(s) => vec![s.as_str()],
        CommandLine::Argv(v) => v.iter().map(String::as_str).collect(),
    }
}

/// `SIGTERM`, `TERM` or `term` → (number, canonical name).
pub fn signal(s: &str) -> Option<(i32, String)> {
    let up = s.trim().to_ascii_uppercase();
    let bare = up.strip_prefix("SIG").unwrap_or(&up);
    let n = match bare {
        "TERM" => libc::SIGTERM,
        "INT" => libc::SIGINT,
        "QUIT" => libc::SIGQUIT,
        "HUP" => libc::SIGHUP,
        "KILL" => libc::SIGKILL,
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        _ => return None,
    };
    Some((n, format!("SIG{bare}")))
}

/// Services in dependency order (each after what it depends on; otherwise the file's
/// alphabetical order). A cycle is an error naming it.
fn start_order(c: &mut Checker, raw: &RawSuite, defs: Vec<ServiceDef>) -> Vec<ServiceDef> {
    let mut order: Vec<ServiceDef> = Vec::new();
    let mut left = defs;
    while !left.is_empty() {
        let placed: BTreeSet<String> = order.iter().map(|s| s.name.clone()).collect();
        let all: BTreeSet<String> = left
            .iter()
            .map(|s| s.name.clone())
            .chain(placed.iter().cloned())
            .collect();
        let pos = left.iter().position(|s| {
            s.depends_on
                .iter()
                .all(|d| placed.contains(d) || !all.contains(d))
        });
        match pos {
            Some(i) => order.push(left.remove(i)),
            None => {
                // Every remaining service waits on another remaining one: find the cycle.
                let first = &left[0];
                let mut path = vec![first.name.clone()];
                let mut cur = first;
                loop {
                    let next = cur
                        .depends_on
                        .iter()
                        .find_map(|d| left.iter().find(|s| &s.name == d));
                    let Some(n) = next else { break };
                    if let Some(k) = path.iter().position(|p| *p == n.name) {
                        path.drain(..k);
                        path.push(n.name.clone());
                        break;
                    }
                    path.push(n.name.clone());
                    cur = n;
                }
                let at = raw.services.get(&path[0]).map_or(0, |s| s.span().start);
                c.err(
                    at,
                    format!(
                        "services depend on each other in a cycle: {}",
                        path.join(" → ")
                    ),
                    "remove one of these depends_on entries",
                );
                return order;
            }
        }
    }
    order
}

/// Every profile's name, for messages.
pub fn profile_names(s: &Suite) -> String {
    s.profiles.keys().cloned().collect::<Vec<_>>().join(", ")
}
