// http.asyncRequest: the same Response, metrics, redirects and cookies as http.request, as a
// promise; sync requests and sleep() still work inside an async function.
import http from "k6/http";
import { check, sleep } from "k6";

const BASE = __ENV.BASE;

export const options = { vus: 1, iterations: 2 };

export default async function () {
  const r = await http.asyncRequest("GET", `${BASE}/get`, null, { tags: { name: "async_get" } });
  check(r, {
    "async get 200": (r) => r.status === 200,
    "async get json": (r) => r.json().method === "GET",
    "a k6 Response": (r) => r instanceof http.Response && r.timings.duration > 0 && r.proto === "HTTP/1.1",
  });

  const red = await http.asyncRequest("GET", `${BASE}/redirect/2`);
  check(red, { "redirects followed": (r) => r.status === 200 && r.url === `${BASE}/get` });

  const post = await http.asyncRequest("POST", `${BASE}/echo`, { a: "1", b: "x y" });
  check(post, { "object body is a form": (r) => r.json().body === "a=1&b=x%20y" });

  await http.asyncRequest("GET", `${BASE}/cookies/set?k6=async`);
  const c = await http.asyncRequest("GET", `${BASE}/cookies`);
  check(c, { "the VU's cookie jar": (r) => r.json().cookies.k6 === "async" });

  const s = http.get(`${BASE}/get`, { tags: { name: "sync_get" } });
  sleep(0.01);
  check(s, { "sync request in an async function": (r) => r.status === 200 });

  const status = await http.asyncRequest("GET", `${BASE}/status/404`).then((r) => r.status);
  check(status, { "then() gets the Response": (s) => s === 404 });

  const bad = await http.asyncRequest("GET", "not a url");
  check(bad, { "a bad URL resolves with error 1020": (r) => r.error_code === 1020 });
}
