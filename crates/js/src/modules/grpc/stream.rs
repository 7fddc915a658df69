//! `grpc.Stream`: a stream is an operation on the VU's event loop that waits for one event
//! at a time and hands it to the shim's handler (`__volley.grpcOnEvent`); writes and the
//! half-close go to the stream's task through a channel.

use super::*;

/// A stream's next event, and the receiver to wait on again.
struct StreamStep {
    sid: u32,
    client: u32,
    out: volley_grpc::prost_reflect::MessageDescriptor,
    tags: Rc<CallTags>,
    received: Handle,
    started: Instant,
    discard: bool,
}

type StepOut = (mpsc::UnboundedReceiver<Event>, Option<Event>);

fn next_event(mut rx: mpsc::UnboundedReceiver<Event>) -> OpFuture {
    Box::pin(async move {
        let ev = rx.recv().await;
        Box::new((rx, ev)) as Box<dyn Any>
    })
}

/// Marks the shim's stream event handler (`__volley.grpcOnEvent(f)`).
pub(super) struct GrpcEvents;

fn dispatch<'js>(ctx: &Ctx<'js>, sid: u32, kind: &str, v: Value<'js>) -> rquickjs::Result<()> {
    crate::modules::EventHandler::<GrpcEvents>::call(ctx, "k6/net/grpc", (sid, kind, v))
}

impl Continue for StreamStep {
    fn next<'js>(
        self: Box<Self>,
        ctx: &Ctx<'js>,
        st: &VuState,
        out: Box<dyn Any>,
    ) -> rquickjs::Result<Next<'js>> {
        let Ok(out) = out.downcast::<StepOut>() else {
            return Err(throw(ctx, "the gRPC stream's task failed"));
        };
        let (rx, ev) = *out;
        report_bytes(st, self.client);
        let done = match ev {
            Some(Event::Message(m)) => {
                st.rec.borrow_mut().add(self.received, 1.0);
                let v = if self.discard {
                    Object::new(ctx.clone())?.into_value()
                } else {
                    invoke::message_value(ctx, &self.out, &m).map_err(|e| throw(ctx, &e))?
                };
                dispatch(ctx, self.sid, "data", v)?;
                None
            }
            Some(Event::Done(r)) => Some(r),
            None => Some(Reply {
                status: status::CANCELLED,
                message: "context canceled".into(),
                ..Reply::default()
            }),
        };
        let Some(r) = done else {
            return Ok(Next::Again(next_event(rx), self));
        };
        // The stream's own end, not when this VU got round to its event.
        let took = if r.took.is_zero() {
            self.started.elapsed()
        } else {
            r.took
        };
        self.tags.duration(st, r.status, took);
        st.ext.grpc.borrow_mut().streams.remove(&self.sid);
        // k6: a failed stream calls its error handlers, then (queued) its end handlers.
        if r.status != status::OK && r.status != status::CANCELLED {
            dispatch(
                ctx,
                self.sid,
                "error",
                error_obj(ctx, r.status, &r.message)?.into_value(),
            )?;
        }
        dispatch(ctx, self.sid, "end", Value::new_undefined(ctx.clone()))?;
        Ok(Next::Done(Value::new_undefined(ctx.clone())))
    }
}

pub(super) fn stream_open<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    id: u32,
    method: String,
    p: Object<'js>,
) -> rquickjs::Result<u32> {
    in_vu(ctx, st, "creating a gRPC stream")?;
    let (m, conn) = invoke::method(ctx, st, id, &method)
        .map_err(|_| throw(ctx, &stream_error(st, id, &method)))?;
    let p = call_params(ctx, p, "invalid GRPC Stream's parameters")?;
    let tags = Rc::new(CallTags::new(st, &m.addr, &m.path, &p.tags));
    let (tx, rx, task) = conn.stream(&m.path, &p.md, p.timeout.filter(|t| !t.is_zero()));
    tokio::task::spawn_local(task);
    let sid = {
        let mut cl = st.ext.grpc.borrow_mut();
        if cl.streams.len() >= MAX_IDS {
            return Err(throw(
                ctx,
                &format!("too many gRPC streams open in one VU (at most {MAX_IDS})"),
            ));
        }
        cl.last_stream += 1;
        cl.last_stream
    };
    let h = tags.handle(
        st,
        names::GRPC_STREAMS,
        MetricKind::Counter,
        Unit::Default,
        None,
    );
    st.rec.borrow_mut().add(h, 1.0);
    let sent = tags.handle(
        st,
        names::GRPC_STREAMS_MSGS_SENT,
        MetricKind::Counter,
        Unit::Default,
        None,
    );
    // k6 (grpc-go) hands a client stream's one response over with its status (OK: on any
    // other the message is dropped), so that message's series has the `status` tag too.
    let received = tags.handle(
        st,
        names::GRPC_STREAMS_MSGS_RECEIVED,
        MetricKind::Counter,
        Unit::Default,
        (!m.server_streaming).then_some(status::OK),
    );
    st.ext.grpc.borrow_mut().streams.insert(
        sid,
        StreamState {
            tx,
            input: m.input.clone(),
            sent,
            ended: false,
        },
    );
    let step = StreamStep {
        sid,
        client: id,
        out: m.output.clone(),
        tags,
        received,
        started: Instant::now(),
        discard: p.discard,
    };
    // The promise is the shim's to ignore: the stream reports through its handlers.
    event_loop::start_op(ctx, st, next_event(rx), Box::new(step))?;
    Ok(sid)
}

/// k6's wording for a stream on a bad client or method.
fn stream_error(st: &VuState, id: u32, method: &str) -> String {
    let cl = st.ext.grpc.borrow();
    match cl.clients.get(&id) {
        Some(c) if c.conn.is_none() => {
            "invalid GRPC Stream's client: no gRPC connection, you must call connect first".into()
        }
        None => "invalid GRPC Stream's client: not a gRPC client".into(),
        Some(_) if method.is_empty() => {
            "invalid GRPC Stream's method: method to invoke cannot be empty".into()
        }
        Some(_) => {
            let path = if method.starts_with('/') {
                method.to_owned()
            } else {
                format!("/{method}")
            };
            format!("invalid GRPC Stream's method: method {path:?} not found in file descriptors")
        }
    }
}
