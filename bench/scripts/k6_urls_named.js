// Distinct URLs with a name (issue #13, bounded series): every iteration requests a URL no
// other iteration requests, tagged with one `name`. Series are keyed by `name`, so memory,
// the result file and `volley summary` must not grow with the number of URLs.
//   volley run -u 200 -d 5m -e BASE=http://127.0.0.1:18281 k6_urls_named.js   (volley target)
import http from 'k6/http';

// BASE, or bench/k6.sh's URL (which ends with a slash).
const BASE = (__ENV.BASE || __ENV.URL || 'http://127.0.0.1:18281').replace(/\/$/, '');

export default function () {
  http.get(`${BASE}/get?id=${__VU}-${__ITER}`, { tags: { name: 'get' } });
}
