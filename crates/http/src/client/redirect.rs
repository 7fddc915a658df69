//! Redirects as k6 follows them: which statuses redirect, where `Location` points (resolved
//! against the request's URL), and when the method becomes GET and the body is dropped.

use crate::message::Response;
use crate::url::Target;

/// Resolve a redirect's `Location` against the URL it came from.
pub fn resolve_location(base: &Target, loc: &str) -> String {
    if loc.contains("://") {
        return loc.to_string();
    }
    let scheme = base.scheme.as_str();
    if let Some(rest) = loc.strip_prefix("//") {
        return format!("{scheme}://{rest}");
    }
    if loc.starts_with('/') {
        return format!("{scheme}://{}{loc}", base.authority);
    }
    let path = base.path_and_query.split('?').next().unwrap_or("/");
    let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    format!("{scheme}://{}{dir}{loc}", base.authority)
}

/// The next hop of a redirect: its URL, and whether it becomes a GET without a body.
#[derive(Debug, PartialEq, Eq)]
pub struct Redirect {
    pub url: String,
    pub to_get: bool,
}

/// Where `r` (the answer to `method` on `target`) redirects, if it does and it has a
/// `Location` (each hop is its own request in the metrics; the caller counts hops).
pub fn next(target: &Target, method: &str, r: &Response) -> Option<Redirect> {
    if !matches!(r.status, 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let loc = r.header("location")?;
    let loc = String::from_utf8_lossy(loc);
    let to_get =
        r.status == 303 || (matches!(r.status, 301 | 302) && method != "GET" && method != "HEAD");
    Some(Redirect {
        url: resolve_location(target, &loc),
        to_get,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_resolve_against_the_request() {
        let t = Target::parse("http://h:8/a/b?q=1").unwrap();
        assert_eq!(resolve_location(&t, "/x"), "http://h:8/x");
        assert_eq!(resolve_location(&t, "c"), "http://h:8/a/c");
        assert_eq!(resolve_location(&t, "https://o/p"), "https://o/p");
        assert_eq!(resolve_location(&t, "//o/p"), "http://o/p");
    }

    #[test]
    fn a_post_becomes_a_get_on_302_but_not_on_307() {
        let t = Target::parse("http://h/a").unwrap();
        let mut r = Response {
            status: 302,
            ..Default::default()
        };
        r.headers.push("Location", b"/b");
        let n = next(&t, "POST", &r).unwrap();
        assert_eq!((n.url.as_str(), n.to_get), ("http://h/b", true));
        r.status = 307;
        assert!(!next(&t, "POST", &r).unwrap().to_get);
        r.status = 200;
        assert_eq!(next(&t, "GET", &r), None);
    }
}
