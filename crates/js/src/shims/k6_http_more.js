// The rarely used parts of `k6/http` (http.file and multipart bodies, http.url templates,
// user:pass@ URLs, form bodies, expected statuses, json(selector), status_text), over the
// natives on `__volley`. Evaluated once per VU on first use (`__volley.httpMore(V)`, from
// k6_http_ext.js's `more()`): a VU that only sends plain requests does not carry these
// functions and tables (docs/vus.md, "What a VU's context holds").
// `flat` is k6_http_ext.js's.
(function (V, flat) {
  "use strict";
  const EMPTY = [];

  // ---- http.file and multipart/form-data ----------------------------------------------

  class FileData {
    constructor(data, filename, contentType) {
      this.data = data;
      this.filename = filename;
      this.content_type = contentType === undefined ? "application/octet-stream" : contentType;
    }
  }

  function toBytes(d) {
    if (typeof d === "string" || d instanceof ArrayBuffer) return d;
    if (ArrayBuffer.isView(d)) return new Uint8Array(d.buffer, d.byteOffset, d.byteLength).slice().buffer;
    if (Array.isArray(d)) return new Uint8Array(d).buffer;
    return String(d);
  }

  // A request body in the form the native side takes: a string, an ArrayBuffer, or null.
  // Objects holding an http.file become multipart/form-data (returned with its content type).
  function shapeBody(body) {
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

  function encodeForm(obj) {
    return Object.keys(obj)
      .map((k) => encodeURIComponent(k) + "=" + encodeURIComponent(obj[k]))
      .join("&");
  }

  // ---- http.url`...` --------------------------------------------------------------------

  class URLTemplate {
    constructor(url, name) {
      this.url = url;
      this.name = name;
    }
    toString() {
      return this.url;
    }
  }

  function url(strings, values) {
    let u = strings[0];
    let name = strings[0];
    for (let i = 0; i < values.length; i++) {
      u += String(values[i]) + strings[i + 1];
      name += "${}" + strings[i + 1];
    }
    return new URLTemplate(u, name);
  }

  // ---- basic auth from the URL ----------------------------------------------------------

  // `http://user:pass@host/...` → [url without credentials, "Basic ..."] (or null).
  function splitUserinfo(u) {
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
      if (url instanceof URLTemplate) {
        p = Object.assign({}, p, { tags: Object.assign({ name: url.name }, p === null ? null : p.tags) });
        url = url.url;
      } else url = String(url);
    }
    let headers = p === null ? EMPTY : flat(p.headers);
    if (url.indexOf("@") >= 0) {
      const auth = splitUserinfo(url);
      if (auth !== null) {
        if (p !== null && p.auth !== undefined && p.auth !== "basic") {
          throw new Error(`params.auth '${p.auth}' is not supported by volley yet (only "basic")`);
        }
        url = auth[0];
        if (!hasHeader(headers, "authorization")) headers = headers.concat(["Authorization", auth[1]]);
      }
    }
    if (body !== null && body !== undefined && typeof body !== "string") {
      const shaped = shapeBody(body);
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

  // ---- expected statuses ------------------------------------------------------------------

  class ExpectedStatuses {
    constructor(ranges) {
      this._ranges = ranges;
    }
  }

  function expectedStatuses(list) {
    const ranges = [];
    for (const a of list) {
      if (typeof a === "number" && Number.isInteger(a)) ranges.push([a, a]);
      else if (a !== null && typeof a === "object" && typeof a.min === "number" && typeof a.max === "number")
        ranges.push([a.min, a.max]);
      else throw new TypeError("expectedStatuses: arguments must be integers or {min, max} objects");
    }
    return new ExpectedStatuses(ranges);
  }

  function setResponseCallback(cb) {
    if (cb === null || cb === undefined) return V.setExpected(null);
    if (!(cb instanceof ExpectedStatuses)) throw new TypeError("setResponseCallback: use http.expectedStatuses(...)");
    V.setExpected(cb._ranges);
  }

  // ---- Response helpers -------------------------------------------------------------------

  // gjson-style basics: "a.b.0.c", "items.#" (length), escaped dots "a\.b".
  function select(value, selector) {
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

  function json(res, selector) {
    if (res.body === null || res.body === undefined) {
      throw new Error("the response has no body (responseType 'none'?)");
    }
    const body = typeof res.body === "string" ? res.body : V.b64dec(V.b64enc(res.body), "std", true);
    const v = JSON.parse(body);
    return selector === undefined ? v : select(v, String(selector));
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

  // Go's `resp.Status`, which k6 shows as status_text: "200 OK".
  function statusText(code) {
    if (!code) return "";
    const r = REASONS[code];
    return r === undefined ? String(code) : `${code} ${r}`;
  }

  return { FileData, URLTemplate, url, args, expectedStatuses, setResponseCallback, json, statusText };
})
