//! `volley ws URL`: WebSocket quick mode. Flags → [`WsConfig`], the run layer
//! ([`volley_run::execute`]) with a live line, the summary, the quick modes' shared flags and
//! after-run chain ([`crate::quick_flags`]: `--save`, `--summary-export`, `--report`,
//! `--history`, `--out`, `--threshold`, `--monitor`; `--vs` is refused) and the exit code.
//! Reference: docs/websocket.md.

use crate::quick_flags::{Chain, LiveLine, LoadFlags, QuickOutputFlags, TlsFlags};
use crate::{exit, signals};
use clap::Args;
use std::io::IsTerminal;
use std::time::Duration;
use volley_engine::quick_ws::{self, Payload, WsConfig, WsFactory, WsSummary};
use volley_engine::vus::Tick;
use volley_engine::RunControl;
use volley_run::checks::ModeMetrics;

/// Largest `--message @FILE` / `--size`: every message is built from it in memory.
const MAX_MESSAGE: u64 = 16 << 20;

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  volley ws ws://127.0.0.1:8080/ws/echo -c 100 -z 10s\n  volley ws wss://host/socket --message '{\"op\":\"ping\"}' -q 5000 -c 200\n  volley ws ws://host/ws --message @frame.bin --binary -n 100000 --save ws.json\n  volley ws ws://127.0.0.1:8080/ws/echo -c 1000 --inflight 8 -z 10s\n\nExit codes: 0 ok, 1 cannot run, 2 usage, 3 connect/close errors or lost echoes, 99 thresholds crossed, 105 interrupted",
    mut_arg("rate", |a| a.help("Open model: send R messages/s in total over all connections, on schedule whatever the server does (default: closed model, --inflight messages outstanding per connection)")),
    mut_arg("json", |a| a.help("Print the summary as JSON on stdout (keys: docs/websocket.md)")),
    mut_arg("thresholds", |a| a.help("Exit with code 99 unless METRIC passes CHECK: k6's grammar (ws_rtt:p(95)<50, ws_msgs_unanswered:count==0, 'ws_errors{error:timeout}:count<1') or a drift/limit check (monitor_rss_bytes:slope<5MB/h) (repeatable)"))
)]
pub struct WsArgs {
    /// ws:// or wss:// URL of an echo endpoint
    pub url: String,
    /// Concurrent connections (at most 65,535; never more than -n)
    #[arg(short = 'c', long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=65_535))]
    pub connections: u64,
    #[command(flatten)]
    pub load: LoadFlags,
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
    /// Messages outstanding per connection. Closed model: N go at open, then one more per
    /// echo (default 1). Open model (-q): a cap (default none); a message due while N are
    /// outstanding waits for an echo and counts as a missed start, one still waiting at the
    /// end as dropped. Echoes are matched in send order, as an echo server answers
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub inflight: Option<u64>,
    /// Offer a subprotocol (Sec-WebSocket-Protocol; repeatable)
    #[arg(long = "subprotocol", value_name = "NAME")]
    pub subprotocols: Vec<String>,
    /// Offer permessage-deflate (RFC 7692) as k6's `compression: "deflate"` does; used when
    /// the server accepts (data_sent/data_received then count compressed bytes)
    #[arg(long, value_name = "ALGORITHM", value_parser = ["deflate"])]
    pub compression: Option<String>,
    /// Handshake header "Name: value" (repeatable)
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// An echo later than this counts as lost (error "timeout")
    #[arg(long, default_value = "10s", value_parser = volley_engine::parse_duration)]
    pub timeout: Duration,
    /// TCP connect + TLS + upgrade timeout
    #[arg(long, default_value = "10s", value_parser = volley_engine::parse_duration)]
    pub connect_timeout: Duration,
    #[command(flatten)]
    pub tls: TlsFlags,
    #[command(flatten)]
    pub outputs: QuickOutputFlags,
}

pub fn run(a: WsArgs) -> i32 {
    let o = &a.outputs;
    let cfg = match config(&a) {
        Ok(c) => c,
        Err(e) => return exit::usage(&e),
    };
    if o.vs.is_some() {
        // The A/B table's figures (status codes, success rate) are HTTP's and gRPC's.
        return exit::usage(
            "--vs is not supported by volley ws yet\n  hint: --save a run against each \
             endpoint and compare them with `volley compare A.json B.json`",
        );
    }
    let chain = match o.prepare(&WS_METRICS, &[]) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let ctl = RunControl::new();
    signals::install(ctl.clone());
    let live = !o.quiet && !o.json && std::io::stderr().is_terminal();
    let spec = match spec(&cfg, &chain, live) {
        Ok(s) => s,
        Err(e) => return exit::fail(&e),
    };
    let (result, aborted) = match Chain::execute(spec, &ctl) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let summary = match WsSummary::from_result(&result) {
        Ok(s) => s,
        Err(e) => return exit::fail(&format!("cannot summarise the run: {e}")),
    };
    print_summary(&summary, o.json, o.quiet);
    let failed = summary.errors_total() + summary.unanswered > 0;
    exit::outcome(&chain.finish(&result, aborted, failed, o.quiet))
}

/// What `--threshold` may name in a WebSocket run, and the one tagged metric.
const WS_METRICS: ModeMetrics = ModeMetrics {
    names: quick_ws::METRICS,
    tagged: (quick_ws::WS_ERRORS, "error"),
    kind: metric_kind,
};

fn metric_kind(name: &str) -> volley_metrics::MetricKind {
    use volley_metrics::MetricKind;
    match name {
        quick_ws::WS_RTT | quick_ws::WS_RTT_CORRECTED => MetricKind::Trend,
        n => volley_metrics::names::builtin_kind(n).unwrap_or(MetricKind::Counter),
    }
}

/// WebSocket quick mode as the run layer's input, with the output flags' thresholds,
/// outputs and monitor.
fn spec(
    cfg: &WsConfig,
    chain: &Chain,
    live: bool,
) -> Result<volley_run::RunSpec<WsFactory>, String> {
    let (plan, factory) = quick_ws::plan(cfg, &chain.monitor)?;
    let base: volley_metrics::TagSet = [("url".to_string(), cfg.url.clone())].into_iter().collect();
    let (json_out, outputs) = chain.outputs(base)?;
    let shaper = factory.clone();
    Ok(volley_run::RunSpec {
        plan,
        factory,
        thresholds: chain.thresholds.clone(),
        outputs,
        json_out,
        observers: vec![Box::new(LiveLine { live, text: line })],
        meta: volley_metrics::RunMeta::new(quick_ws::RUN_KIND, cfg.url.clone(), vec![]),
        options: Default::default(),
        late_options: None,
        result_of: Some(Box::new(move |r| WsFactory::result(&shaper, r))),
    })
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

/// The live line: elapsed, round trips, last second's rate, errors.
fn line(tick: &Tick<'_>) -> String {
    let agg = tick.agg;
    let rate = agg.last_point().map_or(0.0, |p| {
        p.counter_sum(volley_metrics::names::WS_MSGS_RECEIVED) / p.w.max(1) as f64
    });
    format!(
        "{:>5.0}s  {} sent  {} received  {rate:.0} msg/s  errors {}",
        tick.elapsed.as_secs_f64(),
        agg.counter_sum(volley_metrics::names::WS_MSGS_SENT),
        agg.counter_sum(volley_metrics::names::WS_MSGS_RECEIVED),
        agg.counter_sum(quick_ws::WS_ERRORS),
    )
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
    a.tls.check()?;
    let (duration, rate) = crate::quick_flags::pacing(&a.load, a.messages, "messages")?;
    Ok(WsConfig {
        url: a.url.clone(),
        headers,
        subprotocols: a.subprotocols.clone(),
        compression: a.compression.is_some(),
        payload,
        binary: a.binary,
        connections: a.connections.min(a.messages.unwrap_or(u64::MAX)) as usize,
        duration,
        messages: a.messages,
        rate,
        inflight: a.inflight.map(|n| n as usize),
        connect_timeout: a.connect_timeout,
        timeout: a.timeout,
        insecure: a.tls.insecure,
        cacert: a.tls.cacert.clone(),
        threads: a.load.threads,
        command: std::env::args().collect(),
    })
}
