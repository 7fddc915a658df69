// The native check() and http.get() paths (crates/js/src/check.rs, http.rs): what k6 does in
// every corner the fast paths take a shortcut in.
import http from "k6/http";
import { check, group } from "k6";
import { Counter } from "k6/metrics";

export const options = { vus: 1, iterations: 6 };

const notAll = new Counter("not_all");
const bad = new Counter("bad");

export default function () {
  const i = __ITER;
  // No conditions: true, nothing recorded.
  if (check(1, {}) !== true) bad.add(1, { at: "1" });
  if (check(1) !== true) bad.add(1, { at: "2" });
  // Plain values as conditions, a numeric key, and the return value.
  const all = check(null, { "truthy value": 1, "falsy value": 0, 200: "x" });
  if (all) bad.add(1, { at: "3" });
  if (!all) notAll.add(1);
  // Names made at run time: two names, alternating (a name's atom may be freed between
  // iterations and its number reused for the other).
  check(i, { [`parity ${i % 2}`]: (n) => n % 2 === 0 });
  // The same name inside and outside a group: one series each.
  check(1, { same: true });
  group("g", () => {
    check(1, { same: false });
  });
  // Extra tags make their own series.
  check(1, { tagged: true }, { t: String(i % 3) });

  // get without params, with {}, with a template URL, and without a URL at all.
  const a = http.get(`${__ENV.BASE}/`);
  const b = http.get(`${__ENV.BASE}/`, {});
  const c = http.get(http.url`${__ENV.BASE}/status/${201}`);
  const d = http.get();
  if (a.status !== 200 || b.status !== 200 || c.status !== 201) bad.add(1, { at: "4" });
  if (d.status !== 0 || d.error_code !== 1020) bad.add(1, { at: "5" });
  // A Response's own properties: k6's, in k6's order, plain and writable.
  const keys = Object.keys(a).join(",");
  if (keys !== "url,proto,status,body,error,error_code") bad.add(1, { at: "6" });
  const j = JSON.parse(JSON.stringify(a));
  if (j.status !== 200 || j.body !== a.body || j.body.length !== 13 || j.proto !== "HTTP/1.1") bad.add(1, { at: "7" });
  if (typeof a.headers !== "object" || !(a.timings.duration >= 0)) bad.add(1, { at: "8" });
  a.status = 5;
  a.extra = 1;
  if (a.status !== 5 || Object.keys(a).indexOf("extra") < 0) bad.add(1, { at: "9" });
  if (a.url !== `${__ENV.BASE}/` || a.error !== "" || a.error_code !== 0) bad.add(1, { at: "10" });

  // A throwing condition ends the iteration after what was recorded before it.
  if (i === 5) {
    check(1, { "before throw": true, boom: () => { throw new Error("condition threw"); }, after: true });
  }
}
