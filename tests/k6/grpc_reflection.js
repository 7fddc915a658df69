// k6/net/grpc with server reflection: no .proto loaded, connect({reflect: true}) builds the
// descriptors from the built-in target. Runs unmodified under k6.
import grpc from "k6/net/grpc";
import { check } from "k6";

const ADDR = __ENV.BASE.replace(/^https?:\/\//, "");
const client = new grpc.Client();

export const options = { vus: 2, iterations: 4 };

export default function () {
  client.connect(ADDR, { plaintext: true, reflect: true });
  const r = client.invoke("volley.target.Target/Echo", { text: "reflected", number: 7 });
  check(r, {
    "reflected call OK": (x) => x.status === grpc.StatusOK,
    "reflected message": (x) => x.message.text === "reflected" && x.message.number === "7",
  });
  client.close();
}
