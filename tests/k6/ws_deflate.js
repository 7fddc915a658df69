// permessage-deflate (`compression: "deflate"`) in k6/ws and k6/websockets against an echo
// server speaking tests/ws/echo_server.py's commands (run with --deflate it accepts the
// offer): text and binary round-trip unchanged, small and over 64 KiB, one sent by the
// server in fragments. EXPECT_DEFLATE=1: the 101 must name permessage-deflate (k6's
// parameters), else it must not (a server that declines: a plain connection, the same
// messages). COMPRESSION="" runs the same traffic uncompressed (the wire-bytes comparison).
// Other values throw k6's errors. Counts asserted in crates/cli/tests/ws_independent.rs;
// runs unmodified under k6.
import ws from "k6/ws";
import { WebSocket } from "k6/websockets";
import { check } from "k6";

const WS = __ENV.WS;
const COMPRESSION = __ENV.COMPRESSION === undefined ? "deflate" : __ENV.COMPRESSION;
const EXPECT = __ENV.EXPECT_DEFLATE === "1";
const params = COMPRESSION ? { compression: COMPRESSION } : {};

export const options = { vus: 1, iterations: 2 };

// Over 64 KiB, and compressible as most JSON is.
const BIG = JSON.stringify(Array.from({ length: 4000 }, (_, i) => ({ id: i, name: "user" + (i % 50), ok: true })));

// The echo server's `!binary N` / `!frag N` payload: byte i is i % 256.
function pattern(buf, n) {
  const b = new Uint8Array(buf);
  if (b.length !== n) return false;
  for (let i = 0; i < n; i++) if (b[i] !== i % 256) return false;
  return true;
}

function negotiated(value) {
  const parts = String(value || "").split(";").map((s) => s.trim());
  return (
    parts.includes("permessage-deflate") &&
    parts.includes("server_no_context_takeover") &&
    parts.includes("client_no_context_takeover")
  );
}

function errorOf(fn) {
  try {
    fn();
  } catch (e) {
    return String(e.message || e);
  }
  return "";
}

export default function () {
  // k6/ws: two texts echoed, a binary sent whole and one in fragments by the server.
  const got = [];
  const res = ws.connect(WS, params, (socket) => {
    socket.on("open", () => {
      socket.send("hi");
      socket.send(BIG);
      socket.send("!binary 70000");
      socket.send("!frag 100000");
    });
    socket.on("message", (m) => got.push(m));
    socket.on("binaryMessage", (b) => {
      got.push(b);
      if (got.length === 4) socket.close();
    });
    socket.setTimeout(() => socket.close(), 10000);
  });
  check(res, {
    "ws: 101": (r) => r.status === 101,
    "ws: negotiated as expected": (r) => negotiated(r.headers["Sec-Websocket-Extensions"]) === EXPECT,
  });
  check(got, {
    "ws: texts equal": (g) => g[0] === "hi" && g[1] === BIG,
    "ws: binary equal": (g) => g.length === 4 && pattern(g[2], 70000),
    "ws: fragmented binary equal": (g) => g.length === 4 && pattern(g[3], 100000),
  });
  check(null, {
    "ws: gzip refused": () =>
      errorOf(() => ws.connect(WS, { compression: "gzip" }, () => {})) ===
      "unsupported compression algorithm 'gzip', supported algorithm is 'deflate'",
    "websockets: a chain refused": () =>
      errorOf(() => new WebSocket(WS, null, { compression: "deflate, gzip" })) ===
      "unsupported compression algorithm 'deflate, gzip', supported algorithm is 'deflate'",
  });

  // k6/websockets: a text, an ArrayBuffer over 64 KiB, a fragmented binary from the server.
  const sock = new WebSocket(WS, null, params);
  sock.binaryType = "arraybuffer";
  const msgs = [];
  const out = new Uint8Array(80000).map((_, i) => i % 256);
  sock.onopen = () => {
    sock.send(BIG);
    sock.send(out.buffer);
    sock.send("!frag 70000");
  };
  sock.onmessage = (e) => {
    msgs.push(e.data);
    if (msgs.length === 3) sock.close();
  };
  sock.onclose = () => {
    check(msgs, {
      "websockets: text equal": (m) => m[0] === BIG,
      "websockets: binary equal": (m) => m.length === 3 && pattern(m[1], 80000),
      "websockets: fragmented binary equal": (m) => m.length === 3 && pattern(m[2], 70000),
    });
  };
}
