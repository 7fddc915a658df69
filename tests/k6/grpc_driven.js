// k6/net/grpc on one connection per VU with many things in flight at once: ten asyncInvoke
// calls (the first started ends last), a server stream that delivers while the VU sleeps and
// then makes a blocking call, a call cut by its deadline between two good ones. Counts and
// the stream's duration asserted in crates/js/tests/grpc.rs; runs unmodified under k6.
import grpc from "k6/net/grpc";
import { check, sleep } from "k6";

const ADDR = __ENV.BASE.replace(/^https?:\/\//, "");
const client = new grpc.Client();
client.load(["../../examples/grpc"], "target.proto");

export const options = { vus: 2, iterations: 4 };

export default async function () {
  client.connect(ADDR, { plaintext: true });

  const calls = [];
  for (let i = 0; i < 10; i++) {
    calls.push(client.asyncInvoke("volley.target.Target/Slow", { delayMs: 200 - i * 20, text: `c${i}` }));
  }
  const all = await Promise.all(calls);
  check(all, {
    "ten asyncInvoke on one connection": (x) =>
      x.map((r) => `${r.status}:${r.message.text}`).join(",") === [...Array(10).keys()].map((i) => `0:c${i}`).join(","),
  });

  // 2,000 messages of 1 kB (twice the stream window) arrive while the VU sleeps.
  let got = 0;
  const s = new grpc.Stream(client, "volley.target.Target/Count", { tags: { part: "count" } });
  s.on("data", () => got++);
  s.on("end", () => check(got, { "stream: every message": (n) => n === 2000 }));
  s.write({ count: 2000, text: "x".repeat(1000) });
  s.end();
  sleep(1.5);
  const r = client.invoke("volley.target.Target/Echo", { text: "after" });
  check(r, { "blocking call with a stream open": (x) => x.status === grpc.StatusOK && x.message.text === "after" });

  const cut = client.invoke("volley.target.Target/Slow", { delayMs: 3000 }, { timeout: "100ms" });
  check(cut, { "deadline": (x) => x.status === grpc.StatusDeadlineExceeded });
  const next = client.invoke("volley.target.Target/Echo", { text: "next" });
  check(next, { "call after a deadline": (x) => x.status === grpc.StatusOK && x.message.text === "next" });
}
