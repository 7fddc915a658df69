// The `k6/ws` module (k6's callback API): `ws.connect` blocks the iteration until the socket
// closes, running the socket's own loop here: its events and its setTimeout/setInterval.
// Natives: src/modules/ws.rs.
const V = globalThis.__volley;
import { flat } from "volley/http-ext";
import { closeError, wantsDeflate } from "volley/ws-common";

// k6 hands Go errors to the "error" handlers: `e.error()` is the message.
function goError(msg) {
  return { error: () => msg, toString: () => msg };
}

// Go's canonical header names (k6's response.headers keys).
function canonical(name) {
  return name.replace(/(^|-)([a-z])/g, (_, d, c) => d + c.toUpperCase());
}

class Socket {
  constructor(id) {
    this._id = id;
    this._on = {};
    this._timers = [];
    // The earliest timer's time (Infinity: none): most events find nothing due without a scan.
    this._next = Infinity;
    this._done = false;
    // A native per socket (src/modules/ws.rs, wsSender): the hot path of an echo handler.
    this.send = V.wsSender(id);
  }
  on(event, handler) {
    if (typeof handler === "function") (this._on[event] || (this._on[event] = [])).push(handler);
  }
  // Handlers without an argument ("open", "ping", "pong") and with one; two functions rather
  // than one reading `arguments`, which QuickJS builds as an object on every call.
  _emit(event) {
    const list = this._on[event];
    if (!list) return;
    // The handlers there now (k6 ranges over its list): one added meanwhile gets the next event.
    for (let i = 0, n = list.length; i < n; i++) list[i]();
  }
  _emit1(event, arg) {
    const list = this._on[event];
    if (!list) return;
    for (let i = 0, n = list.length; i < n; i++) list[i](arg);
  }
  // k6: a frame written after the close frame is an error ("websocket: close sent", which
  // scripts filter out by that text), not an exception.
  _closeSent() {
    this._emit1("error", goError("websocket: close sent"));
  }
  // Closed (by the script or the session's end): the native sender gives way to k6's error.
  _markDone() {
    this._done = true;
    this.send = this._sendClosed;
  }
  _sendClosed() {
    this._closeSent();
  }
  sendBinary(message) {
    if (message === undefined) throw new Error("missing argument, expected ArrayBuffer");
    if (!(message instanceof ArrayBuffer)) {
      const t = message === null ? "null" : message.constructor ? message.constructor.name : typeof message;
      throw new Error("expected ArrayBuffer as argument, received: " + t);
    }
    if (!this._done) V.wsSend(this._id, message);
    else this._closeSent();
  }
  ping() {
    if (!this._done) V.wsPing(this._id);
    else this._closeSent();
  }
  setTimeout(fn, ms) {
    this._timer(fn, ms, false, "setTimeout");
  }
  setInterval(fn, ms) {
    this._timer(fn, ms, true, "setInterval");
  }
  _timer(fn, ms, every, name) {
    const d = Number(ms);
    if (!(d > 0)) throw new Error(name + " requires a >0 timeout parameter, received " + (isNaN(d) ? "NaN" : d.toFixed(2)));
    const at = Date.now() + d;
    this._timers.push({ at, fn, every: every ? d : 0 });
    if (at < this._next) this._next = at;
    // Set from a handler that wsPump runs: it must come back to the loop by then.
    V.wsTimer(this._id, d);
  }
  close(code) {
    if (this._done) return;
    const c = code === undefined ? 1001 : Math.trunc(Number(code)) || 0;
    this._markDone();
    V.wsClose(this._id, c, "");
    this._emit1("close", c);
  }
  // Run the timers that are due; the time to the next one (-1: none).
  _tick() {
    if (this._next === Infinity) return -1;
    const now = Date.now();
    // The common case, on every message event: nothing due yet, and no arrays made (the scan
    // below allocates two).
    if (this._next > now) return this._next - now;
    const timers = this._timers;
    const due = timers.filter((t) => t.at <= now);
    for (const t of due) {
      if (this._done) return -1;
      if (t.every) t.at += t.every;
      else this._timers.splice(this._timers.indexOf(t), 1);
      t.fn.call(undefined);
    }
    let next = Infinity;
    for (let i = 0; i < this._timers.length; i++) if (this._timers[i].at < next) next = this._timers[i].at;
    this._next = next;
    if (next === Infinity) return -1;
    return Math.max(0, next - Date.now());
  }
}

function response(r) {
  const headers = {};
  for (const k of Object.keys(r.headers)) headers[canonical(k)] = r.headers[k];
  return { url: r.url, status: r.status, headers, body: r.body, error: r.error || "" };
}

export function connect(url, params, callback) {
  if (arguments.length === 2) {
    callback = params;
    params = undefined;
  } else if (arguments.length !== 3) {
    throw new Error("invalid number of arguments to ws.connect");
  }
  if (typeof callback !== "function") throw new Error("last argument to ws.connect must be a function");
  const p = params === undefined || params === null ? {} : params;
  const jar = p.jar === undefined || p.jar === null ? undefined : p.jar._id;
  const compression = wantsDeflate(p, true);
  const r = V.wsOpen({ url: String(url), headers: flat(p.headers), tags: flat(p.tags), jar, protocols: [], compression });
  if (r.error) {
    V.wsEnd(r.id);
    if (r.throw) throw new Error(r.error);
    // k6: the server's answer when there is one (without an error), else just the error;
    // no url either way.
    const out = response(r);
    out.url = "";
    if (r.status !== 0) out.error = "";
    return out;
  }
  const s = new Socket(r.id);
  try {
    callback(s);
    s._emit("open");
    while (!s._done) {
      const wait = s._tick();
      if (s._done) break;
      // Text messages go straight to the "message" handlers inside wsPump, which comes back
      // for anything else: a timer due, another event, the socket closed.
      const ev = V.wsPump(s._id, wait, s._on.message);
      // A text message comes as the string itself (no event object per message).
      if (typeof ev === "string") {
        s._emit1("message", ev);
        continue;
      }
      if (ev === null) continue;
      if (ev === undefined) break;
      switch (ev.t) {
        case "text":
          s._emit1("message", ev.d);
          break;
        case "binary":
          s._emit1("binaryMessage", ev.d);
          break;
        case "ping":
          s._emit("ping");
          break;
        case "pong":
          s._emit("pong");
          break;
        case "close":
          // k6: a close other than 1000/1001 (or none at all) is an error first.
          if (ev.error || (ev.code !== 1000 && ev.code !== 1001)) {
            s._emit1("error", goError(ev.error || closeError(ev.code, ev.reason)));
          }
          // The close reply went out with the server's code (src/modules/ws.rs).
          if (!s._done) {
            s._markDone();
            s._emit1("close", ev.code);
          }
          break;
      }
    }
  } finally {
    s._markDone();
    V.wsEnd(s._id);
  }
  return response(r);
}

export default { connect };
