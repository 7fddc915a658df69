//! Loading a script: module resolution, compiling every module to bytecode once, and running
//! the init code once to read `options` (as k6 does before it starts VUs).
//!
//! Module names are paths as the user wrote them, joined and normalised (`tests/k6/a.js`
//! importing `./lib/b.js` is `tests/k6/lib/b.js`), so error positions read naturally. The
//! built-in k6 modules are small JS files (`src/shims/`) over the native `__volley` object.

use crate::vu::{install_globals, ScriptShared, VuState};
use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::{CaughtError, Context, Ctx, Module, Runtime, Value, WriteOptions};
use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

/// The k6 modules Volley serves, and their sources.
pub(crate) const BUILTINS: &[(&str, &str)] = &[
    ("k6", include_str!("shims/k6.js")),
    ("k6/http", include_str!("shims/k6_http.js")),
    ("k6/metrics", include_str!("shims/k6_metrics.js")),
    // Internal: the k6/http extras (files, cookies, expected statuses...).
    ("volley/http-ext", include_str!("shims/k6_http_ext.js")),
    ("k6/encoding", include_str!("shims/k6_encoding.js")),
    ("k6/crypto", include_str!("shims/k6_crypto.js")),
    ("k6/execution", include_str!("shims/k6_execution.js")),
    ("k6/data", include_str!("shims/k6_data.js")),
    ("k6/timers", include_str!("shims/k6_timers.js")),
    ("k6/html", include_str!("shims/k6_html.js")),
    // Volley's own: acknowledged operations for verification after faults.
    ("volley/ledger", include_str!("shims/volley_ledger.js")),
    ("k6/ws", include_str!("shims/k6_ws.js")),
    // Internal: what the two WebSocket modules share.
    ("volley/ws-common", include_str!("shims/k6_ws_common.js")),
    ("k6/websockets", include_str!("shims/k6_websockets.js")),
    ("k6/net/grpc", include_str!("shims/k6_net_grpc.js")),
    // k6 v1's name before the module left experimental.
    (
        "k6/experimental/websockets",
        include_str!("shims/k6_websockets.js"),
    ),
    (
        "k6/experimental/fs",
        include_str!("shims/k6_experimental_fs.js"),
    ),
    (
        "k6/experimental/csv",
        include_str!("shims/k6_experimental_csv.js"),
    ),
    (
        crate::modules::JSLIB_UTILS,
        include_str!("shims/jslib_k6_utils.js"),
    ),
    (
        crate::modules::JSLIB_SUMMARY,
        include_str!("shims/jslib_k6_summary.js"),
    ),
];

/// k6 modules that exist but Volley does not serve yet (a clear error instead of "not found").
const PLANNED: &[&str] = &["k6/experimental"];

pub(crate) const CONSOLE_JS: &str = include_str!("shims/console.js");

/// A script error with its position, ready to print.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptError(pub String);

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScriptError {}

/// A compiled script: every module's bytecode plus what the init run found out.
pub struct Script {
    /// The entry module's name (the path as given).
    pub main: String,
    /// `export const options`, as JSON (null when absent).
    pub options: serde_json::Value,
    pub has_setup: bool,
    pub has_teardown: bool,
    pub has_default: bool,
    /// Names of the exported functions (what a scenario's `exec` may name).
    pub functions: Vec<String>,
    /// What every VU shares: bytecode, `__ENV`, opened files, setup data.
    pub(crate) shared: Arc<ScriptShared>,
}

/// Largest script or module file: 64 MiB (bundled suites are a few MiB). Larger input, or
/// a device such as /dev/zero, is refused after reading at most this much.
pub const MAX_SCRIPT_BYTES: u64 = 64 << 20;

/// Largest file `open()` reads: 256 MiB (every VU gets its own copy as a string).
pub const MAX_OPEN_BYTES: u64 = 256 << 20;

/// Read at most `limit` bytes of `path`; a longer file (or an endless device) is an error
/// naming the limit, found without reading more than one byte past it.
pub fn read_capped(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    f.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|e| e.to_string())?;
    if buf.len() as u64 > limit {
        return Err(format!("larger than the limit of {} MiB", limit >> 20));
    }
    Ok(buf)
}

fn read_source(path: &Path) -> Result<String, String> {
    let b = read_capped(path, MAX_SCRIPT_BYTES)?;
    String::from_utf8(b).map_err(|_| "stream did not contain valid UTF-8".to_string())
}

/// A user module's JavaScript: its source, compiled first when it is TypeScript.
fn module_source(name: &str, source: String) -> Result<String, String> {
    if crate::typescript::is_typescript(name) {
        crate::typescript::compile(name, source)
    } else {
        Ok(source)
    }
}

/// Compile `path` and run its init code once. `env` becomes `__ENV`.
pub fn load(path: &Path, env: BTreeMap<String, String>) -> Result<Script, ScriptError> {
    load_interruptible(path, env, None)
}

/// [`load`], with init code that Ctrl-C on `ctl` interrupts (a busy or slow init).
pub fn load_interruptible(
    path: &Path,
    env: BTreeMap<String, String>,
    ctl: Option<&volley_engine::RunControl>,
) -> Result<Script, ScriptError> {
    load_with(path, env, ctl, None)
}

/// [`load_interruptible`], with every file (script, modules, `open()`ed files) served from
/// `archived` (absolute path → bytes) instead of the disk: `volley run test.tar`.
pub(crate) fn load_with(
    path: &Path,
    env: BTreeMap<String, String>,
    ctl: Option<&volley_engine::RunControl>,
    archived: Option<Arc<crate::archive::Files>>,
) -> Result<Script, ScriptError> {
    let main = normalize(&path.to_string_lossy());
    let shared = Arc::new(ScriptShared::new(main.clone(), env));
    if let Some(files) = archived {
        let mut opened = shared.files.lock().unwrap();
        for (p, b) in files.iter() {
            opened.insert(PathBuf::from(p), b.clone());
        }
        drop(opened);
        let _ = shared.archived.set(files);
    }
    let source = shared
        .read_module(&main)
        .map_err(|e| ScriptError(format!("cannot read script {}: {e}", path.display())))?;
    let source = module_source(&main, source).map_err(ScriptError)?;
    let compiled: Rc<std::cell::RefCell<HashMap<String, Vec<u8>>>> = Default::default();
    let rt = Runtime::new().map_err(|e| ScriptError(format!("cannot start QuickJS: {e}")))?;
    rt.set_max_stack_size(crate::vu::JS_STACK);
    if let Some(ctl) = ctl.cloned() {
        rt.set_interrupt_handler(Some(Box::new(move || ctl.was_interrupted())));
    }
    rt.set_loader(
        ModResolver,
        CompilingLoader {
            out: compiled.clone(),
            shared: shared.clone(),
        },
    );
    let ctx = Context::full(&rt).map_err(|e| ScriptError(format!("cannot start QuickJS: {e}")))?;
    // The init run: a VU with id 0 whose recorder is thrown away.
    let state = VuState::new_init(shared.clone());
    crate::event_loop::track_rejections(&rt, Some(state.clone()));
    let found = ctx.with(|ctx| -> Result<_, ScriptError> {
        let _data = crate::rt::DropVuData(&ctx);
        install_globals(&ctx, &state).map_err(|e| js_error(&ctx, e))?;
        let m =
            Module::declare(ctx.clone(), main.clone(), source).map_err(|e| js_error(&ctx, e))?;
        let bc = m
            .write(WriteOptions::default())
            .map_err(|e| js_error(&ctx, e))?;
        compiled.borrow_mut().insert(main.clone(), bc);
        let (m, promise) = m.eval().map_err(|e| js_error(&ctx, e))?;
        crate::event_loop::settle_module(&ctx, &state, &promise).map_err(|e| js_error(&ctx, e))?;
        promise.finish::<Value>().map_err(|e| js_error(&ctx, e))?;
        let ns = m.namespace().map_err(|e| js_error(&ctx, e))?;
        let has = |name: &str| {
            ns.get::<_, Value>(name)
                .map(|v| v.is_function())
                .unwrap_or(false)
        };
        let mut functions = Vec::new();
        for k in ns.keys::<String>() {
            let k = k.map_err(|e| js_error(&ctx, e))?;
            if has(&k) {
                functions.push(k);
            }
        }
        let flags = (has("default"), has("setup"), has("teardown"), functions);
        let opts: Value = ns.get("options").map_err(|e| js_error(&ctx, e))?;
        let options = if opts.is_undefined() || opts.is_null() {
            serde_json::Value::Null
        } else {
            let s = ctx
                .json_stringify(opts)
                .map_err(|e| js_error(&ctx, e))?
                .map(|s| s.to_string().unwrap_or_default())
                .unwrap_or_default();
            serde_json::from_str(&s)
                .map_err(|e| ScriptError(format!("{main}: options are not valid JSON: {e}")))?
        };
        Ok((flags, options))
    })?;
    drop(ctx);
    drop(rt);
    drop(state);
    let ((d, s, t, functions), options) = found;
    let _ = shared
        .bytecode
        .set(std::mem::take(&mut *compiled.borrow_mut()));
    // Files opened during init stay in `shared` for the VUs.
    Ok(Script {
        main,
        options,
        has_default: d,
        has_setup: s,
        has_teardown: t,
        functions,
        shared,
    })
}

/// Run queued promise jobs (bounded: a script cannot keep us here forever).
pub(crate) fn drain_jobs(ctx: &Ctx<'_>) {
    for _ in 0..100_000 {
        if !crate::vu::shared::run_job(ctx) {
            break;
        }
    }
}

impl ScriptShared {
    /// A module's source: from the archive when running one (never the disk), else the file.
    pub(crate) fn read_module(&self, name: &str) -> Result<String, String> {
        match self.archived.get() {
            Some(files) => {
                let b = files.get(name).ok_or(crate::archive::NOT_ARCHIVED)?;
                String::from_utf8(b.to_vec())
                    .map_err(|_| "stream did not contain valid UTF-8".to_string())
            }
            None => read_source(Path::new(name)),
        }
    }
}

/// Join `name` onto the directory of `base` and normalise `.`/`..`.
fn join_relative(base: &str, name: &str) -> String {
    let dir = Path::new(base).parent().unwrap_or(Path::new(""));
    normalize(&dir.join(name).to_string_lossy())
}

/// Lexical normalisation (as k6's file URLs): `..` removes a named component only, so a
/// leading `../..` is kept (`../../lib.js` is not `lib.js`) and `/..` stays `/`.
pub(crate) fn normalize(p: &str) -> String {
    let mut out = PathBuf::new();
    for c in Path::new(p).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    out.to_string_lossy().into_owned()
}

/// How far up the stack [`calling_module`] looks (init code is shallow; this bounds the
/// quadratic walk of `JS_GetScriptOrModuleName`).
const MAX_FRAMES: isize = 256;

/// The module a native init-context call (`open()`) is relative to, as k6 decides it: the
/// file being `require()`d when there is one, else the module whose top-level code is
/// running (the bottom JS frame). A helper in `lib/a.js` that calls `open()` while
/// `main.js` runs resolves against `main.js`, as in k6.
pub(crate) fn calling_module(ctx: &Ctx<'_>, requiring: Option<String>, main: &str) -> String {
    if let Some(r) = requiring {
        return r;
    }
    let mut bottom = None;
    for level in 0..MAX_FRAMES {
        if let Some(name) = ctx
            .script_or_module_name(level)
            .and_then(|a| a.to_string().ok())
        {
            if is_user_module(&name) {
                bottom = Some(name);
            }
        }
    }
    bottom.unwrap_or_else(|| main.to_string())
}

/// The module whose code called the running native function (`require()` without a base).
pub(crate) fn caller_module(ctx: &Ctx<'_>) -> Option<String> {
    (0..MAX_FRAMES)
        .filter_map(|l| ctx.script_or_module_name(l)?.to_string().ok())
        .find(|n| is_user_module(n))
}

/// A script's own file, not a built-in shim or an eval'd snippet.
fn is_user_module(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('<')
        // rquickjs' name for `ctx.eval` code (the console shim).
        && name != "eval_script"
        && !BUILTINS.iter().any(|(n, _)| *n == name)
}

/// Where a relative `open()` path of module `module` points.
pub(crate) fn open_path(module: &str, path: &str) -> PathBuf {
    if Path::new(path).is_absolute() {
        return PathBuf::from(path);
    }
    PathBuf::from(join_relative(module, path))
}

/// Resolves k6 built-ins and relative paths; everything else gets a clear error.
pub(crate) struct ModResolver;

impl Resolver for ModResolver {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        if BUILTINS.iter().any(|(n, _)| *n == name) {
            return Ok(name.to_string());
        }
        // `require()` resolves first and hands over the final name.
        if let Some(resolved) = name.strip_prefix(crate::modules::commonjs::REQUIRE_PREFIX) {
            return Ok(resolved.to_string());
        }
        if let Some(builtin) = crate::modules::jslib(name) {
            return Ok(builtin.to_string());
        }
        let msg = |m: String| rquickjs::Error::new_resolving_message(base, name, m);
        if name == "k6" || name.starts_with("k6/") {
            let planned = PLANNED.iter().any(|p| name.starts_with(p));
            return Err(msg(if planned {
                format!("module '{name}' is not supported by volley yet")
            } else {
                format!("unknown k6 module '{name}'")
            }));
        }
        if name.starts_with("http://") || name.starts_with("https://") {
            return Err(msg(
                "remote modules are not fetched: save it next to the script, \
                 import it by relative path"
                    .into(),
            ));
        }
        if name.starts_with("./") || name.starts_with("../") || name.starts_with('/') {
            return Ok(if name.starts_with('/') {
                normalize(name)
            } else {
                join_relative(base, name)
            });
        }
        Err(msg(format!(
            "cannot import '{name}': use a relative path such as './{name}' or a k6 module"
        )))
    }
}

/// Loader used once, while compiling: declares each module from source and keeps its bytecode.
struct CompilingLoader {
    out: Rc<std::cell::RefCell<HashMap<String, Vec<u8>>>>,
    /// Where CommonJS files are recorded (see `modules::commonjs`).
    shared: Arc<ScriptShared>,
}

impl Loader for CompilingLoader {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js>> {
        let source = match BUILTINS.iter().find(|(n, _)| *n == name) {
            Some((_, src)) => src.to_string(),
            None => self
                .shared
                .read_module(name)
                .map_err(|e| format!("cannot read {name}: {e}"))
                .and_then(|s| module_source(name, s))
                .map_err(|e| rquickjs::Error::new_loading_message(name, e))?,
        };
        let source = crate::modules::commonjs::compile_source(ctx, &self.shared, name, source);
        let m = Module::declare(ctx.clone(), name, source)?;
        // Every VU loads every module's bytecode into its own runtime: the built-in shims
        // are written without their source text and line tables (tens of KiB per VU; a
        // stack trace still shows the script's own frames). Scripts keep theirs.
        let builtin = BUILTINS.iter().any(|(n, _)| *n == name);
        let bc = m.write(WriteOptions {
            strip_source: builtin,
            strip_debug: builtin,
            ..WriteOptions::default()
        })?;
        self.out.borrow_mut().insert(name.to_string(), bc);
        Ok(m)
    }
}

/// Loader every VU uses: modules come from the bytecode compiled once.
pub(crate) struct BytecodeLoader {
    pub(crate) shared: Arc<ScriptShared>,
}

impl Loader for BytecodeLoader {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js>> {
        let Some(bc) = self.shared.bytecode.get().and_then(|m| m.get(name)) else {
            return Err(rquickjs::Error::new_loading_message(
                name,
                "module was not seen while compiling (dynamic import?)",
            ));
        };
        // SAFETY: the bytes were written by QuickJS's own JS_WriteObject in this process.
        unsafe { Module::load(ctx.clone(), bc) }
    }
}

/// Turn a QuickJS error into "file:line:col: Name: message" plus the stack.
pub(crate) fn js_error(ctx: &Ctx<'_>, e: rquickjs::Error) -> ScriptError {
    ScriptError(describe(ctx, e))
}

pub(crate) fn describe(ctx: &Ctx<'_>, e: rquickjs::Error) -> String {
    // Positions in compiled TypeScript point back into the .ts source.
    crate::typescript::remap(&describe_raw(ctx, e))
}

fn describe_raw(ctx: &Ctx<'_>, e: rquickjs::Error) -> String {
    match CaughtError::from_error(ctx, e) {
        CaughtError::Exception(ex) => {
            let obj = ex.as_object();
            let name: String = obj
                .get::<_, Option<rquickjs::Coerced<String>>>("name")
                .ok()
                .flatten()
                .map(|c| c.0)
                .unwrap_or_else(|| "Error".into());
            let message = ex.message().unwrap_or_default();
            let stack = user_frames(&ex.stack().unwrap_or_default());
            let stack = stack.trim_end();
            match first_position(stack) {
                Some(pos) => format!("{pos}: {name}: {message}\n{stack}"),
                None if stack.is_empty() => format!("{name}: {message}"),
                None => format!("{name}: {message}\n{stack}"),
            }
        }
        CaughtError::Value(v) => {
            let s = ctx
                .json_stringify(v.clone())
                .ok()
                .flatten()
                .and_then(|s| s.to_string().ok())
                .unwrap_or_else(|| format!("{v:?}"));
            format!("Uncaught {s}")
        }
        CaughtError::Error(e) => e.to_string(),
    }
}

/// A stack frame's position ("    at f (a.js:3:5)" → "a.js:3:5"); None for other lines.
fn frame_position(line: &str) -> Option<&str> {
    let rest = line.trim().strip_prefix("at ")?;
    Some(match (rest.rfind('('), rest.ends_with(')')) {
        (Some(i), true) => &rest[i + 1..rest.len() - 1],
        _ => rest,
    })
}

/// A frame of Volley's own module code: shared shim bytecode has no file name (`<null>`),
/// the others are named after their module. k6 shows none of its modules' insides.
fn builtin_frame(pos: &str) -> bool {
    pos.starts_with("<null>")
        || BUILTINS
            .iter()
            .any(|(n, _)| pos.starts_with(n) && pos[n.len()..].starts_with(':'))
}

/// The stack without the frames of built-in modules, as k6 prints a script's errors.
fn user_frames(stack: &str) -> String {
    let mut out = String::with_capacity(stack.len());
    for line in stack.lines() {
        if frame_position(line).is_some_and(builtin_frame) {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The first `file:line:col` in a QuickJS stack ("    at f (a.js:3:5)" or "    at a.js:3:5").
fn first_position(stack: &str) -> Option<String> {
    for line in stack.lines() {
        let Some(pos) = frame_position(line) else {
            continue;
        };
        if pos.starts_with('<') || pos == "native" {
            continue;
        }
        // Built-in shims are not where the user's mistake is.
        if builtin_frame(pos) {
            continue;
        }
        let mut parts = pos.rsplitn(3, ':');
        let (c, l, f) = (parts.next(), parts.next(), parts.next());
        if let (Some(c), Some(l), Some(_)) = (c, l, f) {
            if c.parse::<u32>().is_ok() && l.parse::<u32>().is_ok() {
                return Some(pos.to_string());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_names_join_and_normalise() {
        assert_eq!(
            join_relative("tests/k6/a.js", "./lib/b.js"),
            "tests/k6/lib/b.js"
        );
        assert_eq!(join_relative("tests/k6/a.js", "../c.js"), "tests/c.js");
        assert_eq!(join_relative("a.js", "./b.js"), "b.js");
        assert_eq!(normalize("./x/./y/../z.js"), "x/z.js");
        // A leading `..` is kept, never cancelled by the next one.
        assert_eq!(join_relative("main.js", "../../lib.js"), "../../lib.js");
        assert_eq!(join_relative("../a/m.js", "../../b.js"), "../../b.js");
        assert_eq!(normalize("/../a/../../b.js"), "/b.js");
    }

    #[test]
    fn positions_come_from_the_first_user_frame() {
        let s = "    at check (k6:7:12)\n    at default (tests/k6/a.js:5:9)\n";
        assert_eq!(first_position(s).as_deref(), Some("tests/k6/a.js:5:9"));
        assert_eq!(
            first_position("    at x.js:1:2").as_deref(),
            Some("x.js:1:2")
        );
        assert_eq!(first_position("    at <eval>"), None);
    }

    /// Shim frames (shared bytecode says `<null>`, named modules their name) are left out of
    /// the stack printed with a script's error; the user's frames and native ones stay.
    #[test]
    fn printed_stacks_keep_only_the_users_frames() {
        let s = "    at wantsDeflate (<null>:0:1)\n    at WebSocket (<null>:0:1)\n    \
                 at check (k6:7:12)\n    at k6/httpx (k6/httpx.js:2:3)\n    at default (/tmp/a.js:5:28)\n";
        assert_eq!(
            user_frames(s),
            "    at k6/httpx (k6/httpx.js:2:3)\n    at default (/tmp/a.js:5:28)\n"
        );
        assert_eq!(user_frames("    at connect (<null>:0:1)\n"), "");
    }
}
