//! k6 options (from `export const options` and the CLI) → the engine's executor plan.
//!
//! The scenarios come from `options.scenarios` (parsed and validated by the engine's
//! [`volley_engine::executor`]) or from k6's shortcut options (`vus`, `duration`,
//! `iterations`, `stages`), which make one scenario named `default` as k6 does; the CLI's
//! shortcuts (`-u -d -i`) replace the script's scenarios. Run-wide settings (`tags`,
//! `userAgent`, `hosts`, timeouts, summary options, ...) are validated here into
//! [`RunSettings`], and `thresholds` is kept for [`crate::thresholds`]. Unknown options are
//! reported as not supported yet and ignored.
//!
//! Submodules: [`mod@env`] (k6's `K6_*` variables), [`flags`] (k6's `run` flags and `--config`
//! file, as the CLI parsed them), [`ipnet`] (`blacklistIPs` ranges).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use volley_engine::executor::{
    self, json_count, json_duration, ConstantVus, Executor, RampingVus, Scenario, SharedIterations,
};
use volley_metrics::TagSet;

pub mod env;
pub mod flags;
pub use volley_http::client::ipnet;

/// Options given on the command line; they override the script's.
#[derive(Clone, Debug, Default)]
pub struct CliOptions {
    pub vus: Option<u64>,
    pub duration: Option<Duration>,
    pub iterations: Option<u64>,
    /// `--out json=FILE`: k6's NDJSON of every sample.
    pub out_json: Option<std::path::PathBuf>,
    /// The other `--out`s (csv, junit, influxdb, prometheus).
    pub outputs: Vec<volley_run::outputs::OutSpec>,
    /// `--monitor`: targets sampled on the run's timeline (`monitor_*` gauges).
    pub monitor: volley_engine::MonitorPlan,
    /// `--max-series N`: replaces `options.maxSeriesPerMetric`.
    pub max_series: Option<u64>,
    /// `--threshold METRIC:EXPR`, as (metric key, expression): added to
    /// `options.thresholds[METRIC]`.
    pub thresholds: Vec<(String, String)>,
    /// `--summary-trend-stats`: replaces `options.summaryTrendStats`.
    pub summary_trend_stats: Option<Vec<String>>,
    /// `--summary-time-unit`: replaces `options.summaryTimeUnit`.
    pub summary_time_unit: Option<String>,
    /// Print k6's execution header and the scenarios' final progress lines (stderr).
    pub show_progress: bool,
    /// Redraw one line per scenario every second while running (stderr is a terminal).
    pub live_progress: bool,
    /// `--max-response-body`: replaces `options.maxResponseBodySize`.
    pub max_response_body: Option<u64>,
    /// k6's tiers around the script's `options` (see [`env::consolidate`]): the `--config`
    /// file below it, the `K6_*` environment and the k6 flags (`-s`, `--tag`, ...) above it.
    pub config_file: Option<serde_json::Map<String, serde_json::Value>>,
    pub env_options: serde_json::Map<String, serde_json::Value>,
    pub flag_options: serde_json::Map<String, serde_json::Value>,
    /// `--no-thresholds` / `K6_NO_THRESHOLDS`: thresholds are neither evaluated nor shown.
    pub no_thresholds: bool,
}

/// What the options resolve to.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// At least one; ordered by start time, then name.
    pub scenarios: Vec<Scenario>,
    /// The run-wide HTTP settings (`insecureSkipTLSVerify`, `userAgent`, `hosts`, ...):
    /// given to every VU's client at creation.
    pub http: volley_http::client::ClientSettings,
    /// Options present in the script but not supported yet (ignored, with a warning).
    pub ignored: Vec<String>,
    /// `options.thresholds` as given (parsed once custom metrics are known).
    pub thresholds: Option<serde_json::Value>,
    pub settings: RunSettings,
    /// `executionSegment` within `executionSegmentSequence` (None: the whole test).
    pub segment: Option<volley_engine::segment::Tuple>,
}

/// Run-wide settings from options that VUs and the HTTP client read (set once, before the
/// VUs are created; see `ScriptShared::settings`).
#[derive(Clone, Debug)]
pub struct RunSettings {
    /// `tags`: added to every sample.
    pub tags: TagSet,
    /// `systemTags`: the system tags to keep (None: k6's default set).
    pub system_tags: Option<HashSet<String>>,
    /// `httpDebug`: log requests and responses (Some(true): with bodies).
    pub http_debug: Option<bool>,
    /// `throw`: a request that fails without a response throws instead of returning it.
    pub throw: bool,
    /// `noSetup` / `noTeardown`: skip `setup()` / `teardown()`.
    pub no_setup: bool,
    pub no_teardown: bool,
    /// `rps`: one limiter for all VUs (k6: requests per second across the test).
    pub rps: Option<Arc<RpsLimiter>>,
    /// `minIterationDuration`: a faster iteration sleeps out the rest.
    pub min_iteration_duration: Option<Duration>,
    /// `noCookiesReset`: the VU's cookie jar is kept between iterations.
    pub no_cookies_reset: bool,
    pub setup_timeout: Duration,
    pub teardown_timeout: Duration,
    /// `maxSeriesPerMetric` / `--max-series`: tag sets a metric keeps before new ones fold
    /// into its overflow series (see [`volley_metrics::guard`]).
    pub max_series: usize,
    /// Does the `url` tag key the series of a request that has a `name`? Only when a
    /// threshold names the `url` tag (k6 groups by `name`; the URL stays in raw outputs).
    pub url_keys_series: bool,
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            tags: TagSet::new(),
            system_tags: None,
            http_debug: None,
            throw: false,
            no_setup: false,
            no_teardown: false,
            rps: None,
            min_iteration_duration: None,
            no_cookies_reset: false,
            setup_timeout: Duration::from_secs(60),
            teardown_timeout: Duration::from_secs(60),
            max_series: volley_metrics::DEFAULT_MAX_SERIES,
            url_keys_series: false,
        }
    }
}

impl RunSettings {
    /// Is system tag `tag` recorded (k6's default set, or listed in `systemTags`)?
    pub fn keeps_system_tag(&self, tag: &str) -> bool {
        self.system_tags.as_ref().is_none_or(|k| k.contains(tag))
    }

    /// Drop the system tags `systemTags` leaves out (user tags are always kept).
    pub fn filter_system_tags(&self, tags: &mut TagSet) {
        if let Some(keep) = &self.system_tags {
            tags.retain(|k, _| !SYSTEM_TAGS.contains(&k.as_str()) || keep.contains(k));
        }
    }
}

/// `options.rps`: request start slots `1/rps` apart, shared by every VU of the run.
#[derive(Debug)]
pub struct RpsLimiter {
    interval: Duration,
    next: std::sync::Mutex<Option<std::time::Instant>>,
}

impl RpsLimiter {
    pub fn new(rps: u64) -> RpsLimiter {
        RpsLimiter {
            interval: Duration::from_secs_f64(1.0 / rps as f64),
            next: std::sync::Mutex::new(None),
        }
    }

    /// Take the next slot: how long the caller waits before sending.
    pub fn reserve(&self) -> Duration {
        let now = std::time::Instant::now();
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        let slot = next.map_or(now, |n| n.max(now));
        *next = Some(slot + self.interval);
        slot - now
    }
}

/// k6's system tags (what `systemTags` selects from).
pub const SYSTEM_TAGS: &[&str] = &[
    "proto",
    "subproto",
    "status",
    "method",
    "url",
    "name",
    "group",
    "check",
    "error",
    "error_code",
    "tls_version",
    "scenario",
    "service",
    "expected_response",
    "vu",
    "iter",
    "ip",
    "ocsp_status",
];

fn boolean(v: &serde_json::Value, what: &str) -> Result<bool, String> {
    match v {
        serde_json::Value::Bool(b) => Ok(*b),
        serde_json::Value::Null => Ok(false),
        _ => Err(format!("options.{what}: expected true or false, got {v}")),
    }
}

/// `executionSegment` / `executionSegmentSequence`: a string such as "1/4:2/4".
fn segment_text(v: &serde_json::Value, what: &str) -> Result<Option<String>, String> {
    match v {
        serde_json::Value::String(s) if !s.trim().is_empty() => Ok(Some(s.clone())),
        serde_json::Value::String(_) | serde_json::Value::Null => Ok(None),
        _ => Err(format!(
            "options.{what}: expected a string such as \"1/4:2/4\" (or \"0,1/4,2/4,3/4,1\" for the sequence), got {v}"
        )),
    }
}

fn string_map(v: &serde_json::Value, what: &str) -> Result<Vec<(String, String)>, String> {
    executor::string_map(v, what)
}

fn duration(v: &serde_json::Value, what: &str) -> Result<Duration, String> {
    json_duration(v, &format!("options.{what}"))
}

fn count(v: &serde_json::Value, what: &str) -> Result<u64, String> {
    json_count(v, &format!("options.{what}"))
}

/// Default of `maxResponseBodySize` / `--max-response-body`.
pub use volley_http::client::DEFAULT_MAX_RESPONSE_BODY;

/// A size such as `64MiB`, `10MB`, `512KiB`, `1000` or `1000B` (bytes; kB/MB/GB are powers of
/// 1000, KiB/MiB/GiB of 1024), more than 0.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        _ => {
            return Err(format!(
            "'{s}' is not a size: unknown unit '{unit}' (expected B, kB, MB, GB, KiB, MiB or GiB)"
        ))
        }
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (expected e.g. 64MiB or 1000000)"))?;
    let bytes = n * mult as f64;
    if !(bytes >= 1.0 && bytes < u64::MAX as f64) {
        return Err(format!("'{s}' is not a size between 1 byte and 16 EiB"));
    }
    Ok(bytes as u64)
}

/// `d` as k6 prints short durations ("0s", "500ms").
fn fmt_secs(d: Duration) -> String {
    if d.subsec_nanos() == 0 || d.is_zero() {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// `maxSeriesPerMetric`: at least 1, and small enough that the guard stays bounded.
fn max_series(n: u64, what: &str) -> Result<usize, String> {
    const MAX: u64 = 1_000_000;
    if n == 0 || n > MAX {
        return Err(format!(
            "{what}: expected a number of tag sets per metric from 1 to {MAX}, got {n} \
             (default {})",
            volley_metrics::DEFAULT_MAX_SERIES
        ));
    }
    Ok(n as usize)
}

/// Resolve the script's `options` (JSON, may be null) with CLI overrides.
pub fn resolve(script: &serde_json::Value, cli: &CliOptions) -> Result<Resolved, String> {
    let empty = serde_json::Map::new();
    let opts = script.as_object().unwrap_or(&empty);
    let mut ignored = Vec::new();
    let mut vus = None;
    let mut dur = None;
    let mut iterations = None;
    let mut stages = None;
    let mut http = volley_http::client::ClientSettings::default();
    let mut thresholds = None;
    let mut scenarios_json = None;
    let mut settings = RunSettings::default();
    let (mut seg, mut seq) = (None, None);
    for (k, v) in opts {
        match k.as_str() {
            "vus" => vus = Some(count(v, "vus")?),
            "duration" => dur = Some(duration(v, "duration")?),
            "iterations" => iterations = Some(count(v, "iterations")?),
            "stages" => stages = Some(executor::json_stages(v, "options.stages")?),
            "insecureSkipTLSVerify" => http.insecure = v.as_bool().unwrap_or(false),
            "thresholds" => thresholds = Some(v.clone()),
            "tags" => settings.tags = string_map(v, "tags")?.into_iter().collect(),
            "userAgent" => match v {
                serde_json::Value::String(s) => http.user_agent = Some(s.clone()),
                serde_json::Value::Null => {}
                _ => return Err(format!("options.userAgent: expected a string, got {v}")),
            },
            "httpDebug" => match v {
                serde_json::Value::String(s) => settings.http_debug = crate::http::debug_mode(s),
                serde_json::Value::Null => {}
                _ => {
                    return Err(format!(
                        "options.httpDebug: expected \"full\" or \"headers\", got {v}"
                    ))
                }
            },
            "throw" => settings.throw = boolean(v, k)?,
            "noSetup" => settings.no_setup = boolean(v, k)?,
            "noCookiesReset" => settings.no_cookies_reset = boolean(v, k)?,
            "minIterationDuration" => {
                let d = duration(v, "minIterationDuration")?;
                settings.min_iteration_duration = (!d.is_zero()).then_some(d);
            }
            "rps" => {
                let n = count(v, "rps")?;
                settings.rps = (n > 0).then(|| Arc::new(RpsLimiter::new(n)));
            }
            "blacklistIPs" => {
                let arr = v
                    .as_array()
                    .ok_or("options.blacklistIPs: expected an array of CIDR ranges")?;
                let mut nets = Vec::new();
                for (i, n) in arr.iter().enumerate() {
                    let n = n.as_str().ok_or(format!(
                        "options.blacklistIPs[{i}]: expected a string such as \"10.0.0.0/8\""
                    ))?;
                    nets.push(
                        ipnet::IpNet::parse(n)
                            .map_err(|e| format!("options.blacklistIPs[{i}]: {e}"))?,
                    );
                }
                http.blacklist_ips = nets.into();
            }
            "blockHostnames" => {
                let arr = v
                    .as_array()
                    .ok_or("options.blockHostnames: expected an array of host name patterns")?;
                for (i, p) in arr.iter().enumerate() {
                    let p = p
                        .as_str()
                        .filter(|p| !p[p.starts_with('*') as usize..].contains('*'));
                    let p = p.ok_or(format!(
                        "options.blockHostnames[{i}]: expected a host name, optionally with a \
                         leading wildcard such as *.example.com"
                    ))?;
                    http.block_hostnames.push(p.to_ascii_lowercase());
                }
            }
            "noTeardown" => settings.no_teardown = boolean(v, k)?,
            "noConnectionReuse" => http.no_connection_reuse = boolean(v, k)?,
            "noVUConnectionReuse" => http.no_vu_connection_reuse = boolean(v, k)?,
            "discardResponseBodies" => http.discard_response_bodies = boolean(v, k)?,
            "maxResponseBodySize" => {
                http.max_response_body = match v {
                    serde_json::Value::String(s) => parse_size(s),
                    _ => v
                        .as_u64()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| format!("expected a size, got {v}")),
                }
                .map_err(|e| {
                    format!("options.maxResponseBodySize: {e} (e.g. \"64MiB\", or bytes)")
                })?
            }
            "hosts" => {
                for (name, addr) in string_map(v, "hosts")? {
                    let ok = addr.parse::<std::net::IpAddr>().is_ok()
                        || addr.parse::<std::net::SocketAddr>().is_ok();
                    if !ok {
                        return Err(format!(
                            "options.hosts.{name}: expected an IP address or IP:port, got '{addr}'"
                        ));
                    }
                    http.hosts.insert(name.to_ascii_lowercase(), addr);
                }
            }
            "maxRedirects" => {
                http.max_redirects = count(v, "maxRedirects")?.min(u32::MAX as u64) as u32
            }
            "setupTimeout" => settings.setup_timeout = duration(v, "setupTimeout")?,
            "teardownTimeout" => settings.teardown_timeout = duration(v, "teardownTimeout")?,
            "batch" => http.batch = count(v, "batch")?,
            "batchPerHost" => http.batch_per_host = count(v, "batchPerHost")?,
            "maxSeriesPerMetric" => {
                settings.max_series = max_series(count(v, k)?, "options.maxSeriesPerMetric")?
            }
            "summaryTrendStats" => {
                let arr = v.as_array().ok_or(
                    "options.summaryTrendStats: expected an array such as [\"avg\", \"p(95)\"]",
                )?;
                for (i, s) in arr.iter().enumerate() {
                    if !s
                        .as_str()
                        .is_some_and(volley_run::summary::valid_trend_stat)
                    {
                        return Err(format!(
                            "options.summaryTrendStats[{i}]: {s} is not a trend stat (expected \
                             avg, min, med, max, count or p(N) with N in 0..100)"
                        ));
                    }
                }
            }
            "summaryTimeUnit" => {
                if !v.is_null() && !matches!(v.as_str(), Some("" | "s" | "ms" | "us")) {
                    return Err(format!(
                        "options.summaryTimeUnit: expected \"s\", \"ms\" or \"us\", got {v}"
                    ));
                }
            }
            "systemTags" => {
                let arr = v
                    .as_array()
                    .ok_or("options.systemTags: expected an array of tag names")?;
                let mut keep = HashSet::new();
                for (i, t) in arr.iter().enumerate() {
                    let t = t.as_str().ok_or(format!(
                        "options.systemTags[{i}]: expected a string, got {t}"
                    ))?;
                    if !SYSTEM_TAGS.contains(&t) {
                        return Err(format!(
                            "options.systemTags[{i}]: '{t}' is not a system tag (expected one of {})",
                            SYSTEM_TAGS.join(", ")
                        ));
                    }
                    keep.insert(t.to_string());
                }
                settings.system_tags = Some(keep);
            }
            "scenarios" if !v.is_null() => scenarios_json = Some(v),
            // Volley's: the `volley/ledger` file, opened by `prepare`.
            "ledger" => {}
            "executionSegment" => seg = segment_text(v, k)?,
            "executionSegmentSequence" => seq = segment_text(v, k)?,
            other => ignored.push(other.to_string()),
        }
    }
    if let Some(n) = cli.max_response_body {
        http.max_response_body = n;
    }
    let segment = match (&seg, &seq) {
        (None, None) => None,
        _ => Some(
            volley_engine::segment::Tuple::parse(seg.as_deref(), seq.as_deref())
                .map_err(|e| format!("options.executionSegment: {e}"))?,
        )
        .filter(|t| !t.is_whole()),
    };
    if let Some(n) = cli.max_series {
        settings.max_series = max_series(n, "--max-series")?;
    }
    // As k6: the CLI's shortcuts replace whatever the script configured.
    let cli_shortcuts = cli.vus.is_some() || cli.duration.is_some() || cli.iterations.is_some();
    if let (Some(v), false) = (scenarios_json, cli_shortcuts) {
        for (name, set) in [
            ("duration", dur.is_some()),
            ("iterations", iterations.is_some()),
            ("stages", stages.is_some()),
        ] {
            if set {
                return Err(format!(
                    "using `{name}` and `scenarios` options simultaneously is not allowed: \
                     remove `{name}` (or describe that load as one more scenario)"
                ));
            }
        }
        if vus.is_some() {
            ignored.push("vus (with scenarios, each scenario sets its own VUs)".into());
        }
        let scenarios = executor::parse_scenarios(v)?;
        executor::check_vus(&scenarios)?;
        return Ok(Resolved {
            scenarios,
            http,
            ignored,
            thresholds,
            settings,
            segment,
        });
    }
    if cli.duration.is_some() || cli.iterations.is_some() {
        stages = None;
    }
    if let Some(v) = cli.vus {
        vus = Some(v);
    }
    if let Some(d) = cli.duration {
        dur = Some(d);
    }
    if let Some(i) = cli.iterations {
        iterations = Some(i);
    }
    // As k6: a zero duration is refused, never read as "no duration" (it used to become
    // one iteration per VU); with `iterations` it is a maxDuration of at least 1 s.
    match (dur, iterations) {
        (Some(d), Some(_)) if d < Duration::from_secs(1) => {
            return Err(format!(
                "shared-iterations: the maxDuration must be at least 1s, but is {}                  (`duration` with `iterations` caps the run; drop it or make it 1s or more)",
                fmt_secs(d)
            ));
        }
        (Some(d), None) if d.is_zero() => {
            return Err("`duration` option should be more than 0 (got 0s): give a positive                         duration such as 30s, or use `iterations` for a fixed number of                         iterations"
                .into());
        }
        _ => {}
    }
    let executor = if let Some(iterations) = iterations {
        let vus = vus.unwrap_or(1);
        if vus == 0 {
            return Err("vus must be at least 1".into());
        }
        if iterations < vus {
            return Err(format!(
                "shared-iterations: the number of iterations ({iterations}) can't be less than \
                 the number of VUs ({vus})"
            ));
        }
        Executor::SharedIterations(SharedIterations {
            vus,
            iterations,
            max_duration: dur.unwrap_or(executor::MAX_DURATION),
        })
    } else if let Some(duration) = dur {
        let vus = vus.unwrap_or(1);
        if vus == 0 {
            return Err("vus must be at least 1".into());
        }
        Executor::ConstantVus(ConstantVus { vus, duration })
    } else if let Some(stages) = stages.filter(|s| !s.is_empty()) {
        Executor::RampingVus(RampingVus::new(vus.unwrap_or(1), stages))
    } else {
        let vus = vus.unwrap_or(1).max(1);
        Executor::SharedIterations(SharedIterations {
            vus,
            iterations: vus,
            max_duration: executor::MAX_DURATION,
        })
    };
    let scenarios = vec![Scenario::new("default", executor)];
    executor::check_vus(&scenarios)?;
    Ok(Resolved {
        scenarios,
        http,
        ignored,
        thresholds,
        settings,
        segment,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn only(r: &Resolved) -> &Executor {
        assert_eq!(r.scenarios.len(), 1);
        assert_eq!(r.scenarios[0].name, "default");
        &r.scenarios[0].executor
    }

    #[test]
    fn shortcuts_pick_the_k6_executor() {
        let none = CliOptions::default();
        let r = resolve(&json!({"vus": 3, "duration": "2s"}), &none).unwrap();
        assert_eq!(
            only(&r),
            &Executor::ConstantVus(ConstantVus {
                vus: 3,
                duration: Duration::from_secs(2)
            })
        );
        let r = resolve(&json!({"vus": 2, "iterations": 10}), &none).unwrap();
        assert!(matches!(
            only(&r),
            Executor::SharedIterations(SharedIterations {
                vus: 2,
                iterations: 10,
                ..
            })
        ));
        let r = resolve(
            &json!({"stages": [{"duration": "1s", "target": 5}, {"duration": 500, "target": 0}]}),
            &none,
        )
        .unwrap();
        assert_eq!(only(&r).max_vus(), 5);
        assert_eq!(only(&r).duration(), Duration::from_millis(1500));
        let r = resolve(&serde_json::Value::Null, &none).unwrap();
        assert!(matches!(
            only(&r),
            Executor::SharedIterations(SharedIterations {
                vus: 1,
                iterations: 1,
                ..
            })
        ));
    }

    #[test]
    fn cli_overrides_and_errors() {
        let cli = CliOptions {
            vus: Some(4),
            duration: None,
            iterations: Some(8),
            ..Default::default()
        };
        let r = resolve(
            &json!({"vus": 1, "stages": [{"duration": "1s", "target": 5}], "dns": "ttl=5m"}),
            &cli,
        )
        .unwrap();
        assert!(matches!(
            only(&r),
            Executor::SharedIterations(SharedIterations {
                vus: 4,
                iterations: 8,
                ..
            })
        ));
        assert_eq!(r.ignored, vec!["dns".to_string()]);
        assert!(resolve(&json!({"vus": 5, "iterations": 2}), &CliOptions::default()).is_err());
        assert!(resolve(&json!({"scenarios": {}}), &CliOptions::default()).is_err());
        assert!(resolve(&json!({"duration": "soon"}), &CliOptions::default()).is_err());
    }

    /// k6 refuses a zero duration (exit 104) instead of running one iteration per VU, from
    /// the flag and from the options alike; with iterations it is a maxDuration below 1 s.
    #[test]
    fn zero_duration_is_refused_as_k6_does() {
        let none = CliOptions::default();
        let cli_0s = CliOptions {
            vus: Some(2),
            duration: Some(Duration::ZERO),
            ..Default::default()
        };
        let e = resolve(&serde_json::Value::Null, &cli_0s).unwrap_err();
        assert!(e.contains("`duration` option should be more than 0"), "{e}");
        for d in [json!("0s"), json!(0), json!("0ms")] {
            let e = resolve(&json!({ "vus": 2, "duration": d }), &none).unwrap_err();
            assert!(e.contains("should be more than 0"), "{d}: {e}");
        }
        let e = resolve(&json!({"iterations": 3, "duration": "0s"}), &none).unwrap_err();
        assert!(
            e.contains("maxDuration must be at least 1s, but is 0s"),
            "{e}"
        );
        let e = resolve(&json!({"iterations": 3, "duration": "500ms"}), &none).unwrap_err();
        assert!(e.contains("but is 500ms"), "{e}");
        assert!(resolve(&json!({"iterations": 3, "duration": "1s"}), &none).is_ok());
        assert!(resolve(&json!({"iterations": 0}), &none).is_err());
    }

    #[test]
    fn rps_limiter_hands_out_slots_one_interval_apart() {
        let l = RpsLimiter::new(10);
        assert_eq!(l.reserve(), Duration::ZERO);
        let (a, b) = (l.reserve(), l.reserve());
        assert!(
            a > Duration::from_millis(50) && a <= Duration::from_millis(100),
            "{a:?}"
        );
        assert!(
            b > Duration::from_millis(150) && b <= Duration::from_millis(200),
            "{b:?}"
        );
        let r = resolve(&json!({"rps": 0}), &CliOptions::default()).unwrap();
        assert!(r.settings.rps.is_none());
    }

    #[test]
    fn http_options_resolve_into_the_clients_settings() {
        let none = CliOptions::default();
        let r = resolve(&json!({}), &none).unwrap();
        assert!(!r.http.insecure);
        assert_eq!(r.http.max_redirects, 10, "k6's default");
        let r = resolve(
            &json!({"insecureSkipTLSVerify": true, "userAgent": "ua/1", "maxRedirects": 0,
                    "batch": 3, "batchPerHost": 0, "noVUConnectionReuse": true}),
            &none,
        )
        .unwrap();
        let h = &r.http;
        assert!(h.insecure && h.no_vu_connection_reuse && !h.no_connection_reuse);
        assert_eq!(h.user_agent.as_deref(), Some("ua/1"));
        assert_eq!((h.max_redirects, h.batch, h.batch_per_host), (0, 3, 0));
    }

    #[test]
    fn block_hostnames_match_exactly_or_by_wildcard_suffix() {
        let none = CliOptions::default();
        let r = resolve(
            &json!({"blockHostnames": ["*.Example.com", "api.test"]}),
            &none,
        )
        .unwrap();
        let s = &r.http;
        assert_eq!(s.blocked_hostname("a.b.EXAMPLE.com"), Some("*.example.com"));
        assert_eq!(s.blocked_hostname("api.test"), Some("api.test"));
        assert_eq!(s.blocked_hostname("example.com"), None);
        assert_eq!(s.blocked_hostname("web.api.test"), None);
        let e = resolve(&json!({"blockHostnames": ["a.*.com"]}), &none).unwrap_err();
        assert!(e.starts_with("options.blockHostnames[0]: "), "{e}");
    }

    #[test]
    fn max_response_body_takes_sizes_and_the_flag_wins() {
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("10 MB"), Ok(10_000_000));
        assert_eq!(parse_size("1.5KiB"), Ok(1536));
        assert_eq!(parse_size("1000"), Ok(1000));
        for bad in ["0", "", "5 parsecs", "-1MB", "1e30GiB"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        let none = CliOptions::default();
        let r = resolve(&serde_json::Value::Null, &none).unwrap();
        assert_eq!(r.http.max_response_body, 64 << 20);
        let r = resolve(&json!({"maxResponseBodySize": 4096}), &none).unwrap();
        assert_eq!(r.http.max_response_body, 4096);
        let cli = CliOptions {
            max_response_body: Some(10),
            ..Default::default()
        };
        let r = resolve(&json!({"maxResponseBodySize": "1GB"}), &cli).unwrap();
        assert_eq!(r.http.max_response_body, 10);
        let e = resolve(&json!({"maxResponseBodySize": true}), &none).unwrap_err();
        assert!(e.starts_with("options.maxResponseBodySize: "), "{e}");
    }

    #[test]
    fn scenarios_are_parsed_and_cannot_be_mixed_with_shortcuts() {
        let none = CliOptions::default();
        let sc = json!({
            "read": {"executor": "constant-vus", "vus": 2, "duration": "5s"},
            "write": {"executor": "per-vu-iterations", "vus": 1, "iterations": 3, "exec": "write"},
        });
        let r = resolve(&json!({ "scenarios": sc }), &none).unwrap();
        let names: Vec<&str> = r.scenarios.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["read", "write"]);
        assert_eq!(r.scenarios[1].exec_name(), "write");
        let e = resolve(&json!({"scenarios": sc, "duration": "10s"}), &none).unwrap_err();
        assert!(
            e.contains("using `duration` and `scenarios` options simultaneously is not allowed"),
            "{e}"
        );
        // The CLI's shortcuts replace the script's scenarios (as k6).
        let cli = CliOptions {
            vus: Some(3),
            duration: Some(Duration::from_secs(4)),
            ..Default::default()
        };
        let r = resolve(&json!({ "scenarios": sc }), &cli).unwrap();
        assert!(matches!(
            only(&r),
            Executor::ConstantVus(ConstantVus { vus: 3, .. })
        ));
        let e = resolve(&json!({"scenarios": {"x": {"executor": "nope"}}}), &none).unwrap_err();
        assert!(e.contains("executor type 'nope' is not supported"), "{e}");
    }
}
