//! The QuickJS runtime and context each VU runs in, and their tuning; `ctx_data`: userdata
//! per context.
//!
//! A VU owns one context (and, with `VOLLEY_VU_RUNTIME=per-vu`, one runtime; by default 32
//! VUs share one: `crate::vu::shared`), so whatever they hold is paid once per VU: at 5,000
//! VUs every KiB here is 5 MB (issue #4, per-VU memory). What was measured (5,000 VUs,
//! `bench/scripts/k6_sleep.js`, one iteration each, peak RSS ÷ VUs, see bench/RESULTS.md):
//!
//! - the context gets only the intrinsics k6 scripts can use: `Context::full` also installs
//!   `WeakRef`/`FinalizationRegistry` and `atob`/`btoa`, which k6 (goja) does not have:
//!   280.5 → 275.2 KiB per VU;
//! - a lower GC threshold (32 KiB .. 128 KiB instead of QuickJS's 256 KiB) changed nothing:
//!   initialising a VU leaves no cyclic garbage to collect;
//! - QuickJS allocates through mimalloc (v2, called directly: no size header as in rquickjs'
//!   `RustAllocator`): 225.8 → 220.3 KiB per VU, 5,000 VUs initialised with less CPU, the
//!   same requests per CPU-second. (While QuickJS still packed small blocks into its own
//!   4 KB arenas, mimalloc v2 and v3 were 9-10 KiB per VU worse than glibc malloc.) Only
//!   the VUs' runtimes use it; the rest of Volley keeps the system allocator.
//!
//! The typed arrays cost ~15 KiB per VU but `ArrayBuffer` is part of k6's API (binary
//! bodies, `k6/crypto`, `k6/encoding`), so they stay.
//!
//! The biggest per-VU cost was not here but in QuickJS's allocator: each runtime kept a
//! partly filled 4 KB arena per size class, ~70 KB per VU. The workspace builds QuickJS
//! without them (`vendor/rquickjs-sys/VOLLEY.md`): 275.2 → 225.8 KiB per VU.

mod ctx_data;
pub(crate) use ctx_data::{DropVuData, VuData};

use rquickjs::context::intrinsic;
use rquickjs::{Context, Runtime};

/// The intrinsics of a VU's context: everything k6's JS API relies on. `Eval` only sets a
/// pointer (the console shim is evaluated from source); `Performance` is one small object.
type VuIntrinsics = (
    intrinsic::Date,
    intrinsic::Eval,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::Proxy,
    intrinsic::MapSet,
    intrinsic::TypedArrays,
    intrinsic::Promise,
    intrinsic::Performance,
);

/// A VU's runtime. Call it on the VU's own (coroutine) stack: QuickJS records the stack top
/// when the runtime is created.
pub(crate) fn vu_runtime() -> rquickjs::Result<Runtime> {
    let rt = Runtime::new_with_alloc(MiMalloc)?;
    rt.set_max_stack_size(crate::vu::JS_STACK);
    Ok(rt)
}

/// A VU's context: QuickJS's base objects plus [`VuIntrinsics`].
pub(crate) fn vu_context(rt: &Runtime) -> rquickjs::Result<Context> {
    Context::custom::<VuIntrinsics>(rt)
}

extern "C" {
    // Part of mimalloc's basic API; libmimalloc-sys declares it only with its "extended"
    // feature (and the `cty` dependency that brings).
    fn mi_usable_size(p: *const std::ffi::c_void) -> usize;
}

/// QuickJS's allocations go straight to mimalloc: small blocks without a per-block header
/// and with finer size classes than glibc's 16-byte steps (a VU makes ~1,900 of them).
struct MiMalloc;

// SAFETY: every pointer comes from mimalloc (aligned to at least 8 bytes) and goes back to
// it; mi_usable_size reports what mi_malloc/mi_realloc made available.
unsafe impl rquickjs::allocator::Allocator for MiMalloc {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        unsafe { libmimalloc_sys::mi_malloc(size).cast() }
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        match count.checked_mul(size) {
            Some(n) => unsafe { libmimalloc_sys::mi_zalloc(n).cast() },
            None => std::ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        unsafe { libmimalloc_sys::mi_realloc(ptr.cast(), new_size).cast() }
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        unsafe { mi_usable_size(ptr.cast()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What k6 scripts and the shims use is there; what k6 does not have is not.
    #[test]
    fn a_vu_context_has_the_globals_k6_scripts_use() {
        let rt = vu_runtime().unwrap();
        let ctx = vu_context(&rt).unwrap();
        ctx.with(|ctx| {
            let present = [
                "Date",
                "RegExp",
                "JSON",
                "Proxy",
                "Reflect",
                "Map",
                "Set",
                "WeakMap",
                "WeakSet",
                "ArrayBuffer",
                "Uint8Array",
                "DataView",
                "Promise",
                "Symbol",
                "BigInt",
                "eval",
                "performance",
            ];
            for name in present {
                let t: String = ctx.eval(format!("typeof {name}")).unwrap();
                assert_ne!(t, "undefined", "{name} is missing");
            }
            for name in ["WeakRef", "FinalizationRegistry", "atob", "btoa"] {
                let t: String = ctx.eval(format!("typeof {name}")).unwrap();
                assert_eq!(t, "undefined", "{name} is not part of k6's runtime");
            }
            // The intrinsics work, not only exist: a regexp compiled at run time, a promise
            // job, typed arrays over a buffer, a date.
            let v: String = ctx
                .eval(
                    r#"
                    let out = [];
                    out.push(new RegExp("a(b+)", "g").exec("xabbb")[1]);
                    Promise.resolve(7).then((v) => out.push(v));
                    out.push(new Uint8Array(new ArrayBuffer(4)).length);
                    out.push(new Date(0).toISOString());
                    out.push(new Function("a", "return a * 2")(21));
                    JSON.stringify(out)
                    "#,
                )
                .unwrap();
            while ctx.execute_pending_job() {}
            assert_eq!(v, r#"["bbb",4,"1970-01-01T00:00:00.000Z",42]"#);
        });
    }

    /// The runtime's memory goes through mimalloc and QuickJS still accounts for it (its GC
    /// threshold and `memory_usage` rely on the usable sizes), including growth and release.
    #[test]
    fn runtime_memory_is_allocated_and_accounted() {
        let rt = vu_runtime().unwrap();
        let ctx = vu_context(&rt).unwrap();
        let before = rt.memory_usage().malloc_size;
        assert!(before > 50_000, "a context's intrinsics: {before}");
        ctx.with(|ctx| {
            let n: i32 = ctx
                .eval("globalThis.big = Array.from({length: 20000}, (_, i) => 'x' + i); big.length")
                .unwrap();
            assert_eq!(n, 20000);
        });
        let grown = rt.memory_usage().malloc_size;
        assert!(grown > before + 200_000, "{before} -> {grown}");
        ctx.with(|ctx| ctx.eval::<(), _>("delete globalThis.big").unwrap());
        rt.run_gc();
        let after = rt.memory_usage().malloc_size;
        assert!(after < grown - 200_000, "{grown} -> {after}");
    }
}
