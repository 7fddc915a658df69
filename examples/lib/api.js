// The demo service's API as the example suites use it: login (token + cookies + CSRF),
// per-VU sessions, auth parameters for bearer or cookie requests, the seeded folders, unique
// names, and payloads. Standard k6 only.
import http from 'k6/http';
import { check, fail } from 'k6';
import encoding from 'k6/encoding';
import exec from 'k6/execution';
import { BASE_URL, USER, PASSWORD, DAV_USER, DAV_PASSWORD, envNum } from './config.js';

export const JSON_HEADERS = { 'Content-Type': 'application/json' };

/** Request params tagged with `name` (the route template, as the service's /metrics labels it). */
export function tagged(name, params) {
  const p = Object.assign({}, params || {});
  p.tags = Object.assign({ name: name }, p.tags || {});
  return p;
}

/** A response's JSON, or null when it is not JSON (checks then fail instead of throwing). */
export function json(res) {
  try {
    return res.json();
  } catch (e) {
    return null;
  }
}

/** The value of the cookie `name` set by `res`, or undefined. */
export function cookieValue(res, name) {
  const c = res.cookies && res.cookies[name];
  return c && c.length ? c[0].value : undefined;
}

/**
 * Logs in: POST /api/auth/login. Returns `{ res, ok, token, refresh, csrf, user, cookies, at }`
 * where `cookies` are the three session cookies the response set (also stored in the VU's jar
 * until the iteration ends). Records the checks `login status is 200`, `login returns a
 * bearer token` and `login sets the session cookies`.
 */
export function login(user, password, params) {
  const res = http.post(
    `${BASE_URL}/api/auth/login`,
    JSON.stringify({ username: user || USER, password: password || PASSWORD }),
    tagged('/api/auth/login', Object.assign({ headers: JSON_HEADERS }, params || {})),
  );
  return session(res, 'login');
}

/** A session from a login or refresh response (see `login`), with checks named `what ...`. */
export function session(res, what) {
  const body = res.status === 200 ? json(res) : null;
  const cookies = {
    access: cookieValue(res, 'volley_access'),
    refresh: cookieValue(res, 'volley_refresh'),
    csrf: cookieValue(res, 'volley_csrf'),
  };
  const ok = check(res, {
    [`${what} status is 200`]: (r) => r.status === 200,
    [`${what} returns a bearer token`]: () =>
      !!body && typeof body.access_token === 'string' && body.token_type === 'Bearer',
    [`${what} sets the session cookies`]: () =>
      !!body && cookies.access === body.access_token && cookies.csrf === body.csrf_token &&
      cookies.refresh === body.refresh_token,
  });
  return {
    res: res,
    ok: ok,
    token: body ? body.access_token : undefined,
    refresh: body ? body.refresh_token : undefined,
    csrf: body ? body.csrf_token : undefined,
    user: body ? body.user : undefined,
    cookies: cookies,
    at: Date.now(),
  };
}

/** `Authorization: Bearer` params for session `s` (plus `extra` params, tagged `name`). */
export function bearer(s, name, extra) {
  const p = tagged(name, extra);
  p.headers = Object.assign({ Authorization: `Bearer ${s.token}` }, p.headers || {});
  return p;
}

/** Bearer params with a JSON content type. */
export function bearerJson(s, name, extra) {
  const p = bearer(s, name, extra);
  p.headers['Content-Type'] = 'application/json';
  return p;
}

/**
 * Cookie-authenticated params: the access and CSRF cookies of `s` (replacing whatever the jar
 * holds) and the `X-CSRF-Token` header that state-changing requests need.
 */
export function cookieAuth(s, name, extra) {
  const p = tagged(name, extra);
  p.cookies = Object.assign(
    {
      volley_access: { value: s.token, replace: true },
      volley_csrf: { value: s.csrf, replace: true },
    },
    p.cookies || {},
  );
  p.headers = Object.assign({ 'X-CSRF-Token': s.csrf }, p.headers || {});
  return p;
}

// One session per VU, kept across iterations (module state is per VU in k6 and Volley) and
// renewed by a fresh login before the 15-minute access token would expire.
const SESSION_TTL_MS = envNum('SESSION_TTL_S', 600) * 1000;
let current = null;

/** This VU's session: logs in on first use and again after SESSION_TTL_S (600 s). */
export function vuSession() {
  if (current === null || Date.now() - current.at > SESSION_TTL_MS) {
    const s = login();
    if (!s.ok) fail(`login as ${USER} failed: HTTP ${s.res.status} ${s.res.body}`);
    current = s;
  }
  return current;
}

/**
 * For setup(): the ids of the top-level folders (`list-100`, `downloads`, `uploads`, ...) by
 * name. Fails the test with a hint when the data set is missing.
 */
export function seededFolders(s) {
  const res = http.get(`${BASE_URL}/api/folders?limit=1`, bearer(s, '/api/folders/{id}'));
  const body = json(res);
  if (res.status !== 200 || !body) fail(`listing the root folder: HTTP ${res.status} ${res.body}`);
  const out = {};
  for (const f of body.folders) out[f.name] = f.id;
  return out;
}

/** For setup(): the id of seeded folder `name`, or a failure telling how to seed. */
export function seededFolder(folders, name) {
  if (folders[name] === undefined) {
    fail(`folder "${name}" is missing: seed first with  volley demo seed --url ${BASE_URL}` +
      (name === 'list-10000' ? '  (without --small)' : ''));
  }
  return folders[name];
}

/** For setup(): a new folder `name` below `parent` (its id). */
export function createFolder(s, name, parent) {
  const res = http.post(
    `${BASE_URL}/api/folders`,
    JSON.stringify({ name: name, parent_id: parent }),
    bearerJson(s, '/api/folders'),
  );
  const body = json(res);
  if (res.status !== 201 || !body) fail(`creating folder ${name}: HTTP ${res.status} ${res.body}`);
  return body.folder.id;
}

/** Deletes folder `id` and everything below it (teardown's cleanup). */
export function deleteFolder(s, id) {
  const res = http.del(`${BASE_URL}/api/folders/${id}`, null, bearer(s, '/api/folders/{id}'));
  check(res, { 'cleanup: folder deleted': (r) => r.status === 204 });
}

/** A short id for this test run, for names that must not clash with earlier runs. */
export function runId() {
  return `${Date.now().toString(36)}${Math.floor(Math.random() * 1296).toString(36)}`;
}

/** A name unique in this run: `prefix-RUN-VU-ITER.ext`. */
export function uniqueName(run, prefix, ext) {
  return `${prefix}-${run}-${exec.vu.idInTest}-${exec.scenario.iterationInTest}${ext || ''}`;
}

/**
 * `size` bytes as an ArrayBuffer: byte i = (i * 31 + seed) % 251, binary (not text), so a
 * mangled upload shows.
 */
export function payload(size, seed) {
  const a = new Uint8Array(size);
  const s = seed || 0;
  for (let i = 0; i < size; i++) a[i] = (i * 31 + s) % 251;
  return a.buffer;
}

/** The Basic auth header of the WebDAV account. */
export function davAuth() {
  return { Authorization: `Basic ${encoding.b64encode(`${DAV_USER}:${DAV_PASSWORD}`)}` };
}

/** A multipart upload of `data` as `name` into `folder`: POST /api/files/upload. */
export function uploadFile(s, folder, name, data) {
  return http.post(
    `${BASE_URL}/api/files/upload?folder_id=${folder}`,
    { file: http.file(data, name, 'application/octet-stream') },
    bearer(s, '/api/files/upload'),
  );
}
