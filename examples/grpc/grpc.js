// gRPC against the built-in target: start it with `volley target` (it serves gRPC on its HTTP
// port), then run `volley run examples/grpc/grpc.js` — or `k6 run examples/grpc/grpc.js`:
// the script runs unmodified under k6. ADDR overrides the address (-e ADDR=host:port).
import grpc from "k6/net/grpc";
import { check, sleep } from "k6";

const ADDR = __ENV.ADDR || "127.0.0.1:8080";
const client = new grpc.Client();
client.load(["."], "target.proto");

export const options = {
  vus: 5,
  duration: "10s",
  thresholds: {
    "grpc_req_duration{method:Echo}": ["p(95)<100"],
    checks: ["rate>0.99"],
  },
};

export default function () {
  if (__ITER === 0) client.connect(ADDR, { plaintext: true });

  const r = client.invoke("volley.target.Target/Echo", { text: "hello", number: "42" }, {
    metadata: { "x-request-id": `${__VU}-${__ITER}` },
  });
  check(r, {
    "status is OK": (x) => x && x.status === grpc.StatusOK,
    "echoed": (x) => x && x.message.text === "hello" && x.message.number === "42",
  });

  // Server streaming: three messages, then the stream ends.
  let n = 0;
  const s = new grpc.Stream(client, "volley.target.Target/Count");
  s.on("data", () => n++);
  s.on("end", () => check(n, { "3 streamed": (v) => v === 3 }));
  s.write({ count: 3, text: "tick" });
  s.end();
  sleep(0.1);
}
