// Crash harness load (#18): direct and chunked uploads to the demo service, each upload the
// service acknowledged (201) recorded in the ledger with its SHA-256 and size, so `verify.js`
// can check after a SIGKILL and restart that every acknowledged upload survived whole.
//
//   volley run examples/crash/upload.js --ledger L.ndjson -e BASE_URL=http://127.0.0.1:8097
//     [--fault-target demo='volley demo serve ...' --fault 'at=3s,for=1s,kill=demo']
//
// ACK_EARLY=1 makes this a deliberately broken client: it acknowledges *before* the upload
// is written (the bug a crash harness exists to catch), so `verify.js` must report losses.
import http from 'k6/http';
import { sleep } from 'k6';
import crypto from 'k6/crypto';
import { ledger } from 'volley/ledger';
import { BASE_URL, envNum } from '../lib/config.js';
import { bearer, bearerJson, json, login, payload, runId, uploadFile } from '../lib/api.js';
import { seedOf } from './names.js';

const DIRECT = envNum('DIRECT_KB', 64) * 1024;
const CHUNK = envNum('CHUNK_KB', 64) * 1024;
const CHUNKED = 3 * CHUNK;
const ACK_EARLY = envNum('ACK_EARLY', 0) === 1;

export const options = {
  vus: envNum('VUS', 2),
  duration: __ENV.DURATION || '6s',
  // A request to a killed service fails fast (refused); the verdict is verify's, not ours.
  thresholds: {},
};

/** Log in, retrying while the service (just started by --fault-target) comes up. */
function loginWait() {
  for (let i = 0; i < 100; i++) {
    const s = login();
    if (s.ok) return s;
    sleep(0.1);
  }
  throw new Error(`cannot log in at ${BASE_URL}: is the demo service seeded?`);
}

export function setup() {
  const s = loginWait();
  const name = `crash-${runId()}`;
  const res = http.post(`${BASE_URL}/api/folders`, JSON.stringify({ name: name }),
    bearerJson(s, '/api/folders'));
  const body = json(res);
  if (res.status !== 201 || !body) throw new Error(`creating ${name}: HTTP ${res.status}`);
  // The folder is an acknowledged write too: verify looks for it (and lists it).
  ledger.ack('folder', name, { folder_id: body.folder.id });
  return { run: name, folder: body.folder.id };
}

let session = null;

function ack(kind, name, data, size) {
  ledger.ack(kind, name, { sha256: crypto.sha256(data, 'hex'), size: size });
}

function direct(s, folder, name, data) {
  return uploadFile(s, folder, name, data).status === 201;
}

function chunked(s, folder, name, data) {
  const init = http.post(`${BASE_URL}/api/uploads`,
    JSON.stringify({ name: name, size: CHUNKED, chunk_size: CHUNK, folder_id: folder }),
    bearerJson(s, '/api/uploads'));
  if (init.status !== 201) return false;
  const id = json(init).upload_id;
  for (let c = 0; c < 3; c++) {
    const put = http.put(`${BASE_URL}/api/uploads/${id}/chunks/${c}`,
      data.slice(c * CHUNK, (c + 1) * CHUNK),
      bearer(s, '/api/uploads/{id}/chunks/{n}', { headers: { 'Content-Type': 'application/octet-stream' } }));
    if (put.status !== 200) return false;
  }
  const done = http.post(`${BASE_URL}/api/uploads/${id}/complete`, null,
    bearer(s, '/api/uploads/{id}/complete'));
  return done.status === 201;
}

export default function (data) {
  const isChunked = __ITER % 2 === 1;
  const kind = isChunked ? 'chunked' : 'direct';
  // vu-iter in the name: the content is derived from it, so verify can spot a damaged file
  // that nobody acknowledged.
  const name = `${kind}-${__VU}-${__ITER}.bin`;
  const size = isChunked ? CHUNKED : DIRECT;
  const body = payload(size, seedOf(name));
  // The broken client acknowledges first, whatever happens next.
  if (ACK_EARLY) ack(kind, name, body, size);
  if (session === null) {
    const s = login();
    if (!s.ok) {
      sleep(0.1);
      return;
    }
    session = s;
  }
  const ok = isChunked ? chunked(session, data.folder, name, body) : direct(session, data.folder, name, body);
  if (ok) {
    if (!ACK_EARLY) ack(kind, name, body, size);
  } else {
    // Refused while the service was down, or 401 after its restart (sessions are in
    // memory): log in again next time.
    session = null;
    sleep(0.1);
  }
}
