//! `k6/http`'s native half: one request (plus redirects) on the VU's own connections,
//! recorded with k6's metric names and system tags, returned as a k6 Response object.
//!
//! Each VU keeps at most one idle keep-alive connection per origin (a VU sends one request
//! at a time, as in k6). Name lookups are cached per worker thread.

use crate::vu::VuState;
use rquickjs::function::Opt;
use rquickjs::{Ctx, Function, Object, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use volley_http::{
    BodyMode, ConnectTimings, Connection, ErrorClass, HttpError, Request, Response, Scheme, Target,
};
use volley_metrics::{Handle, MetricKey, MetricKind, Recorder, TagSet, Unit};

/// k6's default request timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// k6's default `maxRedirects`.
const DEFAULT_REDIRECTS: u32 = 10;

/// Run-wide HTTP settings (from options).
#[derive(Default)]
pub struct HttpConfig {
    pub(crate) insecure: AtomicBool,
    tls: OnceLock<Result<Arc<rustls::ClientConfig>, String>>,
}

impl HttpConfig {
    fn tls(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        self.tls
            .get_or_init(|| {
                let opts = volley_http::TlsOptions {
                    insecure: self.insecure.load(Ordering::Relaxed),
                    cacert: None,
                };
                volley_http::tls_config(&opts, &[b"http/1.1"])
            })
            .clone()
    }
}

/// A VU's idle connections, by origin.
#[derive(Default)]
pub(crate) struct VuHttp {
    idle: HashMap<String, Connection>,
}

/// The series one request records into, resolved once per tag set per worker.
#[derive(Clone, Copy)]
struct HttpHandles {
    reqs: Handle,
    duration: Handle,
    blocked: Handle,
    connecting: Handle,
    tls: Handle,
    sending: Handle,
    waiting: Handle,
    receiving: Handle,
    failed: Handle,
    sent: Handle,
    received: Handle,
}

impl HttpHandles {
    fn resolve(rec: &mut Recorder, tags: &TagSet) -> HttpHandles {
        let mut h = |name: &str, kind, unit| {
            rec.handle(
                MetricKey {
                    name: name.to_string(),
                    tags: tags.clone(),
                },
                kind,
                unit,
            )
        };
        let t = |h: &mut dyn FnMut(&str, MetricKind, Unit) -> Handle, n: &str| {
            h(n, MetricKind::Trend, Unit::Time)
        };
        HttpHandles {
            reqs: h("http_reqs", MetricKind::Counter, Unit::Default),
            duration: t(&mut h, "http_req_duration"),
            blocked: t(&mut h, "http_req_blocked"),
            connecting: t(&mut h, "http_req_connecting"),
            tls: t(&mut h, "http_req_tls_handshaking"),
            sending: t(&mut h, "http_req_sending"),
            waiting: t(&mut h, "http_req_waiting"),
            receiving: t(&mut h, "http_req_receiving"),
            failed: h("http_req_failed", MetricKind::Rate, Unit::Default),
            sent: h("data_sent", MetricKind::Counter, Unit::Data),
            received: h("data_received", MetricKind::Counter, Unit::Data),
        }
    }
}

/// Per worker thread: handle and DNS caches (VUs of a worker share its recorder).
#[derive(Default)]
struct WorkerCache {
    /// The recorder these handles belong to.
    owner: usize,
    handles: HashMap<TagSet, HttpHandles>,
    dns: HashMap<(String, u16), SocketAddr>,
}

thread_local! {
    static CACHE: RefCell<WorkerCache> = RefCell::new(WorkerCache::default());
}

fn with_cache<R>(rec: &Rc<RefCell<Recorder>>, f: impl FnOnce(&mut WorkerCache) -> R) -> R {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let owner = Rc::as_ptr(rec) as usize;
        if c.owner != owner {
            *c = WorkerCache {
                owner,
                ..WorkerCache::default()
            };
        }
        f(&mut c)
    })
}

/// k6's error codes for failed requests.
fn error_code(class: ErrorClass) -> u32 {
    match class {
        ErrorClass::Refused => 1212,
        ErrorClass::Timeout => 1050,
        ErrorClass::Reset => 1220,
        ErrorClass::Tls => 1300,
        ErrorClass::Dns => 1100,
        ErrorClass::Protocol | ErrorClass::Other => 1000,
    }
}

/// Go's canonical header names (what k6 shows in `res.headers`): `content-type` → `Content-Type`.
fn canonical(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        out.push(if upper {
            c.to_ascii_uppercase()
        } else {
            c.to_ascii_lowercase()
        });
        upper = c == '-';
    }
    out
}

/// Resolve a redirect's `Location` against the URL it came from.
fn resolve_location(base: &Target, loc: &str) -> String {
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

/// What one exchange produced.
struct Exchange {
    result: Result<Response, HttpError>,
    connect: Option<ConnectTimings>,
    conn: Option<Connection>,
    addr: Option<SocketAddr>,
}

/// Send `req` to `target`, on `conn` when it can be reused, else on a new connection.
async fn exchange(
    target: Target,
    req: Request,
    conn: Option<Connection>,
    cached_addr: Option<SocketAddr>,
    tls: Option<Arc<rustls::ClientConfig>>,
    timeout: Duration,
    mode: BodyMode,
) -> Exchange {
    let mut connect = None;
    let (mut conn, addr) = match conn.filter(|c| c.is_reusable()) {
        Some(c) => (c, cached_addr),
        None => {
            let addr = match cached_addr {
                Some(a) => a,
                None => match target.resolve().await {
                    Ok(a) => a[0],
                    Err(e) => {
                        return Exchange {
                            result: Err(e),
                            connect: None,
                            conn: None,
                            addr: None,
                        }
                    }
                },
            };
            match Connection::connect(addr, &target, tls.as_ref(), timeout).await {
                Ok((mut c, t)) => {
                    c.keep_headers(true);
                    connect = Some(t);
                    (c, Some(addr))
                }
                Err(e) => {
                    return Exchange {
                        result: Err(e),
                        connect: None,
                        conn: None,
                        addr: Some(addr),
                    }
                }
            }
        }
    };
    let result = conn.send(&req, mode, timeout).await;
    let keep = matches!(&result, Ok(r) if r.keep_alive) && conn.is_reusable();
    Exchange {
        result,
        connect,
        conn: keep.then_some(conn),
        addr,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Define `__volley.request(method, url, body, headers[], tags[], params)`.
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    v: &Object<'js>,
    st: &Rc<VuState>,
) -> rquickjs::Result<()> {
    let st = st.clone();
    #[allow(clippy::too_many_arguments)]
    let f = move |ctx: Ctx<'js>,
                  method: String,
                  url: String,
                  body: Option<String>,
                  headers: Vec<String>,
                  tags: Vec<String>,
                  params: Opt<Object<'js>>|
          -> rquickjs::Result<Object<'js>> {
        if st.in_init.get() {
            return Err(rquickjs::Exception::throw_message(
                &ctx,
                "making HTTP requests in the init context is not supported",
            ));
        }
        let get = |k: &str| -> rquickjs::Result<Option<Value<'js>>> {
            match &params.0 {
                Some(p) => Ok(p
                    .get::<_, Option<Value<'js>>>(k)?
                    .filter(|v| !v.is_undefined() && !v.is_null())),
                None => Ok(None),
            }
        };
        let redirects: i64 = match get("redirects")? {
            Some(v) => v.as_number().map_or(-1, |n| n as i64),
            None => -1,
        };
        let response_type: String = match get("responseType")? {
            Some(v) => v.get::<rquickjs::Coerced<String>>()?.0,
            None => "text".into(),
        };
        let timeout = match get("timeout")? {
            Some(t) if t.is_number() => {
                Duration::from_secs_f64(t.as_number().unwrap_or(0.0).max(0.0) / 1000.0)
            }
            Some(t) if t.is_string() => {
                let s: String = t.get()?;
                volley_engine::parse_duration(&s).map_err(|e| {
                    rquickjs::Exception::throw_type(&ctx, &format!("params.timeout: {e}"))
                })?
            }
            _ => DEFAULT_TIMEOUT,
        };
        let max_redirects = if redirects < 0 {
            DEFAULT_REDIRECTS
        } else {
            redirects as u32
        };
        let mode = if response_type == "none" {
            BodyMode::Discard
        } else {
            BodyMode::Keep
        };
        let header_pairs: Vec<(String, String)> = headers
            .chunks(2)
            .filter(|c| c.len() == 2)
            .map(|c| (c[0].clone(), c[1].clone()))
            .collect();
        let mut user_tags: Vec<(String, String)> = tags
            .chunks(2)
            .filter(|c| c.len() == 2)
            .map(|c| (c[0].clone(), c[1].clone()))
            .collect();
        let name_tag = user_tags
            .iter()
            .position(|(k, _)| k == "name")
            .map(|i| user_tags.remove(i).1);

        let out = Object::new(ctx.clone())?;
        let mut method = method;
        let mut url = url;
        let mut body = body;
        let mut hops = 0;
        loop {
            let target = match Target::parse(&url) {
                Ok(t) => t,
                Err(e) => {
                    // k6: error_code 1020, no metrics.
                    out.set("status", 0)?;
                    out.set("url", url.as_str())?;
                    out.set("error", e.0.as_str())?;
                    out.set("error_code", 1020)?;
                    out.set("body", Value::new_null(ctx.clone()))?;
                    out.set("headers", Object::new(ctx.clone())?)?;
                    return Ok(out);
                }
            };
            let payload = body.clone().map(|b| bytes::Bytes::from(b.into_bytes()));
            let req = match Request::new(
                &method,
                &target,
                &header_pairs,
                payload.map_or(volley_http::Body::Empty, volley_http::Body::Bytes),
                true,
            ) {
                Ok(r) => r,
                Err(e) => return Err(rquickjs::Exception::throw_type(&ctx, &e)),
            };
            let tls = match target.scheme {
                Scheme::Https => match st.shared.http.tls() {
                    Ok(c) => Some(c),
                    Err(e) => return Err(rquickjs::Exception::throw_message(&ctx, &e)),
                },
                Scheme::Http => None,
            };
            let origin = format!("{}://{}", target.scheme.as_str(), target.authority);
            let conn = st.http.borrow_mut().idle.remove(&origin);
            let key = (target.host.clone(), target.port);
            let cached = with_cache(&st.rec, |c| c.dns.get(&key).copied());
            let fut = exchange(target.clone(), req, conn, cached, tls, timeout, mode);
            let Some(ex) = st.wait(fut) else {
                return Err(rquickjs::Exception::throw_message(&ctx, "test interrupted"));
            };
            if let (Some(a), None) = (ex.addr, cached) {
                with_cache(&st.rec, |c| {
                    c.dns.insert(key, a);
                });
            }
            if let Some(c) = ex.conn {
                st.http.borrow_mut().idle.insert(origin, c);
            }
            // Tags as k6: method, url, name, status, expected_response, proto, group, scenario.
            let mut t = st.base_tags();
            let shown_url = target.url();
            t.insert("method".into(), method.clone());
            t.insert("url".into(), shown_url.clone());
            t.insert(
                "name".into(),
                name_tag.clone().unwrap_or_else(|| shown_url.clone()),
            );
            t.insert("proto".into(), "HTTP/1.1".into());
            for (k, v) in &user_tags {
                t.insert(k.clone(), v.clone());
            }
            let (status, err) = match &ex.result {
                Ok(r) => (r.status, None),
                Err(e) => (0, Some(e)),
            };
            let expected = (200..400).contains(&status);
            t.insert("status".into(), status.to_string());
            t.insert("expected_response".into(), expected.to_string());
            if let Some(e) = err {
                t.insert("error_code".into(), error_code(e.class).to_string());
            }
            let connect = ex.connect.unwrap_or_default();
            let timings = ex.result.as_ref().map(|r| r.timings).unwrap_or_default();
            let (sent, received) = match &ex.result {
                Ok(r) => (r.bytes_sent, r.bytes_received),
                Err(e) => (e.bytes_sent, e.bytes_received),
            };
            {
                let mut rec = st.rec.borrow_mut();
                let h = with_cache(&st.rec, |c| {
                    if let Some(h) = c.handles.get(&t) {
                        return *h;
                    }
                    let h = HttpHandles::resolve(&mut rec, &t);
                    c.handles.insert(t.clone(), h);
                    h
                });
                let us = |d: Duration| d.as_micros() as u64;
                rec.add(h.reqs, 1.0);
                rec.trend_us(h.duration, us(timings.duration()));
                rec.trend_us(h.blocked, 0);
                rec.trend_us(h.connecting, us(connect.connecting));
                rec.trend_us(h.tls, us(connect.tls_handshaking));
                rec.trend_us(h.sending, us(timings.sending));
                rec.trend_us(h.waiting, us(timings.waiting));
                rec.trend_us(h.receiving, us(timings.receiving));
                rec.rate(h.failed, !expected);
                rec.add(h.sent, sent as f64);
                rec.add(h.received, received as f64);
            }

            // Follow redirects as k6 does (each hop is its own request in the metrics).
            if let Ok(r) = &ex.result {
                if matches!(r.status, 301 | 302 | 303 | 307 | 308) && hops < max_redirects {
                    if let Some(loc) = r.header("location") {
                        let loc = String::from_utf8_lossy(loc).into_owned();
                        url = resolve_location(&target, &loc);
                        if r.status == 303
                            || (matches!(r.status, 301 | 302)
                                && method != "GET"
                                && method != "HEAD")
                        {
                            method = "GET".into();
                            body = None;
                        }
                        hops += 1;
                        continue;
                    }
                }
            }

            out.set("url", shown_url.as_str())?;
            out.set("proto", "HTTP/1.1")?;
            out.set("status", status)?;
            let tm = Object::new(ctx.clone())?;
            tm.set("duration", ms(timings.duration()))?;
            tm.set("blocked", 0.0)?;
            tm.set("connecting", ms(connect.connecting))?;
            tm.set("tls_handshaking", ms(connect.tls_handshaking))?;
            tm.set("sending", ms(timings.sending))?;
            tm.set("waiting", ms(timings.waiting))?;
            tm.set("receiving", ms(timings.receiving))?;
            out.set("timings", tm)?;
            let hdrs = Object::new(ctx.clone())?;
            let req_obj = Object::new(ctx.clone())?;
            req_obj.set("method", method.as_str())?;
            req_obj.set("url", shown_url.as_str())?;
            req_obj.set("body", body.as_deref().unwrap_or(""))?;
            out.set("request", req_obj)?;
            out.set("cookies", Object::new(ctx.clone())?)?;
            if let Some(a) = ex.addr {
                out.set("remote_ip", a.ip().to_string())?;
                out.set("remote_port", a.port())?;
            }
            match ex.result {
                Ok(r) => {
                    for (name, value) in &r.headers {
                        let k = canonical(name);
                        let v = String::from_utf8_lossy(value);
                        let joined = match hdrs.get::<_, Option<String>>(k.as_str())? {
                            Some(prev) => format!("{prev}, {v}"),
                            None => v.into_owned(),
                        };
                        hdrs.set(k, joined)?;
                    }
                    match r.body {
                        Some(b) if mode == BodyMode::Keep => {
                            out.set("body", String::from_utf8_lossy(&b).as_ref())?
                        }
                        _ => out.set("body", Value::new_null(ctx.clone()))?,
                    }
                    out.set("error", "")?;
                    out.set("error_code", 0)?;
                }
                Err(e) => {
                    out.set("body", Value::new_null(ctx.clone()))?;
                    out.set("error", e.to_string())?;
                    out.set("error_code", error_code(e.class))?;
                }
            }
            out.set("headers", hdrs)?;
            return Ok(out);
        }
    };
    v.set("request", Function::new(ctx.clone(), f)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_names_are_canonical() {
        assert_eq!(canonical("content-type"), "Content-Type");
        assert_eq!(canonical("X-REQUEST-ID"), "X-Request-Id");
    }

    #[test]
    fn locations_resolve_against_the_request() {
        let t = Target::parse("http://h:8/a/b?q=1").unwrap();
        assert_eq!(resolve_location(&t, "/x"), "http://h:8/x");
        assert_eq!(resolve_location(&t, "c"), "http://h:8/a/c");
        assert_eq!(resolve_location(&t, "https://o/p"), "https://o/p");
        assert_eq!(resolve_location(&t, "//o/p"), "http://o/p");
    }
}
