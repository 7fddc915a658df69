//! Shared runtimes (the default; `VOLLEY_VU_RUNTIME=per-vu` turns them off): up to [`vus_per_runtime`] VUs of a worker
//! thread share one QuickJS runtime, each VU a context of its own on its own coroutine.
//!
//! A runtime keeps state about "the running call" that a VU suspended in the middle of a
//! call (a native waiting on the network) must take with it: the stack top (its stack limit
//! makes deep recursion a RangeError), the chain of stack frames (they live on the
//! suspended coroutine's stack) and a pending exception. The vendored QuickJS switches them
//! (`JS_VolleySwitch`, vendor/rquickjs-sys/VOLLEY.md): [`VuState::suspend`] saves them
//! before each suspension and installs them again after each resume. Runtime-wide hooks
//! decide by the VU that runs ([`CURRENT`]): the interrupt handler (gracefulStop, timeouts
//! reach only the VU they target) and the promise rejection tracker. Promise jobs run per
//! context (`JS_VolleyExecutePendingJobOf`: another VU's job must run on that VU's stack).
//! The runtime is never locked across a suspension: a VU uses its context through a raw
//! `Ctx` (rquickjs's runtime lock is a `RefCell` without its "parallel" feature).

use super::*;
use rquickjs::qjs;
use std::ffi::{c_int, c_void};
use std::rc::Weak;

/// What `JS_VolleySwitch` saves and installs (layout shared with quickjs.c).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Regs {
    stack_top: usize,
    frame: *mut c_void,
    exception: qjs::JSValue,
}

impl Default for Regs {
    fn default() -> Self {
        Regs {
            stack_top: 0,
            frame: std::ptr::null_mut(),
            exception: qjs::JS_UNINITIALIZED,
        }
    }
}

extern "C" {
    // Added to the vendored QuickJS (vendor/rquickjs-sys/VOLLEY.md).
    fn JS_VolleySwitch(rt: *mut qjs::JSRuntime, out: *mut Regs, inp: *const Regs);
    fn JS_VolleyStackPointer() -> usize;
    fn JS_VolleyExecutePendingJobOf(ctx: *mut qjs::JSContext) -> c_int;
    fn JS_VolleyDropJobsOf(ctx: *mut qjs::JSContext);
    fn JS_VolleyShareCode(rt: *mut qjs::JSRuntime, on: c_int);
}

/// Do a runtime's contexts share the modules' and the console shim's compiled code (the
/// default; `VOLLEY_SHARE_CODE=0` gives each context its own copy, to measure)? The
/// vendored QuickJS keeps one copy of each module's function bytecode per runtime, without
/// a realm: it runs in the realm of the VU that calls it (vendor/rquickjs-sys/VOLLEY.md,
/// "Code shared by a runtime's contexts").
pub(crate) fn share_code(rt: *mut qjs::JSRuntime) {
    static ON: OnceLock<bool> = OnceLock::new();
    let on = *ON.get_or_init(|| std::env::var("VOLLEY_SHARE_CODE").map_or(true, |v| v != "0"));
    // SAFETY: a live runtime; a flag read when bytecode is read.
    unsafe { JS_VolleyShareCode(rt, on as c_int) }
}

/// Do VUs share runtimes? Yes (`VOLLEY_VU_RUNTIME=shared`, the default) unless
/// `VOLLEY_VU_RUNTIME=per-vu` gives each VU a runtime of its own (the earlier model, kept
/// as a fallback).
pub(crate) fn enabled() -> bool {
    static MODE: OnceLock<bool> = OnceLock::new();
    *MODE.get_or_init(|| std::env::var("VOLLEY_VU_RUNTIME").map_or(true, |v| v != "per-vu"))
}

/// How many VUs one runtime serves (`VOLLEY_VUS_PER_RUNTIME`, default 32): more saves a
/// little memory, but one garbage collection then walks more VUs' objects at once.
pub(crate) fn vus_per_runtime() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("VOLLEY_VUS_PER_RUNTIME")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|n| *n > 0)
            .unwrap_or(32)
    })
}

/// Shared runtimes made in this process (tests check that VUs did share).
static RUNTIMES_MADE: AtomicU64 = AtomicU64::new(0);

/// How many shared runtimes this process has made (for tests).
pub fn runtimes_made() -> u64 {
    RUNTIMES_MADE.load(Ordering::Relaxed)
}

/// One runtime serving several VUs of this thread and run.
pub(crate) struct WorkerRt {
    pub(crate) rt: Runtime,
    /// The run's shared state (its address tells runs apart).
    key: usize,
    vus: Cell<usize>,
}

thread_local! {
    /// This thread's runtimes with room for more VUs.
    static RUNTIMES: RefCell<Vec<Weak<WorkerRt>>> = const { RefCell::new(Vec::new()) };
    /// The VU running on this thread (null between resumes).
    static CURRENT: Cell<*const VuState> = const { Cell::new(std::ptr::null()) };
}

/// Call `f` with the VU running on this thread, if any.
pub(crate) fn with_current<R>(f: impl FnOnce(&VuState) -> R) -> Option<R> {
    let p = CURRENT.with(|c| c.get());
    // SAFETY: set by `switch_in` to a VU whose coroutine runs now (its `Rc` is alive),
    // cleared before it suspends or ends.
    (!p.is_null()).then(|| f(unsafe { &*p }))
}

impl WorkerRt {
    /// A runtime of this thread for run `shared` with room for one more VU (made when none
    /// has). Call on the VU's coroutine stack.
    pub(crate) fn join(shared: &Arc<ScriptShared>) -> rquickjs::Result<Rc<WorkerRt>> {
        let key = Arc::as_ptr(shared) as usize;
        let max = vus_per_runtime();
        let found = RUNTIMES.with(|l| {
            let mut l = l.borrow_mut();
            l.retain(|w| w.strong_count() > 0);
            l.iter()
                .filter_map(Weak::upgrade)
                .find(|w| w.key == key && w.vus.get() < max)
        });
        let w = match found {
            Some(w) => w,
            None => {
                let rt = crate::rt::vu_runtime()?;
                rt.set_loader(
                    ModResolver,
                    BytecodeLoader {
                        shared: shared.clone(),
                    },
                );
                rt.set_interrupt_handler(Some(Box::new(|| {
                    with_current(|st| st.must_interrupt()).unwrap_or(false)
                })));
                crate::event_loop::track_rejections(&rt, None);
                RUNTIMES_MADE.fetch_add(1, Ordering::Relaxed);
                let w = Rc::new(WorkerRt {
                    rt,
                    key,
                    vus: Cell::new(0),
                });
                RUNTIMES.with(|l| l.borrow_mut().push(Rc::downgrade(&w)));
                w
            }
        };
        w.vus.set(w.vus.get() + 1);
        Ok(w)
    }

    /// A VU of this runtime has ended.
    pub(crate) fn leave(&self) {
        self.vus.set(self.vus.get().saturating_sub(1));
    }
}

impl Drop for WorkerRt {
    fn drop(&mut self) {
        self.rt.set_interrupt_handler(None);
        self.rt.set_host_promise_rejection_tracker(None);
    }
}

/// This coroutine's stack top, as QuickJS measures it: call at the coroutine's start.
pub(crate) fn stack_top() -> Regs {
    Regs {
        // SAFETY: reads the stack pointer.
        stack_top: unsafe { JS_VolleyStackPointer() },
        ..Regs::default()
    }
}

/// `st` starts or resumes running on `rt`.
pub(crate) fn switch_in(rt: *mut qjs::JSRuntime, st: &VuState) {
    let regs = st.regs.get();
    // SAFETY: a live runtime; what is installed was saved by `switch_out` of this VU (or is
    // its fresh stack top), and nothing of another VU's is left installed.
    unsafe { JS_VolleySwitch(rt, std::ptr::null_mut(), &regs) };
    CURRENT.with(|c| c.set(st));
}

/// `st` suspends (or ends): take its running call's state out of `rt`.
pub(crate) fn switch_out(rt: *mut qjs::JSRuntime, st: &VuState) {
    let mut regs = Regs::default();
    // SAFETY: a live runtime; `regs` takes over the pending exception's reference.
    unsafe { JS_VolleySwitch(rt, &mut regs, std::ptr::null()) };
    st.regs.set(regs);
    CURRENT.with(|c| c.set(std::ptr::null()));
}

/// Run one pending promise job of `ctx`'s (not another context's). False: none was pending.
pub(crate) fn run_job(ctx: &Ctx<'_>) -> bool {
    // SAFETY: a live context.
    let r = unsafe { JS_VolleyExecutePendingJobOf(ctx.as_raw().as_ptr()) };
    if r < 0 {
        // The job threw: its exception must not read as a later call's.
        let _ = ctx.catch();
    }
    r != 0
}

/// Forget `ctx`'s pending jobs: its VU ends while the runtime lives on.
pub(crate) fn drop_jobs(ctx: &Ctx<'_>) {
    // SAFETY: a live context.
    unsafe { JS_VolleyDropJobsOf(ctx.as_raw().as_ptr()) }
}

/// `VOLLEY_DEBUG_VU_MEMORY=1`: print the runtime's QuickJS heap (`JS_ComputeMemoryUsage`)
/// after each VU's init, to measure what a VU costs (bench/RESULTS.md, "per VU"): with
/// shared runtimes, the difference between two lines of one runtime is one VU.
pub(crate) fn debug_memory(ctx: &Ctx<'_>, vu: u64) {
    static ON: OnceLock<bool> = OnceLock::new();
    if !*ON.get_or_init(|| std::env::var_os("VOLLEY_DEBUG_VU_MEMORY").is_some()) {
        return;
    }
    // SAFETY: a live context; JSMemoryUsage is plain data QuickJS fills in.
    let m = unsafe {
        let rt = qjs::JS_GetRuntime(ctx.as_raw().as_ptr());
        let mut m: qjs::JSMemoryUsage = std::mem::zeroed();
        qjs::JS_ComputeMemoryUsage(rt, &mut m);
        m
    };
    eprintln!(
        "vu-memory vu={vu} malloc={} used={} allocs={} atoms={}/{} strings={}/{} objects={}/{} \
         props={}/{} shapes={}/{} js_funcs={}/{} code={} c_funcs={}",
        m.malloc_size,
        m.memory_used_size,
        m.malloc_count,
        m.atom_count,
        m.atom_size,
        m.str_count,
        m.str_size,
        m.obj_count,
        m.obj_size,
        m.prop_count,
        m.prop_size,
        m.shape_count,
        m.shape_size,
        m.js_func_count,
        m.js_func_size,
        m.js_func_code_size,
        m.c_func_count,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use rquickjs::{Context, Module};

    const SRC: &str = r#"
        let n = 0;
        export function f() { n += 1; return [n, globalThis.who, new Error("e") instanceof Error,
            Object.getPrototypeOf([]) === Array.prototype, (() => 1).constructor === Function]; }
    "#;

    /// With shared code on, a second context reading a module gets the first one's function
    /// bytecode (QuickJS's count of JS functions does not grow) and runs it in its own realm
    /// with its own module state; with it off, each context has a copy.
    #[test]
    fn a_runtimes_contexts_share_a_modules_code() {
        for on in [true, false] {
            let rt = crate::rt::vu_runtime().unwrap();
            let a = crate::rt::vu_context(&rt).unwrap();
            let b = crate::rt::vu_context(&rt).unwrap();
            let raw_rt = unsafe { qjs::JS_GetRuntime(a.as_raw().as_ptr()) };
            // SAFETY: a live runtime.
            unsafe { JS_VolleyShareCode(raw_rt, on as c_int) };
            let bc = crate::rt::vu_context(&rt).unwrap().with(|ctx| {
                Module::declare(ctx.clone(), "m.js", SRC)
                    .unwrap()
                    .write(Default::default())
                    .unwrap()
            });
            rt.run_gc();
            let funcs = || rt.memory_usage().js_func_count;
            let run = |c: &Context, who: i32| {
                c.with(|ctx| {
                    ctx.globals().set("who", who).unwrap();
                    // SAFETY: written above by this process's QuickJS.
                    let m = unsafe { Module::load(ctx.clone(), &bc) }.unwrap();
                    let (m, p) = m.eval().unwrap();
                    p.finish::<()>().unwrap();
                    let f: rquickjs::Function = m.get("f").unwrap();
                    f.call::<_, ()>(()).unwrap();
                    let v: rquickjs::Value = f.call(()).unwrap();
                    ctx.json_stringify(v).unwrap().unwrap().to_string().unwrap()
                })
            };
            let f0 = funcs();
            assert_eq!(run(&a, 1), "[2,1,true,true,true]");
            let f1 = funcs();
            assert_eq!(run(&b, 2), "[2,2,true,true,true]");
            let f2 = funcs();
            assert!(f1 > f0, "{f0} -> {f1}");
            if on {
                assert_eq!(f2, f1, "the second context copied the code");
            } else {
                assert_eq!(f2 - f1, f1 - f0, "without sharing each has a copy");
            }
        }
    }
}
