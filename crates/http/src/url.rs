//! Target URL parsing.
//!
//! Only what a load generator needs: absolute `http`/`https` URLs split into the pieces the
//! client uses (connect address, `Host` header, request target). No general URL crate:
//! the grammar we accept is small and the errors should say how to fix the input.

use std::fmt;
use std::net::{Ipv6Addr, SocketAddr};

use crate::error::{ErrorClass, HttpError};

/// Transport security of a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// A parsed absolute URL, ready for connecting and request serialisation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub scheme: Scheme,
    /// Host name or IP literal, without brackets for IPv6 (used for DNS and SNI).
    pub host: String,
    pub port: u16,
    /// `host[:port]` for the `Host` header: default port omitted, IPv6 bracketed.
    pub authority: String,
    /// Origin-form request target; `/` when the URL has no path.
    pub path_and_query: String,
}

/// A URL the client cannot use; the message says what is wrong and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlError(pub String);

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UrlError {}

fn err(msg: String) -> Result<Target, UrlError> {
    Err(UrlError(msg))
}

impl Target {
    /// Parses an absolute `http://` or `https://` URL. Fragments are dropped; credentials
    /// (`user:pass@`) are rejected because they would silently not be sent.
    pub fn parse(url: &str) -> Result<Target, UrlError> {
        let url = url.trim();
        if url.is_empty() {
            return err("empty URL: give an absolute URL like http://localhost:8080/".into());
        }
        if let Some(c) = url.chars().find(|c| c.is_control()) {
            return err(format!(
                "URL '{}' contains the control character {c:?}: remove it or percent-encode it",
                url.escape_debug()
            ));
        }
        let Some((scheme, rest)) = url.split_once("://") else {
            return err(format!(
                "missing scheme in '{url}': use http://{url} or https://{url}"
            ));
        };
        let scheme = if scheme.eq_ignore_ascii_case("http") {
            Scheme::Http
        } else if scheme.eq_ignore_ascii_case("https") {
            Scheme::Https
        } else {
            return err(format!(
                "unsupported scheme '{scheme}' in '{url}': use http:// or https://"
            ));
        };
        let rest = rest.split_once('#').map_or(rest, |(before, _)| before);
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(split);
        if authority.contains('@') {
            return err(format!(
                "credentials in '{url}' are not supported: remove 'user:pass@' and send an \
                 Authorization header instead"
            ));
        }
        let (host, port) = split_host_port(authority, url)?;
        let port = match port {
            None | Some("") => scheme.default_port(),
            Some(p) => match p.parse::<u16>() {
                Ok(0) => return err(format!("port 0 in '{url}' cannot be connected to")),
                Ok(n) => n,
                Err(_) => {
                    return err(format!(
                        "bad port '{p}' in '{url}': use a number from 1 to 65535"
                    ))
                }
            },
        };
        let bracketed = host.contains(':');
        let mut auth = String::with_capacity(host.len() + 8);
        if bracketed {
            auth.push('[');
            auth.push_str(&host);
            auth.push(']');
        } else {
            auth.push_str(&host);
        }
        if port != scheme.default_port() {
            auth.push(':');
            auth.push_str(&port.to_string());
        }
        Ok(Target {
            scheme,
            host,
            port,
            authority: auth,
            path_and_query: request_target(path),
        })
    }

    /// Resolves the host to socket addresses (IP literals resolve without a lookup).
    pub async fn resolve(&self) -> Result<Vec<SocketAddr>, HttpError> {
        match tokio::net::lookup_host((self.host.as_str(), self.port)).await {
            Ok(addrs) => {
                let addrs: Vec<SocketAddr> = addrs.collect();
                if addrs.is_empty() {
                    Err(HttpError::new(
                        ErrorClass::Dns,
                        format!("'{}' resolved to no addresses", self.host),
                    ))
                } else {
                    Ok(addrs)
                }
            }
            Err(e) => Err(HttpError::new(
                ErrorClass::Dns,
                format!("cannot resolve '{}': {e}", self.host),
            )),
        }
    }

    /// The URL back in canonical form (for messages and tags).
    pub fn url(&self) -> String {
        format!(
            "{}://{}{}",
            self.scheme.as_str(),
            self.authority,
            self.path_and_query
        )
    }
}

/// Splits `host[:port]` / `[v6][:port]`, validating the host.
fn split_host_port<'a>(
    authority: &'a str,
    url: &str,
) -> Result<(String, Option<&'a str>), UrlError> {
    if authority.is_empty() {
        return Err(UrlError(format!(
            "no host in '{url}': expected something like http://localhost:8080/"
        )));
    }
    if let Some(v6) = authority.strip_prefix('[') {
        let Some((ip, after)) = v6.split_once(']') else {
            return Err(UrlError(format!(
                "unclosed '[' in '{url}': IPv6 addresses look like http://[::1]:8080/"
            )));
        };
        if ip.parse::<Ipv6Addr>().is_err() {
            return Err(UrlError(format!(
                "'{ip}' in '{url}' is not a valid IPv6 address (zone ids are not supported)"
            )));
        }
        let port = match after {
            "" => None,
            p => match p.strip_prefix(':') {
                Some(p) => Some(p),
                None => {
                    return Err(UrlError(format!(
                        "unexpected '{after}' after ']' in '{url}': expected ':port' or a path"
                    )))
                }
            },
        };
        return Ok((ip.to_owned(), port));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (authority, None),
    };
    if host.is_empty() {
        return Err(UrlError(format!(
            "empty host in '{url}': expected something like http://localhost:8080/"
        )));
    }
    if host.contains(':') {
        return Err(UrlError(format!(
            "'{host}' in '{url}' looks like an IPv6 address: put it in brackets, e.g. http://[::1]:8080/"
        )));
    }
    if let Some(c) = host
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_')))
    {
        return Err(UrlError(format!(
            "invalid character {c:?} in host '{host}' of '{url}'"
        )));
    }
    Ok((host.to_owned(), port))
}

/// Origin-form target: `/` when empty, `/` prepended before a bare query, and spaces or
/// non-ASCII bytes percent-encoded so the request line stays valid.
fn request_target(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 1);
    if !path.starts_with('/') {
        out.push('/');
    }
    for b in path.bytes() {
        if b == b' ' || !b.is_ascii() {
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        } else {
            out.push(b as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(url: &str) -> Target {
        Target::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"))
    }

    fn bad(url: &str) -> String {
        match Target::parse(url) {
            Ok(t) => panic!("{url} parsed as {t:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn good_urls() {
        let t = ok("http://example.com");
        assert_eq!(t.scheme, Scheme::Http);
        assert_eq!((t.host.as_str(), t.port), ("example.com", 80));
        assert_eq!(t.authority, "example.com");
        assert_eq!(t.path_and_query, "/");

        let t = ok("https://example.com:8443/a/b?x=1&y=2#frag");
        assert_eq!(t.scheme, Scheme::Https);
        assert_eq!(t.port, 8443);
        assert_eq!(t.authority, "example.com:8443");
        assert_eq!(t.path_and_query, "/a/b?x=1&y=2");

        let t = ok("HTTPS://h:443/");
        assert_eq!((t.port, t.authority.as_str()), (443, "h"));

        let t = ok("http://[::1]:8080/p");
        assert_eq!(t.host, "::1");
        assert_eq!(t.port, 8080);
        assert_eq!(t.authority, "[::1]:8080");

        let t = ok("http://[::1]");
        assert_eq!((t.port, t.authority.as_str()), (80, "[::1]"));

        let t = ok("http://127.0.0.1:3000?q=1");
        assert_eq!(t.path_and_query, "/?q=1");
        assert_eq!(t.authority, "127.0.0.1:3000");

        let t = ok("http://h:/x");
        assert_eq!(t.port, 80);

        assert_eq!(ok("http://h/a b/é").path_and_query, "/a%20b/%C3%A9");
        assert_eq!(ok("http://h/p").url(), "http://h/p");
    }

    #[test]
    fn bad_urls() {
        let m = bad("localhost:8080/x");
        assert!(
            m.contains("missing scheme") && m.contains("http://localhost:8080/x"),
            "{m}"
        );
        let m = bad("ftp://x");
        assert_eq!(
            m,
            "unsupported scheme 'ftp' in 'ftp://x': use http:// or https://"
        );
        assert!(bad("http://").contains("no host"));
        assert!(bad("http:///path").contains("no host"));
        assert!(bad("http://:80/").contains("empty host"));
        assert!(bad("http://h:99999/").contains("bad port '99999'"));
        assert!(bad("http://h:abc/").contains("bad port 'abc'"));
        assert!(bad("http://h:0/").contains("port 0"));
        assert!(bad("http://[::1/").contains("unclosed"));
        assert!(bad("http://[zz]/").contains("not a valid IPv6"));
        assert!(bad("http://::1/").contains("brackets"));
        assert!(bad("http://u:p@h/").contains("credentials"));
        assert!(bad("http://h\r\n/").contains("control character"));
        assert!(bad("").contains("empty URL"));
    }

    #[tokio::test]
    async fn resolves_literals_and_reports_dns_errors() {
        let addrs = ok("http://127.0.0.1:9/").resolve().await.unwrap();
        assert_eq!(addrs, vec!["127.0.0.1:9".parse().unwrap()]);
        let e = ok("http://no-such-host.invalid/")
            .resolve()
            .await
            .unwrap_err();
        assert_eq!(e.class, ErrorClass::Dns);
        assert!(e.message.contains("no-such-host.invalid"));
    }

    /// Deterministic xorshift64* (a fixed seed: failures reproduce; no dev-dependency).
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n as u64) as usize
        }
        fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
            from[self.below(from.len())]
        }
    }

    /// Property: URLs built from random parts parse to those parts, print back
    /// (`Target::url`) to a URL that parses to the same target, and keep the request line
    /// valid (no spaces, control or non-ASCII bytes). The same ground as
    /// `fuzz/fuzz_targets/url.rs`, on the stable toolchain.
    #[test]
    fn property_urls_round_trip_through_their_printed_form() {
        let mut rng = Rng(0x0123_4567_89ab_cdef);
        let hosts = [
            "localhost",
            "example.com",
            "a-b.c_d",
            "127.0.0.1",
            "[::1]",
            "[fe80::1:2]",
            "[::ffff:10.0.0.1]",
            "X.Y",
        ];
        let path_bits = [
            "/", "a", "/b", "?", "=", "&", "%", "%20", " ", "é", "€", "#", ":", "@", "//", ".", "~",
        ];
        for _ in 0..5000 {
            let scheme = rng.pick(&["http", "https", "HTTP", "hTtPs"]);
            let host = rng.pick(&hosts);
            let port = match rng.below(4) {
                0 => String::new(),
                1 => ":".into(),
                2 => format!(":{}", 1 + rng.below(65535)),
                _ => rng.pick(&[":80", ":443", ":08080"]).to_string(),
            };
            // What follows the authority starts a path, a query or a fragment.
            let mut path = rng.pick(&["", "/", "?", "#"]).to_string();
            for _ in 0..rng.below(6).min(path.len() * 6) {
                path.push_str(rng.pick(&path_bits));
            }
            let url = format!("{scheme}://{host}{port}{path}");
            let t = Target::parse(&url).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(
                t.host,
                host.trim_start_matches('[').trim_end_matches(']'),
                "{url}"
            );
            let want_port = match port.trim_start_matches(':') {
                "" => t.scheme.default_port(),
                p => p.parse().unwrap(),
            };
            assert_eq!(t.port, want_port, "{url}");
            let printed = t.url();
            let again = Target::parse(&printed).unwrap_or_else(|e| panic!("{printed}: {e}"));
            assert_eq!(again, t, "{url} → {printed}");
            assert!(t.path_and_query.starts_with('/'), "{url}");
            assert!(
                !t.path_and_query
                    .bytes()
                    .any(|b| b <= b' ' || !b.is_ascii() || b == b'#'),
                "{url} → {:?}",
                t.path_and_query
            );
        }
    }

    /// Property: random text over the URL alphabet never panics, and an accepted URL is
    /// stable through its printed form.
    #[test]
    fn property_random_url_text_never_panics() {
        let mut rng = Rng(0xfeed_beef);
        let bits = [
            "http", "https", "://", ":", "/", "[", "]", "::1", "@", "?", "#", "h", "1", "0", " ",
            "é", "%", ".", "\u{7f}", "65536", "-",
        ];
        for _ in 0..20_000 {
            let mut s = String::new();
            for _ in 0..rng.below(8) {
                s.push_str(rng.pick(&bits));
            }
            if let Ok(t) = Target::parse(&s) {
                assert_eq!(Target::parse(&t.url()).as_ref(), Ok(&t), "{s:?}");
            }
        }
    }
}
