// k6/net/grpc responses built by the fast path (headers/trailers objects, the message walk):
// exact headers and trailers (key order, values, binary `-bin` values), the error object of a failed call, and a message with repeated fields,
// a map, an enum, int64 as a string and an unset nested message, each compared as JSON text.
// Counts asserted in crates/js/tests/grpc.rs. Volley's behaviour, pinned (also by the
// build before the fast path).
import grpc from "k6/net/grpc";
import { check } from "k6";

const ADDR = __ENV.BASE.replace(/^https?:\/\//, "");
const ECHO = "volley.target.Target/Echo";
const client = new grpc.Client();
client.load(["../../examples/grpc"], "target.proto");

export const options = { vus: 1, iterations: 2 };

export default function () {
  client.connect(ADDR, { plaintext: true, timeout: "5s" });
  const md = {
    "x-b": "2",
    "x-a": "1",
    "x-constructor": "c",
    "x-raw-bin": new Uint8Array([104, 0, 105]),
  };
  const r1 = client.invoke(ECHO, { text: "h" }, { metadata: md });
  const r2 = client.invoke(ECHO, { text: "h" }, { metadata: md });
  // The server (hyper) adds `date` last; its value changes.
  const shown = (h) => JSON.stringify(Object.assign({}, h, { date: [typeof h.date[0]] }));
  const headers =
    '{"content-type":["application/grpc"],"x-b":["2"],"x-a":["1"],"x-constructor":["c"],' +
    '"x-raw-bin":["h\\u0000i"],"date":["string"]}';
  check(null, {
    "headers in the server's order, -bin values decoded": () =>
      shown(r1.headers) === headers && shown(r2.headers) === headers &&
      r1.headers !== r2.headers && Array.isArray(r1.headers["x-a"]),
    "trailers without the reserved ones": () =>
      JSON.stringify(r1.trailers) === '{"x-trailer":["done"]}' &&
      Object.getPrototypeOf(r1.trailers) === Object.prototype,
  });

  const f = client.invoke("volley.target.Target/Fail", { code: 5, text: "no such thing: ü" });
  check(f, {
    "a failed call: error object, no message fields, trailers empty": (r) =>
      r.status === grpc.StatusNotFound &&
      JSON.stringify(r.error) === '{"code":5,"details":[],"message":"no such thing: ü"}' &&
      JSON.stringify(r.trailers) === "{}" &&
      shown(r.headers) === '{"content-type":["application/grpc"],"date":["string"]}' &&
      r.message.text === "" && r.message.inner === null,
  });

  const all = client.invoke(ECHO, {
    text: "t", number: "-9007199254740993", kind: "KIND_SLOW", payload: "AAEC/w==",
    tags: ["a", "", "c"], labels: { k: "v", 1: "one" }, inner: { name: "n", values: [1, -2] },
    count: 3, ratio: 0.1, flag: true,
  });
  const want = '{"text":"t","number":"-9007199254740993","kind":"KIND_SLOW","payload":"AAEC/w==",' +
    '"tags":["a","","c"],"labels":{"1":"one","k":"v"},"inner":{"name":"n","values":[1,-2]},' +
    '"count":3,"delayMs":0,"code":0,"index":0,"ratio":0.1,"flag":true}';
  check(all, {
    // The one string key of `labels` follows the integer-like one, in any engine.
    "every kind of field as k6's protojson": (r) => JSON.stringify(r.message) === want,
  });
  client.close();
}
