// Name search (SQLite FTS5): the seeded search term (every 20th seeded file is
// report-NNNNN.txt), a term plus a number that picks out one seeded name per folder, and a
// word that matches nothing. Checks that every hit matches and that paging adds up.
//
//   volley run examples/search.js -e BASE_URL=http://127.0.0.1:8090 [-e SEARCH_TERM=report]
//
// Env: SEARCH_TERM (default report), SEARCH_LIMIT (page size, default 50).
// Metrics: search_duration (Trend, tagged kind = term | exact | miss; p95 < P95_MS, default
// 500), search_hits (Counter of files returned).
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import { BASE_URL, THINK, env, envNum, suiteOptions, p95 } from './lib/config.js';
import { bearer, json, vuSession } from './lib/api.js';

const TERM = env('SEARCH_TERM', 'report');
const LIMIT = envNum('SEARCH_LIMIT', 50);

const searchTime = new Trend('search_duration', true);
const hits = new Counter('search_hits');

export const options = suiteOptions({
  search_duration: [p95('P95_MS', 500)],
});

function search(s, q, offset, kind) {
  const res = http.get(
    `${BASE_URL}/api/search?q=${encodeURIComponent(q)}&limit=${LIMIT}&offset=${offset}`,
    bearer(s, '/api/search', { tags: { kind: kind } }),
  );
  searchTime.add(res.timings.duration, { kind: kind });
  const body = json(res) || {};
  const files = body.files || [];
  hits.add(files.length);
  return { res: res, body: body, files: files };
}

export default function () {
  const s = vuSession();
  const r = Math.random();
  if (r < 0.6) {
    // The broad term; a later page now and then.
    const first = search(s, TERM, 0, 'term');
    const total = first.body.total || 0;
    const offset = total > LIMIT && Math.random() < 0.3 ? LIMIT : 0;
    const page = offset ? search(s, TERM, offset, 'term') : first;
    check(page.res, {
      'search status is 200': (x) => x.status === 200,
      'search finds the seeded term': () => total > 0,
      'every hit contains the term': () =>
        page.files.every((f) => f.name.toLowerCase().indexOf(TERM.toLowerCase()) >= 0),
      'search page length adds up': () => page.files.length === Math.min(LIMIT, total - offset),
    });
  } else if (r < 0.9) {
    // report-00020 .. report-00100 exist in every seeded list folder.
    const n = `000${20 * (1 + Math.floor(Math.random() * 5))}`.slice(-5);
    const got = search(s, `${TERM} ${n}`, 0, 'exact');
    check(got.res, {
      'search status is 200': (x) => x.status === 200,
      'exact search finds the name': () => got.files.length >= 1 &&
        got.files.every((f) => f.name === `${TERM}-${n}.txt`),
    });
  } else {
    const got = search(s, `nomatch${Math.floor(Math.random() * 1e6)}`, 0, 'miss');
    check(got.res, {
      'search status is 200': (x) => x.status === 200,
      'a miss finds nothing': () => got.body.total === 0 && got.files.length === 0,
    });
  }
  if (THINK > 0) sleep(THINK);
}
