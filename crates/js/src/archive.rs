//! k6's archive: one tar with a test's script, its modules, the files its init code
//! `open()`s, its resolved options and the `-e` environment, so every instance of a
//! distributed test runs byte-identical code (`volley archive`, `volley run test.tar`).
//!
//! The layout is k6's: `metadata.json` (`type`, `filename` and `pwd` as `file://` URLs,
//! `options`, `env`, `k6version`, `goos`), `data` (the entry script) and every file under
//! `file/` at its absolute path. Archives k6 wrote run too as long as they only hold local
//! files (k6's `https/` tree of remote modules is not read: Volley fetches nothing remote).
//!
//! What goes in is recorded, as k6 does, by running the init code once: the modules the
//! loader compiled and the files `open()` read. Running an archive serves every file from it
//! and none from the disk ([`NOT_ARCHIVED`]). Also here: [`inspect`], `volley inspect`'s
//! resolved options.

use crate::options::{self, CliOptions};
use crate::script::{self, ScriptError};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// Absolute path → contents.
pub type Files = HashMap<String, Arc<Vec<u8>>>;

/// Why a file a script asks for is refused when running an archive.
pub const NOT_ARCHIVED: &str = "not in the archive (only the files the script's init code \
     opened when the archive was made are in it; make it again with volley archive)";

/// Largest archive read: 1 GiB (the script's own files; `open()` caps each at 256 MiB).
pub const MAX_ARCHIVE_BYTES: u64 = 1 << 30;
/// Most entries an archive may have.
const MAX_ENTRIES: usize = 100_000;

/// A test in one file.
#[derive(Clone, Debug)]
pub struct Archive {
    /// Absolute path of the entry script (its key in `files`).
    pub main: String,
    pub files: Arc<Files>,
    /// The options as resolved when the archive was made.
    pub options: Value,
    /// `-e KEY=VALUE` given to `volley archive`.
    pub env: BTreeMap<String, String>,
}

impl Archive {
    /// The archive's environment with `env` (this run's) on top.
    pub fn env_under(&self, env: BTreeMap<String, String>) -> BTreeMap<String, String> {
        let mut all = self.env.clone();
        all.extend(env);
        all
    }
}

/// `path` made absolute (against the working directory) and normalised.
fn absolute(p: &Path) -> String {
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    script::normalize(&p.to_string_lossy())
}

/// Run the init code of `path` once and collect what an archive holds. `env` is the `-e`
/// environment (the only one stored); `cli` gives the option tiers above the script's.
pub fn create(
    path: &Path,
    env: BTreeMap<String, String>,
    cli: &CliOptions,
) -> Result<Archive, String> {
    let main = absolute(path);
    let script = script::load(Path::new(&main), env.clone()).map_err(|ScriptError(e)| e)?;
    let opts = with_shortcuts(options::env::for_run(&script.options, cli), cli);
    options::resolve(&opts, cli).map_err(|e| format!("invalid options: {e}"))?;
    let mut files = Files::new();
    let modules = script
        .shared
        .bytecode
        .get()
        .into_iter()
        .flat_map(|m| m.keys());
    let user = modules.filter(|n| !script::BUILTINS.iter().any(|(b, _)| b == n));
    for name in user {
        let b = script::read_capped(Path::new(name), script::MAX_SCRIPT_BYTES)
            .map_err(|e| format!("cannot read module {name}: {e}"))?;
        files.insert(absolute(Path::new(name)), Arc::new(b));
    }
    for (p, b) in script.shared.files.lock().unwrap().iter() {
        files.insert(absolute(p), b.clone());
    }
    Ok(Archive {
        main,
        files: Arc::new(files),
        options: opts,
        env,
    })
}

/// `-u -d -i` written into the options (the archive keeps them, as k6's): a shortcut given
/// replaces the script's `duration`, `iterations`, `stages` and `scenarios`, as in k6.
fn with_shortcuts(mut opts: Value, cli: &CliOptions) -> Value {
    let given = [
        ("vus", cli.vus.map(Value::from)),
        (
            "duration",
            cli.duration
                .map(|d| volley_engine::executor::fmt_duration(d).into()),
        ),
        ("iterations", cli.iterations.map(Value::from)),
    ];
    if given.iter().all(|(_, v)| v.is_none()) {
        return opts;
    }
    if !opts.is_object() {
        opts = json!({});
    }
    let o = opts.as_object_mut().expect("made an object above");
    if cli.duration.is_some() || cli.iterations.is_some() {
        for k in ["duration", "iterations", "stages", "scenarios"] {
            o.remove(k);
        }
    }
    for (k, v) in given {
        if let Some(v) = v {
            o.insert(k.into(), v);
        }
    }
    opts
}

/// Write `a` as k6's tar layout to `out` (through a temporary file, renamed when complete).
pub fn write(a: &Archive, out: &Path) -> Result<(), String> {
    let name = out.display();
    let dir = Path::new(&a.main)
        .parent()
        .map(|d| d.to_string_lossy().into_owned());
    let meta = json!({
        "type": "js",
        "filename": format!("file://{}", a.main),
        "pwd": format!("file://{}/", dir.unwrap_or_default().trim_end_matches('/')),
        "options": a.options,
        "env": a.env,
        "compatibilityMode": "extended",
        "k6version": format!("volley-{}", env!("CARGO_PKG_VERSION")),
        "goos": std::env::consts::OS,
    });
    let tmp = out.with_extension("tar.partial");
    let f = std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let mut t = tar::Builder::new(std::io::BufWriter::new(f));
    let mut add = |path: &str, data: &[u8]| -> std::io::Result<()> {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        t.append_data(&mut h, path, data)
    };
    let meta = serde_json::to_vec_pretty(&meta).unwrap_or_default();
    let main = a
        .files
        .get(&a.main)
        .map(|b| b.as_slice())
        .unwrap_or_default();
    let mut names: Vec<&String> = a.files.keys().collect();
    names.sort();
    let written = add("metadata.json", &meta)
        .and_then(|_| add("data", main))
        .and_then(|_| {
            names
                .iter()
                .try_for_each(|p| add(&format!("file/{}", p.trim_start_matches('/')), &a.files[*p]))
        })
        .and_then(|_| t.into_inner())
        .and_then(|mut w| std::io::Write::flush(&mut w));
    if let Err(e) = written.and_then(|_| std::fs::rename(&tmp, out)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("{name}: {e}"));
    }
    Ok(())
}

/// Is `path` a tar (by its `ustar` magic, whatever its name)?
pub fn is_archive(path: &Path) -> bool {
    let mut head = [0u8; 262];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|_| &head[257..262] == b"ustar")
}

/// [`read`] when `path` is an archive; None for a script.
pub fn open_if_archive(path: &Path) -> Result<Option<Archive>, String> {
    if is_archive(path) {
        read(path).map(Some)
    } else {
        Ok(None)
    }
}

/// Read an archive (Volley's or k6's), bounded in size and entries.
pub fn read(path: &Path) -> Result<Archive, String> {
    let name = path.display();
    let bad = |e: String| {
        format!("{name}: {e}\n  hint: make the archive with volley archive (or k6 archive)")
    };
    let f = std::fs::File::open(path).map_err(|e| format!("{name}: {e}"))?;
    let mut t = tar::Archive::new(f.take(MAX_ARCHIVE_BYTES));
    let (mut meta, mut data, mut files) = (None, None, Files::new());
    let entries = t.entries().map_err(|e| bad(e.to_string()))?;
    for (i, e) in entries.enumerate() {
        if i >= MAX_ENTRIES {
            return Err(bad(format!("more than {MAX_ENTRIES} entries")));
        }
        let mut e = e.map_err(|e| bad(format!("entry {}: {e}", i + 1)))?;
        if !e.header().entry_type().is_file() {
            continue;
        }
        let p = e
            .path()
            .map_err(|e| bad(e.to_string()))?
            .to_string_lossy()
            .into_owned();
        if e.size() > script::MAX_OPEN_BYTES {
            return Err(bad(format!(
                "{p}: larger than the 256 MiB limit for one file"
            )));
        }
        let mut b = Vec::with_capacity(e.size() as usize);
        e.read_to_end(&mut b)
            .map_err(|e| bad(format!("{p}: {e}")))?;
        match p.as_str() {
            "metadata.json" => meta = Some(b),
            "data" => data = Some(b),
            _ => {
                if let Some(rest) = p.strip_prefix("file/") {
                    // k6 on Windows writes `file/C:/...`; ours are Unix paths.
                    files.insert(script::normalize(&format!("/{rest}")), Arc::new(b));
                }
            }
        }
    }
    let meta = meta.ok_or_else(|| bad("no metadata.json: not a k6 or Volley archive".into()))?;
    let meta: Value = serde_json::from_slice(&meta)
        .map_err(|e| bad(format!("metadata.json:{}:{}: {e}", e.line(), e.column())))?;
    if meta["type"].as_str().is_some_and(|t| t != "js") {
        return Err(bad(format!(
            "archives of type {} cannot be run",
            meta["type"]
        )));
    }
    let filename = meta["filename"]
        .as_str()
        .ok_or_else(|| bad("metadata.json has no filename".into()))?;
    let main = script::normalize(filename.strip_prefix("file://").unwrap_or(filename));
    if let Some(d) = data {
        files.entry(main.clone()).or_insert_with(|| Arc::new(d));
    }
    if !files.contains_key(&main) {
        return Err(bad(format!(
            "the entry script {main} is not in the archive"
        )));
    }
    let env = match &meta["env"] {
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.as_str().map_or_else(|| v.to_string(), str::to_string),
                )
            })
            .collect(),
        _ => BTreeMap::new(),
    };
    Ok(Archive {
        main,
        files: Arc::new(files),
        options: meta.get("options").cloned().unwrap_or(Value::Null),
        env,
    })
}

/// The MD5 of the entry script's source, hex: instances of one test agree on it
/// (`volley merge` checks it), whether they ran the script or its archive.
pub(crate) fn script_hash(s: &script::Script) -> Option<String> {
    let src = s.shared.read_module(&s.main).ok()?;
    Some(
        volley_run::md5::md5(src.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

/// `volley inspect`: the options of `path` (a script or an archive) as k6 resolves them, with
/// the shortcut options (`vus`, `duration`, `iterations`, `stages`) expanded to the
/// scenarios they make.
pub fn inspect(
    path: &Path,
    env: BTreeMap<String, String>,
    cli: &CliOptions,
) -> Result<Value, String> {
    let (script, base) = match open_if_archive(path)? {
        Some(a) => {
            let s = script::load_with(
                Path::new(&a.main),
                a.env_under(env),
                None,
                Some(a.files.clone()),
            );
            (s.map_err(|ScriptError(e)| e)?, Some(a.options))
        }
        None => (script::load(path, env).map_err(|ScriptError(e)| e)?, None),
    };
    let opts = options::env::for_run(base.as_ref().unwrap_or(&script.options), cli);
    let resolved = options::resolve(&opts, cli).map_err(|e| format!("invalid options: {e}"))?;
    let mut out = match opts {
        Value::Object(m) => m,
        _ => Default::default(),
    };
    for k in ["vus", "duration", "iterations", "stages"] {
        out.remove(k);
    }
    let scenarios: serde_json::Map<String, Value> = resolved
        .scenarios
        .iter()
        .map(|s| (s.name.clone(), scenario::to_json(s)))
        .collect();
    out.insert("scenarios".into(), scenarios.into());
    out.entry("paused").or_insert(Value::Bool(false));
    Ok(Value::Object(out))
}

mod scenario;

/// The script (or archive) `path` with its init code run, ready for `handleSummary` outside a
/// run (`volley merge --handle-summary`).
pub fn summary_view(
    path: &Path,
    env: BTreeMap<String, String>,
) -> Result<crate::ScriptView, String> {
    let script = match open_if_archive(path)? {
        Some(a) => script::load_with(
            Path::new(&a.main),
            a.env_under(env),
            None,
            Some(a.files.clone()),
        ),
        None => script::load(path, env),
    }
    .map_err(|ScriptError(e)| e)?;
    Ok(crate::ScriptView {
        shared: script.shared,
        ctl: volley_engine::RunControl::new(),
    })
}
