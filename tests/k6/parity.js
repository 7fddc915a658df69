// Deterministic counts for comparing Volley's --summary-export with k6's: two scenarios with
// exact iteration counts, checks that pass and fail, a group, custom metrics of every kind.
import http from "k6/http";
import { check, group } from "k6";
import { Counter, Gauge, Rate, Trend } from "k6/metrics";

const BASE = __ENV.BASE;
const items = new Counter("items");
const ok = new Rate("ok_rate");
const size = new Trend("body_size");
const last = new Gauge("last_status");

export const options = {
  scenarios: {
    each: { executor: "per-vu-iterations", vus: 2, iterations: 5, exec: "each" },
    shared: { executor: "shared-iterations", vus: 3, iterations: 12 },
  },
  thresholds: {
    "checks{scenario:each}": ["rate>0.4"],
    "http_reqs{scenario:shared}": ["count==24"],
  },
};

export function each() {
  const r = http.get(`${BASE}/status/404`);
  check(r, { "is 404": (x) => x.status === 404, "is 200": (x) => x.status === 200 });
  items.add(2);
  ok.add(false);
  last.add(r.status);
}

export default function () {
  group("pair", () => {
    const a = http.get(`${BASE}/bytes/100`);
    const b = http.post(`${BASE}/echo`, "hello");
    check(a, { "100 bytes": (x) => x.body.length === 100 });
    size.add(a.body.length);
    ok.add(b.status === 200);
  });
  items.add(1);
}
