// Token refresh under load: each VU logs in once, then every iteration rotates its session
// with POST /api/auth/refresh — alternately with the refresh token in the JSON body and by
// the refresh cookie plus X-CSRF-Token — and checks the rotation: new tokens, the old access
// token refused (401), the new one accepted, and now and then that a used refresh token
// cannot be redeemed twice.
//
//   volley run examples/auth-refresh.js -e BASE_URL=http://127.0.0.1:8090 [-e PROFILE=load]
//
// Metrics: refresh_duration (Trend, p95 < P95_MS, default 500), refreshes (Counter).
import http from 'k6/http';
import { check, fail, sleep } from 'k6';
import exec from 'k6/execution';
import { Counter, Trend } from 'k6/metrics';
import { BASE_URL, THINK, USER, suiteOptions, p95 } from './lib/config.js';
import { JSON_HEADERS, bearer, json, login, session, tagged } from './lib/api.js';

const refreshTime = new Trend('refresh_duration', true);
const refreshes = new Counter('refreshes');

export const options = suiteOptions({
  refresh_duration: [p95('P95_MS', 500)],
});

let s = null; // this VU's session, rotated every iteration

export default function () {
  if (s === null) {
    s = login();
    if (!s.ok) {
      s = null;
      fail('login failed');
    }
  }
  const old = s;
  const byCookie = exec.vu.iterationInScenario % 2 === 1;
  const url = `${BASE_URL}/api/auth/refresh`;
  const res = byCookie
    ? http.post(url, '{}', tagged('/api/auth/refresh', {
      headers: Object.assign({ 'X-CSRF-Token': old.csrf }, JSON_HEADERS),
      cookies: {
        volley_refresh: { value: old.refresh, replace: true },
        volley_csrf: { value: old.csrf, replace: true },
      },
      tags: { mode: 'cookie' },
    }))
    : http.post(url, JSON.stringify({ refresh_token: old.refresh }), tagged('/api/auth/refresh', {
      headers: JSON_HEADERS,
      tags: { mode: 'body' },
    }));
  refreshTime.add(res.timings.duration, { mode: byCookie ? 'cookie' : 'body' });
  const next = session(res, 'refresh');
  if (!next.ok) {
    s = null; // log in again next time
    return;
  }
  refreshes.add(1);
  s = next;
  check(next, {
    'refresh rotates every token': (n) =>
      n.token !== old.token && n.refresh !== old.refresh && n.csrf !== old.csrf,
  });

  const rejected = { responseCallback: http.expectedStatuses(401), tags: { outcome: 'rejected' } };
  const stale = http.get(`${BASE_URL}/api/auth/me`, bearer(old, '/api/auth/me', rejected));
  check(stale, { 'old access token refused': (r) => r.status === 401 });
  const me = http.get(`${BASE_URL}/api/auth/me`, bearer(next, '/api/auth/me'));
  check(me, {
    'new access token accepted': (r) => r.status === 200 && (json(r) || { user: {} }).user.username === USER,
  });

  if (exec.vu.iterationInScenario % 5 === 0) {
    const again = http.post(url, JSON.stringify({ refresh_token: old.refresh }),
      tagged('/api/auth/refresh', Object.assign({ headers: JSON_HEADERS }, rejected)));
    check(again, { 'used refresh token refused': (r) => r.status === 401 });
  }

  if (THINK > 0) sleep(THINK);
}
