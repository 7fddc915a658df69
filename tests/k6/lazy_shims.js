// VUs sharing a runtime (VOLLEY_VU_RUNTIME=shared) each make their own natives and k6/http
// parts on first use (crates/js/src/rt/lazy.rs, shims/k6_http_more.js, console_format.js):
// odd VUs replace a native before it was made and one after, and change k6/http's default
// object, Response.prototype and a lazily made class; even VUs, which share runtimes with
// them, see none of it and get objects of their own realm.
import http from "k6/http";
import encoding from "k6/encoding";
import { check, sleep } from "k6";

const V = globalThis.__volley;
const odd = __VU % 2 === 1;
if (__VU > 0 && odd) {
  V.b64enc = () => "mine"; // a lazy native, replaced before it was made
  void V.randomBytes; // made here...
  V.randomBytes = () => "my bytes"; // ...then replaced
  http.file = () => "my file";
  http.Response.prototype.json = () => "my json";
  Object.defineProperty(http.Response.prototype, "status_text", { get: () => "my status" });
  // a class made on first use (URLTemplate), changed in this VU only
  Object.getPrototypeOf(http.url`x`).toString = () => "my url";
}

export const options = { vus: 6, iterations: 24 };

export default function () {
  const base = __ENV.BASE;
  const res = http.get(`${base}/get?vu=${__VU}`);
  sleep(0.01); // let the other VUs of the runtime run in between
  const f = http.file("d");
  const u = http.url`${base}/get?vu=${__VU}`;
  const bytes = V.randomBytes(4);
  if (__ITER === 0) console.log(`vu ${__VU}`, { f: odd ? f : f.content_type }); // console_format.js, per VU
  check(null, {
    "natives are the VU's own": () =>
      encoding.b64encode("a") === (odd ? "mine" : "YQ==") &&
      (odd ? bytes === "my bytes" : bytes instanceof ArrayBuffer && bytes.byteLength === 4),
    "k6/http's default object is the VU's own": () =>
      odd ? f === "my file" : f.content_type === "application/octet-stream" && f instanceof Object,
    "Response.prototype is the VU's own": () =>
      odd
        ? res.json() === "my json" && res.status_text === "my status"
        : res.json("args.vu") === String(__VU) && res.status_text === "200 OK",
    "lazily made classes are the VU's own": () =>
      String(u) === (odd ? "my url" : `${base}/get?vu=${__VU}`) &&
      Object.getPrototypeOf(Object.getPrototypeOf(u)) === Object.prototype,
  });
}
