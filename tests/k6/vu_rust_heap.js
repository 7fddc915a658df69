// crates/js/tests/vu_rust_heap.js: N VUs (__ENV.N) each GET once, then sleep long enough for
// the test to sample the Rust heap while every VU waits (sleep releases after 100 ms).
import http from "k6/http";
import { sleep } from "k6";

const N = Number(__ENV.N || 1);

export const options = {
  scenarios: { s: { executor: "per-vu-iterations", vus: N, iterations: 1, maxDuration: "30s" } },
};

export default function () {
  http.get(`${__ENV.BASE}/`);
  sleep(Number(__ENV.SLEEP || 1.5));
}
