//! `k6/http`'s JS bindings: a request's arguments and params become a protocol-neutral
//! [`RequestSpec`]; the VU's [`VuClient`] (volley-http: connections, DNS, host rules,
//! redirects, k6's metrics) sends it hop by hop; the last hop becomes a k6 Response object
//! (`response`). What stays here is JavaScript's part: params, cookies and
//! `responseCallback` (`crate::modules::http_ext`), `httpDebug` logging, `http.batch`'s
//! rounds, the `rps` limiter and `throw`, and suspending the VU while a hop is in flight.
//!
//! - `response`: the Response object (QuickJS property tricks, fields built when read).
//! - `async_request`: `http.asyncRequest` on the VU's event loop.
//! - `debug`: `httpDebug` logging.

mod async_request;
mod debug;
mod response;
pub(crate) use debug::mode as debug_mode;
pub(crate) use response::define_raw;

use crate::rt::VuData;
use crate::vu::VuState;
use response::{response_field, Fast, Keys};
use rquickjs::function::Opt;
use rquickjs::{Atom, Ctx, Function, Object, Value};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use volley_http::client::{
    ExchangeFuture, Hop, RequestSpec, SeriesTags, Start, StartError, DEFAULT_TIMEOUT,
};
use volley_http::BodyMode;
use volley_metrics::TagSet;

/// One request as the script asked for it, read from its arguments once (a batch is a list
/// of these): the client's part and the JS-side extras (cookies, `responseCallback`,
/// `responseType: binary`).
struct Spec {
    req: RequestSpec,
    extras: crate::modules::http_ext::Extras,
}

enum Started<'js> {
    /// Nothing was sent (bad URL, blocked host): the Response is ready, with no metrics.
    Done(Object<'js>),
    Go(Hop, ExchangeFuture),
}

/// What a request's series are tagged with beyond the request: the VU's tags, and the run's
/// `systemTags` and `url` keying.
impl SeriesTags for VuState {
    fn cacheable(&self) -> bool {
        self.ext.tags.borrow().is_empty()
    }
    fn base_tags(&self) -> TagSet {
        VuState::base_tags(self)
    }
    fn filter_system_tags(&self, tags: &mut TagSet) {
        self.shared.settings().filter_system_tags(tags)
    }
    fn url_keys_series(&self) -> bool {
        self.shared.settings().url_keys_series
    }
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
    let (discard, default_redirects) = {
        let http = st.http.borrow();
        let s = http.settings();
        (s.discard_response_bodies, s.max_redirects)
    };
    let mode = match get(&k.response_type)? {
        Some(v) if v.get::<rquickjs::Coerced<String>>()?.0 == "none" => BodyMode::Discard,
        None if discard => BodyMode::Discard,
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
        default_redirects
    } else {
        redirects as u32
    };
    let extras = crate::modules::http_ext::Extras::from_params(ctx, st, params.as_ref())?;
    let mut headers = headers;
    let mut body = crate::modules::http_ext::body_bytes(ctx, body)?;
    if let Some(p) = &params {
        crate::modules::http_ext::compress(ctx, p, &mut body, &mut headers)?;
    }
    let req = RequestSpec {
        method,
        url,
        body,
        headers,
        tags,
        mode,
        timeout,
        max_redirects,
        hops: 0,
    };
    Ok(Spec { req, extras })
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
    let debug = st.shared.settings().http_debug;
    let started = st.http.borrow_mut().start(
        &spec.req,
        &st.rec,
        // Cookies from the jar and params.cookies.
        |t| spec.extras.cookie_header(t),
        |req| {
            if let Some(full) = debug {
                debug::request(st, req, spec.req.body.as_deref(), full);
            }
        },
    );
    match started {
        Ok(Start::Go(hop, fut)) => Ok(Started::Go(hop, fut)),
        Ok(Start::Refused { error, code }) => {
            let out = new_response(ctx, proto)?;
            out.set(k.status.clone(), 0)?;
            out.set(k.url.clone(), spec.req.url.as_str())?;
            out.set(k.error.clone(), error.as_str())?;
            out.set(k.error_code.clone(), code)?;
            out.set(k.body.clone(), Value::new_null(ctx.clone()))?;
            out.set(k.headers.clone(), Object::new(ctx.clone())?)?;
            Ok(Started::Done(out))
        }
        Err(StartError::Request(e)) => Err(rquickjs::Exception::throw_type(ctx, &e)),
        Err(StartError::Tls(e)) => Err(rquickjs::Exception::throw_message(ctx, &e)),
    }
}

/// Record a finished hop; follow a redirect (`None`: start the next hop) or build the Response.
fn finish_hop<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    spec: &mut Spec,
    hop: Hop,
    ex: volley_http::client::Exchange,
    proto: Option<&Object<'js>>,
) -> rquickjs::Result<Option<Object<'js>>> {
    let done = st.http.borrow_mut().finish(&spec.req, hop, ex, &st.rec);
    if let Ok(r) = &done.result {
        spec.extras.store(&done.target, &r.headers);
        if let Some(full) = st.shared.settings().http_debug {
            debug::response(st, r, full);
        }
    }
    let expected = spec.extras.expected(st, done.status());
    let group = st.group_id.get();
    st.http
        .borrow_mut()
        .record(&done, &st.rec, st, group, expected);
    // Follow redirects as k6 does (each hop is its own request in the metrics).
    if spec.req.follow(&done) {
        return Ok(None);
    }
    response::build(ctx, st, spec, done, proto).map(Some)
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
    ctx.vu_userdata::<Fast>()
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
    let Some(k) = ctx.vu_userdata::<Keys>() else {
        return Err(rquickjs::Exception::throw_internal(ctx, "no Response keys"));
    };
    let mut spec = parse_spec(ctx, st, k, method, url, body, headers, params)?;
    let out = loop {
        // k6's rps: every request (each redirect hop too) takes a slot of the run's limiter.
        if let Some(l) = &st.shared.settings().rps {
            let d = l.reserve();
            if !d.is_zero() {
                st.wait_idle(tokio::time::sleep(d))
                    .ok_or_else(|| interrupted(ctx))?;
            }
        }
        match start_hop(ctx, st, k, &spec, proto)? {
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
    if ctx.vu_userdata::<Keys>().is_none() {
        let k = Keys::new(ctx)?;
        let f = Keys::fast(ctx, &k)?;
        ctx.store_vu_userdata(k);
        ctx.store_vu_userdata(f);
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
    crate::rt::native(ctx, v, "request", request_fn)?;

    // `http.get(url)` without params: straight here, not through the shim (the most common
    // call of all). Anything else goes to the shim's `request("GET", ...)`, registered by
    // `httpInit`.
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
                .vu_userdata::<Fast>()
                .and_then(|f| f.get_slow.borrow().clone());
            match slow {
                Some(f) => f.call(("GET", url, Value::new_null(ctx.clone()), params.0)),
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
                if let Some(f) = ctx.vu_userdata::<Fast>() {
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
            let Some(k) = ctx.vu_userdata::<Keys>() else {
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
                    k,
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
            let (limit, per_host) = {
                let http = st.http.borrow();
                (http.settings().batch.max(1), http.settings().batch_per_host)
            };
            loop {
                let mut hops = Vec::new();
                let mut futs: Vec<ExchangeFuture> = Vec::new();
                let mut hosts: HashMap<&str, u64> = HashMap::new();
                for (n, spec) in specs.iter().enumerate() {
                    if outs[n].is_some() || futs.len() as u64 >= limit {
                        continue;
                    }
                    if per_host > 0 {
                        let rest = spec.req.url.split_once("://").map_or("", |(_, r)| r);
                        let host = rest.split(['/', '?', '#']).next().unwrap_or("");
                        let c = hosts.entry(host).or_default();
                        if *c >= per_host {
                            continue;
                        }
                        *c += 1;
                    }
                    match start_hop(&ctx, &st, k, spec, proto.as_ref())? {
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
    crate::rt::native(ctx, v, "batch", batch)?;
    async_request::install(ctx, v, st)?;
    crate::rt::native(
        ctx,
        v,
        "responseField",
        |ctx: Ctx<'js>, res: Value<'js>, i: u32| response_field(&ctx, &res, i),
    )?;
    Ok(())
}
