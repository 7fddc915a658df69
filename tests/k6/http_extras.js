// k6/http extras: cookies (jar, redirects, reset per iteration, CookieJar), multipart with
// http.file, http.url templates, basic auth, expectedStatuses / setResponseCallback,
// json(selector), status_text, responseType binary, batch.
import http from "k6/http";
import { check } from "k6";

export const options = { vus: 1, iterations: 2 };

const B = __ENV.BASE;
const hostPort = B.replace("http://", "");

export default function () {
  // Cookies: set by the server, sent back later, and across a redirect.
  const before = http.get(`${B}/cookies`).json();
  check(before, { "jar is reset every iteration": (b) => Object.keys(b.cookies).length === 0 });
  const set = http.get(`${B}/cookies/set?session=abc&theme=dark`);
  check(set, {
    "res.cookies from Set-Cookie": (r) => r.cookies.session[0].value === "abc" && r.cookies.session[0].path === "/",
  });
  check(http.get(`${B}/cookies`).json(), {
    "cookies sent back": (b) => b.cookies.session === "abc" && b.cookies.theme === "dark",
  });
  const redirected = http.get(`${B}/redirect-to?url=${encodeURIComponent("/cookies")}`);
  check(redirected.json(), { "cookies across a redirect": (b) => b.cookies.session === "abc" });
  const jar = http.cookieJar();
  check(jar.cookiesForURL(`${B}/`), { "jar.cookiesForURL": (c) => c.session[0] === "abc" });
  jar.set(B, "manual", "m1");
  check(http.get(`${B}/cookies`).json(), { "jar.set": (b) => b.cookies.manual === "m1" });
  jar.clear(B);
  check(http.get(`${B}/cookies`, { cookies: { extra: "e1" } }).json(), {
    "jar.clear and params.cookies": (b) => b.cookies.extra === "e1" && b.cookies.session === undefined,
  });
  const own = new http.CookieJar();
  own.set(B, "own", "o1");
  check(http.get(`${B}/cookies`, { jar: own }).json(), {
    "params.jar": (b) => b.cookies.own === "o1" && Object.keys(b.cookies).length === 1,
  });

  // Multipart: a file part and a plain field, as the server received them.
  const bin = new Uint8Array([0, 1, 2, 250, 255]).buffer;
  const mp = http.post(`${B}/echo`, {
    field: "value",
    upload: http.file("file contents", "a.txt", "text/plain"),
    raw: http.file(bin, "b.bin"),
  });
  const echo = mp.json();
  const ct = echo.headers["content-type"];
  const boundary = ct.split("boundary=")[1];
  const body = echo.body_base64 ? null : echo.body;
  check(echo, {
    "multipart content type": () => ct.startsWith("multipart/form-data; boundary="),
    "multipart body is binary (base64 in the echo)": () => echo.body_base64 === true,
  });
  const raw = http.post(`${B}/echo`, {
    field: "value",
    upload: http.file("file contents", "a.txt", "text/plain"),
  }).json();
  const rb = raw.body;
  const b2 = raw.headers["content-type"].split("boundary=")[1];
  check(rb, {
    "multipart field part": (t) => t.includes(`--${b2}\r\nContent-Disposition: form-data; name="field"\r\n\r\nvalue\r\n`),
    "multipart file part": (t) =>
      t.includes(
        `--${b2}\r\nContent-Disposition: form-data; name="upload"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nfile contents\r\n`
      ),
    "multipart closing boundary": (t) => t.endsWith(`--${b2}--\r\n`),
  });
  void body;
  void boundary;

  // ArrayBuffer bodies and binary responses.
  const up = http.post(`${B}/upload`, new Uint8Array(1000).buffer);
  check(up.json(), { "ArrayBuffer body": (j) => j.bytes === 1000 });
  const bytes = http.get(`${B}/bytes/16`, { responseType: "binary" });
  check(bytes, { "responseType binary": (r) => r.body instanceof ArrayBuffer && r.body.byteLength === 16 });

  // params.compression: the server gets a gzip body and says so.
  const gz = http.post(`${B}/echo`, "x".repeat(1000), { compression: "gzip" }).json();
  check(gz, {
    "compression gzip": (e) =>
      e.headers["content-encoding"] === "gzip" && e.body_base64 === true && e.body.startsWith("H4sI"),
  });

  // http.url template: the name tag is the template.
  const id = 7;
  const t = http.get(http.url`${B}/status/${200 + id}`);
  check(t, { "url template": (r) => r.status === 207 });

  // Basic auth from the URL.
  const auth = http.get(`http://user:p%40ss@${hostPort}/basic-auth/user/p@ss`, { auth: "basic" });
  check(auth, { "basic auth": (r) => r.status === 200 && r.json("authenticated") === true });

  // json(selector), status_text.
  const j = http.post(`${B}/echo?x=1`, JSON.stringify({ a: { b: [{ c: 5 }] } }), {
    headers: { "Content-Type": "application/json" },
  });
  check(j, {
    "json(selector)": (r) => r.json("method") === "POST" && r.json("args.x") === "1" && JSON.parse(r.json("body")).a.b[0].c === 5,
    "status_text": (r) => r.status_text === "200 OK",
  });

  // Expected statuses: 404 is fine for this request; then for the whole VU.
  http.get(`${B}/status/404`, { responseCallback: http.expectedStatuses(404), tags: { name: "exp404" } });
  http.setResponseCallback(http.expectedStatuses({ min: 200, max: 299 }, 418));
  http.get(`${B}/status/418`, { tags: { name: "teapot" } });
  http.get(`${B}/status/302`, { redirects: 0, tags: { name: "no302" } });
  http.setResponseCallback(http.expectedStatuses({ min: 200, max: 399 }));

  // Batch: 5 × 100 ms delays sent at once, array and object forms.
  const t0 = Date.now();
  const rs = http.batch([
    `${B}/delay/100`,
    ["GET", `${B}/delay/100`],
    { method: "GET", url: `${B}/delay/100` },
    ["POST", `${B}/echo`, "batched", { tags: { name: "batchpost" } }],
    `${B}/delay/100`,
  ]);
  const took = Date.now() - t0;
  check(rs, {
    "batch answers in order": (r) => r.length === 5 && r[3].json("body") === "batched" && r[0].status === 200,
    "batch runs concurrently": () => took < 300,
  });
  const named = http.batch({ a: `${B}/status/201`, b: ["GET", `${B}/redirect/1`] });
  check(named, { "batch object form, redirects": (r) => r.a.status === 201 && r.b.status === 200 && r.b.url.endsWith("/get") });
}
