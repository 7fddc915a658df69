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

/// `volley archive` packs the `.proto` files `client.load()` compiled at init (imports
/// too); `volley run test.tar` compiles them from the tar with the sources gone.
#[test]
fn an_archive_carries_the_protos_it_loaded() {
    let t = target();
    let dir = scratch("grpc-archive");
    let src = dir.join("src");
    let protos = src.join("protos");
    std::fs::create_dir_all(&protos).unwrap();
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/grpc");
    std::fs::copy(examples.join("target.proto"), protos.join("target.proto")).unwrap();
    // Loads wrap.proto only: target.proto (the service) comes in as its import.
    std::fs::write(
        protos.join("wrap.proto"),
        "syntax = \"proto3\";\npackage wrap;\nimport \"target.proto\";\n\
         message Wrapped { volley.target.Message inner = 1; }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("main.js"),
        r#"
import grpc from "k6/net/grpc";
import { check } from "k6";
const client = new grpc.Client();
const methods = client.load(["protos"], "wrap.proto");
export const options = { vus: 1, iterations: 2, thresholds: { checks: ["rate==1"] } };
export default function () {
  client.connect(__ENV.ADDR, { plaintext: true, timeout: "5s" });
  const r = client.invoke("volley.target.Target/Echo", { text: "from the tar" });
  check(r, {
    "echo ok": (x) => x.status === grpc.StatusOK && x.message.text === "from the tar",
    "methods from the import": () => methods.length === 6,
  });
  if (__ITER === 0) console.log(`GRPC ARCHIVED ${r.message.text}`);
  client.close();
}
"#,
    )
    .unwrap();
    let tar = dir.join("grpc.tar").to_string_lossy().into_owned();
    let main = src.join("main.js").to_string_lossy().into_owned();
    let addr = format!("ADDR={}", t.local_addr());
    let o = run(&["archive", &main, "-o", &tar, "-e", &addr]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The sources are gone: the protos must come from the tar.
    std::fs::remove_dir_all(&src).unwrap();
    let o = run(&["run", &tar, "-q", "--no-system-env"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("GRPC ARCHIVED from the tar"), "{err}");
}
