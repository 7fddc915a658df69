// k6/ws (the callback API) against the built-in target's /ws/echo: echo of text and binary,
// ping/pong both ways, client and server closes with their codes, the socket's timers, a
// refused connection, a refused upgrade, headers and cookies from the VU's jar. Message and
// session counts are exact (crates/js/tests/websockets.rs); runs unmodified under k6.
import ws from "k6/ws";
import http from "k6/http";
import { check } from "k6";

const BASE = __ENV.BASE;
// WS: another echo server speaking the same commands (tests/ws/echo_server.py).
const WS = __ENV.WS || BASE.replace(/^http/, "ws") + "/ws/echo";

export const options = { vus: 1, iterations: 2 };

export default function () {
  // Echo, our ping's pong, the server's ping, our close (no code: 1001, as k6).
  const order = [];
  const res = ws.connect(WS, { tags: { part: "echo" } }, function (socket) {
    socket.on("open", () => {
      order.push("open");
      socket.send("hello");
      socket.sendBinary(new Uint8Array([1, 2, 3]).buffer);
      socket.ping();
    });
    socket.on("message", (m) => order.push("message:" + m));
    socket.on("binaryMessage", (b) => order.push("binary:" + new Uint8Array(b).join(",")));
    socket.on("pong", () => {
      order.push("pong");
      socket.send("!ping");
    });
    socket.on("ping", () => {
      order.push("ping");
      socket.close();
    });
    socket.on("close", (code) => order.push("close:" + code));
  });
  check(res, {
    "upgrade status 101": (r) => r.status === 101,
    "Go's header names": (r) => r.headers["Upgrade"] === "websocket" && r.headers["Sec-Websocket-Accept"] !== undefined,
    "the url": (r) => r.url === WS,
  });
  check(order.join(" "), {
    "echo events in order": (s) => s === "open message:hello binary:1,2,3 pong ping close:1001",
  });

  // The server closes with 4001: an error (gorilla's text), then close with its code.
  const got = [];
  ws.connect(WS, function (socket) {
    socket.on("open", () => socket.send("!close 4001 bye"));
    socket.on("error", (e) => got.push("error:" + e.error()));
    socket.on("close", (code) => got.push("close:" + code));
  });
  check(got.join(" "), {
    "server close: error then close": (s) => s === "error:websocket: close 4001: bye close:4001",
  });

  // The socket's timers: an interval sends 3 ticks, the 3rd echo closes.
  let ticks = 0;
  let echoed = 0;
  let zero = "";
  ws.connect(WS, {}, function (socket) {
    try {
      socket.setTimeout(() => {}, 0);
    } catch (e) {
      zero = String(e.message || e);
    }
    socket.setInterval(() => {
      if (ticks < 3) socket.send("tick " + ticks++);
    }, 20);
    socket.on("message", () => {
      if (++echoed === 3) socket.close(1000);
    });
  });
  check(null, {
    "interval ticks": () => ticks === 3 && echoed === 3,
    "setTimeout(0) refused": () => zero === "setTimeout requires a >0 timeout parameter, received 0.00",
  });

  // Nothing listens on port 1: an error response, the callback never runs.
  let called = false;
  const refused = ws.connect("ws://127.0.0.1:1/", () => (called = true));
  check(refused, {
    "refused: status 0": (r) => r.status === 0 && r.url === "" && !called,
    "refused: k6's message": (r) => r.error === "dial tcp 127.0.0.1:1: connect: connection refused",
  });

  // A plain HTTP endpoint does not upgrade: k6 returns its answer (no error, no url).
  const bad = ws.connect(BASE.replace(/^http/, "ws") + "/get", () => (called = true));
  check(bad, {
    "bad handshake": (r) => r.status === 200 && r.error === "" && r.url === "" && !called,
    "bad handshake: the body": (r) => JSON.parse(r.body).path === "/get",
  });

  // Headers and the VU's cookies go with the upgrade request.
  http.get(`${BASE}/cookies/set?wsc=yes`);
  let seen = null;
  ws.connect(WS, { headers: { "X-Test": "yes" } }, function (socket) {
    socket.on("open", () => socket.send("!headers"));
    socket.on("message", (m) => {
      seen = JSON.parse(m);
      socket.close();
    });
  });
  check(seen, {
    "custom header sent": (h) => h !== null && h["x-test"] === "yes",
    "cookie from the jar sent": (h) => h !== null && h["cookie"] === "wsc=yes",
  });
}
