//! One step of a suite, run and judged: `run` (a k6 script through the run layer, as `volley
//! run` with the step's option overrides), `http` (a quick-mode blast, or an A/B comparison
//! with `vs`, as `volley http --vs`), `command` (a process whose exit status is judged) and
//! `sql` (a file run on a postgres service). Every running service is monitored on a load
//! step's timeline (`NAME=pid:N`), and each load step's files go to the results directory:
//! `NAME.json` (result file), `NAME.summary.json` (k6's summary export), `NAME.html` (report).

use crate::check::{Http, Load, StepDef, StepKind, Suite};
use crate::code;
use crate::file::interp::Ctx;
use crate::services::{expand_command, process, Services};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use volley_engine::{MonitorPlan, QuickConfig, QuickSummary, RunControl};
use volley_http::{Body, TlsOptions};
use volley_metrics::RunResult;
use volley_run::Outcome;

/// How one step ended: a row of `suite.md`.
pub struct StepResult {
    pub name: String,
    pub kind: &'static str,
    /// The step's exit code (`volley run`'s / `volley http`'s codes; 1 for a failed command).
    pub code: i32,
    pub error: Option<String>,
    pub took: Duration,
    pub result: Option<RunResult>,
    /// Files written for it, relative to the results directory.
    pub files: Vec<String>,
    /// Compared with a baseline: "regressed: ...", "no regression", "no baseline".
    pub verdict: Option<String>,
}

/// What every step needs.
pub struct Env<'a> {
    pub suite: &'a Suite,
    pub ctx: &'a Ctx,
    /// The results directory of this run.
    pub dir: &'a Path,
    pub ctl: &'a RunControl,
}

impl StepResult {
    pub(crate) fn new(step: &StepDef) -> StepResult {
        StepResult {
            name: step.name.clone(),
            kind: step.kind.word(),
            code: code::OK,
            error: None,
            took: Duration::ZERO,
            result: None,
            files: Vec::new(),
            verdict: None,
        }
    }

    pub(crate) fn fail(mut self, code: i32, e: String) -> StepResult {
        self.code = code;
        self.error = Some(e);
        self
    }
}

/// Runs `step`; never panics on bad input, every failure is in the result.
pub fn run(step: &StepDef, env: &Env, services: &mut Services) -> StepResult {
    let start = Instant::now();
    let mut r = match expand_env(step, env) {
        Err(e) => StepResult::new(step).fail(code::FAILURE, e),
        Ok(vars) => match &step.kind {
            StepKind::Run(l) => run_script(step, l, &vars, env, services),
            StepKind::Http(h) => run_http(step, h, env, services),
            StepKind::Command {
                command,
                cwd,
                timeout,
            } => run_command(step, command, cwd.as_deref(), *timeout, &vars, env),
            StepKind::Sql { file, service } => run_sql(step, file, service, env, services),
            StepKind::Bench(b) => crate::bench_step::run(step, b, env),
        },
    };
    r.took = start.elapsed();
    r
}

/// The suite's env, then the step's (its profile's included), expanded.
fn expand_env(step: &StepDef, env: &Env) -> Result<BTreeMap<String, String>, String> {
    let mut vars = BTreeMap::new();
    for (k, v) in env.suite.env.iter().chain(&step.env) {
        let v = env
            .ctx
            .expand(v)
            .map_err(|e| format!("{}: env.{k}: {e}", step.at))?;
        vars.insert(k.clone(), v);
    }
    Ok(vars)
}

fn expand(step: &StepDef, env: &Env, s: &str) -> Result<String, String> {
    env.ctx.expand(s).map_err(|e| format!("{}: {e}", step.at))
}

fn monitor(services: &mut Services) -> MonitorPlan {
    MonitorPlan {
        specs: services.monitor_specs(),
        interval: Duration::from_secs(1),
    }
}

/// The after-run chain of every command, into the results directory.
pub(crate) fn after(step: &StepDef, env: &Env, r: &mut StepResult) -> volley_run::after::AfterRun {
    let o = &env.suite.outputs;
    let file = |ext: &str, on: bool| on.then(|| env.dir.join(format!("{}.{ext}", step.name)));
    let a = volley_run::after::AfterRun {
        save: file("json", true),
        summary_export: file("summary.json", o.summary_export),
        report: file("html", o.report),
        history: o.history.clone(),
        labels: o.labels.clone(),
        quiet: true,
    };
    for p in [&a.save, &a.summary_export, &a.report]
        .into_iter()
        .flatten()
    {
        r.files.push(rel(env.dir, p));
    }
    a
}

fn rel(dir: &Path, p: &Path) -> String {
    p.strip_prefix(dir).unwrap_or(p).display().to_string()
}

/// A stable test name across runs, so the history finds this step's baseline.
pub(crate) fn test_name(env: &Env, step: &StepDef) -> String {
    format!("suite:{}/{}/{}", env.suite.name, env.ctx.profile, step.name)
}

fn run_script(
    step: &StepDef,
    l: &Load,
    vars: &BTreeMap<String, String>,
    env: &Env,
    services: &mut Services,
) -> StepResult {
    let mut r = StepResult::new(step);
    let script = match expand(step, env, &l.script) {
        Ok(s) => env.suite.dir.join(s),
        Err(e) => return r.fail(code::FAILURE, e),
    };
    // Before the monitors are chosen: a lent service may be restarted under a new pid.
    let mut arm = match crate::fault_step::arm(&l.faults, env, services) {
        Ok(a) => a,
        Err(e) => return r.fail(code::FAILURE, format!("{}: {e}", step.at)),
    };
    let mut flags = serde_json::Map::new();
    if let Some(st) = &l.stages {
        let list: Vec<serde_json::Value> = st
            .iter()
            .map(|(d, t)| serde_json::json!({"duration": format!("{}ms", d.as_millis()), "target": t}))
            .collect();
        flags.insert("stages".into(), list.into());
    }
    let ndjson = env
        .suite
        .outputs
        .ndjson
        .then(|| env.dir.join(format!("{}.ndjson", step.name)));
    if let Some(p) = &ndjson {
        r.files.push(rel(env.dir, p));
    }
    let cli = volley_js::CliOptions {
        vus: l.vus,
        duration: l.duration,
        iterations: l.iterations,
        thresholds: l.thresholds.clone(),
        monitor: monitor(services),
        out_json: ndjson,
        flag_options: flags,
        ..Default::default()
    };
    let mut pairs: Vec<(String, String)> =
        vars.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    pairs.extend(arm.env());
    let command = crate::script::command_line(&script, &pairs);
    let ctl = env.ctl.child();
    let out = match &mut arm.armed {
        Some(a) => crate::script::run_armed(&script, &pairs, &cli, command, &ctl, a),
        None => crate::script::run_with(&script, &pairs, &cli, command, &ctl),
    };
    arm.restore(services, env);
    let out = match out {
        Ok(o) => o,
        Err((c, e)) => return r.fail(c, e),
    };
    let mut result = out.result;
    result.meta.name = test_name(env, step);
    let a = after(step, env, &mut r);
    let outcome = a.finish(&result, out.outcome, env.ctl.was_interrupted());
    r.code = outcome.exit_code();
    if let Outcome::Failure(e) = &outcome {
        r.error = Some(e.clone());
    } else if let Some(m) = volley_run::execute::thresholds_message(&result) {
        r.error = Some(m);
    }
    r.result = Some(result);
    r
}

fn quick_config(h: &Http, url: String, step: &StepDef, env: &Env) -> Result<QuickConfig, String> {
    let mut headers = Vec::new();
    for (k, v) in &h.headers {
        headers.push((k.clone(), expand(step, env, v)?));
    }
    let body = match &h.body {
        Some(b) => Body::Bytes(expand(step, env, b)?.into_bytes().into()),
        None => Body::Empty,
    };
    let connections = h.connections.min(h.requests.unwrap_or(u64::MAX)).max(1) as usize;
    let mut cfg = quick_defaults(url, connections, h.duration);
    cfg.method = h.method.clone();
    cfg.headers = headers;
    cfg.body = body;
    cfg.requests = h.requests;
    cfg.timeout = Duration::from_secs(30);
    cfg.pipeline = h.pipeline as usize;
    cfg.http2 = h.http2;
    cfg.rate = h.rate.map(volley_engine::RateSchedule::constant);
    cfg.max_connections = connections.saturating_mul(10).clamp(100, 65_535);
    cfg.command = vec!["volley".into(), "suite".into(), step.name.clone()];
    Ok(cfg)
}

/// `volley http URL -c N -z D`'s configuration with every other flag at its default (plain
/// GET, keep-alive, 10 s timeout): the suite's http steps and the demo's blast start here.
pub(crate) fn quick_defaults(
    url: String,
    connections: usize,
    duration: Option<Duration>,
) -> QuickConfig {
    QuickConfig {
        url,
        method: "GET".into(),
        headers: Vec::new(),
        body: Body::Empty,
        connections,
        duration,
        requests: None,
        timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(5),
        keepalive: true,
        tls: TlsOptions {
            insecure: false,
            cacert: None,
        },
        threads: 0,
        pipeline: 1,
        http2: false,
        h2_streams: 1,
        rate: None,
        max_connections: connections,
        command: std::env::args().collect(),
    }
}

/// One blast, judged by the step's thresholds; `Err` when it could not run at all.
fn blast(
    cfg: &QuickConfig,
    h: &Http,
    env: &Env,
    services: &mut Services,
) -> Result<(RunResult, Outcome), String> {
    let flags: Vec<String> = h
        .thresholds
        .iter()
        .map(|(k, e)| format!("{k}:{e}"))
        .collect();
    let ths = volley_run::checks::quick_thresholds(&flags)?;
    let mut result = volley_engine::run_quick_monitored(cfg, &monitor(services), env.ctl, |_| {})?;
    volley_run::execute::judge(&ths, &[], &mut result);
    let errors = QuickSummary::from_result(&result)?.transport_errors() > 0;
    let outcome = Outcome::of_run(
        None,
        None,
        volley_run::execute::thresholds_message(&result),
        result.meta.interrupted,
        errors,
    );
    Ok((result, outcome))
}

fn run_http(step: &StepDef, h: &Http, env: &Env, services: &mut Services) -> StepResult {
    let mut r = StepResult::new(step);
    let cfg = match expand(step, env, &h.url).and_then(|u| quick_config(h, u, step, env)) {
        Ok(c) => c,
        Err(e) => return r.fail(code::FAILURE, e),
    };
    if let Err(e) = volley_http::Target::parse(&cfg.url) {
        return r.fail(
            code::FAILURE,
            format!("{}: http = \"{}\": {e}", step.at, cfg.url),
        );
    }
    if let Some(plan) = &h.capacity {
        return crate::capacity_step::run(step, plan, cfg, &monitor(services), env);
    }
    let Some(vs) = &h.vs else {
        let (mut result, outcome) = match blast(&cfg, h, env, services) {
            Ok(x) => x,
            Err(e) => return r.fail(code::FAILURE, e),
        };
        result.meta.name = test_name(env, step);
        let a = after(step, env, &mut r);
        let outcome = a.finish(&result, outcome, env.ctl.was_interrupted());
        r.code = outcome.exit_code();
        r.error = match &outcome {
            Outcome::Failure(e) | Outcome::ThresholdsFailed(e) => Some(e.clone()),
            Outcome::RequestErrors => Some("some requests got no response".into()),
            _ => None,
        };
        r.result = Some(result);
        return r;
    };
    // A/B: alternate A and B for `rounds` rounds (as `volley http --vs`), so drift on a
    // shared machine hits both sides alike.
    let mut cfg_b = cfg.clone();
    cfg_b.url = match expand(step, env, vs) {
        Ok(u) => u,
        Err(e) => return r.fail(code::FAILURE, e),
    };
    let (mut ra, mut rb) = (Vec::new(), Vec::new());
    let mut worst = Outcome::Passed;
    'rounds: for _ in 0..h.rounds {
        for (cfg, out) in [(&cfg, &mut ra), (&cfg_b, &mut rb)] {
            if env.ctl.is_stopped() {
                break 'rounds;
            }
            match blast(cfg, h, env, services) {
                Ok((res, o)) => {
                    if o.exit_code() != code::OK && worst.exit_code() == code::OK {
                        worst = o;
                    }
                    out.push(res);
                }
                Err(e) => return r.fail(code::FAILURE, e),
            }
        }
    }
    let n = ra.len().min(rb.len());
    if n == 0 {
        return r.fail(
            code::INTERRUPTED,
            "interrupted before a full A/B round".into(),
        );
    }
    ra.truncate(n);
    rb.truncate(n);
    let report = volley_report::AbReport::new(&ra, &rb);
    let text = env.dir.join(format!("{}.ab.txt", step.name));
    let file = env.dir.join(format!("{}.ab.json", step.name));
    let mut first = ra[0].clone();
    first.meta.name = test_name(env, step);
    let written = std::fs::write(&text, report.render_text())
        .map_err(|e| format!("cannot write {}: {e}", text.display()))
        .and_then(|()| {
            volley_report::AbFile::new(ra, rb, report.rows)
                .write(&file)
                .map_err(|e| format!("cannot save to {}: {e}", file.display()))
        });
    if let Err(e) = written {
        return r.fail(code::FAILURE, e);
    }
    r.files.push(rel(env.dir, &text));
    r.files.push(rel(env.dir, &file));
    r.code = if env.ctl.was_interrupted() {
        code::INTERRUPTED
    } else {
        worst.exit_code()
    };
    if r.code != code::OK {
        r.error = Some(format!(
            "A/B rounds: exit {} (see {})",
            r.code,
            rel(env.dir, &text)
        ));
    }
    // The table shows side A; the comparison is in NAME.ab.txt.
    r.result = Some(first);
    r
}

fn run_command(
    step: &StepDef,
    command: &crate::file::CommandLine,
    cwd: Option<&str>,
    timeout: Duration,
    vars: &BTreeMap<String, String>,
    env: &Env,
) -> StepResult {
    let r = StepResult::new(step);
    let cmd = match expand_command(command, env.ctx) {
        Ok(c) => c,
        Err(e) => return r.fail(code::FAILURE, format!("{}: {e}", step.at)),
    };
    let cwd = match cwd.map(|c| expand(step, env, c)).transpose() {
        Ok(c) => c.map_or_else(|| env.suite.dir.clone(), |c| env.suite.dir.join(c)),
        Err(e) => return r.fail(code::FAILURE, e),
    };
    let log = env.dir.join("logs").join(format!("step-{}.log", step.name));
    let files = std::fs::File::create(&log).and_then(|f| Ok((f.try_clone()?, f)));
    let (out, err) = match files {
        Ok(f) => f,
        Err(e) => {
            return r.fail(
                code::FAILURE,
                format!("cannot create {}: {e}", log.display()),
            )
        }
    };
    let mut r = r;
    r.files.push(rel(env.dir, &log));
    let spawned = process::command(&cmd, vars, Some(&cwd), Stdio::from(out), Stdio::from(err))
        .and_then(|mut c| {
            c.spawn()
                .map_err(|e| format!("cannot run `{}`: {e}", process::show(&cmd)))
        });
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return r.fail(code::FAILURE, e),
    };
    let tail = || crate::services::ready::log_tail(&log);
    match process::wait(&mut child, timeout, env.ctl) {
        Ok(Some(st)) if st.success() => r,
        Ok(Some(st)) => {
            let e = format!("`{}` failed ({st}){}", process::show(&cmd), tail());
            r.fail(code::FAILURE, e)
        }
        Ok(None) => r.fail(code::INTERRUPTED, "interrupted".into()),
        Err(e) => {
            let e = format!("`{}` {e}{}", process::show(&cmd), tail());
            r.fail(code::FAILURE, e)
        }
    }
}

fn run_sql(
    step: &StepDef,
    file: &str,
    service: &str,
    env: &Env,
    services: &Services,
) -> StepResult {
    let r = StepResult::new(step);
    let path: PathBuf = match expand(step, env, file) {
        Ok(f) => env.suite.dir.join(f),
        Err(e) => return r.fail(code::FAILURE, e),
    };
    let Some(pg) = services.get(service).and_then(|s| s.postgres()) else {
        return r.fail(code::FAILURE, format!("service '{service}' is not running"));
    };
    match pg.run_sql_file(&path) {
        Ok(()) => r,
        Err(e) => r.fail(code::FAILURE, e),
    }
}
