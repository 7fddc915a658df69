// The `k6/http` module. Requests are made natively; this file shapes arguments and results.
const V = globalThis.__volley;

function encodeForm(obj) {
  return Object.keys(obj)
    .map((k) => encodeURIComponent(k) + "=" + encodeURIComponent(obj[k]))
    .join("&");
}

function flat(obj) {
  const out = [];
  if (obj !== null && typeof obj === "object") {
    for (const k of Object.keys(obj)) {
      const v = obj[k];
      if (v !== undefined && v !== null) out.push(k, String(v));
    }
  }
  return out;
}

export class Response {
  json(selector) {
    if (selector !== undefined) {
      throw new Error("Response.json(selector) is not supported by volley yet: use json()." + selector);
    }
    if (this.body === null || this.body === undefined) {
      throw new Error("the response has no body (responseType 'none'?)");
    }
    return JSON.parse(this.body);
  }
}

export function request(method, url, body, params) {
  const p = params === null || params === undefined ? {} : params;
  const headers = flat(p.headers);
  if (body !== null && body !== undefined && typeof body === "object") {
    body = encodeForm(body);
    let hasType = false;
    for (let i = 0; i < headers.length; i += 2) {
      if (headers[i].toLowerCase() === "content-type") hasType = true;
    }
    if (!hasType) headers.push("Content-Type", "application/x-www-form-urlencoded");
  }
  const r = V.request(
    String(method).toUpperCase(),
    String(url),
    body === null || body === undefined ? null : String(body),
    headers,
    flat(p.tags),
    p
  );
  Object.setPrototypeOf(r, Response.prototype);
  return r;
}

export function get(url, params) {
  return request("GET", url, null, params);
}
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

export default { request, get, head, post, put, patch, del, options, Response };
