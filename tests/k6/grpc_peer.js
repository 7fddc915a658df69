// k6/net/grpc against an independent server (grpcio in Python, tests/peers/grpc_server.py;
// or any server of examples/grpc/target.proto): a protoset, unary with metadata and
// trailers, a status, server and bidi streams, and reflection (v1alpha only in grpcio).
// PROTOSET = path of the protoset. Counts asserted in crates/js/tests/grpc.rs.
import grpc from "k6/net/grpc";
import { check } from "k6";

const ADDR = __ENV.BASE.replace(/^https?:\/\//, "");
const client = new grpc.Client();
const methods = client.loadProtoset(__ENV.PROTOSET);
const reflecting = new grpc.Client();

export const options = { vus: 1, iterations: 2 };

export default function () {
  client.connect(ADDR, { plaintext: true });
  const r = client.invoke("volley.target.Target/Echo", { text: "peer", number: "-5", kind: "KIND_SLOW" }, { metadata: { "x-who": "me" } });
  check(r, {
    "protoset methods": () => methods.length === 6,
    "peer echo": (x) => x.status === grpc.StatusOK && x.message.text === "peer" && x.message.number === "-5" && x.message.kind === "KIND_SLOW",
    "peer headers and trailers": (x) => x.headers["x-who"][0] === "me" && x.trailers["x-trailer"][0] === "done",
  });
  const f = client.invoke("volley.target.Target/Fail", { code: 7, text: "go away" });
  check(f, { "peer status": (x) => x.status === grpc.StatusPermissionDenied && x.error.message === "go away" });
  const d = client.invoke("volley.target.Target/Slow", { delayMs: 2000 }, { timeout: "100ms" });
  check(d, { "peer deadline": (x) => x.status === grpc.StatusDeadlineExceeded });

  const got = [];
  const s = new grpc.Stream(client, "volley.target.Target/Count");
  s.on("data", (m) => got.push(m.index));
  s.on("end", () => check(got, { "peer server stream": (g) => g.join(",") === "0,1,2,3" }));
  s.write({ count: 4 });
  s.end();

  const echoed = [];
  const c = new grpc.Stream(client, "volley.target.Target/Chat");
  c.on("data", (m) => {
    echoed.push(m.text);
    if (echoed.length === 3) c.end();
  });
  c.on("end", () => check(echoed, { "peer bidi": (e) => e.join("") === "abc" }));
  c.write({ text: "a" });
  c.write({ text: "b" });
  c.write({ text: "c" });

  reflecting.connect(ADDR, { plaintext: true, reflect: true });
  const rr = reflecting.invoke("volley.target.Target/Echo", { text: "via reflection" });
  check(rr, { "peer reflection": (x) => x.status === grpc.StatusOK && x.message.text === "via reflection" });
  reflecting.close();
  client.close();
}
