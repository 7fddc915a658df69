//! The QuickJS runtime and context each VU runs in, and their tuning; `ctx_data`: userdata
//! per context; `alloc`: the allocator QuickJS uses (mimalloc, and what it rounds up).
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
//! `RegExp`, `Date`, `Map`/`Set` and the typed arrays (~32 KB eagerly) are made on first use
//! ([`GROUPS`]; vendor/rquickjs-sys/VOLLEY.md, "Lazy intrinsics"); a runtime's contexts
//! share the modules' compiled code (`crate::vu::shared`). What a context's builtins cost,
//! group by group: the `a_vu_contexts_builtins_group_by_group` test, docs/vus.md.
//!
//! The biggest per-VU cost was not here but in QuickJS's allocator: each runtime kept a
//! partly filled 4 KB arena per size class, ~70 KB per VU. The workspace builds QuickJS
//! without them (`vendor/rquickjs-sys/VOLLEY.md`): 275.2 → 225.8 KiB per VU.

mod alloc;
mod ctx_data;
mod lazy;
use alloc::MiMalloc;
pub(crate) use ctx_data::{DropVuData, VuData};
pub(crate) use lazy::{lazy_shims, native};

use rquickjs::context::intrinsic;
use rquickjs::{Context, Runtime};

/// The intrinsics of a VU's context: everything k6's JS API relies on. `Eval` only sets a
/// pointer; the others follow, in this order, from [`GROUPS`] ([`vu_context`]).
type VuIntrinsics = (intrinsic::Eval, intrinsic::RegExpCompiler);

type Adder = unsafe extern "C" fn(*mut rquickjs::qjs::JSContext) -> std::ffi::c_int;

extern "C" {
    // Added to the vendored QuickJS (vendor/rquickjs-sys/VOLLEY.md, "Lazy intrinsics").
    fn JS_VolleyAddLazyDate(ctx: *mut rquickjs::qjs::JSContext) -> std::ffi::c_int;
    fn JS_VolleyAddLazyMapSet(ctx: *mut rquickjs::qjs::JSContext) -> std::ffi::c_int;
    fn JS_VolleyAddLazyTypedArrays(ctx: *mut rquickjs::qjs::JSContext) -> std::ffi::c_int;
    fn JS_VolleyAddLazyRegExp(ctx: *mut rquickjs::qjs::JSContext) -> std::ffi::c_int;
}

/// The intrinsics after [`VuIntrinsics`], in the order they are added: (lazy, eager).
/// `RegExp`, `Date`, `Map`/`Set` and the typed arrays are made on first use; `JSON`,
/// `Proxy`/`Reflect`, `Promise` (every module evaluation makes a promise) and
/// `performance` (one small object) with the context.
const GROUPS: [(Adder, Adder); 8] = [
    (JS_VolleyAddLazyRegExp, rquickjs::qjs::JS_AddIntrinsicRegExp),
    (
        rquickjs::qjs::JS_AddIntrinsicJSON,
        rquickjs::qjs::JS_AddIntrinsicJSON,
    ),
    (
        rquickjs::qjs::JS_AddIntrinsicProxy,
        rquickjs::qjs::JS_AddIntrinsicProxy,
    ),
    (
        rquickjs::qjs::JS_AddIntrinsicPromise,
        rquickjs::qjs::JS_AddIntrinsicPromise,
    ),
    (
        rquickjs::qjs::JS_AddPerformance,
        rquickjs::qjs::JS_AddPerformance,
    ),
    (JS_VolleyAddLazyDate, rquickjs::qjs::JS_AddIntrinsicDate),
    (JS_VolleyAddLazyMapSet, rquickjs::qjs::JS_AddIntrinsicMapSet),
    (
        JS_VolleyAddLazyTypedArrays,
        rquickjs::qjs::JS_AddIntrinsicTypedArrays,
    ),
];

/// Are `RegExp`, `Date`, `Map`/`Set` and the typed arrays made on first use (the default), or with
/// the context (`VOLLEY_LAZY_INTRINSICS=0`, to measure the difference)?
fn lazy_intrinsics() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("VOLLEY_LAZY_INTRINSICS").map_or(true, |v| v != "0"))
}

/// A VU's runtime. Call it on the VU's own (coroutine) stack: QuickJS records the stack top
/// when the runtime is created.
pub(crate) fn vu_runtime() -> rquickjs::Result<Runtime> {
    let rt = Runtime::new_with_alloc(MiMalloc)?;
    rt.set_max_stack_size(crate::vu::JS_STACK);
    Ok(rt)
}

/// A VU's context: QuickJS's base objects plus [`VuIntrinsics`], then [`GROUPS`]. The lazy
/// ones (`RegExp`, `Date`, `Map`/`Set`, the typed arrays) are ~32 KB per VU that most
/// scripts never touch: their globals stand in for them until a script touches one (or a
/// native or a regexp literal makes such an object), which makes the whole group as
/// QuickJS would have (same globals, order, flags).
pub(crate) fn vu_context(rt: &Runtime) -> rquickjs::Result<Context> {
    lazy_groups(Context::custom::<VuIntrinsics>(rt)?, lazy_intrinsics())
}

fn lazy_groups(ctx: Context, lazy: bool) -> rquickjs::Result<Context> {
    let raw = ctx.as_raw().as_ptr();
    for (lazy_add, eager_add) in GROUPS {
        // SAFETY: a live context, not in use elsewhere yet.
        let r = unsafe {
            if lazy {
                lazy_add(raw)
            } else {
                eager_add(raw)
            }
        };
        if r < 0 {
            return Err(rquickjs::Error::Allocation);
        }
    }
    Ok(ctx)
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

    /// Every global and its flags, and the typed arrays' own properties, as a script sees
    /// them (this realises the lazy group: it reads the values).
    const SNAPSHOT: &str = r#"
        const g = Object.getOwnPropertyNames(globalThis).map((n) => {
            const d = Object.getOwnPropertyDescriptor(globalThis, n);
            return [n, typeof d.value, !!d.writable, !!d.enumerable, !!d.configurable];
        });
        const protos = ["ArrayBuffer", "SharedArrayBuffer", "Uint8Array", "Float64Array",
            "BigInt64Array", "DataView", "Map", "Set", "WeakMap", "WeakSet", "Date",
            "RegExp"].map((n) => [n,
            Object.getOwnPropertyNames(globalThis[n]),
            Reflect.ownKeys(globalThis[n].prototype).map(String),
            Reflect.ownKeys(Object.getPrototypeOf(globalThis[n].prototype)).map(String)]);
        const iters = [new Map().entries(), new Set().values(), "a".matchAll(/a/g)].map((i) =>
            Reflect.ownKeys(Object.getPrototypeOf(i)).map(String));
        JSON.stringify([g, protos, iters, Object.getOwnPropertyNames(Atomics)])
    "#;

    fn context(rt: &Runtime, lazy: bool) -> Context {
        lazy_groups(Context::custom::<VuIntrinsics>(rt).unwrap(), lazy).unwrap()
    }

    /// Lazy typed arrays, `Map`/`Set` and `Date` look exactly like eager ones: the same globals in the same order
    /// with the same flags, the same constructors and prototypes; and they cost nothing
    /// until used.
    #[test]
    fn lazy_intrinsics_are_the_eager_ones_made_later() {
        let rt = vu_runtime().unwrap();
        let eager = context(&rt, false);
        let m0 = rt.memory_usage().malloc_size;
        let lazy = context(&rt, true);
        let m1 = rt.memory_usage().malloc_size;
        let third = context(&rt, false);
        let m2 = rt.memory_usage().malloc_size;
        // A lazy context is at least 8 KB smaller than an eager one.
        assert!(
            (m2 - m1) - (m1 - m0) > 8_000,
            "eager {} lazy {}",
            m2 - m1,
            m1 - m0
        );
        // Listing names and flags does not make them.
        let names = "JSON.stringify(Object.getOwnPropertyNames(globalThis))";
        let keys = |c: &Context| c.with(|ctx| ctx.eval::<String, _>(names).unwrap());
        assert_eq!(keys(&eager), keys(&lazy));
        // (the eval's own allocations are ~1 KB; making the typed arrays is > 8 KB)
        let m3 = rt.memory_usage().malloc_size;
        assert!(m3 - m2 < 4_000, "listing made them: {m2} -> {m3}");
        let snap = |c: &Context| c.with(|ctx| ctx.eval::<String, _>(SNAPSHOT).unwrap());
        let e = snap(&eager);
        assert!(
            e.contains(r#"["Uint8Array","function",true,false,true]"#),
            "{e}"
        );
        assert_eq!(e, snap(&lazy));
        assert_eq!(e, snap(&third));
    }

    /// Deleting or redefining a lazy global before first use, reading its descriptor, or a
    /// native making an ArrayBuffer first: as with eager typed arrays.
    #[test]
    fn lazy_intrinsics_deleted_redefined_or_made_natively_first() {
        let rt = vu_runtime().unwrap();
        let cases = [
            // Deleted before use: stays deleted when the group is made by another name.
            "delete globalThis.Uint8Array; \
             [typeof Uint8Array, new Int8Array(2).length, 'Uint8Array' in globalThis, \
              Object.getOwnPropertyNames(globalThis).includes('Uint8Array')].join()",
            // Assigned, then defined, before use.
            "globalThis.Int16Array = 5; \
             Object.defineProperty(globalThis, 'DataView', { value: 7, enumerable: true }); \
             const d = Object.getOwnPropertyDescriptor(globalThis, 'DataView'); \
             [Int16Array, d.value, d.enumerable, d.writable, new ArrayBuffer(3).byteLength].join()",
            // A descriptor realises it.
            "const f = Object.getOwnPropertyDescriptor(globalThis, 'Float64Array'); \
             [typeof f.value, f.writable, f.enumerable, f.configurable, \
              new f.value([1.5])[0]].join()",
            // Subclassing and species.
            "class B extends Uint8Array {}; const b = new B(4); \
             [b instanceof Uint8Array, b.subarray(1).constructor === B, \
              Object.getPrototypeOf(Uint8Array) === Object.getPrototypeOf(Int8Array)].join()",
        ];
        let more = [
            // The other lazy groups: Map/Set/WeakMap/WeakSet, Date.
            "delete globalThis.Map; \
             [typeof Map, new Set([1, 2]).size, new WeakMap() instanceof WeakMap, \
              'Map' in globalThis].join()",
            "globalThis.Date = 3; [Date, typeof new Map().set].join()",
            "const d = new Date(0); [d.toISOString(), d instanceof Date, \
             Object.getPrototypeOf(new Map().keys()) === \
             Object.getPrototypeOf(new Map().values())].join()",
        ];
        let regexp = [
            // RegExp: made by a literal, by String.prototype.match/search/matchAll with a
            // string, deleted or replaced before use, subclassed.
            "const r = /b+/g; [r.lastIndex, Object.getOwnPropertyNames(r).join('|'), \
             r instanceof RegExp, Object.getPrototypeOf(r) === RegExp.prototype, \
             'abbb'.replace(r, 'x')].join()",
            "['xaay'.match('a+')[0], 'xy'.search('y'), [...'a1a2'.matchAll('a')].length, \
             typeof RegExp].join()",
            "delete globalThis.RegExp; [typeof RegExp, /a/.test('a'), 'a'.match('a')[0], \
             'RegExp' in globalThis].join()",
            "globalThis.RegExp = 1; [RegExp, /a/.exec('ba').index, \
             Object.getPrototypeOf(/a/) === Object.getPrototypeOf(/b/)].join()",
            "class R extends RegExp {}; const r = new R('a', 'g'); \
             [r instanceof RegExp, 'aa'.split(r).length, r[Symbol.split]('bab')[1]].join()",
        ];
        let want = [
            "undefined,2,false,false",
            "5,7,true,true,3",
            "function,true,false,true,1.5",
            "true,true,true",
            "undefined,2,true,false",
            "3,function",
            "1970-01-01T00:00:00.000Z,true,true",
            "0,lastIndex,true,true,ax",
            "aa,1,2,function",
            "undefined,true,a,false",
            "1,1,true",
            "true,3,b",
        ];
        for (src, want) in cases.iter().chain(&more).chain(&regexp).zip(want) {
            let c = context(&rt, true);
            let got = c.with(|ctx| ctx.eval::<String, _>(*src).unwrap());
            assert_eq!(got, want, "{src}");
            let e = context(&rt, false);
            let eager = e.with(|ctx| ctx.eval::<String, _>(*src).unwrap());
            assert_eq!(eager, want, "eager: {src}");
        }
        // A native makes an ArrayBuffer (and a typed array) before any script touched them.
        let c = context(&rt, true);
        c.with(|ctx| {
            let ab = rquickjs::ArrayBuffer::new_copy(ctx.clone(), [1u8, 2, 3]).unwrap();
            ctx.globals().set("ab", ab).unwrap();
            let ok: bool = ctx
                .eval("Object.getPrototypeOf(ab) === ArrayBuffer.prototype && ab instanceof ArrayBuffer && new Uint8Array(ab)[2] === 3")
                .unwrap();
            assert!(ok);
        });
    }

    /// Where a context's builtins go (docs/vus.md, "What a VU's context holds"): a raw
    /// context, then each intrinsic group added alone, each measured as QuickJS accounts
    /// it. Run with `--nocapture` for the table; it asserts that the groups add up to a
    /// VU's context and that the lazy groups cost a fraction of the eager ones.
    #[test]
    fn a_vu_contexts_builtins_group_by_group() {
        use rquickjs::qjs;
        let rt = vu_runtime().unwrap();
        let anchor = Context::custom::<()>(&rt).unwrap();
        // SAFETY: raw contexts of this runtime, freed before it; nothing else runs.
        let raw_rt = unsafe { qjs::JS_GetRuntime(anchor.as_raw().as_ptr()) };
        let used = || rt.memory_usage().malloc_size;
        // (name, adder, part of a VU's context)
        type Step = (&'static str, Adder, bool);
        unsafe extern "C" fn none(_: *mut qjs::JSContext) -> std::ffi::c_int {
            0
        }
        unsafe extern "C" fn regexp_compiler(c: *mut qjs::JSContext) -> std::ffi::c_int {
            unsafe { qjs::JS_AddIntrinsicRegExpCompiler(c) };
            0
        }
        let steps: [Step; 15] = [
            (
                "raw context (Object, Function, Error, Array basics)",
                none,
                true,
            ),
            (
                "base objects (the other globals)",
                qjs::JS_AddIntrinsicBaseObjects,
                true,
            ),
            ("eval", qjs::JS_AddIntrinsicEval, true),
            ("RegExp compiler", regexp_compiler, true),
            ("RegExp (lazy)", JS_VolleyAddLazyRegExp, true),
            ("JSON", qjs::JS_AddIntrinsicJSON, true),
            ("Proxy, Reflect", qjs::JS_AddIntrinsicProxy, true),
            ("Promise", qjs::JS_AddIntrinsicPromise, true),
            ("performance", qjs::JS_AddPerformance, true),
            ("Date (lazy)", JS_VolleyAddLazyDate, true),
            ("Map/Set (lazy)", JS_VolleyAddLazyMapSet, true),
            ("typed arrays (lazy)", JS_VolleyAddLazyTypedArrays, true),
            ("RegExp (eager)", qjs::JS_AddIntrinsicRegExp, false),
            ("Date, Map/Set, typed arrays (eager)", eager_groups, false),
            ("WeakRef (not in VUs)", qjs::JS_AddIntrinsicWeakRef, false),
        ];
        unsafe extern "C" fn eager_groups(c: *mut qjs::JSContext) -> std::ffi::c_int {
            unsafe {
                qjs::JS_AddIntrinsicDate(c)
                    | qjs::JS_AddIntrinsicMapSet(c)
                    | qjs::JS_AddIntrinsicTypedArrays(c)
            }
        }
        let mut sizes = Vec::new();
        for (i, (name, add, _)) in steps.iter().enumerate() {
            let m0 = used();
            let ctx = unsafe { qjs::JS_NewContextRaw(raw_rt) };
            assert!(!ctx.is_null());
            let m1 = used();
            // Groups past the base objects need them (as in a VU's context).
            if i > 1 {
                assert_eq!(unsafe { qjs::JS_AddIntrinsicBaseObjects(ctx) }, 0);
            }
            let m2 = used();
            assert_eq!(unsafe { add(ctx) }, 0, "{name}");
            let m3 = used();
            unsafe { qjs::JS_FreeContext(ctx) };
            rt.run_gc();
            let size = if i == 0 { m1 - m0 } else { m3 - m2 };
            sizes.push(size);
            println!("{name:55} {size:>7} bytes");
        }
        // A VU's context is the raw context, the base objects and its groups, lazily (plus
        // ~1 KB of rquickjs's own per context).
        let m0 = used();
        let vu = vu_context(&rt).unwrap();
        let whole = used() - m0;
        drop(vu);
        let parts: i64 = steps
            .iter()
            .zip(&sizes)
            .filter(|(s, _)| s.2)
            .map(|(_, n)| n)
            .sum();
        println!("{:55} {whole:>7} bytes (parts: {parts})", "a VU's context");
        assert!((parts - whole).abs() < 2_000, "{parts} vs {whole}");
        // Lazy groups: under a tenth of what the eager ones cost.
        let lazy: i64 = sizes[9..12].iter().sum::<i64>() + sizes[4];
        let eager = sizes[12] + sizes[13];
        assert!(lazy * 10 < eager, "lazy {lazy}, eager {eager}");
        // A native (a Rust closure, as the `__volley` natives are), on an object.
        let ctx = vu_context(&rt).unwrap();
        ctx.with(|ctx| ctx.eval::<(), _>("globalThis.o = {}").unwrap());
        let m0 = used();
        ctx.with(|ctx| {
            let o: rquickjs::Object = ctx.globals().get("o").unwrap();
            for i in 0..100 {
                let f = rquickjs::Function::new(ctx.clone(), move || i).unwrap();
                o.set(format!("n{i}"), f).unwrap();
            }
        });
        let per_native = (used() - m0) / 100;
        println!("{:55} {per_native:>7} bytes", "a native function");
        assert!((100..1_000).contains(&per_native), "{per_native}");
    }

    /// Contexts of one runtime do not share the typed arrays' constructors or prototypes,
    /// and making them in one context leaves another's lazy.
    #[test]
    fn lazy_intrinsics_are_per_context() {
        let rt = vu_runtime().unwrap();
        let a = context(&rt, true);
        let b = context(&rt, true);
        let m0 = rt.memory_usage().malloc_size;
        a.with(|ctx| {
            ctx.eval::<(), _>("Uint8Array.prototype.mine = 1; globalThis.U = Uint8Array")
                .unwrap()
        });
        let m1 = rt.memory_usage().malloc_size;
        assert!(m1 - m0 > 8_000, "made in a: {m0} -> {m1}");
        b.with(|ctx| {
            let v: String = ctx
                .eval("[typeof Uint8Array.prototype.mine, typeof U].join()")
                .unwrap();
            assert_eq!(v, "undefined,undefined");
        });
        // Same class, different context: each has its own prototype.
        let pa = a.with(|ctx| ctx.eval::<i32, _>("new Uint8Array(1).mine").unwrap());
        assert_eq!(pa, 1);
    }
}
