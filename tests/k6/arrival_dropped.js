// ramping-arrival-rate against a slow endpoint with too few VUs: iterations are dropped and
// counted, never queued.
import http from "k6/http";

export const options = {
  scenarios: {
    slow: {
      executor: "ramping-arrival-rate",
      startRate: 20,
      timeUnit: "1s",
      stages: [{ target: 20, duration: "2s" }],
      preAllocatedVUs: 1,
      maxVUs: 2,
    },
  },
};

export default function () {
  http.get(`${__ENV.BASE}/delay/400`);
}
