//! The natives behind `k6/ws` (`shims/k6_ws.js`) and `k6/websockets`
//! (`shims/k6_websockets.js`) over volley-http's JS-free [`volley_http::ws`] client.
//!
//! A VU's sockets live in [`Sockets`] (in `VuExt`) under small integer ids the shims hold.
//! Both APIs share connecting (`wsOpen`: headers, cookies from the jar, subprotocols, tags,
//! `ws_sessions`/`ws_connecting`), queuing frames (`wsSend`, `wsPing`, `wsClose`), turning a
//! socket event into a JS value with its metrics (`ws_msgs_received`, `ws_ping`, bytes) and
//! ending a session (`ws_session_duration`). They differ in how they wait:
//!
//! - `k6/ws` is blocking (k6: `ws.connect` returns when the socket closes): `wsOpen` and
//!   `wsPump` suspend the VU's coroutine, and the shim runs the socket's own loop and timers;
//!   `wsPump` hands text messages to the `message` handlers itself, one after another, and
//!   comes back to that loop for anything else (a timer due, another event, a close). It
//!   suspends only when nothing is left of the last read (`WsConn::next_ready`), so a read
//!   that brought several messages costs one suspend and one write, and each socket's `send`
//!   is a native of its own (`wsSender`).
//! - `k6/websockets` is event-driven: `wsOpenAsync` starts an operation on the VU's event
//!   loop (`crate::event_loop`) that connects, then waits for one event at a time and hands
//!   each to the shim's handler (`__volley.wsOnEvent`); the iteration ends when the loop is
//!   empty, as in k6, and other VUs run meanwhile.
//!
//! Both put the connection back in the socket while handlers run, so what they send goes
//! straight into its write buffer (no queue, no wakeup) and out with one flush before the
//! next wait.

use crate::event_loop::{self, Continue, Next, OpFuture};
use crate::modules::{array_buffer, bytes_of, throw};
use crate::vu::VuState;
use rquickjs::function::Opt;
use rquickjs::{Coerced, Ctx, Function, Object, Value};
use std::any::Any;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use volley_http::ws::{
    self, Handshake, WsCmd, WsConn, WsConnectError, WsEvent, WsRequest, WsSender,
};
use volley_metrics::{names, Handle, MetricKey, MetricKind, TagSet, Unit};

/// Most sockets one VU may have open at once (a runaway loop opening sockets gets an error
/// instead of exhausting file descriptors).
const MAX_SOCKETS: usize = 10_000;

/// Most events `k6/ws` takes in a row without waiting (what one read brought in): then it
/// waits anyway, so a socket that never runs dry still writes what its handlers sent, lets
/// the VU's other work and other VUs run, and sees a stop.
const READY_RUN: u32 = 64;

/// A VU's sockets by id, in id order (ids only grow): a VU has one or a few, and each
/// message looks its socket up several times, so a binary search beats hashing the id.
#[derive(Default)]
pub(crate) struct Sockets {
    last: u32,
    open: Vec<(u32, Sock)>,
}

impl Sockets {
    /// Forget every socket (a new iteration: k6 closes a VU's sockets with its iteration).
    pub(crate) fn clear(&mut self) {
        self.open.clear();
    }

    fn get_mut(&mut self, id: u32) -> Option<&mut Sock> {
        let i = self.open.binary_search_by_key(&id, |(k, _)| *k).ok()?;
        Some(&mut self.open[i].1)
    }

    fn insert(&mut self, id: u32, s: Sock) {
        match self.open.binary_search_by_key(&id, |(k, _)| *k) {
            Ok(i) => self.open[i].1 = s,
            Err(i) => self.open.insert(i, (id, s)),
        }
    }

    fn remove(&mut self, id: u32) -> Option<Sock> {
        let i = self.open.binary_search_by_key(&id, |(k, _)| *k).ok()?;
        Some(self.open.remove(i).1)
    }
}

struct Sock {
    /// The connection while no future holds it (between waits, while handlers run: their
    /// frames go straight into its write buffer).
    conn: Option<WsConn>,
    /// `k6/websockets`' queue (its handlers may run while the connection waits); none for
    /// `k6/ws`, which needs none.
    tx: Option<WsSender>,
    /// `k6/ws`: when its earliest timer is due (`wsTimer`), so `wsPump` hands control back.
    due: Option<Instant>,
    /// `k6/ws`: the script closed the socket; `wsPump` dispatches nothing more.
    done: bool,
    /// `k6/ws`: events `wsPump` took without waiting since its last wait ([`READY_RUN`]).
    ready_run: u32,
    m: Handles,
    started: Instant,
    /// Ping payload (our counter) → when it was sent.
    pings: HashMap<String, Instant>,
    next_ping: u64,
    /// `k6/websockets` called close(): as k6, messages that still arrive are neither
    /// dispatched (the shim's readyState is CLOSING) nor counted in `ws_msgs_received`.
    closing: bool,
}

impl Sock {
    /// Send a frame: into the connection's write buffer while it is here (`k6/ws`), else
    /// into the queue its waiting future writes from. False: the socket is gone.
    fn send(&mut self, cmd: WsCmd) -> bool {
        if let Some(c) = self.conn.as_mut() {
            c.buffer(cmd);
            return true;
        }
        self.tx.as_ref().is_some_and(|tx| tx.send(cmd))
    }
}

/// The socket's metric series (its tags: the VU's, `url`, `status`, `subproto`, params.tags).
#[derive(Clone, Copy)]
struct Handles {
    sessions: Handle,
    connecting: Handle,
    duration: Handle,
    sent: Handle,
    received: Handle,
    ping: Handle,
    data_sent: Handle,
    data_received: Handle,
}

impl Handles {
    fn resolve(st: &VuState, tags: &TagSet) -> Handles {
        let mut rec = st.rec.borrow_mut();
        let mut h = |name: &str, kind, unit| {
            rec.handle(
                MetricKey {
                    name: name.into(),
                    tags: tags.clone(),
                },
                kind,
                unit,
            )
        };
        Handles {
            sessions: h(names::WS_SESSIONS, MetricKind::Counter, Unit::Default),
            connecting: h(names::WS_CONNECTING, MetricKind::Trend, Unit::Time),
            duration: h(names::WS_SESSION_DURATION, MetricKind::Trend, Unit::Time),
            sent: h(names::WS_MSGS_SENT, MetricKind::Counter, Unit::Default),
            received: h(names::WS_MSGS_RECEIVED, MetricKind::Counter, Unit::Default),
            ping: h(names::WS_PING, MetricKind::Trend, Unit::Time),
            data_sent: h(names::DATA_SENT, MetricKind::Counter, Unit::Data),
            data_received: h(names::DATA_RECEIVED, MetricKind::Counter, Unit::Data),
        }
    }
}

fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

/// What the shims pass to `wsOpen`/`wsOpenAsync`.
struct OpenArgs {
    req: WsRequest,
    tags: TagSet,
    jar: Option<Rc<std::cell::RefCell<crate::modules::cookies::Jar>>>,
}

fn open_args<'js>(st: &VuState, a: Object<'js>) -> rquickjs::Result<OpenArgs> {
    let url: String = a.get("url")?;
    // A URL that is not ws(s):// fails the connect (k6/ws returns the error, as k6 does);
    // k6/websockets' constructor has thrown already.
    let target = ws::http_target(&url).ok();
    let mut headers: Vec<(String, String)> = Vec::new();
    let settings = st.http.borrow().settings().clone();
    if let Some(ua) = &settings.user_agent {
        headers.push(("User-Agent".into(), ua.clone()));
    }
    let flat: Vec<String> = a
        .get::<_, Option<Vec<String>>>("headers")?
        .unwrap_or_default();
    for kv in flat.chunks_exact(2) {
        headers.retain(|(k, _)| !k.eq_ignore_ascii_case(&kv[0]));
        headers.push((kv[0].clone(), kv[1].clone()));
    }
    // params.jar: a CookieJar's id; none given: the VU's jar; null: no cookies.
    let jar = match a.get::<_, Value>("jar")? {
        v if v.is_null() => None,
        v => {
            let id = v.as_number().map_or(0, |n| n as usize);
            st.ext.jars.borrow().get(id).cloned()
        }
    };
    if let (Some(j), Some(target)) = (&jar, &target) {
        let cookies: Vec<String> = j
            .borrow()
            .for_target(target)
            .into_iter()
            .map(|c| format!("{}={}", c.name, c.value))
            .collect();
        if !cookies.is_empty() {
            headers.push(("Cookie".into(), cookies.join("; ")));
        }
    }
    let mut tags = st.base_tags();
    // `k6/websockets` also tags `name` (with the URL unless params.tags set it).
    let name_tag: bool = a.get::<_, Option<bool>>("nameTag")?.unwrap_or(false);
    let user: Vec<String> = a.get::<_, Option<Vec<String>>>("tags")?.unwrap_or_default();
    tags.insert("url".into(), url.clone());
    for kv in user.chunks_exact(2) {
        tags.insert(kv[0].clone(), kv[1].clone());
    }
    if name_tag {
        // k6: `url` and `name` have the same value (a `name` set in params.tags wins).
        let name = tags.get("name").cloned().unwrap_or_else(|| url.clone());
        tags.insert("url".into(), name.clone());
        tags.insert("name".into(), name);
    }
    let protocols: Vec<String> = a
        .get::<_, Option<Vec<String>>>("protocols")?
        .unwrap_or_default();
    // k6's `compression: "deflate"` (the shims validate the value).
    let compression = a.get::<_, Option<bool>>("compression")?.unwrap_or(false);
    Ok(OpenArgs {
        req: WsRequest {
            url,
            headers,
            protocols,
            compression,
        },
        tags,
        jar,
    })
}

type Connected = Result<(WsConn, WsSender, Handshake), WsConnectError>;

/// Record the connect, keep the socket: its id and the JS description of the outcome
/// (`{id, status, headers, body, protocol, error, url}`).
fn opened<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    mut a: OpenArgs,
    r: Connected,
    started: Instant,
    id: u32,
    queue: bool,
) -> rquickjs::Result<Object<'js>> {
    let took = started.elapsed();
    let hs = match &r {
        Ok((_, _, hs)) => Some(hs),
        Err(e) => e.response.as_ref(),
    };
    if let Some(hs) = hs {
        a.tags.insert("status".into(), hs.status.to_string());
        a.tags.insert("subproto".into(), hs.protocol.clone());
        if let Some(j) = &a.jar {
            if let Ok(t) = ws::http_target(&a.req.url) {
                for (k, v) in &hs.headers {
                    if k.eq_ignore_ascii_case("set-cookie") {
                        if let Some(c) = crate::modules::cookies::parse_set_cookie(v, &t) {
                            j.borrow_mut().put(c);
                        }
                    }
                }
            }
        }
    }
    st.shared.settings().filter_system_tags(&mut a.tags);
    let m = Handles::resolve(st, &a.tags);
    let out = Object::new(ctx.clone())?;
    out.set("url", a.req.url.as_str())?;
    let headers = Object::new(ctx.clone())?;
    if let Some(hs) = hs {
        out.set("status", hs.status)?;
        out.set("body", hs.body.as_str())?;
        out.set("protocol", hs.protocol.as_str())?;
        // Repeated headers joined with ", " (as k6's response.headers).
        let mut joined: Vec<(&str, String)> = Vec::new();
        for (k, v) in &hs.headers {
            match joined.iter_mut().find(|(n, _)| n == k) {
                Some((_, have)) => {
                    have.push_str(", ");
                    have.push_str(v);
                }
                None => joined.push((k, v.clone())),
            }
        }
        for (k, v) in joined {
            headers.set(k, v)?;
        }
    } else {
        out.set("status", 0)?;
        out.set("body", "")?;
        out.set("protocol", "")?;
    }
    out.set("headers", headers)?;
    out.set("throw", st.shared.settings().throw)?;
    let (conn, tx) = match r {
        Ok((mut conn, tx, _)) => {
            let (s, rcv) = conn.take_bytes();
            let mut rec = st.rec.borrow_mut();
            rec.add(m.data_sent, s as f64);
            rec.add(m.data_received, rcv as f64);
            (Some(conn), Some(tx).filter(|_| queue))
        }
        Err(e) => {
            out.set("error", e.message.as_str())?;
            (None, None)
        }
    };
    {
        let mut rec = st.rec.borrow_mut();
        rec.add(m.sessions, 1.0);
        rec.trend_us(m.connecting, us(took));
    }
    st.ext.ws.borrow_mut().insert(
        id,
        Sock {
            conn,
            tx,
            due: None,
            done: false,
            ready_run: 0,
            m,
            started,
            pings: HashMap::new(),
            next_ping: 0,
            closing: false,
        },
    );
    out.set("id", id)?;
    Ok(out)
}

/// A new socket's id (its entry is made when it has connected).
fn new_id(ctx: &Ctx<'_>, st: &VuState) -> rquickjs::Result<u32> {
    let mut socks = st.ext.ws.borrow_mut();
    if socks.open.len() >= MAX_SOCKETS {
        return Err(throw(
            ctx,
            &format!("too many WebSockets open in one VU (at most {MAX_SOCKETS})"),
        ));
    }
    socks.last += 1;
    Ok(socks.last)
}

/// A socket event as the shims see it, with its metrics: a text message is the string itself
/// (the hot path: no object, no property atoms), anything else `{t, d | code, reason, error}`.
fn event<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    id: u32,
    conn: &mut WsConn,
    ev: WsEvent,
) -> rquickjs::Result<Value<'js>> {
    let (sent, rcvd) = conn.take_bytes();
    let mut socks = st.ext.ws.borrow_mut();
    let Some(s) = socks.get_mut(id) else {
        return Ok(Value::new_undefined(ctx.clone()));
    };
    let mut rec = st.rec.borrow_mut();
    rec.add(s.m.data_sent, sent as f64);
    rec.add(s.m.data_received, rcvd as f64);
    let ev = match ev {
        WsEvent::Timeout => return Ok(Value::new_null(ctx.clone())),
        WsEvent::Text(t) => {
            if !s.closing {
                rec.add(s.m.received, 1.0);
            }
            return Ok(rquickjs::String::from_str(ctx.clone(), &t)?.into_value());
        }
        ev => ev,
    };
    let o = Object::new(ctx.clone())?;
    match ev {
        WsEvent::Timeout | WsEvent::Text(_) => {}
        WsEvent::Binary(b) => {
            if !s.closing {
                rec.add(s.m.received, 1.0);
            }
            o.set("t", "binary")?;
            o.set("d", array_buffer(ctx, &b)?)?;
        }
        WsEvent::Ping => o.set("t", "ping")?,
        WsEvent::Pong(p) => {
            let key = String::from_utf8_lossy(&p).into_owned();
            if let Some(at) = s.pings.remove(&key) {
                rec.trend_us(s.m.ping, us(at.elapsed()));
            }
            o.set("t", "pong")?;
        }
        WsEvent::Closed {
            code,
            reason,
            error,
        } => {
            o.set("t", "close")?;
            o.set("code", code)?;
            o.set("reason", reason)?;
            if let Some(e) = error {
                o.set("error", e)?;
            }
        }
    }
    Ok(o.into_value())
}

/// `k6/websockets`' connection: connect, then one event at a time.
enum Step {
    Connect(OpenArgs, Instant, u32),
    Event(u32),
}

type StepOut = (Option<WsConn>, Option<Connected>, Option<WsEvent>);

fn connect_op(req: WsRequest, settings: Arc<volley_http::client::ClientSettings>) -> OpFuture {
    Box::pin(async move {
        let r = ws::connect(&req, &settings).await;
        Box::new((None::<WsConn>, Some(r), None::<WsEvent>)) as Box<dyn Any>
    })
}

fn next_op(mut conn: WsConn) -> OpFuture {
    Box::pin(async move {
        let ev = conn.next_flushed(None).await;
        Box::new((Some(conn), None::<Connected>, Some(ev))) as Box<dyn Any>
    })
}

/// Marks the `k6/websockets` shim's event handler (`__volley.wsOnEvent(f)`).
struct WsEvents;

fn dispatch<'js>(ctx: &Ctx<'js>, id: u32, ev: Value<'js>) -> rquickjs::Result<()> {
    crate::modules::EventHandler::<WsEvents>::call(ctx, "k6/websockets", (id, ev))
}

impl Continue for Step {
    fn next<'js>(
        self: Box<Self>,
        ctx: &Ctx<'js>,
        st: &VuState,
        out: Box<dyn Any>,
    ) -> rquickjs::Result<Next<'js>> {
        let Ok(out) = out.downcast::<StepOut>() else {
            return Err(throw(ctx, "the WebSocket's task failed"));
        };
        let (conn, connected, ev) = *out;
        match *self {
            Step::Connect(a, started, id) => {
                let Some(r) = connected else {
                    return Err(throw(ctx, "the WebSocket's task failed"));
                };
                let info = opened(ctx, st, a, r, started, id, true)?;
                // The connection stays in the socket while the handler runs: its sends go
                // straight into the write buffer, flushed before the next wait.
                dispatch(ctx, id, info.into_value())?;
                match socket(st, id).and_then(|mut s| s.conn.take()) {
                    Some(c) => Ok(Next::Again(next_op(c), Box::new(Step::Event(id)))),
                    None => {
                        st.ext.ws.borrow_mut().remove(id);
                        Ok(Next::Done(Value::new_undefined(ctx.clone())))
                    }
                }
            }
            Step::Event(id) => {
                let (Some(mut conn), Some(ev)) = (conn, ev) else {
                    return Err(throw(ctx, "the WebSocket's task failed"));
                };
                let closed = matches!(ev, WsEvent::Closed { .. });
                let v = event(ctx, st, id, &mut conn, ev)?;
                if closed {
                    end_session(st, id);
                    dispatch(ctx, id, v)?;
                    return Ok(Next::Done(Value::new_undefined(ctx.clone())));
                }
                // As after the connect: the handler's sends go into the write buffer.
                if let Some(mut s) = socket(st, id) {
                    s.conn = Some(conn);
                }
                dispatch(ctx, id, v)?;
                match socket(st, id).and_then(|mut s| s.conn.take()) {
                    Some(c) => Ok(Next::Again(next_op(c), Box::new(Step::Event(id)))),
                    None => Ok(Next::Done(Value::new_undefined(ctx.clone()))),
                }
            }
        }
    }
}

/// Queue a frame and count it in `ws_msgs_sent`; false: the socket is gone (or, `open_only`,
/// the script closed it).
fn send(st: &VuState, id: u32, cmd: WsCmd, open_only: bool) -> bool {
    let Some(mut s) = socket(st, id) else {
        return false;
    };
    if open_only && s.done {
        return false;
    }
    let ok = s.send(cmd);
    if ok {
        st.rec.borrow_mut().add(s.m.sent, 1.0);
    }
    ok
}

/// Borrow socket `id` for a moment.
fn socket(st: &VuState, id: u32) -> Option<std::cell::RefMut<'_, Sock>> {
    std::cell::RefMut::filter_map(st.ext.ws.borrow_mut(), |s| s.get_mut(id)).ok()
}

/// Record the session's duration and forget the socket.
fn end_session(st: &VuState, id: u32) -> Option<WsConn> {
    let s = st.ext.ws.borrow_mut().remove(id)?;
    st.rec
        .borrow_mut()
        .trend_us(s.m.duration, us(s.started.elapsed()));
    s.conn
}

/// Define the `__volley.ws*` natives.
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    v: &Object<'js>,
    st: &Rc<VuState>,
) -> rquickjs::Result<()> {
    let in_vu = |ctx: &Ctx<'js>, st: &VuState| -> rquickjs::Result<()> {
        if st.in_init.get() || st.env.is_none() {
            return Err(throw(
                ctx,
                "using websockets in the init context is not supported",
            ));
        }
        Ok(())
    };
    {
        let st = st.clone();
        let f = move |ctx: Ctx<'js>, a: Object<'js>| -> rquickjs::Result<Object<'js>> {
            in_vu(&ctx, &st)?;
            let args = open_args(&st, a)?;
            let settings = st.http.borrow().settings().clone();
            let started = Instant::now();
            let id = new_id(&ctx, &st)?;
            let req = args.req.clone();
            let r = st
                .wait(async move { ws::connect(&req, &settings).await })
                .ok_or_else(|| throw(&ctx, "the WebSocket connect was interrupted"))?;
            opened(&ctx, &st, args, r, started, id, false)
        };
        v.set("wsOpen", Function::new(ctx.clone(), f)?)?;
    }
    {
        let st = st.clone();
        let f = move |ctx: Ctx<'js>, a: Object<'js>| -> rquickjs::Result<u32> {
            in_vu(&ctx, &st)?;
            let args = open_args(&st, a)?;
            let id = new_id(&ctx, &st)?;
            let settings = st.http.borrow().settings().clone();
            let fut = connect_op(args.req.clone(), settings);
            let step = Step::Connect(args, Instant::now(), id);
            event_loop::start_op(&ctx, &st, fut, Box::new(step))?;
            Ok(id)
        };
        v.set("wsOpenAsync", Function::new(ctx.clone(), f)?)?;
    }
    {
        // `k6/ws`: wait up to `ms` (negative: no limit) for the next event; null on timeout
        // (or when a timer set meanwhile is due, or the script closed the socket).
        // `handlers`: the socket's "message" handlers, if any: text messages go straight to
        // them here, as many as arrive, without coming back to the shim's loop (its hot path:
        // one native call per message instead of a loop turn, a timer check and an emit).
        let st = st.clone();
        let f = move |ctx: Ctx<'js>,
                      id: u32,
                      ms: f64,
                      handlers: Value<'js>|
              -> rquickjs::Result<Value<'js>> {
            if let Some(mut s) = socket(&st, id) {
                s.due = (ms >= 0.0).then(|| Instant::now() + Duration::from_secs_f64(ms / 1e3));
            }
            loop {
                let (mut conn, due, may_skip) = match socket(&st, id) {
                    Some(mut s) if !s.done => match s.conn.take() {
                        Some(c) => (c, s.due, s.ready_run < READY_RUN),
                        None => return Ok(Value::new_undefined(ctx.clone())),
                    },
                    Some(_) => return Ok(Value::new_null(ctx.clone())),
                    None => return Ok(Value::new_undefined(ctx.clone())),
                };
                // The rest of a read first (no suspend); else write what the handlers sent
                // and wait, letting other VUs run.
                let (mut conn, ev, waited) = match may_skip.then(|| conn.next_ready()).flatten() {
                    Some(ev) => (conn, ev, false),
                    None => {
                        let Some((conn, ev)) = st.wait(async move {
                            let ev = conn.next_flushed(due).await;
                            (conn, ev)
                        }) else {
                            return Err(throw(&ctx, "the WebSocket wait was interrupted"));
                        };
                        (conn, ev, true)
                    }
                };
                let closed = matches!(ev, WsEvent::Closed { .. });
                let text = matches!(ev, WsEvent::Text(_));
                let out = event(&ctx, &st, id, &mut conn, ev)?;
                if let Some(mut s) = socket(&st, id) {
                    s.ready_run = if waited { 0 } else { s.ready_run + 1 };
                    if !closed {
                        s.conn = Some(conn);
                    }
                }
                let Some(list) = handlers.as_array().filter(|_| text) else {
                    return Ok(out);
                };
                // As k6 (a Go range over the list): the handlers there when the message came;
                // one added meanwhile gets the next message.
                for i in 0..list.len() {
                    let h: Value = list.get(i)?;
                    if let Some(h) = h.as_function() {
                        h.call::<_, ()>((out.clone(),))?;
                    }
                }
                // A timer due (messages may never stop coming): back to the shim to run it.
                let due = socket(&st, id).and_then(|s| s.due);
                if due.is_some_and(|d| d <= Instant::now()) {
                    return Ok(Value::new_null(ctx.clone()));
                }
            }
        };
        v.set("wsPump", Function::new(ctx.clone(), f)?)?;
    }
    {
        // `k6/ws`: a timer was set for `ms` from now: `wsPump` must come back by then.
        let st = st.clone();
        let f = move |id: u32, ms: f64| {
            if let Some(mut s) = socket(&st, id) {
                let at = Instant::now() + Duration::from_secs_f64(ms.max(0.0) / 1e3);
                s.due = Some(s.due.map_or(at, |d| d.min(at)));
            }
        };
        v.set("wsTimer", Function::new(ctx.clone(), f)?)?;
    }
    {
        // Queue a text (string) or binary (ArrayBuffer) message; false: not open.
        let st = st.clone();
        let f = move |ctx: Ctx<'js>, id: u32, data: Value<'js>| -> rquickjs::Result<bool> {
            let cmd = match data.as_string() {
                Some(s) => WsCmd::Text(s.to_string()?),
                None => WsCmd::Binary(
                    bytes_of(&data)
                        .ok_or_else(|| throw(&ctx, "expected a string or ArrayBuffer"))?,
                ),
            };
            Ok(send(&st, id, cmd, false))
        };
        v.set("wsSend", Function::new(ctx.clone(), f)?)?;
    }
    {
        // `k6/ws`: a socket's own `send` (one native per socket, so a handler's send is one
        // native call, not an interpreted method around one): a string as it is, anything
        // else as `String(x)`; nothing once the script closed the socket.
        let st = st.clone();
        let f = move |ctx: Ctx<'js>, id: u32| -> rquickjs::Result<Function<'js>> {
            let st = st.clone();
            let send_text = move |ctx: Ctx<'js>, data: Opt<Value<'js>>| -> rquickjs::Result<()> {
                let data = data.0.unwrap_or_else(|| Value::new_undefined(ctx.clone()));
                let text = match data.as_string() {
                    Some(s) => s.to_string()?,
                    None => data.get::<Coerced<String>>()?.0,
                };
                send(&st, id, WsCmd::Text(text), true);
                Ok(())
            };
            Function::new(ctx, send_text)
        };
        v.set("wsSender", Function::new(ctx.clone(), f)?)?;
    }
    {
        let st = st.clone();
        // `count`: k6/websockets counts pings and close frames in `ws_msgs_sent` (k6 counts
        // every frame its writer sends there); k6/ws does not.
        let f = move |id: u32, count: Opt<bool>| {
            let Some(mut s) = socket(&st, id) else { return };
            let key = s.next_ping.to_string();
            s.next_ping += 1;
            if s.send(WsCmd::Ping(key.clone().into_bytes())) {
                s.pings.insert(key, Instant::now());
                if count.0 == Some(true) {
                    st.rec.borrow_mut().add(s.m.sent, 1.0);
                }
            }
        };
        v.set("wsPing", Function::new(ctx.clone(), f)?)?;
    }
    {
        let st = st.clone();
        let f = move |id: u32, code: u16, reason: Opt<String>, count: Opt<bool>| {
            if let Some(mut s) = socket(&st, id) {
                // Only k6/websockets counts its close frame; it is also the API that stops
                // counting messages once closing.
                s.closing |= count.0 == Some(true);
                s.done = true;
                let reason = reason.0.unwrap_or_default();
                let sent = s.send(WsCmd::Close(code, reason));
                if sent && count.0 == Some(true) {
                    st.rec.borrow_mut().add(s.m.sent, 1.0);
                }
            }
        };
        v.set("wsClose", Function::new(ctx.clone(), f)?)?;
    }
    {
        // `k6/ws`: the session is over: write what is queued (the close frame), record its
        // duration, drop the socket.
        let st = st.clone();
        let f = move |id: u32| {
            if let Some(conn) = end_session(&st, id) {
                let _ = st.wait(conn.finish());
            }
        };
        v.set("wsEnd", Function::new(ctx.clone(), f)?)?;
    }
    {
        let f = move |ctx: Ctx<'js>, f: Function<'js>| {
            crate::modules::EventHandler::<WsEvents>::set(&ctx, f)
        };
        v.set("wsOnEvent", Function::new(ctx.clone(), f)?)?;
    }
    {
        // UTF-8 between strings and ArrayBuffers (Blob parts, Blob.text()).
        let f = move |ctx: Ctx<'js>, x: Value<'js>| -> rquickjs::Result<Value<'js>> {
            if let Some(s) = x.as_string() {
                return array_buffer(&ctx, s.to_string()?.as_bytes());
            }
            let b = bytes_of(&x).unwrap_or_default();
            Ok(rquickjs::String::from_str(ctx.clone(), &String::from_utf8_lossy(&b))?.into_value())
        };
        v.set("wsUtf8", Function::new(ctx.clone(), f)?)?;
    }
    Ok(())
}
