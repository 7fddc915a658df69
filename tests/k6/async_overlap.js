// Several http.asyncRequest calls of one VU are in flight at once: three 300 ms requests take
// about 300 ms together, each on its own connection.
import http from "k6/http";
import { check } from "k6";
import { Trend } from "k6/metrics";

const together = new Trend("three_requests_ms", true);

export const options = { vus: 1, iterations: 1 };

export default async function () {
  const t0 = Date.now();
  const all = await Promise.all(
    [1, 2, 3].map((i) => http.asyncRequest("GET", `${__ENV.BASE}/delay/300`, null, { tags: { name: `delay${i}` } }))
  );
  together.add(Date.now() - t0);
  check(all, { "all three 200": (rs) => rs.length === 3 && rs.every((r) => r.status === 200) });
}
