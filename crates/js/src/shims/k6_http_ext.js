// The `k6/http` extras (internal module "volley/http-ext", re-exported by k6/http): what
// k6/http exports beyond requests (files, URL templates, cookie jars, expected statuses) and
// `more()`, the rarely used parts (k6_http_more.js), made per VU on first use.
const V = globalThis.__volley;

// An object's own defined entries as [key, value, ...] strings (headers, tags).
export function flat(obj) {
  const out = [];
  if (obj !== null && typeof obj === "object") {
    for (const k of Object.keys(obj)) {
      const v = obj[k];
      if (v !== undefined && v !== null) out.push(k, String(v));
    }
  }
  return out;
}

let M = null;
export function more() {
  return M === null ? (M = V.httpMore(V, flat)) : M;
}
export function file(data, filename, contentType) {
  return new (more().FileData)(data, filename, contentType);
}

export function url(strings, ...values) {
  return more().url(strings, values);
}

export class CookieJar {
  constructor(id) {
    this._id = id === undefined ? V.jarNew() : id;
  }
  set(url, name, value, opts) {
    V.jarSet(this._id, String(url), String(name), String(value), opts || {});
  }
  cookiesForURL(url) {
    return V.jarGet(this._id, String(url));
  }
  clear(url) {
    V.jarClear(this._id, String(url));
  }
  delete(url, name) {
    V.jarClear(this._id, String(url), String(name));
  }
}

let vuJar = null;
export function cookieJar() {
  return vuJar === null ? (vuJar = new CookieJar(0)) : vuJar;
}

export function expectedStatuses(...args) {
  return more().expectedStatuses(args);
}

export function setResponseCallback(cb) {
  return more().setResponseCallback(cb);
}

// VOLLEY_LAZY_SHIMS=0: made with the module (to measure what laziness saves).
if (V.eagerShims) {
  more();
  cookieJar();
}
