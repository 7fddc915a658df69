// A first k6 script for Volley: a login, some work, a download — with checks, a group per
// step, custom metrics and thresholds that fail the run (exit 99) when crossed.
// Runs unmodified under k6 too. Against the built-in target:
//   volley target --listen 127.0.0.1:8080 &
//   volley run examples/quickstart.js -e BASE_URL=http://127.0.0.1:8080
import http from 'k6/http';
import { check, group, sleep } from 'k6';
import { Counter, Trend } from 'k6/metrics';

const BASE = __ENV.BASE_URL || 'http://127.0.0.1:8080';
// "demo:secret", as the Basic auth header carries it.
const CREDENTIALS = 'Basic ZGVtbzpzZWNyZXQ=';

const echoTime = new Trend('echo_duration', true);
const downloaded = new Counter('bytes_downloaded');

export const options = {
  vus: Number(__ENV.VUS || 10),
  duration: __ENV.DURATION || '5s',
  thresholds: {
    http_req_failed: ['rate<0.01'],
    http_req_duration: ['p(95)<200'],
    'http_req_duration{name:login}': ['p(99)<250'],
    echo_duration: ['avg<100'],
    checks: ['rate>0.99'],
  },
};

export default function () {
  group('login', () => {
    const res = http.get(`${BASE}/basic-auth/demo/secret`, {
      headers: { Authorization: CREDENTIALS },
      tags: { name: 'login' },
    });
    check(res, {
      'login status is 200': (r) => r.status === 200,
      'login authenticated': (r) => r.json().authenticated === true,
    });
  });

  group('work', () => {
    const res = http.post(`${BASE}/echo`, JSON.stringify({ item: __ITER, vu: __VU }), {
      headers: { 'Content-Type': 'application/json' },
      tags: { name: 'echo' },
    });
    echoTime.add(res.timings.duration);
    check(res, { 'echo returns the method': (r) => r.status === 200 && r.json().method === 'POST' });

    const file = http.get(`${BASE}/bytes/4096`, { tags: { name: 'download' } });
    downloaded.add(file.body.length);
    check(file, { 'download is 4 KiB': (r) => r.body.length === 4096 });
  });

  sleep(0.1);
}
