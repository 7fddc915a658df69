// k6/websockets (k6 v1's event API) against the built-in target's /ws/echo: events on the
// VU's event loop, binaryType arraybuffer and blob, send of strings, typed arrays and Blobs,
// ping/pong, close codes both ways, a refused connection, several sockets at once, and the
// errors k6 throws. Counts asserted in crates/js/tests/websockets.rs; runs unmodified under k6.
import { WebSocket, Blob } from "k6/websockets";
import { check } from "k6";

const BASE = __ENV.BASE;
// WS: another echo server speaking the same commands (tests/ws/echo_server.py).
const WS = __ENV.WS || BASE.replace(/^http/, "ws") + "/ws/echo";

export const options = { vus: 1, iterations: 2 };

export default function () {
  // Echo with a subprotocol, ping/pong, our close with a code and reason.
  const order = [];
  const a = new WebSocket(WS, ["chat", "other"], { tags: { part: "a" } });
  let early = "";
  try {
    a.send("too early");
  } catch (e) {
    early = e.message;
  }
  a.binaryType = "arraybuffer";
  a.onopen = () => {
    order.push(`open:${a.readyState}:${a.protocol}`);
    a.send("hi");
    a.send(new Uint8Array([7, 8]));
    a.ping();
  };
  a.addEventListener("message", (e) => {
    order.push(typeof e.data === "string" ? "text:" + e.data : "binary:" + new Uint8Array(e.data).join(","));
  });
  a.onpong = () => {
    order.push("pong");
    let bad = "";
    try {
      a.close(1001);
    } catch (e) {
      bad = e.message;
    }
    check(bad, { "close code checked": (m) => m.startsWith("InvalidAccessError") });
    a.close(3001, "done");
    order.push("closing:" + a.readyState);
  };
  a.onclose = (e) => {
    order.push(`close:${e.code}:${e.reason}:${a.readyState}`);
    check(order.join(" "), {
      "events in order": (s) =>
        s === "open:1:chat text:hi binary:7,8 pong closing:2 close:3001:done:3",
    });
  };
  check(early, { "send before open": (m) => m === "InvalidStateError" });

  // binaryType "blob" (the default): binary messages arrive as Blobs.
  const b = new WebSocket(WS);
  b.onopen = () => b.send(new Uint8Array([97, 98, 99]));
  b.onmessage = async (e) => {
    const text = await e.data.text();
    const made = await new Blob(["ab", new Uint8Array([99])]).text();
    check(e.data, { "a Blob comes back": (d) => d.size === 3 && text === "abc" && made === "abc" });
    b.close();
  };

  // The server closes with 4002: an error event, then close with its code and reason.
  const c = new WebSocket(WS);
  const got = [];
  c.onopen = () => c.send("!close 4002 srv");
  c.onerror = (e) => got.push("error:" + e.error);
  c.onclose = (e) => {
    got.push(`close:${e.code}:${e.reason}`);
    check(got.join(" "), {
      "server close: error then close": (s) => s === "error:websocket: close 4002: srv close:4002:srv",
    });
  };

  // Nothing listens on port 1.
  const d = new WebSocket("ws://127.0.0.1:1/");
  const derr = [];
  d.onerror = (e) => derr.push(e.error);
  d.onclose = () => {
    check(derr, {
      "refused: error event": (x) => x.length === 1 && x[0].includes("connection refused"),
      "refused: closed": () => d.readyState === 3,
    });
  };

  // Five sockets at once, each echoes once.
  for (let i = 0; i < 5; i++) {
    const s = new WebSocket(WS);
    s.onopen = () => s.send("n" + i);
    s.onmessage = (e) => {
      check(e.data, { "each socket its own echo": (v) => v === "n" + i });
      s.close();
    };
  }

  let bt = "";
  try {
    b.binaryType = "text";
  } catch (e) {
    bt = e.message;
  }
  let nourl = "";
  try {
    new WebSocket("http://localhost/");
  } catch (e) {
    nourl = e.message;
  }
  check(null, {
    "unknown binaryType": () => bt === 'unknown binaryType text, the supported ones are "blob" and "arraybuffer"',
    "ws or wss only": () => nourl === 'WebSocket requires url with scheme ws or wss, but got "http"',
  });
}
