//! k6's event loop, run per VU call: timers (`setTimeout`, `setInterval` and their `clear*`,
//! globals and `k6/timers`), asynchronous native operations (`http.asyncRequest`) and
//! unhandled promise rejections.
//!
//! As in k6, a call (an iteration, `setup`, `teardown`, `handleSummary`, a module's init code)
//! is over when its returned promise has settled *and* nothing it started is pending: no timer
//! and no operation. [`settle`] runs that loop after the call: drain the job queue; report an
//! unhandled rejection (k6: "Uncaught (in promise) ..." ends the call with an error); suspend
//! the VU's coroutine ([`VuState::wait`]) until the next operation completes or the next timer
//! is due; settle that operation's promise or run that timer's callback *on the VU's thread*;
//! repeat. A script that uses none of this pays one `Cell` read and a value-tag check per call
//! (plus a class check when the function returns an object): nothing is allocated and no
//! native is called.
//!
//! Operations are futures, spawned on the worker's `LocalSet` when the call runs inside a VU's
//! task, so a request in flight keeps going while the script waits on something else (a
//! `sleep()` or a synchronous request in an async function, as goroutines do in k6); their
//! results wait until the loop comes round. A cancelled call (gracefulStop over, hard stop,
//! setupTimeout) drops the future the coroutine waits on, which aborts every operation, and
//! clears every timer: the iteration counts as interrupted, as a synchronous one does.
//!
//! Where there is no VU task to wait in (the init run that reads `options`, each VU's init
//! code, `handleSummary`), timers are waited for by sleeping the thread (k6 runs init code on
//! its event loop too); requests are not allowed there.
//!
//! Rust keeps the deadlines and futures ([`Pending`], in `VuState`); the JS values (callbacks,
//! their arguments, promise resolvers, rejected promises) live in the context's userdata
//! ([`Js`]), so nothing JS outlives its runtime.

use crate::rt::VuData;
use crate::vu::VuState;
use rquickjs::function::{Opt, Rest, This};
use rquickjs::{Coerced, Ctx, Exception, Function, Object, Promise, Runtime, Value};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

/// An asynchronous native operation: its output is handed to its [`Continue`].
pub(crate) type OpFuture = Pin<Box<dyn Future<Output = Box<dyn Any>>>>;

/// What to do, on the VU's thread, when an operation's future is done.
pub(crate) trait Continue {
    fn next<'js>(
        self: Box<Self>,
        ctx: &Ctx<'js>,
        st: &VuState,
        out: Box<dyn Any>,
    ) -> rquickjs::Result<Next<'js>>;
}

/// The next step of an operation: settle its promise with a value, or wait again (a redirect).
pub(crate) enum Next<'js> {
    Done(Value<'js>),
    Again(OpFuture, Box<dyn Continue>),
}

/// Longest timer delay (as browsers: 2^31 - 1 ms, about 24.8 days).
const MAX_DELAY_MS: f64 = 2_147_483_647.0;

/// A VU's pending asynchronous work (Rust side).
#[derive(Default)]
pub(crate) struct Pending {
    /// Something asynchronous happened during this call (a timer, an operation, a rejected
    /// promise without a handler): the call needs the loop. The hot path's only check.
    active: Cell<bool>,
    /// Timer ids (as k6: per VU, from 1, never reused).
    last_timer: Cell<u64>,
    last_op: Cell<u64>,
    /// Orders timers due at the same instant by when they were set.
    seq: Cell<u64>,
    /// (deadline, seq) → timer id.
    timers: RefCell<BTreeMap<(Instant, u64), u64>>,
    /// Operations in flight, in the order they started.
    ops: RefCell<Vec<(u64, OpFuture)>>,
    conts: RefCell<HashMap<u64, Box<dyn Continue>>>,
}

impl Pending {
    fn schedule(&self, id: u64, after: Duration) {
        let seq = self.seq.get();
        self.seq.set(seq + 1);
        self.timers
            .borrow_mut()
            .insert((Instant::now() + after, seq), id);
        self.active.set(true);
    }

    fn unschedule(&self, id: u64) {
        self.timers.borrow_mut().retain(|_, t| *t != id);
    }

    fn idle(&self) -> bool {
        self.timers.borrow().is_empty() && self.ops.borrow().is_empty()
    }

    fn push_op(&self, st: &VuState, id: u64, fut: OpFuture, cont: Box<dyn Continue>) {
        // Inside a VU's task (iterations, setup, teardown) the worker's LocalSet runs the
        // operation on its own; elsewhere the loop polls it.
        let fut: OpFuture = if st.env.is_some() && !st.in_init.get() {
            Box::pin(Spawned(tokio::task::spawn_local(fut)))
        } else {
            fut
        };
        self.ops.borrow_mut().push((id, fut));
        self.conts.borrow_mut().insert(id, cont);
        self.active.set(true);
    }
}

/// An operation running as a local task; dropping it aborts the task.
struct Spawned(tokio::task::JoinHandle<Box<dyn Any>>);

impl Future for Spawned {
    type Output = Box<dyn Any>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Box<dyn Any>> {
        // A task that panicked gives `()`, which its continuation reports as an error.
        Pin::new(&mut self.0)
            .poll(cx)
            .map(|r| r.unwrap_or_else(|_| Box::new(())))
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A timer's callback and arguments.
struct Timer<'js> {
    f: Function<'js>,
    args: Vec<Value<'js>>,
    /// `setInterval`'s period.
    every: Option<Duration>,
}

/// The JS side of [`Pending`], kept in the context's userdata (`crate::rt::VuData`).
pub(crate) struct Js<'js> {
    timers: RefCell<HashMap<u64, Timer<'js>>>,
    /// Operation id → (resolve, reject) of its promise.
    settle: RefCell<HashMap<u64, (Function<'js>, Function<'js>)>>,
    /// Rejected promises without a handler (yet): (promise, reason).
    rejected: RefCell<Vec<(Value<'js>, Value<'js>)>>,
}

// SAFETY: only `'js` values inside; `Changed` just renames the lifetime.
unsafe impl<'js> rquickjs::JsLifetime<'js> for Js<'js> {
    type Changed<'to> = Js<'to>;
}

/// Define the timer globals (`setTimeout`, `clearTimeout`, `setInterval`, `clearInterval`).
pub(crate) fn install<'js>(ctx: &Ctx<'js>, st: &Rc<VuState>) -> rquickjs::Result<()> {
    if ctx.vu_userdata::<Js>().is_none() {
        ctx.store_vu_userdata(Js {
            timers: RefCell::default(),
            settle: RefCell::default(),
            rejected: RefCell::default(),
        });
    }
    // Every VU pays for these objects (~200 bytes each): no `name` properties, and one
    // function for both `clear*` (they do the same, in k6 too).
    let g = ctx.globals();
    for (name, repeat) in [("setTimeout", false), ("setInterval", true)] {
        let st = st.clone();
        let f = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, f: Value<'js>, delay: Opt<Value<'js>>, args: Rest<Value<'js>>| {
                add_timer(&ctx, &st, name, f, delay.0, args.0, repeat)
            },
        )?;
        g.set(name, f)?;
    }
    let st = st.clone();
    let clear = Function::new(ctx.clone(), move |ctx: Ctx<'js>, id: Opt<Value<'js>>| {
        let Some(id) = id.0.and_then(|v| v.as_number()) else {
            return;
        };
        if id.fract() != 0.0 || id < 1.0 {
            return;
        }
        let id = id as u64;
        if let Some(js) = ctx.vu_userdata::<Js>() {
            let t = js.timers.borrow_mut().remove(&id);
            drop(t);
        }
        st.pending.unschedule(id);
    })?;
    g.set("clearTimeout", clear.clone())?;
    g.set("clearInterval", clear)?;
    Ok(())
}

fn add_timer<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    name: &str,
    f: Value<'js>,
    delay: Option<Value<'js>>,
    args: Vec<Value<'js>>,
    repeat: bool,
) -> rquickjs::Result<u64> {
    let Some(f) = f.into_function() else {
        return Err(Exception::throw_type(
            ctx,
            &format!("{name}'s callback isn't a callable function"),
        ));
    };
    let ms = match delay {
        Some(v) if !v.is_undefined() => v.get::<Coerced<f64>>()?.0,
        _ => 0.0,
    };
    let ms = if ms.is_nan() {
        0.0
    } else {
        ms.clamp(0.0, MAX_DELAY_MS)
    };
    let d = Duration::from_secs_f64(ms / 1000.0);
    let p = &st.pending;
    let id = p.last_timer.get() + 1;
    p.last_timer.set(id);
    let Some(js) = ctx.vu_userdata::<Js>() else {
        return Err(Exception::throw_internal(ctx, "timers are not set up"));
    };
    js.timers.borrow_mut().insert(
        id,
        Timer {
            f,
            args,
            every: repeat.then_some(d),
        },
    );
    p.schedule(id, d);
    Ok(id)
}

/// Start an asynchronous operation: its promise settles when `cont` says so.
pub(crate) fn start_op<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    fut: OpFuture,
    cont: Box<dyn Continue>,
) -> rquickjs::Result<Promise<'js>> {
    let (promise, resolve, reject) = ctx.promise()?;
    let Some(js) = ctx.vu_userdata::<Js>() else {
        return Err(Exception::throw_internal(
            ctx,
            "the event loop is not set up",
        ));
    };
    let p = &st.pending;
    let id = p.last_op.get() + 1;
    p.last_op.set(id);
    js.settle.borrow_mut().insert(id, (resolve, reject));
    p.push_op(st, id, fut, cont);
    Ok(promise)
}

/// Record rejected promises that have no handler (k6 ends the call with "Uncaught (in
/// promise) ..." when one is still unhandled after a turn of the loop). `st`: the runtime's
/// one VU; `None` when VUs share the runtime (the running VU's promise).
pub(crate) fn track_rejections(rt: &Runtime, st: Option<Rc<VuState>>) {
    rt.set_host_promise_rejection_tracker(Some(Box::new(
        move |ctx: Ctx<'_>, promise: Value<'_>, reason: Value<'_>, handled: bool| {
            let Some(js) = ctx.vu_userdata::<Js>() else {
                return;
            };
            let mut list = js.rejected.borrow_mut();
            if handled {
                list.retain(|(p, _)| *p != promise);
            } else {
                list.push((promise, reason));
                match &st {
                    Some(st) => st.pending.active.set(true),
                    None => {
                        crate::vu::shared::with_current(|st| st.pending.active.set(true));
                    }
                }
            }
        },
    )));
}

/// After calling a script function: run the event loop when the call left anything
/// asynchronous behind, and return what its promise settled to (a rejection is an error,
/// "Uncaught (in promise) ...", as in k6).
#[inline]
pub(crate) fn settle<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    r: rquickjs::Result<Value<'js>>,
) -> rquickjs::Result<Value<'js>> {
    crate::script::drain_jobs(ctx);
    // The hot path: no timer, no operation, no rejection, no promise returned (a tag check,
    // then a class check for objects, such as `() => http.get(url)`'s Response).
    if !st.pending.active.get() && !r.as_ref().is_ok_and(|v| v.is_object() && v.is_promise()) {
        return r;
    }
    run(ctx, st, r, true)
}

/// After evaluating a module: run its timers and top-level awaits until its evaluation
/// promise settles. The promise's own rejection is left to the caller (`promise.finish()`),
/// so init errors read as they do without async code.
pub(crate) fn settle_module<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    promise: &Promise<'js>,
) -> rquickjs::Result<()> {
    run(ctx, st, Ok(promise.clone().into_value()), false).map(|_| ())
}

fn undefined<'js>(ctx: &Ctx<'js>) -> Value<'js> {
    Value::new_undefined(ctx.clone())
}

fn stopped(st: &VuState) -> bool {
    st.stop.borrow().as_ref().is_some_and(|t| t.is_stopped())
}

/// The loop. `call`: a function call (its rejected promise is an error); else a module's
/// evaluation (its rejection is the caller's).
fn run<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    r: rquickjs::Result<Value<'js>>,
    call: bool,
) -> rquickjs::Result<Value<'js>> {
    let v = match r {
        Ok(v) => v,
        Err(e) => {
            // k6: an exception ends the call; what it started is dropped with it.
            note_stop(st);
            clear(ctx, st);
            return Err(e);
        }
    };
    let ret = v.as_promise().cloned();
    let out = turns(ctx, st, ret.as_ref().filter(|_| !call));
    clear(ctx, st);
    if out.is_err() {
        note_stop(st);
    }
    out?;
    if st.interrupted.get() || st.ext.abort.borrow().is_some() {
        return Ok(undefined(ctx));
    }
    match ret {
        Some(p) if call => match p.state() {
            rquickjs::promise::PromiseState::Resolved => p.result().unwrap_or(Ok(undefined(ctx))),
            rquickjs::promise::PromiseState::Rejected => {
                let reason = rejection(&p);
                Err(uncaught(ctx, reason))
            }
            // Nothing left that could settle it: the call is over (as k6).
            rquickjs::promise::PromiseState::Pending => Ok(undefined(ctx)),
        },
        _ => Ok(v),
    }
}

/// The reason a rejected promise holds (taken back out of the context's exception slot).
fn rejection<'js>(p: &Promise<'js>) -> Value<'js> {
    match p.result::<Value>() {
        Some(Err(_)) => p.ctx().catch(),
        Some(Ok(v)) => v,
        None => undefined(p.ctx()),
    }
}

/// An error escaped the call: when the stop token fired meanwhile it is the interrupt
/// handler's (uncatchable) error, and the call counts as interrupted.
fn note_stop(st: &VuState) {
    if stopped(st) {
        st.interrupted.set(true);
    }
}

/// Run turns of the loop until nothing is pending, the call is interrupted or aborted, or a
/// callback or an unhandled rejection ends it. `module`: a module's evaluation promise (its
/// own rejection ends the loop without an error of ours).
fn turns<'js>(ctx: &Ctx<'js>, st: &VuState, module: Option<&Promise<'js>>) -> rquickjs::Result<()> {
    let p = &st.pending;
    let in_task = st.env.is_some() && !st.in_init.get();
    loop {
        crate::script::drain_jobs(ctx);
        if st.interrupted.get() || st.ext.abort.borrow().is_some() {
            return Ok(());
        }
        if let Some(m) = module {
            if m.state() == rquickjs::promise::PromiseState::Rejected {
                return Ok(());
            }
        }
        if let Some(reason) = take_unhandled(ctx) {
            return Err(uncaught(ctx, reason));
        }
        if p.idle() {
            return Ok(());
        }
        let deadline = p.timers.borrow().first_key_value().map(|(k, _)| k.0);
        let done = if in_task {
            let ops = std::mem::take(&mut *p.ops.borrow_mut());
            // Only timers pending: an idle wait, which Ctrl-C ends at once.
            let idle = ops.is_empty();
            let events = next_events(ops, deadline);
            let woken = if idle {
                st.wait_idle(events)
            } else {
                st.wait(events)
            };
            match woken {
                Some((ops, done)) => {
                    *p.ops.borrow_mut() = ops;
                    done
                }
                // Cancelled: the operations were dropped with the wait.
                None => return Ok(()),
            }
        } else {
            if !p.ops.borrow().is_empty() {
                return Err(Exception::throw_message(
                    ctx,
                    "asynchronous operations cannot complete here",
                ));
            }
            if let Some(at) = deadline {
                // In slices, so that Ctrl-C during VU init is not held up by a timer.
                while let Some(left) = at.checked_duration_since(Instant::now()) {
                    if st.halted() {
                        st.interrupted.set(true);
                        return Ok(());
                    }
                    std::thread::sleep(left.min(Duration::from_millis(20)));
                }
            }
            Vec::new()
        };
        for (id, out) in done {
            complete(ctx, st, id, out)?;
            crate::script::drain_jobs(ctx);
        }
        fire_due(ctx, st)?;
    }
}

/// Wait until an operation completes or the first timer is due; hand the unfinished
/// operations back with the finished ones' outputs.
type Woken = (Vec<(u64, OpFuture)>, Vec<(u64, Box<dyn Any>)>);

async fn next_events(mut ops: Vec<(u64, OpFuture)>, deadline: Option<Instant>) -> Woken {
    // A timer already due does not go through tokio's timer wheel (1 ms ticks): the VU only
    // lets the worker's other tasks run once, then fires it.
    let due_now = deadline.is_some_and(|d| d <= Instant::now());
    let mut yielded = false;
    let mut sleep = deadline
        .filter(|_| !due_now)
        .map(|d| Box::pin(tokio::time::sleep_until(d.into())));
    let done = std::future::poll_fn(|cx| {
        let mut done = Vec::new();
        let mut i = 0;
        while i < ops.len() {
            match ops[i].1.as_mut().poll(cx) {
                Poll::Ready(out) => done.push((ops.remove(i).0, out)),
                Poll::Pending => i += 1,
            }
        }
        let due = if due_now {
            // First poll: yield (wake at once, pending); the next one: due.
            let again = std::mem::replace(&mut yielded, true);
            if !again {
                cx.waker().wake_by_ref();
            }
            again
        } else {
            sleep
                .as_mut()
                .is_some_and(|s| s.as_mut().poll(cx).is_ready())
        };
        if done.is_empty() && !due {
            Poll::Pending
        } else {
            Poll::Ready(done)
        }
    })
    .await;
    (ops, done)
}

/// An operation's future is done: run its continuation, then settle its promise (or start
/// its next step).
fn complete<'js>(ctx: &Ctx<'js>, st: &VuState, id: u64, out: Box<dyn Any>) -> rquickjs::Result<()> {
    let p = &st.pending;
    let Some(cont) = p.conts.borrow_mut().remove(&id) else {
        return Ok(());
    };
    let step = cont.next(ctx, st, out);
    let outcome = match step {
        Ok(Next::Again(fut, cont)) => {
            p.push_op(st, id, fut, cont);
            return Ok(());
        }
        Ok(Next::Done(v)) => Ok(v),
        Err(rquickjs::Error::Exception) => Err(ctx.catch()),
        Err(e) => Err(Exception::from_message(ctx.clone(), &e.to_string())?.into_value()),
    };
    let Some(js) = ctx.vu_userdata::<Js>() else {
        return Ok(());
    };
    let settle = js.settle.borrow_mut().remove(&id);
    if let Some((resolve, reject)) = settle {
        match outcome {
            Ok(v) => resolve.call::<_, ()>((v,))?,
            Err(reason) => reject.call::<_, ()>((reason,))?,
        }
    }
    Ok(())
}

/// Run the timers due now, earliest first (same deadline: in the order they were set); those
/// set meanwhile wait for the next turn, so `setInterval(f, 0)` cannot starve the loop.
fn fire_due<'js>(ctx: &Ctx<'js>, st: &VuState) -> rquickjs::Result<()> {
    let p = &st.pending;
    let (now, round) = (Instant::now(), p.seq.get());
    loop {
        let id = {
            let mut t = p.timers.borrow_mut();
            match t.first_key_value() {
                Some((&(at, seq), &id)) if at <= now && seq < round => {
                    t.pop_first();
                    id
                }
                _ => return Ok(()),
            }
        };
        let Some(js) = ctx.vu_userdata::<Js>() else {
            return Ok(());
        };
        let timer = {
            let mut timers = js.timers.borrow_mut();
            let Some(t) = timers.get(&id) else {
                continue;
            };
            let call = (t.f.clone(), t.args.clone(), t.every);
            if t.every.is_none() {
                timers.remove(&id);
            }
            call
        };
        let (f, args, every) = timer;
        f.call::<_, Value>((This(ctx.globals()), Rest(args)))?;
        // k6: an interval is set again after its callback, unless the callback cleared it.
        if let Some(d) = every {
            let alive = ctx
                .vu_userdata::<Js>()
                .is_some_and(|js| js.timers.borrow().contains_key(&id));
            if alive {
                p.schedule(id, d);
            }
        }
        crate::script::drain_jobs(ctx);
        let unhandled = ctx
            .vu_userdata::<Js>()
            .is_some_and(|js| !js.rejected.borrow().is_empty());
        if unhandled || st.interrupted.get() || st.ext.abort.borrow().is_some() {
            return Ok(());
        }
    }
}

/// The first rejection still unhandled, if any (the rest are dropped: one error per call).
fn take_unhandled<'js>(ctx: &Ctx<'js>) -> Option<Value<'js>> {
    let js = ctx.vu_userdata::<Js>()?;
    let mut list = js.rejected.borrow_mut();
    if list.is_empty() {
        return None;
    }
    let (_, reason) = list.swap_remove(0);
    let rest = std::mem::take(&mut *list);
    drop(list);
    drop(rest);
    Some(reason)
}

/// Throw `reason` as k6 reports it: "Uncaught (in promise) Error: message", with the stack
/// (and so the `file:line:column`) of where it was thrown.
fn uncaught<'js>(ctx: &Ctx<'js>, reason: Value<'js>) -> rquickjs::Error {
    const PREFIX: &str = "Uncaught (in promise)";
    let made = (|| -> rquickjs::Result<Object<'js>> {
        if let Some(ex) = reason
            .as_object()
            .and_then(|o| Exception::from_object(o.clone()))
        {
            let name = ex
                .get::<_, Option<Coerced<String>>>("name")?
                .map_or_else(|| "Error".to_string(), |c| c.0);
            let out = Exception::from_message(ctx.clone(), &ex.message().unwrap_or_default())?;
            out.set("name", format!("{PREFIX} {name}"))?;
            out.set("stack", ex.stack().unwrap_or_default())?;
            Ok(out.into_object())
        } else {
            let text = reason
                .get::<Coerced<String>>()
                .map(|c| c.0)
                .unwrap_or_default();
            let out = Exception::from_message(ctx.clone(), &text)?;
            out.set("name", PREFIX)?;
            out.set("stack", "")?;
            Ok(out.into_object())
        }
    })();
    match made {
        Ok(e) => ctx.throw(e.into_value()),
        Err(e) => e,
    }
}

/// Forget everything pending: timers, operations (dropping a spawned one aborts it),
/// resolvers, rejections.
fn clear(ctx: &Ctx<'_>, st: &VuState) {
    let p = &st.pending;
    p.timers.borrow_mut().clear();
    let ops = std::mem::take(&mut *p.ops.borrow_mut());
    let conts = std::mem::take(&mut *p.conts.borrow_mut());
    drop((ops, conts));
    p.active.set(false);
    if let Some(js) = ctx.vu_userdata::<Js>() {
        let timers = std::mem::take(&mut *js.timers.borrow_mut());
        let settle = std::mem::take(&mut *js.settle.borrow_mut());
        let rejected = std::mem::take(&mut *js.rejected.borrow_mut());
        drop((timers, settle, rejected));
    }
}
