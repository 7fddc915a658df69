// Drift thresholds (volley's extension of k6's grammar): the target's memory slope from
// --monitor, a latency drift and a gauge max with units. `volley run` is given
// `--monitor app=pid:N`; __ENV.ABORT makes the slope check abortOnFail, __ENV.DURATION sets
// the length.
import http from "k6/http";
import { sleep } from "k6";

const slope = __ENV.ABORT
  ? { threshold: "slope<1MB/h", abortOnFail: true }
  : "slope<1MB/h";

export const options = {
  vus: 2,
  duration: __ENV.DURATION || "6s",
  thresholds: {
    monitor_rss_bytes: [slope],
    "monitor_rss_bytes{target:app}": ["max<2GB"],
    http_req_duration: ["drift(p95)<1000%", "p(95)<2000"],
  },
};

export default function () {
  http.get(`${__ENV.BASE}/get`);
  sleep(0.05);
}
