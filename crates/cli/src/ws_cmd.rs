//! `volley ws URL`: WebSocket quick mode. Flags → [`WsConfig`], the run layer
//! ([`volley_run::execute`]) with a live line, the summary, the shared after-run chain
//! (`--save`, `--summary-export`, `--report`, `--history`) and the exit code. Reference:
//! docs/websocket.md.

use crate::{exit, signals};
use clap::Args;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;
use volley_engine::quick_ws::{self, Payload, WsConfig, WsFactory, WsSummary};
use volley_engine::vus::Tick;
use volley_engine::RunControl;
use volley_run::Outcome;

/// Largest `--message @FILE` / `--size`: every message is built from it in memory.
const MAX_MESSAGE: u64 = 16 << 20;

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  volley ws ws://127.0.0.1:8080/ws/echo -c 100 -z 10s\n  volley ws wss://host/socket --message '{\"op\":\"ping\"}' -q 5000 -c 200\n  volley ws ws://host/ws --message @frame.bin --binary -n 100000 --save ws.json\n\nExit codes: 0 ok, 1 cannot run, 2 usage, 3 connect/close errors or lost echoes, 105 interrupted"
)]
pub struct WsArgs {
    /// ws:// or wss:// URL of an echo endpoint
    pub url: String,
    /// Concurrent connections (at most 65,535; never more than -n)
    #[arg(short = 'c', long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=65_535))]
    pub connections: u64,
    /// How long to send, e.g. 10s, 1m (default 10s unless -n is given)
    #[arg(short = 'z', long, value_parser = volley_engine::parse_duration)]
    pub duration: Option<Duration>,
    /// Messages to send in total (stops at whichever of -z/-n comes first)
    #[arg(short = 'n', long = "messages", value_parser = clap::value_parser!(u64).range(1..))]
    pub messages: Option<u64>,
    /// The message: TEXT, or @FILE for a file's bytes (default: a generated one that starts
    /// with its sequence number, so each echo is matched to its own send)
    #[arg(short = 'm', long, value_name = "TEXT|@FILE")]
    pub message: Option<String>,
    /// Size of the generated message in bytes (at least 16)
    #[arg(long, default_value_t = 32, conflicts_with = "message", value_parser = clap::value_parser!(u64).range(16..=MAX_MESSAGE))]
    pub size: u64,
    /// Send binary frames instead of text
    #[arg(long)]
    pub binary: bool,
    /// Open model: R messages/s in total over all connections, on schedule whatever the
    /// server does (default: closed model, one message in flight per connection)
    #[arg(short = 'q', long, value_name = "R")]
    pub rate: Option<f64>,
    /// Open model with linear ramps, e.g. 100:10s,2000:30s (starts from -q, default 0)
    #[arg(long, value_name = "RATE:DUR,...")]
    pub rate_stages: Option<String>,
    /// Offer a subprotocol (Sec-WebSocket-Protocol; repeatable)
    #[arg(long = "subprotocol", value_name = "NAME")]
    pub subprotocols: Vec<String>,
    /// Handshake header "Name: value" (repeatable)
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// An echo later than this counts as lost (error "timeout")
    #[arg(long, default_value = "10s", value_parser = volley_engine::parse_duration)]
    pub timeout: Duration,
    /// TCP connect + TLS + upgrade timeout
    #[arg(long, default_value = "10s", value_parser = volley_engine::parse_duration)]
    pub connect_timeout: Duration,
    /// Skip TLS certificate verification (wss://)
    #[arg(long)]
    pub insecure: bool,
    /// Trust the PEM certificate(s) in FILE in addition to the built-in roots
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Worker threads (default: one per available core)
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Print the summary as JSON on stdout (keys: docs/websocket.md)
    #[arg(long)]
    pub json: bool,
    /// Save the run result file (volley summary / report / compare read it)
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Write a self-contained HTML report of the run to FILE
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Write k6's end-of-test summary export JSON to FILE
    #[arg(long, value_name = "FILE")]
    pub summary_export: Option<PathBuf>,
    /// Append this run to a history (as `volley http --history`)
    #[arg(long, value_name = "DIR_OR_URL", num_args = 0..=1, default_missing_value = "")]
    pub history: Option<String>,
    /// Label the stored run (repeatable; with --history)
    #[arg(long = "label", value_name = "NAME", requires = "history")]
    pub labels: Vec<String>,
    /// No progress line and no text summary (errors still go to stderr)
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(a: WsArgs) -> i32 {
    let cfg = match config(&a) {
        Ok(c) => c,
        Err(e) => return exit::usage(&e),
    };
    if let Err(e) = crate::history_cmd::check_labels(&a.labels) {
        return exit::usage(&e);
    }
    let after = volley_run::after::AfterRun {
        save: a.save.clone(),
        summary_export: a.summary_export.clone(),
        report: a.report.clone(),
        history: a.history.clone(),
        labels: a.labels.clone(),
        quiet: a.quiet || a.json,
    };
    if let Err(e) = after.preflight(&[]) {
        return exit::fail(&e);
    }
    let ctl = RunControl::new();
    signals::install(ctl.clone());
    let live = !a.quiet && !a.json && std::io::stderr().is_terminal();
    let (plan, factory) = match quick_ws::plan(&cfg, &Default::default()) {
        Ok(p) => p,
        Err(e) => return exit::fail(&e),
    };
    let outputs = match volley_run::outputs::Outputs::start(&[]) {
        Ok(o) => o,
        Err(e) => return exit::fail(&e),
    };
    let shaper = factory.clone();
    let spec = volley_run::RunSpec {
        plan,
        factory,
        thresholds: Vec::new(),
        outputs,
        json_out: None,
        observers: vec![Box::new(Line { live })],
        meta: volley_metrics::RunMeta::new(quick_ws::RUN_KIND, cfg.url.clone(), vec![]),
        options: Default::default(),
        late_options: None,
        result_of: Some(Box::new(move |r| WsFactory::result(&shaper, r))),
    };
    let fin = match volley_run::execute(spec, &ctl) {
        Ok(f) => f,
        Err(o) => return exit::outcome(&o),
    };
    let result = fin.result;
    let summary = match WsSummary::from_result(&result) {
        Ok(s) => s,
        Err(e) => return exit::fail(&format!("cannot summarise the run: {e}")),
    };
    print_summary(&summary, a.json, a.quiet);
    let failed = summary.errors_total() + summary.unanswered > 0;
    let outcome = Outcome::of_run(None, None, None, result.meta.interrupted, failed);
    exit::outcome(&after.finish(&result, outcome, false))
}

/// `volley summary FILE` of a `volley ws` result.
pub fn summary(r: &volley_metrics::RunResult, json: bool) -> i32 {
    match WsSummary::from_result(r) {
        Ok(s) => {
            print_summary(&s, json, false);
            exit::OK
        }
        Err(e) => exit::fail(&e),
    }
}

fn print_summary(s: &WsSummary, json: bool, quiet: bool) {
    crate::http_cmd::print_doc(json, quiet, || s.to_json(), |c| s.render_text(c));
}

/// The live line (terminals only): elapsed, round trips, last second's rate, errors.
struct Line {
    live: bool,
}

impl volley_run::Observer for Line {
    fn tick(&mut self, tick: &Tick<'_>) {
        if !self.live {
            return;
        }
        let agg = tick.agg;
        let rate = agg.last_point().map_or(0.0, |p| {
            p.counter_sum(volley_metrics::names::WS_MSGS_RECEIVED) / p.w.max(1) as f64
        });
        eprint!(
            "\r\x1b[2K{:>5.0}s  {} sent  {} received  {rate:.0} msg/s  errors {}",
            tick.elapsed.as_secs_f64(),
            agg.counter_sum(volley_metrics::names::WS_MSGS_SENT),
            agg.counter_sum(volley_metrics::names::WS_MSGS_RECEIVED),
            agg.counter_sum(quick_ws::WS_ERRORS),
        );
        let _ = std::io::stderr().flush();
    }

    fn ended(
        &mut self,
        _run: &volley_engine::vus::VuRunResult,
        _plan: &volley_engine::vus::VuPlan,
    ) {
        if self.live {
            eprint!("\r\x1b[2K");
        }
    }
}

fn config(a: &WsArgs) -> Result<WsConfig, String> {
    volley_http::ws::http_target(&a.url)
        .map_err(|e| format!("{e}\n  hint: e.g. volley ws ws://127.0.0.1:8080/ws/echo"))?;
    let headers = crate::http_cmd::parse_headers(&a.headers)?;
    let payload = match &a.message {
        None => Payload::Generated {
            size: a.size as usize,
        },
        Some(m) => match m.strip_prefix('@') {
            Some(path) => {
                let meta =
                    std::fs::metadata(path).map_err(|e| format!("--message @{path}: {e}"))?;
                if !meta.is_file() || meta.len() > MAX_MESSAGE {
                    return Err(format!(
                        "--message @{path}: not a regular file of at most {MAX_MESSAGE} bytes"
                    ));
                }
                let bytes = std::fs::read(path).map_err(|e| format!("--message @{path}: {e}"))?;
                if !a.binary && std::str::from_utf8(&bytes).is_err() {
                    return Err(format!(
                        "--message @{path}: not UTF-8 text\n  hint: add --binary to send it as \
                         binary frames"
                    ));
                }
                Payload::Fixed(bytes)
            }
            None => Payload::Fixed(m.clone().into_bytes()),
        },
    };
    let rate = crate::http_cmd::parse_rate(a.rate, a.rate_stages.as_deref(), "messages")?;
    if let Some(p) = &a.cacert {
        if !p.is_file() {
            return Err(format!("--cacert {}: no such file", p.display()));
        }
    }
    let duration = crate::http_cmd::load_length(a.duration, a.messages, rate.as_ref())?;
    Ok(WsConfig {
        url: a.url.clone(),
        headers,
        subprotocols: a.subprotocols.clone(),
        payload,
        binary: a.binary,
        connections: a.connections.min(a.messages.unwrap_or(u64::MAX)) as usize,
        duration,
        messages: a.messages,
        rate,
        connect_timeout: a.connect_timeout,
        timeout: a.timeout,
        insecure: a.insecure,
        cacert: a.cacert.clone(),
        threads: a.threads,
        command: std::env::args().collect(),
    })
}
