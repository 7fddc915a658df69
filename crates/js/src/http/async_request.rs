//! `http.asyncRequest(method, url, body, params)`: the same request as `http.request` (the
//! same parsing, hops, redirects, cookies, metrics and Response), driven by the VU's event
//! loop (`crate::event_loop`) instead of suspending the script: it returns a Promise at once,
//! and several requests of one VU are in flight together, each on its own connection.

use super::{finish_hop, init_refused, parse_spec, start_hop, Keys, Spec, Started};
use crate::event_loop::{self, Continue, Next, OpFuture};
use crate::rt::VuData;
use crate::vu::VuState;
use rquickjs::function::Opt;
use rquickjs::{Ctx, Exception, Object, Promise, Value};
use std::any::Any;
use std::rc::Rc;
use volley_http::client::Exchange;

/// One request's remaining work: its spec and the hop in flight.
struct HttpOp {
    spec: Spec,
    hop: super::Hop,
}

fn op(fut: super::ExchangeFuture) -> OpFuture {
    Box::pin(async move { Box::new(fut.await) as Box<dyn Any> })
}

/// The shim's `Response.prototype` (registered by `httpInit` when k6/http loads; a hop may
/// end after the call that started it has returned).
fn proto<'js>(ctx: &Ctx<'js>) -> Option<Object<'js>> {
    super::response_proto(ctx)
}

impl Continue for HttpOp {
    fn next<'js>(
        self: Box<Self>,
        ctx: &Ctx<'js>,
        st: &VuState,
        out: Box<dyn Any>,
    ) -> rquickjs::Result<Next<'js>> {
        let HttpOp { mut spec, hop } = *self;
        let Ok(ex) = out.downcast::<Exchange>() else {
            return Err(Exception::throw_internal(ctx, "the request's task failed"));
        };
        let Some(k) = ctx.vu_userdata::<Keys>() else {
            return Err(Exception::throw_internal(ctx, "no Response keys"));
        };
        let proto = proto(ctx);
        if let Some(res) = finish_hop(ctx, st, &mut spec, hop, *ex, proto.as_ref())? {
            return Ok(Next::Done(res.into_value()));
        }
        // A redirect: the next hop.
        Ok(match start_hop(ctx, st, k, &spec, proto.as_ref())? {
            Started::Done(res) => Next::Done(res.into_value()),
            Started::Go(hop, fut) => Next::Again(op(fut), Box::new(HttpOp { spec, hop })),
        })
    }
}

/// A promise already rejected with the pending exception (k6 rejects on bad arguments).
fn rejected<'js>(ctx: &Ctx<'js>, e: rquickjs::Error) -> rquickjs::Result<Promise<'js>> {
    let reason = match e {
        rquickjs::Error::Exception => ctx.catch(),
        e => Exception::from_message(ctx.clone(), &e.to_string())?.into_value(),
    };
    let (p, _, reject) = ctx.promise()?;
    reject.call::<_, ()>((reason,))?;
    Ok(p)
}

/// Define `__volley.asyncRequest(method, url, body, headers[], params, proto)`.
pub(super) fn install<'js>(
    ctx: &Ctx<'js>,
    v: &Object<'js>,
    st: &Rc<VuState>,
) -> rquickjs::Result<()> {
    let st = st.clone();
    #[allow(clippy::too_many_arguments)]
    let f = move |ctx: Ctx<'js>,
                  method: String,
                  url: String,
                  body: Option<Value<'js>>,
                  headers: Vec<String>,
                  params: Opt<Value<'js>>,
                  // The shim's Response.prototype: the one `httpInit` registered is used.
                  _proto: Opt<Value<'js>>|
          -> rquickjs::Result<Promise<'js>> {
        if st.in_init.get() {
            return Err(init_refused(&ctx));
        }
        if st.env.is_none() {
            return Err(Exception::throw_message(
                &ctx,
                "http.asyncRequest is not supported here by volley (only in VU code)",
            ));
        }
        let Some(k) = ctx.vu_userdata::<Keys>() else {
            return Err(Exception::throw_internal(&ctx, "no Response keys"));
        };
        let params = params.0.and_then(|p| p.into_object());
        let spec = match parse_spec(&ctx, &st, k, method, url, body, headers, params) {
            Ok(s) => s,
            Err(e) => return rejected(&ctx, e),
        };
        let proto = self::proto(&ctx);
        match start_hop(&ctx, &st, k, &spec, proto.as_ref()) {
            Err(e) => rejected(&ctx, e),
            Ok(Started::Done(res)) => {
                let (p, resolve, _) = ctx.promise()?;
                resolve.call::<_, ()>((res,))?;
                Ok(p)
            }
            Ok(Started::Go(hop, fut)) => {
                event_loop::start_op(&ctx, &st, op(fut), Box::new(HttpOp { spec, hop }))
            }
        }
    };
    crate::rt::native(ctx, v, "asyncRequest", f)?;
    Ok(())
}
