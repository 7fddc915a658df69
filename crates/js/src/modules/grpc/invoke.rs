//! Unary calls (`invoke`, `asyncInvoke`, `healthCheck`) and the JS response object.
//!
//! The hot path: a client keeps one [`Method`] per method name it was asked for (descriptors,
//! path, and the series its `grpc_req_duration` samples go to, by group and status), so a
//! call with no per-call tags does no descriptor lookup, tag-map building or series hashing.
//! The request object is encoded from `JSON.stringify` text (the last text's framed bytes
//! are kept per method: load tests repeat requests); a call without metadata reuses the
//! method's request head (URI and headers, built once). The response message becomes JS
//! values straight from the wire bytes (`wire`; `direct` from a decoded message where
//! `wire` declines), the response and its headers/trailers objects from templates (`shape`).

use super::*;
use bytes::Bytes;
use std::cell::RefCell;
use volley_grpc::call::Head;
use volley_grpc::prost_reflect::{DynamicMessage, MessageDescriptor};

/// A method as one client calls it; dropped when the client connects again or loads more
/// descriptors (the `url` tag and the descriptors may change).
pub(super) struct Method {
    pub(super) path: String,
    /// The client's address (the `url` tag).
    pub(super) addr: String,
    pub(super) input: MessageDescriptor,
    pub(super) output: MessageDescriptor,
    /// The server sends a stream (false: one message, which comes with the status).
    pub(super) server_streaming: bool,
    /// Series of `grpc_req_duration` by (group id, status), for calls with no own tags
    /// while the VU has no script-set tags (they can change at any time).
    series: RefCell<Vec<(u32, u32, Handle)>>,
    /// The request head of calls without metadata, with its timeout.
    head: RefCell<Option<Head>>,
    /// The last request's JSON text and its framed message.
    last: RefCell<Option<(String, Bytes)>>,
}

impl Method {
    /// The framed request message for the JSON text `req` (the last one's bytes again when
    /// the text is the same: encoding depends on nothing else).
    fn body(&self, req: String) -> Result<Bytes, String> {
        if let Some((text, framed)) = &*self.last.borrow() {
            if *text == req {
                return Ok(framed.clone());
            }
        }
        let framed = volley_grpc::frame::encode(&json::encode(&self.input, &req)?);
        *self.last.borrow_mut() = Some((req, framed.clone()));
        Ok(framed)
    }

    /// The request head for `md` within `timeout`: a copy of the kept one when there is no
    /// metadata (a head is the connection's: the cache is dropped on `connect`).
    fn head(&self, conn: &Conn, md: &Metadata, timeout: Duration) -> Result<Head, String> {
        if !md.is_empty() {
            return conn.unary_head(&self.path, md, timeout);
        }
        if let Some(h) = self
            .head
            .borrow()
            .as_ref()
            .filter(|h| h.timeout() == timeout)
        {
            return Ok(h.clone());
        }
        let h = conn.unary_head(&self.path, md, timeout)?;
        *self.head.borrow_mut() = Some(h.clone());
        Ok(h)
    }
}

/// Where a call's samples go: the method's cached series, or tags built for this call.
enum Series {
    Cached,
    Tagged(CallTags),
}

impl Series {
    fn duration(&self, st: &VuState, m: &Method, status: u32, took: Duration) {
        let h = match self {
            Series::Tagged(t) => t.handle(
                st,
                names::GRPC_REQ_DURATION,
                MetricKind::Trend,
                Unit::Time,
                Some(status),
            ),
            Series::Cached => {
                let g = st.group_id.get();
                let found = m
                    .series
                    .borrow()
                    .iter()
                    .find(|(gg, s, _)| *gg == g && *s == status)
                    .map(|e| e.2);
                match found {
                    Some(h) => h,
                    None => {
                        let t = CallTags::new(st, &m.addr, &m.path, &[]);
                        let h = t.handle(
                            st,
                            names::GRPC_REQ_DURATION,
                            MetricKind::Trend,
                            Unit::Time,
                            Some(status),
                        );
                        m.series.borrow_mut().push((g, status, h));
                        h
                    }
                }
            }
        };
        st.rec.borrow_mut().trend_us(h, took.as_micros() as u64);
    }
}

/// `(method, connection)` of a call on client `id`, or k6's error.
pub(super) fn method(
    ctx: &Ctx<'_>,
    st: &VuState,
    id: u32,
    name: &str,
) -> rquickjs::Result<(Rc<Method>, Conn)> {
    let mut cl = st.ext.grpc.borrow_mut();
    let c = cl
        .clients
        .get_mut(&id)
        .ok_or_else(|| throw(ctx, "not a gRPC client"))?;
    let Some(conn) = c.conn.clone() else {
        return Err(throw(
            ctx,
            "no gRPC connection, you must call connect first",
        ));
    };
    if let Some(m) = c.methods.get(name) {
        return Ok((m.clone(), conn));
    }
    if name.is_empty() {
        return Err(throw(ctx, "method to invoke cannot be empty"));
    }
    let path = if name.starts_with('/') {
        name.to_owned()
    } else {
        format!("/{name}")
    };
    let md = c
        .pool
        .as_ref()
        .and_then(|p| proto::find_method(p, &path))
        .ok_or_else(|| {
            throw(
                ctx,
                &format!("method {path:?} not found in file descriptors"),
            )
        })?;
    let m = Rc::new(Method {
        path,
        addr: c.addr.clone(),
        input: md.input(),
        output: md.output(),
        server_streaming: md.is_server_streaming(),
        series: RefCell::default(),
        head: RefCell::default(),
        last: RefCell::default(),
    });
    // Bounded: one entry per distinct method name a script calls.
    if c.methods.len() < MAX_IDS {
        c.methods.insert(name.to_owned(), m.clone());
    }
    Ok((m, conn))
}

/// k6's error object: the status as protojson writes it.
pub(super) fn error_obj<'js>(
    ctx: &Ctx<'js>,
    code: u32,
    msg: &str,
) -> rquickjs::Result<Object<'js>> {
    let e = Object::new(ctx.clone())?;
    e.set("code", code)?;
    e.set("details", Array::new(ctx.clone())?)?;
    e.set("message", msg)?;
    Ok(e)
}

/// Protobuf bytes of type `desc` → the JS value of `response.message` (k6's protojson).
pub(super) fn message_value<'js>(
    ctx: &Ctx<'js>,
    desc: &MessageDescriptor,
    bytes: &[u8],
) -> Result<Value<'js>, String> {
    if let Some(v) = super::wire::message(ctx, desc, bytes) {
        return Ok(v);
    }
    let msg = DynamicMessage::decode(desc.clone(), bytes)
        .map_err(|e| format!("failed to unmarshal the message: {e}"))?;
    super::direct::message(ctx, &msg)
}

/// The JS response: `{status, message, headers, trailers, error}` as k6 shapes it.
fn response<'js>(
    ctx: &Ctx<'js>,
    r: Reply,
    out: &MessageDescriptor,
    discard: bool,
) -> rquickjs::Result<Value<'js>> {
    let status = rquickjs::IntoJs::into_js(r.status, ctx)?;
    // k6 converts the response message even when the call failed (then: all defaults).
    let message = if discard {
        Value::new_null(ctx.clone())
    } else {
        let body = r.body.as_deref().unwrap_or(&[]);
        message_value(ctx, out, body).map_err(|e| {
            throw(
                ctx,
                &format!("unable to convert response object to JSON: {e}"),
            )
        })?
    };
    let headers = super::meta::object(ctx, &r.headers)?.into_value();
    let trailers = super::meta::object(ctx, &r.trailers)?.into_value();
    let error = if r.status == status::OK {
        Value::new_null(ctx.clone())
    } else {
        error_obj(ctx, r.status, &r.message)?.into_value()
    };
    let vals = [status, message, headers, trailers, error];
    Ok(super::wire::response(ctx, &vals)?.into_value())
}

/// The request object's JSON text as k6 sends it: NaN and ±Infinity become the strings
/// protojson accepts. The fast path is a plain `JSON.stringify`; only text with a `null` in
/// it (which non-finite numbers turn into) is made again with a replacer.
pub(super) fn request_json<'js>(ctx: &Ctx<'js>, req: Value<'js>) -> rquickjs::Result<String> {
    let text = |s: Option<rquickjs::String<'js>>| s.map(|s| s.to_string()).transpose();
    let fast = text(ctx.json_stringify(req.clone())?)?.unwrap_or_default();
    if !fast.contains("null") {
        return Ok(fast);
    }
    let replacer = Function::new(
        ctx.clone(),
        |ctx: Ctx<'js>, _k: Value<'js>, x: Value<'js>| match x.as_number() {
            Some(n) if !n.is_finite() => {
                let s = if n.is_nan() {
                    "NaN"
                } else if n > 0.0 {
                    "Infinity"
                } else {
                    "-Infinity"
                };
                rquickjs::String::from_str(ctx, s).map(|s| s.into_value())
            }
            _ => Ok(x),
        },
    )?;
    Ok(text(ctx.json_stringify_replacer(req, replacer)?)?.unwrap_or_default())
}

/// Everything an invoke needs after argument checking.
pub(super) struct Invoke {
    id: u32,
    conn: Conn,
    m: Rc<Method>,
    /// The framed request message.
    body: Bytes,
    head: Option<Result<Head, String>>,
    discard: bool,
    series: Series,
}

pub(super) fn prepare<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    id: u32,
    method_name: String,
    req: Value<'js>,
    p: Option<Object<'js>>,
) -> rquickjs::Result<Invoke> {
    in_vu(ctx, st, "invoking RPC methods")?;
    let (m, conn) = method(ctx, st, id, &method_name)?;
    // No params object: the shim's fast path for a call without params (all defaults).
    let p = match p {
        Some(p) => call_params(ctx, p, "invalid GRPC's client.invoke() parameters")?,
        None => CallParams::default(),
    };
    let req = request_json(ctx, req)?;
    let body = m.body(req).map_err(|e| throw(ctx, &e))?;
    let series = if p.tags.is_empty() && st.ext.tags.borrow().is_empty() {
        Series::Cached
    } else {
        Series::Tagged(CallTags::new(st, &m.addr, &m.path, &p.tags))
    };
    let timeout = p
        .timeout
        .filter(|t| !t.is_zero())
        .unwrap_or(DEFAULT_TIMEOUT);
    let head = Some(m.head(&conn, &p.md, timeout));
    Ok(Invoke {
        id,
        conn,
        m,
        body,
        head,
        discard: p.discard,
        series,
    })
}

/// The call itself (moves what it needs: the invoke keeps its method for the answer).
pub(super) fn future(
    i: &mut Invoke,
) -> impl std::future::Future<Output = (Reply, Duration)> + 'static {
    let (conn, head, body) = (
        i.conn.clone(),
        i.head
            .take()
            .unwrap_or_else(|| Err("the call was made twice".into())),
        std::mem::take(&mut i.body),
    );
    async move {
        let started = Instant::now();
        let r = conn.unary_with(head, body).await;
        (r, started.elapsed())
    }
}

pub(super) fn finish<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    i: &Invoke,
    r: Reply,
    took: Duration,
) -> rquickjs::Result<Value<'js>> {
    i.series.duration(st, &i.m, r.status, took);
    report_bytes(st, i.id);
    response(ctx, r, &i.m.output, i.discard)
}

pub(super) struct AsyncInvoke(pub(super) Invoke);

impl Continue for AsyncInvoke {
    fn next<'js>(
        self: Box<Self>,
        ctx: &Ctx<'js>,
        st: &VuState,
        out: Box<dyn Any>,
    ) -> rquickjs::Result<Next<'js>> {
        let Ok(out) = out.downcast::<(Reply, Duration)>() else {
            return Err(throw(ctx, "the gRPC call's task failed"));
        };
        let (r, took) = *out;
        Ok(Next::Done(finish(ctx, st, &self.0, r, took)?))
    }
}

/// `client.healthCheck(service)`: `grpc.health.v1.Health/Check`, `{status}` as k6 returns
/// it; a failed check throws grpc-go's error text. Its `grpc_req_duration` carries the
/// VU's tags and `status` only (k6 records it without a method's tags).
pub(super) fn health_check<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    id: u32,
    service: String,
) -> rquickjs::Result<Value<'js>> {
    use volley_grpc::health;
    use volley_grpc::prost_reflect::prost::Message as _;
    in_vu(ctx, st, "invoking RPC methods")?;
    let conn = {
        let cl = st.ext.grpc.borrow();
        let c = cl
            .clients
            .get(&id)
            .ok_or_else(|| throw(ctx, "not a gRPC client"))?;
        c.conn
            .clone()
            .ok_or_else(|| throw(ctx, "no gRPC connection, you must call connect first"))?
    };
    let body = health::Request { service }.encode_to_vec();
    let (r, took) = st
        .wait(async move {
            let started = Instant::now();
            let r = conn
                .unary(health::CHECK, &Metadata::new(), &body, DEFAULT_TIMEOUT)
                .await;
            (r, started.elapsed())
        })
        .ok_or_else(|| throw(ctx, "the gRPC call was interrupted"))?;
    let mut tags = st.base_tags();
    tags.insert("status".into(), r.status.to_string());
    st.shared.settings().filter_system_tags(&mut tags);
    {
        let mut rec = st.rec.borrow_mut();
        let h = rec.handle(
            MetricKey {
                name: names::GRPC_REQ_DURATION.into(),
                tags,
            },
            MetricKind::Trend,
            Unit::Time,
        );
        rec.trend_us(h, took.as_micros() as u64);
    }
    report_bytes(st, id);
    if r.status != status::OK {
        return Err(throw(
            ctx,
            &format!(
                "rpc error: code = {} desc = {}",
                call::code_name(r.status),
                r.message
            ),
        ));
    }
    let answer = health::Response::decode(r.body.as_deref().unwrap_or(&[]))
        .map_err(|e| throw(ctx, &format!("failed to unmarshal the message: {e}")))?;
    let o = Object::new(ctx.clone())?;
    o.set("status", answer.status)?;
    Ok(o.into_value())
}
