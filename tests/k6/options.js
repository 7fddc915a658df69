// Options honoured: global tags, userAgent, hosts, maxRedirects, discardResponseBodies,
// noConnectionReuse. The target's /headers echoes the request headers.
import http from "k6/http";
import { check } from "k6";

export const options = {
  iterations: 1,
  tags: { team: "blue" },
  userAgent: "volley-conformance/1.0",
  hosts: { "test.invalid": "127.0.0.1" },
  maxRedirects: 1,
  discardResponseBodies: true,
  noConnectionReuse: true,
  summaryTimeUnit: "ms",
};

export default function () {
  const h = http.get(`${__ENV.BASE}/headers`, { responseType: "text" });
  check(h, { "user agent sent": (r) => r.body.includes("volley-conformance/1.0") });
  const d = http.get(`${__ENV.BASE}/`);
  check(d, { "body discarded": (r) => r.body === null || r.body === undefined });
  const port = __ENV.BASE.split(":").pop();
  const p = http.get(`http://test.invalid:${port}/`);
  check(p, { "hosts pins the address": (r) => r.status === 200 });
  const r = http.get(`${__ENV.BASE}/redirect/3`);
  check(r, { "maxRedirects stops after one hop": (r) => r.status === 302 || r.status === 301 });
}
