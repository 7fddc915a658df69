// k6/net/grpc's errors, worded as k6 words them where scripts check them: load outside
// init, invoke before connect, unknown method, bad JSON field, bad params, unknown service
// on the server, a refused connection, bad `tls` PEM. Runs unmodified under k6.
import grpc from "k6/net/grpc";
import { check } from "k6";

const ADDR = __ENV.BASE.replace(/^https?:\/\//, "");
const client = new grpc.Client();
client.load(["../../examples/grpc"], "target.proto");

export const options = { vus: 1, iterations: 1 };

function err(f) {
  try {
    f();
    return "";
  } catch (e) {
    return String(e);
  }
}

export default function () {
  check(null, {
    "load outside init": () => err(() => client.load(["../../examples/grpc"], "target.proto")).includes("load must be called in the init context"),
    "invoke before connect": () => err(() => client.invoke("volley.target.Target/Echo", {})).includes("no gRPC connection, you must call connect first"),
    "refused connect throws": () => err(() => new grpc.Client().connect("127.0.0.1:1", { plaintext: true, timeout: "2s" })) !== "",
    "unknown connect param": () => err(() => client.connect(ADDR, { plaintext: true, nope: 1 })).includes('unknown connect param: "nope"'),
    "tls must be an object": () => err(() => new grpc.Client().connect(ADDR, { tls: 5 })).includes("invalid tls value"),
    "bad tls cacerts PEM": () => err(() => new grpc.Client().connect(ADDR, { tls: { cacerts: ["nope"] }, timeout: "2s" })).includes("failed to append ca certificate [0] from PEM"),
    "bad tls cert PEM": () => err(() => new grpc.Client().connect(ADDR, { tls: { cert: "nope", key: "nope" }, timeout: "2s" })).includes("failed to append certificate from PEM: tls: failed to find any PEM data in certificate input"),
  });
  client.connect(ADDR, { plaintext: true });
  check(null, {
    "unknown method": () => err(() => client.invoke("volley.target.Target/Nope", {})).includes('method "/volley.target.Target/Nope" not found in file descriptors'),
    "empty method": () => err(() => client.invoke("", {})).includes("method to invoke cannot be empty"),
    "bad JSON field": () => err(() => client.invoke("volley.target.Target/Echo", { nope: 1 })).includes("unable to serialise request object to protocol buffer"),
    "unknown invoke param": () => err(() => client.invoke("volley.target.Target/Echo", {}, { nope: 1 })).includes('unknown param: "nope"'),
    "metadata must be a string": () => err(() => client.invoke("volley.target.Target/Echo", {}, { metadata: { k: 1 } })).includes('"k" value must be a string'),
    "stream on unknown method": () => err(() => new grpc.Stream(client, "volley.target.Target/Nope")).includes("invalid GRPC Stream's method"),
  });
  client.close();
}
