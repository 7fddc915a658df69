// Ctrl-C with two scenarios of different gracefulStop: each scenario's running iterations get
// their own (k6), not the longest of all. Both sleep 4 s; Ctrl-C comes at ~1.5 s: `short`
// (1 s) is interrupted, `long` (20 s) finishes.
import { sleep } from "k6";
import http from "k6/http";

export const options = {
  scenarios: {
    short: {
      executor: "per-vu-iterations",
      vus: 2,
      iterations: 1,
      maxDuration: "60s",
      gracefulStop: "1s",
    },
    long: {
      executor: "per-vu-iterations",
      vus: 2,
      iterations: 1,
      maxDuration: "60s",
      gracefulStop: "20s",
    },
  },
};

export default function () {
  sleep(4);
  http.get(`${__ENV.BASE}/`);
}
