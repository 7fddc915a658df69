//! `volley agent --coordinator HOST:PORT`: register ([`volley_distributed::agent`]), unpack
//! the archive, run the assigned execution segment through the same path as `volley run`
//! ([`volley_js::prepare`] → [`volley_run::execute`]) with the coordinator's barriers and
//! snapshot feed attached, deliver the result, exit.

use crate::exit;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;
use volley_distributed::agent::{self, Link, SetupData};
use volley_distributed::wire::Endpoint;
use volley_engine::RunControl;
use volley_js::CliOptions;
use volley_run::Outcome;

#[derive(Args, Debug)]
pub struct AgentArgs {
    /// The coordinator, HOST:PORT
    #[arg(long, value_name = "HOST:PORT")]
    pub coordinator: String,
    /// The coordinator's shared secret (default: env VOLLEY_TOKEN)
    #[arg(long, value_name = "T")]
    pub token: Option<String>,
    /// Connect with TLS, trusting this CA (PEM) besides the usual roots
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    pub tls_ca: Option<PathBuf>,
    /// Connect with TLS without checking the coordinator's certificate
    #[arg(long)]
    pub insecure: bool,
    /// This agent's name in the coordinator's summary (default: the host name and pid)
    #[arg(long)]
    pub name: Option<String>,
    /// Keep trying to reach the coordinator this long (it may start after the agents)
    #[arg(long, default_value = "2m", value_parser = volley_engine::parse_duration)]
    pub retry_for: Duration,
    /// Worker threads (default: one per available core)
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

impl AgentArgs {
    /// An agent of the coordinator at `addr` with every other flag at its default (`volley
    /// run --coordinator ADDR`).
    pub fn of_coordinator(addr: String, threads: usize) -> AgentArgs {
        AgentArgs {
            coordinator: addr,
            token: None,
            tls_ca: None,
            insecure: false,
            name: None,
            retry_for: Duration::from_secs(120),
            threads,
        }
    }
}

pub fn run(a: AgentArgs) -> i32 {
    let token = match crate::coordinator_cmd::token(&a.token) {
        Ok(t) => t,
        Err(e) => return exit::usage(&e),
    };
    let tls = if a.tls_ca.is_some() || a.insecure {
        let opts = volley_http::tls::TlsOptions {
            insecure: a.insecure,
            cacert: a.tls_ca.clone(),
        };
        match volley_http::tls::tls_config(&opts, &[b"http/1.1"]) {
            Ok(c) => Some(c),
            Err(e) => return exit::fail(&e),
        }
    } else {
        None
    };
    let ep = Endpoint {
        addr: a.coordinator.clone(),
        token,
        tls,
    };
    let name = a.name.clone().unwrap_or_else(|| {
        let host = volley_metrics::result::HostInfo::current().hostname;
        format!("{host}-{}", std::process::id())
    });
    let job = match agent::register(&ep, &name, a.retry_for) {
        Ok(j) => j,
        Err(e) => return exit::fail(&e),
    };
    eprintln!(
        "volley: agent '{name}' registered: segment {} of {}",
        job.segment, job.sequence
    );
    let dir = std::env::temp_dir().join(format!("volley-agent-{}", std::process::id()));
    let code = run_job(&a, ep, &job, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    code
}

fn run_job(
    a: &AgentArgs,
    ep: Endpoint,
    job: &volley_distributed::proto::Assignment,
    dir: &std::path::Path,
) -> i32 {
    use base64::Engine;
    let tar = match base64::engine::general_purpose::STANDARD.decode(&job.archive) {
        Ok(b) => b,
        Err(e) => return exit::fail(&format!("the coordinator sent a bad archive: {e}")),
    };
    let path = dir.join("test.tar");
    if let Err(e) = std::fs::create_dir_all(dir).and_then(|_| std::fs::write(&path, tar)) {
        return exit::fail(&format!("{}: {e}", path.display()));
    }
    // Agent 0 runs setup() and teardown(); the others get setup's data at the barrier.
    let mut flags = serde_json::Map::new();
    flags.insert("executionSegment".into(), job.segment.clone().into());
    flags.insert(
        "executionSegmentSequence".into(),
        job.sequence.clone().into(),
    );
    if job.index != 0 {
        flags.insert("noSetup".into(), true.into());
        flags.insert("noTeardown".into(), true.into());
    }
    let cli = CliOptions {
        flag_options: flags,
        // The coordinator judges the thresholds, on the merged figures.
        no_thresholds: true,
        ..CliOptions::default()
    };
    let ctl = RunControl::new();
    crate::signals::install(ctl.clone());
    let env = volley_js::environment(&job.env, false);
    let mut p = match volley_js::prepare(
        &path,
        env,
        &cli,
        a.threads,
        std::env::args().collect(),
        &ctl,
    ) {
        Ok(p) => p,
        Err(e) => return failed(&ep, job, e.outcome()),
    };
    let (get, set) = (p.script.clone(), p.script.clone());
    let link = Link::start(
        ep.clone(),
        job,
        ctl.clone(),
        SetupData {
            get: Box::new(move || get.setup_data()),
            set: Box::new(move |d| set.set_setup_data(d)),
        },
    );
    p.spec.plan.gates = Some(link.gates());
    p.spec.observers.push(link.observer());
    let fin = match volley_run::execute(p.spec, &ctl) {
        Ok(f) => f,
        // setup() failing on agent 0 before the start, or the run not starting at all.
        Err(o) if link.failure().is_none() && !matches!(o, Outcome::InterruptedBeforeStart(_)) => {
            return failed(&ep, job, o)
        }
        Err(o) => return exit::outcome(&o),
    };
    if let Some(e) = link.failure() {
        return exit::fail(&e);
    }
    match link.finish(&fin.result, fin.teardown_error.clone(), fin.aborted.clone()) {
        Ok(()) => {
            eprintln!(
                "volley: agent segment {} done: result delivered",
                job.segment
            );
            exit::OK
        }
        Err(e) => exit::fail(&e),
    }
}

/// This agent's part cannot run: the coordinator hears the error at once (it ends the run
/// with the same exit code), then the agent ends with it.
fn failed(ep: &Endpoint, job: &volley_distributed::proto::Assignment, o: Outcome) -> i32 {
    let text = match &o {
        Outcome::ScriptError(m)
        | Outcome::ConfigError(m)
        | Outcome::SetupTimeout(m)
        | Outcome::Failure(m)
        | Outcome::InterruptedBeforeStart(m) => m.clone(),
        o => format!("{o:?}"),
    };
    agent::report_failure(ep, job.agent, &text, o.exit_code());
    exit::outcome(&o)
}
