// k6 side of bench/run.sh: one GET per iteration plus a status check (what a typical
// k6 script does). VUs, duration and the URL come from the command line / env:
//   k6 run --vus N --duration Ds -e URL=... [-e DISCARD=1] k6_get.js
import http from 'k6/http';
import { check } from 'k6';

const URL = __ENV.URL || 'http://127.0.0.1:18080/';

export const options = {
  // download scenario: don't keep 1 MiB bodies as JS strings (the other tools discard them)
  discardResponseBodies: __ENV.DISCARD === '1',
};

export default function () {
  const r = http.get(URL);
  check(r, { 'status is 200': (x) => x.status === 200 });
}
