//! Command-line flags. Names follow oha/hey/wrk where they agree (`-c`, `-z`, `-n`, `-m`,
//! `-H`, `-d`), so existing muscle memory works.

use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "volley",
    version,
    about = "Load testing and performance regression for HTTP services",
    long_about = "Load testing and performance regression for HTTP services.\n\nStart with `volley demo`, then point `volley http URL` at your own service."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Blast one URL with a fixed request (like oha, hey, wrk)
    Http(Box<HttpArgs>),
    /// Run the built-in test server (httpbin-like) on a loopback port
    Target(TargetArgs),
    /// Print the summary of a saved result file (--save)
    Summary(SummaryArgs),
    /// See Volley work: a guided tour against built-in servers, ending in a baseline table
    Demo(DemoArgs),
    /// Run a k6 script (k6's JS API, options and summary)
    Run(Box<RunArgs>),
    /// Write a self-contained HTML report (charts, tables) of one or more result files
    Report(ReportArgs),
    /// Compare two result files: noise-aware verdicts (regression, improvement, within noise)
    Compare(CompareArgs),
    /// Watch processes, cgroups or Prometheus endpoints: live table, CSV, drift checks
    Monitor(MonitorArgs),
    /// List the runs stored with --history (test, git revision, labels, key figures)
    History(HistoryArgs),
    /// Check after faults that every acknowledged write in a ledger survived (exit 6 if not)
    Verify(crate::verify_cmd::VerifyArgs),
    /// Pack a script, its modules, the files it opens and its options into one tar (k6's archive)
    Archive(Box<crate::archive_cmd::ArchiveArgs>),
    /// Print a script's or archive's options as resolved, scenarios expanded (JSON)
    Inspect(Box<crate::archive_cmd::ScriptArgs>),
    /// Merge the result files of a test's instances into one; judge thresholds on the whole
    Merge(crate::merge_cmd::MergeArgs),
    /// Run a test across agents (volley agent): merge their results live, judge thresholds
    Coordinator(Box<crate::coordinator_cmd::CoordinatorArgs>),
    /// Run a coordinator's test segment (volley coordinator) and stream the results to it
    Agent(Box<crate::agent_cmd::AgentArgs>),
    /// Run a suite file: services, readiness, seed, profiles, results, teardown
    Suite(crate::suite_cmd::SuiteArgs),
    /// Benchmark commands run by run: time, CPU, peak RSS of the process tree, printed metrics
    Bench(Box<crate::bench_cmd::BenchArgs>),
    /// Kubernetes manifests of a distributed run (coordinator Job + Service, agents' Indexed Job)
    K8s(crate::k8s_cmd::K8sArgs),
    /// Load a WebSocket echo endpoint: connections × messages, round-trip latency
    Ws(Box<crate::ws_cmd::WsArgs>),
    /// Load a gRPC method with unary calls (like ghz): status distribution, latency, A/B
    Grpc(Box<crate::grpc_cmd::GrpcArgs>),
}

#[derive(Args, Debug)]
pub struct HttpArgs {
    /// Absolute URL to load (http:// or https://)
    pub url: String,

    /// Concurrent connections (at most 65,535; never more than -n)
    #[arg(short = 'c', long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=65_535))]
    pub connections: u64,

    #[command(flatten)]
    pub load: crate::quick_flags::LoadFlags,

    /// Total requests to send (stops at whichever of -z/-n comes first)
    #[arg(short = 'n', long, value_parser = clap::value_parser!(u64).range(1..))]
    pub requests: Option<u64>,

    /// HTTP method (default GET, or POST when a body is given)
    #[arg(short = 'm', long)]
    pub method: Option<String>,

    /// Request header "Name: value" (repeatable)
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,

    /// Request body
    #[arg(short = 'd', long, conflicts_with = "body_file")]
    pub body: Option<String>,

    /// Request body from a file, streamed (never read whole into memory)
    #[arg(short = 'D', long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,

    /// Per-request timeout (send to last byte)
    #[arg(long, default_value = "30s", value_parser = volley_engine::parse_duration)]
    pub timeout: std::time::Duration,

    /// TCP connect + TLS handshake timeout
    #[arg(long, default_value = "10s", value_parser = volley_engine::parse_duration)]
    pub connect_timeout: std::time::Duration,

    /// Open a new connection for every request
    #[arg(long)]
    pub no_keepalive: bool,

    #[command(flatten)]
    pub tls: crate::quick_flags::TlsFlags,

    #[command(flatten)]
    pub outputs: crate::quick_flags::QuickOutputFlags,

    /// HTTP/1.1 pipelining: requests per connection written back to back in one write (with
    /// -q/--rate-stages: the requests due by then, up to N)
    #[arg(short = 'p', long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub pipeline: u64,

    /// Open model: connections may grow up to this many when all are busy (default: 10 × -c,
    /// at least 100; at most 65,535)
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65_535))]
    pub max_connections: Option<usize>,

    /// Use HTTP/2: h2 over TLS (ALPN) for https://, h2c with prior knowledge for http://
    #[arg(long)]
    pub http2: bool,

    /// HTTP/2: concurrent streams per connection
    #[arg(long, default_value_t = 1, requires = "http2", value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub h2_streams: u64,
    #[command(flatten)]
    pub dashboard: DashboardArgs,
    #[command(flatten)]
    pub faults: crate::fault_flags::FaultFlags,
    #[command(flatten)]
    pub capacity: crate::capacity_cmd::CapacityArgs,
}

#[derive(Args, Debug)]
pub struct TargetArgs {
    /// Address to listen on (port 0 picks a free one; the bound address is printed)
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Server worker threads
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Add this many milliseconds of latency to every response (for A/B tests)
    #[arg(long, value_name = "MS")]
    pub delay: Option<u64>,
    /// Serve at most N requests at once (each for --delay); the rest queue, so the capacity
    /// is N × 1000 / MS requests/s (docs/capacity.md)
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096))]
    pub workers: Option<usize>,
    /// Answer 500 while more than RPS requests per second arrive (tests of a breaking target)
    #[arg(long, value_name = "RPS", value_parser = crate::capacity_cmd::positive_rate)]
    pub fail_above: Option<f64>,
    /// Serve HTTPS with this PEM certificate chain (with --tls-key)
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for --tls-cert
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct SummaryArgs {
    /// A result file written with --save
    pub file: PathBuf,
    /// Print the JSON summary instead of the text one
    #[arg(long)]
    pub json: bool,
    /// Text layout: compact (default), full or legacy, as `volley run --summary-mode`
    #[arg(long, value_name = "MODE", value_parser = ["compact", "full", "legacy"])]
    pub summary_mode: Option<String>,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct DemoArgs {
    /// Without a subcommand: the guided tour (built-in target: quick blast and a k6 script;
    /// then the demo service with every example suite; see docs/demo.md)
    #[command(subcommand)]
    pub action: Option<DemoAction>,
    /// How long each load step runs: the quick blast and the k6 script (default 5s), and each
    /// example of the tour (default: the profile's, 3s in smoke)
    #[arg(short = 'z', long, value_parser = volley_engine::parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Concurrent connections of the quick blast
    #[arg(short = 'c', long, default_value_t = 20)]
    pub connections: usize,
    /// Where to write the results, HTML reports and the scripts (default: a `volley-demo`
    /// folder in the system's temporary directory)
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Only the quick blast; skip the k6 script and the example suites
    #[arg(long)]
    pub quick: bool,
    /// The examples' load profile: smoke (a few seconds each, under two minutes in all) or
    /// load (ramps to 10 VUs, about 100 s each)
    #[arg(long, value_enum, default_value_t = DemoProfile::Smoke)]
    pub profile: DemoProfile,
    /// Run only these examples of the tour (names as in the table: search, download, ...;
    /// comma-separated or repeated)
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub only: Vec<String>,
    /// Extra environment for the example scripts, e.g. P95_MS=50 (repeatable; see
    /// docs/examples.md)
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
}

/// `volley demo --profile`: the examples' `PROFILE` (soak and stress are left to `volley run`:
/// an hour, or 100 VUs, per example is not a tour).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DemoProfile {
    Smoke,
    Load,
}

impl From<DemoProfile> for volley_suite::tour::Profile {
    fn from(p: DemoProfile) -> Self {
        match p {
            DemoProfile::Smoke => volley_suite::tour::Profile::Smoke,
            DemoProfile::Load => volley_suite::tour::Profile::Load,
        }
    }
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Result files written with --save (several: overlaid charts, compared with the first)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Where to write the HTML page
    #[arg(short = 'o', long, default_value = "report.html", value_name = "FILE")]
    pub output: PathBuf,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The baseline result file (with --baseline: the file to judge)
    #[arg(required_unless_present = "baseline", value_name = "BASE")]
    pub base: Option<PathBuf>,
    /// The result file to judge against the baseline
    #[arg(value_name = "NEW")]
    pub new: Option<PathBuf>,
    /// Compare NEW against a stored run instead of a file: `last` (the newest run of the same
    /// test) or a label / git revision (the newest run carrying it); see docs/history.md
    #[arg(long, value_name = "last|LABEL")]
    pub baseline: Option<String>,
    /// The history to find --baseline in (file, directory or postgres:// URL)
    #[arg(
        long,
        value_name = "PATH_OR_URL",
        default_value = ".volley/history.db",
        requires = "baseline"
    )]
    pub db: String,
    /// Print the comparison as JSON
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print a GitHub-flavoured Markdown table (for a pull-request comment)
    #[arg(long)]
    pub markdown: bool,
    /// Exit with code 4 when a regression exceeds a limit, e.g. p95:+10%,rate:-5%,error_rate:+1%
    /// (see docs/compare.md)
    #[arg(long, value_name = "RULES")]
    pub fail_on: Option<String>,
    /// Significance level of the Mann-Whitney test on per-second values
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Smallest relative change, in percent, that can be called a regression or improvement
    #[arg(long, default_value_t = 5.0, value_name = "PCT")]
    pub min_effect: f64,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The k6 script (an ES module with a default function)
    #[arg(required_unless_present = "coordinator")]
    pub script: Option<PathBuf>,
    /// Run as an agent of a distributed run instead: the same as `volley agent --coordinator
    /// HOST:PORT` (the test comes from the coordinator; token from VOLLEY_TOKEN)
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "script")]
    pub coordinator: Option<String>,
    /// Number of VUs (overrides options.vus; at most 100,000)
    #[arg(short = 'u', long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub vus: Option<u64>,
    /// Test duration, e.g. 30s, 1m30s (overrides options.duration)
    #[arg(short = 'd', long, value_parser = volley_engine::parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Total iterations shared by the VUs (overrides options.iterations; 0 is refused with
    /// k6's configuration error, exit 104)
    #[arg(short = 'i', long)]
    pub iterations: Option<u64>,
    /// Add KEY=VALUE to __ENV (repeatable)
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Do not put the process environment into __ENV
    #[arg(long)]
    pub no_system_env: bool,
    #[command(flatten)]
    pub output: crate::output_flags::OutputFlags,
    /// Worker threads (default: one per available core)
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Watch the target on the run's timeline: pid:N, tree:N, cmd:NAME, cgroup:/path or
    /// url:http://host:port/metrics[#name,...]; NAME=SPEC names it (repeatable; docs/monitor.md)
    #[arg(long = "monitor", value_name = "SPEC")]
    pub monitor: Vec<String>,
    /// How often --monitor samples (whole seconds)
    #[arg(long, default_value = "1s", value_parser = volley_engine::parse_duration)]
    pub monitor_interval: std::time::Duration,
    /// Add a threshold, as options.thresholds[METRIC] would: monitor_rss_bytes:slope<5MB/h,
    /// monitor_rss_bytes{target:api}:max<2GB, http_req_duration:drift(p95)<10%,
    /// http_req_duration:p(95)<200 (repeatable; exit code 99 when crossed)
    #[arg(long = "threshold", value_name = "METRIC:EXPR")]
    pub thresholds: Vec<String>,
    /// Trend statistics in the summary, as k6: e.g. "avg,p(95),p(99),max" (overrides
    /// options.summaryTrendStats)
    #[arg(long, value_name = "STATS")]
    pub summary_trend_stats: Option<String>,
    /// Time unit of the summary's trend values: s, ms or us (overrides options.summaryTimeUnit)
    #[arg(long, value_name = "UNIT")]
    pub summary_time_unit: Option<String>,
    /// End-of-test summary layout, as k6 v1: compact (default), full (adds HTTP timings and a
    /// section per group and scenario) or legacy (k6 0.x's); K6_SUMMARY_MODE sets it too
    #[arg(long, value_name = "MODE", value_parser = ["compact", "full", "legacy"])]
    pub summary_mode: Option<String>,
    /// Largest response body a request keeps, e.g. 64MiB (the default), 200MB; past it the
    /// request fails with error_code 1790 (overrides options.maxResponseBodySize)
    #[arg(long, value_name = "SIZE", value_parser = volley_js::options::parse_size)]
    pub max_response_body: Option<u64>,
    /// Tag sets each metric keeps (default 1000); beyond, new tag sets fold into the metric's
    /// {overflow:true} series, with one warning (overrides options.maxSeriesPerMetric)
    #[arg(long, value_name = "N")]
    pub max_series: Option<u64>,
    /// Append this run to a history: an SQLite file or directory (.volley/history.db when
    /// given without a value) or a postgres:// URL (see docs/history.md)
    #[arg(long, value_name = "DIR_OR_URL", num_args = 0..=1, default_missing_value = "")]
    pub history: Option<String>,
    /// Label the stored run, e.g. main or nightly (repeatable; with --history)
    #[arg(long = "label", value_name = "NAME", requires = "history")]
    pub labels: Vec<String>,
    /// No text summary (errors and console output still go to stderr)
    #[arg(short = 'q', long)]
    pub quiet: bool,
    #[command(flatten)]
    pub log: LogArgs,
    #[command(flatten)]
    pub dashboard: DashboardArgs,
    /// k6's other `run` flags and their `K6_*` variables (docs/k6-cli.md)
    #[command(flatten)]
    pub k6: crate::k6_flags::K6Flags,
    #[command(flatten)]
    pub faults: crate::fault_flags::FaultFlags,
    #[command(flatten)]
    pub capacity: crate::capacity_cmd::ScriptCapacityArgs,
}

/// `--dashboard`: the live web page of a run (docs/dashboard.md).
#[derive(Args, Debug, Default)]
pub struct DashboardArgs {
    /// Serve a live dashboard of the run at ADDR (default 127.0.0.1:5665; PORT or :PORT mean
    /// 127.0.0.1:PORT; port 0 picks a free one). Loopback only unless ADDR says otherwise
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "", value_parser = volley_dashboard::parse_addr)]
    pub dashboard: Option<std::net::SocketAddr>,
    /// Write the finished run's HTML report (the dashboard's /report page) to FILE
    #[arg(long, value_name = "FILE", requires = "dashboard")]
    pub dashboard_export: Option<PathBuf>,
}

/// k6's logging flags (`volley run`); each falls back to its `K6_*` variable.
#[derive(Args, Debug, Default)]
pub struct LogArgs {
    /// Log lines as text (a terminal's coloured form, logfmt elsewhere), json or raw (as k6;
    /// env K6_LOG_FORMAT)
    #[arg(long, value_name = "text|json|raw")]
    pub log_format: Option<String>,
    /// Where log lines go: stderr, stdout, none or file=PATH[,level=LEVEL] (as k6; env
    /// K6_LOG_OUTPUT)
    #[arg(long, value_name = "OUTPUT")]
    pub log_output: Option<String>,
    /// Write console.* lines to FILE instead of the log (appended; env K6_CONSOLE_OUTPUT)
    #[arg(long, value_name = "FILE")]
    pub console_output: Option<PathBuf>,
    /// Debug log lines too (console.debug)
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// No colours in log lines (a terminal then gets logfmt too, as k6; env NO_COLOR,
    /// K6_NO_COLOR)
    #[arg(long)]
    pub no_color: bool,
}

#[derive(Args, Debug)]
pub struct MonitorArgs {
    /// What to watch: pid:N, tree:N, cmd:NAME, cgroup:/path, url:http://host:port/metrics[#name,...];
    /// NAME=SPEC names it (see docs/monitor.md)
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<String>,
    /// Time between samples (whole seconds)
    #[arg(short = 'i', long, default_value = "1s", value_parser = volley_engine::parse_duration)]
    pub interval: std::time::Duration,
    /// Stop after this long (default: until Ctrl-C, or until every watched pid is gone)
    #[arg(short = 'z', long, value_parser = volley_engine::parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Also write every sample to this CSV file (header: time, elapsed_s, target, figures)
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Save the samples as a result file (series of monitor_* gauges; see docs/result-file.md)
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Exit with code 99 unless METRIC passes CHECK, e.g. monitor_rss_bytes:slope<5MB/h
    /// (repeatable)
    #[arg(long = "threshold", value_name = "METRIC:CHECK")]
    pub thresholds: Vec<String>,
    /// No live table and no summary (notes and threshold failures still go to stderr)
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// The history: an SQLite file or directory, or a postgres:// URL
    #[arg(long, value_name = "PATH_OR_URL", default_value = ".volley/history.db")]
    pub db: String,
    /// Only runs of this test (its URL or script path; a file name matches any directory)
    #[arg(long, value_name = "NAME")]
    pub test: Option<String>,
    /// Only runs carrying this label
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// At most this many runs, newest first
    #[arg(short = 'n', long, default_value_t = 20)]
    pub limit: u64,
    /// Print the runs as JSON
    #[arg(long)]
    pub json: bool,
}

/// `volley demo serve|seed`: the demo service (a small cloud drive on SQLite) and its data.
#[derive(Subcommand, Debug)]
pub enum DemoAction {
    /// Run the demo service (auth, files, search, WebDAV; see docs/demo-service.md)
    Serve(DemoServeArgs),
    /// Create the example suites' data set in a running demo service (idempotent)
    Seed(DemoSeedArgs),
}

#[derive(Args, Debug)]
pub struct DemoServeArgs {
    /// Address to listen on (port 0 picks a free one; the bound address is printed)
    #[arg(long, default_value = "127.0.0.1:8090")]
    pub listen: SocketAddr,
    /// Data directory: SQLite database and file contents (created if missing; default: a
    /// `volley-demo-service` folder in the system's temporary directory)
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// PostgreSQL instead of SQLite: postgres://user[:password]@host[:port]/db[?sslmode=...]
    /// (tables created if missing; --data still holds the file contents)
    #[arg(long, value_name = "URL")]
    pub database: Option<String>,
    /// Server worker threads
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Largest accepted upload in bytes
    #[arg(long, default_value_t = 1 << 30, value_name = "BYTES")]
    pub max_upload: u64,
    /// Largest accepted JSON request body in bytes
    #[arg(long, default_value_t = 1 << 20, value_name = "BYTES")]
    pub max_json: u64,
}

#[derive(Args, Debug)]
pub struct DemoSeedArgs {
    /// The demo service, e.g. http://127.0.0.1:8090
    #[arg(long, default_value = "http://127.0.0.1:8090")]
    pub url: String,
    /// The reduced data set (folders of 100 and 1,000 files; takes a few seconds)
    #[arg(long)]
    pub small: bool,
    /// Print the seed report as JSON
    #[arg(long)]
    pub json: bool,
}
