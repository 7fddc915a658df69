//! Cookie jars for `k6/http` (RFC 6265 basics: domain, host-only, path, secure, expiry) and
//! the natives behind `http.cookieJar()`, `new http.CookieJar()` and `setResponseCallback`.
//!
//! Each VU owns jar 0, which k6 empties at the start of every iteration; `new CookieJar()`
//! makes further jars that live as long as the VU.

use super::{throw, Expected};
use rquickjs::function::Opt;
use rquickjs::{Ctx, Object, Value};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{SystemTime, UNIX_EPOCH};
use volley_http::{Scheme, Target};

use crate::vu::VuState;

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Cookie {
    pub(crate) name: String,
    pub(crate) value: String,
    pub(crate) domain: String,
    pub(crate) host_only: bool,
    pub(crate) path: String,
    pub(crate) secure: bool,
    pub(crate) http_only: bool,
    /// Unix seconds; `None` = session cookie.
    pub(crate) expires: Option<i64>,
}

#[derive(Default, Debug)]
pub(crate) struct Jar {
    cookies: Vec<Cookie>,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn request_path(t: &Target) -> &str {
    t.path_and_query.split('?').next().unwrap_or("/")
}

fn default_path(path: &str) -> String {
    match path.rfind('/') {
        Some(0) | None => "/".into(),
        Some(i) => path[..i].to_string(),
    }
}

fn path_matches(cookie_path: &str, req: &str) -> bool {
    req == cookie_path
        || (req.starts_with(cookie_path)
            && (cookie_path.ends_with('/') || req[cookie_path.len()..].starts_with('/')))
}

fn domain_matches(c: &Cookie, host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    if c.host_only {
        return host == c.domain;
    }
    host == c.domain || host.ends_with(&format!(".{}", c.domain))
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// `Thu, 01 Jan 1970 00:00:00 GMT` (and the `01-Jan-1970` variant) → unix seconds.
pub(crate) fn parse_http_date(s: &str) -> Option<i64> {
    let s = s.split_once(',').map_or(s, |(_, r)| r).trim();
    let parts: Vec<&str> = s.split([' ', '-']).filter(|p| !p.is_empty()).collect();
    if parts.len() < 4 {
        return None;
    }
    let day: i64 = parts[0].parse().ok()?;
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let mon = MONTHS
        .iter()
        .position(|m| parts[1].to_ascii_lowercase().starts_with(m))? as i64
        + 1;
    let mut year: i64 = parts[2].parse().ok()?;
    if year < 100 {
        year += if year < 70 { 2000 } else { 1900 };
    }
    let hms: Vec<i64> = parts[3].split(':').filter_map(|x| x.parse().ok()).collect();
    if hms.len() != 3 {
        return None;
    }
    Some(days_from_civil(year, mon, day) * 86400 + hms[0] * 3600 + hms[1] * 60 + hms[2])
}

/// Parse one `Set-Cookie` value as received from `t`. `None`: malformed or rejected.
pub(crate) fn parse_set_cookie(value: &str, t: &Target) -> Option<Cookie> {
    let mut parts = value.split(';');
    let (name, val) = parts.next()?.split_once('=')?;
    let name = name.trim();
    if name.is_empty() {
        return None;
    }
    let host = t.host.to_ascii_lowercase();
    let mut c = Cookie {
        name: name.to_string(),
        value: val.trim().trim_matches('"').to_string(),
        domain: host.clone(),
        host_only: true,
        path: default_path(request_path(t)),
        secure: false,
        http_only: false,
        expires: None,
    };
    let mut max_age = None;
    for attr in parts {
        let (k, v) = attr.split_once('=').unwrap_or((attr, ""));
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
        match k.as_str() {
            "domain" if !v.is_empty() => {
                let d = v.trim_start_matches('.').to_ascii_lowercase();
                // A server may only set cookies for its own domain or a parent of it.
                if host != d && !host.ends_with(&format!(".{d}")) {
                    return None;
                }
                c.domain = d;
                c.host_only = false;
            }
            "path" if v.starts_with('/') => c.path = v.to_string(),
            "secure" => c.secure = true,
            "httponly" => c.http_only = true,
            "max-age" => max_age = v.parse::<i64>().ok(),
            "expires" => c.expires = c.expires.or(parse_http_date(v)),
            _ => {}
        }
    }
    if let Some(m) = max_age {
        c.expires = Some(if m <= 0 { 0 } else { now() + m });
    }
    Some(c)
}

impl Jar {
    pub(crate) fn clear(&mut self) {
        self.cookies.clear();
    }

    /// Store (or, when expired, remove) a cookie.
    pub(crate) fn put(&mut self, c: Cookie) {
        self.cookies
            .retain(|o| !(o.name == c.name && o.domain == c.domain && o.path == c.path));
        if c.expires.is_none_or(|e| e > now()) {
            self.cookies.push(c);
        }
    }

    /// Cookies to send to `t`, longest path first (RFC 6265 order).
    pub(crate) fn for_target(&self, t: &Target) -> Vec<&Cookie> {
        // The common case (no cookies): no clock read.
        if self.cookies.is_empty() {
            return Vec::new();
        }
        let now = now();
        let path = request_path(t);
        let mut v: Vec<&Cookie> = self
            .cookies
            .iter()
            .filter(|c| {
                domain_matches(c, &t.host)
                    && path_matches(&c.path, path)
                    && (!c.secure || t.scheme == Scheme::Https)
                    && c.expires.is_none_or(|e| e > now)
            })
            .collect();
        v.sort_by_key(|c| std::cmp::Reverse(c.path.len()));
        v
    }

    fn remove_for(&mut self, t: &Target, name: Option<&str>) {
        let path = request_path(t);
        self.cookies.retain(|c| {
            !(domain_matches(c, &t.host)
                && path_matches(&c.path, path)
                && name.is_none_or(|n| n == c.name))
        });
    }
}

fn jar(st: &VuState, id: usize) -> Option<Rc<RefCell<Jar>>> {
    st.ext.jars.borrow().get(id).cloned()
}

fn target<'js>(ctx: &Ctx<'js>, url: &str) -> rquickjs::Result<Target> {
    Target::parse(url).map_err(|e| throw(ctx, &format!("invalid URL '{url}': {}", e.0)))
}

pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    v: &Object<'js>,
    st: &Rc<VuState>,
) -> rquickjs::Result<()> {
    {
        let st = st.clone();
        crate::rt::native(ctx, v, "jarNew", move || {
            let mut jars = st.ext.jars.borrow_mut();
            jars.push(Rc::default());
            jars.len() - 1
        })?;
    }
    {
        let st = st.clone();
        crate::rt::native(
            ctx,
            v,
            "jarSet",
            move |ctx: Ctx<'js>,
                  id: usize,
                  url: String,
                  name: String,
                  value: String,
                  opts: Opt<Object<'js>>|
                  -> rquickjs::Result<()> {
                let t = target(&ctx, &url)?;
                let mut c = parse_set_cookie(&format!("{name}={value}"), &t)
                    .ok_or_else(|| throw(&ctx, "invalid cookie"))?;
                if let Some(o) = opts.0 {
                    if let Some(d) = o.get::<_, Option<String>>("domain")? {
                        c.domain = d.trim_start_matches('.').to_ascii_lowercase();
                        c.host_only = false;
                    }
                    if let Some(p) = o.get::<_, Option<String>>("path")? {
                        c.path = p;
                    }
                    c.secure = o.get::<_, Option<bool>>("secure")?.unwrap_or(false);
                    c.http_only = o.get::<_, Option<bool>>("http_only")?.unwrap_or(false);
                    if let Some(e) = o.get::<_, Option<String>>("expires")? {
                        c.expires = parse_http_date(&e);
                    }
                    if let Some(m) = o.get::<_, Option<f64>>("max_age")? {
                        c.expires = Some(now() + m as i64);
                    }
                }
                if let Some(j) = jar(&st, id) {
                    j.borrow_mut().put(c);
                }
                Ok(())
            },
        )?;
    }
    {
        let st = st.clone();
        crate::rt::native(
            ctx,
            v,
            "jarGet",
            move |ctx: Ctx<'js>, id: usize, url: String| -> rquickjs::Result<Object<'js>> {
                let t = target(&ctx, &url)?;
                let out = Object::new(ctx.clone())?;
                if let Some(j) = jar(&st, id) {
                    for c in j.borrow().for_target(&t) {
                        let list =
                            match out.get::<_, Option<rquickjs::Array<'js>>>(c.name.as_str())? {
                                Some(a) => a,
                                None => {
                                    let a = rquickjs::Array::new(ctx.clone())?;
                                    out.set(c.name.as_str(), a.clone())?;
                                    a
                                }
                            };
                        list.set(list.len(), c.value.as_str())?;
                    }
                }
                Ok(out)
            },
        )?;
    }
    {
        let st = st.clone();
        crate::rt::native(
            ctx,
            v,
            "jarClear",
            move |ctx: Ctx<'js>,
                  id: usize,
                  url: String,
                  name: Opt<String>|
                  -> rquickjs::Result<()> {
                let t = target(&ctx, &url)?;
                if let Some(j) = jar(&st, id) {
                    j.borrow_mut().remove_for(&t, name.0.as_deref());
                }
                Ok(())
            },
        )?;
    }
    {
        let st = st.clone();
        crate::rt::native(
            ctx,
            v,
            "setExpected",
            move |ranges: Opt<Value<'js>>| -> rquickjs::Result<()> {
                *st.ext.expected.borrow_mut() = expected_of(ranges.0)?;
                Ok(())
            },
        )?;
    }
    Ok(())
}

/// `[[lo, hi], ...]` from the shim's `expectedStatuses` object → ranges (`null` = no callback).
pub(crate) fn expected_of(v: Option<Value<'_>>) -> rquickjs::Result<Option<Expected>> {
    let Some(arr) = v.and_then(|v| v.into_array()) else {
        return Ok(None);
    };
    let mut out = Vec::new();
    for r in arr.iter::<Vec<f64>>() {
        let r = r?;
        if r.len() == 2 {
            out.push((r[0].max(0.0) as u16, r[1].max(0.0) as u16));
        }
    }
    Ok(Some(Expected(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_match_domain_and_path() {
        let t = Target::parse("http://api.example.com/a/b").unwrap();
        let mut jar = Jar::default();
        jar.put(parse_set_cookie("s=1; Path=/", &t).unwrap());
        jar.put(parse_set_cookie("d=2", &t).unwrap()); // default path /a
        jar.put(parse_set_cookie("p=3; Domain=example.com; Path=/a", &t).unwrap());
        assert!(parse_set_cookie("x=1; Domain=other.com", &t).is_none());
        let names = |jar: &Jar, u: &str| {
            let t = Target::parse(u).unwrap();
            jar.for_target(&t)
                .iter()
                .map(|c| c.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&jar, "http://api.example.com/a/x"), ["d", "p", "s"]);
        assert_eq!(names(&jar, "http://api.example.com/"), ["s"]);
        assert_eq!(names(&jar, "http://www.example.com/a"), ["p"]);
        assert!(names(&jar, "http://example.org/").is_empty());
        jar.put(parse_set_cookie("s=; Max-Age=0; Path=/", &t).unwrap());
        assert_eq!(names(&jar, "http://api.example.com/"), Vec::<String>::new());
    }

    #[test]
    fn http_dates() {
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784111777)
        );
        assert_eq!(
            parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"),
            Some(784111777)
        );
    }
}
