// The `k6/websockets` module (k6 v1's WebSocket API, formerly k6/experimental/websockets):
// event-driven on the VU's event loop. The native side connects and waits for one event at a
// time (src/modules/ws.rs) and hands each to the function given to `__volley.wsOnEvent`; the iteration ends when
// nothing is pending, as in k6.
const V = globalThis.__volley;
import { flat } from "volley/http-ext";
import { closeError, wantsDeflate } from "volley/ws-common";
const sockets = new Map();

V.wsOnEvent((id, ev) => {
  const w = sockets.get(id);
  if (w) w._event(ev);
});

const CONNECTING = 0, OPEN = 1, CLOSING = 2, CLOSED = 3;
const TYPES = ["open", "message", "error", "close", "ping", "pong"];

function bytesOf(part) {
  if (typeof part === "string") return new Uint8Array(V.wsUtf8(part));
  if (part instanceof ArrayBuffer) return new Uint8Array(part.slice(0));
  if (ArrayBuffer.isView(part)) return new Uint8Array(part.buffer.slice(part.byteOffset, part.byteOffset + part.byteLength));
  if (part instanceof Blob) return part._bytes.slice();
  throw new Error("failed to process [blobParts]: unsupported type: " + typeof part);
}

// The Go type k6 names in "unsupported send type %T" (the value as sobek exports it).
function goType(v) {
  if (v === null || v === undefined) return "<nil>";
  if (typeof v === "number") return Number.isSafeInteger(v) ? "int64" : "float64";
  if (typeof v === "boolean") return "bool";
  if (typeof v === "bigint") return "*big.Int";
  if (typeof v === "function") return "func(sobek.FunctionCall) sobek.Value";
  if (Array.isArray(v)) return "[]interface {}";
  return "map[string]interface {}";
}

export class Blob {
  constructor(parts, options) {
    const chunks = (parts || []).map(bytesOf);
    const n = chunks.reduce((a, c) => a + c.length, 0);
    const all = new Uint8Array(n);
    let at = 0;
    for (const c of chunks) {
      all.set(c, at);
      at += c.length;
    }
    this._bytes = all;
    this._type = options && options.type ? String(options.type) : "";
  }
  get size() {
    return this._bytes.length;
  }
  get type() {
    return this._type;
  }
  arrayBuffer() {
    return Promise.resolve(this._bytes.slice().buffer);
  }
  bytes() {
    return Promise.resolve(this._bytes.slice());
  }
  text() {
    return Promise.resolve(V.wsUtf8(this._bytes.slice().buffer));
  }
  slice(start, end, type) {
    const b = new Blob([], { type });
    b._bytes = this._bytes.slice(start, end);
    return b;
  }
  toString() {
    return "[object Blob]";
  }
}

export class WebSocket {
  constructor(url, protocols, params) {
    if (url === undefined || url === null) throw new Error("WebSocket requires a url");
    const u = String(url);
    const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(u);
    if (!m || !/^wss?$/i.test(m[1])) {
      throw new Error(`WebSocket requires url with scheme ws or wss, but got "${m ? m[1] : ""}"`);
    }
    if (u.includes("#")) throw new Error(`WebSocket requires no url fragment, but got "${u}"`);
    const p = params === undefined || params === null ? {} : params;
    for (const k of Object.keys(p)) {
      if (!["headers", "tags", "jar", "compression"].includes(k)) throw new Error("unknown WebSocket's option " + k);
    }
    const compression = wantsDeflate(p, false);
    let protos = [];
    if (typeof protocols === "string") protos = [protocols];
    else if (Array.isArray(protocols)) protos = protocols.map(String);
    this._url = u;
    this._state = CONNECTING;
    this._binaryType = "blob";
    this._protocol = "";
    this._on = {};
    this._list = {};
    for (const t of TYPES) this._list[t] = [];
    this._code = 0;
    this._reason = "";
    const jar = p.jar === undefined || p.jar === null ? undefined : p.jar._id;
    const a = { url: u, headers: flat(p.headers), tags: flat(p.tags), jar, protocols: protos, compression, nameTag: true };
    this._id = V.wsOpenAsync(a);
    sockets.set(this._id, this);
  }
  get url() {
    return this._url;
  }
  get readyState() {
    return this._state;
  }
  get protocol() {
    return this._protocol;
  }
  get bufferedAmount() {
    return 0;
  }
  get extensions() {
    return [];
  }
  get binaryType() {
    return this._binaryType;
  }
  set binaryType(t) {
    if (t !== "blob" && t !== "arraybuffer") {
      throw new Error(`unknown binaryType ${t}, the supported ones are "blob" and "arraybuffer"`);
    }
    this._binaryType = t;
  }
  addEventListener(type, handler) {
    if (typeof handler !== "function") throw new Error(`handler for event type "${type}" isn't a callable function`);
    const l = this._list[type];
    if (!l) {
      console.warn(`can't add event handler: unknown event type: ${type}`);
      return;
    }
    l.push(handler);
  }
  _assertOpen() {
    if (this._state !== OPEN) throw new Error("InvalidStateError");
  }
  send(data) {
    this._assertOpen();
    if (typeof data === "string") V.wsSend(this._id, data);
    else if (data instanceof ArrayBuffer) V.wsSend(this._id, data.slice(0));
    else if (data instanceof Blob) V.wsSend(this._id, data._bytes.slice().buffer);
    else if (ArrayBuffer.isView(data)) {
      V.wsSend(this._id, data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength));
    } else throw new Error("unsupported send type " + goType(data));
  }
  ping() {
    this._assertOpen();
    V.wsPing(this._id, true);
  }
  close(code, reason) {
    if (this._state === CLOSED || this._state === CLOSING) return;
    const c = code === undefined ? 0 : Math.trunc(Number(code));
    if (c !== 0 && !(c === 1000 || (c >= 3000 && c <= 4999))) {
      throw new Error(
        "InvalidAccessError: Failed to execute 'close' on 'WebSocket': " +
          `The close code must be either 1000, or between 3000 and 4999. ${c} is neither`,
      );
    }
    const r = reason === undefined ? "" : String(reason);
    if (V.wsUtf8(r).byteLength > 123) {
      throw new Error("SyntaxError: Failed to execute 'close' on 'WebSocket': The message must not be greater than 123 bytes");
    }
    this._state = CLOSING;
    this._code = c || 1000;
    V.wsClose(this._id, this._code, r, true);
  }
  _newEvent(type) {
    return { type, target: this, timestamp: Date.now() };
  }
  _fire(type, ev) {
    const on = this._on[type];
    const list = this._list[type];
    // The common case, one `on<type>` handler and no listeners: no array per event.
    if (list.length === 0) {
      if (on) on.call(this, ev);
      return;
    }
    // A copy: handlers added while this event is dispatched see the next one.
    const all = on ? [on].concat(list) : list.slice();
    for (const f of all) f.call(this, ev);
  }
  _closed(error) {
    if (this._state === CLOSED) return;
    this._state = CLOSED;
    sockets.delete(this._id);
    if (error) {
      const ev = this._newEvent("error");
      ev.error = error;
      this._fire("error", ev);
    }
    const ev = this._newEvent("close");
    if (this._code !== 0) ev.code = this._code;
    ev.reason = this._reason;
    this._fire("close", ev);
  }
  _event(ev) {
    // A text message comes as the string itself (no event object from the native side).
    if (typeof ev === "string") {
      if (this._state !== OPEN) return;
      return this._fire("message", { type: "message", target: this, timestamp: Date.now(), data: ev, origin: this._url });
    }
    if (ev.t === undefined) {
      // The connect's outcome.
      if (ev.error) return this._closed(ev.error);
      this._protocol = ev.protocol;
      if (this._state !== CONNECTING) return;
      this._state = OPEN;
      return this._fire("open", this._newEvent("open"));
    }
    switch (ev.t) {
      case "text":
      case "binary": {
        if (this._state !== OPEN) return;
        const e = this._newEvent("message");
        e.data = ev.t === "text" ? ev.d : this._binaryType === "arraybuffer" ? ev.d : new Blob([ev.d]);
        e.origin = this._url;
        return this._fire("message", e);
      }
      case "ping":
      case "pong":
        return this._fire(ev.t, this._newEvent(ev.t));
      case "close": {
        if (ev.code !== 0) {
          this._code = ev.code;
          this._reason = ev.reason;
        }
        // k6: a close other than 1000/1001 (or none at all) is also an error.
        const unexpected = ev.error || (ev.code !== 1000 && ev.code !== 1001);
        const text = ev.error || closeError(ev.code, ev.reason);
        return this._closed(unexpected ? text : null);
      }
    }
  }
}

for (const t of TYPES) {
  Object.defineProperty(WebSocket.prototype, "on" + t, {
    get() {
      return this._on[t] || null;
    },
    set(f) {
      if (f === null || f === undefined) {
        delete this._on[t];
        return;
      }
      if (typeof f !== "function") throw new Error(`a value for 'on${t}' should be callable`);
      this._on[t] = f;
    },
  });
}
for (const [k, v] of Object.entries({ CONNECTING, OPEN, CLOSING, CLOSED })) {
  WebSocket[k] = v;
  WebSocket.prototype[k] = v;
}

export default { WebSocket, Blob };
