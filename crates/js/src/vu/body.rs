//! [`JsVu`]: the body the engine drives — the VU's coroutine, resumed with the output of each
//! future it waits on, or cancelled when its [`StopToken`](volley_engine::vus::StopToken) says
//! so (idle waits at Ctrl-C, requests after their grace, everything at a hard stop or past
//! setupTimeout/teardownTimeout).

use super::*;

/// The body the engine drives: a coroutine plus the bookkeeping to resume it.
pub struct JsVu {
    co: Option<Co>,
    state: Rc<VuState>,
    /// The coroutine's stack, to release its dead pages while the VU waits long.
    frames: stack::Frames,
}

impl JsVu {
    pub(super) fn new(
        id: u64,
        shared: Arc<ScriptShared>,
        http: Arc<volley_http::client::ClientSettings>,
        env: &WorkerEnv,
        scenario: Option<usize>,
    ) -> Result<JsVu, ScriptError> {
        let state = Rc::new(VuState::new(
            id,
            shared,
            http,
            env.recorder.clone(),
            Some(env.clone()),
            scenario,
        ));
        let st = state.clone();
        let stack = stack::VuStack::new().map_err(|e| ScriptError(stack_error(e)))?;
        let frames = stack.frames();
        let co = Coroutine::with_stack(stack, move |y: &Yielder<Resume, Yield>, first: Resume| {
            st.yielder.set(y as *const _);
            vu_main(y, &st, first);
            st.yielder.set(std::ptr::null());
        });
        let mut vu = JsVu {
            co: Some(co),
            state,
            frames,
        };
        match vu.resume_sync(Resume::Cmd(Cmd::Init)) {
            Some(Outcome::Ok) => {
                // Init is the deepest a VU usually goes (loading and evaluating modules).
                vu.release_stack();
                Ok(vu)
            }
            Some(Outcome::Abort(e)) | Some(Outcome::Error(e)) => Err(ScriptError(e)),
            _ => Err(ScriptError("VU init did not finish".into())),
        }
    }

    /// Give back the pages of the suspended coroutine's stack below its suspension point.
    fn release_stack(&self) {
        if self.co.as_ref().is_some_and(|c| c.started() && !c.done()) {
            // SAFETY: the coroutine is suspended (we are not inside it: it runs only within
            // our `resume` calls) and its stack lives in `self.co`; the mark is its last
            // suspension's.
            unsafe { self.frames.release_below(self.state.mark.get()) };
        }
    }

    /// Resume without awaiting anything (init, exit): a wait there is cancelled.
    fn resume_sync(&mut self, mut input: Resume) -> Option<Outcome> {
        let co = self.co.as_mut()?;
        // Bounded: each cancelled wait makes the script throw; a script that keeps
        // catching and waiting again is cut off by the interrupt flag.
        for _ in 0..10_000 {
            match co.resume(input) {
                CoroutineResult::Yield(Yield::Done(o)) => return Some(o),
                CoroutineResult::Yield(Yield::Await(_)) => input = Resume::Cancelled,
                CoroutineResult::Return(()) => {
                    self.co = None;
                    return None;
                }
            }
        }
        None
    }
}

impl VuBody for JsVu {
    async fn run(&mut self, phase: Phase) -> Outcome {
        let state = self.state.clone();
        let Some(env) = state.env.as_ref() else {
            return Outcome::Abort("the VU has no worker".into());
        };
        // k6 setupTimeout / teardownTimeout: waits past the deadline are cancelled and busy
        // code is interrupted (the interrupt handler reads the token too).
        let settings = self.state.shared.settings();
        let (token, limit) = match &phase {
            Phase::Iteration(c) => (c.stop.clone(), None),
            Phase::Setup => {
                let d = settings.setup_timeout;
                (env.lifecycle_token(d, false), Some(("setup", d)))
            }
            Phase::Teardown => {
                let d = settings.teardown_timeout;
                (env.lifecycle_token(d, true), Some(("teardown", d)))
            }
        };
        self.state.cancellable.set(true);
        *self.state.stop.borrow_mut() = Some(token.clone());
        let waits = env.waits();
        let mut input = Resume::Cmd(Cmd::Run(phase));
        loop {
            let Some(co) = self.co.as_mut() else {
                return Outcome::Abort("the VU has ended".into());
            };
            match co.resume(input) {
                CoroutineResult::Yield(Yield::Done(o)) => {
                    if let Some((name, d)) = limit.filter(|_| token.timed_out()) {
                        if o != Outcome::Ok {
                            return Outcome::Abort(crate::timeout_message(name, d));
                        }
                    }
                    return o;
                }
                CoroutineResult::Return(()) => {
                    self.co = None;
                    return Outcome::Abort("the VU ended unexpectedly".into());
                }
                CoroutineResult::Yield(Yield::Await(fut)) => {
                    // Counted for the stop message; idle waits end at Ctrl-C, requests get a
                    // grace. The token first: a stopped one cancels without polling `fut`.
                    let idle = self.state.idle_wait.get();
                    let n = if idle {
                        &waits.sleeping
                    } else {
                        &waits.requests
                    };
                    let _counted = Counted::new(n);
                    input = if idle {
                        self.idle_wait(&token, fut).await
                    } else {
                        tokio::select! {
                            biased;
                            _ = token.stopped() => Resume::Cancelled,
                            v = fut => Resume::Value(v),
                        }
                    };
                }
            }
        }
    }
}

impl JsVu {
    /// An idle wait (`sleep`, timers): if it lasts [`stack::release_delay`], the stack's
    /// pages below the suspension point go back to the kernel meanwhile, and the idle
    /// connections' read buffers are freed (the next request allocates them again).
    async fn idle_wait(&self, token: &StopToken, mut fut: BoxFuture) -> Resume {
        let mut release = stack::release_delay().map(|d| Box::pin(tokio::time::sleep(d)));
        loop {
            tokio::select! {
                biased;
                _ = token.interrupted() => return Resume::Cancelled,
                v = &mut fut => return Resume::Value(v),
                _ = async { release.as_mut().expect("checked").await }, if release.is_some() => {
                    release = None;
                    self.release_stack();
                    if let Ok(mut http) = self.state.http.try_borrow_mut() {
                        http.release_idle_buffers();
                    }
                }
            }
        }
    }
}

/// Why a VU's stack could not be made, with the likely limit: Linux allows
/// `vm.max_map_count` (65,530 by default) mappings per process; a stack of its own is two
/// (~32,000 VUs), a chunk of 64 pooled stacks one (`stack`).
fn stack_error(e: std::io::Error) -> String {
    let max = std::fs::read_to_string("/proc/sys/vm/max_map_count").ok();
    match max.as_deref().map(str::trim) {
        Some(n) if e.raw_os_error() == Some(12) => format!(
            "cannot allocate a VU stack: {e}; vm.max_map_count is {n} (raise it for more \
             VUs: sysctl -w vm.max_map_count=262144)"
        ),
        _ => format!("cannot allocate a VU stack: {e}"),
    }
}

/// One wait in a worker's counters, for as long as it lasts (even if the call is dropped).
struct Counted<'a>(&'a AtomicU64);

impl<'a> Counted<'a> {
    fn new(n: &'a AtomicU64) -> Self {
        n.fetch_add(1, Ordering::Relaxed);
        Counted(n)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Drop for JsVu {
    fn drop(&mut self) {
        // Never drop a suspended coroutine: let it leave its loop and free the runtime.
        if self.co.is_some() {
            let _ = self.resume_sync(Resume::Cmd(Cmd::Exit));
        }
        if let Some(co) = self.co.take() {
            if co.started() && !co.done() {
                // Should not happen; leaking is safer than unwinding through QuickJS frames.
                std::mem::forget(co);
            }
        }
    }
}
