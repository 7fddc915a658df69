// Chunked uploads: POST /api/uploads (init) → PUT /api/uploads/{id}/chunks/{n} for every chunk
// → POST /api/uploads/{id}/complete, of a FILE_KB file (default 10240) in CHUNK_KB chunks
// (default 2048), into a folder made for this run below the seeded `uploads` folder. The
// whole flow is timed. Every tenth flow also asks to complete early (expected 409
// incomplete_upload); every VERIFY_EVERY-th reads the file back and compares SHA-256. Files are
// deleted again (unless KEEP_FILES=1); a failed flow is aborted (DELETE /api/uploads/{id}).
//
//   volley run examples/upload-chunked.js -e BASE_URL=http://127.0.0.1:8090 [-e FILE_KB=4096]
//
// Metrics: chunked_flow_duration (Trend of init → complete, p95 < P95_MS, default 3000),
// chunk_duration (Trend of one chunk PUT, p95 < CHUNK_P95_MS, default 1000), bytes_uploaded
// (Counter of chunk bytes accepted), chunked_uploads (Counter of completed flows).
import http from 'k6/http';
import { check, sleep } from 'k6';
import crypto from 'k6/crypto';
import { Counter, Trend } from 'k6/metrics';
import { BASE_URL, THINK, envNum, suiteOptions, p95 } from './lib/config.js';
import {
  bearer, bearerJson, createFolder, deleteFolder, json, login, payload, runId, seededFolder,
  seededFolders, uniqueName, vuSession,
} from './lib/api.js';

const SIZE = envNum('FILE_KB', 10240) * 1024;
const CHUNK = envNum('CHUNK_KB', 2048) * 1024;
const CHUNKS = Math.ceil(SIZE / CHUNK);
const VERIFY_EVERY = envNum('VERIFY_EVERY', 10);
const KEEP = envNum('KEEP_FILES', 0) === 1;
const DATA = payload(SIZE, 11);
const DIGEST = crypto.sha256(DATA, 'hex');

const flowTime = new Trend('chunked_flow_duration', true);
const chunkTime = new Trend('chunk_duration', true);
const uploaded = new Counter('bytes_uploaded');
const flows = new Counter('chunked_uploads');

export const options = suiteOptions({
  chunked_flow_duration: [p95('P95_MS', 3000)],
  chunk_duration: [p95('CHUNK_P95_MS', 1000)],
});

export function setup() {
  const s = login();
  const run = runId();
  const parent = seededFolder(seededFolders(s), 'uploads');
  return { run: run, folder: createFolder(s, `chunked-${run}`, parent) };
}

let n = 0;

export default function (data) {
  const s = vuSession();
  n++;
  const name = uniqueName(data.run, 'chunked', '.bin');
  const t0 = Date.now();

  const init = http.post(`${BASE_URL}/api/uploads`,
    JSON.stringify({ name: name, size: SIZE, chunk_size: CHUNK, folder_id: data.folder }),
    bearerJson(s, '/api/uploads'));
  const up = json(init) || {};
  if (!check(init, {
    'upload init is 201': (r) => r.status === 201,
    'upload init plans the chunks': () => up.chunks === CHUNKS && up.chunk_size === CHUNK,
  })) return;
  const id = up.upload_id;

  let sent = 0;
  for (let c = 0; c < CHUNKS; c++) {
    const body = DATA.slice(c * CHUNK, Math.min(SIZE, (c + 1) * CHUNK));
    const res = http.put(`${BASE_URL}/api/uploads/${id}/chunks/${c}`, body,
      bearer(s, '/api/uploads/{id}/chunks/{n}', { headers: { 'Content-Type': 'application/octet-stream' } }));
    chunkTime.add(res.timings.duration);
    if (!check(res, {
      'chunk status is 200': (r) => r.status === 200 && (json(r) || {}).size === body.byteLength,
    })) break;
    sent += body.byteLength;
    uploaded.add(body.byteLength);

    if (c === 0 && CHUNKS > 1 && n % 10 === 1) {
      const early = http.post(`${BASE_URL}/api/uploads/${id}/complete`, null,
        bearer(s, '/api/uploads/{id}/complete', { responseCallback: http.expectedStatuses(409) }));
      check(early, {
        'early complete is 409 incomplete_upload': (r) => r.status === 409 &&
          (json(r) || {}).code === 'incomplete_upload',
      });
    }
  }

  if (sent !== SIZE) {
    http.del(`${BASE_URL}/api/uploads/${id}`, null, bearer(s, '/api/uploads/{id}'));
    return;
  }
  const done = http.post(`${BASE_URL}/api/uploads/${id}/complete`, null,
    bearer(s, '/api/uploads/{id}/complete'));
  flowTime.add(Date.now() - t0);
  const file = (json(done) || {}).file || {};
  if (!check(done, {
    'complete is 201': (r) => r.status === 201,
    'completed file has the name and size': () => file.name === name && file.size === SIZE,
  })) return;
  flows.add(1);

  if (VERIFY_EVERY > 0 && n % VERIFY_EVERY === 1) {
    const back = http.get(`${BASE_URL}/api/files/${file.id}/download`,
      bearer(s, '/api/files/{id}/download', { responseType: 'binary' }));
    check(back, {
      'assembled content reads back the same': (r) => r.status === 200 && crypto.sha256(r.body, 'hex') === DIGEST,
    });
  }
  if (!KEEP) {
    const del = http.del(`${BASE_URL}/api/files/${file.id}`, null, bearer(s, '/api/files/{id}'));
    check(del, { 'uploaded file deleted': (r) => r.status === 204 });
  }
  if (THINK > 0) sleep(THINK);
}

export function teardown(data) {
  if (!KEEP) deleteFolder(login(), data.folder);
}
