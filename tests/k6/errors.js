// Failed requests: status 0, error_code, http_req_failed; a refused port and a timeout.
import http from "k6/http";
import { check } from "k6";

export const options = { vus: 1, iterations: 1 };

export default function () {
  const refused = http.get(__ENV.DEAD);
  const slow = http.get(`${__ENV.BASE}/delay/2000`, { timeout: "200ms" });
  check(refused, {
    "refused has status 0": (r) => r.status === 0,
    "refused error_code 1212": (r) => r.error_code === 1212,
  });
  check(slow, {
    "timeout error_code 1050": (r) => r.error_code === 1050,
    "timeout error text": (r) => r.error.length > 0,
  });
}
