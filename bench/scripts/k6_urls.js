// Many distinct URLs (issue #4, memory per distinct tag value): every iteration requests a
// URL no other iteration requests, so each makes new series for the http_req_* metrics
// (url and name tags). Peak RSS ÷ iterations is what one distinct URL costs, up to the
// cardinality guard (issue #13: 1,000 tag sets per metric, then one overflow series and a
// warning); k6_urls_named.js is the same load with a `name` tag, which keys one series.
//   volley run -u 10 -i 3000 -e BASE=http://127.0.0.1:18281 k6_urls.js   (volley target)
import http from 'k6/http';

const BASE = __ENV.BASE || 'http://127.0.0.1:18281';

export default function () {
  // Unique across VUs: __ITER counts per VU.
  http.get(`${BASE}/?u=${__VU * 1000000 + __ITER}`);
}
