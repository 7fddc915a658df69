// The `k6/net/grpc` module: Client (load, loadProtoset, connect, invoke, asyncInvoke, close),
// Stream (on data/error/end/status, write, end) and the status constants. The natives are in
// src/modules/grpc/; this file checks arguments the way k6 does and shapes values.
const V = globalThis.__volley;
const streams = new Map();

V.grpcOnEvent((sid, kind, value) => {
  const s = streams.get(sid);
  if (!s) return;
  if (kind === "end") streams.delete(sid);
  s._emit(kind, value);
});

export const StatusOK = 0, StatusCanceled = 1, StatusUnknown = 2, StatusInvalidArgument = 3,
  StatusDeadlineExceeded = 4, StatusNotFound = 5, StatusAlreadyExists = 6, StatusPermissionDenied = 7,
  StatusResourceExhausted = 8, StatusFailedPrecondition = 9, StatusAborted = 10, StatusOutOfRange = 11,
  StatusUnimplemented = 12, StatusInternal = 13, StatusUnavailable = 14, StatusDataLoss = 15,
  StatusUnauthenticated = 16;
export const HealthCheckUnknown = 0, HealthCheckServing = 1, HealthCheckNotServing = 2,
  HealthCheckServiceUnkown = 3;

// Requests are stringified by the natives (NaN and ±Infinity sent as protojson's strings).

function isNullish(v) {
  return v === undefined || v === null;
}

function bytes(v) {
  if (typeof v === "string" || v instanceof ArrayBuffer) return v;
  if (ArrayBuffer.isView(v)) return v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength);
  if (Array.isArray(v)) return new Uint8Array(v).buffer;
  return undefined;
}

function metadata(md, what) {
  if (isNullish(md)) return [];
  if (typeof md !== "object" || Array.isArray(md)) throw new Error(`${what}: must be an object with key-value pairs`);
  const flat = [];
  for (const k of Object.keys(md)) {
    const v = md[k];
    if (k.endsWith("-bin")) {
      const b = bytes(v);
      if (b === undefined) throw new Error(`${what}: "${k}" value must be binary`);
      flat.push(k, b);
    } else if (typeof v !== "string") {
      throw new Error(`${what}: "${k}" value must be a string`);
    } else {
      flat.push(k, v);
    }
  }
  return flat;
}

function callParams(params, what) {
  const out = { metadata: [], tags: [], discardResponseMessage: false };
  if (isNullish(params)) return out;
  for (const k of Object.keys(params)) {
    const v = params[k];
    switch (k) {
      case "metadata":
        out.metadata = metadata(v, `${what}: invalid metadata param`);
        break;
      case "tags":
        if (!isNullish(v)) {
          if (typeof v !== "object") throw new Error(`${what}: metric tags: invalid tags`);
          for (const t of Object.keys(v)) out.tags.push(t, String(v[t]));
        }
        break;
      case "timeout":
        out.timeout = v;
        break;
      case "discardResponseMessage":
        out.discardResponseMessage = !!v;
        break;
      default:
        throw new Error(`${what}: unknown param: "${k}"`);
    }
  }
  return out;
}

// k6's checks and texts (params.go): PEM strings; cacerts a string or an array of them.
function tlsParam(v, what) {
  const keys = "expected (optional) keys: cert, key, password, and cacerts";
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Error(`${what}: invalid tls value: '${v}', ${keys}`);
  const out = { cacerts: [] };
  for (const k of ["cert", "key"]) {
    if (v[k] === undefined) continue;
    if (typeof v[k] !== "string") throw new Error(`${what}: invalid tls ${k} value: '${v[k]}', it needs to be a PEM formatted string`);
    out[k] = v[k];
  }
  if (v.password !== undefined) {
    if (typeof v.password !== "string") throw new Error(`${what}: invalid tls password value: '${v.password}', it needs to be a string`);
    out.password = v.password;
  }
  if (v.cacerts !== undefined) {
    const ca = Array.isArray(v.cacerts) ? v.cacerts : [v.cacerts];
    for (const c of ca) {
      if (typeof c !== "string") throw new Error(`${what}: invalid tls cacerts value: '${v.cacerts}', it needs to be a string or an array of PEM formatted strings`);
    }
    out.cacerts = ca;
  }
  return out;
}

function connectParams(params) {
  const what = "invalid grpc.connect() parameters";
  const out = {};
  if (isNullish(params)) return out;
  for (const k of Object.keys(params)) {
    const v = params[k];
    switch (k) {
      case "plaintext":
      case "reflect":
        if (typeof v !== "boolean") throw new Error(`${what}: invalid ${k} value: '${v}', it needs to be boolean`);
        out[k] = v;
        break;
      case "timeout":
        out.timeout = v;
        break;
      case "reflectMetadata":
        out.reflectMetadata = metadata(v, `${what}: invalid reflectMetadata param`);
        break;
      case "maxReceiveSize":
      case "maxSendSize":
        if (typeof v !== "number" || !Number.isInteger(v)) throw new Error(`${what}: invalid ${k} value: '${v}', it needs to be an integer`);
        if (v < 0) throw new Error(`${what}: invalid ${k} value: '${v}, it needs to be a positive integer`);
        out[k] = v;
        break;
      case "authority":
        if (typeof v !== "string") throw new Error(`${what}: invalid authority value: '${v}', it needs to be a string`);
        out.authority = v;
        break;
      case "tls":
        out.tls = tlsParam(v, what);
        break;
      default:
        throw new Error(`${what}: unknown connect param: "${k}"`);
    }
  }
  return out;
}

export class Client {
  constructor() {
    this._id = V.grpcNew();
  }
  load(importPaths, ...files) {
    const dirs = isNullish(importPaths) ? [] : Array.from(importPaths, String);
    return V.grpcLoad(this._id, dirs, files.map(String));
  }
  loadProtoset(path) {
    return V.grpcLoadProtoset(this._id, String(path));
  }
  connect(addr, params) {
    return V.grpcConnect(this._id, String(addr), connectParams(params));
  }
  // Without params the natives get `undefined` (all defaults): no params object per call.
  invoke(method, request, params) {
    const p = isNullish(params) ? undefined : callParams(params, "invalid GRPC's client.invoke() parameters");
    if (isNullish(request)) throw new Error("request cannot be nil");
    return V.grpcInvoke(this._id, String(method), request, p);
  }
  asyncInvoke(method, request, params) {
    try {
      const p = isNullish(params) ? undefined : callParams(params, "invalid GRPC's client.invoke() parameters");
      if (isNullish(request)) throw new Error("request cannot be nil");
      return V.grpcInvokeAsync(this._id, String(method), request, p);
    } catch (e) {
      return Promise.reject(e);
    }
  }
  close() {
    V.grpcClose(this._id);
  }
  healthCheck(service) {
    return V.grpcHealthCheck(this._id, isNullish(service) ? "" : String(service));
  }
}

const EVENTS = ["data", "error", "end", "status"];

export class Stream {
  constructor(client, method, params) {
    if (isNullish(client) || !(client instanceof Client)) {
      throw new Error("invalid GRPC Stream's client: " + (isNullish(client) ? "empty gRPC client" : "not a gRPC client"));
    }
    const p = callParams(params, "invalid GRPC Stream's parameters");
    this._on = { data: [], error: [], end: [], status: [] };
    this._id = V.grpcStreamOpen(client._id, isNullish(method) ? "" : String(method), p);
    streams.set(this._id, this);
  }
  on(event, handler) {
    if (typeof handler !== "function") throw new Error(`handler for "${event}" event isn't a callable function`);
    if (!EVENTS.includes(event)) {
      console.warn(`can't register ${event} event handler: unknown GRPC stream's event type: ${event}`);
      return;
    }
    this._on[event].push(handler);
  }
  write(message) {
    if (isNullish(message)) {
      console.warn("can't send empty message");
      return;
    }
    V.grpcStreamWrite(this._id, message);
  }
  end() {
    V.grpcStreamEnd(this._id);
  }
  _emit(kind, value) {
    const meta = { ts: Math.floor(Date.now() / 1000) };
    if (kind === "error" && this._on.error.length === 0) {
      console.warn(`no handlers for error registered, but an error happened: code: ${value.code}, message: ${value.message}`);
    }
    for (const f of this._on[kind]) f(kind === "end" ? {} : value, meta);
  }
}

export default {
  Client, Stream,
  StatusOK, StatusCanceled, StatusUnknown, StatusInvalidArgument, StatusDeadlineExceeded,
  StatusNotFound, StatusAlreadyExists, StatusPermissionDenied, StatusResourceExhausted,
  StatusFailedPrecondition, StatusAborted, StatusOutOfRange, StatusUnimplemented, StatusInternal,
  StatusUnavailable, StatusDataLoss, StatusUnauthenticated,
  HealthCheckUnknown, HealthCheckServing, HealthCheckNotServing, HealthCheckServiceUnkown,
};
