//! [`ClientSettings`]: the run-wide HTTP settings of script mode (k6's options), a plain value
//! built once from the resolved options before the run and shared (`Arc`) by every VU's
//! client. Nothing here changes while a run is under way.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::ipnet::IpNet;

/// k6's default request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// k6's default `maxRedirects`.
pub const DEFAULT_REDIRECTS: u32 = 10;
/// Volley's default `maxResponseBodySize`.
pub const DEFAULT_MAX_RESPONSE_BODY: u64 = 64 << 20;

/// Run-wide HTTP settings (k6 options) every VU's client reads.
#[derive(Clone, Debug)]
pub struct ClientSettings {
    /// `insecureSkipTLSVerify`.
    pub insecure: bool,
    /// `userAgent`: added to requests that do not set their own.
    pub user_agent: Option<String>,
    /// `hosts`: lower-case name → `ip` or `ip:port`.
    pub hosts: HashMap<String, String>,
    /// `maxRedirects` (a request's `params.redirects` overrides it).
    pub max_redirects: u32,
    /// `discardResponseBodies`: the default `responseType` is `none`.
    pub discard_response_bodies: bool,
    /// `blockHostnames`: lower-case patterns, exact or with a leading `*` (any prefix).
    pub block_hostnames: Vec<String>,
    /// `blacklistIPs`: requests to these ranges are refused before connecting.
    pub blacklist_ips: Arc<[IpNet]>,
    /// `maxResponseBodySize` (Volley's): largest response body a request keeps.
    pub max_response_body: u64,
    /// `noConnectionReuse`: every request opens a new connection.
    pub no_connection_reuse: bool,
    /// `noVUConnectionReuse`: a VU's connections are closed between iterations.
    pub no_vu_connection_reuse: bool,
    /// `batch` / `batchPerHost`: requests of one `http.batch` in flight at once (in all,
    /// per host; 0: no per-host limit).
    pub batch: u64,
    pub batch_per_host: u64,
    /// The rustls configuration, made on the first https request.
    pub tls: TlsCache,
    /// The same with ALPN `http/1.1` only: WebSocket upgrades (k6 forces it there too).
    pub tls_ws: TlsCache,
}

/// The TLS configuration of [`ClientSettings::tls`], made on first use (an error then fails
/// that request, not the run; plain-HTTP runs never build it).
#[derive(Clone, Debug, Default)]
pub struct TlsCache(OnceLock<Result<Arc<rustls::ClientConfig>, String>>);

impl TlsCache {
    /// A cache that already holds `config` (quick mode's `--cacert`, built before the run).
    pub fn preset(config: Arc<rustls::ClientConfig>) -> TlsCache {
        TlsCache(OnceLock::from(Ok(config)))
    }
}

impl Default for ClientSettings {
    fn default() -> Self {
        ClientSettings {
            insecure: false,
            user_agent: None,
            hosts: HashMap::new(),
            max_redirects: DEFAULT_REDIRECTS,
            discard_response_bodies: false,
            block_hostnames: Vec::new(),
            blacklist_ips: Arc::new([]),
            max_response_body: DEFAULT_MAX_RESPONSE_BODY,
            no_connection_reuse: false,
            no_vu_connection_reuse: false,
            batch: 20,
            batch_per_host: 6,
            tls: TlsCache::default(),
            tls_ws: TlsCache::default(),
        }
    }
}

impl ClientSettings {
    /// The TLS configuration for https requests (built once, ALPN `h2` then `http/1.1`, as
    /// k6 offers them).
    pub fn tls(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        self.tls
            .0
            .get_or_init(|| {
                let opts = crate::TlsOptions {
                    insecure: self.insecure,
                    cacert: None,
                };
                crate::tls_config(&opts, &[b"h2", b"http/1.1"])
            })
            .clone()
    }

    /// The TLS configuration for WebSocket upgrades (ALPN `http/1.1` only).
    pub fn tls_http1(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        self.tls_ws
            .0
            .get_or_init(|| {
                let opts = crate::TlsOptions {
                    insecure: self.insecure,
                    cacert: None,
                };
                crate::tls_config(&opts, &[b"http/1.1"])
            })
            .clone()
    }

    /// The `blockHostnames` pattern `host` matches, if any (k6: case-insensitive, a leading
    /// `*` matches any prefix).
    pub fn blocked_hostname(&self, host: &str) -> Option<&str> {
        if self.block_hostnames.is_empty() {
            return None;
        }
        let host = host.to_ascii_lowercase();
        self.block_hostnames
            .iter()
            .find(|p| match p.strip_prefix('*') {
                Some(suffix) => host.ends_with(suffix),
                None => **p == host,
            })
            .map(String::as_str)
    }

    /// `hosts`: the address a host name is pinned to (`ip` keeps the URL's port).
    pub fn pinned(&self, host: &str, port: u16) -> Option<SocketAddr> {
        if self.hosts.is_empty() {
            return None;
        }
        let a = self.hosts.get(&host.to_ascii_lowercase())?;
        a.parse::<SocketAddr>().ok().or_else(|| {
            a.parse::<std::net::IpAddr>()
                .ok()
                .map(|ip| SocketAddr::new(ip, port))
        })
    }

    /// The `blacklistIPs` range `ip` is in, if any.
    pub fn blacklisted(&self, ip: std::net::IpAddr) -> Option<&IpNet> {
        self.blacklist_ips.iter().find(|n| n.contains(ip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_hostnames_match_exactly_or_by_suffix_ignoring_case() {
        let s = ClientSettings {
            block_hostnames: vec!["*.example.com".into(), "exact.org".into()],
            ..Default::default()
        };
        assert_eq!(s.blocked_hostname("API.Example.com"), Some("*.example.com"));
        assert_eq!(s.blocked_hostname("exact.org"), Some("exact.org"));
        assert_eq!(s.blocked_hostname("sub.exact.org"), None);
    }

    #[test]
    fn pinned_hosts_keep_the_url_port_unless_given_one() {
        let mut s = ClientSettings::default();
        s.hosts.insert("a.test".into(), "127.0.0.2".into());
        s.hosts.insert("b.test".into(), "127.0.0.3:9000".into());
        assert_eq!(
            s.pinned("A.test", 81),
            Some("127.0.0.2:81".parse().unwrap())
        );
        assert_eq!(
            s.pinned("b.test", 81),
            Some("127.0.0.3:9000".parse().unwrap())
        );
        assert_eq!(s.pinned("c.test", 81), None);
    }
}
