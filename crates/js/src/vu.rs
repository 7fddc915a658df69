//! A VU: a QuickJS context on its own stackful coroutine, in a runtime shared with other
//! VUs of its worker thread (`shared`) or, with `VOLLEY_VU_RUNTIME=per-vu`, its own.
//!
//! k6 scripts are synchronous (`const r = http.get(url)`), so a native call that must wait
//! (a request, `sleep`) *suspends the coroutine* with a future; the VU's task on the worker's
//! current-thread tokio runtime awaits that future and resumes the coroutine with its output.
//! No OS thread is blocked and thousands of VUs share one worker.
//!
//! Pitfalls handled here (see DESIGN.md): the QuickJS runtime is created *inside* the
//! coroutine (QuickJS records its stack top at creation); coroutine stacks are [`CO_STACK`]
//! with a smaller JS limit [`JS_STACK`] so deep recursion throws a RangeError; a coroutine is
//! never dropped while suspended ([`JsVu`]'s `Drop` resumes it with `Exit` and lets it
//! finish); on a hard stop the pending future is dropped and the coroutine resumed with
//! `Cancelled`, so the native call throws and the iteration unwinds.
//!
//! Here: the VU's state and the coroutine's body (init, then one command at a
//! time); its global natives (`sleep`, `open`, console ...) are in `globals`, the
//! engine-facing [`JsVu`] (resuming, cancelling, timeouts) in `body`.

use crate::script::{self, BytecodeLoader, ModResolver, ScriptError};
use corosensei::{Coroutine, CoroutineResult, Yielder};
use rquickjs::function::Opt;
use rquickjs::{Context, Ctx, Function, Module, Object, Runtime, Value};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;
use volley_engine::vus::{Outcome, Phase, StopToken, VuBody, VuFactory, WorkerEnv};
use volley_metrics::{MetricKey, MetricKind, Recorder, TagSet, Unit};

mod body;
mod globals;
pub(crate) mod shared;
mod stack;
pub use body::JsVu;
pub(crate) use globals::{add_tags, install_globals, SharedScript};
pub use shared::runtimes_made as shared_runtimes_made;
pub use stack::releases as stack_releases;

/// Coroutine stack per VU (virtual memory; only touched pages cost RSS).
pub(crate) const CO_STACK: usize = 1024 * 1024;
/// QuickJS's own stack limit, well inside [`CO_STACK`] so Rust frames below JS still fit.
pub(crate) const JS_STACK: usize = 512 * 1024;

/// What every VU of a run shares (read-mostly, `Send + Sync`).
pub struct ScriptShared {
    pub(crate) main: String,
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) bytecode: OnceLock<HashMap<String, Vec<u8>>>,
    /// Files read by `open()`: read once, shared by every VU.
    pub(crate) files: Mutex<HashMap<PathBuf, Arc<Vec<u8>>>>,
    /// Running an archive: every file the script may read (nothing comes from the disk).
    pub(crate) archived: OnceLock<Arc<crate::archive::Files>>,
    /// `setup()`'s return value as JSON.
    pub(crate) setup_data: Mutex<Option<String>>,
    /// Custom metric names and kinds, so every VU agrees.
    pub(crate) metrics: Mutex<HashMap<String, (MetricKind, Unit)>>,
    pub(crate) errors_logged: AtomicU64,
    /// Settings from options (tags, HTTP options, timeouts, `--out json`), set before VUs start.
    pub(crate) settings: OnceLock<crate::options::RunSettings>,
    /// State of k6/execution, k6/data, CommonJS (`crate::modules`).
    pub(crate) ext: crate::modules::SharedExt,
    /// (group path, check name) in the order checks were first recorded: k6 v1's summary
    /// lists checks that way. Bounded by [`crate::check::CHECK_ORDER_MAX`].
    pub(crate) check_order: Mutex<crate::check::CheckOrder>,
}

impl ScriptShared {
    pub(crate) fn new(main: String, env: BTreeMap<String, String>) -> Self {
        ScriptShared {
            main,
            env,
            bytecode: OnceLock::new(),
            files: Mutex::new(HashMap::new()),
            archived: OnceLock::new(),
            setup_data: Mutex::new(None),
            metrics: Mutex::new(HashMap::new()),
            errors_logged: AtomicU64::new(0),
            settings: OnceLock::new(),
            ext: Default::default(),
            check_order: Mutex::new(Default::default()),
        }
    }

    /// The run's settings (defaults until `volley_js::run` sets them).
    pub(crate) fn settings(&self) -> &crate::options::RunSettings {
        static DEFAULT: OnceLock<crate::options::RunSettings> = OnceLock::new();
        self.settings
            .get()
            .unwrap_or_else(|| DEFAULT.get_or_init(Default::default))
    }

    /// A console.* call (`crate::shims` console.js): through the run's logger, as k6.
    pub(crate) fn log(&self, level: &str, msg: &str) {
        use volley_engine::log::{console, Level};
        let level = match level {
            "warn" => Level::Warn,
            "error" => Level::Error,
            "debug" => Level::Debug,
            _ => Level::Info,
        };
        console(level, msg);
    }
}

/// Messages into the coroutine.
pub(crate) enum Resume {
    Cmd(Cmd),
    /// The awaited future's output.
    Value(Box<dyn Any>),
    /// The awaited future was dropped (hard stop): throw and unwind.
    Cancelled,
}

pub(crate) enum Cmd {
    Init,
    Run(Phase),
    Exit,
}

type BoxFuture = Pin<Box<dyn Future<Output = Box<dyn Any>>>>;

/// Messages out of the coroutine.
pub(crate) enum Yield {
    Await(BoxFuture),
    Done(Outcome),
}

type Co = Coroutine<Resume, Yield, (), stack::VuStack>;

/// One VU's mutable state, reachable from its native functions.
pub(crate) struct VuState {
    pub(crate) id: u64,
    pub(crate) shared: Arc<ScriptShared>,
    pub(crate) rec: Rc<RefCell<Recorder>>,
    pub(crate) env: Option<WorkerEnv>,
    /// The scenario this VU runs iterations of (None: the init and setup/teardown VUs).
    pub(crate) scenario: Option<usize>,
    /// The running iteration's stop signal (graceful stop over, ramp-down, hard stop).
    pub(crate) stop: RefCell<Option<StopToken>>,
    /// The running iteration's index in its scenario (`exec.scenario.iterationInTest`).
    pub(crate) iteration: Cell<u64>,
    yielder: Cell<*const Yielder<Resume, Yield>>,
    pub(crate) in_init: Cell<bool>,
    /// Iterations may be cancelled by a hard stop; setup/teardown may not.
    cancellable: Cell<bool>,
    /// Set when a wait was cancelled: the current call ends as `Interrupted`.
    pub(crate) interrupted: Cell<bool>,
    /// The wait being suspended on is idle (`sleep`, timers): Ctrl-C ends it at once, while
    /// a request gets a short grace.
    idle_wait: Cell<bool>,
    /// Current group path ("" at the root, "::a::b" inside nested groups) and start times.
    pub(crate) group: RefCell<String>,
    /// The group path as a number (an index into `groups`): series caches compare this.
    pub(crate) group_id: Cell<u32>,
    groups: RefCell<Vec<String>>,
    group_starts: RefCell<Vec<Instant>>,
    /// Custom metrics declared by this VU: (name, kind, unit).
    metrics: RefCell<Vec<(String, MetricKind, Unit)>>,
    /// The VU's HTTP client (its connections and prepared requests; the run's settings).
    pub(crate) http: RefCell<volley_http::client::VuClient>,
    /// VU tags, cookie jars, response callback, abort (`crate::modules`).
    pub(crate) ext: crate::modules::VuExt,
    /// Timers and async operations of the running call (`crate::event_loop`).
    pub(crate) pending: crate::event_loop::Pending,
    /// Outside a VU task (`handleSummary`): when a signal means its timers must not be
    /// waited for.
    pub(crate) halt: RefCell<Option<Box<dyn Fn() -> bool>>>,
    /// The runtime this VU shares with others (null: a runtime of its own) and what it
    /// keeps of its running call while suspended (`shared`).
    shared_rt: Cell<*mut rquickjs::qjs::JSRuntime>,
    regs: Cell<shared::Regs>,
    /// An address in the frame of the last suspension: the stack below it (but the switch)
    /// is dead while the VU is suspended (`stack`).
    mark: Cell<usize>,
}

impl VuState {
    pub(crate) fn new_init(shared: Arc<ScriptShared>) -> Rc<VuState> {
        // Init code cannot make requests: the client gets default settings.
        let http = Arc::default();
        Rc::new(VuState::new(0, shared, http, Rc::default(), None, None))
    }

    fn new(
        id: u64,
        shared: Arc<ScriptShared>,
        http: Arc<volley_http::client::ClientSettings>,
        rec: Rc<RefCell<Recorder>>,
        env: Option<WorkerEnv>,
        scenario: Option<usize>,
    ) -> VuState {
        VuState {
            id,
            shared,
            rec,
            env,
            scenario,
            stop: RefCell::new(None),
            iteration: Cell::new(0),
            yielder: Cell::new(std::ptr::null()),
            in_init: Cell::new(true),
            cancellable: Cell::new(false),
            interrupted: Cell::new(false),
            idle_wait: Cell::new(false),
            group: RefCell::new(String::new()),
            group_id: Cell::new(0),
            groups: RefCell::new(vec![String::new()]),
            group_starts: RefCell::new(Vec::new()),
            metrics: RefCell::new(Vec::new()),
            http: RefCell::new(volley_http::client::VuClient::new(http)),
            ext: Default::default(),
            pending: Default::default(),
            halt: RefCell::new(None),
            shared_rt: Cell::new(std::ptr::null_mut()),
            regs: Cell::new(shared::Regs::default()),
            mark: Cell::new(usize::MAX),
        }
    }

    /// Suspend the coroutine with `out`; when the runtime is shared, take this VU's running
    /// call out of it meanwhile (`shared`).
    fn suspend(&self, y: &Yielder<Resume, Yield>, out: Yield) -> Resume {
        let here = std::hint::black_box(0u8);
        self.mark.set(std::ptr::addr_of!(here) as usize);
        let rt = self.shared_rt.get();
        if rt.is_null() {
            return y.suspend(out);
        }
        shared::switch_out(rt, self);
        let r = y.suspend(out);
        shared::switch_in(rt, self);
        r
    }

    /// The interrupt handler's question: must this VU's busy script stop now? An
    /// iteration or setup at Ctrl-C, anything past its stop or timeout, VU init code at
    /// Ctrl-C. The call then counts as interrupted.
    fn must_interrupt(&self) -> bool {
        let cut = if self.cancellable.get() {
            self.stop.borrow().as_ref().is_some_and(|t| t.must_end())
        } else {
            self.in_init.get() && self.env.as_ref().is_some_and(|e| e.is_interrupted())
        };
        if cut {
            self.interrupted.set(true);
        }
        cut
    }

    /// Suspend this VU until `fut` (a request) is done. `None`: cancelled (stopped, or the
    /// grace after Ctrl-C is over), or no coroutine (the init run, where waiting is not
    /// allowed).
    pub(crate) fn wait<T: 'static>(&self, fut: impl Future<Output = T> + 'static) -> Option<T> {
        self.wait_as(fut, false)
    }

    /// [`VuState::wait`] for an idle wait (`sleep`, timers): Ctrl-C ends it at once.
    pub(crate) fn wait_idle<T: 'static>(
        &self,
        fut: impl Future<Output = T> + 'static,
    ) -> Option<T> {
        self.wait_as(fut, true)
    }

    fn wait_as<T: 'static>(&self, fut: impl Future<Output = T> + 'static, idle: bool) -> Option<T> {
        let y = self.yielder.get();
        if y.is_null() || self.interrupted.get() {
            return None;
        }
        // After Ctrl-C nothing new starts waiting (a script that caught the interruption);
        // a stopped token cancels the wait at its first poll.
        let interrupted = self
            .stop
            .borrow()
            .as_ref()
            .is_some_and(|t| t.is_interrupted());
        if self.cancellable.get() && interrupted {
            self.interrupted.set(true);
            return None;
        }
        self.idle_wait.set(idle);
        let fut: BoxFuture = Box::pin(async move { Box::new(fut.await) as Box<dyn Any> });
        // SAFETY: the yielder lives as long as the coroutine body, and natives only run
        // inside that body (on the coroutine's stack).
        let y = unsafe { &*y };
        match self.suspend(y, Yield::Await(fut)) {
            Resume::Value(v) => v.downcast::<T>().ok().map(|b| *b),
            _ => {
                self.interrupted.set(true);
                None
            }
        }
    }

    /// Must a wait outside a VU task (init code, `handleSummary`) end now (Ctrl-C)?
    pub(crate) fn halted(&self) -> bool {
        self.env.as_ref().is_some_and(|e| e.is_interrupted())
            || self.halt.borrow().as_ref().is_some_and(|h| h())
    }

    /// `group` changed: look its id up (or give it the next one).
    fn group_changed(&self) {
        let g = self.group.borrow();
        let mut groups = self.groups.borrow_mut();
        let id = match groups.iter().position(|n| *n == *g) {
            Some(i) => i,
            None => {
                if let Ok(mut o) = self.shared.check_order.lock() {
                    o.note_group(&g);
                }
                groups.push(g.clone());
                groups.len() - 1
            }
        };
        self.group_id.set(id as u32);
    }

    /// Run what follows in group `path`: k6 tags everything `setup()`/`teardown()` record
    /// with `group: "::setup"`/`"::teardown"` (their checks and groups live under them).
    fn enter_group(&self, path: &str) {
        *self.group.borrow_mut() = path.to_string();
        self.group_changed();
    }

    /// This VU's scenario's spec, if it has one.
    pub(crate) fn scenario_spec(&self) -> Option<&volley_engine::executor::Scenario> {
        let (env, i) = (self.env.as_ref()?, self.scenario?);
        env.scenarios.get(i).map(|s| &s.spec)
    }

    /// Tags every sample of this VU carries (k6 system tags `scenario`, `group`, and the
    /// scenario's `tags`).
    pub(crate) fn base_tags(&self) -> TagSet {
        let settings = self.shared.settings();
        let mut t = settings.tags.clone();
        if let Some(spec) = self.scenario_spec() {
            for (k, v) in &spec.tags {
                t.insert(k.clone(), v.clone());
            }
            t.insert("scenario".into(), spec.name.clone());
        }
        t.insert("group".into(), self.group.borrow().clone());
        for (k, v) in self.ext.tags.borrow().iter() {
            t.insert(k.clone(), v.clone());
        }
        settings.filter_system_tags(&mut t);
        t
    }
}

/// The coroutine's body: create the runtime here (QuickJS takes this stack's top), or join
/// a shared one (`shared`), run init, then serve commands until `Exit`.
fn vu_main(y: &Yielder<Resume, Yield>, st: &Rc<VuState>, _first: Resume) {
    if shared::enabled() {
        return vu_main_shared(y, st);
    }
    let rt: Runtime = match crate::rt::vu_runtime() {
        Ok(rt) => rt,
        Err(e) => return fail(y, st, format!("cannot start QuickJS: {e}")),
    };
    rt.set_loader(
        ModResolver,
        BytecodeLoader {
            shared: st.shared.clone(),
        },
    );
    {
        let st = st.clone();
        rt.set_interrupt_handler(Some(Box::new(move || st.must_interrupt())));
    }
    crate::event_loop::track_rejections(&rt, Some(st.clone()));
    let ctx: Context = match crate::rt::vu_context(&rt) {
        Ok(c) => c,
        Err(e) => return fail(y, st, format!("cannot start QuickJS: {e}")),
    };
    ctx.with(|ctx| {
        let _data = crate::rt::DropVuData(&ctx);
        serve(y, st, &ctx)
    });
    drop(ctx);
    rt.set_interrupt_handler(None);
    drop(rt);
}

/// [`vu_main`] on a runtime shared with other VUs of this thread: this VU's context is
/// used without the runtime's lock (other VUs use theirs while this one is suspended),
/// and its running call is switched in and out around every suspension.
fn vu_main_shared(y: &Yielder<Resume, Yield>, st: &Rc<VuState>) {
    st.regs.set(shared::stack_top());
    let w = match shared::WorkerRt::join(&st.shared) {
        Ok(w) => w,
        Err(e) => return fail(y, st, format!("cannot start QuickJS: {e}")),
    };
    let context: Context = match crate::rt::vu_context(&w.rt) {
        Ok(c) => c,
        Err(e) => {
            w.leave();
            return fail(y, st, format!("cannot start QuickJS: {e}"));
        }
    };
    let raw = context.as_raw();
    // SAFETY: a live context of this runtime, used on this thread only.
    let rt = unsafe { rquickjs::qjs::JS_GetRuntime(raw.as_ptr()) };
    st.shared_rt.set(rt);
    shared::share_code(rt);
    shared::switch_in(rt, st);
    {
        // SAFETY: the runtime's lock guards nothing here: its contexts are used on this
        // thread only, one VU at a time, and none is inside rquickjs's lock meanwhile.
        let ctx = unsafe { Ctx::from_raw(raw) };
        {
            let _data = crate::rt::DropVuData(&ctx);
            serve(y, st, &ctx);
        }
        shared::drop_jobs(&ctx);
    }
    drop(context);
    shared::switch_out(rt, st);
    st.shared_rt.set(std::ptr::null_mut());
    w.leave();
}

/// The VU cannot start: report `msg` to every command until `Exit`.
fn fail(y: &Yielder<Resume, Yield>, st: &VuState, msg: String) {
    let mut r = st.suspend(y, Yield::Done(Outcome::Abort(msg.clone())));
    while !matches!(r, Resume::Cmd(Cmd::Exit)) {
        r = st.suspend(y, Yield::Done(Outcome::Abort(msg.clone())));
    }
}

/// VU init: the globals, then the script's module loaded and evaluated; its namespace.
/// Not inlined into [`serve`]: its locals would widen `serve`'s frame, which stays on the
/// stack under every suspension of the VU (its resident pages, `stack`).
#[inline(never)]
fn init_module<'js>(st: &Rc<VuState>, ctx: &Ctx<'js>) -> Result<Object<'js>, String> {
    install_globals(ctx, st).map_err(|e| script::describe(ctx, e))?;
    let main = &st.shared.main;
    let bc = st
        .shared
        .bytecode
        .get()
        .and_then(|m| m.get(main))
        .ok_or_else(|| format!("{main} was not compiled"))?;
    // SAFETY: bytecode written by JS_WriteObject in this process.
    let m = unsafe { Module::load(ctx.clone(), bc) }.map_err(|e| script::describe(ctx, e))?;
    let (m, promise) = m.eval().map_err(|e| script::describe(ctx, e))?;
    crate::event_loop::settle_module(ctx, st, &promise).map_err(|e| script::describe(ctx, e))?;
    promise
        .finish::<Value>()
        .map_err(|e| script::describe(ctx, e))?;
    // The natives stay reachable through the shims; the script does not need them.
    let _ = ctx.globals().remove("__volley");
    m.namespace().map_err(|e| script::describe(ctx, e))
}

fn serve<'js>(y: &Yielder<Resume, Yield>, st: &Rc<VuState>, ctx: &Ctx<'js>) {
    let ns = match init_module(st, ctx) {
        Ok(ns) => ns,
        Err(e) => return fail(y, st, e),
    };
    shared::debug_memory(ctx, st.id);
    st.in_init.set(false);
    let func = |name: &str| ns.get::<_, Option<Function<'js>>>(name).ok().flatten();
    // The function this VU's iterations call: its scenario's `exec`, or `default`.
    let exec_name = st
        .scenario_spec()
        .map_or("default", |s| s.exec_name())
        .to_string();
    // `noSetup` / `noTeardown` (k6's --no-setup / --no-teardown): as if not exported.
    let settings = st.shared.settings();
    let setup = func("setup").filter(|_| !settings.no_setup);
    let teardown = func("teardown").filter(|_| !settings.no_teardown);
    let default = func(&exec_name);
    let mut data: Option<Value<'js>> = None;
    let mut iter: u64 = 0;
    let mut outcome = Outcome::Ok;
    // Set every iteration: an atom spares looking the name up each time.
    let iter_key = rquickjs::Atom::from_str(ctx.clone(), "__ITER").ok();
    let globals = ctx.globals();
    loop {
        let cmd = match st.suspend(y, Yield::Done(std::mem::replace(&mut outcome, Outcome::Ok))) {
            Resume::Cmd(c) => c,
            // A stray wake-up outside a wait: report nothing new.
            _ => continue,
        };
        st.interrupted.set(false);
        if st.group_id.get() != 0 {
            *st.group.borrow_mut() = String::new();
            st.group_id.set(0);
        }
        st.group_starts.borrow_mut().clear();
        outcome = match cmd {
            Cmd::Exit => break,
            Cmd::Init => Outcome::Ok,
            Cmd::Run(Phase::Setup) => match &setup {
                None => Outcome::Ok,
                Some(f) => run_setup(ctx, st, f),
            },
            Cmd::Run(Phase::Teardown) => match &teardown {
                None => Outcome::Ok,
                Some(f) => run_teardown(ctx, st, f, setup_data(ctx, st, &mut data)),
            },
            Cmd::Run(Phase::Iteration(it)) => match &default {
                None => {
                    Outcome::Abort(format!("the script has no exported function '{exec_name}'"))
                }
                Some(f) => {
                    st.http.borrow_mut().new_iteration();
                    st.iteration.set(it.iteration);
                    crate::modules::begin_iteration(st);
                    if let Some(k) = &iter_key {
                        let _ = globals.set(k.clone(), iter);
                    }
                    iter += 1;
                    let d = setup_data(ctx, st, &mut data);
                    let began = std::time::Instant::now();
                    let r = crate::event_loop::settle(ctx, st, f.call((d,)));
                    // k6's minIterationDuration: a faster iteration sleeps out the rest
                    // (within the iteration, so iteration_duration includes it).
                    let min = st.shared.settings().min_iteration_duration;
                    if let Some(rest) = min.and_then(|m| m.checked_sub(began.elapsed())) {
                        if !st.interrupted.get() && !rest.is_zero() {
                            let _ = st.wait_idle(tokio::time::sleep(rest));
                        }
                    }
                    if iter == 3 && debug_memory_on() {
                        // Steady state: what the first iterations left (responses, caches).
                        eprintln!("vu-memory after 3 iterations:");
                        shared::debug_memory(ctx, st.id);
                    }
                    if let Some(msg) = crate::modules::end_iteration(st) {
                        // exec.test.abort(): stop the whole test (k6 exit code 108).
                        if r.is_err() {
                            let _ = ctx.catch();
                        }
                        Outcome::Abort(msg)
                    } else if st.interrupted.get() {
                        // Clear any pending exception and report the interruption.
                        if r.is_err() {
                            let _ = ctx.catch();
                        }
                        Outcome::Interrupted
                    } else {
                        match r {
                            Ok(_) => Outcome::Ok,
                            Err(e) => {
                                let msg = script::describe(ctx, e);
                                log_exception(st, &msg);
                                Outcome::Error(msg)
                            }
                        }
                    }
                }
            },
        };
    }
}

/// `setup()`, its data kept as JSON for every VU. Out of [`serve`]'s frame, as
/// [`init_module`].
#[inline(never)]
fn run_setup<'js>(ctx: &Ctx<'js>, st: &VuState, f: &Function<'js>) -> Outcome {
    st.enter_group("::setup");
    let r = crate::event_loop::settle(ctx, st, f.call(()));
    match r {
        _ if st.interrupted.get() => {
            if r.is_err() {
                let _ = ctx.catch();
            }
            Outcome::Interrupted
        }
        Err(e) => {
            let msg = script::describe(ctx, e);
            Outcome::Abort(crate::modules::take_abort(st).unwrap_or(msg))
        }
        Ok(v) => {
            let json = ctx
                .json_stringify(v)
                .ok()
                .flatten()
                .and_then(|s| s.to_string().ok());
            *st.shared.setup_data.lock().unwrap() = json;
            Outcome::Ok
        }
    }
}

/// `teardown(data)`. Out of [`serve`]'s frame, as [`init_module`].
#[inline(never)]
fn run_teardown<'js>(ctx: &Ctx<'js>, st: &VuState, f: &Function<'js>, d: Value<'js>) -> Outcome {
    st.enter_group("::teardown");
    let r = crate::event_loop::settle(ctx, st, f.call((d,)));
    match r {
        _ if st.interrupted.get() => {
            if r.is_err() {
                let _ = ctx.catch();
            }
            Outcome::Interrupted
        }
        Err(e) => Outcome::Error(script::describe(ctx, e)),
        Ok(_) => Outcome::Ok,
    }
}

/// `VOLLEY_DEBUG_VU_MEMORY` is set (`shared::debug_memory` prints).
fn debug_memory_on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("VOLLEY_DEBUG_VU_MEMORY").is_some())
}

/// The setup data for this VU: parsed from JSON once, then the same object every iteration.
fn setup_data<'js>(ctx: &Ctx<'js>, st: &VuState, cache: &mut Option<Value<'js>>) -> Value<'js> {
    if let Some(v) = cache {
        return v.clone();
    }
    let json = st.shared.setup_data.lock().unwrap().clone();
    let v = match json {
        Some(j) => ctx
            .json_parse(j)
            .unwrap_or_else(|_| Value::new_undefined(ctx.clone())),
        None => Value::new_undefined(ctx.clone()),
    };
    *cache = Some(v.clone());
    v
}

/// Log an iteration's exception as k6 does (rate-limited so a broken script cannot flood):
/// with its executor and scenario, and `source=stacktrace` unless it is a rejected promise.
fn log_exception(st: &VuState, msg: &str) {
    let n = st.shared.errors_logged.fetch_add(1, Ordering::Relaxed);
    if n < 20 || n.is_power_of_two() {
        let more = if n == 19 {
            " (further errors are logged sparsely)"
        } else {
            ""
        };
        let sc = st
            .env
            .as_ref()
            .zip(st.scenario)
            .and_then(|(e, i)| e.scenarios.get(i));
        let mut fields = Vec::with_capacity(3);
        if let Some(sc) = sc {
            fields.push(("executor", sc.spec.executor.name()));
            fields.push(("scenario", sc.spec.name.as_str()));
        }
        if !msg.contains("Uncaught (in promise)") {
            fields.push(("source", "stacktrace"));
        }
        volley_engine::log::log(
            volley_engine::log::Level::Error,
            &format!("{msg}{more}"),
            &fields,
        );
    }
}

/// Makes [`JsVu`]s for the engine.
pub struct JsFactory {
    pub(crate) shared: Arc<ScriptShared>,
    /// The run's HTTP settings, built once from the resolved options: every VU's client
    /// gets them at creation.
    pub(crate) http: Arc<volley_http::client::ClientSettings>,
}

impl VuFactory for JsFactory {
    type Body = JsVu;

    fn create(&self, env: &WorkerEnv, id: u64, scenario: Option<usize>) -> Result<JsVu, String> {
        // The raw outputs and the series guard are on the recorder already (the plan's).
        JsVu::new(id, self.shared.clone(), self.http.clone(), env, scenario).map_err(|e| e.0)
    }

    fn aborted_by_body(&self) -> bool {
        crate::modules::execution::script_aborted(&self.shared)
    }
}
