//! k6's `run` flags that are not Volley's own (docs/k6-cli.md), as plain values the CLI
//! parsed: the ones that set an option become the flag tier of k6's precedence (flag >
//! `K6_*` environment > script `options` > `--config` file, see [`super::env`]); flags that
//! make no sense for Volley (REST API, cloud, profiling) are accepted with a one-line note so
//! CI command lines keep working. [`setup`] resolves the flags, the environment and the
//! config file into the option tiers of a script run.

use super::env as k6env;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The flags' values, one field per flag (named as the flag; `test_type` is `--type`).
#[derive(Clone, Debug, Default)]
pub struct Flags {
    /// k6: add a stage DURATION:TARGET, e.g. -s 30s:10 -s 1m:0 (repeatable or comma-separated;
    /// replaces options.stages)
    pub stages: Vec<String>,
    /// k6: add NAME=VALUE to every sample's tags (repeatable; replaces options.tags)
    pub tags: Vec<String>,
    /// k6: only these system tags in metrics (options.systemTags), e.g. status,method,url
    pub system_tags: Vec<String>,
    /// k6: do not evaluate thresholds
    pub no_thresholds: bool,
    /// k6: no end-of-test summary (neither the text summary nor handleSummary)
    pub no_summary: bool,
    /// k6: skip TLS certificate verification (options.insecureSkipTLSVerify)
    pub insecure_skip_tls_verify: bool,
    /// k6: follow at most N redirects (options.maxRedirects)
    pub max_redirects: Option<u64>,
    /// k6: the User-Agent header of requests (options.userAgent)
    pub user_agent: Option<String>,
    /// k6: parallel requests of http.batch (options.batch)
    pub batch: Option<u64>,
    /// k6: parallel requests of http.batch per host (options.batchPerHost)
    pub batch_per_host: Option<u64>,
    /// k6: at most N requests per second across all VUs (options.rps)
    pub rps: Option<u64>,
    /// k6: no keep-alive connections (options.noConnectionReuse)
    pub no_connection_reuse: bool,
    /// k6: new connections for every iteration (options.noVUConnectionReuse)
    pub no_vu_connection_reuse: bool,
    /// k6: read but do not keep response bodies (options.discardResponseBodies)
    pub discard_response_bodies: bool,
    /// k6: log each request and response head on stderr, bodies too with =full (options.httpDebug)
    pub http_debug: Option<String>,
    /// k6: a request that gets no response throws its error (options.throw)
    pub throw: bool,
    /// k6: a faster iteration sleeps out the rest (options.minIterationDuration)
    pub min_iteration_duration: Option<String>,
    /// k6: put the process environment into __ENV (the default; see --no-system-env)
    pub include_system_env_vars: bool,
    /// k6: source IPs of the VUs (options.localIPs; not yet, a note says so)
    pub local_ips: Option<String>,
    /// k6: DNS resolver policy (options.dns; not yet, a note says so)
    pub dns: Option<String>,
    /// k6: refuse requests to these IP ranges, e.g. 10.0.0.0/8 (options.blacklistIPs)
    pub blacklist_ip: Vec<String>,
    /// k6: refuse requests to these host names, e.g. *.example.com (options.blockHostnames)
    pub block_hostnames: Vec<String>,
    /// k6: do not run setup() (options.noSetup)
    pub no_setup: bool,
    /// k6: do not run teardown() (options.noTeardown)
    pub no_teardown: bool,
    /// k6's JSON config file: the keys of `options` (lowest precedence), and `out`
    pub config: Option<PathBuf>,
    /// k6: keep the API server alive past the test end (accepted with a note)
    pub linger: bool,
    /// k6: address of the REST API (accepted with a note: Volley has none)
    pub address: Option<String>,
    /// k6: start paused (accepted with a note: Volley has no REST API to resume)
    pub paused: bool,
    /// k6: pprof endpoints (accepted with a note)
    pub profiling_enabled: bool,
    /// k6: anonymous usage report (accepted silently: Volley never sends one)
    pub no_usage_report: bool,
    /// `--execution-segment` / `--execution-segment-sequence`: options `executionSegment` and
    /// `executionSegmentSequence` (this instance's share of a split test).
    pub execution_segment: Option<String>,
    pub execution_segment_sequence: Option<String>,
    pub compatibility_mode: Option<String>,
    pub test_type: Option<String>,
    pub traces_output: Option<String>,
    pub new_machine_readable_summary: bool,
    pub features: Vec<String>,
    pub secret_source: Vec<String>,
}

/// What k6's flags, environment and config file resolve to for one run.
#[derive(Debug, Default)]
pub struct K6Setup {
    pub config_file: Option<Map<String, Value>>,
    pub env_options: Map<String, Value>,
    pub flag_options: Map<String, Value>,
    pub no_thresholds: bool,
    pub no_summary: bool,
    /// Put the process environment into `__ENV`.
    pub system_env: bool,
    /// `K6_SUMMARY_EXPORT` when `--summary-export` is not given.
    pub summary_export: Option<PathBuf>,
    /// `--out` from `K6_OUT` or the config file's `out` when no `-o` is given.
    pub out: Vec<String>,
    /// One line each, printed before the run.
    pub notes: Vec<String>,
}

/// An error of a flag, an env variable or the config file: (exit code kind, message).
pub enum K6Error {
    /// Bad flag value: a usage error.
    Usage(String),
    /// Bad environment or config file: k6's invalid-config exit code.
    Config(String),
}

fn env_bool(env: &BTreeMap<String, String>, name: &str) -> Result<Option<bool>, K6Error> {
    env.get(name)
        .map(|v| {
            k6env::parse_bool(v)
                .ok_or_else(|| K6Error::Config(format!("{name}='{v}': expected true or false")))
        })
        .transpose()
}

/// Read k6's JSON config file: an object with the keys of `options`, plus k6's `out`.
fn read_config(path: &std::path::Path) -> Result<Map<String, Value>, K6Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| K6Error::Config(format!("--config {}: {e}", path.display())))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| {
        K6Error::Config(format!(
            "--config {}:{}:{}: not valid JSON: {e} (k6's config file is a JSON object with \
             the keys of options, e.g. {{\"vus\": 10, \"duration\": \"30s\"}})",
            path.display(),
            e.line(),
            e.column()
        ))
    })?;
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(K6Error::Config(format!(
            "--config {}: expected a JSON object with the keys of options, e.g. {{\"vus\": 10}}",
            path.display()
        ))),
    }
}

fn note(notes: &mut Vec<String>, flag: &str, why: &str) {
    notes.push(format!(
        "volley: note: {flag} is accepted for k6 compatibility and ignored: {why}"
    ));
}

impl Flags {
    /// The option tier of these flags (k6's option keys).
    fn options(&self) -> Result<Map<String, Value>, K6Error> {
        let mut m = Map::new();
        if !self.stages.is_empty() {
            let v = k6env::parse_stages(&self.stages.join(","))
                .map_err(|e| K6Error::Usage(format!("-s/--stage: {e}")))?;
            m.insert("stages".into(), v);
        }
        if !self.tags.is_empty() {
            let mut tags = Map::new();
            for t in &self.tags {
                match t.split_once('=') {
                    Some((k, v)) if !k.trim().is_empty() => {
                        tags.insert(k.trim().to_string(), Value::String(v.to_string()));
                    }
                    _ => {
                        return Err(K6Error::Usage(format!(
                            "--tag '{t}': expected NAME=VALUE, e.g. --tag env=staging"
                        )))
                    }
                }
            }
            m.insert("tags".into(), Value::Object(tags));
        }
        for (key, v) in [
            ("executionSegment", &self.execution_segment),
            ("executionSegmentSequence", &self.execution_segment_sequence),
        ] {
            if let Some(v) = v {
                m.insert(key.into(), Value::String(v.clone()));
            }
        }
        let strs = |v: &[String]| Value::Array(v.iter().map(|s| s.clone().into()).collect());
        for (key, set, v) in [
            (
                "systemTags",
                !self.system_tags.is_empty(),
                strs(&self.system_tags),
            ),
            (
                "blacklistIPs",
                !self.blacklist_ip.is_empty(),
                strs(&self.blacklist_ip),
            ),
            (
                "blockHostnames",
                !self.block_hostnames.is_empty(),
                strs(&self.block_hostnames),
            ),
        ] {
            if set {
                m.insert(key.into(), v);
            }
        }
        for (key, v) in [
            ("maxRedirects", self.max_redirects),
            ("batch", self.batch),
            ("batchPerHost", self.batch_per_host),
            ("rps", self.rps),
        ] {
            if let Some(v) = v {
                m.insert(key.into(), v.into());
            }
        }
        for (key, v) in [
            ("userAgent", &self.user_agent),
            ("httpDebug", &self.http_debug),
            ("minIterationDuration", &self.min_iteration_duration),
            ("localIPs", &self.local_ips),
            ("dns", &self.dns),
        ] {
            if let Some(v) = v {
                m.insert(key.into(), v.clone().into());
            }
        }
        // Boolean flags set their option only when given (absent is "not set", as in k6).
        for (key, on) in [
            ("insecureSkipTLSVerify", self.insecure_skip_tls_verify),
            ("noConnectionReuse", self.no_connection_reuse),
            ("noVUConnectionReuse", self.no_vu_connection_reuse),
            ("discardResponseBodies", self.discard_response_bodies),
            ("throw", self.throw),
            ("noSetup", self.no_setup),
            ("noTeardown", self.no_teardown),
        ] {
            if on {
                m.insert(key.into(), true.into());
            }
        }
        Ok(m)
    }

    fn notes(&self, notes: &mut Vec<String>) {
        let api = "Volley has no REST API";
        if self.linger {
            note(
                notes,
                "--linger",
                "the run ends when the test does (no REST API to keep up)",
            );
        }
        if self.address.is_some() {
            note(notes, "--address", api);
        }
        if self.paused {
            note(
                notes,
                "--paused",
                "the test starts at once (no REST API to resume it)",
            );
        }
        if self.profiling_enabled {
            note(notes, "--profiling-enabled", api);
        }
        let others: [(&str, bool, &str); 6] = [
            (
                "--compatibility-mode",
                self.compatibility_mode.is_some(),
                "Volley runs ES modules with its own runtime",
            ),
            (
                "--type",
                self.test_type.is_some(),
                "the script is read as JavaScript",
            ),
            (
                "--traces-output",
                self.traces_output.is_some(),
                "Volley does not export traces",
            ),
            (
                "--new-machine-readable-summary",
                self.new_machine_readable_summary,
                "handleSummary gets Volley's k6 data shape",
            ),
            (
                "--features",
                !self.features.is_empty(),
                "k6 feature flags do not apply",
            ),
            (
                "--secret-source",
                !self.secret_source.is_empty(),
                "secret sources are not there yet",
            ),
        ];
        for (flag, set, why) in others {
            if set {
                note(notes, flag, why);
            }
        }
    }
}

/// Resolve k6's flags, environment (`env`: the process environment) and config file.
pub fn setup(
    f: &Flags,
    no_system_env: bool,
    out_given: bool,
    env: &BTreeMap<String, String>,
) -> Result<K6Setup, K6Error> {
    let mut s = K6Setup {
        flag_options: f.options()?,
        env_options: k6env::from_env(env).map_err(K6Error::Config)?,
        ..Default::default()
    };
    f.notes(&mut s.notes);
    s.no_thresholds = f.no_thresholds || env_bool(env, "K6_NO_THRESHOLDS")?.unwrap_or(false);
    s.no_summary = f.no_summary || env_bool(env, "K6_NO_SUMMARY")?.unwrap_or(false);
    s.system_env = if no_system_env {
        false
    } else {
        f.include_system_env_vars || env_bool(env, "K6_INCLUDE_SYSTEM_ENV_VARS")?.unwrap_or(true)
    };
    s.summary_export = env
        .get("K6_SUMMARY_EXPORT")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from);
    if env_bool(env, "K6_LINGER")? == Some(true) && !f.linger {
        note(&mut s.notes, "K6_LINGER", "the run ends when the test does");
    }
    let config_path = f.config.clone().or_else(|| {
        env.get("K6_CONFIG")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
    });
    let mut config_out = Vec::new();
    if let Some(path) = config_path {
        let mut m = read_config(&path)?;
        // k6's Config keys that are not options.
        if let Some(out) = m.remove("out") {
            config_out = match out {
                Value::String(s) => vec![s],
                Value::Array(a) => a
                    .iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect(),
                _ => Vec::new(),
            };
        }
        for k in [
            "linger",
            "noUsageReport",
            "webDashboard",
            "noArchiveUpload",
            "collectors",
        ] {
            m.remove(k);
        }
        s.config_file = Some(m);
    }
    if !out_given {
        s.out = match env.get("K6_OUT").filter(|o| !o.is_empty()) {
            Some(o) => o.split(',').map(|x| x.trim().to_string()).collect(),
            None => config_out,
        };
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flags_become_k6_option_keys() {
        let f = Flags {
            stages: vec!["1s:2".into(), "2s:0".into()],
            tags: vec!["env=ci".into()],
            user_agent: Some("ua".into()),
            max_redirects: Some(0),
            insecure_skip_tls_verify: true,
            ..Default::default()
        };
        let m = f.options().ok().unwrap();
        assert_eq!(
            Value::Object(m),
            json!({"stages": [{"duration": "1s", "target": 2}, {"duration": "2s", "target": 0}],
                   "tags": {"env": "ci"}, "userAgent": "ua", "maxRedirects": 0,
                   "insecureSkipTLSVerify": true})
        );
        let bad = Flags {
            stages: vec!["30s".into()],
            ..Default::default()
        };
        assert!(matches!(bad.options(), Err(K6Error::Usage(e)) if e.contains("DURATION:TARGET")));
    }

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn setup_reads_k6_env_bools_outputs_and_notes() {
        let f = Flags {
            linger: true,
            ..Default::default()
        };
        let e = env(&[
            ("K6_NO_THRESHOLDS", "true"),
            ("K6_INCLUDE_SYSTEM_ENV_VARS", "0"),
            ("K6_OUT", "json=a.ndjson, csv=b.csv"),
        ]);
        let Ok(s) = setup(&f, false, false, &e) else {
            panic!("setup failed")
        };
        assert!(s.no_thresholds && !s.no_summary && !s.system_env);
        assert_eq!(s.out, ["json=a.ndjson", "csv=b.csv"]);
        assert_eq!(s.notes.len(), 1);
        assert!(s.notes[0].contains("--linger"), "{:?}", s.notes);
        // `-o` given: K6_OUT does not add outputs.
        let Ok(s) = setup(&f, false, true, &e) else {
            panic!("setup failed")
        };
        assert!(s.out.is_empty());
    }

    #[test]
    fn setup_refuses_bad_env_bools_and_config_files_as_config_errors() {
        let f = Flags::default();
        let bad = setup(&f, false, false, &env(&[("K6_NO_SUMMARY", "yes")]));
        assert!(
            matches!(&bad, Err(K6Error::Config(e)) if e.contains("K6_NO_SUMMARY='yes'")),
            "{:?}",
            bad.as_ref().err().map(|_| ())
        );
        let dir = std::env::temp_dir().join(format!("volley-flags-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = dir.join("k6.json");
        std::fs::write(
            &cfg,
            "{\"vus\": 3,\n \"out\": \"json=x\", \"linger\": true}",
        )
        .unwrap();
        let f = Flags {
            config: Some(cfg.clone()),
            ..Default::default()
        };
        let Ok(s) = setup(&f, false, false, &env(&[])) else {
            panic!("a valid config file")
        };
        // `out` and k6's non-option keys are taken out of the options.
        assert_eq!(Value::Object(s.config_file.unwrap()), json!({"vus": 3}));
        assert_eq!(s.out, ["json=x"]);
        std::fs::write(&cfg, "{\"vus\": 3,\n oops}").unwrap();
        let bad = setup(&f, false, false, &env(&[]));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            matches!(&bad, Err(K6Error::Config(e)) if e.contains("k6.json:2:") && e.contains("not valid JSON")),
            "bad JSON is a config error with line:column"
        );
    }
}
