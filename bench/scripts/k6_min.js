// bench/k6.sh "min": k6's minimal script — one GET and one check per iteration.
//   k6 run --vus 50 --duration 10s -e URL=http://127.0.0.1:18380/ k6_min.js
import http from 'k6/http';
import { check } from 'k6';

const URL = __ENV.URL || 'http://127.0.0.1:18380/';

export const options = {
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
};

export default function () {
  const r = http.get(URL);
  check(r, { 'status is 200': (x) => x.status === 200 });
}
