// Crash harness verifier (#18): run by `volley verify --ledger L -- volley run verify.js`
// once the demo service is back. For every acknowledged upload in the ledger (env
// VOLLEY_LEDGER) it prints `verify: verified NAME` when the file is listed and reads back
// byte-identical, `verify: corrupted NAME` when it differs, `verify: lost NAME` when it is
// gone; and `verify: partial NAME` for any listed file that is not whole (size or content
// not what its name says), acknowledged or not.
//
//   volley verify --ledger L.ndjson -- volley run examples/crash/verify.js -q -e BASE_URL=...
import http from 'k6/http';
import crypto from 'k6/crypto';
import { BASE_URL } from '../lib/config.js';
import { bearer, json, login, payload } from '../lib/api.js';
import { seedOf } from './names.js';

const LEDGER = __ENV.VOLLEY_LEDGER;
if (!LEDGER) throw new Error('VOLLEY_LEDGER is not set: run me under `volley verify --ledger FILE --`');
const entries = open(LEDGER).split('\n').filter((l) => l.trim() !== '').map((l) => {
  try {
    return JSON.parse(l);
  } catch (e) {
    return null; // a line cut short by a crash of Volley: not an acknowledgement
  }
}).filter((e) => e !== null && e.kind !== undefined);

export const options = { vus: 1, iterations: 1 };

function say(status, id) {
  console.log(`verify: ${status} ${id}`);
}

/** Every file of folder `id`, page by page. */
function listFiles(s, id) {
  const out = [];
  for (let offset = 0; ; offset += 1000) {
    const res = http.get(`${BASE_URL}/api/folders/${id}?limit=1000&offset=${offset}`,
      bearer(s, '/api/folders/{id}'));
    const body = json(res);
    if (res.status !== 200 || !body) return null;
    out.push(...body.files);
    if (body.files.length < 1000) return out;
  }
}

export default function () {
  const s = login();
  if (!s.ok) throw new Error(`cannot log in at ${BASE_URL}`);
  const folders = entries.filter((e) => e.kind === 'folder');
  const byName = {};
  for (const f of folders) {
    const files = listFiles(s, f.folder_id);
    if (files === null) {
      say('lost', f.id);
      continue;
    }
    say('verified', f.id);
    for (const file of files) byName[file.name] = file;
  }
  const acked = {};
  for (const e of entries.filter((x) => x.kind !== 'folder')) {
    acked[e.id] = true;
    const file = byName[e.id];
    if (file === undefined) {
      say('lost', e.id);
      continue;
    }
    const res = http.get(`${BASE_URL}/api/files/${file.id}/download`,
      bearer(s, '/api/files/{id}/download', { responseType: 'binary' }));
    const same = res.status === 200 && res.body.byteLength === e.size &&
      crypto.sha256(res.body, 'hex') === e.sha256;
    say(same ? 'verified' : 'corrupted', e.id);
  }
  // Nothing half-written may be listed, acknowledged or not.
  for (const name of Object.keys(byName)) {
    if (acked[name]) continue;
    const file = byName[name];
    const res = http.get(`${BASE_URL}/api/files/${file.id}/download`,
      bearer(s, '/api/files/{id}/download', { responseType: 'binary' }));
    const whole = res.status === 200 && res.body.byteLength === file.size &&
      crypto.sha256(res.body, 'hex') === crypto.sha256(payload(file.size, seedOf(name)), 'hex');
    if (!whole) say('partial', name);
  }
}
