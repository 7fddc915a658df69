// Many VUs over several target processes: each VU GETs one of PORTS (a comma-separated
// list) chosen by its test-wide id, then sleeps SLEEP seconds. One process can hold at
// most its open-file limit of connections, the target's as well as the tool's, so 50,000
// VUs need several of each (bench/RESULTS.md, "50,000 VUs across processes").
//   volley coordinator k6_sleep_ports.js --instances 3 --listen 127.0.0.1:6570 \
//     -e VUS=50000 -e DUR=30s -e PORTS=18391,18392,18393 -e SLEEP=1
import http from 'k6/http';
import { sleep } from 'k6';
import exec from 'k6/execution';

const PORTS = (__ENV.PORTS || '18380').split(',');
const SLEEP = Number(__ENV.SLEEP || 1);

export const options = {
  vus: Number(__ENV.VUS || 100),
  duration: __ENV.DUR || '30s',
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
};

export default function () {
  const port = PORTS[exec.vu.idInTest % PORTS.length];
  http.get(`http://127.0.0.1:${port}/`);
  sleep(SLEEP);
}
