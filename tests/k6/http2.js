// HTTP/2 in scripts: https requests negotiate h2 by ALPN (k6 offers h2 and http/1.1), reuse
// the VU's connection, multiplex a batch on it; wss stays on HTTP/1.1. Run against the
// built-in target over TLS (crates/cli/tests/http2_scripts.rs); runs unmodified under k6.
import http from "k6/http";
import ws from "k6/ws";
import { check } from "k6";

const BASE = __ENV.BASE;

export const options = { vus: 1, iterations: 2, insecureSkipTLSVerify: true };

export default function () {
  const r = http.get(`${BASE}/get`);
  check(r, {
    "h2 negotiated": (r) => r.proto === "HTTP/2.0",
    "the server saw HTTP/2": (r) => r.status === 200 && r.json().version === "HTTP/2.0",
    "h2 timings": (r) => r.timings.waiting > 0 && r.timings.duration >= r.timings.waiting,
  });
  const reqs = [];
  for (let i = 0; i < 10; i++) reqs.push(["GET", `${BASE}/delay/50`, null, { tags: { name: "batch" } }]);
  const rs = http.batch(reqs);
  check(rs, {
    "a batch over h2": (rs) => rs.length === 10 && rs.every((x) => x.status === 200 && x.proto === "HTTP/2.0"),
  });
  const p = http.post(`${BASE}/echo`, "abc", { headers: { "X-Test": "h2" } });
  check(p, {
    "h2 body and headers sent": (r) => r.json().body === "abc" && r.json().headers["x-test"] === "h2",
    "response headers": (r) => r.headers["Content-Type"] === "application/json",
  });
  const w = ws.connect(BASE.replace(/^https/, "wss") + "/ws/echo", (s) => {
    s.on("open", () => s.send("x"));
    s.on("message", () => s.close());
  });
  check(w, { "wss upgrades over HTTP/1.1": (w) => w.status === 101 });
}
