// The `k6/http` module. Requests are made natively; this file shapes arguments and results.
const V = globalThis.__volley;
import * as X from "volley/http-ext";
export { file, url, cookieJar, CookieJar, expectedStatuses, setResponseCallback } from "volley/http-ext";

function encodeForm(obj) {
  return Object.keys(obj)
    .map((k) => encodeURIComponent(k) + "=" + encodeURIComponent(obj[k]))
    .join("&");
}

const flat = X.flat;

export class Response {
  json(selector) {
    if (this.body === null || this.body === undefined) {
      throw new Error("the response has no body (responseType 'none'?)");
    }
    const body = typeof this.body === "string" ? this.body : V.b64dec(V.b64enc(this.body), "std", true);
    const v = JSON.parse(body);
    return selector === undefined ? v : X.select(v, String(selector));
  }
  get status_text() {
    return X.statusText(this.status);
  }
  // k6/html over the response body (src/shims/html_api.js, made on first use).
  html(selector) {
    return html().response(this, selector);
  }
  submitForm(args) {
    return html().submitForm(this, args, request);
  }
  clickLink(args) {
    return html().clickLink(this, args, request);
  }
  // JSON.stringify(res) shows the lazily built fields too.
  toJSON() {
    for (const n of LAZY) void this[n];
    return Object.assign({}, this);
  }
}

// Built natively on first read, then kept on the response as plain properties (most scripts
// never read them, and building them for every response cost more than the request).
const LAZY = ["headers", "timings", "request", "cookies", "remote_ip", "remote_port"];
LAZY.forEach((name, i) => {
  const own = (o, v) =>
    Object.defineProperty(o, name, { value: v, writable: true, enumerable: true, configurable: true });
  Object.defineProperty(Response.prototype, name, {
    configurable: true,
    get() {
      const v = V.responseField(this, i);
      if (v !== undefined && this !== Response.prototype) own(this, v);
      return v;
    },
    set(v) {
      own(this, v);
    },
  });
});

const EMPTY = [];
const html = () => V.htmlCache || (V.htmlCache = V.htmlApi(V));

function hasHeader(headers, name) {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i].toLowerCase() === name) return true;
  }
  return false;
}

// The native request's arguments: [METHOD, url, body (string | ArrayBuffer | null), flat
// headers, params]. Handles http.url templates, user:pass@ in URLs, http.file/multipart.
function args(method, url, body, params) {
  let p = params === null || params === undefined ? null : params;
  if (typeof url !== "string") {
    if (url instanceof X.URLTemplate) {
      p = Object.assign({}, p, { tags: Object.assign({ name: url.name }, p === null ? null : p.tags) });
      url = url.url;
    } else url = String(url);
  }
  let headers = p === null ? EMPTY : flat(p.headers);
  if (url.indexOf("@") >= 0) {
    const auth = X.splitUserinfo(url);
    if (auth !== null) {
      if (p !== null && p.auth !== undefined && p.auth !== "basic") {
        throw new Error(`params.auth '${p.auth}' is not supported by volley yet (only "basic")`);
      }
      url = auth[0];
      if (!hasHeader(headers, "authorization")) headers = headers.concat(["Authorization", auth[1]]);
    }
  }
  if (body !== null && body !== undefined && typeof body !== "string") {
    const shaped = X.shapeBody(body);
    if (shaped === null) {
      body = encodeForm(body);
      if (!hasHeader(headers, "content-type"))
        headers = headers.concat(["Content-Type", "application/x-www-form-urlencoded"]);
    } else {
      body = shaped.body;
      if (shaped.contentType !== undefined && !hasHeader(headers, "content-type"))
        headers = headers.concat(["Content-Type", shaped.contentType]);
    }
  }
  return [String(method).toUpperCase(), url, body === undefined ? null : body, headers, p];
}

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
        Response.prototype
      );
    }
  }
  const a = args(method, url, body, params);
  return V.request(a[0], a[1], a[2], a[3], a[4], Response.prototype);
}

// k6's asyncRequest: the same request, as a Promise of its Response (src/http/async_request.rs).
export function asyncRequest(method, url, body, params) {
  let a;
  try {
    a = args(method, url, body === undefined ? null : body, params);
  } catch (e) {
    return Promise.reject(e);
  }
  return V.asyncRequest(a[0], a[1], a[2], a[3], a[4], Response.prototype);
}

// k6's batch: an array or object of requests, each a URL string, an array
// [method, url, body, params] or an object {method, url, body, params}. All are sent at once.
export function batch(requests) {
  const keys = Array.isArray(requests) ? null : Object.keys(requests);
  const list = keys === null ? requests : keys.map((k) => requests[k]);
  const calls = list.map((r) => {
    if (typeof r === "string" || r instanceof X.URLTemplate) return args("GET", r, null, null);
    if (Array.isArray(r)) return args(r[0], r[1], r[2] === undefined ? null : r[2], r[3]);
    if (r !== null && typeof r === "object")
      return args(r.method === undefined ? "GET" : r.method, r.url, r.body === undefined ? null : r.body, r.params);
    throw new TypeError("http.batch: each request must be a URL, an array or an object");
  });
  const out = V.batch(calls, Response.prototype);
  if (keys === null) return out;
  const obj = {};
  keys.forEach((k, i) => (obj[k] = out[i]));
  return obj;
}

// `get` is native (src/http.rs) for a URL string without params; everything else comes
// back here.
function getSlow(url, params) {
  return request("GET", url, null, params);
}
V.httpInit(Response.prototype, getSlow);
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
  file: X.file,
  url: X.url,
  cookieJar: X.cookieJar,
  CookieJar: X.CookieJar,
  expectedStatuses: X.expectedStatuses,
  setResponseCallback: X.setResponseCallback,
};
