// k6/net/grpc client.healthCheck() against the built-in target's grpc.health.v1 service:
// SERVING for "" and the target's service, an exception with grpc-go's text for an unknown
// one. Also: a method called from two groups keeps each group's samples apart (the series
// are cached per method), and NaN/Infinity in a request go as protojson's strings.
// Counts asserted in crates/js/tests/grpc.rs; runs unmodified under k6.
import grpc from "k6/net/grpc";
import { check, group } from "k6";

const ADDR = __ENV.BASE.replace(/^https?:\/\//, "");
const client = new grpc.Client();
client.load(["../../examples/grpc"], "target.proto");

export const options = { vus: 1, iterations: 3 };

export default function () {
  client.connect(ADDR, { plaintext: true, timeout: "5s" });
  const all = client.healthCheck();
  const svc = client.healthCheck("volley.target.Target");
  let err = "";
  try {
    client.healthCheck("no.such.Service");
  } catch (e) {
    err = String(e.message || e);
  }
  check(null, {
    "server serving": () => all.status === grpc.HealthCheckServing,
    "service serving": () => svc.status === grpc.HealthCheckServing && Object.keys(svc).length === 1,
    "unknown service throws": () => err.includes("code = NotFound") && err.includes("unknown service"),
  });
  group("a", () => {
    client.invoke("volley.target.Target/Echo", { text: "a" });
  });
  group("b", () => {
    const r = client.invoke("volley.target.Target/Echo", { text: "b", ratio: NaN });
    check(r, { "NaN sent as protojson's string": (x) => x.message.text === "b" && x.message.ratio === "NaN" });
  });
  client.close();
}
