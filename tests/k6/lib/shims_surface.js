// What a script sees of the k6 shims (k6/http, k6, console): every export, own property,
// descriptor, function name and length, prototype, and what the rarely used helpers return.
// tests/k6/shims_surface.js compares it with the shims before parts of them were made on
// first use (tests/k6/lib/shims_surface.json; docs/vus.md).
import http, * as ns from "k6/http";
import * as k6 from "k6";

function fn(f) {
  if (typeof f !== "function") return typeof f;
  const own = Reflect.ownKeys(f).map(String).join(",");
  return `fn ${f.name}/${f.length} [${own}]`;
}

function desc(o, k) {
  const d = Object.getOwnPropertyDescriptor(o, k);
  const flags = (d.writable ? "w" : "") + (d.enumerable ? "e" : "") + (d.configurable ? "c" : "");
  if ("value" in d) {
    const v = d.value;
    const shown = typeof v === "function" ? fn(v) : v === null || typeof v !== "object" ? JSON.stringify(v) : "object";
    return `${flags} ${shown}`;
  }
  return `${flags} get=${fn(d.get)} set=${fn(d.set)}`;
}

function props(o) {
  return Reflect.ownKeys(o).map((k) => `${String(k)}: ${desc(o, k)}`);
}

function protoNames(o) {
  const out = [];
  for (let p = Object.getPrototypeOf(o); p !== null; p = Object.getPrototypeOf(p)) {
    out.push(p.constructor === undefined ? "?" : p.constructor.name);
  }
  return out.join(" < ");
}

function thrown(f) {
  try {
    f();
    return "no error";
  } catch (e) {
    return `${e.name}: ${e.message}`;
  }
}

export function surface(base) {
  const s = {};
  s.namespace = Object.keys(ns).map((k) => `${k}: ${fn(ns[k])}`);
  s.sameAsDefault = Object.keys(http).filter((k) => http[k] !== ns[k]);
  s.default = props(http);
  s.Response = props(http.Response);
  s.ResponseProto = props(http.Response.prototype);
  s.CookieJar = props(http.CookieJar);
  s.CookieJarProto = props(http.CookieJar.prototype);
  const f = http.file("data", "a.txt");
  s.file = [props(f), protoNames(f), props(Object.getPrototypeOf(f)), f instanceof Object];
  const u = http.url`${base}/get?a=${1}&b=${"x"}`;
  s.url = [props(u).map((p) => p.replace(base, "BASE")), protoNames(u), props(Object.getPrototypeOf(u)), String(u).replace(base, "BASE")];
  const e = http.expectedStatuses(200, { min: 300, max: 399 });
  s.expected = [props(e), protoNames(e), props(Object.getPrototypeOf(e))];
  s.expectedBad = thrown(() => http.expectedStatuses("x"));
  s.callbackBad = thrown(() => http.setResponseCallback(5));
  s.callbackOk = [http.setResponseCallback(e), http.setResponseCallback(null), thrown(() => http.setResponseCallback(e))];
  const jar = http.cookieJar();
  s.jar = [props(jar), protoNames(jar), jar === http.cookieJar(), jar instanceof http.CookieJar];
  const res = http.get(`${base}/get?a=1&b.c=2`);
  s.res = [Object.keys(res), protoNames(res), res.status_text, typeof res.json(), res.json("args.a"), res.json("args.b\\.c"), res.json("nothing.here")];
  s.resFields = [typeof res.headers, typeof res.timings, typeof res.request, typeof res.cookies, typeof res.remote_ip, typeof res.remote_port];
  s.resAfter = Object.keys(res);
  s.resJSON = Object.keys(JSON.parse(JSON.stringify(res)));
  const templated = http.get(u);
  s.templated = [templated.status, templated.request.url.replace(base, "BASE")];
  const form = http.post(`${base}/echo`, { a: "1", b: "two words" });
  s.form = [form.status, form.json("body"), form.json("headers.content-type")];
  const multi = http.post(`${base}/echo`, { f: http.file("xyz", "f.txt", "text/plain"), g: "h" });
  s.multi = [multi.status, multi.json("headers.content-type").split(";")[0], multi.json("body").replace(/volleyformboundary[A-Za-z0-9]+/g, "B")];
  const auth = http.get(`${base.replace("://", "://user:pass@")}/basic-auth/user/pass`);
  s.auth = auth.status;
  const batch = http.batch([`${base}/get`, ["GET", u], { method: "POST", url: `${base}/echo`, body: { q: "1" } }]);
  s.batch = batch.map((r) => [r.status, r.json("path"), r.json("body")]);
  s.statusTexts = [new http.Response().status_text, Object.getOwnPropertyNames(new http.Response())];
  s.k6 = Object.keys(k6).map((k) => `${k}: ${fn(k6[k])}`);
  s.k6default = props(k6.default);
  s.console = props(console);
  return JSON.stringify(s, null, 1);
}
