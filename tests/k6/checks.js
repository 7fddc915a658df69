// checks: passes and fails counted per check name, http_req_failed by status.
import http from "k6/http";
import { check } from "k6";

export const options = { vus: 2, iterations: 10 };

export default function () {
  const ok = http.get(`${__ENV.BASE}/`);
  check(ok, {
    "status is 200": (r) => r.status === 200,
    "body is 13 bytes": (r) => r.body.length === 13,
  });
  const missing = http.get(`${__ENV.BASE}/status/404`);
  check(missing, { "404 is 200": (r) => r.status === 200 }, { kind: "negative" });
}
