//! What to watch: the `--monitor` spec grammar.
//!
//! ```text
//! pid:1234                          one process (by id)
//! cmd:postgres                      every process whose comm or argv[0] basename is `postgres`,
//!                                   plus all their descendants, re-resolved at each sample
//! cgroup:/sys/fs/cgroup/app.slice   a cgroup v2 directory (a relative path is taken under
//!                                   /sys/fs/cgroup)
//! url:http://127.0.0.1:9100/metrics[#name1,name2]
//!                                   a Prometheus text endpoint; all numeric samples, or only
//!                                   the named metric families
//! api=pid:1234, target:api=pid:1234 the same, with the `target` tag `api` instead of the spec
//! ```

use std::path::PathBuf;

/// One thing to watch, as parsed from a `--monitor` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MonitorSpec {
    /// The value of the `target` tag on every metric this spec produces.
    pub name: String,
    pub source: Source,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Pid(u32),
    /// A process and its descendants, summed (a service that forks workers).
    Tree(u32),
    Cmd(String),
    Cgroup(PathBuf),
    Url {
        url: String,
        /// Metric families to keep; empty keeps every numeric sample.
        keep: Vec<String>,
    },
}

/// Where cgroup v2 is mounted on systemd hosts (and in most containers).
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";

impl MonitorSpec {
    pub fn parse(s: &str) -> Result<MonitorSpec, String> {
        let s = s.trim();
        let body = s.strip_prefix("target:").unwrap_or(s);
        // `NAME=spec`: a name has no ':' or '/', so `url:...?a=b` is not mistaken for one.
        let (name, spec) = match body.split_once('=') {
            Some((n, rest)) if !n.is_empty() && !n.contains([':', '/']) => {
                (Some(n.to_string()), rest)
            }
            _ => (None, body),
        };
        let hint = || {
            format!(
                "--monitor '{s}': expected pid:N, tree:N, cmd:NAME, cgroup:/path or url:http://host:port/metrics \
                 (optionally NAME=spec to name the target)"
            )
        };
        let (kind, arg) = spec.split_once(':').ok_or_else(hint)?;
        let source = match kind {
            "pid" => Source::Pid(
                arg.trim()
                    .parse()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| format!("--monitor '{s}': '{arg}' is not a process id"))?,
            ),
            "tree" => Source::Tree(
                arg.trim()
                    .parse()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| format!("--monitor '{s}': '{arg}' is not a process id"))?,
            ),
            "cmd" if !arg.is_empty() && !arg.contains('/') => Source::Cmd(arg.to_string()),
            "cmd" => {
                return Err(format!(
                    "--monitor '{s}': give a command name (as in `ps -o comm`), not a path"
                ))
            }
            "cgroup" if !arg.is_empty() => {
                let p = PathBuf::from(arg);
                Source::Cgroup(if p.starts_with(CGROUP_ROOT) {
                    p
                } else {
                    PathBuf::from(CGROUP_ROOT).join(arg.trim_start_matches('/'))
                })
            }
            "url" => {
                let (url, keep) = match arg.split_once('#') {
                    Some((u, k)) => (
                        u,
                        k.split(',')
                            .map(str::trim)
                            .filter(|k| !k.is_empty())
                            .map(String::from)
                            .collect(),
                    ),
                    None => (arg, Vec::new()),
                };
                if !url.starts_with("http://") {
                    return Err(format!(
                        "--monitor '{s}': only http:// Prometheus endpoints can be scraped"
                    ));
                }
                Source::Url {
                    url: url.to_string(),
                    keep,
                }
            }
            _ => return Err(hint()),
        };
        Ok(MonitorSpec {
            name: name.unwrap_or_else(|| spec.to_string()),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_with_and_without_names() {
        let p = MonitorSpec::parse("pid:42").unwrap();
        assert_eq!((p.name.as_str(), &p.source), ("pid:42", &Source::Pid(42)));
        let t = MonitorSpec::parse("api=tree:7").unwrap();
        assert_eq!((t.name.as_str(), &t.source), ("api", &Source::Tree(7)));
        assert!(MonitorSpec::parse("tree:x").is_err());
        let n = MonitorSpec::parse("api=pid:42").unwrap();
        assert_eq!(n.name, "api");
        assert_eq!(MonitorSpec::parse("target:api=pid:42").unwrap(), n);
        let c = MonitorSpec::parse("cmd:postgres").unwrap();
        assert_eq!(c.source, Source::Cmd("postgres".into()));
        let g = MonitorSpec::parse("cgroup:/app.slice").unwrap();
        assert_eq!(
            g.source,
            Source::Cgroup(PathBuf::from("/sys/fs/cgroup/app.slice"))
        );
        let g2 = MonitorSpec::parse("cgroup:/sys/fs/cgroup/x").unwrap();
        assert_eq!(g2.source, Source::Cgroup(PathBuf::from("/sys/fs/cgroup/x")));
        let u = MonitorSpec::parse("url:http://127.0.0.1:9/metrics?a=b#up, x_total").unwrap();
        assert_eq!(u.name, "url:http://127.0.0.1:9/metrics?a=b#up, x_total");
        assert_eq!(
            u.source,
            Source::Url {
                url: "http://127.0.0.1:9/metrics?a=b".into(),
                keep: vec!["up".into(), "x_total".into()]
            }
        );
        for bad in [
            "42",
            "pid:x",
            "pid:0",
            "cmd:",
            "cmd:/usr/bin/x",
            "url:https://x/metrics",
            "foo:1",
        ] {
            assert!(MonitorSpec::parse(bad).is_err(), "{bad} should fail");
        }
    }
}
