// Listing a big folder: pages of one of the seeded folders list-100 / list-1000 / list-10000
// (LIST_SIZE, default 1000), at a random offset, sorted by name, size or creation time, up or
// down. Checks the status, the folder's total, the page length and the order.
//
//   LIST_SIZE=10000 volley run examples/folder-list.js -e BASE_URL=http://127.0.0.1:8090
//   (list-10000 needs the full seed: volley demo seed without --small)
//
// Env: LIST_SIZE (100 | 1000 | 10000), PAGE_SIZE (1..1000, default 100).
// Metrics: list_duration (Trend, tagged sort and order; p95 < P95_MS, default 500),
// list_entries (Counter of entries returned).
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import { BASE_URL, THINK, envNum, suiteOptions, p95 } from './lib/config.js';
import { bearer, json, login, seededFolder, seededFolders, vuSession } from './lib/api.js';

const SIZE = envNum('LIST_SIZE', 1000);
const PAGE = envNum('PAGE_SIZE', 100);
if ([100, 1000, 10000].indexOf(SIZE) < 0) throw new Error(`LIST_SIZE=${SIZE}: expected 100, 1000 or 10000`);

const listTime = new Trend('list_duration', true);
const entries = new Counter('list_entries');

export const options = suiteOptions({
  list_duration: [p95('P95_MS', 500)],
});

export function setup() {
  const folders = seededFolders(login());
  return { folder: seededFolder(folders, `list-${SIZE}`) };
}

const SORTS = [
  ['name', (f) => f.name],
  ['size', (f) => f.size],
  ['created', (f) => f.created_at],
];

function ordered(files, key, desc) {
  for (let i = 1; i < files.length; i++) {
    const a = key(files[i - 1]);
    const b = key(files[i]);
    if (desc ? a < b : a > b) return false;
  }
  return true;
}

export default function (data) {
  const s = vuSession();
  const [sort, key] = SORTS[Math.floor(Math.random() * SORTS.length)];
  const order = Math.random() < 0.5 ? 'asc' : 'desc';
  const pages = Math.ceil(SIZE / PAGE);
  const offset = Math.floor(Math.random() * pages) * PAGE;
  const tags = { sort: sort, order: order, size: String(SIZE) };
  const res = http.get(
    `${BASE_URL}/api/folders/${data.folder}?limit=${PAGE}&offset=${offset}&sort=${sort}&order=${order}`,
    bearer(s, '/api/folders/{id}', { tags: tags }),
  );
  listTime.add(res.timings.duration, tags);
  const body = json(res) || {};
  const files = body.files || [];
  entries.add(files.length);
  check(res, {
    'list status is 200': (r) => r.status === 200,
    'list total is LIST_SIZE': () => body.total_files === SIZE,
    'list page is full': () => files.length === Math.min(PAGE, SIZE - offset),
    // (the service echoes sort=created as "created_at")
    'list is in the order asked': () => String(body.sort).indexOf(sort) === 0 &&
      body.order === order && ordered(files, key, order === 'desc'),
  });
  if (THINK > 0) sleep(THINK);
}
