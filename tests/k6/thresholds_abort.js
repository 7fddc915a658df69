// abortOnFail: the first crossing after delayAbortEval stops the test long before its 30 s.
import http from "k6/http";
import { sleep } from "k6";

export const options = {
  vus: 1,
  duration: "30s",
  thresholds: {
    http_reqs: [{ threshold: "count<3", abortOnFail: true, delayAbortEval: "1s" }],
    iterations: ["count>=0"],
  },
};

export default function () {
  http.get(`${__ENV.BASE}/`);
  sleep(0.1);
}
