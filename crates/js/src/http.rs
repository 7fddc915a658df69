//! `k6/http`'s native half: one request (plus redirects) on the VU's own connections,
//! recorded with k6's metric names and system tags, returned as a k6 Response object.
//!
//! Each VU keeps at most one idle keep-alive connection per origin (a VU sends one request
//! at a time, as in k6). Name lookups are cached per worker thread.

mod async_request;
mod debug;
pub(crate) use debug::mode as debug_mode;

use crate::vu::VuState;
use rquickjs::function::Opt;
use rquickjs::{Atom, Class, Ctx, Function, Object, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::Poll;
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

/// An idle keep-alive connection (boxed: it moves in and out of every request's future).
type Idle = (Rc<str>, Box<Connection>, Option<SocketAddr>);

/// Idle connections a VU keeps at most (one per origin; the oldest is closed beyond this).
const IDLE_MAX: usize = 64;

/// A VU's idle connections, by origin, and the requests it repeats, prepared once.
#[derive(Default)]
pub(crate) struct VuHttp {
    /// By origin: the prepared requests of one origin share its `Rc<str>`, found by pointer.
    idle: Vec<Idle>,
    /// Every origin this VU has prepared a request for, so equal origins share one `Rc`.
    origins: Vec<Rc<str>>,
    prepared: Vec<Prepared>,
    /// Round-robin slot to replace when `prepared` is full.
    next_slot: usize,
    /// Prepared requests made so far (each one's `id`).
    made: u64,
}

/// How many distinct requests a VU keeps prepared (scripts usually repeat a handful).
const PREPARED_MAX: usize = 32;
/// Series (group, status, error) remembered per prepared request.
const SERIES_MAX: usize = 16;

/// `res.proto` and the `proto` tag: the version the response came with.
const HTTP11: &str = "HTTP/1.1";
const HTTP10: &str = "HTTP/1.0";

/// A request as the script spelt it (method, URL, headers, tags), parsed, serialised and
/// tagged once: a VU that repeats it pays none of that again (see bench/k6.sh).
struct Prepared {
    /// Tells a slot's occupants apart (a hop finds its entry again without searching).
    id: u64,
    method: String,
    url: String,
    headers: Vec<String>,
    tags: Vec<String>,
    /// `Err`: the URL does not parse (k6 error 1020, no metrics).
    target: Result<Rc<Target>, String>,
    header_pairs: Vec<(String, String)>,
    /// The serialised request without a body, made on first use.
    bodyless: Option<Request>,
    origin: Rc<str>,
    /// Shared with every Response of this request (`res.url`, `res.request.url`).
    shown_url: Rc<str>,
    name_tag: Option<String>,
    user_tags: Vec<(String, String)>,
    /// (group id, status, expected, error code) → the series its samples go to, and the
    /// samples' full tags for raw outputs (only when the run has one).
    series: Vec<SeriesEntry>,
}

/// (group id, status, expected, error code, handles, raw tags): see [`Prepared::series`].
type SeriesEntry = (u32, u16, bool, u32, HttpHandles, Option<Arc<TagSet>>);

impl Prepared {
    fn new(method: &str, url: &str, headers: &[String], tags: &[String]) -> Prepared {
        let pairs = |v: &[String]| -> Vec<(String, String)> {
            v.chunks(2)
                .filter(|c| c.len() == 2)
                .map(|c| (c[0].clone(), c[1].clone()))
                .collect()
        };
        let mut user_tags = pairs(tags);
        let name_tag = user_tags
            .iter()
            .position(|(k, _)| k == "name")
            .map(|i| user_tags.remove(i).1);
        let target = Target::parse(url).map(Rc::new).map_err(|e| e.0);
        let (origin, shown_url) = match &target {
            Ok(t) => (format!("{}://{}", t.scheme.as_str(), t.authority), t.url()),
            Err(_) => (String::new(), url.to_string()),
        };
        Prepared {
            id: 0,
            method: method.to_string(),
            url: url.to_string(),
            headers: headers.to_vec(),
            tags: tags.to_vec(),
            target,
            header_pairs: pairs(headers),
            bodyless: None,
            origin: origin.into(),
            shown_url: shown_url.into(),
            name_tag,
            user_tags,
            series: Vec::new(),
        }
    }

    /// The handles for this request's samples with `status` / `err` in `group`, and their
    /// full tags when raw outputs (`--out json/csv`) need them.
    fn handles(
        &mut self,
        st: &VuState,
        group: u32,
        status: u16,
        expected: bool,
        err: u32,
        proto: Option<&'static str>,
    ) -> (HttpHandles, Option<Arc<TagSet>>) {
        // VU tags set by the script (k6/execution) can change at any time: no caching then;
        // nor for the rare HTTP/1.0 response (the cache key has no protocol).
        let cacheable = st.ext.tags.borrow().is_empty() && proto != Some(HTTP10);
        if let Some(s) = self
            .series
            .iter()
            .find(|s| cacheable && s.1 == status && s.2 == expected && s.3 == err && s.0 == group)
        {
            return (s.4, s.5.clone());
        }
        // Tags as k6: method, url, name, status, expected_response, proto, group, scenario.
        let mut t = st.base_tags();
        t.insert("method".into(), self.method.clone());
        t.insert("url".into(), self.shown_url.to_string());
        t.insert(
            "name".into(),
            self.name_tag
                .clone()
                .unwrap_or_else(|| self.shown_url.to_string()),
        );
        // No response, no version: k6 leaves the tag out of a failed request's samples.
        if let Some(p) = proto {
            t.insert("proto".into(), p.into());
        }
        for (k, v) in &self.user_tags {
            t.insert(k.clone(), v.clone());
        }
        t.insert("status".into(), status.to_string());
        t.insert("expected_response".into(), expected.to_string());
        if err != 0 {
            t.insert("error_code".into(), err.to_string());
        }
        let settings = st.shared.settings();
        settings.filter_system_tags(&mut t);
        let full = st.rec.borrow().has_sink().then(|| t.clone());
        // k6 groups by `name`: a named request's URL does not key its series (memory must
        // not grow with distinct URLs), unless a threshold selects by `url`. Raw outputs
        // still get it through `raw`.
        let keyed_by_url = self.name_tag.is_none() || settings.url_keys_series;
        if !keyed_by_url {
            t.remove("url");
        }
        let h = with_cache(&st.rec, |c| {
            if let Some(h) = c.handles.get(&t) {
                return *h;
            }
            let h = HttpHandles::resolve(&mut st.rec.borrow_mut(), &t);
            // Overflowed tag sets are not remembered: they would fill the cache for nothing.
            if !h.any_overflow(&st.rec.borrow()) {
                if c.handles.len() >= HANDLES_MAX {
                    c.handles.clear();
                }
                c.handles.insert(t, h);
            }
            h
        });
        // Raw outputs need the full tags only when the series' key differs from them.
        let raw = full
            .filter(|_| !keyed_by_url || h.any_overflow(&st.rec.borrow()))
            .map(Arc::new);
        if cacheable {
            if self.series.len() >= SERIES_MAX {
                self.series.remove(0);
            }
            self.series
                .push((group, status, expected, err, h, raw.clone()));
        }
        (h, raw)
    }
}

impl VuHttp {
    /// The idle connection to `origin`, if there is one.
    fn take_idle(&mut self, origin: &Rc<str>) -> Option<(Box<Connection>, Option<SocketAddr>)> {
        let i = self
            .idle
            .iter()
            .position(|(o, ..)| Rc::ptr_eq(o, origin) || **o == **origin)?;
        let (_, c, a) = self.idle.swap_remove(i);
        Some((c, a))
    }

    fn put_idle(&mut self, origin: Rc<str>, c: Box<Connection>, a: Option<SocketAddr>) {
        if self.idle.len() >= IDLE_MAX {
            self.idle.remove(0);
        }
        self.idle.push((origin, c, a));
    }

    /// The index of the prepared form of this request (made now if it is new).
    fn prepare(&mut self, method: &str, url: &str, headers: &[String], tags: &[String]) -> usize {
        if let Some(i) = self.prepared.iter().position(|p| {
            p.url == url && p.method == method && p.headers == headers && p.tags == tags
        }) {
            return i;
        }
        let mut p = Prepared::new(method, url, headers, tags);
        // Equal origins share one Rc (idle connections are found by pointer).
        match self.origins.iter().find(|o| ***o == *p.origin) {
            Some(o) => p.origin = o.clone(),
            None if self.origins.len() < 4 * PREPARED_MAX => self.origins.push(p.origin.clone()),
            None => {}
        }
        self.made += 1;
        p.id = self.made;
        if self.prepared.len() < PREPARED_MAX {
            self.prepared.push(p);
            self.prepared.len() - 1
        } else {
            let i = self.next_slot;
            self.next_slot = (i + 1) % PREPARED_MAX;
            self.prepared[i] = p;
            i
        }
    }
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
    /// Whether any of the metrics folded this tag set: each metric has its own guard count,
    /// and workers resolving at once can fold one metric of a request but not another.
    fn any_overflow(&self, rec: &Recorder) -> bool {
        [
            self.reqs,
            self.duration,
            self.blocked,
            self.connecting,
            self.tls,
            self.sending,
            self.waiting,
            self.receiving,
            self.failed,
            self.sent,
            self.received,
        ]
        .into_iter()
        .any(|h| rec.is_overflow(h))
    }

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

/// Tag sets whose handles a worker remembers (cleared when full: bounded, not an LRU).
const HANDLES_MAX: usize = 4096;
/// Host names whose address a worker remembers (cleared when full).
const DNS_MAX: usize = 1024;

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

/// A new iteration starts: with `noVUConnectionReuse`, the VU's connections are closed.
pub(crate) fn new_iteration(st: &VuState) {
    if st.shared.settings().no_vu_connection_reuse {
        st.http.borrow_mut().idle.clear();
    }
}

/// `options.hosts`: the address a host name is pinned to (`ip` keeps the URL's port).
fn pinned(host: &str, port: u16, hosts: &HashMap<String, String>) -> Option<SocketAddr> {
    if hosts.is_empty() {
        return None;
    }
    let a = hosts.get(&host.to_ascii_lowercase())?;
    a.parse::<SocketAddr>().ok().or_else(|| {
        a.parse::<std::net::IpAddr>()
            .ok()
            .map(|ip| SocketAddr::new(ip, port))
    })
}

/// Volley's error code for a response body over `maxResponseBodySize` (in k6's content
/// error range 17xx, which k6 uses only for 1701).
pub(crate) const BODY_TOO_LARGE_CODE: u32 = 1790;

/// k6's error codes for failed requests.
fn error_code(e: &HttpError) -> u32 {
    if e.is_body_too_large() {
        return BODY_TOO_LARGE_CODE;
    }
    if e.class == ErrorClass::Other && e.message.contains(") is in a blacklisted range (") {
        return 1110;
    }
    match e.class {
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
    conn: Option<Box<Connection>>,
    addr: Option<SocketAddr>,
}

/// Send `req` to `target`, on `conn` when it can be reused, else on a new connection.
#[allow(clippy::too_many_arguments)]
async fn exchange(
    target: Rc<Target>,
    req: Request,
    conn: Option<Box<Connection>>,
    cached_addr: Option<SocketAddr>,
    tls: Option<Arc<rustls::ClientConfig>>,
    timeout: Duration,
    mode: BodyMode,
    max_body: u64,
    blacklist: Arc<[crate::options::ipnet::IpNet]>,
) -> Exchange {
    let mut connect = None;
    let (mut conn, addr) = match conn.filter(|c| c.is_reusable()) {
        Some(c) => (c, cached_addr),
        None => {
            let addr = match cached_addr {
                Some(a) => a,
                None => match Box::pin(target.resolve()).await {
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
            // k6's blacklistIPs: checked on the address about to be dialled.
            if let Some(net) = blacklist.iter().find(|n| n.contains(addr.ip())) {
                let msg = format!("IP ({}) is in a blacklisted range ({net})", addr.ip());
                return Exchange {
                    result: Err(HttpError::new(ErrorClass::Other, msg)),
                    connect: None,
                    conn: None,
                    addr: None,
                };
            }
            // Boxed: the connect future (TLS handshake included) is big, and the exchange
            // future is moved onto the heap on every request, also when it reuses a connection.
            match Box::pin(Connection::connect(addr, &target, tls.as_ref(), timeout)).await {
                Ok((mut c, t)) => {
                    c.keep_headers(true);
                    connect = Some(t);
                    (Box::new(c), Some(addr))
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
    conn.set_max_body(Some(max_body));
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

/// Property names of the Response object, as atoms made once per VU (a string key would be
/// hashed and looked up in the runtime's atom table on every `set`).
struct Keys<'js> {
    status: Atom<'js>,
    url: Atom<'js>,
    proto: Atom<'js>,
    error: Atom<'js>,
    error_code: Atom<'js>,
    body: Atom<'js>,
    headers: Atom<'js>,
    method: Atom<'js>,
    duration: Atom<'js>,
    blocked: Atom<'js>,
    connecting: Atom<'js>,
    tls_handshaking: Atom<'js>,
    sending: Atom<'js>,
    waiting: Atom<'js>,
    receiving: Atom<'js>,
    redirects: Atom<'js>,
    response_type: Atom<'js>,
    timeout: Atom<'js>,
    tags: Atom<'js>,
}

/// What every Response gets, ready to store without a lookup or an allocation: the raw
/// atoms of its own properties (defined, not set: a set walks the prototype chain looking
/// for setters first), the strings that rarely change, and each prepared request's URL as
/// a JS string. Half of `finish_hop`'s cost was `Object::set` (bench/RESULTS.md, #4).
struct Fast<'js> {
    /// url, proto, status, body, error, error_code: the order every Response gets them in
    /// (one QuickJS shape for all).
    atoms: [rquickjs::qjs::JSAtom; 6],
    http11: Value<'js>,
    empty: Value<'js>,
    /// (prepared id, URL as shown) per prepared slot.
    urls: RefCell<Vec<Option<(u64, Value<'js>)>>>,
    /// An object with the Responses' prototype and their six properties: each Response is
    /// given its shape at once (`JS_VolleyAdoptShape`, vendor/rquickjs-sys/VOLLEY.md). Built
    /// property by property, a Response cost ~2,000 instructions more, and (QuickJS frees a
    /// shape with the last object that has it) its six shapes were built anew every time.
    template: RefCell<Option<(Option<Object<'js>>, Object<'js>)>>,
    /// The shim's `Response.prototype` and its `get` (for calls the native `get` leaves to
    /// it), from `__volley.httpInit`.
    proto: RefCell<Option<Object<'js>>>,
    get_slow: RefCell<Option<Function<'js>>>,
}

extern "C" {
    // Added to the vendored QuickJS (vendor/rquickjs-sys/VOLLEY.md).
    fn JS_VolleyAdoptShape(
        ctx: *mut rquickjs::qjs::JSContext,
        obj: rquickjs::qjs::JSValue,
        tmpl: rquickjs::qjs::JSValue,
        vals: *mut rquickjs::qjs::JSValue,
        count: std::ffi::c_int,
    ) -> std::ffi::c_int;
}

impl<'js> Fast<'js> {
    /// The template for Responses with prototype `proto` (made on first use).
    fn template(
        &self,
        ctx: &Ctx<'js>,
        proto: Option<&Object<'js>>,
    ) -> rquickjs::Result<Object<'js>> {
        let mut t = self.template.borrow_mut();
        if let Some((p, o)) = &*t {
            if p.as_ref() == proto {
                return Ok(o.clone());
            }
        }
        let o = Object::new_proto(ctx.clone(), proto)?;
        for &a in &self.atoms {
            define_raw(ctx, &o, a, int(0))?;
        }
        *t = Some((proto.cloned(), o.clone()));
        Ok(o)
    }

    /// Give `out` (a new Response) its six properties, in `atoms`' order.
    fn fill(
        &self,
        ctx: &Ctx<'js>,
        out: &Object<'js>,
        proto: Option<&Object<'js>>,
        vals: [&Value<'js>; 6],
    ) -> rquickjs::Result<()> {
        let tmpl = self.template(ctx, proto)?;
        let c = ctx.as_raw().as_ptr();
        // SAFETY: every value belongs to this context; the function takes over the
        // references made here (and frees them if it refuses).
        let mut raw = vals.map(|v| unsafe { rquickjs::qjs::JS_DupValue(c, v.as_raw()) });
        let r = unsafe { JS_VolleyAdoptShape(c, out.as_raw(), tmpl.as_raw(), raw.as_mut_ptr(), 6) };
        if r == 0 {
            return Ok(());
        }
        // Not expected (a Response is a fresh object of that prototype); defined one by one.
        for (&a, v) in self.atoms.iter().zip(vals) {
            define(ctx, out, a, v)?;
        }
        Ok(())
    }
}

// SAFETY: `Keys` holds only `'js` values; `Changed` just renames the lifetime.
unsafe impl<'js> rquickjs::JsLifetime<'js> for Keys<'js> {
    type Changed<'to> = Keys<'to>;
}

// SAFETY: as for `Keys`.
unsafe impl<'js> rquickjs::JsLifetime<'js> for Fast<'js> {
    type Changed<'to> = Fast<'to>;
}

/// The raw id of an atom. Atoms are interned: asking for the same name again returns the
/// same id; the reference taken here is given back at once, `a` keeps the atom alive.
fn raw_atom<'js>(ctx: &Ctx<'js>, a: &Atom<'js>) -> rquickjs::Result<rquickjs::qjs::JSAtom> {
    let name = a.to_string()?;
    let c = ctx.as_raw().as_ptr();
    // SAFETY: `c` is this live context; the name is a valid UTF-8 buffer of that length.
    unsafe {
        let id = rquickjs::qjs::JS_NewAtomLen(c, name.as_ptr().cast(), name.len() as _);
        rquickjs::qjs::JS_FreeAtom(c, id);
        Ok(id)
    }
}

/// Define `obj[atom] = v` as an own, writable, enumerable, configurable property.
fn define<'js>(
    ctx: &Ctx<'js>,
    obj: &Object<'js>,
    atom: rquickjs::qjs::JSAtom,
    v: &Value<'js>,
) -> rquickjs::Result<()> {
    // SAFETY: `v` belongs to this context; the property gets its own reference.
    let raw = unsafe { rquickjs::qjs::JS_DupValue(ctx.as_raw().as_ptr(), v.as_raw()) };
    define_raw(ctx, obj, atom, raw)
}

/// A small integer as a JS value (no reference to count).
fn int(n: i32) -> rquickjs::qjs::JSValue {
    rquickjs::qjs::JS_MKVAL(rquickjs::qjs::JS_TAG_INT, n)
}

/// [`define`] with a raw value whose reference the property takes over.
fn define_raw<'js>(
    ctx: &Ctx<'js>,
    obj: &Object<'js>,
    atom: rquickjs::qjs::JSAtom,
    raw: rquickjs::qjs::JSValue,
) -> rquickjs::Result<()> {
    // SAFETY: `obj` and `raw` belong to this context; `atom` is kept alive by `Keys`.
    let r = unsafe {
        rquickjs::qjs::JS_DefinePropertyValue(
            ctx.as_raw().as_ptr(),
            obj.as_raw(),
            atom,
            raw,
            rquickjs::qjs::JS_PROP_C_W_E as _,
        )
    };
    // An exception (out of memory) stays pending in the context, as rquickjs expects.
    if r < 0 {
        return Err(rquickjs::Error::Exception);
    }
    Ok(())
}

impl<'js> Keys<'js> {
    fn fast(ctx: &Ctx<'js>, k: &Keys<'js>) -> rquickjs::Result<Fast<'js>> {
        let atoms = [
            raw_atom(ctx, &k.url)?,
            raw_atom(ctx, &k.proto)?,
            raw_atom(ctx, &k.status)?,
            raw_atom(ctx, &k.body)?,
            raw_atom(ctx, &k.error)?,
            raw_atom(ctx, &k.error_code)?,
        ];
        Ok(Fast {
            atoms,
            http11: rquickjs::String::from_str(ctx.clone(), "HTTP/1.1")?.into_value(),
            empty: rquickjs::String::from_str(ctx.clone(), "")?.into_value(),
            urls: RefCell::new(Vec::new()),
            template: RefCell::new(None),
            proto: RefCell::new(None),
            get_slow: RefCell::new(None),
        })
    }

    fn new(ctx: &Ctx<'js>) -> rquickjs::Result<Keys<'js>> {
        let a = |n: &str| Atom::from_str(ctx.clone(), n);
        Ok(Keys {
            status: a("status")?,
            url: a("url")?,
            proto: a("proto")?,
            error: a("error")?,
            error_code: a("error_code")?,
            body: a("body")?,
            headers: a("headers")?,
            method: a("method")?,
            duration: a("duration")?,
            blocked: a("blocked")?,
            connecting: a("connecting")?,
            tls_handshaking: a("tls_handshaking")?,
            sending: a("sending")?,
            waiting: a("waiting")?,
            receiving: a("receiving")?,
            redirects: a("redirects")?,
            response_type: a("responseType")?,
            timeout: a("timeout")?,
            tags: a("tags")?,
        })
    }
}

/// One request as the script asked for it, read from its arguments once (a batch is a list
/// of these).
struct Spec {
    method: String,
    url: String,
    body: Option<bytes::Bytes>,
    headers: Vec<String>,
    tags: Vec<String>,
    mode: BodyMode,
    timeout: Duration,
    max_redirects: u32,
    hops: u32,
    extras: crate::modules::http_ext::Extras,
}

/// A hop whose exchange is under way: what [`finish_hop`] needs once it is done.
struct Hop {
    /// The prepared request's slot and id (see [`Prepared::id`]).
    slot: (usize, u64),
    target: Rc<Target>,
    origin: Rc<str>,
    cached: Option<SocketAddr>,
    had_conn: bool,
}

type ExchangeFuture = Pin<Box<dyn Future<Output = Exchange>>>;

enum Started<'js> {
    /// The URL does not parse: the Response is ready (k6 error 1020, no metrics).
    Done(Object<'js>),
    Go(Hop, ExchangeFuture),
}

/// Read a request's arguments and params.
#[allow(clippy::too_many_arguments)]
fn parse_spec<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    k: &Keys<'js>,
    method: String,
    url: String,
    body: Option<Value<'js>>,
    headers: Vec<String>,
    params: Option<Object<'js>>,
) -> rquickjs::Result<Spec> {
    let get = |key: &Atom<'js>| -> rquickjs::Result<Option<Value<'js>>> {
        match &params {
            Some(p) => Ok(p
                .get::<_, Option<Value<'js>>>(key.clone())?
                .filter(|v| !v.is_undefined() && !v.is_null())),
            None => Ok(None),
        }
    };
    // params.tags, flattened to [k, v, ...] (the request's cache key).
    let mut tags: Vec<String> = Vec::new();
    if let Some(o) = get(&k.tags)?.and_then(|v| v.into_object()) {
        for kv in o.props::<String, Value<'js>>() {
            let (key, v) = kv?;
            if !v.is_undefined() && !v.is_null() {
                tags.push(key);
                tags.push(v.get::<rquickjs::Coerced<String>>()?.0);
            }
        }
    }
    let redirects: i64 = match get(&k.redirects)? {
        Some(v) => v.as_number().map_or(-1, |n| n as i64),
        None => -1,
    };
    let settings = st.shared.settings();
    let mode = match get(&k.response_type)? {
        Some(v) if v.get::<rquickjs::Coerced<String>>()?.0 == "none" => BodyMode::Discard,
        None if settings.discard_response_bodies => BodyMode::Discard,
        _ => BodyMode::Keep,
    };
    let timeout = match get(&k.timeout)? {
        Some(t) if t.is_number() => {
            volley_engine::clamp_secs(t.as_number().unwrap_or(0.0) / 1000.0)
        }
        Some(t) if t.is_string() => {
            let s: String = t.get()?;
            volley_engine::parse_duration(&s).map_err(|e| {
                rquickjs::Exception::throw_type(ctx, &format!("params.timeout: {e}"))
            })?
        }
        _ => DEFAULT_TIMEOUT,
    };
    let max_redirects = if redirects < 0 {
        settings.max_redirects.unwrap_or(DEFAULT_REDIRECTS)
    } else {
        redirects as u32
    };
    let extras = crate::modules::http_ext::Extras::from_params(ctx, st, params.as_ref())?;
    let mut headers = headers;
    let mut body = crate::modules::http_ext::body_bytes(ctx, body)?;
    if let Some(p) = &params {
        crate::modules::http_ext::compress(ctx, p, &mut body, &mut headers)?;
    }
    Ok(Spec {
        method,
        url,
        body,
        headers,
        tags,
        mode,
        timeout,
        max_redirects,
        hops: 0,
        extras,
    })
}

fn new_response<'js>(ctx: &Ctx<'js>, proto: Option<&Object<'js>>) -> rquickjs::Result<Object<'js>> {
    Object::new_proto(ctx.clone(), proto)
}

/// Build the next hop's request and start its exchange (nothing waits here).
fn start_hop<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    k: &Keys<'js>,
    spec: &Spec,
    proto: Option<&Object<'js>>,
) -> rquickjs::Result<Started<'js>> {
    let settings = st.shared.settings();
    let (method, url, body) = (&spec.method, &spec.url, &spec.body);
    let i = st
        .http
        .borrow_mut()
        .prepare(method, url, &spec.headers, &spec.tags);
    let (target, req, origin, conn) = {
        let mut http = st.http.borrow_mut();
        let p = &mut http.prepared[i];
        // k6's blockHostnames: refused before any connection, error_code 1111.
        let blocked = match &p.target {
            Ok(t) => settings
                .blocked_hostname(&t.host)
                .map(|m| format!("hostname ({}) is in a blocked pattern ({m})", t.host)),
            Err(_) => None,
        };
        let target = match (&p.target, blocked) {
            (Ok(t), None) => t.clone(),
            (Ok(_), Some(e)) => {
                let out = new_response(ctx, proto)?;
                out.set(k.status.clone(), 0)?;
                out.set(k.url.clone(), url.as_str())?;
                out.set(k.error.clone(), e.as_str())?;
                out.set(k.error_code.clone(), 1111)?;
                out.set(k.body.clone(), Value::new_null(ctx.clone()))?;
                out.set(k.headers.clone(), Object::new(ctx.clone())?)?;
                return Ok(Started::Done(out));
            }
            (Err(e), _) => {
                // k6: error_code 1020, no metrics.
                let out = new_response(ctx, proto)?;
                out.set(k.status.clone(), 0)?;
                out.set(k.url.clone(), url.as_str())?;
                out.set(k.error.clone(), e.as_str())?;
                out.set(k.error_code.clone(), 1020)?;
                out.set(k.body.clone(), Value::new_null(ctx.clone()))?;
                out.set(k.headers.clone(), Object::new(ctx.clone())?)?;
                return Ok(Started::Done(out));
            }
        };
        if let Some(ua) = &settings.user_agent {
            if !p
                .header_pairs
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("user-agent"))
            {
                p.header_pairs.push(("User-Agent".into(), ua.clone()));
            }
        }
        // Cookies from the jar and params.cookies: such a request is never cached.
        let cookie = spec.extras.cookie_header(&target);
        let req = match (body, &p.bodyless, &cookie) {
            (None, Some(r), None) => r.clone(),
            _ => {
                let mut pairs;
                let headers = match &cookie {
                    Some(c) => {
                        pairs = p.header_pairs.clone();
                        pairs.retain(|(k, _)| !k.eq_ignore_ascii_case("cookie"));
                        pairs.push(("Cookie".into(), c.clone()));
                        &pairs
                    }
                    None => &p.header_pairs,
                };
                let r = Request::new(
                    method,
                    &target,
                    headers,
                    body.clone()
                        .map_or(volley_http::Body::Empty, volley_http::Body::Bytes),
                    true,
                )
                .map_err(|e| rquickjs::Exception::throw_type(ctx, &e))?;
                if body.is_none() && cookie.is_none() {
                    p.bodyless = Some(r.clone());
                }
                r
            }
        };
        if let Some(full) = settings.http_debug {
            debug::request(st, &req, body.as_deref(), full);
        }
        let origin = p.origin.clone();
        let conn = http.take_idle(&origin);
        (target, req, origin, conn)
    };
    let tls = match target.scheme {
        Scheme::Https => match st.shared.http.tls() {
            Ok(c) => Some(c),
            Err(e) => return Err(rquickjs::Exception::throw_message(ctx, &e)),
        },
        Scheme::Http => None,
    };
    let (conn, cached) = match conn {
        Some((c, a)) => (Some(c), a),
        None => {
            let key = (target.host.clone(), target.port);
            let pin = pinned(&target.host, target.port, &settings.hosts);
            (
                None,
                pin.or_else(|| with_cache(&st.rec, |c| c.dns.get(&key).copied())),
            )
        }
    };
    let had_conn = conn.is_some();
    let fut = exchange(
        target.clone(),
        req,
        conn,
        cached,
        tls,
        spec.timeout,
        spec.mode,
        settings.max_response_body,
        settings.blacklist_ips.clone(),
    );
    let slot = (i, st.http.borrow().prepared[i].id);
    Ok(Started::Go(
        Hop {
            slot,
            target,
            origin,
            cached,
            had_conn,
        },
        Box::pin(fut),
    ))
}

/// Record a finished hop; follow a redirect (`None`: start the next hop) or build the Response.
fn finish_hop<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    spec: &mut Spec,
    hop: Hop,
    ex: Exchange,
    proto: Option<&Object<'js>>,
) -> rquickjs::Result<Option<Object<'js>>> {
    let settings = st.shared.settings();
    let target = hop.target;
    if let (Some(a), None, false) = (ex.addr, hop.cached, hop.had_conn) {
        with_cache(&st.rec, |c| {
            if c.dns.len() >= DNS_MAX {
                c.dns.clear();
            }
            c.dns.insert((target.host.clone(), target.port), a);
        });
    }
    if let Some(c) = ex.conn.filter(|_| !settings.no_connection_reuse) {
        st.http.borrow_mut().put_idle(hop.origin, c, ex.addr);
    }
    if let Ok(r) = &ex.result {
        spec.extras.store(&target, &r.headers);
        if let Some(full) = settings.http_debug {
            debug::response(st, r, full);
        }
    }
    let (status, err) = match &ex.result {
        Ok(r) => (r.status, None),
        Err(e) => (0, Some(e)),
    };
    let expected = spec.extras.expected(st, status);
    let code = err.map_or(0, error_code);
    // The response's own version (k6's `res.proto` and `proto` tag; "" and no tag on error).
    let version = match &ex.result {
        Ok(r) if r.version_minor == 0 => Some(HTTP10),
        Ok(_) => Some(HTTP11),
        Err(_) => None,
    };
    let connect = ex.connect.unwrap_or_default();
    let timings = ex.result.as_ref().map(|r| r.timings).unwrap_or_default();
    let (sent, received) = match &ex.result {
        Ok(r) => (r.bytes_sent, r.bytes_received),
        Err(e) => (e.bytes_sent, e.bytes_received),
    };
    // Found again: in a batch another request may have taken the slot meanwhile.
    let (slot, id) = hop.slot;
    let same = st
        .http
        .borrow()
        .prepared
        .get(slot)
        .is_some_and(|p| p.id == id);
    let i = if same {
        slot
    } else {
        st.http
            .borrow_mut()
            .prepare(&spec.method, &spec.url, &spec.headers, &spec.tags)
    };
    {
        let (h, raw) = {
            let group = st.group_id.get();
            st.http.borrow_mut().prepared[i].handles(st, group, status, expected, code, version)
        };
        let mut rec = st.rec.borrow_mut();
        let raw_out = raw.is_some();
        if raw_out {
            rec.set_sample_tags(raw);
        }
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
        if raw_out {
            rec.set_sample_tags(None);
        }
    }

    // Follow redirects as k6 does (each hop is its own request in the metrics).
    if let Ok(r) = &ex.result {
        if matches!(r.status, 301 | 302 | 303 | 307 | 308) && spec.hops < spec.max_redirects {
            if let Some(loc) = r.header("location") {
                let loc = String::from_utf8_lossy(loc).into_owned();
                spec.url = resolve_location(&target, &loc);
                if r.status == 303
                    || (matches!(r.status, 301 | 302)
                        && spec.method != "GET"
                        && spec.method != "HEAD")
                {
                    spec.method = "GET".into();
                    spec.body = None;
                }
                spec.hops += 1;
                return Ok(None);
            }
        }
    }

    let (shown_url, prepared_id) = {
        let http = st.http.borrow();
        (http.prepared[i].shown_url.clone(), http.prepared[i].id)
    };
    let ms_all = [
        ms(timings.duration()),
        0.0,
        ms(connect.connecting),
        ms(connect.tls_handshaking),
        ms(timings.sending),
        ms(timings.waiting),
        ms(timings.receiving),
    ];
    let (headers, body, error) = match ex.result {
        Ok(r) => (r.headers, r.body, None),
        Err(e) => (volley_http::Headers::default(), None, Some(e)),
    };
    // headers, timings, request, cookies, remote_ip/port are built when first read (see
    // RawResponse); the rest are plain properties.
    let raw = RawResponse {
        timings: ms_all,
        headers,
        method: spec.method.clone(),
        url: shown_url.clone(),
        sent_body: spec.body.clone(),
        addr: ex.addr,
        target: target.clone(),
    };
    let out = match proto {
        Some(p) => Class::instance_proto(raw, p.clone())?.into_inner(),
        None => Class::instance(ctx.clone(), raw)?.into_inner(),
    };
    let Some(f) = ctx.userdata::<Fast>() else {
        return Err(rquickjs::Exception::throw_internal(ctx, "no Response keys"));
    };
    let url = {
        let mut urls = f.urls.borrow_mut();
        match urls.get(i) {
            Some(Some((pid, v))) if *pid == prepared_id => v.clone(),
            _ => {
                let v = rquickjs::String::from_str(ctx.clone(), &shown_url)?.into_value();
                // Grown on demand (most VUs repeat one or two URLs; each VU pays for this).
                if urls.len() <= i {
                    urls.resize(i + 1, None);
                }
                urls[i] = Some((prepared_id, v.clone()));
                v
            }
        }
    };
    let status = Value::new_int(ctx.clone(), status as i32);
    let (body, error, code) = match error {
        None => {
            let body = match body {
                Some(b) if spec.mode == BodyMode::Keep && spec.extras.binary => {
                    rquickjs::ArrayBuffer::new(ctx.clone(), b)?.into_value()
                }
                Some(b) if spec.mode == BodyMode::Keep => match std::str::from_utf8(&b) {
                    Ok(text) => rquickjs::String::from_str(ctx.clone(), text)?.into_value(),
                    Err(_) => {
                        rquickjs::String::from_str(ctx.clone(), &String::from_utf8_lossy(&b))?
                            .into_value()
                    }
                },
                _ => Value::new_null(ctx.clone()),
            };
            (body, f.empty.clone(), Value::new_int(ctx.clone(), 0))
        }
        Some(e) => (
            Value::new_null(ctx.clone()),
            rquickjs::String::from_str(ctx.clone(), &e.to_string())?.into_value(),
            Value::new_int(ctx.clone(), error_code(&e) as i32),
        ),
    };
    let version = match version {
        Some(HTTP11) => f.http11.clone(),
        Some(v) => rquickjs::String::from_str(ctx.clone(), v)?.into_value(),
        None => f.empty.clone(),
    };
    f.fill(
        ctx,
        &out,
        proto,
        [&url, &version, &status, &body, &error, &code],
    )?;
    Ok(Some(out))
}

/// The parts of a k6 Response that scripts rarely read, kept in Rust and turned into JS
/// only when read: `Response.prototype` has getters for `headers`, `timings`, `request`,
/// `cookies`, `remote_ip` and `remote_port` (k6_http.js) that call
/// `__volley.responseField(res, i)` once and then define the value on the response itself.
/// Building all of them for every response was most of a request's JS cost.
pub(crate) struct RawResponse {
    /// duration, blocked, connecting, tls_handshaking, sending, waiting, receiving (ms).
    timings: [f64; 7],
    headers: volley_http::Headers,
    method: String,
    url: Rc<str>,
    sent_body: Option<bytes::Bytes>,
    addr: Option<SocketAddr>,
    target: Rc<Target>,
}

// SAFETY: no JS values inside; the lifetime is only renamed.
unsafe impl<'js> rquickjs::JsLifetime<'js> for RawResponse {
    type Changed<'to> = RawResponse;
}

impl<'js> rquickjs::class::Trace<'js> for RawResponse {
    fn trace<'a>(&self, _tracer: rquickjs::class::Tracer<'a, 'js>) {}
}

impl<'js> rquickjs::class::JsClass<'js> for RawResponse {
    const NAME: &'static str = "Response";
    type Mutable = rquickjs::class::Readable;

    fn constructor(
        _ctx: &Ctx<'js>,
    ) -> rquickjs::Result<Option<rquickjs::function::Constructor<'js>>> {
        Ok(None)
    }
}

/// `__volley.responseField(res, i)`: field `i` of [`RawResponse`] as JS, or `undefined`
/// when `res` is not a Response made by `request`.
fn response_field<'js>(ctx: &Ctx<'js>, res: &Value<'js>, i: u32) -> rquickjs::Result<Value<'js>> {
    let Some(c) = res.as_object().and_then(Class::<RawResponse>::from_object) else {
        return Ok(Value::new_undefined(ctx.clone()));
    };
    let r = c.borrow();
    let Some(k) = ctx.userdata::<Keys>() else {
        return Ok(Value::new_undefined(ctx.clone()));
    };
    Ok(match i {
        0 => {
            let hdrs = Object::new(ctx.clone())?;
            for (name, value) in r.headers.iter() {
                let key = canonical(name);
                let v = String::from_utf8_lossy(value);
                let joined = match hdrs.get::<_, Option<String>>(key.as_str())? {
                    Some(prev) => format!("{prev}, {v}"),
                    None => v.into_owned(),
                };
                hdrs.set(key, joined)?;
            }
            hdrs.into_value()
        }
        1 => {
            let tm = Object::new(ctx.clone())?;
            let names = [
                &k.duration,
                &k.blocked,
                &k.connecting,
                &k.tls_handshaking,
                &k.sending,
                &k.waiting,
                &k.receiving,
            ];
            for (name, v) in names.into_iter().zip(r.timings) {
                tm.set(name.clone(), v)?;
            }
            tm.into_value()
        }
        2 => {
            let req = Object::new(ctx.clone())?;
            req.set(k.method.clone(), r.method.as_str())?;
            req.set(k.url.clone(), &*r.url)?;
            let sent = r.sent_body.as_deref().unwrap_or_default();
            req.set(k.body.clone(), String::from_utf8_lossy(sent).as_ref())?;
            req.into_value()
        }
        3 => crate::modules::http_ext::response_cookies(ctx, &r.target, &r.headers)?.into_value(),
        4 => match r.addr {
            Some(a) => rquickjs::String::from_str(ctx.clone(), &a.ip().to_string())?.into_value(),
            None => Value::new_undefined(ctx.clone()),
        },
        5 => match r.addr {
            Some(a) => Value::new_int(ctx.clone(), a.port() as i32),
            None => Value::new_undefined(ctx.clone()),
        },
        _ => Value::new_undefined(ctx.clone()),
    })
}

/// Wait for every future at once (a batch's hops run concurrently on the VU's thread).
async fn join_all<T>(futs: Vec<Pin<Box<dyn Future<Output = T>>>>) -> Vec<T> {
    let mut futs: Vec<Option<Pin<Box<dyn Future<Output = T>>>>> =
        futs.into_iter().map(Some).collect();
    let mut out: Vec<Option<T>> = futs.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx| {
        let mut pending = false;
        for (slot, done) in futs.iter_mut().zip(out.iter_mut()) {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => {
                        *done = Some(v);
                        *slot = None;
                    }
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(out.iter_mut().filter_map(Option::take).collect())
        }
    })
    .await
}

fn interrupted(ctx: &Ctx<'_>) -> rquickjs::Error {
    rquickjs::Exception::throw_message(ctx, "test interrupted")
}

fn init_refused(ctx: &Ctx<'_>) -> rquickjs::Error {
    rquickjs::Exception::throw_message(
        ctx,
        "making HTTP requests in the init context is not supported",
    )
}

/// The shim's `Response.prototype`, as `__volley.httpInit` registered it.
fn response_proto<'js>(ctx: &Ctx<'js>) -> Option<Object<'js>> {
    ctx.userdata::<Fast>()
        .and_then(|f| f.proto.borrow().clone())
}

/// One request (and its redirects) as the script asked for it: the Response object.
#[allow(clippy::too_many_arguments)]
fn request<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    method: String,
    url: String,
    body: Option<Value<'js>>,
    headers: Vec<String>,
    params: Option<Object<'js>>,
    proto: Option<&Object<'js>>,
) -> rquickjs::Result<Object<'js>> {
    if st.in_init.get() {
        return Err(init_refused(ctx));
    }
    let Some(k) = ctx.userdata::<Keys>() else {
        return Err(rquickjs::Exception::throw_internal(ctx, "no Response keys"));
    };
    let mut spec = parse_spec(ctx, st, &k, method, url, body, headers, params)?;
    let out = loop {
        // k6's rps: every request (each redirect hop too) takes a slot of the run's limiter.
        if let Some(l) = &st.shared.settings().rps {
            let d = l.reserve();
            if !d.is_zero() {
                st.wait_idle(tokio::time::sleep(d))
                    .ok_or_else(|| interrupted(ctx))?;
            }
        }
        match start_hop(ctx, st, &k, &spec, proto)? {
            Started::Done(out) => break out,
            Started::Go(hop, fut) => {
                let ex = st.wait(fut).ok_or_else(|| interrupted(ctx))?;
                if let Some(out) = finish_hop(ctx, st, &mut spec, hop, ex, proto)? {
                    break out;
                }
            }
        }
    };
    // k6's `throw` option: a request that got no response throws its error.
    if st.shared.settings().throw {
        let err: Option<String> = out.get(k.error.clone()).ok().flatten();
        if let Some(e) = err.filter(|e| !e.is_empty()) {
            return Err(rquickjs::Exception::throw_message(ctx, &e));
        }
    }
    Ok(out)
}

/// Define `__volley.request(method, url, body, headers[], params, proto)` and
/// `__volley.batch([[method, url, body, headers[], params], ...], proto)`: Responses are
/// created with `proto` (the shim's `Response.prototype`) as their prototype.
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    v: &Object<'js>,
    st: &Rc<VuState>,
) -> rquickjs::Result<()> {
    // Kept in the runtime's userdata, not in the closure: an atom holds its context, and a
    // context held by one of its own functions would never be freed.
    if ctx.userdata::<Keys>().is_none() {
        let k = Keys::new(ctx)?;
        let f = Keys::fast(ctx, &k)?;
        let _ = ctx.store_userdata(k);
        let _ = ctx.store_userdata(f);
    }
    let request_fn = {
        let st = st.clone();
        #[allow(clippy::too_many_arguments)]
        move |ctx: Ctx<'js>,
              method: String,
              url: String,
              body: Option<Value<'js>>,
              headers: Vec<String>,
              params: Opt<Value<'js>>,
              proto: Opt<Value<'js>>|
              -> rquickjs::Result<Object<'js>> {
            let params = params.0.and_then(|p| p.into_object());
            let proto = proto.0.and_then(|p| p.into_object());
            request(
                &ctx,
                &st,
                method,
                url,
                body,
                headers,
                params,
                proto.as_ref(),
            )
        }
    };
    v.set("request", Function::new(ctx.clone(), request_fn)?)?;

    // `http.get(url)` without params: straight here, not through the shim (the most common
    // call of all). Anything else goes to the shim's `get`, registered by `httpInit`.
    let get = {
        let st = st.clone();
        move |ctx: Ctx<'js>,
              url: Opt<Value<'js>>,
              params: Opt<Value<'js>>|
              -> rquickjs::Result<Value<'js>> {
            let url = url.0.unwrap_or_else(|| Value::new_undefined(ctx.clone()));
            let plain = params
                .0
                .as_ref()
                .is_none_or(|p| p.is_undefined() || p.is_null());
            let proto = response_proto(&ctx);
            if let (true, Some(s), Some(proto)) = (plain, url.as_string(), &proto) {
                let url = s.to_string()?;
                if !url.contains('@') {
                    let r = request(
                        &ctx,
                        &st,
                        "GET".into(),
                        url,
                        None,
                        Vec::new(),
                        None,
                        Some(proto),
                    );
                    return r.map(Object::into_value);
                }
            }
            let slow = ctx
                .userdata::<Fast>()
                .and_then(|f| f.get_slow.borrow().clone());
            match slow {
                Some(f) => f.call((url, params.0)),
                None => Err(rquickjs::Exception::throw_internal(
                    &ctx,
                    "k6/http is not initialised",
                )),
            }
        }
    };
    v.set("get", Function::new(ctx.clone(), get)?.with_name("get")?)?;
    v.set(
        "httpInit",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, proto: Object<'js>, slow: Function<'js>| {
                if let Some(f) = ctx.userdata::<Fast>() {
                    *f.proto.borrow_mut() = Some(proto);
                    *f.get_slow.borrow_mut() = Some(slow);
                }
            },
        )?,
    )?;

    let batch = {
        let st = st.clone();
        move |ctx: Ctx<'js>,
              reqs: Vec<rquickjs::Array<'js>>,
              proto: Opt<Value<'js>>|
              -> rquickjs::Result<Vec<Object<'js>>> {
            if st.in_init.get() {
                return Err(init_refused(&ctx));
            }
            let Some(k) = ctx.userdata::<Keys>() else {
                return Err(rquickjs::Exception::throw_internal(
                    &ctx,
                    "no Response keys",
                ));
            };
            let proto = proto.0.and_then(|p| p.into_object());
            let mut specs = Vec::with_capacity(reqs.len());
            for r in &reqs {
                let params: Option<Value<'js>> = r.get(4)?;
                specs.push(parse_spec(
                    &ctx,
                    &st,
                    &k,
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    params.and_then(|p| p.into_object()),
                )?);
            }
            let mut outs: Vec<Option<Object<'js>>> = specs.iter().map(|_| None).collect();
            // Rounds: unfinished requests send their next hop, at most `batch` at once and
            // `batchPerHost` per host; a round's hops are in flight together, and the rest
            // (and redirects) go on in the next round.
            let settings = st.shared.settings();
            let (limit, per_host) = (settings.batch.max(1), settings.batch_per_host);
            loop {
                let mut hops = Vec::new();
                let mut futs: Vec<ExchangeFuture> = Vec::new();
                let mut hosts: HashMap<&str, u64> = HashMap::new();
                for (n, spec) in specs.iter().enumerate() {
                    if outs[n].is_some() || futs.len() as u64 >= limit {
                        continue;
                    }
                    if per_host > 0 {
                        let rest = spec.url.split_once("://").map_or("", |(_, r)| r);
                        let host = rest.split(['/', '?', '#']).next().unwrap_or("");
                        let c = hosts.entry(host).or_default();
                        if *c >= per_host {
                            continue;
                        }
                        *c += 1;
                    }
                    match start_hop(&ctx, &st, &k, spec, proto.as_ref())? {
                        Started::Done(out) => outs[n] = Some(out),
                        Started::Go(hop, fut) => {
                            hops.push((n, hop));
                            futs.push(fut);
                        }
                    }
                }
                if futs.is_empty() {
                    break;
                }
                let results = st.wait(join_all(futs)).ok_or_else(|| interrupted(&ctx))?;
                for ((n, hop), ex) in hops.into_iter().zip(results) {
                    outs[n] = finish_hop(&ctx, &st, &mut specs[n], hop, ex, proto.as_ref())?;
                }
            }
            Ok(outs.into_iter().flatten().collect())
        }
    };
    v.set("batch", Function::new(ctx.clone(), batch)?)?;
    async_request::install(ctx, v, st)?;
    v.set(
        "responseField",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, res: Value<'js>, i: u32| {
            response_field(&ctx, &res, i)
        })?,
    )?;
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
