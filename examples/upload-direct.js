// Direct uploads: multipart/form-data POST /api/files/upload of a binary file (FILE_KB,
// default 1024) into a folder made for this run below the seeded `uploads` folder. Checks the
// returned file, verifies the content by SHA-256 every VERIFY_EVERY uploads, deletes the file
// again by session cookie + CSRF header (unless KEEP_FILES=1), and teardown removes the run's
// folder.
//
//   volley run examples/upload-direct.js -e BASE_URL=http://127.0.0.1:8090 [-e FILE_KB=64]
//
// Metrics: upload_duration (Trend, p95 < P95_MS, default 1000), bytes_uploaded (Counter of
// file bytes sent and accepted), uploads (Counter).
import http from 'k6/http';
import { check, sleep } from 'k6';
import crypto from 'k6/crypto';
import { Counter, Trend } from 'k6/metrics';
import { BASE_URL, THINK, envNum, suiteOptions, p95 } from './lib/config.js';
import {
  bearer, cookieAuth, createFolder, deleteFolder, json, login, payload, runId, seededFolder, seededFolders,
  uniqueName, uploadFile, vuSession,
} from './lib/api.js';

const SIZE = envNum('FILE_KB', 1024) * 1024;
const VERIFY_EVERY = envNum('VERIFY_EVERY', 10);
const KEEP = envNum('KEEP_FILES', 0) === 1;
const DATA = payload(SIZE, 7);
const DIGEST = crypto.sha256(DATA, 'hex');

const uploadTime = new Trend('upload_duration', true);
const uploaded = new Counter('bytes_uploaded');
const uploads = new Counter('uploads');

export const options = suiteOptions({
  upload_duration: [p95('P95_MS', 1000)],
});

export function setup() {
  const s = login();
  const run = runId();
  const parent = seededFolder(seededFolders(s), 'uploads');
  return { run: run, folder: createFolder(s, `direct-${run}`, parent) };
}

let n = 0;

export default function (data) {
  const s = vuSession();
  const name = uniqueName(data.run, 'direct', '.bin');
  const res = uploadFile(s, data.folder, name, DATA);
  uploadTime.add(res.timings.duration);
  const file = (json(res) || {}).file || {};
  const ok = check(res, {
    'upload status is 201': (r) => r.status === 201,
    'uploaded file has the name and size': () => file.name === name && file.size === SIZE &&
      file.folder_id === data.folder,
  });
  if (!ok) return;
  uploaded.add(SIZE);
  uploads.add(1);

  n++;
  if (VERIFY_EVERY > 0 && n % VERIFY_EVERY === 1) {
    const back = http.get(`${BASE_URL}/api/files/${file.id}/download`,
      bearer(s, '/api/files/{id}/download', { responseType: 'binary' }));
    check(back, {
      'uploaded content reads back the same': (r) => r.status === 200 && crypto.sha256(r.body, 'hex') === DIGEST,
    });
  }
  if (!KEEP) {
    // Deleted as a browser would: session cookie + X-CSRF-Token.
    const del = http.del(`${BASE_URL}/api/files/${file.id}`, null, cookieAuth(s, '/api/files/{id}'));
    check(del, { 'uploaded file deleted (cookie + CSRF)': (r) => r.status === 204 });
  }
  if (THINK > 0) sleep(THINK);
}

export function teardown(data) {
  if (!KEEP) deleteFolder(login(), data.folder);
}
