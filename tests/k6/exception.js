// An exception in an iteration is logged and counted; the test goes on.
import http from "k6/http";

export const options = { vus: 1, iterations: 9 };

export default function () {
  http.get(`${__ENV.BASE}/`);
  if (__ITER % 3 === 2) {
    throw new Error(`planned failure in iteration ${__ITER}`);
  }
}
