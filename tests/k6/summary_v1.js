// summary_v1: k6 v1's end-of-test summary (compact, full): groups and nested groups, checks in
// first-seen order (not by name), custom metrics of each kind, two scenarios (the second
// starts later so the first-seen order is fixed). Recorded k6 v1.8.1 output: summary_v1/.
import http from "k6/http";
import { check, group } from "k6";
import { Counter, Gauge, Rate, Trend } from "k6/metrics";

const things = new Counter("things");
const level = new Gauge("level");
const good = new Rate("good");
const waits = new Trend("waits", true);

export const options = {
  scenarios: {
    first: { executor: "shared-iterations", vus: 1, iterations: 3 },
    second: { executor: "per-vu-iterations", vus: 1, iterations: 2, exec: "other", startTime: "300ms" },
  },
  thresholds: {
    http_req_duration: ["p(95)<5000"],
    "checks{check:zeta first}": ["rate==1"],
    things: ["count>0"],
  },
};

export default function () {
  const r = http.get(`${__ENV.BASE}/`);
  check(r, { "zeta first": (r) => r.status === 200, "alpha second": (r) => r.status === 200 });
  group("outer", () => {
    check(r, { "in outer": () => true });
    group("inner", () => {
      check(r, { "in inner fails": () => false });
    });
  });
  things.add(2);
  level.add(7);
  good.add(true);
  waits.add(12.5);
}

export function other() {
  group("other group", () => {
    const r = http.get(`${__ENV.BASE}/status/404`);
    check(r, { "is 404": (r) => r.status === 404 });
  });
  good.add(false);
}
