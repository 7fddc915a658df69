// k6/net/grpc calls that a per-method fast path could get wrong: the same request text
// again (kept encoded bytes), a changed one, metadata and timeouts after cached calls,
// fields set to null/undefined/NaN/±Infinity, an unknown field (k6's error text), params
// given as {}/null/undefined, and the response's shape (key order, JSON text, fresh objects).
// Counts asserted in crates/js/tests/grpc.rs. Volley's behaviour, pinned: under k6 v1.8.1
// three checks differ (Go's random key order, protojson's error wording, `__proto__` dropped).
import grpc from "k6/net/grpc";
import { check } from "k6";

const ADDR = __ENV.BASE.replace(/^https?:\/\//, "");
const ECHO = "volley.target.Target/Echo";
const SLOW = "volley.target.Target/Slow";
const client = new grpc.Client();
client.load(["../../examples/grpc"], "target.proto");

export const options = { vus: 1, iterations: 2 };

const A_JSON = '{"text":"a","number":"1","kind":"KIND_UNSPECIFIED","payload":"","tags":[],' +
  '"labels":{},"count":0,"delayMs":0,"code":0,"index":0,"ratio":0,"flag":false,"inner":null}';

function thrown(f) {
  try {
    f();
  } catch (e) {
    return String(e.message || e);
  }
  return "";
}

export default function () {
  client.connect(ADDR, { plaintext: true, timeout: "5s" });
  const a1 = client.invoke(ECHO, { text: "a", number: "1" });
  const a2 = client.invoke(ECHO, { text: "a", number: "1" });
  const b = client.invoke(ECHO, { text: "b" });
  const a3 = client.invoke(ECHO, { text: "a", number: "1" }, {});
  const a4 = client.invoke(ECHO, { text: "a", number: "1" }, null);
  a1.message.text = "changed";
  check(null, {
    "same text, same answer; a changed text is sent": () =>
      a2.message.text === "a" && a2.message.number === "1" && b.message.text === "b" &&
      b.message.number === "0" && a3.message.text === "a" && a4.message.text === "a",
    "responses are fresh objects in k6's shape": () =>
      a2.message !== a3.message && a1.message.text === "changed" &&
      Object.keys(a2).join() === "status,message,headers,trailers,error" &&
      JSON.stringify(a2.message) === A_JSON && a2.error === null &&
      JSON.stringify(a2.trailers) === '{"x-trailer":["done"]}',
  });

  const md = client.invoke(ECHO, { text: "m" }, { metadata: { "x-id": "7" } });
  const after = client.invoke(ECHO, { text: "m" });
  check(null, {
    "metadata after cached calls is sent, and only with its call": () =>
      JSON.stringify(md.headers["x-id"]) === '["7"]' && !("x-id" in after.headers) &&
      !("x-id" in a2.headers) && after.status === grpc.StatusOK,
  });

  const late = client.invoke(SLOW, { delayMs: 300 }, { timeout: "50ms" });
  const quick = client.invoke(SLOW, { delayMs: 1 });
  const short = client.invoke(ECHO, { text: "t" }, { timeout: "2s" });
  const late2 = client.invoke(SLOW, { delayMs: 300 }, { timeout: 50 });
  check(null, {
    "timeouts after cached calls apply to their call only": () =>
      late.status === grpc.StatusDeadlineExceeded && quick.status === grpc.StatusOK &&
      short.status === grpc.StatusOK && late2.status === grpc.StatusDeadlineExceeded &&
      late.error.message === "context deadline exceeded",
  });

  const n = client.invoke(ECHO, { text: null, number: undefined, ratio: NaN, flag: null });
  const inf = client.invoke(ECHO, { ratio: Infinity });
  const ninf = client.invoke(ECHO, { ratio: -Infinity });
  const nan2 = client.invoke(ECHO, { text: null, number: undefined, ratio: NaN, flag: null });
  check(null, {
    "null, undefined, NaN and ±Infinity fields": () =>
      n.status === grpc.StatusOK && n.message.text === "" && n.message.number === "0" &&
      n.message.ratio === "NaN" && n.message.flag === false && inf.message.ratio === "Infinity" &&
      ninf.message.ratio === "-Infinity" && nan2.message.ratio === "NaN",
  });

  const unknown = "unable to serialise request object to protocol buffer: unrecognized field name 'nope' at line 1 column 7";
  const e1 = thrown(() => client.invoke(ECHO, { nope: 1 }));
  const e2 = thrown(() => client.invoke(ECHO, { nope: 1 }));
  const ok = client.invoke(ECHO, { text: "a", number: "1" });
  const e3 = thrown(() => client.invoke(ECHO, { nope: 1 }));
  const typed = thrown(() => client.invoke(ECHO, { text: 5 }));
  check(null, {
    "an unknown field throws k6's text every time": () =>
      e1 === unknown && e2 === unknown && e3 === unknown && ok.status === grpc.StatusOK &&
      typed.startsWith("unable to serialise request object to protocol buffer: invalid type"),
  });

  const proto = client.invoke(ECHO, JSON.parse('{"labels":{"__proto__":"x"}}'));
  check(proto, {
    "a __proto__ map key is an own property, as JSON.parse makes it": (r) =>
      JSON.stringify(r.message.labels) === '{"__proto__":"x"}' &&
      Object.getPrototypeOf(r.message.labels) === Object.prototype,
  });
  client.close();
}
