// bench/grpc.sh: gRPC unary against the built-in target's Echo, one connection per VU (as
// ghz -c N), one check per call. Runs under k6 and Volley unmodified.
import grpc from "k6/net/grpc";
import { check } from "k6";

const client = new grpc.Client();
client.load(["../../examples/grpc"], "target.proto");

export const options = {
  vus: Number(__ENV.VUS || 50),
  duration: `${__ENV.DUR || 10}s`,
};

export default function () {
  if (__ITER === 0) client.connect(__ENV.ADDR, { plaintext: true });
  const r = client.invoke("volley.target.Target/Echo", { text: "hello", number: "42" });
  check(r, { ok: (x) => x.status === grpc.StatusOK });
}
