// Downloads of the seeded 5 MiB fixture (downloads/fixture-5MiB.bin, byte i = 'a' + i % 26):
// the whole file, then a random byte range (206 + Content-Range), and now and then the last
// N bytes (`bytes=-N`). Every body is checked (length and sample bytes) and counted, so
// bytes_downloaded can be compared with the service's volley_demo_download_bytes_total.
//
//   volley run examples/download.js -e BASE_URL=http://127.0.0.1:8090
//
// Env: RANGE_MAX_KB (largest random range, default 1024), FULL_DOWNLOADS (0 = ranges only;
// default 1).
// Metrics: download_duration (Trend of whole-file GETs, p95 < P95_MS, default 2000),
// range_duration (Trend of Range GETs, p95 < RANGE_P95_MS, default 500), bytes_downloaded
// (Counter of body bytes received, tagged kind = full | range | suffix).
import http from 'k6/http';
import { check, fail, sleep } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import { BASE_URL, THINK, envNum, suiteOptions, p95 } from './lib/config.js';
import { bearer, json, login, seededFolder, seededFolders, vuSession } from './lib/api.js';

const FIXTURE = 'fixture-5MiB.bin';
const RANGE_MAX = envNum('RANGE_MAX_KB', 1024) * 1024;
const FULL = envNum('FULL_DOWNLOADS', 1) !== 0;

const downloadTime = new Trend('download_duration', true);
const rangeTime = new Trend('range_duration', true);
const downloaded = new Counter('bytes_downloaded');

const thresholds = { range_duration: [p95('RANGE_P95_MS', 500)] };
if (FULL) thresholds.download_duration = [p95('P95_MS', 2000)];
export const options = suiteOptions(thresholds);

export function setup() {
  const s = login();
  const folder = seededFolder(seededFolders(s), 'downloads');
  const res = http.get(`${BASE_URL}/api/folders/${folder}?limit=100`, bearer(s, '/api/folders/{id}'));
  const f = ((json(res) || {}).files || []).find((x) => x.name === FIXTURE);
  if (!f) fail(`downloads/${FIXTURE} is missing: seed first with  volley demo seed --url ${BASE_URL}`);
  return { id: f.id, size: f.size };
}

/** Byte i of the fixture. */
function fixtureByte(i) {
  return 97 + (i % 26);
}

/** Whether `body` (ArrayBuffer) holds fixture bytes from `start` on (checked at a few places). */
function matches(body, start) {
  if (!body) return false;
  const a = new Uint8Array(body);
  const at = [0, 1, a.length >> 1, a.length - 1];
  return at.every((i) => i < 0 || i >= a.length || a[i] === fixtureByte(start + i));
}

function get(s, data, range, kind) {
  const params = bearer(s, '/api/files/{id}/download', { responseType: 'binary', tags: { kind: kind } });
  if (range) params.headers.Range = range;
  const res = http.get(`${BASE_URL}/api/files/${data.id}/download`, params);
  const n = res.body ? res.body.byteLength : 0;
  downloaded.add(n, { kind: kind });
  return { res: res, n: n };
}

export default function (data) {
  const s = vuSession();
  const size = data.size;

  if (FULL) {
    const full = get(s, data, null, 'full');
    downloadTime.add(full.res.timings.duration);
    check(full.res, {
      'download status is 200': (r) => r.status === 200,
      'download is the whole file': (r) => full.n === size && Number(r.headers['Content-Length']) === size,
      'download content is the fixture': (r) => matches(r.body, 0),
      'download accepts ranges': (r) => r.headers['Accept-Ranges'] === 'bytes',
    });
  }

  const len = 1 + Math.floor(Math.random() * Math.min(RANGE_MAX, size));
  const start = Math.floor(Math.random() * (size - len + 1));
  const end = start + len - 1;
  const part = get(s, data, `bytes=${start}-${end}`, 'range');
  rangeTime.add(part.res.timings.duration, { kind: 'range' });
  check(part.res, {
    'range status is 206': (r) => r.status === 206,
    'range Content-Range is right': (r) => r.headers['Content-Range'] === `bytes ${start}-${end}/${size}`,
    'range length is right': () => part.n === len,
    'range content is the fixture': (r) => matches(r.body, start),
  });

  if (Math.random() < 0.25) {
    const n = 1 + Math.floor(Math.random() * 4096);
    const tail = get(s, data, `bytes=-${n}`, 'suffix');
    rangeTime.add(tail.res.timings.duration, { kind: 'suffix' });
    check(tail.res, {
      'suffix range is the last bytes': (r) => r.status === 206 && tail.n === n &&
        r.headers['Content-Range'] === `bytes ${size - n}-${size - 1}/${size}` && matches(r.body, size - n),
    });
  }

  if (THINK > 0) sleep(THINK);
}
