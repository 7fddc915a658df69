//! The QuickJS runtime and context each VU runs in, and their tuning.
//!
//! A VU owns one runtime and one context, so whatever they hold is paid once per VU: at 5,000
//! VUs every KiB here is 5 MB (issue #4, per-VU memory). What was measured (5,000 VUs,
//! `bench/scripts/k6_sleep.js`, one iteration each, peak RSS ÷ VUs, see bench/RESULTS.md):
//!
//! - the context gets only the intrinsics k6 scripts can use: `Context::full` also installs
//!   `WeakRef`/`FinalizationRegistry` and `atob`/`btoa`, which k6 (goja) does not have:
//!   280.5 → 275.2 KiB per VU;
//! - a lower GC threshold (32 KiB .. 128 KiB instead of QuickJS's 256 KiB) changed nothing:
//!   initialising a VU leaves no cyclic garbage to collect;
//! - QuickJS allocating through mimalloc (v2 or v3, without the size header of rquickjs'
//!   `RustAllocator`) was 9-10 KiB per VU *worse* than glibc malloc.
//!
//! The typed arrays cost ~15 KiB per VU but `ArrayBuffer` is part of k6's API (binary
//! bodies, `k6/crypto`, `k6/encoding`), so they stay.
//!
//! The biggest per-VU cost was not here but in QuickJS's allocator: each runtime kept a
//! partly filled 4 KB arena per size class, ~70 KB per VU. The workspace builds QuickJS
//! without them (`vendor/rquickjs-sys/VOLLEY.md`): 275.2 → 225.6 KiB per VU.

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
    let rt = Runtime::new()?;
    rt.set_max_stack_size(crate::vu::JS_STACK);
    Ok(rt)
}

/// A VU's context: QuickJS's base objects plus [`VuIntrinsics`].
pub(crate) fn vu_context(rt: &Runtime) -> rquickjs::Result<Context> {
    Context::custom::<VuIntrinsics>(rt)
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
}
