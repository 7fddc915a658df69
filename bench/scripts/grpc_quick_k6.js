// bench/grpc_quick.sh: the simplest k6 gRPC load — each VU connects once, then calls the
// built-in target's Echo in a loop (iterations = calls). Runs under k6 and Volley unmodified.
import grpc from "k6/net/grpc";

const client = new grpc.Client();
client.load(["../../examples/grpc"], "target.proto");

export const options = {
  vus: Number(__ENV.VUS || 50),
  duration: `${__ENV.DUR || 10}s`,
};

export default function () {
  if (__ITER === 0) client.connect(__ENV.ADDR, { plaintext: true });
  client.invoke("volley.target.Target/Echo", { text: "hello", number: "42" });
}
