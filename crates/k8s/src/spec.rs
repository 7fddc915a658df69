//! What `volley k8s render` is asked for ([`Spec`]) and its checks: Kubernetes names,
//! resource quantities, node selectors, limits. Every error names the flag and the rule, with
//! a hint, before anything is written.

use std::fmt;

/// A ConfigMap holds at most 1 MiB of data (the API server's limit, keys included).
pub const CONFIGMAP_MAX_BYTES: usize = 1024 * 1024;
/// The key (and file name in the mounted volume) of the archive in the ConfigMap.
pub const ARCHIVE_KEY: &str = "test.tar";
/// Agents at most: one Indexed Job's completions (the API allows 100,000; this is far more
/// than one coordinator should serve).
pub const MAX_PARALLELISM: u32 = 1000;
/// The coordinator's port in the pod and on its Service (k6's REST API uses 6565; this one
/// stays clear of it).
pub const DEFAULT_PORT: u16 = 6570;

/// Requests and limits of one container, as Kubernetes quantities ("500m", "1", "256Mi").
#[derive(Clone, Debug, PartialEq)]
pub struct Resources {
    pub cpu: Quantity,
    pub memory: Quantity,
}

/// `REQUEST[:LIMIT]`; one value sets both (Guaranteed QoS: a load generator that is
/// throttled or evicted mid-run measures itself, not the target).
#[derive(Clone, Debug, PartialEq)]
pub struct Quantity {
    pub request: String,
    pub limit: String,
}

/// Where the token comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Token {
    /// Render a Secret holding this (random) token.
    Generated(String),
    /// An existing Secret with a `token` key.
    Existing(String),
}

/// Where the pods find the archive.
#[derive(Clone, Debug, PartialEq)]
pub enum ArchiveSource {
    /// In a rendered ConfigMap (the archive's bytes, at most [`CONFIGMAP_MAX_BYTES`]).
    ConfigMap(Vec<u8>),
    /// At this path inside the image (an image built `FROM` volley's with the archive copied in).
    InImage(String),
}

/// Everything the manifests are made from.
#[derive(Clone, Debug)]
pub struct Spec {
    /// Prefix of every object's name (a DNS label, at most 40 characters).
    pub name: String,
    /// None: the objects carry no namespace (kubectl's current one applies).
    pub namespace: Option<String>,
    pub image: String,
    pub parallelism: u32,
    pub port: u16,
    pub archive: ArchiveSource,
    pub token: Token,
    pub agent: Resources,
    pub coordinator: Resources,
    pub service_account: Option<String>,
    pub node_selector: Vec<(String, String)>,
    /// `-e K=V` for the test's `__ENV` (given to the coordinator, which hands it to agents).
    pub env: Vec<(String, String)>,
    /// The coordinator's `--start-timeout` and the agents' `--retry-for`: pods may wait for
    /// an image pull or a node.
    pub start_timeout: String,
    pub on_agent_loss: Option<String>,
    pub ttl_seconds: u32,
    /// A PersistentVolumeClaim the coordinator writes result.json and summary.json to.
    pub results_pvc: Option<String>,
}

/// A bad value: which flag, what is wrong, and what would do.
#[derive(Debug, PartialEq)]
pub struct SpecError {
    pub flag: &'static str,
    pub message: String,
    pub hint: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}\n  hint: {}", self.flag, self.message, self.hint)
    }
}

fn err(flag: &'static str, message: String, hint: &str) -> SpecError {
    SpecError {
        flag,
        message,
        hint: hint.to_string(),
    }
}

/// The longest `--name`: the longest object name is `NAME-coordinator` (a Service name is a
/// DNS label of at most 63), and Job pods' `job-name` label leaves room for the suffixes.
pub const MAX_NAME: usize = 40;

/// A DNS-1035 label: lowercase letters, digits and '-', starting with a letter.
pub fn check_label_name(flag: &'static str, v: &str, max: usize) -> Result<(), SpecError> {
    let ok = !v.is_empty()
        && v.len() <= max
        && v.starts_with(|c: char| c.is_ascii_lowercase())
        && !v.ends_with('-')
        && v.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        return Ok(());
    }
    Err(err(
        flag,
        format!("'{v}' is not a valid Kubernetes name"),
        &format!(
            "use at most {max} lowercase letters, digits and '-', starting with a letter and \
             not ending with '-' (e.g. checkout-load)"
        ),
    ))
}

/// A DNS-1123 subdomain (namespaces are labels; Secrets and service accounts subdomains).
fn check_subdomain(flag: &'static str, v: &str) -> Result<(), SpecError> {
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && p.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    if v.len() <= 253 && v.split('.').all(part_ok) {
        return Ok(());
    }
    Err(err(
        flag,
        format!("'{v}' is not a valid Kubernetes object name"),
        "use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit",
    ))
}

/// A label value or the name part of a label key: at most 63 of [A-Za-z0-9-_.], alphanumeric
/// at both ends (an empty value is allowed).
fn label_part_ok(v: &str, allow_empty: bool) -> bool {
    if v.is_empty() {
        return allow_empty;
    }
    v.len() <= 63
        && v.starts_with(|c: char| c.is_ascii_alphanumeric())
        && v.ends_with(|c: char| c.is_ascii_alphanumeric())
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// `--node-selector key=value`: a label key (optional `prefix/`) and a label value.
pub fn parse_node_selector(v: &str) -> Result<(String, String), SpecError> {
    let bad = || {
        err(
            "--node-selector",
            format!("'{v}' is not a node label selector"),
            "write KEY=VALUE with a node label, e.g. kubernetes.io/arch=amd64 or pool=load",
        )
    };
    let (k, val) = v.split_once('=').ok_or_else(bad)?;
    let (prefix, name) = match k.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    let prefix_ok = prefix.is_none_or(|p| check_subdomain("--node-selector", p).is_ok());
    if prefix_ok && label_part_ok(name, false) && label_part_ok(val, true) {
        Ok((k.to_string(), val.to_string()))
    } else {
        Err(bad())
    }
}

/// `-e KEY=VALUE`.
pub fn parse_env(v: &str) -> Result<(String, String), SpecError> {
    match v.split_once('=') {
        Some((k, val)) if !k.is_empty() && !k.contains(char::is_whitespace) => {
            Ok((k.to_string(), val.to_string()))
        }
        _ => Err(err(
            "-e/--env",
            format!("'{v}' is not KEY=VALUE"),
            "write -e BASE_URL=http://checkout:8080 (the test's __ENV)",
        )),
    }
}

/// A Kubernetes quantity's value in its base unit (cores or bytes), for request ≤ limit.
fn quantity_value(q: &str) -> Option<f64> {
    const SUFFIXES: &[(&str, f64)] = &[
        ("Ki", 1024.0),
        ("Mi", 1048576.0),
        ("Gi", 1073741824.0),
        ("Ti", 1099511627776.0),
        ("Pi", 1125899906842624.0),
        ("Ei", 1152921504606846976.0),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
    ];
    let (num, mult) = SUFFIXES
        .iter()
        .find_map(|(s, m)| q.strip_suffix(s).map(|n| (n, *m)))
        .unwrap_or((q, 1.0));
    let digits_ok = !num.is_empty()
        && num.chars().all(|c| c.is_ascii_digit() || c == '.')
        && num.chars().filter(|&c| c == '.').count() <= 1
        && num != ".";
    let v: f64 = num.parse().ok().filter(|_| digits_ok)?;
    (v > 0.0).then_some(v * mult)
}

/// `--agent-cpu 500m`, `--agent-memory 256Mi:1Gi`: `REQUEST[:LIMIT]`.
pub fn parse_quantity(flag: &'static str, v: &str) -> Result<Quantity, SpecError> {
    let (req, lim) = v.split_once(':').unwrap_or((v, v));
    let hint = "write REQUEST or REQUEST:LIMIT as Kubernetes quantities, e.g. 500m, 2, 256Mi:1Gi";
    let (Some(r), Some(l)) = (quantity_value(req), quantity_value(lim)) else {
        return Err(err(flag, format!("'{v}' is not a positive quantity"), hint));
    };
    if r > l {
        return Err(err(
            flag,
            format!("the request {req} is above the limit {lim}"),
            "a request may not exceed its limit; give one value to set both",
        ));
    }
    Ok(Quantity {
        request: req.to_string(),
        limit: lim.to_string(),
    })
}

/// A name from a file stem: lowercase, other characters → '-', trimmed to a valid label.
pub fn name_from_stem(stem: &str) -> String {
    let mut n: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    n = n
        .trim_start_matches(|c: char| !c.is_ascii_lowercase())
        .to_string();
    n.truncate(MAX_NAME);
    let n = n.trim_end_matches('-').to_string();
    if n.is_empty() {
        "volley".into()
    } else {
        n
    }
}

impl Spec {
    /// The checks that need the whole spec (each flag's own value is checked when parsed).
    pub fn check(&self) -> Result<(), SpecError> {
        check_label_name("--name", &self.name, MAX_NAME)?;
        if let Some(ns) = &self.namespace {
            check_label_name("--namespace", ns, 63)?;
        }
        if let Token::Existing(s) = &self.token {
            check_subdomain("--token-secret", s)?;
        }
        if let Some(sa) = &self.service_account {
            check_subdomain("--service-account", sa)?;
        }
        if let Some(pvc) = &self.results_pvc {
            check_subdomain("--results-pvc", pvc)?;
        }
        if self.parallelism == 0 || self.parallelism > MAX_PARALLELISM {
            return Err(err(
                "--parallelism",
                format!("{} agents", self.parallelism),
                &format!("give 1 to {MAX_PARALLELISM} agents"),
            ));
        }
        if self.image.is_empty() || self.image.contains(char::is_whitespace) {
            return Err(err(
                "--image",
                format!("'{}' is not an image reference", self.image),
                "e.g. registry.example.com/volley:0.1.0 (build it with the repository's Dockerfile)",
            ));
        }
        match &self.archive {
            ArchiveSource::ConfigMap(b) => check_archive_size(b.len() as u64),
            ArchiveSource::InImage(p) if !p.starts_with('/') => Err(err(
                "--archive-in-image",
                format!("'{p}' is not an absolute path"),
                "give the archive's absolute path inside the image, e.g. /volley/test.tar",
            )),
            ArchiveSource::InImage(_) => Ok(()),
        }
    }
}

/// An archive of `len` bytes fits in a ConfigMap.
pub fn check_archive_size(len: u64) -> Result<(), SpecError> {
    if len + ARCHIVE_KEY.len() as u64 <= CONFIGMAP_MAX_BYTES as u64 {
        return Ok(());
    }
    Err(err(
        "TEST",
        format!(
            "the archive is {len} bytes; a ConfigMap holds at most {CONFIGMAP_MAX_BYTES} (1 MiB)"
        ),
        "leave large data files out of the archive, or put the archive in the image \
         (--archive-in-image PATH) or a volume: docs/distributed.md#large-archives",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_kubernetes_rules() {
        assert!(check_label_name("--name", "checkout-load", MAX_NAME).is_ok());
        for bad in ["", "Load", "1load", "load-", "lo_ad", &"a".repeat(41)] {
            let e = check_label_name("--name", bad, MAX_NAME).unwrap_err();
            assert!(e.to_string().contains("hint:"), "{e}");
        }
        assert_eq!(name_from_stem("My_Test.v2"), "my-test-v2");
        assert_eq!(name_from_stem("2024"), "volley");
        assert_eq!(name_from_stem(&"x".repeat(80)).len(), MAX_NAME);
    }

    #[test]
    fn quantities_are_checked_and_request_stays_under_limit() {
        assert_eq!(
            parse_quantity("--agent-cpu", "500m").unwrap(),
            Quantity {
                request: "500m".into(),
                limit: "500m".into()
            }
        );
        assert_eq!(
            parse_quantity("--agent-memory", "256Mi:1Gi").unwrap().limit,
            "1Gi"
        );
        assert!(parse_quantity("--agent-cpu", "1.5").is_ok());
        for bad in ["", "abc", "-1", "0", "1.2.3", "5x", "1Gi:", ".m"] {
            assert!(parse_quantity("--agent-cpu", bad).is_err(), "{bad}");
        }
        let e = parse_quantity("--agent-memory", "2Gi:1Gi").unwrap_err();
        assert!(e.message.contains("above the limit"), "{e}");
    }

    #[test]
    fn node_selectors_and_env_pairs() {
        assert_eq!(
            parse_node_selector("kubernetes.io/arch=amd64").unwrap(),
            ("kubernetes.io/arch".into(), "amd64".into())
        );
        assert!(parse_node_selector("pool=").is_ok());
        for bad in ["pool", "=x", "Bad Prefix/k=v", "k=v v", "k=-v"] {
            assert!(parse_node_selector(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_env("A=b=c").unwrap(), ("A".into(), "b=c".into()));
        assert!(parse_env("=x").is_err());
        assert!(parse_env("novalue").is_err());
    }
}
