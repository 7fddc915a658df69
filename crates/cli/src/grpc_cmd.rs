//! `volley grpc ADDR --call pkg.Service/Method`: gRPC quick mode (ghz-like). Flags →
//! descriptors (`--proto`, `--protoset` or `--reflect`), the request encoded once, a
//! [`GrpcConfig`]; then the run layer ([`volley_run::execute`]) with a live line, the summary
//! (status distribution, errors by class), the shared after-run chain and the exit code — or
//! `--vs` rounds. Reference: docs/grpc.md.

use crate::quick_flags::{Chain, LiveLine, LoadFlags, QuickOutputFlags, TlsFlags};
use crate::{exit, signals};
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;
use volley_engine::quick_grpc::{self, GrpcConfig, GrpcFactory, GrpcSummary};
use volley_engine::vus::Tick;
use volley_engine::RunControl;
use volley_run::checks::ModeMetrics;

/// Largest `-d @FILE`: the request is built from it in memory.
const MAX_DATA: u64 = 16 << 20;

/// Most calls in flight (`-c`): each caller is a task of a few KiB, created up front.
const MAX_CONCURRENCY: u64 = 100_000;

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  volley grpc 127.0.0.1:8080 --plaintext --proto examples/grpc/target.proto \\\n      --call volley.target.Target/Echo -d '{\"text\":\"hi\"}' -c 50 -z 10s\n  volley grpc api:443 --reflect --call pkg.Svc/Get -d @req.json -q 2000 --save grpc.json\n  volley grpc 127.0.0.1:8080 --plaintext --reflect --call pkg.Svc/Get --vs 127.0.0.1:8081\n\nExit codes: 0 ok, 1 cannot run, 2 usage (bad proto, --call, -d), 3 call errors (connect,\ntimeout, reset, transport), 99 thresholds crossed, 105 interrupted",
    mut_arg("vs", |a| a.value_name("ADDR_B").help("A/B mode: run the same load against this second address too, alternating A B, and print one side-by-side table")),
    mut_arg("rate", |a| a.help("Open model: start R calls/s in total, on schedule however slow the server is")),
    mut_arg("json", |a| a.help("Print the summary as JSON on stdout (keys: see docs/grpc.md)")),
    mut_arg("thresholds", |a| a.help("Exit with code 99 unless METRIC passes CHECK: k6's grammar (grpc_req_duration:p(95)<300, 'grpc_reqs{status:OK}:count>0', grpc_req_failed:rate<0.01) or a drift/limit check (monitor_rss_bytes:slope<5MB/h) (repeatable)"))
)]
pub struct GrpcArgs {
    /// The server, host:port
    pub addr: String,
    /// The method: package.Service/Method (or package.Service.Method)
    #[arg(long, value_name = "METHOD")]
    pub call: String,
    /// A .proto file declaring the service (repeatable); compiled in-process, no protoc needed
    #[arg(long, value_name = "FILE")]
    pub proto: Vec<PathBuf>,
    /// Where the .proto files' imports are found (repeatable; each proto's own directory is
    /// always searched)
    #[arg(short = 'i', long = "import-path", value_name = "DIR")]
    pub import_paths: Vec<PathBuf>,
    /// A compiled FileDescriptorSet instead of .proto files (protoc --descriptor_set_out
    /// --include_imports, buf build -o)
    #[arg(long, value_name = "FILE", conflicts_with = "proto")]
    pub protoset: Option<PathBuf>,
    /// Ask the server for its descriptors (server reflection) instead of --proto/--protoset
    #[arg(long, conflicts_with_all = ["proto", "protoset"])]
    pub reflect: bool,
    /// The request message as JSON, or @FILE; encoded once, sent by every call (default {})
    #[arg(short = 'd', long = "data", value_name = "JSON|@FILE")]
    pub data: Option<String>,
    /// Call metadata as a JSON object, e.g. '{"x-id":"7"}'
    #[arg(short = 'm', long, value_name = "JSON")]
    pub metadata: Option<String>,
    /// Call metadata "key: value" (repeatable)
    #[arg(short = 'H', long = "header", value_name = "KEY: VALUE")]
    pub headers: Vec<String>,
    /// Calls in flight at once, shared by the connections (as ghz's -c)
    #[arg(short = 'c', long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=MAX_CONCURRENCY))]
    pub concurrency: u64,
    /// HTTP/2 connections the calls are multiplexed on (as ghz's --connections)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=65_535))]
    pub connections: u64,
    /// Calls to make in total (stops at whichever of -z/-n comes first)
    #[arg(short = 'n', long = "requests", visible_alias = "total", value_parser = clap::value_parser!(u64).range(1..))]
    pub requests: Option<u64>,
    #[command(flatten)]
    pub load: LoadFlags,
    /// Each call's deadline (sent as grpc-timeout; a call past it is DEADLINE_EXCEEDED)
    #[arg(long, default_value = "20s", value_parser = volley_engine::parse_duration)]
    pub deadline: Duration,
    /// TCP connect + TLS + HTTP/2 handshake timeout
    #[arg(long, default_value = "10s", value_parser = volley_engine::parse_duration)]
    pub connect_timeout: Duration,
    /// Plain-text HTTP/2 (h2c) instead of TLS
    #[arg(long, conflicts_with_all = ["insecure", "cacert", "cert", "key"])]
    pub plaintext: bool,
    #[command(flatten)]
    pub tls: TlsFlags,
    /// Client certificate (PEM) for mutual TLS, with --key (as ghz's --cert)
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// The client certificate's private key (PEM, unencrypted), with --cert (as ghz's --key)
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// The :authority header instead of ADDR
    #[arg(long, value_name = "HOST")]
    pub authority: Option<String>,
    #[command(flatten)]
    pub outputs: QuickOutputFlags,
}

/// What `--threshold` may name in a gRPC run, and the one tagged metric.
const GRPC_METRICS: ModeMetrics = ModeMetrics {
    names: quick_grpc::METRICS,
    tagged: (quick_grpc::GRPC_REQS, "status"),
    kind: metric_kind,
};

fn metric_kind(name: &str) -> volley_metrics::MetricKind {
    use volley_metrics::MetricKind;
    match name {
        quick_grpc::GRPC_REQ_CORRECTED | quick_grpc::GRPC_CONNECTING => MetricKind::Trend,
        quick_grpc::GRPC_REQ_FAILED => MetricKind::Rate,
        n => volley_metrics::names::builtin_kind(n).unwrap_or(MetricKind::Counter),
    }
}

pub fn run(a: GrpcArgs) -> i32 {
    let o = &a.outputs;
    let cfg = match config(&a) {
        Ok(c) => c,
        Err((code, e)) if code == exit::USAGE => return exit::usage(&e),
        Err((_, e)) => return exit::fail(&e),
    };
    let chain = match o.prepare(&GRPC_METRICS, &[]) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let ctl = RunControl::new();
    signals::install(ctl.clone());
    let live = !o.quiet && !o.json && std::io::stderr().is_terminal();
    if let Some(b) = &o.vs {
        let mut cfg_b = cfg.clone();
        cfg_b.addr = b.clone();
        let cfgs = [cfg, cfg_b];
        let names = [cfgs[0].addr.as_str(), cfgs[1].addr.as_str()];
        let quiet_chain = Chain {
            thresholds: Vec::new(),
            json_path: None,
            outs: Vec::new(),
            ..chain
        };
        return crate::quick_flags::ab(
            o,
            names,
            &ctl,
            |i| execute(&cfgs[i], &quiet_chain, &ctl, live).map(|(r, _)| r),
            |r| {
                let s = GrpcSummary::from_result(r)?;
                Ok((s.to_json(), s.errors_total() > 0))
            },
        );
    }
    let (result, aborted) = match execute(&cfg, &chain, &ctl, live) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let summary = match GrpcSummary::from_result(&result) {
        Ok(s) => s,
        Err(e) => return exit::fail(&format!("cannot summarise the run: {e}")),
    };
    print_summary(&summary, o.json, o.quiet);
    exit::outcome(&chain.finish(&result, aborted, summary.errors_total() > 0, o.quiet))
}

/// One run through the run layer (see [`Chain::execute`]).
fn execute(
    cfg: &GrpcConfig,
    chain: &Chain,
    ctl: &RunControl,
    live: bool,
) -> Result<(volley_metrics::RunResult, bool), i32> {
    let spec = spec(cfg, chain, live).map_err(|e| exit::fail(&e))?;
    Chain::execute(spec, ctl)
}

/// gRPC quick mode as the run layer's input: its plan and body factory (one VU per
/// connection), k6's thresholds, the outputs, the live line, and its own result shape.
fn spec(
    cfg: &GrpcConfig,
    chain: &Chain,
    live: bool,
) -> Result<volley_run::RunSpec<GrpcFactory>, String> {
    let (plan, factory) = quick_grpc::plan(cfg, &chain.monitor)?;
    let base: volley_metrics::TagSet = [("name", factory.name()), ("method", cfg.path.clone())]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let (json_out, outputs) = chain.outputs(base)?;
    let shaper = factory.clone();
    Ok(volley_run::RunSpec {
        plan,
        factory: factory.clone(),
        thresholds: chain.thresholds.clone(),
        outputs,
        json_out,
        observers: vec![Box::new(LiveLine { live, text: line })],
        meta: volley_metrics::RunMeta::new(quick_grpc::RUN_KIND, factory.name(), vec![]),
        options: Default::default(),
        late_options: None,
        result_of: Some(Box::new(move |r| GrpcFactory::result(&shaper, r))),
    })
}

/// `volley summary FILE` of a `volley grpc` result.
pub fn summary(r: &volley_metrics::RunResult, json: bool) -> i32 {
    match GrpcSummary::from_result(r) {
        Ok(s) => {
            print_summary(&s, json, false);
            exit::OK
        }
        Err(e) => exit::fail(&e),
    }
}

fn print_summary(s: &GrpcSummary, json: bool, quiet: bool) {
    crate::http_cmd::print_doc(json, quiet, || s.to_json(), |c| s.render_text(c));
}

/// The live line: elapsed, calls, last second's rate, failures without a status.
fn line(tick: &Tick<'_>) -> String {
    let agg = tick.agg;
    let rate = agg.last_point().map_or(0.0, |p| {
        p.counter_sum(quick_grpc::GRPC_REQS) / p.w.max(1) as f64
    });
    format!(
        "{:>5.0}s  {} calls  {rate:.0} calls/s  errors {}",
        tick.elapsed.as_secs_f64(),
        agg.counter_sum(quick_grpc::GRPC_REQS),
        agg.counter_sum(quick_grpc::GRPC_ERRORS),
    )
}

/// Flags → config; errors carry their exit code (usage, or 1 when the server could not be
/// asked by reflection).
fn config(a: &GrpcArgs) -> Result<GrpcConfig, (i32, String)> {
    let usage = |e: String| (exit::USAGE, e);
    check_addr(&a.addr).map_err(usage)?;
    if let Some(b) = &a.outputs.vs {
        check_addr(b).map_err(|e| usage(format!("--vs: {e}")))?;
    }
    a.tls.check().map_err(usage)?;
    let headers = crate::http_cmd::parse_headers(&a.headers).map_err(usage)?;
    let metadata = volley_grpc::quick::metadata(a.metadata.as_deref(), &headers).map_err(usage)?;
    let tls = match a.plaintext {
        true => None,
        false => Some(
            volley_grpc::quick::tls_config(&volley_grpc::quick::TlsFiles {
                insecure: a.tls.insecure,
                cacert: a.tls.cacert.as_deref(),
                identity: a.cert.as_deref().zip(a.key.as_deref()),
            })
            .map_err(usage)?,
        ),
    };
    let connect = volley_grpc::call::ConnectOptions {
        tls: tls.clone(),
        timeout: a.connect_timeout,
        authority: a.authority.clone(),
        ..Default::default()
    };
    let pool = descriptors(a, &connect, &metadata)?;
    let method = volley_grpc::quick::find_unary(&pool, &a.call).map_err(usage)?;
    let (json, origin) = match a.data.as_deref() {
        None => ("{}".to_owned(), "-d".to_owned()),
        Some(d) => match d.strip_prefix('@') {
            Some(path) => (read_data(path).map_err(usage)?, format!("-d @{path}")),
            None => (d.to_owned(), "-d".to_owned()),
        },
    };
    if json.contains("{{") && !a.outputs.quiet {
        eprintln!(
            "volley: note: {origin} is sent as written: ghz's {{{{.RequestNumber}}}}-style \
             templates are not expanded (the request is encoded once)"
        );
    }
    let message = volley_grpc::quick::request_bytes(&method, &json, &origin).map_err(usage)?;
    let (duration, rate) =
        crate::quick_flags::pacing(&a.load, a.requests, "calls").map_err(usage)?;
    // Never more callers than calls: each is a task up front.
    let concurrency = a.concurrency.min(a.requests.unwrap_or(u64::MAX)) as usize;
    let request: serde_json::Value = serde_json::from_str(&json).unwrap_or_default();
    Ok(GrpcConfig {
        addr: a.addr.clone(),
        path: volley_grpc::proto::path_of(&method),
        message,
        metadata,
        concurrency,
        connections: a.connections as usize,
        duration,
        requests: a.requests,
        rate,
        deadline: a.deadline,
        connect_timeout: a.connect_timeout,
        tls,
        authority: a.authority.clone(),
        threads: a.load.threads,
        command: std::env::args().collect(),
        describe: serde_json::json!({
            "data": request,
            "proto": a.proto,
            "protoset": a.protoset,
            "reflect": a.reflect,
        }),
    })
}

/// The descriptor pool: `--proto` files, a `--protoset`, or the server's by reflection.
fn descriptors(
    a: &GrpcArgs,
    connect: &volley_grpc::call::ConnectOptions,
    md: &volley_grpc::call::Metadata,
) -> Result<volley_grpc::prost_reflect::DescriptorPool, (i32, String)> {
    let usage = |e: String| (exit::USAGE, e);
    if a.reflect {
        return volley_grpc::quick::reflect_pool(&a.addr, connect, md, a.connect_timeout)
            .map_err(|e| (exit::FAILURE, e));
    }
    if let Some(p) = &a.protoset {
        let bytes =
            std::fs::read(p).map_err(|e| usage(format!("--protoset {}: {e}", p.display())))?;
        return volley_grpc::proto::load_protoset(&p.display().to_string(), &bytes)
            .map_err(|e| usage(e.to_string()));
    }
    if a.proto.is_empty() {
        return Err(usage(
            "no service description: give --proto FILE, --protoset FILE or --reflect".into(),
        ));
    }
    // As ghz: each proto's own directory is an import path too.
    let mut paths = a.import_paths.clone();
    let mut files = Vec::new();
    for p in &a.proto {
        if !p.is_file() {
            return Err(usage(format!("--proto {}: no such file", p.display())));
        }
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
        paths.push(dir.map_or_else(|| PathBuf::from("."), PathBuf::from));
        files.push(
            p.file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
    }
    paths.dedup();
    volley_grpc::proto::load(&paths, &files).map_err(|e| usage(e.to_string()))
}

/// `host:port`, not a URL.
fn check_addr(addr: &str) -> Result<(), String> {
    if addr.contains("://") || !addr.contains(':') {
        return Err(format!(
            "'{addr}' is not an address: give host:port, e.g. 127.0.0.1:8080 (add --plaintext \
             for h2c)"
        ));
    }
    Ok(())
}

fn read_data(path: &str) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("-d @{path}: {e}"))?;
    if !meta.is_file() || meta.len() > MAX_DATA {
        return Err(format!(
            "-d @{path}: not a regular file of at most {MAX_DATA} bytes"
        ));
    }
    std::fs::read_to_string(path).map_err(|e| format!("-d @{path}: {e}"))
}
