// The mixed workload of mixed-ramp.js and soak-mixed.js: one weighted-random operation per
// iteration, like a population of drive users — list a folder page, search, read part of the
// 5 MiB fixture, upload and delete a small file, read the current user, read a seeded file
// over WebDAV, batch-move seeded files. Every request carries the tag `op`; durations go to
// the Trend mixed_op_duration{op}, body bytes to bytes_downloaded / bytes_uploaded.
import http from 'k6/http';
import { check, fail } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import { BASE_URL, envNum } from './config.js';
import {
  bearer, bearerJson, createFolder, davAuth, deleteFolder, json, login, payload, runId,
  seededFolder, seededFolders, tagged, uniqueName, uploadFile, vuSession,
} from './api.js';

const UPLOAD_SIZE = envNum('MIX_UPLOAD_KB', 16) * 1024;
const RANGE_MAX = envNum('MIX_RANGE_KB', 256) * 1024;
const UPLOAD = payload(UPLOAD_SIZE, 5);

export const opTime = new Trend('mixed_op_duration', true);
export const downloaded = new Counter('bytes_downloaded');
export const uploaded = new Counter('bytes_uploaded');
export const ops = new Counter('mixed_ops');

/** setup(): the seeded ids the mix needs, and a folder of this run for its uploads. */
export function mixSetup() {
  const s = login();
  const folders = seededFolders(s);
  const list = ['list-1000', 'list-100'].filter((n) => folders[n] !== undefined);
  if (list.length === 0) seededFolder(folders, 'list-100'); // fails with the seeding hint
  const downloads = seededFolder(folders, 'downloads');
  const res = http.get(`${BASE_URL}/api/folders/${downloads}?limit=100`, bearer(s, '/api/folders/{id}'));
  const fixture = ((json(res) || {}).files || []).find((f) => f.name === 'fixture-5MiB.bin');
  if (!fixture) fail(`downloads/fixture-5MiB.bin is missing: seed first with  volley demo seed --url ${BASE_URL}`);
  const moveA = seededFolder(folders, 'move-a');
  const moveB = seededFolder(folders, 'move-b');
  const moves = [];
  for (const f of [moveA, moveB]) {
    const r = http.get(`${BASE_URL}/api/folders/${f}?limit=1000`, bearer(s, '/api/folders/{id}'));
    for (const file of (json(r) || {}).files || []) moves.push(file.id);
  }
  const run = runId();
  return {
    run: run,
    lists: list.map((n) => ({ id: folders[n], size: Number(n.slice(5)) })),
    fixture: { id: fixture.id, size: fixture.size },
    moveA: moveA,
    moveB: moveB,
    moves: moves,
    uploads: createFolder(s, `mixed-${run}`, seededFolder(folders, 'uploads')),
  };
}

/** teardown(): removes the run's upload folder. */
export function mixTeardown(data) {
  deleteFolder(login(), data.uploads);
}

function rand(n) {
  return Math.floor(Math.random() * n);
}

function p(s, name, op, extra) {
  const params = bearer(s, name, extra);
  params.tags.op = op;
  return params;
}

const OPS = [
  ['list', 30, (s, d) => {
    const f = d.lists[rand(d.lists.length)];
    const sort = ['name', 'size', 'created'][rand(3)];
    const offset = rand(Math.ceil(f.size / 100)) * 100;
    const r = http.get(`${BASE_URL}/api/folders/${f.id}?limit=100&offset=${offset}&sort=${sort}`,
      p(s, '/api/folders/{id}', 'list'));
    const b = json(r) || {};
    check(r, { 'mixed list is 200 with a page': (x) => x.status === 200 && (b.files || []).length === Math.min(100, f.size - offset) });
    return [r];
  }],
  ['search', 20, (s) => {
    const r = http.get(`${BASE_URL}/api/search?q=report&limit=50`, p(s, '/api/search', 'search'));
    check(r, { 'mixed search is 200 with hits': (x) => x.status === 200 && (json(x) || {}).total > 0 });
    return [r];
  }],
  ['download', 15, (s, d) => {
    const len = 1 + rand(Math.min(RANGE_MAX, d.fixture.size));
    const start = rand(d.fixture.size - len + 1);
    const params = p(s, '/api/files/{id}/download', 'download', { responseType: 'binary' });
    params.headers.Range = `bytes=${start}-${start + len - 1}`;
    const r = http.get(`${BASE_URL}/api/files/${d.fixture.id}/download`, params);
    const n = r.body ? r.body.byteLength : 0;
    downloaded.add(n, { op: 'download' });
    check(r, { 'mixed range download is 206': (x) => x.status === 206 && n === len });
    return [r];
  }],
  ['upload', 10, (s, d) => {
    const r = uploadFile(s, d.uploads, uniqueName(d.run, 'mixed', '.bin'), UPLOAD);
    const f = (json(r) || {}).file;
    if (check(r, { 'mixed upload is 201': (x) => x.status === 201 && !!f && f.size === UPLOAD_SIZE })) {
      uploaded.add(UPLOAD_SIZE, { op: 'upload' });
      const del = http.del(`${BASE_URL}/api/files/${f.id}`, null, p(s, '/api/files/{id}', 'upload'));
      check(del, { 'mixed delete is 204': (x) => x.status === 204 });
      return [r, del];
    }
    return [r];
  }],
  ['me', 10, (s) => {
    const r = http.get(`${BASE_URL}/api/auth/me`, p(s, '/api/auth/me', 'me'));
    check(r, { 'mixed me is 200': (x) => x.status === 200 });
    return [r];
  }],
  ['webdav', 10, () => {
    const i = 1 + rand(10);
    const r = http.get(`${BASE_URL}/dav/webdav/seed-${i < 10 ? '0' : ''}${i}.bin`,
      tagged('/dav', { headers: davAuth(), responseType: 'binary', tags: { op: 'webdav' } }));
    const n = r.body ? r.body.byteLength : 0;
    downloaded.add(n, { op: 'webdav' });
    check(r, { 'mixed webdav GET is 200': (x) => x.status === 200 && n === 64 * 1024 });
    return [r];
  }],
  ['move', 5, (s, d) => {
    const ids = [];
    for (let i = 0; i < 5 && d.moves.length; i++) ids.push(d.moves[rand(d.moves.length)]);
    const uniq = ids.filter((x, i) => ids.indexOf(x) === i);
    const target = rand(2) ? d.moveA : d.moveB;
    const r = http.post(`${BASE_URL}/api/batch/move`,
      JSON.stringify({ file_ids: uniq, folder_ids: [], target_folder_id: target }),
      (function () { const q = bearerJson(s, '/api/batch/move'); q.tags.op = 'move'; return q; })());
    check(r, { 'mixed batch move is 200': (x) => x.status === 200 && (json(x) || {}).moved_files === uniq.length });
    return [r];
  }],
];
const TOTAL = OPS.reduce((a, o) => a + o[1], 0);

/** Runs one weighted-random operation of the mix as this VU's user. */
export function mixedIteration(data) {
  const s = vuSession();
  let x = Math.random() * TOTAL;
  let op = OPS[OPS.length - 1];
  for (const o of OPS) {
    if (x < o[1]) {
      op = o;
      break;
    }
    x -= o[1];
  }
  const responses = op[2](s, data);
  let t = 0;
  for (const r of responses) t += r.timings.duration;
  opTime.add(t, { op: op[0] });
  ops.add(1, { op: op[0] });
}
