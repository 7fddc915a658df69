//! CommonJS for k6 scripts: `require()` and files that use `module.exports` / `exports`
//! (k6's jslib bundles are CommonJS).
//!
//! A file with no `import`/`export` statement that mentions `module.exports`, `exports.` or
//! `require(` is CommonJS. While compiling, such a file is wrapped into an ES module whose
//! default export is `module.exports` and whose named exports are the keys `module.exports`
//! had when the file was run once to find them (so `import { x } from "./cjs.js"` works
//! too). The file's code therefore runs twice during the one-off compile run (once to learn
//! the names), and once per VU after that. The wrapper keeps the file's line numbers.
//!
//! `require(name)` loads through the same module loader (so a file is compiled once and
//! shared as bytecode) and returns `module.exports` for CommonJS files, the namespace for ES
//! modules and k6 built-ins. As in k6 it works in the init context.

use crate::script::ModResolver;
use crate::vu::{ScriptShared, VuState};
use rquickjs::context::EvalOptions;
use rquickjs::function::Opt;
use rquickjs::loader::Resolver;
use rquickjs::{Ctx, Function, Module, Object, Value};
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::Mutex;

/// Module names `require()` asks the resolver for carry this prefix: already resolved.
pub(crate) const REQUIRE_PREFIX: &str = "volley-require:";

/// The CommonJS files of the run (by module name).
#[derive(Default)]
pub(crate) struct CjsModules {
    names: Mutex<HashSet<String>>,
}

impl CjsModules {
    pub(crate) fn insert(&self, name: &str) {
        self.names.lock().unwrap().insert(name.to_string());
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.names.lock().unwrap().contains(name)
    }
}

/// True for CommonJS source (see the module docs for the rule).
pub(crate) fn is_commonjs(source: &str) -> bool {
    let es = source.lines().any(|l| {
        let l = l.trim_start();
        [
            "import ", "import{", "import\"", "import'", "import*", "export ", "export{", "export*",
        ]
        .iter()
        .any(|p| l.starts_with(p))
    });
    !es && (source.contains("module.exports")
        || source.contains("exports.")
        || source.contains("require("))
}

fn prelude(name: &str) -> String {
    let quoted = serde_json::to_string(name).unwrap_or_default();
    format!(
        "const module = {{ exports: {{}} }}; const __volley_v = globalThis.__volley; \
         const __volley_req = (n) => __volley_v.require(n, {quoted}); \
         (function (module, exports, require) {{"
    )
}

fn call_suffix() -> &'static str {
    "\n}).call(module.exports, module, module.exports, __volley_req);\n"
}

/// A script that runs the file and returns the keys of its `module.exports`.
pub(crate) fn probe_source(name: &str, source: &str) -> String {
    format!(
        "(() => {{ {}{source}{} const e = module.exports; \
         return (e !== null && (typeof e === 'object' || typeof e === 'function')) \
         ? Object.keys(e) : []; }})()",
        prelude(name),
        call_suffix()
    )
}

/// The ES module standing in for a CommonJS file that exports `names`.
pub(crate) fn wrap(name: &str, source: &str, names: &[String]) -> String {
    let mut out = prelude(name);
    out.push_str(source);
    out.push_str(call_suffix());
    out.push_str("const __volley_e = module.exports;\nexport default __volley_e;\n");
    let valid = |n: &str| {
        n != "default"
            && n.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    };
    for (i, n) in names.iter().filter(|n| valid(n)).enumerate() {
        out.push_str(&format!(
            "const __volley_x{i} = __volley_e[{q}];\nexport {{ __volley_x{i} as {n} }};\n",
            q = serde_json::to_string(n).unwrap_or_default()
        ));
    }
    out
}

/// The source to compile for module `name`: CommonJS files come back wrapped (and are
/// recorded as CommonJS), everything else unchanged.
pub(crate) fn compile_source(
    ctx: &Ctx<'_>,
    shared: &ScriptShared,
    name: &str,
    source: String,
) -> String {
    if !is_commonjs(&source) {
        return source;
    }
    // Run it once to learn its export names; an error here shows again, with its
    // position, when the wrapped module runs.
    let mut opts = EvalOptions::default();
    opts.filename = Some(name.to_string());
    let names: Vec<String> = match ctx.eval_with_options(probe_source(name, &source), opts) {
        Ok(n) => n,
        Err(e) => {
            // Take the pending exception; the module's own run reports it.
            let _ = crate::script::describe(ctx, e);
            Vec::new()
        }
    };
    shared.ext.cjs.insert(name);
    wrap(name, &source, &names)
}

pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    v: &Object<'js>,
    st: &Rc<VuState>,
) -> rquickjs::Result<()> {
    let require = {
        let st = st.clone();
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, name: String, base: Opt<String>| -> rquickjs::Result<Value<'js>> {
                if !st.in_init.get() {
                    return Err(super::throw(
                        &ctx,
                        "require() can only be called in the init context (outside functions)",
                    ));
                }
                // The global form resolves against the module that calls it (as k6).
                let base = base
                    .0
                    .or_else(|| crate::script::caller_module(&ctx))
                    .unwrap_or_else(|| st.shared.main.clone());
                let resolved = ModResolver.resolve(&ctx, &base, &name, None)?;
                st.ext.requiring.borrow_mut().push(resolved.clone());
                let promise = Module::import(&ctx, format!("{REQUIRE_PREFIX}{resolved}"));
                let ns = promise.and_then(|p| p.finish::<Object<'js>>());
                st.ext.requiring.borrow_mut().pop();
                let ns = ns?;
                if st.shared.ext.cjs.contains(&resolved) {
                    ns.get("default")
                } else {
                    Ok(ns.into_value())
                }
            },
        )?
    };
    v.set("require", require.clone())?;
    ctx.globals().set("require", require)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commonjs_is_told_from_es_modules() {
        assert!(is_commonjs("module.exports = { a: 1 };"));
        assert!(is_commonjs("exports.a = 1;"));
        assert!(is_commonjs(
            "!function(e,t){module.exports=t()}(this,()=>1)"
        ));
        assert!(!is_commonjs("export const a = 1; // module.exports"));
        assert!(!is_commonjs(
            "import x from './y.js';\nconst z = require('a');"
        ));
        assert!(!is_commonjs("const a = 1;"));
    }

    #[test]
    fn the_wrapper_keeps_line_numbers() {
        let w = wrap(
            "lib/a.js",
            "exports.a = 1;\nexports.b = 2;",
            &["a".into(), "b".into(), "if".into(), "x-y".into()],
        );
        assert!(w.lines().next().unwrap().ends_with("exports.a = 1;"), "{w}");
        assert!(w.contains("export { __volley_x0 as a }"));
        assert!(w.contains("as if }"));
        assert!(!w.contains("x-y }"));
    }
}
