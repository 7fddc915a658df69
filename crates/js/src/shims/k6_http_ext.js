// The `k6/http` extras (internal module "volley/http-ext", re-exported by k6/http): files and
// multipart bodies, URL templates, cookie jars, expected statuses, json(selector),
// status_text and batch argument shaping.
const V = globalThis.__volley;

// ---- http.file and multipart/form-data ------------------------------------------------

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

export class FileData {
  constructor(data, filename, contentType) {
    this.data = data;
    this.filename = filename;
    this.content_type = contentType === undefined ? "application/octet-stream" : contentType;
  }
}

export function file(data, filename, contentType) {
  return new FileData(data, filename, contentType);
}

function toBytes(d) {
  if (typeof d === "string" || d instanceof ArrayBuffer) return d;
  if (ArrayBuffer.isView(d)) return new Uint8Array(d.buffer, d.byteOffset, d.byteLength).slice().buffer;
  if (Array.isArray(d)) return new Uint8Array(d).buffer;
  return String(d);
}

/// A request body in the form the native side takes: a string, an ArrayBuffer, or null.
/// Objects holding an http.file become multipart/form-data (returned with its content type).
export function shapeBody(body) {
  if (body === null || body === undefined) return { body: null };
  if (typeof body === "string") return { body };
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return { body: toBytes(body) };
  if (body instanceof FileData) return { body: toBytes(body.data) };
  if (typeof body !== "object") return { body: String(body) };
  const keys = Object.keys(body);
  if (!keys.some((k) => body[k] instanceof FileData)) return null; // the form-urlencoded path
  const boundary = "----volleyformboundary" + V.b64enc(V.randomBytes(12), "rawurl").replace(/[^A-Za-z0-9]/g, "x");
  const chunks = [];
  for (const k of keys) {
    const v = body[k];
    const name = String(k).replace(/"/g, "%22");
    if (v instanceof FileData) {
      const fname = v.filename === undefined ? name : String(v.filename).replace(/"/g, "%22");
      chunks.push(
        `--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${fname}"\r\n` +
          `Content-Type: ${v.content_type}\r\n\r\n`
      );
      chunks.push(toBytes(v.data));
      chunks.push("\r\n");
    } else {
      chunks.push(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${v}\r\n`);
    }
  }
  chunks.push(`--${boundary}--\r\n`);
  return { body: V.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

// ---- http.url`...` ----------------------------------------------------------------------

export class URLTemplate {
  constructor(url, name) {
    this.url = url;
    this.name = name;
  }
  toString() {
    return this.url;
  }
}

export function url(strings, ...values) {
  let u = strings[0];
  let name = strings[0];
  for (let i = 0; i < values.length; i++) {
    u += String(values[i]) + strings[i + 1];
    name += "${}" + strings[i + 1];
  }
  return new URLTemplate(u, name);
}

// ---- basic auth from the URL --------------------------------------------------------

/// `http://user:pass@host/...` → [url without credentials, "Basic ..."] (or null).
export function splitUserinfo(u) {
  const s = u.indexOf("://");
  if (s < 0) return null;
  const rest = u.slice(s + 3);
  let end = rest.length;
  for (const c of ["/", "?", "#"]) {
    const i = rest.indexOf(c);
    if (i >= 0 && i < end) end = i;
  }
  const at = rest.lastIndexOf("@", end);
  if (at < 0) return null;
  const info = rest.slice(0, at);
  const colon = info.indexOf(":");
  const user = decodeURIComponent(colon < 0 ? info : info.slice(0, colon));
  const pass = colon < 0 ? "" : decodeURIComponent(info.slice(colon + 1));
  return [u.slice(0, s + 3) + rest.slice(at + 1), "Basic " + V.b64enc(user + ":" + pass, "std")];
}

// ---- cookies ------------------------------------------------------------------------------

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

const vuJar = new CookieJar(0);

export function cookieJar() {
  return vuJar;
}

/// params.cookies → [name, value, replace, ...] for the native side.
export function flatCookies(c) {
  const out = [];
  if (c === null || typeof c !== "object") return out;
  for (const k of Object.keys(c)) {
    const v = c[k];
    if (v !== null && typeof v === "object") out.push(k, String(v.value), !!v.replace);
    else if (v !== undefined && v !== null) out.push(k, String(v), false);
  }
  return out;
}

// ---- expected statuses ------------------------------------------------------------------

export class ExpectedStatuses {
  constructor(ranges) {
    this._ranges = ranges;
  }
}

export function expectedStatuses(...args) {
  const ranges = [];
  for (const a of args) {
    if (typeof a === "number" && Number.isInteger(a)) ranges.push([a, a]);
    else if (a !== null && typeof a === "object" && typeof a.min === "number" && typeof a.max === "number")
      ranges.push([a.min, a.max]);
    else throw new TypeError("expectedStatuses: arguments must be integers or {min, max} objects");
  }
  return new ExpectedStatuses(ranges);
}

export function setResponseCallback(cb) {
  if (cb === null || cb === undefined) return V.setExpected(null);
  if (!(cb instanceof ExpectedStatuses)) throw new TypeError("setResponseCallback: use http.expectedStatuses(...)");
  V.setExpected(cb._ranges);
}

/// params.responseCallback for the native side: undefined = the VU's, null = none, else ranges.
export function callbackRanges(cb) {
  if (cb === undefined) return undefined;
  if (cb === null) return null;
  if (!(cb instanceof ExpectedStatuses)) throw new TypeError("responseCallback: use http.expectedStatuses(...)");
  return cb._ranges;
}

// ---- Response helpers ---------------------------------------------------------------------

/// gjson-style basics: "a.b.0.c", "items.#" (length), escaped dots "a\.b".
export function select(value, selector) {
  const parts = [];
  let cur = "";
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (c === "\\" && i + 1 < selector.length) {
      cur += selector[++i];
    } else if (c === ".") {
      parts.push(cur);
      cur = "";
    } else cur += c;
  }
  parts.push(cur);
  let v = value;
  for (const p of parts) {
    if (v === null || v === undefined) return undefined;
    if (p === "#" && Array.isArray(v)) {
      v = v.length;
    } else if (Array.isArray(v)) {
      if (!/^\d+$/.test(p)) return undefined;
      v = v[Number(p)];
    } else if (typeof v === "object") {
      v = Object.prototype.hasOwnProperty.call(v, p) ? v[p] : undefined;
    } else return undefined;
  }
  return v;
}

const REASONS = {
  100: "Continue", 101: "Switching Protocols", 200: "OK", 201: "Created", 202: "Accepted",
  203: "Non-Authoritative Information", 204: "No Content", 205: "Reset Content", 206: "Partial Content",
  300: "Multiple Choices", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified",
  307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request", 401: "Unauthorized",
  402: "Payment Required", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
  406: "Not Acceptable", 408: "Request Timeout", 409: "Conflict", 410: "Gone", 411: "Length Required",
  412: "Precondition Failed", 413: "Request Entity Too Large", 414: "Request URI Too Long",
  415: "Unsupported Media Type", 416: "Requested Range Not Satisfiable", 417: "Expectation Failed",
  418: "I'm a teapot", 422: "Unprocessable Entity", 425: "Too Early", 426: "Upgrade Required",
  428: "Precondition Required", 429: "Too Many Requests", 431: "Request Header Fields Too Large",
  500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
  504: "Gateway Timeout", 505: "HTTP Version Not Supported",
};

/// Go's `resp.Status`, which k6 shows as status_text: "200 OK".
export function statusText(code) {
  if (!code) return "";
  const r = REASONS[code];
  return r === undefined ? String(code) : `${code} ${r}`;
}
