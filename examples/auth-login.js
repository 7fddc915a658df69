// Login under load: each iteration logs in (argon2 password check, three cookies, a bearer
// token), reads /api/auth/me by the session cookie alone, checks that a write by cookie without
// the CSRF header is refused (403 csrf), logs out with the CSRF header, and checks the old token
// is refused. One login in ten uses a wrong password (expected 401).
//
//   volley run examples/auth-login.js -e BASE_URL=http://127.0.0.1:8090 [-e PROFILE=load]
//
// Metrics: login_duration (Trend, p95 < P95_MS, default 1000), logout_duration (Trend),
// logins (Counter). Env: see lib/config.js.
import http from 'k6/http';
import { check, sleep } from 'k6';
import exec from 'k6/execution';
import { Counter, Trend } from 'k6/metrics';
import { BASE_URL, THINK, USER, suiteOptions, p95 } from './lib/config.js';
import { bearer, json, login, tagged } from './lib/api.js';

const loginTime = new Trend('login_duration', true);
const logoutTime = new Trend('logout_duration', true);
const logins = new Counter('logins');

export const options = suiteOptions({
  login_duration: [p95('P95_MS', 1000)],
});

export default function () {
  if (exec.scenario.iterationInTest % 10 === 9) {
    const bad = http.post(
      `${BASE_URL}/api/auth/login`,
      JSON.stringify({ username: USER, password: 'not-the-password' }),
      tagged('/api/auth/login', {
        headers: { 'Content-Type': 'application/json' },
        responseCallback: http.expectedStatuses(401),
        tags: { outcome: 'rejected' },
      }),
    );
    check(bad, {
      'wrong password is 401': (r) => r.status === 401,
      'wrong password says invalid_credentials': (r) => (json(r) || {}).code === 'invalid_credentials',
    });
  }

  const s = login();
  loginTime.add(s.res.timings.duration);
  if (!s.ok) return;
  logins.add(1);

  // The jar holds the session cookies now: no Authorization header needed for a GET.
  const me = http.get(`${BASE_URL}/api/auth/me`, tagged('/api/auth/me'));
  check(me, {
    'me by cookie is 200': (r) => r.status === 200,
    'me is the logged-in user': (r) => (json(r) || { user: {} }).user.username === USER,
  });

  // A state change by cookie needs X-CSRF-Token = the CSRF cookie: without it, 403 csrf.
  const forged = http.post(`${BASE_URL}/api/folders`, JSON.stringify({ name: 'csrf-probe' }), tagged('/api/folders', {
    headers: { 'Content-Type': 'application/json' },
    responseCallback: http.expectedStatuses(403),
    tags: { outcome: 'rejected' },
  }));
  check(forged, { 'cookie write without CSRF header is 403': (r) => r.status === 403 && (json(r) || {}).code === 'csrf' });

  const out = http.post(`${BASE_URL}/api/auth/logout`, null, tagged('/api/auth/logout', {
    headers: { 'X-CSRF-Token': s.csrf },
  }));
  logoutTime.add(out.timings.duration);
  check(out, { 'logout is 200': (r) => r.status === 200 });

  const after = http.get(
    `${BASE_URL}/api/auth/me`,
    bearer(s, '/api/auth/me', { responseCallback: http.expectedStatuses(401), tags: { outcome: 'rejected' } }),
  );
  check(after, { 'token refused after logout': (r) => r.status === 401 });

  if (THINK > 0) sleep(THINK);
}
