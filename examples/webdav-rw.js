// WebDAV read/write with HTTP Basic auth (the seeded bench_webdav account): each iteration
// PUTs a DAV_FILE_KB file (default 64) into /dav/webdav/scratch/, GETs it back whole and by
// Range, PROPFINDs it (Depth 0) and the seeded collection (Depth 1), reads one of the seeded
// seed-NN.bin files, and DELETEs its file (a GET afterwards is 404).
//
//   volley run examples/webdav-rw.js -e BASE_URL=http://127.0.0.1:8090
//
// Metrics: dav_put_duration (Trend, p95 < P95_MS, default 500), dav_get_duration (Trend,
// p95 < GET_P95_MS, default 500), dav_propfind_duration (Trend), dav_bytes_written and
// dav_bytes_read (Counters of file bytes).
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import { BASE_URL, THINK, envNum, suiteOptions, p95 } from './lib/config.js';
import { davAuth, payload, runId, tagged, uniqueName } from './lib/api.js';

const SIZE = envNum('DAV_FILE_KB', 64) * 1024;
const SEED_FILES = 10; // seed-01.bin .. seed-10.bin, 64 KiB of one digit each
const SEED_SIZE = 64 * 1024;
const DATA = payload(SIZE, 3);
const DAV = `${BASE_URL}/dav/webdav`;

const putTime = new Trend('dav_put_duration', true);
const getTime = new Trend('dav_get_duration', true);
const propfindTime = new Trend('dav_propfind_duration', true);
const written = new Counter('dav_bytes_written');
const read = new Counter('dav_bytes_read');

export const options = suiteOptions({
  dav_put_duration: [p95('P95_MS', 500)],
  dav_get_duration: [p95('GET_P95_MS', 500)],
});

const PROPFIND_BODY = '<?xml version="1.0" encoding="utf-8"?>\n' +
  '<D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>';

function dav(name, extra) {
  const p = tagged(name, extra);
  p.headers = Object.assign(davAuth(), p.headers || {});
  return p;
}

function sameBytes(body, expected) {
  if (!body || body.byteLength !== expected.byteLength) return false;
  const a = new Uint8Array(body);
  const b = new Uint8Array(expected);
  for (let i = 0; i < a.length; i += 997) if (a[i] !== b[i]) return false;
  return a[a.length - 1] === b[b.length - 1];
}

export function setup() {
  // A WebDAV round trip up front tells a missing seed apart from a slow service.
  const res = http.request('PROPFIND', `${DAV}/`, null, dav('/dav', { headers: { Depth: '0' } }));
  if (res.status !== 207) {
    throw new Error(`PROPFIND ${DAV}/: HTTP ${res.status}; seed first with  volley demo seed --url ${BASE_URL}`);
  }
  return { run: runId() };
}

export default function (data) {
  const name = uniqueName(data.run, 'dav', '.bin');
  const url = `${DAV}/scratch/${name}`;

  const put = http.put(url, DATA, dav('/dav', { tags: { op: 'put' }, headers: { 'Content-Type': 'application/octet-stream' } }));
  putTime.add(put.timings.duration);
  if (!check(put, { 'dav PUT is 201': (r) => r.status === 201 })) return;
  written.add(SIZE);

  const get = http.get(url, dav('/dav', { tags: { op: 'get' }, responseType: 'binary' }));
  getTime.add(get.timings.duration);
  if (get.body) read.add(get.body.byteLength);
  check(get, {
    'dav GET is 200': (r) => r.status === 200,
    'dav GET returns what was PUT': (r) => sameBytes(r.body, DATA),
  });

  const part = http.get(url, dav('/dav', { tags: { op: 'get_range' }, responseType: 'binary', headers: { Range: 'bytes=0-1023' } }));
  if (part.body) read.add(part.body.byteLength);
  check(part, {
    'dav Range GET is 206': (r) => r.status === 206 && r.body.byteLength === Math.min(1024, SIZE) &&
      r.headers['Content-Range'] === `bytes 0-${Math.min(1024, SIZE) - 1}/${SIZE}`,
  });

  const p0 = http.request('PROPFIND', url, PROPFIND_BODY,
    dav('/dav', { tags: { op: 'propfind' }, headers: { Depth: '0', 'Content-Type': 'application/xml' } }));
  propfindTime.add(p0.timings.duration, { depth: '0' });
  check(p0, {
    'PROPFIND depth 0 is 207': (r) => r.status === 207,
    'PROPFIND shows the size': (r) => String(r.body).indexOf(`<D:getcontentlength>${SIZE}</D:getcontentlength>`) >= 0,
  });

  const p1 = http.request('PROPFIND', `${DAV}/`, PROPFIND_BODY,
    dav('/dav', { tags: { op: 'propfind' }, headers: { Depth: '1', 'Content-Type': 'application/xml' } }));
  propfindTime.add(p1.timings.duration, { depth: '1' });
  check(p1, {
    'PROPFIND depth 1 is 207': (r) => r.status === 207,
    'PROPFIND lists the seeded files': (r) => String(r.body).indexOf('<D:displayname>seed-01.bin</D:displayname>') >= 0 &&
      String(r.body).indexOf('<D:displayname>scratch</D:displayname>') >= 0,
  });

  const i = 1 + Math.floor(Math.random() * SEED_FILES);
  const seed = http.get(`${DAV}/seed-${i < 10 ? '0' : ''}${i}.bin`, dav('/dav', { tags: { op: 'get' }, responseType: 'binary' }));
  getTime.add(seed.timings.duration);
  if (seed.body) read.add(seed.body.byteLength);
  check(seed, {
    'dav GET of a seeded file': (r) => {
      if (r.status !== 200 || !r.body || r.body.byteLength !== SEED_SIZE) return false;
      const a = new Uint8Array(r.body);
      return a[0] === 48 + (i % 10) && a[SEED_SIZE - 1] === 48 + (i % 10);
    },
  });

  const del = http.del(url, null, dav('/dav', { tags: { op: 'delete' } }));
  check(del, { 'dav DELETE is 204': (r) => r.status === 204 });
  const gone = http.get(url, dav('/dav', { tags: { op: 'get' }, responseCallback: http.expectedStatuses(404) }));
  check(gone, { 'deleted file is 404': (r) => r.status === 404 });

  if (THINK > 0) sleep(THINK);
}
