//! The natives behind `k6/net/grpc` (`shims/k6_net_grpc.js`) over volley-grpc's JS-free
//! client.
//!
//! A VU's clients and streams live in [`Clients`] (in `VuExt`) under small integer ids the
//! shim holds. `client.load()` compiles `.proto` files once per run (cached in [`Protos`],
//! shared by every VU's init), `connect` opens one HTTP/2 connection (its driver runs as a
//! local task on the VU's thread) and may build the descriptors by server reflection.
//! `invoke` suspends the VU's coroutine as `http.get` does; `asyncInvoke` and streams are
//! operations on the VU's event loop (`crate::event_loop`): a stream waits for one event at a
//! time and hands it to the shim's handler (`__volley.grpcOnEvent`), so the iteration ends
//! when every stream has ended, as in k6.
//!
//! Metrics (k6's names and tags): `grpc_req_duration` (tags `name`, `method`, `service`,
//! `url`, `status`), `grpc_streams`, `grpc_streams_msgs_sent`, `grpc_streams_msgs_received`,
//! and `data_sent`/`data_received` from the connection's wire counters.
//!
//! Layout: this file holds the clients (load, connect, invoke) and the natives; `invoke`
//! unary calls and the response object; `stream` holds `grpc.Stream`; `paths` maps
//! `load()`'s file names as k6 reads them; `wire` turns a response's protobuf bytes into JS
//! values (per-VU plans, atoms and templates: `shape`), `meta` its headers and trailers;
//! `direct` a decoded message where `wire` declines (`to_js`, the serde route, for
//! well-known types).

use crate::event_loop::{self, Continue, Next, OpFuture};
use crate::modules::{bytes_of, throw};
use crate::vu::VuState;
use rquickjs::{Array, Ctx, Function, Object, Value};
use std::any::Any;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use volley_grpc::call::{self, Cmd, Conn, ConnectOptions, Event, Metadata, Reply};
use volley_grpc::prost_reflect::DescriptorPool;
use volley_grpc::{json, proto, status};
use volley_metrics::{names, Handle, MetricKey, MetricKind, TagSet, Unit};

mod direct;
mod invoke;
mod meta;
mod paths;
mod shape;
mod stream;
mod to_js;
mod wire;
use invoke::{error_obj, Method};
use stream::{stream_open, GrpcEvents};

/// Most clients or streams one VU may hold (a runaway loop gets an error, not an OOM).
const MAX_IDS: usize = 10_000;
/// k6's default `invoke` timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// (import paths, files) of a `client.load()`.
type ProtoKey = (Vec<PathBuf>, Vec<String>);

/// Compiled `.proto` sets by what was loaded: every VU's init loads the same files.
#[derive(Default)]
pub(crate) struct Protos(Mutex<HashMap<ProtoKey, Result<DescriptorPool, String>>>);

/// A VU's clients and open streams.
#[derive(Default)]
pub(crate) struct Clients {
    last: u32,
    clients: HashMap<u32, Client>,
    last_stream: u32,
    streams: HashMap<u32, StreamState>,
    /// `data_sent`/`data_received` series for the group id (while the VU has no
    /// script-set tags).
    bytes: Option<(u32, Handle, Handle)>,
}

#[derive(Default)]
struct Client {
    pool: Option<DescriptorPool>,
    conn: Option<Conn>,
    addr: String,
    /// Wire bytes already recorded.
    reported: (u64, u64),
    /// Methods called so far by the name the script gave (see `invoke::Method`).
    methods: HashMap<String, Rc<Method>>,
}

struct StreamState {
    tx: mpsc::UnboundedSender<Cmd>,
    input: volley_grpc::prost_reflect::MessageDescriptor,
    sent: Handle,
    ended: bool,
}

/// A call's tags, resolved once.
struct CallTags {
    tags: TagSet,
}

impl CallTags {
    fn new(st: &VuState, addr: &str, method: &str, user: &[String]) -> CallTags {
        let mut tags = st.base_tags();
        let (svc, name) = method[1..].rsplit_once('/').unwrap_or((method, ""));
        tags.insert("url".into(), format!("{addr}{method}"));
        tags.insert("service".into(), svc.to_owned());
        tags.insert("method".into(), name.to_owned());
        for kv in user.chunks_exact(2) {
            tags.insert(kv[0].clone(), kv[1].clone());
        }
        if !tags.contains_key("name") {
            tags.insert("name".into(), method.to_owned());
        }
        CallTags { tags }
    }

    fn handle(
        &self,
        st: &VuState,
        name: &str,
        kind: MetricKind,
        unit: Unit,
        status: Option<u32>,
    ) -> Handle {
        let mut tags = self.tags.clone();
        if let Some(s) = status {
            tags.insert("status".into(), s.to_string());
        }
        st.shared.settings().filter_system_tags(&mut tags);
        st.rec.borrow_mut().handle(
            MetricKey {
                name: name.into(),
                tags,
            },
            kind,
            unit,
        )
    }

    fn duration(&self, st: &VuState, status: u32, took: Duration) {
        let h = self.handle(
            st,
            names::GRPC_REQ_DURATION,
            MetricKind::Trend,
            Unit::Time,
            Some(status),
        );
        st.rec.borrow_mut().trend_us(h, took.as_micros() as u64);
    }
}

/// Record the connection's new wire bytes (`data_sent`/`data_received`, the VU's tags).
fn report_bytes(st: &VuState, id: u32) {
    let mut cl = st.ext.grpc.borrow_mut();
    let Some(c) = cl.clients.get_mut(&id) else {
        return;
    };
    let Some(conn) = &c.conn else { return };
    let (s, r) = conn.wire_bytes();
    let (ds, dr) = (
        s.saturating_sub(c.reported.0),
        r.saturating_sub(c.reported.1),
    );
    c.reported = (s, r);
    if ds == 0 && dr == 0 {
        return;
    }
    let g = st.group_id.get();
    let cacheable = st.ext.tags.borrow().is_empty();
    if let Some((cg, hs, hr)) = cl.bytes.filter(|b| cacheable && b.0 == g) {
        let _ = cg;
        let mut rec = st.rec.borrow_mut();
        rec.add(hs, ds as f64);
        rec.add(hr, dr as f64);
        return;
    }
    let mut tags = st.base_tags();
    st.shared.settings().filter_system_tags(&mut tags);
    let mut rec = st.rec.borrow_mut();
    let mut h = |name: &str| {
        rec.handle(
            MetricKey {
                name: name.into(),
                tags: tags.clone(),
            },
            MetricKind::Counter,
            Unit::Data,
        )
    };
    let (hs, hr) = (h(names::DATA_SENT), h(names::DATA_RECEIVED));
    rec.add(hs, ds as f64);
    rec.add(hr, dr as f64);
    cl.bytes = cacheable.then_some((g, hs, hr));
}

fn in_vu(ctx: &Ctx<'_>, st: &VuState, what: &str) -> rquickjs::Result<()> {
    if st.in_init.get() || st.env.is_none() {
        return Err(throw(
            ctx,
            &format!("{what} in the init context is not supported"),
        ));
    }
    Ok(())
}

/// What the shim passes as call params (already checked there): metadata pairs (values
/// strings or ArrayBuffers), `timeout` (ms, or a duration string), tags pairs, discard.
#[derive(Default)]
struct CallParams {
    md: Metadata,
    timeout: Option<Duration>,
    tags: Vec<String>,
    discard: bool,
}

fn duration_of(ctx: &Ctx<'_>, v: Value<'_>, what: &str) -> rquickjs::Result<Option<Duration>> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    if let Some(n) = v.as_number() {
        if !(n >= 0.0 && n.is_finite()) {
            return Err(throw(ctx, &format!("{what}: invalid timeout value: {n}")));
        }
        return Ok(Some(Duration::from_secs_f64(n / 1e3)));
    }
    let s: String = v.get()?;
    volley_engine::duration::parse_duration(&s)
        .map(Some)
        .map_err(|e| throw(ctx, &format!("{what}: invalid timeout value: {e}")))
}

fn metadata_of(ctx: &Ctx<'_>, flat: Option<Array<'_>>) -> rquickjs::Result<Metadata> {
    let mut md = Metadata::new();
    let Some(a) = flat else { return Ok(md) };
    let n = a.len();
    for i in (0..n.saturating_sub(1)).step_by(2) {
        let k: String = a.get(i)?;
        let v: Value = a.get(i + 1)?;
        let bytes =
            bytes_of(&v).ok_or_else(|| throw(ctx, &format!("{k:?} value must be a string")))?;
        md.push((k.to_ascii_lowercase(), bytes));
    }
    Ok(md)
}

fn call_params<'js>(ctx: &Ctx<'js>, p: Object<'js>, what: &str) -> rquickjs::Result<CallParams> {
    Ok(CallParams {
        md: metadata_of(ctx, p.get("metadata")?)?,
        timeout: duration_of(ctx, p.get("timeout")?, what)?,
        tags: p.get::<_, Option<Vec<String>>>("tags")?.unwrap_or_default(),
        discard: p
            .get::<_, Option<bool>>("discardResponseMessage")?
            .unwrap_or(false),
    })
}

/// Load `files` (relative to `import_paths`, or to the calling script's directory) once per
/// run; merge them into client `id`'s descriptors.
fn load<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    id: u32,
    dirs: Vec<String>,
    files: Vec<String>,
) -> rquickjs::Result<Value<'js>> {
    if !st.in_init.get() {
        return Err(throw(ctx, "load must be called in the init context"));
    }
    let requiring = st.ext.requiring.borrow().last().cloned();
    let module = crate::script::calling_module(ctx, requiring, &st.shared.main);
    let base = crate::script::open_path(&module, ".");
    let dirs: Vec<PathBuf> = if dirs.is_empty() {
        vec![base]
    } else {
        dirs.iter()
            .map(|d| crate::script::open_path(&module, d.strip_prefix("file://").unwrap_or(d)))
            .collect()
    };
    let key = (dirs.clone(), files.clone());
    let loaded = {
        let mut cache = st
            .shared
            .ext
            .grpc
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        cache
            .entry(key)
            .or_insert_with(|| load_protos(&st.shared, &dirs, &files))
            .clone()
    };
    let pool = loaded.map_err(|e| throw(ctx, &e))?;
    add_pool(ctx, st, id, pool)
}

/// Compiles `files`: from the archive when running one (never the disk); else from disk,
/// noting every file read (imports too) with the `open()`ed ones so `volley archive` packs it.
fn load_protos(
    shared: &crate::vu::ScriptShared,
    dirs: &[PathBuf],
    files: &[String],
) -> Result<DescriptorPool, String> {
    let source = match shared.archived.get() {
        Some(archived) => {
            let archived = archived.clone();
            proto::ProtoSource::Files(Box::new(move |p: &std::path::Path| {
                let key = crate::script::normalize(&p.to_string_lossy());
                let b = archived.get(&key)?;
                String::from_utf8(b.to_vec()).ok()
            }))
        }
        None => proto::ProtoSource::Disk,
    };
    let on_disk = shared.archived.get().is_none();
    let (dirs, files) = paths::k6_names(dirs, files, |p| on_disk && p.is_file());
    let (pool, read) = proto::load_from(&dirs, &files, source).map_err(|e| e.0)?;
    let mut opened = shared.files.lock().unwrap_or_else(|e| e.into_inner());
    for (path, text) in read {
        opened
            .entry(path)
            .or_insert_with(|| std::sync::Arc::new(text.into_bytes()));
    }
    Ok(pool)
}

/// A protoset's bytes, kept with the `open()`ed files (so `volley archive` packs it); when
/// running an archive, only from it.
fn protoset_bytes(
    shared: &crate::vu::ScriptShared,
    full: &std::path::Path,
) -> Result<std::sync::Arc<Vec<u8>>, String> {
    let mut opened = shared.files.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(b) = opened.get(full) {
        return Ok(b.clone());
    }
    if shared.archived.get().is_some() {
        return Err(crate::archive::NOT_ARCHIVED.into());
    }
    let b = crate::script::read_capped(full, crate::script::MAX_OPEN_BYTES)
        .map_err(|e| e.to_string())?;
    let b = std::sync::Arc::new(b);
    opened.insert(full.to_owned(), b.clone());
    Ok(b)
}

fn add_pool<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    id: u32,
    pool: DescriptorPool,
) -> rquickjs::Result<Value<'js>> {
    let infos = proto::methods(&pool);
    {
        let mut cl = st.ext.grpc.borrow_mut();
        let c = cl.clients.entry(id).or_default();
        c.methods.clear();
        match &mut c.pool {
            None => c.pool = Some(pool),
            Some(have) => proto::merge(have, &pool).map_err(|e| throw(ctx, &e.0))?,
        }
    }
    let out = Array::new(ctx.clone())?;
    for (i, m) in infos.iter().enumerate() {
        let o = Object::new(ctx.clone())?;
        o.set("package", m.package.as_str())?;
        o.set("service", m.service.as_str())?;
        // k6's field names (its Go struct through sobek's snake_case mapper).
        o.set("full_method", m.full_method.as_str())?;
        o.set("name", m.name.as_str())?;
        o.set("is_client_stream", m.client_stream)?;
        o.set("is_server_stream", m.server_stream)?;
        out.set(i, o)?;
    }
    Ok(out.into_value())
}

fn connect<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    id: u32,
    addr: String,
    p: Object<'js>,
) -> rquickjs::Result<bool> {
    in_vu(ctx, st, "connecting to a gRPC server")?;
    let settings = st.http.borrow().settings().clone();
    let plaintext: bool = p.get::<_, Option<bool>>("plaintext")?.unwrap_or(false);
    let tls = if plaintext {
        None
    } else if let Some(t) = p.get::<_, Option<Object>>("tls")? {
        // Checked by the shim (k6's texts); the PEM itself is checked here, at connect.
        let tls = volley_grpc::tls::ClientTls {
            cert: t.get("cert")?,
            key: t.get("key")?,
            password: t.get("password")?,
            cacerts: t
                .get::<_, Option<Vec<String>>>("cacerts")?
                .unwrap_or_default(),
        };
        Some(volley_grpc::tls::client_config(settings.insecure, &tls).map_err(|e| throw(ctx, &e))?)
    } else {
        let opts = volley_http::TlsOptions {
            insecure: settings.insecure,
            cacert: None,
        };
        Some(volley_http::tls_config(&opts, &[b"h2"]).map_err(|e| throw(ctx, &e))?)
    };
    let what = "invalid grpc.connect() parameters";
    let timeout = duration_of(ctx, p.get("timeout")?, what)?.unwrap_or(Duration::from_secs(60));
    let host = addr.rsplit_once(':').map_or(addr.as_str(), |(h, _)| h);
    let port = addr
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or(443);
    let opts = ConnectOptions {
        tls,
        timeout,
        authority: p.get("authority")?,
        user_agent: settings.user_agent.clone(),
        max_receive: p.get::<_, Option<f64>>("maxReceiveSize")?.unwrap_or(0.0) as usize,
        max_send: p.get::<_, Option<f64>>("maxSendSize")?.unwrap_or(0.0) as usize,
        pinned: settings.pinned(host, port),
    };
    let reflect: bool = p.get::<_, Option<bool>>("reflect")?.unwrap_or(false);
    let rmd = metadata_of(ctx, p.get("reflectMetadata")?)?;
    let a = addr.clone();
    let done = st
        .wait(async move {
            let (conn, driver) = call::connect(&a, &opts).await?;
            tokio::task::spawn_local(driver);
            let pool = if reflect {
                Some(call::reflect(&conn, &rmd, timeout).await?)
            } else {
                None
            };
            Ok::<_, String>((conn, pool))
        })
        .ok_or_else(|| throw(ctx, "the gRPC connect was interrupted"))?;
    let (conn, pool) = done.map_err(|e| throw(ctx, &e))?;
    {
        let mut cl = st.ext.grpc.borrow_mut();
        let c = cl.clients.entry(id).or_default();
        c.conn = Some(conn);
        c.addr = addr;
        c.reported = (0, 0);
        c.methods.clear();
    }
    report_bytes(st, id);
    if let Some(pool) = pool {
        add_pool(ctx, st, id, pool)?;
    }
    Ok(true)
}

/// Define the `__volley.grpc*` natives.
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    v: &Object<'js>,
    st: &Rc<VuState>,
) -> rquickjs::Result<()> {
    {
        let st = st.clone();
        let f = move |ctx: Ctx<'js>| -> rquickjs::Result<u32> {
            let mut cl = st.ext.grpc.borrow_mut();
            if cl.clients.len() >= MAX_IDS {
                return Err(throw(
                    &ctx,
                    &format!("too many gRPC clients in one VU (at most {MAX_IDS})"),
                ));
            }
            cl.last += 1;
            let id = cl.last;
            cl.clients.insert(id, Client::default());
            Ok(id)
        };
        v.set("grpcNew", Function::new(ctx.clone(), f)?)?;
    }
    {
        let st = st.clone();
        let f = move |ctx: Ctx<'js>, id: u32, dirs: Vec<String>, files: Vec<String>| {
            load(&ctx, &st, id, dirs, files)
        };
        v.set("grpcLoad", Function::new(ctx.clone(), f)?)?;
    }
    {
        let st = st.clone();
        let f = move |ctx: Ctx<'js>, id: u32, path: String| -> rquickjs::Result<Value<'js>> {
            if !st.in_init.get() {
                return Err(throw(&ctx, "load must be called in the init context"));
            }
            let requiring = st.ext.requiring.borrow().last().cloned();
            let module = crate::script::calling_module(&ctx, requiring, &st.shared.main);
            let full = crate::script::open_path(&module, &path);
            let bytes = protoset_bytes(&st.shared, &full).map_err(|e| {
                throw(
                    &ctx,
                    &format!("couldn't open protoset: {}: {e}", full.display()),
                )
            })?;
            let pool = proto::load_protoset(&path, &bytes).map_err(|e| throw(&ctx, &e.0))?;
            add_pool(&ctx, &st, id, pool)
        };
        v.set("grpcLoadProtoset", Function::new(ctx.clone(), f)?)?;
    }
    {
        let st = st.clone();
        let f = move |ctx: Ctx<'js>, id: u32, addr: String, p: Object<'js>| {
            connect(&ctx, &st, id, addr, p)
        };
        v.set("grpcConnect", Function::new(ctx.clone(), f)?)?;
    }
    {
        let st = st.clone();
        let f = move |ctx: Ctx<'js>,
                      id: u32,
                      method: String,
                      req: Value<'js>,
                      p: Option<Object<'js>>|
              -> rquickjs::Result<Value<'js>> {
            let mut i = invoke::prepare(&ctx, &st, id, method, req, p)?;
            let (r, took) = st
                .wait(invoke::future(&mut i))
                .ok_or_else(|| throw(&ctx, "the gRPC call was interrupted"))?;
            invoke::finish(&ctx, &st, &i, r, took)
        };
        v.set("grpcInvoke", Function::new(ctx.clone(), f)?)?;
    }
    {
        let st = st.clone();
        let f = move |ctx: Ctx<'js>,
                      id: u32,
                      method: String,
                      req: Value<'js>,
                      p: Option<Object<'js>>|
              -> rquickjs::Result<rquickjs::Promise<'js>> {
            let mut i = invoke::prepare(&ctx, &st, id, method, req, p)?;
            let fut = invoke::future(&mut i);
            let op: OpFuture = Box::pin(async move { Box::new(fut.await) as Box<dyn Any> });
            event_loop::start_op(&ctx, &st, op, Box::new(invoke::AsyncInvoke(i)))
        };
        v.set("grpcInvokeAsync", Function::new(ctx.clone(), f)?)?;
    }
    {
        let st = st.clone();
        let f = move |ctx: Ctx<'js>, id: u32, service: String| {
            invoke::health_check(&ctx, &st, id, service)
        };
        v.set("grpcHealthCheck", Function::new(ctx.clone(), f)?)?;
    }
    {
        let st = st.clone();
        let f = move |id: u32| {
            if let Some(c) = st.ext.grpc.borrow_mut().clients.get_mut(&id) {
                // Dropping the last handle closes the connection (its driver then ends).
                c.conn = None;
            }
        };
        v.set("grpcClose", Function::new(ctx.clone(), f)?)?;
    }
    {
        let st = st.clone();
        let f = move |ctx: Ctx<'js>, id: u32, method: String, p: Object<'js>| {
            stream_open(&ctx, &st, id, method, p)
        };
        v.set("grpcStreamOpen", Function::new(ctx.clone(), f)?)?;
    }
    {
        let st = st.clone();
        // false: the stream is over or its writing side ended (k6 ignores such writes).
        let f = move |ctx: Ctx<'js>, sid: u32, req: Value<'js>| -> rquickjs::Result<bool> {
            let req = invoke::request_json(&ctx, req)?;
            let cl = st.ext.grpc.borrow();
            let Some(s) = cl.streams.get(&sid).filter(|s| !s.ended) else {
                return Ok(false);
            };
            let body = match json::encode(&s.input, &req) {
                Ok(b) => b,
                // k6 does not throw: the stream fails (its "error" handlers, then "end").
                Err(e) => {
                    let e = e.replace("unable to serialise", "can't serialise");
                    let _ = s.tx.send(Cmd::Abort(status::UNKNOWN, e));
                    return Ok(false);
                }
            };
            let ok = s.tx.send(Cmd::Write(body)).is_ok();
            if ok {
                st.rec.borrow_mut().add(s.sent, 1.0);
            }
            Ok(ok)
        };
        v.set("grpcStreamWrite", Function::new(ctx.clone(), f)?)?;
    }
    {
        let st = st.clone();
        let f = move |sid: u32| {
            if let Some(s) = st.ext.grpc.borrow_mut().streams.get_mut(&sid) {
                if !s.ended {
                    s.ended = true;
                    let _ = s.tx.send(Cmd::End);
                }
            }
        };
        v.set("grpcStreamEnd", Function::new(ctx.clone(), f)?)?;
    }
    {
        let f = move |ctx: Ctx<'js>, f: Function<'js>| {
            crate::modules::EventHandler::<GrpcEvents>::set(&ctx, f)
        };
        v.set("grpcOnEvent", Function::new(ctx.clone(), f)?)?;
    }
    Ok(())
}
