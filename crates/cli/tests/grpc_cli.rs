//! `k6/net/grpc` through the binary: a bad `.proto` is a script error (exit code 107) whose
//! message names the proto's file, line and column.

mod common;
use common::*;

#[test]
fn bad_proto_exits_107_with_its_location() {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/k6/grpc_bad_proto.js");
    let o = run(&["run", "-q", script.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(107), "{err}");
    assert!(err.contains("bad.proto:6:3: "), "{err}");
}
