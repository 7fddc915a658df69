// thresholds: k6's grammar on whole metrics and tagged sub-metrics (name, check, group,
// several tags). __ENV.FAIL=1 adds thresholds that must fail (exit code 99).
import http from "k6/http";
import { check, group } from "k6";
import { Counter, Trend } from "k6/metrics";

const fails = __ENV.FAIL === "1";
const things = new Counter("things");
const sizes = new Trend("sizes");

const thresholds = {
  http_reqs: ["count==8", "rate>0"],
  http_req_failed: ["rate<=0.5"],
  "http_req_duration{name:verify}": ["p(95)<5000", "max>=0", "avg < 5000", "med<5000", "min>=0"],
  "http_reqs{name:verify}": ["count==4"],
  "checks{check:status is 200}": ["rate==1"],
  "checks{check:404 is 200}": ["rate==0"],
  "group_duration{group:::login}": ["max<10000", "min>0"],
  "http_reqs{group:::login,method:GET}": ["count==4"],
  things: ["count==12"],
  sizes: ["p(50)<11", "max==30"],
  iterations: ["count===4"],
  vus: ["value>=1"],
};
if (fails) {
  thresholds.checks = ["rate>0.9"];
  thresholds["http_reqs{name:verify}"] = ["count>100"];
}

export const options = { vus: 2, iterations: 4, thresholds };

export default function () {
  group("login", () => {
    const r = http.get(`${__ENV.BASE}/get`, { tags: { name: "verify" } });
    check(r, { "status is 200": (r) => r.status === 200 });
  });
  const m = http.get(`${__ENV.BASE}/status/404`);
  check(m, { "404 is 200": (r) => r.status === 200 });
  things.add(3);
  sizes.add(10);
  if (__ITER === 0 && __VU === 1) sizes.add(30);
}
