// k6/net/grpc unary calls against the built-in target's gRPC service (plaintext, same port
// as HTTP): k6's JSON conventions in responses, metadata both ways (-bin too), headers and
// trailers, status codes and k6's error object, deadlines, asyncInvoke, discardResponseMessage.
// Counts asserted in crates/js/tests/grpc.rs; runs unmodified under k6.
import grpc from "k6/net/grpc";
import { check } from "k6";

const ADDR = __ENV.BASE.replace(/^https?:\/\//, "");
const client = new grpc.Client();
const methods = client.load(["../../examples/grpc"], "target.proto");

export const options = { vus: 1, iterations: 2 };

export default async function () {
  client.connect(ADDR, { plaintext: true, timeout: "5s" });

  const r = client.invoke(
    "volley.target.Target/Echo",
    { text: "hi", number: "9007199254740993", kind: "KIND_FAST", payload: "AAH/", delayMs: 3, inner: { name: "n", values: [1, 2] } },
    { metadata: { "x-user": "ann", "x-id-bin": new Uint8Array([104, 105]) }, tags: { part: "echo" } },
  );
  check(r, {
    "load lists the methods": () => methods.length === 6 && methods[0].full_method === "/volley.target.Target/Echo" && methods[3].is_client_stream && methods[3].is_server_stream && methods[0].package === "volley.target" && methods[0].service === "Target",
    "echo status OK": (x) => x.status === grpc.StatusOK && x.error === null,
    "int64 as string": (x) => x.message.number === "9007199254740993",
    "enum by name": (x) => x.message.kind === "KIND_FAST",
    "bytes base64": (x) => x.message.payload === "AAH/",
    "lowerCamelCase names": (x) => x.message.delayMs === 3 && x.message.inner.values.length === 2,
    "unpopulated fields emitted": (x) => x.message.ratio === 0 && x.message.flag === false && x.message.tags.length === 0 && Object.keys(x.message.labels).length === 0,
    "metadata echoed as headers": (x) => x.headers["x-user"][0] === "ann" && x.headers["x-id-bin"][0] === "hi",
    "content-type header": (x) => x.headers["content-type"][0] === "application/grpc",
    "trailers": (x) => x.trailers["x-trailer"][0] === "done",
  });

  const unset = client.invoke("volley.target.Target/Echo", { text: "x" });
  check(unset, { "unset message field is null": (x) => x.message.inner === null && x.message.text === "x" });

  const f = client.invoke("/volley.target.Target/Fail", { code: 5, text: "nothing here" });
  check(f, {
    "fail status": (x) => x.status === grpc.StatusNotFound,
    "fail error object": (x) => x.error.code === 5 && x.error.message === "nothing here" && x.error.details.length === 0,
    "fail message defaults": (x) => x.message !== null && x.message.text === "",
  });

  const slow = client.invoke("volley.target.Target/Slow", { delayMs: 3000 }, { timeout: "200ms" });
  check(slow, {
    "deadline exceeded": (x) => x.status === grpc.StatusDeadlineExceeded,
  });

  const discarded = client.invoke("volley.target.Target/Echo", { text: "gone" }, { discardResponseMessage: true });
  check(discarded, { "discarded message": (x) => x.status === grpc.StatusOK && x.message === null });

  const a = await client.asyncInvoke("volley.target.Target/Echo", { text: "async" });
  check(a, { "asyncInvoke resolves": (x) => x.status === grpc.StatusOK && x.message.text === "async" });

  const both = await Promise.all([
    client.asyncInvoke("volley.target.Target/Slow", { delayMs: 50, text: "1" }),
    client.asyncInvoke("volley.target.Target/Slow", { delayMs: 50, text: "2" }),
  ]);
  check(both, { "concurrent asyncInvoke": (x) => x[0].message.text === "1" && x[1].message.text === "2" });

  client.close();
}
