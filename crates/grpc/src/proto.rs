//! Loading protobuf descriptors: `.proto` sources (protox) or a protoset.
//!
//! Errors name the file, line and column as `protoc` does (`file.proto:3:5: message`) with
//! a hint, so a bad proto reads like a script error.

use miette::Diagnostic;
use prost::Message;
use prost_reflect::{DescriptorPool, MethodDescriptor};
use protox::file::{
    ChainFileResolver, File, FileResolver, GoogleFileResolver, IncludeFileResolver,
};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A proto that could not be loaded: the message is complete (location, what, hint).
#[derive(Debug, Clone, PartialEq)]
pub struct ProtoError(pub String);

impl std::fmt::Display for ProtoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProtoError {}

/// Compile `files` (names relative to one of `import_paths`, or paths under one) with their
/// imports; the well-known `google/protobuf/*.proto` files are always importable.
pub fn load(import_paths: &[PathBuf], files: &[String]) -> Result<DescriptorPool, ProtoError> {
    let mut c = protox::Compiler::new(import_paths).map_err(|e| describe(&e, import_paths))?;
    c.include_imports(true);
    for f in files {
        c.open_file(f).map_err(|e| describe(&e, import_paths))?;
    }
    Ok(c.descriptor_pool())
}

/// Every `.proto` read from disk while loading: its path and text (`volley archive` packs them).
pub type ReadFiles = Vec<(PathBuf, String)>;

/// Looks a `.proto` up by its path under an import path: its text, or None.
pub type Lookup = Box<dyn Fn(&Path) -> Option<String> + Send + Sync>;

/// Where [`load_from`] reads `.proto` files.
pub enum ProtoSource {
    /// The disk; every file read is returned (the files asked for and their imports).
    Disk,
    /// Only these files (a `volley run test.tar`): the path under an import path → its text.
    /// The disk is never read.
    Files(Lookup),
}

/// As [`load`], from `source`.
pub fn load_from(
    import_paths: &[PathBuf],
    files: &[String],
    source: ProtoSource,
) -> Result<(DescriptorPool, ReadFiles), ProtoError> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let dirs = import_paths.to_vec();
    let mut c = match source {
        ProtoSource::Disk => {
            let mut inner = ChainFileResolver::new();
            for d in import_paths {
                inner.add(IncludeFileResolver::new(d.clone()));
            }
            inner.add(GoogleFileResolver::new());
            protox::Compiler::with_file_resolver(Recording {
                inner,
                seen: seen.clone(),
            })
        }
        ProtoSource::Files(get) => protox::Compiler::with_file_resolver(Given { dirs, get }),
    };
    c.include_imports(true);
    for f in files {
        c.open_file(f).map_err(|e| describe(&e, import_paths))?;
    }
    let read = std::mem::take(&mut *seen.lock().unwrap_or_else(|e| e.into_inner()));
    Ok((c.descriptor_pool(), read))
}

/// protox's own resolvers, noting each file they read from disk.
struct Recording {
    inner: ChainFileResolver,
    seen: Arc<Mutex<ReadFiles>>,
}

impl FileResolver for Recording {
    fn resolve_path(&self, path: &Path) -> Option<String> {
        self.inner.resolve_path(path)
    }

    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        let f = self.inner.open_file(name)?;
        if let (Some(p), Some(src)) = (f.path(), f.source()) {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            seen.push((p.to_owned(), src.to_owned()));
        }
        Ok(f)
    }
}

/// Files from memory, looked up under each import path in turn (as protoc's `-I`).
struct Given {
    dirs: Vec<PathBuf>,
    get: Lookup,
}

impl FileResolver for Given {
    fn resolve_path(&self, path: &Path) -> Option<String> {
        self.dirs.iter().find_map(|d| {
            let rel = path.strip_prefix(d).ok()?;
            let parts: Option<Vec<&str>> = rel.iter().map(|c| c.to_str()).collect();
            Some(parts?.join("/"))
        })
    }

    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        for d in &self.dirs {
            if let Some(src) = (self.get)(&d.join(name)) {
                return File::from_source(name, &src);
            }
        }
        GoogleFileResolver::new().open_file(name)
    }
}

/// Compile one in-memory `.proto` (the built-in target's own service).
pub fn load_source(name: &str, source: &str) -> Result<DescriptorPool, ProtoError> {
    let mut c = protox::Compiler::with_file_resolver(Source(name.to_owned(), source.to_owned()));
    c.include_imports(true);
    c.open_file(name).map_err(|e| describe(&e, &[]))?;
    Ok(c.descriptor_pool())
}

struct Source(String, String);

impl protox::file::FileResolver for Source {
    fn open_file(&self, name: &str) -> Result<protox::file::File, protox::Error> {
        if name == self.0 {
            return protox::file::File::from_source(name, &self.1);
        }
        protox::file::GoogleFileResolver::new().open_file(name)
    }
}

/// Decode a protoset (a serialised `FileDescriptorSet`, as `protoc -o` or `buf build` write).
pub fn load_protoset(name: &str, bytes: &[u8]) -> Result<DescriptorPool, ProtoError> {
    let set = prost_reflect::prost_types::FileDescriptorSet::decode(bytes).map_err(|e| {
        ProtoError(format!(
            "couldn't unmarshal protoset file {name}: {e} (hint: a protoset is the binary \
             output of `protoc --descriptor_set_out` or `buf build -o`, with its imports)"
        ))
    })?;
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_set(set)
        .map_err(|e| ProtoError(format!("couldn't load protoset file {name}: {e}")))?;
    Ok(pool)
}

/// Merge the files of `from` into `into` (files already there are kept).
pub fn merge(into: &mut DescriptorPool, from: &DescriptorPool) -> Result<(), ProtoError> {
    let missing: Vec<_> = from
        .file_descriptor_protos()
        .filter(|f| into.get_file_by_name(f.name()).is_none())
        .cloned()
        .collect();
    into.add_file_descriptor_protos(missing)
        .map_err(|e| ProtoError(e.to_string()))
}

/// One method a pool declares (what `client.load()` returns in k6).
#[derive(Debug, Clone, PartialEq)]
pub struct MethodInfo {
    pub package: String,
    pub service: String,
    /// `/pkg.Service/Method`.
    pub full_method: String,
    pub name: String,
    pub client_stream: bool,
    pub server_stream: bool,
}

/// Every method of every service in `pool`, in file order.
pub fn methods(pool: &DescriptorPool) -> Vec<MethodInfo> {
    let mut out = Vec::new();
    for s in pool.services() {
        for m in s.methods() {
            out.push(MethodInfo {
                package: s.parent_file().package_name().to_owned(),
                service: s.name().to_owned(),
                full_method: path_of(&m),
                name: m.name().to_owned(),
                client_stream: m.is_client_streaming(),
                server_stream: m.is_server_streaming(),
            });
        }
    }
    out
}

/// The HTTP/2 path of a method: `/pkg.Service/Method`.
pub fn path_of(m: &MethodDescriptor) -> String {
    format!("/{}/{}", m.parent_service().full_name(), m.name())
}

/// Find `/pkg.Service/Method` (the leading `/` optional, as in k6).
pub fn find_method(pool: &DescriptorPool, method: &str) -> Option<MethodDescriptor> {
    let m = method.strip_prefix('/').unwrap_or(method);
    let (svc, name) = m.rsplit_once('/')?;
    pool.get_service_by_name(svc)?
        .methods()
        .find(|d| d.name() == name)
}

fn describe(e: &protox::Error, import_paths: &[PathBuf]) -> ProtoError {
    let mut msg = e.to_string();
    // The location: the first label's offset, resolved by the error's own source text.
    let loc = e.labels().and_then(|mut l| l.next()).and_then(|label| {
        let src = e.source_code()?;
        let span = src.read_span(label.inner(), 0, 0).ok()?;
        let file = span
            .name()
            .map(str::to_owned)
            .or(e.file().map(str::to_owned))?;
        Some(format!("{file}:{}:{}", span.line() + 1, span.column() + 1))
    });
    if let Some(help) = e.help() {
        msg = format!("{msg} ({help})");
    }
    let hint = if e.is_file_not_found() {
        let paths: Vec<String> = import_paths
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        format!(
            "hint: files and imports are looked up in the import paths [{}]; pass the \
             directory that holds them as client.load()'s first argument",
            paths.join(", ")
        )
    } else {
        "hint: the .proto must compile with protoc (proto2/proto3 syntax, imports resolvable)"
            .to_owned()
    };
    match (loc, e.file()) {
        (Some(loc), _) => ProtoError(format!("{loc}: {msg}\n{hint}")),
        (None, Some(f)) if !msg.contains(f) => ProtoError(format!("{f}: {msg}\n{hint}")),
        _ => ProtoError(format!("{msg}\n{hint}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_error_has_file_line_column() {
        let e = load_source(
            "bad.proto",
            "syntax = \"proto3\";\n\nmessage A {\n  strin x = 1;\n}\n",
        )
        .unwrap_err();
        assert!(e.0.starts_with("bad.proto:4:"), "{}", e.0);
        assert!(e.0.contains("hint:"), "{}", e.0);
    }

    #[test]
    fn methods_and_lookup() {
        let pool = load_source(
            "s.proto",
            "syntax = \"proto3\"; package p; message M {} \
             service S { rpc U(M) returns (M); rpc B(stream M) returns (stream M); }",
        )
        .unwrap();
        let ms = methods(&pool);
        assert_eq!(ms.len(), 2);
        assert_eq!(ms[1].full_method, "/p.S/B");
        assert!(ms[1].client_stream && ms[1].server_stream);
        assert!(find_method(&pool, "p.S/U").is_some());
        assert!(find_method(&pool, "/p.S/Nope").is_none());
    }

    #[test]
    fn bad_protoset_is_an_error() {
        let e = load_protoset("x.pb", b"\xff\xff\xff").unwrap_err();
        assert!(
            e.0.contains("couldn't unmarshal protoset file x.pb"),
            "{}",
            e.0
        );
    }
}
