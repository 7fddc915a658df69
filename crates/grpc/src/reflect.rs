//! gRPC server reflection (`grpc.reflection.v1` and `v1alpha`: the same messages under two
//! package names), both halves: [`answer`] serves a pool (the built-in target), and
//! [`Collector`] builds a pool from a server's answers (`connect(addr, {reflect: true})`).

use prost::Message;
use prost_reflect::prost_types::FileDescriptorProto;
use prost_reflect::DescriptorPool;
use std::collections::{BTreeMap, BTreeSet};

/// The reflection method paths, newest first.
pub const PATHS: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

#[derive(Clone, PartialEq, Message)]
pub struct Request {
    #[prost(string, tag = "1")]
    pub host: String,
    #[prost(oneof = "Ask", tags = "3, 4, 7")]
    pub ask: Option<Ask>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Ask {
    #[prost(string, tag = "3")]
    FileByFilename(String),
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
    #[prost(string, tag = "7")]
    ListServices(String),
}

#[derive(Clone, PartialEq, Message)]
pub struct Response {
    #[prost(string, tag = "1")]
    pub valid_host: String,
    #[prost(message, optional, tag = "2")]
    pub original_request: Option<Request>,
    #[prost(oneof = "Answer", tags = "4, 6, 7")]
    pub answer: Option<Answer>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Answer {
    #[prost(message, tag = "4")]
    Files(FileDescriptors),
    #[prost(message, tag = "6")]
    Services(ServiceList),
    #[prost(message, tag = "7")]
    Error(ErrorResponse),
}

#[derive(Clone, PartialEq, Message)]
pub struct FileDescriptors {
    #[prost(bytes = "vec", repeated, tag = "1")]
    pub file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ServiceList {
    #[prost(message, repeated, tag = "1")]
    pub service: Vec<ServiceName>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ServiceName {
    #[prost(string, tag = "1")]
    pub name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct ErrorResponse {
    #[prost(int32, tag = "1")]
    pub error_code: i32,
    #[prost(string, tag = "2")]
    pub error_message: String,
}

/// The server's answer to one encoded request: a file with everything it imports, the
/// service list, or NOT_FOUND.
pub fn answer(pool: &DescriptorPool, request: &[u8]) -> Vec<u8> {
    let req = Request::decode(request).unwrap_or_default();
    let not_found = |what: &str| {
        Answer::Error(ErrorResponse {
            error_code: crate::status::NOT_FOUND as i32,
            error_message: format!("{what} not found"),
        })
    };
    let file_with_deps = |name: &str| -> Option<Answer> {
        let file = pool.get_file_by_name(name)?;
        let mut out = vec![file.file_descriptor_proto().encode_to_vec()];
        let mut seen = BTreeSet::from([name.to_owned()]);
        let mut todo: Vec<_> = file.dependencies().collect();
        while let Some(d) = todo.pop() {
            if seen.insert(d.name().to_owned()) {
                out.push(d.file_descriptor_proto().encode_to_vec());
                todo.extend(d.dependencies());
            }
        }
        Some(Answer::Files(FileDescriptors {
            file_descriptor_proto: out,
        }))
    };
    let answer = match &req.ask {
        Some(Ask::ListServices(_)) => Answer::Services(ServiceList {
            service: pool
                .services()
                .map(|s| ServiceName {
                    name: s.full_name().to_owned(),
                })
                .collect(),
        }),
        Some(Ask::FileByFilename(f)) => file_with_deps(f).unwrap_or_else(|| not_found(f)),
        Some(Ask::FileContainingSymbol(sym)) => {
            let file = pool
                .get_service_by_name(sym)
                .map(|s| s.parent_file())
                .or_else(|| pool.get_message_by_name(sym).map(|m| m.parent_file()))
                .or_else(|| pool.get_enum_by_name(sym).map(|e| e.parent_file()));
            file.and_then(|f| file_with_deps(f.name()))
                .unwrap_or_else(|| not_found(sym))
        }
        None => Answer::Error(ErrorResponse {
            error_code: crate::status::UNIMPLEMENTED as i32,
            error_message: "request kind not supported".into(),
        }),
    };
    Response {
        valid_host: req.host.clone(),
        original_request: Some(req),
        answer: Some(answer),
    }
    .encode_to_vec()
}

/// Client side: what to ask next, and the pool once every file is known.
#[derive(Default)]
pub struct Collector {
    files: BTreeMap<String, FileDescriptorProto>,
    asked: BTreeSet<String>,
}

impl Collector {
    /// The first request: list the services.
    pub fn start() -> Vec<u8> {
        Request {
            host: String::new(),
            ask: Some(Ask::ListServices(String::new())),
        }
        .encode_to_vec()
    }

    /// Take one answer; the requests it calls for (none: done).
    pub fn take(&mut self, answer: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        let resp = Response::decode(answer).map_err(|e| format!("bad reflection answer: {e}"))?;
        let mut next = Vec::new();
        match resp.answer {
            Some(Answer::Services(list)) => {
                for s in list.service {
                    // Reflection describes itself too; scripts never call it.
                    if s.name.starts_with("grpc.reflection.") {
                        continue;
                    }
                    if self.asked.insert(format!("sym:{}", s.name)) {
                        next.push(ask(Ask::FileContainingSymbol(s.name)));
                    }
                }
            }
            Some(Answer::Files(f)) => {
                for raw in f.file_descriptor_proto {
                    let fd = FileDescriptorProto::decode(raw.as_slice())
                        .map_err(|e| format!("bad file descriptor from reflection: {e}"))?;
                    self.files.insert(fd.name().to_owned(), fd);
                }
                // Imports the server has not sent yet.
                let missing: Vec<String> = self
                    .files
                    .values()
                    .flat_map(|f| f.dependency.iter().cloned())
                    .filter(|d| !self.files.contains_key(d))
                    .collect();
                for d in missing {
                    if self.asked.insert(format!("file:{d}")) {
                        next.push(ask(Ask::FileByFilename(d)));
                    }
                }
            }
            Some(Answer::Error(e)) => {
                return Err(format!(
                    "reflection error {}: {}",
                    e.error_code, e.error_message
                ))
            }
            None => return Err("empty reflection answer".into()),
        }
        Ok(next)
    }

    /// Every file received, as a pool (well-known imports the server did not send are
    /// taken from protox's copies).
    pub fn pool(self) -> Result<DescriptorPool, String> {
        let mut pool = DescriptorPool::new();
        let mut files: Vec<FileDescriptorProto> = self.files.into_values().collect();
        // Dependencies first: add whatever has all its imports in the pool, repeatedly.
        while !files.is_empty() {
            let before = files.len();
            let mut rest = Vec::new();
            for f in files {
                let ready = f
                    .dependency
                    .iter()
                    .all(|d| pool.get_file_by_name(d).is_some());
                if ready {
                    pool.add_file_descriptor_proto(f)
                        .map_err(|e| format!("can't convert method info: {e}"))?;
                } else {
                    rest.push(f);
                }
            }
            if rest.len() == before {
                let names: Vec<_> = rest.iter().map(|f| f.name().to_owned()).collect();
                return Err(format!(
                    "can't convert method info: unresolved imports in {}",
                    names.join(", ")
                ));
            }
            files = rest;
        }
        Ok(pool)
    }
}

fn ask(a: Ask) -> Vec<u8> {
    Request {
        host: String::new(),
        ask: Some(a),
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collector_rebuilds_the_served_pool() {
        let served = crate::proto::load_source(
            "r.proto",
            "syntax = \"proto3\"; package r; import \"google/protobuf/empty.proto\"; \
             service S { rpc U(google.protobuf.Empty) returns (google.protobuf.Empty); }",
        )
        .unwrap();
        let mut c = Collector::default();
        let mut queue = vec![Collector::start()];
        let mut rounds = 0;
        while let Some(req) = queue.pop() {
            rounds += 1;
            assert!(rounds < 10);
            queue.extend(c.take(&answer(&served, &req)).unwrap());
        }
        let pool = c.pool().unwrap();
        assert!(crate::proto::find_method(&pool, "/r.S/U").is_some());
    }

    #[test]
    fn unknown_symbol_is_not_found() {
        let pool = DescriptorPool::new();
        let req = ask(Ask::FileContainingSymbol("x.Y".into()));
        let mut c = Collector::default();
        let e = c.take(&answer(&pool, &req)).unwrap_err();
        assert!(e.contains("reflection error 5"), "{e}");
    }
}
