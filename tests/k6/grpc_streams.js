// k6/net/grpc streams against the built-in target: server streaming (Count), client
// streaming (Sum), bidi (Chat) with events in order, and a stream that fails (its error
// event, then end). Counts asserted in crates/js/tests/grpc.rs; runs unmodified under k6.
import { Client, Stream, StatusNotFound } from "k6/net/grpc";
import { check } from "k6";

const ADDR = __ENV.BASE.replace(/^https?:\/\//, "");
const client = new Client();
client.load(["../../examples/grpc"], "target.proto");

export const options = { vus: 1, iterations: 2 };

export default function () {
  client.connect(ADDR, { plaintext: true });

  // Server streaming: 3 messages, then end.
  const counted = [];
  const s1 = new Stream(client, "volley.target.Target/Count", { tags: { part: "count" } });
  s1.on("data", (m, meta) => counted.push(`${m.index}:${m.text}:${typeof meta.ts}`));
  s1.on("end", () => {
    check(counted, { "server stream: 3 messages in order": (c) => c.join(",") === "0:n:number,1:n:number,2:n:number" });
  });
  s1.write({ count: 3, text: "n" });
  s1.end();

  // Client streaming: 4 writes, one answer.
  let sum = null;
  const s2 = new Stream(client, "volley.target.Target/Sum", { tags: { part: "sum" } });
  s2.on("data", (m) => (sum = m));
  s2.on("end", () => {
    check(sum, { "client stream: sum and count": (x) => x !== null && x.number === "10" && x.count === 4 });
  });
  for (let i = 1; i <= 4; i++) s2.write({ number: i });
  s2.end();

  // Bidi: answer each echo with the next message.
  const seen = [];
  const s3 = new Stream(client, "volley.target.Target/Chat", { tags: { part: "chat" } });
  s3.on("data", (m) => {
    seen.push(m.index);
    if (m.index < 4) s3.write({ index: m.index + 1 });
    else s3.end();
  });
  s3.on("end", () => {
    check(seen, { "bidi: 5 round trips": (x) => x.join(",") === "0,1,2,3,4" });
  });
  s3.write({ index: 0 });

  // A failing stream: error, then end.
  const events = [];
  const s4 = new Stream(client, "volley.target.Target/Fail", { tags: { part: "fail" } });
  s4.on("error", (e) => events.push(`error:${e.code}:${e.message}`));
  s4.on("end", () => {
    events.push("end");
    check(events, { "failed stream: error then end": (x) => x.join("|") === `error:${StatusNotFound}:missing|end` });
  });
  s4.write({ code: 5, text: "missing" });
  s4.end();
}
