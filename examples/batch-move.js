// Batch move: POST /api/batch/move of BATCH_SIZE (default 10) of the seeded move-NNN.txt files,
// picked at random, into move-a or move-b, now and then with a folder of this run along.
// Moves are all-or-nothing and the seeded names are unique across both folders, so concurrent
// VUs never clash; the check that matters is that no file is lost or duplicated: move-a and
// move-b together always hold the seeded count. Every tenth iteration also tries to move a
// folder into itself (expected 400 invalid_move).
//
//   volley run examples/batch-move.js -e BASE_URL=http://127.0.0.1:8090 [-e BATCH_SIZE=50]
//
// Metrics: batch_move_duration (Trend, p95 < P95_MS, default 500), moved_entries (Counter).
import http from 'k6/http';
import { check, fail, sleep } from 'k6';
import exec from 'k6/execution';
import { Counter, Trend } from 'k6/metrics';
import { BASE_URL, THINK, envNum, suiteOptions, p95 } from './lib/config.js';
import {
  bearer, bearerJson, createFolder, deleteFolder, json, login, runId, seededFolder, seededFolders,
  vuSession,
} from './lib/api.js';

const BATCH = envNum('BATCH_SIZE', 10);

const moveTime = new Trend('batch_move_duration', true);
const moved = new Counter('moved_entries');

export const options = suiteOptions({
  batch_move_duration: [p95('P95_MS', 500)],
});

function filesIn(s, folder) {
  const res = http.get(`${BASE_URL}/api/folders/${folder}?limit=1000`, bearer(s, '/api/folders/{id}'));
  return json(res) || {};
}

export function setup() {
  const s = login();
  const folders = seededFolders(s);
  const a = seededFolder(folders, 'move-a');
  const b = seededFolder(folders, 'move-b');
  const ids = [];
  for (const f of [a, b]) {
    for (const file of filesIn(s, f).files || []) {
      if (/^move-\d+\.txt$/.test(file.name)) ids.push(file.id);
    }
  }
  if (ids.length === 0) fail(`move-a and move-b hold no files: seed first with  volley demo seed --url ${BASE_URL}`);
  // A folder of this run that travels with some batches.
  const sub = createFolder(s, `batch-${runId()}`, a);
  return { a: a, b: b, ids: ids, sub: sub };
}

function pick(ids, n) {
  const out = [];
  const seen = {};
  n = Math.min(n, ids.length);
  while (out.length < n) {
    const id = ids[Math.floor(Math.random() * ids.length)];
    if (!seen[id]) {
      seen[id] = true;
      out.push(id);
    }
  }
  return out;
}

export default function (data) {
  const s = vuSession();
  const target = Math.random() < 0.5 ? data.a : data.b;
  const files = pick(data.ids, BATCH);
  const folders = Math.random() < 0.2 ? [data.sub] : [];
  const res = http.post(`${BASE_URL}/api/batch/move`,
    JSON.stringify({ file_ids: files, folder_ids: folders, target_folder_id: target }),
    bearerJson(s, '/api/batch/move'));
  moveTime.add(res.timings.duration);
  const body = json(res) || {};
  if (check(res, {
    'batch move is 200': (r) => r.status === 200,
    'batch move moved them all': () => body.moved_files === files.length &&
      body.moved_folders === folders.length && body.target_folder_id === target,
  })) moved.add(files.length + folders.length);

  // Nothing lost, nothing doubled: one search (one SQL snapshot) sees every seeded file in
  // move-a or move-b, whatever other VUs are moving at the same moment.
  if (exec.vu.iterationInScenario % 5 === 0) {
    const res = http.get(`${BASE_URL}/api/search?q=move&limit=1000`, bearer(s, '/api/search'));
    const all = ((json(res) || {}).files || []).filter((f) => /^move-\d+\.txt$/.test(f.name));
    check(res, {
      'move-a + move-b keep every seeded file': () => all.length === data.ids.length &&
        all.every((f) => f.folder_id === data.a || f.folder_id === data.b),
    });
  }

  if (exec.vu.iterationInScenario % 10 === 9) {
    const bad = http.post(`${BASE_URL}/api/batch/move`,
      JSON.stringify({ file_ids: [], folder_ids: [data.sub], target_folder_id: data.sub }),
      bearerJson(s, '/api/batch/move', { responseCallback: http.expectedStatuses(400) }));
    check(bad, {
      'folder into itself is 400 invalid_move': (r) => r.status === 400 && (json(r) || {}).code === 'invalid_move',
    });
  }
  if (THINK > 0) sleep(THINK);
}

export function teardown(data) {
  deleteFolder(login(), data.sub);
}
