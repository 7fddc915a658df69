// Two scenarios whose iterations sleep far past any stop: Ctrl-C must end the run within the
// graceful stop (once) or at once (twice), with the summary and the result file written.
import { sleep } from "k6";
import http from "k6/http";

export const options = {
  scenarios: {
    quick: {
      executor: "constant-vus",
      vus: 2,
      duration: "60s",
      exec: "quick",
      gracefulStop: "2s",
    },
    stuck: {
      executor: "constant-arrival-rate",
      rate: 2,
      duration: "60s",
      preAllocatedVUs: 2,
      maxVUs: 4,
      exec: "stuck",
      gracefulStop: "2s",
    },
  },
};

export function quick() {
  http.get(`${__ENV.BASE}/`);
  sleep(0.05);
}

export function stuck() {
  sleep(120);
}
