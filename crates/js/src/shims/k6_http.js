// The `k6/http` module. Requests are made natively; this file shapes arguments and results.
// What few scripts use is made per VU on first use (`more()`, k6_http_more.js).
const V = globalThis.__volley;
import { flat, more, file, url, cookieJar, CookieJar, expectedStatuses, setResponseCallback } from "volley/http-ext";
export { file, url, cookieJar, CookieJar, expectedStatuses, setResponseCallback };

export class Response {
  json(selector) {
    return more().json(this, selector);
  }
  get status_text() {
    return more().statusText(this.status);
  }
  // k6/html over the response body (src/shims/html_api.js, made on first use).
  html(selector) {
    return (V.htmlCache || (V.htmlCache = V.htmlApi(V))).response(this, selector);
  }
  submitForm(args) {
    return (V.htmlCache || (V.htmlCache = V.htmlApi(V))).submitForm(this, args, request);
  }
  clickLink(args) {
    return (V.htmlCache || (V.htmlCache = V.htmlApi(V))).clickLink(this, args, request);
  }
  // JSON.stringify(res) shows the lazily built fields too.
  toJSON() {
    for (const n of ["headers", "timings", "request", "cookies", "remote_ip", "remote_port"]) void this[n];
    return Object.assign({}, this);
  }
}

// headers, timings, request, cookies, remote_ip, remote_port: built natively on first read
// (field i), then kept on the response as plain properties (most scripts never read them,
// and building them for every response cost more than the request).
const P = Response.prototype;
function own(o, name, v) {
  Object.defineProperty(o, name, { value: v, writable: true, enumerable: true, configurable: true });
}
function field(o, name, i) {
  const v = V.responseField(o, i);
  if (v !== undefined && o !== P) own(o, name, v);
  return v;
}
// A getter and a setter per name over `field` and `own` (two closures per name, where a
// loop with a helper per name made three and more objects per VU).
function lazyField(name, i) {
  Object.defineProperty(P, name, {
    configurable: true,
    get() {
      return field(this, name, i);
    },
    set(v) {
      own(this, name, v);
    },
  });
}
lazyField("headers", 0);
lazyField("timings", 1);
lazyField("request", 2);
lazyField("cookies", 3);
lazyField("remote_ip", 4);
lazyField("remote_port", 5);

const EMPTY = [];

export function request(method, url, body, params) {
  if (typeof url === "string" && (body === null || body === undefined || typeof body === "string")) {
    // The common case, kept cheap.
    const p = params === null || params === undefined ? null : params;
    if (url.indexOf("@") < 0) {
      return V.request(
        String(method).toUpperCase(),
        url,
        body === undefined ? null : body,
        p === null ? EMPTY : flat(p.headers),
        p,
        P
      );
    }
  }
  const a = more().args(method, url, body, params);
  return V.request(a[0], a[1], a[2], a[3], a[4], P);
}

// k6's asyncRequest: the same request, as a Promise of its Response (src/http/async_request.rs).
export function asyncRequest(method, url, body, params) {
  let a;
  try {
    a = more().args(method, url, body === undefined ? null : body, params);
  } catch (e) {
    return Promise.reject(e);
  }
  return V.asyncRequest(a[0], a[1], a[2], a[3], a[4], P);
}

// k6's batch: an array or object of requests, each a URL string, an array
// [method, url, body, params] or an object {method, url, body, params}. All are sent at once.
export function batch(requests) {
  const M = more();
  const keys = Array.isArray(requests) ? null : Object.keys(requests);
  const list = keys === null ? requests : keys.map((k) => requests[k]);
  const calls = list.map((r) => {
    if (typeof r === "string" || r instanceof M.URLTemplate) return M.args("GET", r, null, null);
    if (Array.isArray(r)) return M.args(r[0], r[1], r[2] === undefined ? null : r[2], r[3]);
    if (r !== null && typeof r === "object")
      return M.args(r.method === undefined ? "GET" : r.method, r.url, r.body === undefined ? null : r.body, r.params);
    throw new TypeError("http.batch: each request must be a URL, an array or an object");
  });
  const out = V.batch(calls, P);
  if (keys === null) return out;
  const obj = {};
  keys.forEach((k, i) => (obj[k] = out[i]));
  return obj;
}

// `get` is native (src/http.rs) for a URL string without params; everything else comes
// back here, as request("GET", url, null, params).
V.httpInit(P, request);
export const get = V.get;
export function head(url, params) {
  return request("HEAD", url, null, params);
}
export function post(url, body, params) {
  return request("POST", url, body, params);
}
export function put(url, body, params) {
  return request("PUT", url, body, params);
}
export function patch(url, body, params) {
  return request("PATCH", url, body, params);
}
export function del(url, body, params) {
  return request("DELETE", url, body, params);
}
export function options(url, body, params) {
  return request("OPTIONS", url, body, params);
}

export default {
  request,
  get,
  head,
  post,
  put,
  patch,
  del,
  options,
  batch,
  asyncRequest,
  Response,
  file,
  url,
  cookieJar,
  CookieJar,
  expectedStatuses,
  setResponseCallback,
};
