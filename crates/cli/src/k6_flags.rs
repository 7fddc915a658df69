//! k6's `run` flags that are not Volley's own (docs/k6-cli.md): the clap side. What they
//! mean — the flag tier of k6's precedence, `K6_*` variables, the `--config` file, the notes
//! for flags Volley cannot honour — is `volley_js::options::flags`, which takes them as plain
//! values.

use clap::Args;
use std::collections::BTreeMap;
use std::path::PathBuf;
pub use volley_js::options::flags::{K6Error, K6Setup};

#[derive(Args, Debug, Default)]
pub struct K6Flags {
    /// k6: add a stage DURATION:TARGET, e.g. -s 30s:10 -s 1m:0 (repeatable or comma-separated;
    /// replaces options.stages)
    #[arg(
        short = 's',
        long = "stage",
        value_name = "DURATION:TARGET",
        value_delimiter = ','
    )]
    pub stages: Vec<String>,
    /// k6: add NAME=VALUE to every sample's tags (repeatable; replaces options.tags)
    #[arg(long = "tag", value_name = "NAME=VALUE")]
    pub tags: Vec<String>,
    /// k6: only these system tags in metrics (options.systemTags), e.g. status,method,url
    #[arg(long, value_name = "TAGS", value_delimiter = ',')]
    pub system_tags: Vec<String>,
    /// k6: do not evaluate thresholds
    #[arg(long)]
    pub no_thresholds: bool,
    /// k6: no end-of-test summary (neither the text summary nor handleSummary)
    #[arg(long)]
    pub no_summary: bool,
    /// k6: skip TLS certificate verification (options.insecureSkipTLSVerify)
    #[arg(long)]
    pub insecure_skip_tls_verify: bool,
    /// k6: follow at most N redirects (options.maxRedirects)
    #[arg(long, value_name = "N")]
    pub max_redirects: Option<u64>,
    /// k6: the User-Agent header of requests (options.userAgent)
    #[arg(long, value_name = "UA")]
    pub user_agent: Option<String>,
    /// k6: parallel requests of http.batch (options.batch)
    #[arg(long, value_name = "N")]
    pub batch: Option<u64>,
    /// k6: parallel requests of http.batch per host (options.batchPerHost)
    #[arg(long, value_name = "N")]
    pub batch_per_host: Option<u64>,
    /// k6: at most N requests per second across all VUs (options.rps)
    #[arg(long, value_name = "N")]
    pub rps: Option<u64>,
    /// k6: no keep-alive connections (options.noConnectionReuse)
    #[arg(long)]
    pub no_connection_reuse: bool,
    /// k6: new connections for every iteration (options.noVUConnectionReuse)
    #[arg(long)]
    pub no_vu_connection_reuse: bool,
    /// k6: read but do not keep response bodies (options.discardResponseBodies)
    #[arg(long)]
    pub discard_response_bodies: bool,
    /// k6: log each request and response head on stderr, bodies too with =full (options.httpDebug)
    #[arg(long, value_name = "full", num_args = 0..=1, default_missing_value = "headers", require_equals = true)]
    pub http_debug: Option<String>,
    /// k6: a request that gets no response throws its error (options.throw)
    #[arg(short = 'w', long)]
    pub throw: bool,
    /// k6: a faster iteration sleeps out the rest (options.minIterationDuration)
    #[arg(long, value_name = "DURATION")]
    pub min_iteration_duration: Option<String>,
    /// k6: put the process environment into __ENV (the default; see --no-system-env)
    #[arg(long, conflicts_with = "no_system_env")]
    pub include_system_env_vars: bool,
    /// k6: source IPs of the VUs (options.localIPs; not yet, a note says so)
    #[arg(long, value_name = "IPS")]
    pub local_ips: Option<String>,
    /// k6: DNS resolver policy (options.dns; not yet, a note says so)
    #[arg(long, value_name = "CONFIG")]
    pub dns: Option<String>,
    /// k6: refuse requests to these IP ranges, e.g. 10.0.0.0/8 (options.blacklistIPs)
    #[arg(long, value_name = "CIDR", value_delimiter = ',')]
    pub blacklist_ip: Vec<String>,
    /// k6: refuse requests to these host names, e.g. *.example.com (options.blockHostnames)
    #[arg(long, value_name = "PATTERN", value_delimiter = ',')]
    pub block_hostnames: Vec<String>,
    /// k6: do not run setup() (options.noSetup)
    #[arg(long)]
    pub no_setup: bool,
    /// k6: do not run teardown() (options.noTeardown)
    #[arg(long)]
    pub no_teardown: bool,
    /// k6's JSON config file: the keys of `options` (lowest precedence), and `out`
    #[arg(short = 'c', long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// k6: keep the API server alive past the test end (accepted with a note)
    #[arg(short = 'l', long)]
    pub linger: bool,
    /// k6: address of the REST API (accepted with a note: Volley has none)
    #[arg(short = 'a', long, value_name = "ADDR")]
    pub address: Option<String>,
    /// k6: start paused (accepted with a note: Volley has no REST API to resume)
    #[arg(short = 'p', long)]
    pub paused: bool,
    /// k6: pprof endpoints (accepted with a note)
    #[arg(long)]
    pub profiling_enabled: bool,
    /// k6: anonymous usage report (accepted silently: Volley never sends one)
    #[arg(long)]
    pub no_usage_report: bool,
    /// k6: run only this share of the test (e.g. 1/4:2/4; see docs/distributed.md)
    #[arg(long, value_name = "SEGMENT")]
    pub execution_segment: Option<String>,
    /// k6: the segments all instances use (e.g. 0,1/4,2/4,3/4,1)
    #[arg(long, value_name = "SEQUENCE")]
    pub execution_segment_sequence: Option<String>,
    /// k6's other flags, accepted with a note: --compatibility-mode, --type, ...
    #[arg(long, value_name = "MODE", hide = true)]
    pub compatibility_mode: Option<String>,
    #[arg(short = 't', long = "type", value_name = "TYPE", hide = true)]
    pub test_type: Option<String>,
    #[arg(long, value_name = "OUTPUT", hide = true)]
    pub traces_output: Option<String>,
    #[arg(long, hide = true)]
    pub new_machine_readable_summary: bool,
    #[arg(long, value_name = "FEATURES", hide = true)]
    pub features: Vec<String>,
    #[arg(long, value_name = "SOURCE", hide = true)]
    pub secret_source: Vec<String>,
}

impl K6Flags {
    /// The parsed values, free of clap.
    fn values(&self) -> volley_js::options::flags::Flags {
        volley_js::options::flags::Flags {
            stages: self.stages.clone(),
            tags: self.tags.clone(),
            system_tags: self.system_tags.clone(),
            no_thresholds: self.no_thresholds,
            no_summary: self.no_summary,
            insecure_skip_tls_verify: self.insecure_skip_tls_verify,
            max_redirects: self.max_redirects,
            user_agent: self.user_agent.clone(),
            batch: self.batch,
            batch_per_host: self.batch_per_host,
            rps: self.rps,
            no_connection_reuse: self.no_connection_reuse,
            no_vu_connection_reuse: self.no_vu_connection_reuse,
            discard_response_bodies: self.discard_response_bodies,
            http_debug: self.http_debug.clone(),
            throw: self.throw,
            min_iteration_duration: self.min_iteration_duration.clone(),
            include_system_env_vars: self.include_system_env_vars,
            local_ips: self.local_ips.clone(),
            dns: self.dns.clone(),
            blacklist_ip: self.blacklist_ip.clone(),
            block_hostnames: self.block_hostnames.clone(),
            no_setup: self.no_setup,
            no_teardown: self.no_teardown,
            config: self.config.clone(),
            linger: self.linger,
            address: self.address.clone(),
            paused: self.paused,
            profiling_enabled: self.profiling_enabled,
            no_usage_report: self.no_usage_report,
            execution_segment: self.execution_segment.clone(),
            execution_segment_sequence: self.execution_segment_sequence.clone(),
            compatibility_mode: self.compatibility_mode.clone(),
            test_type: self.test_type.clone(),
            traces_output: self.traces_output.clone(),
            new_machine_readable_summary: self.new_machine_readable_summary,
            features: self.features.clone(),
            secret_source: self.secret_source.clone(),
        }
    }
}

/// Resolve k6's flags, environment (`env`: the process environment) and config file.
pub fn setup(
    f: &K6Flags,
    no_system_env: bool,
    out_given: bool,
    env: &BTreeMap<String, String>,
) -> Result<K6Setup, K6Error> {
    volley_js::options::flags::setup(&f.values(), no_system_env, out_given, env)
}
