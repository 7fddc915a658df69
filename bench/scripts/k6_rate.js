// k6 side of the `rate` scenario: a fixed arrival rate (open model), one GET + check per
// iteration. Env: URL, RATE (iterations/s), DUR (seconds), VUS (pre-allocated = max VUs).
import http from 'k6/http';
import { check } from 'k6';

const URL = __ENV.URL || 'http://127.0.0.1:18080/';
const VUS = parseInt(__ENV.VUS || '50', 10);

export const options = {
  scenarios: {
    fixed: {
      executor: 'constant-arrival-rate',
      rate: parseInt(__ENV.RATE || '10000', 10),
      timeUnit: '1s',
      duration: `${__ENV.DUR || '10'}s`,
      preAllocatedVUs: VUS,
      maxVUs: VUS,
    },
  },
};

export default function () {
  const r = http.get(URL);
  check(r, { 'status is 200': (x) => x.status === 200 });
}
