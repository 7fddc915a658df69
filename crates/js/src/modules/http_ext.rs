//! The per-request side of the `k6/http` extras: which cookie jar a request uses, the
//! cookies it sends and stores, what counts as an expected status, the request body's
//! bytes, and `res.cookies`.

use super::cookies::{parse_set_cookie, Jar};
use super::{bytes_of, throw, Expected};
use crate::vu::VuState;
use rquickjs::{Ctx, Object, Value};
use std::cell::RefCell;
use std::rc::Rc;
use volley_http::Target;

/// What a request's params add to it (read once per request, used on every hop).
#[derive(Default)]
pub(crate) struct Extras {
    /// `params.jar` (default: the VU's jar; `null`: none).
    jar: Option<Rc<RefCell<Jar>>>,
    /// `params.cookies`: (name, value, replace).
    cookies: Vec<(String, String, bool)>,
    /// `params.responseCallback` (outer `None`: the VU's `setResponseCallback`).
    callback: Option<Option<Expected>>,
    /// `params.responseType === "binary"`.
    pub(crate) binary: bool,
}

impl Extras {
    /// Read `params.jar`, `params.cookies`, `params.responseCallback`, `params.responseType`.
    pub(crate) fn from_params<'js>(
        ctx: &Ctx<'js>,
        st: &VuState,
        params: Option<&Object<'js>>,
    ) -> rquickjs::Result<Extras> {
        let vu_jar = || st.ext.jars.borrow().first().cloned();
        let Some(p) = params else {
            return Ok(Extras {
                jar: vu_jar(),
                ..Extras::default()
            });
        };
        let jar = match p.get::<_, Value<'js>>("jar")? {
            v if v.is_undefined() => vu_jar(),
            v if v.is_null() => None,
            v => {
                let id = v
                    .as_object()
                    .and_then(|o| o.get::<_, Option<usize>>("_id").ok().flatten())
                    .ok_or_else(|| throw(ctx, "params.jar must be an http.CookieJar"))?;
                st.ext.jars.borrow().get(id).cloned()
            }
        };
        let mut cookies = Vec::new();
        if let Some(o) = p.get::<_, Option<Object<'js>>>("cookies")? {
            for kv in o.props::<String, Value<'js>>() {
                let (name, v) = kv?;
                if let Some(c) = v.as_object() {
                    let value: rquickjs::Coerced<String> = c.get("value")?;
                    let replace = c.get::<_, Option<bool>>("replace")?.unwrap_or(false);
                    cookies.push((name, value.0, replace));
                } else if !v.is_undefined() && !v.is_null() {
                    cookies.push((name, v.get::<rquickjs::Coerced<String>>()?.0, false));
                }
            }
        }
        let callback = match p.get::<_, Value<'js>>("responseCallback")? {
            v if v.is_undefined() => None,
            v if v.is_null() => Some(None),
            v => {
                let ranges = v
                    .as_object()
                    .and_then(|o| o.get::<_, Value<'js>>("_ranges").ok())
                    .filter(|r| r.is_array())
                    .ok_or_else(|| {
                        throw(
                            ctx,
                            "params.responseCallback: use http.expectedStatuses(...)",
                        )
                    })?;
                Some(super::cookies::expected_of(Some(ranges))?)
            }
        };
        let binary = p
            .get::<_, Option<String>>("responseType")
            .ok()
            .flatten()
            .is_some_and(|t| t == "binary");
        Ok(Extras {
            jar,
            cookies,
            callback,
            binary,
        })
    }

    /// The `Cookie` header for a hop to `t`: jar cookies, then `params.cookies`.
    pub(crate) fn cookie_header(&self, t: &Target) -> Option<String> {
        let mut pairs: Vec<(String, String)> = match &self.jar {
            Some(j) => j
                .borrow()
                .for_target(t)
                .into_iter()
                .map(|c| (c.name.clone(), c.value.clone()))
                .collect(),
            None => Vec::new(),
        };
        for (name, value, replace) in &self.cookies {
            if *replace {
                pairs.retain(|(n, _)| n != name);
            }
            pairs.push((name.clone(), value.clone()));
        }
        if pairs.is_empty() {
            return None;
        }
        let parts: Vec<String> = pairs.iter().map(|(n, v)| format!("{n}={v}")).collect();
        Some(parts.join("; "))
    }

    /// Store a response's `Set-Cookie`s in the request's jar.
    pub(crate) fn store(&self, t: &Target, headers: &volley_http::Headers) {
        let Some(jar) = &self.jar else { return };
        let mut jar = jar.borrow_mut();
        for value in headers.get_all("set-cookie") {
            if let Some(c) = parse_set_cookie(&String::from_utf8_lossy(value), t) {
                jar.put(c);
            }
        }
    }

    /// Is `status` expected (k6's `expected_response`, the inverse of `http_req_failed`)?
    /// With no callback at all every status counts as expected.
    pub(crate) fn expected(&self, st: &VuState, status: u16) -> bool {
        let ok = |e: &Option<Expected>| e.as_ref().is_none_or(|e| e.matches(status));
        match &self.callback {
            Some(e) => ok(e),
            None => ok(&st.ext.expected.borrow()),
        }
    }
}

/// A request body as bytes: a string, an `ArrayBuffer` (the shim turns views into buffers).
pub(crate) fn body_bytes<'js>(
    ctx: &Ctx<'js>,
    v: Option<Value<'js>>,
) -> rquickjs::Result<Option<bytes::Bytes>> {
    match v {
        None => Ok(None),
        Some(v) if v.is_null() || v.is_undefined() => Ok(None),
        Some(v) => bytes_of(&v)
            .map(|b| Some(bytes::Bytes::from(b)))
            .ok_or_else(|| {
                throw(
                    ctx,
                    "a request body must be a string, an object or an ArrayBuffer",
                )
            }),
    }
}

/// `params.compression` ("gzip", "deflate", or a comma-separated chain of them): compress
/// the body and say so in `Content-Encoding`.
pub(crate) fn compress<'js>(
    ctx: &Ctx<'js>,
    params: &Object<'js>,
    body: &mut Option<bytes::Bytes>,
    headers: &mut Vec<String>,
) -> rquickjs::Result<()> {
    use std::io::Write;
    let Some(algs) = params.get::<_, Option<String>>("compression")? else {
        return Ok(());
    };
    let Some(b) = body.as_ref() else {
        return Ok(());
    };
    let mut data = b.to_vec();
    let mut used = Vec::new();
    for alg in algs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        let level = flate2::Compression::default();
        data = match alg {
            "gzip" => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), level);
                e.write_all(&data).and_then(|_| e.finish())
            }
            "deflate" => {
                let mut e = flate2::write::ZlibEncoder::new(Vec::new(), level);
                e.write_all(&data).and_then(|_| e.finish())
            }
            other => {
                return Err(throw(
                    ctx,
                    &format!("params.compression '{other}' is not supported (gzip, deflate)"),
                ))
            }
        }
        .map_err(|e| throw(ctx, &format!("compression failed: {e}")))?;
        used.push(alg);
    }
    if !used.is_empty() {
        headers.push("Content-Encoding".into());
        headers.push(used.join(", "));
        *body = Some(bytes::Bytes::from(data));
    }
    Ok(())
}

/// `res.cookies`: the response's `Set-Cookie`s as k6 shows them, `{name: [{name, value,
/// domain, path, http_only, secure, max_age, expires}]}`.
pub(crate) fn response_cookies<'js>(
    ctx: &Ctx<'js>,
    t: &Target,
    headers: &volley_http::Headers,
) -> rquickjs::Result<Object<'js>> {
    let out = Object::new(ctx.clone())?;
    for (name, value) in headers.iter() {
        if !name.eq_ignore_ascii_case("set-cookie") {
            continue;
        }
        let raw = String::from_utf8_lossy(value);
        let Some(c) = parse_set_cookie(&raw, t) else {
            continue;
        };
        let o = Object::new(ctx.clone())?;
        o.set("name", c.name.as_str())?;
        o.set("value", c.value.as_str())?;
        o.set("domain", c.domain.as_str())?;
        o.set("path", c.path.as_str())?;
        o.set("http_only", c.http_only)?;
        o.set("secure", c.secure)?;
        o.set("max_age", 0)?;
        o.set("expires", c.expires.unwrap_or(0) as f64 * 1000.0)?;
        let list = match out.get::<_, Option<rquickjs::Array<'js>>>(c.name.as_str())? {
            Some(a) => a,
            None => {
                let a = rquickjs::Array::new(ctx.clone())?;
                out.set(c.name.as_str(), a.clone())?;
                a
            }
        };
        list.set(list.len(), o)?;
    }
    Ok(out)
}
