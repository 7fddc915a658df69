//! `volley coordinator TEST --instances N --listen ADDR` and its flags: the test (an archive,
//! or a script archived here) prepared once for its thresholds, summary and
//! `handleSummary` → [`volley_distributed::coordinator::run`] (agents, live merge,
//! `abortOnFail`, loss policy) → k6's summary → the shared after-run chain → k6's exit code.

use crate::exit;
use clap::{Args, ValueEnum};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;
use volley_distributed::coordinator::{self, LossPolicy};
use volley_engine::{log, RunControl};
use volley_js::CliOptions;
use volley_run::after::AfterRun;
use volley_run::outputs::merged::MergedOutputs;
use volley_run::outputs::OutSpec;

const OUT_HELP: &str = "Output of the merged run (repeatable): influxdb=http://host:8086/DB and \
    prometheus=http://host:9090/api/v1/write stream the agents' merged per-second aggregates; \
    junit=FILE at the end. Not json=/csv= (per-sample: volley run's) (docs/distributed.md)";
use volley_run::{Outcome, Summary};

#[derive(Args, Debug)]
// `--out` is shared with `volley run`; the coordinator takes only its aggregate kinds.
#[command(mut_arg("out", |a| a.help(OUT_HELP)))]
pub struct CoordinatorArgs {
    /// The test: an archive (volley archive) or a script, archived here for the agents
    pub test: PathBuf,
    /// Agents the test is split across (execution segments 0:1/N, 1/N:2/N, ...)
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub instances: u64,
    /// Where agents connect, ADDR:PORT (port 0 picks one; the address is printed)
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: String,
    /// Shared secret every agent must present (default: env VOLLEY_TOKEN; one is required)
    #[arg(long, value_name = "T")]
    pub token: Option<String>,
    /// Serve TLS with this certificate chain (PEM; with --tls-key)
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM; with --tls-cert)
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// When an agent stops reporting: continue with the others (its data so far is kept) or
    /// abort the test (exit 108)
    #[arg(long, value_enum, default_value = "continue")]
    pub on_agent_loss: OnLoss,
    /// How long to wait for all agents to register and be ready
    #[arg(long, default_value = "5m", value_parser = volley_engine::parse_duration)]
    pub start_timeout: Duration,
    /// An agent silent this long is lost
    #[arg(long, default_value = "5s", value_parser = volley_engine::parse_duration)]
    pub agent_timeout: Duration,
    /// Add KEY=VALUE to every agent's __ENV (repeatable)
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Add a threshold, judged on the merged figures (as volley run's --threshold)
    #[arg(long = "threshold", value_name = "METRIC:EXPR")]
    pub thresholds: Vec<String>,
    /// `volley run`'s output flags, of the merged run (`--out`: OUT_HELP)
    #[command(flatten)]
    pub output: crate::output_flags::OutputFlags,
    /// Summary layout: compact (k6 v1's default), full or legacy
    #[arg(long, value_name = "MODE", value_parser = ["compact", "full", "legacy"])]
    pub summary_mode: Option<String>,
    /// Neither handleSummary nor the text summary (as k6)
    #[arg(long)]
    pub no_summary: bool,
    /// No progress and no text summary
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum OnLoss {
    Continue,
    Abort,
}

/// `--token`, else `VOLLEY_TOKEN` (both sides); one is required.
pub(crate) fn token(flag: &Option<String>) -> Result<String, String> {
    flag.clone()
        .or_else(|| std::env::var("VOLLEY_TOKEN").ok())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            "no token: give --token T or set VOLLEY_TOKEN (the same on the coordinator and \
             every agent)"
                .into()
        })
}

/// `-e KEY=VALUE` pairs.
pub(crate) fn env_pairs(env: &[String]) -> Result<Vec<(String, String)>, String> {
    env.iter()
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(format!("-e/--env '{kv}': expected KEY=VALUE")),
        })
        .collect()
}

/// The archive's bytes: the file itself, or the script archived now (into `dir`).
fn archive_bytes(test: &Path, env: &[(String, String)], dir: &Path) -> Result<PathBuf, String> {
    if volley_js::archive::is_archive(test) {
        return Ok(test.to_path_buf());
    }
    let env = env.iter().cloned().collect();
    let ar = volley_js::archive::create(test, env, &CliOptions::default())?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let out = dir.join("test.tar");
    volley_js::archive::write(&ar, &out)?;
    Ok(out)
}

pub fn run(a: CoordinatorArgs) -> i32 {
    let token = match token(&a.token) {
        Ok(t) => t,
        Err(e) => return exit::usage(&e),
    };
    let env = match env_pairs(&a.env) {
        Ok(e) => e,
        Err(e) => return exit::usage(&e),
    };
    let mode = match crate::run_cmd::summary_mode(a.summary_mode.as_deref()) {
        Ok(m) => m,
        Err(e) => return exit::usage(&e),
    };
    let (json, outs) = match OutSpec::parse_all(&a.output.out) {
        Ok(o) => o,
        Err(e) => return exit::outcome(&Outcome::ConfigError(e)),
    };
    if json.is_some() || outs.iter().any(|o| matches!(o, OutSpec::Csv(_))) {
        return exit::usage(
            "the coordinator streams the merged run's per-second aggregates (--out \
             influxdb=URL, prometheus=URL) and writes end-of-run outputs (--out junit=FILE, \
             --save, --summary-export, --report); per-sample outputs (json=, csv=) are \
             volley run's: the coordinator has the agents' per-second aggregates, not their \
             samples (the merged per-second series is in --save's file, docs/result-file.md)",
        );
    }
    let mut thresholds = Vec::new();
    for t in &a.thresholds {
        match volley_run::checks::split_flag(t) {
            Some(kv) => thresholds.push(kv),
            None => return exit::usage(&format!("--threshold '{t}': expected METRIC:EXPR")),
        }
    }
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(c), Some(k)) => match volley_distributed::server::tls_acceptor(c, k) {
            Ok(t) => Some(t),
            Err(e) => return exit::fail(&e),
        },
        _ => None,
    };
    let after = AfterRun {
        save: a.output.save.clone(),
        summary_export: a.output.summary_export.clone(),
        report: a.output.report.clone(),
        history: None,
        labels: Vec::new(),
        quiet: a.quiet,
    };
    let mut files: Vec<(&str, &Path)> = Vec::new();
    for o in &outs {
        if let OutSpec::Junit(p) = o {
            files.push(("--out", p));
        }
    }
    if let Err(e) = after.preflight(&files) {
        return exit::fail(&e);
    }
    let tmp = std::env::temp_dir().join(format!("volley-coordinator-{}", std::process::id()));
    let code = coordinate(
        &a,
        Setup {
            token,
            env,
            thresholds,
            tls,
            outs,
            after,
            mode,
        },
        &tmp,
    );
    let _ = std::fs::remove_dir_all(&tmp);
    code
}

/// The flags, checked.
struct Setup {
    token: String,
    env: Vec<(String, String)>,
    thresholds: Vec<(String, String)>,
    tls: Option<volley_distributed::server::TlsAcceptor>,
    outs: Vec<OutSpec>,
    after: AfterRun,
    mode: volley_run::SummaryMode,
}

fn coordinate(a: &CoordinatorArgs, s: Setup, tmp: &Path) -> i32 {
    let archive = match archive_bytes(&a.test, &s.env, tmp) {
        Ok(p) => p,
        Err(e) => return exit::outcome(&Outcome::ScriptError(e)),
    };
    let bytes = match std::fs::read(&archive) {
        Ok(b) => b,
        Err(e) => return exit::fail(&format!("{}: {e}", archive.display())),
    };
    let ctl = RunControl::new();
    crate::signals::install(ctl.clone());
    // The whole test, prepared here for what the coordinator judges and shows.
    let cli = CliOptions {
        thresholds: s.thresholds,
        ..CliOptions::default()
    };
    let p = match volley_js::prepare(
        &archive,
        volley_js::environment(&s.env, false),
        &cli,
        1,
        std::env::args().collect(),
        &ctl,
    ) {
        Ok(p) => p,
        Err(e) => return exit::outcome(&e.outcome()),
    };
    let outputs = match MergedOutputs::start(&s.outs) {
        Ok(o) => o,
        Err(e) => return exit::fail(&e),
    };
    let tty = std::io::stderr().is_terminal();
    let cfg = coordinator::Config {
        instances: a.instances as usize,
        listen: a.listen.clone(),
        token: s.token,
        tls: s.tls,
        on_agent_loss: match a.on_agent_loss {
            OnLoss::Continue => LossPolicy::Continue,
            OnLoss::Abort => LossPolicy::Abort,
        },
        start_timeout: a.start_timeout,
        agent_timeout: a.agent_timeout,
        archive: bytes,
        env: s.env,
        max_duration_s: p.spec.plan.max_duration().as_secs_f64(),
        thresholds: p.spec.thresholds,
        meta: p.spec.meta,
        options: serde_json::Value::Object(p.spec.options),
        progress: (!a.quiet).then_some(Duration::from_secs(if tty { 1 } else { 10 })),
        outputs: Some(outputs),
    };
    let instances = a.instances;
    let ended = coordinator::run(cfg, &ctl, |addr| {
        eprintln!("volley: coordinator listening on {addr}, waiting for {instances} agent(s)");
    });
    let ended = match ended {
        Ok(e) => e,
        Err(o) => return exit::outcome(&o),
    };
    for l in &ended.lost {
        log::warn(l);
    }
    if !a.quiet {
        eprintln!(
            "volley: merged {} agents' results {:.3}s after the last one came",
            ended.result.meta.instances,
            ended.merge_time.as_secs_f64()
        );
    }
    let summary = match Summary::from_result(&ended.result) {
        Ok(s) => s,
        Err(e) => return exit::fail(&e),
    };
    let tty_out = (exit::stdout_is_tty(), tty);
    let handled = a.no_summary || crate::run_cmd::handle_summary(&p.script, &summary, tty_out);
    if !a.quiet && !handled {
        exit::print(&summary.render(s.mode));
    }
    ended.output_problems.iter().for_each(|e| log::warn(e));
    exit::outcome(
        &s.after
            .finish(&ended.result, ended.outcome, ctl.was_interrupted()),
    )
}
