// bench/k6.sh "sleep" and "flat": many VUs, each one GET then sleep(1) — an open-ish load of
// about VUs requests per second where the tool's cost per VU (memory) and its latency
// overhead matter more than its top speed.
//   k6 run --vus 5000 --duration 15s -e URL=http://127.0.0.1:18380/ k6_sleep.js
import http from 'k6/http';
import { sleep } from 'k6';

const URL = __ENV.URL || 'http://127.0.0.1:18380/';

export const options = {
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
};

export default function () {
  http.get(URL);
  sleep(1);
}
