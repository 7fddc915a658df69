// Hostile WebSocket input, k6/ws and k6/websockets, with k6 v1.8.1's observable behaviour as
// the checks: a URL that is not ws(s):// (k6/ws returns the error, it does not throw), a peer
// that goes away without a close frame (k6's "close 1006 (abnormal closure): unexpected EOF",
// reason "unexpected EOF"), a 101 with a wrong Sec-WebSocket-Accept ("websocket: bad
// handshake"), frames written after the close ("websocket: close sent") and an unsupported
// send type (named as Go names it). BASE: `volley target`; EVIL: tests/ws/evil_server.py.
// Run by crates/cli/tests/k6_parity_protocols.rs under Volley and, when installed, k6.
import ws from "k6/ws";
import { WebSocket } from "k6/websockets";
import { check } from "k6";

const ECHO = __ENV.BASE.replace(/^http/, "ws") + "/ws/echo";
const EVIL = `ws://${__ENV.EVIL}`;

export const options = { vus: 1, iterations: 1 };

// k6/ws: connect, let `during(socket, events)` act on open, close after 2 s at the latest.
function session(url, during) {
  const events = [];
  const res = ws.connect(url, {}, (socket) => {
    socket.on("open", () => {
      events.push("open");
      if (during) during(socket, events);
    });
    socket.on("error", (e) => events.push("error: " + e.error()));
    socket.on("close", (code) => events.push("close " + code));
    socket.setTimeout(() => socket.close(), 2000);
  });
  return { res, events };
}

// k6/websockets: the events of one socket, handed to `done` when it has closed.
function socket(url, during, done) {
  const events = [];
  const s = new WebSocket(url);
  s.onopen = () => {
    events.push("open");
    if (during) during(s, events);
  };
  s.onerror = (e) => events.push("error: " + e.error);
  s.onclose = (e) => {
    events.push(`close ${e.code} ${e.reason}`);
    done(events);
  };
}

export default function () {
  // Not ws(s)://: the response carries the error; the script goes on.
  for (const url of [ECHO.replace(/^ws/, "http"), ECHO.replace(/^ws/, "ftp")]) {
    const { res, events } = session(url);
    check(res, {
      "k6/ws bad scheme: status 0": (r) => r.status === 0,
      "k6/ws bad scheme: k6's error": (r) => r.error.startsWith("malformed ws or wss URL"),
      "k6/ws bad scheme: no events": () => events.length === 0,
    });
  }

  // The peer goes away without a close frame.
  const eofWant = "error: websocket: close 1006 (abnormal closure): unexpected EOF";
  for (const url of [`${EVIL}/eof`, `${EVIL}/partial`]) {
    const { res, events } = session(url);
    check(events, {
      "k6/ws EOF: status 101": () => res.status === 101,
      "k6/ws EOF: k6's error, then close 1006": (e) => e.join("|") === ["open", eofWant, "close 1006"].join("|"),
    });
  }
  const dropped = session(ECHO, (s) => s.send("!drop"));
  check(dropped.events, {
    "k6/ws !drop: k6's error, then close 1006": (e) => e.join("|") === ["open", eofWant, "close 1006"].join("|"),
  });

  // A wrong Sec-WebSocket-Accept: k6/ws gives the 101 without an error, and no events.
  const bad = session(`${EVIL}/badaccept`);
  check(bad, {
    "k6/ws bad accept: status 101, no error": (x) => x.res.status === 101 && x.res.error === "",
    "k6/ws bad accept: no events": (x) => x.events.length === 0,
  });

  // Writing after close() is an error event, not an exception.
  const late = session(ECHO, (s, events) => {
    s.close();
    let threw = false;
    try {
      s.send("late");
      s.sendBinary(new Uint8Array([1]).buffer);
      s.ping();
    } catch (e) {
      threw = true;
    }
    events.push(threw ? "threw" : "no exception");
  });
  const closeSent = "error: websocket: close sent";
  check(late.events, {
    "k6/ws after close: close sent, three times": (e) =>
      e.join("|") === ["open", "close 1001", closeSent, closeSent, closeSent, "no exception"].join("|"),
  });

  // k6/websockets.
  socket(`${EVIL}/eof`, null, (events) => {
    check(events, {
      "k6/websockets EOF: k6's error and reason": (e) =>
        e.join("|") === ["open", eofWant, "close 1006 unexpected EOF"].join("|"),
    });
  });
  socket(`${EVIL}/badaccept`, null, (events) => {
    check(events, {
      "k6/websockets bad accept: bad handshake": (e) =>
        e.join("|") === ["error: websocket: bad handshake", "close undefined "].join("|"),
    });
  });
  socket(
    ECHO,
    (s, events) => {
      for (const v of [42, 1.5, true, null, {}]) {
        try {
          s.send(v);
          events.push("sent");
        } catch (e) {
          events.push(String(e.message || e).replace(/^GoError: /, ""));
        }
      }
      s.close();
    },
    (events) => {
      check(events, {
        "k6/websockets send: Go's type names": (e) =>
          e.slice(1, 6).join("|") ===
          [
            "unsupported send type int64",
            "unsupported send type float64",
            "unsupported send type bool",
            "unsupported send type <nil>",
            "unsupported send type map[string]interface {}",
          ].join("|"),
      });
    },
  );
}
