// k6/ws with several messages arriving at once (the target's `!burst N`): what Volley's
// message pump (crates/js/src/modules/ws.rs, wsPump) must keep as the shim's loop did.
// Counts are exact (crates/js/tests/websockets.rs). Passes under k6 v1.8.1 (three runs), though
// k6's loop picks at random between the next queued message and the close (a Go select), so
// the first check could fail there; in Volley it cannot.
import ws from "k6/ws";
import { check } from "k6";

const WS = __ENV.WS || __ENV.BASE.replace(/^http/, "ws") + "/ws/echo";

export const options = { vus: 1, iterations: 2 };

export default function () {
  // A handler that closes on the first of five queued messages sees no later one (and they
  // are not counted as received).
  const seen = [];
  ws.connect(WS, { tags: { part: "close" } }, function (socket) {
    socket.on("open", () => socket.send("!burst 5"));
    socket.on("message", (m) => {
      seen.push(m);
      socket.close();
    });
  });
  check(seen, { "close in a burst: no later message": (s) => s.length === 1 && s[0] === "burst 0" });

  // Each message in order to every handler (one added while a message is dispatched gets the
  // next one on, as k6, which ranges over the list as it was); replies sent from the handler come back in order; a timer set
  // from a handler fires while the socket waits (the pump must learn of it).
  const first = [];
  const second = [];
  const echoes = [];
  let timer = false;
  ws.connect(WS, { tags: { part: "order" } }, function (socket) {
    socket.on("open", () => {
      socket.send("!burst 20");
      // Backstop: a lost timer would otherwise leave the socket open for good.
      socket.setTimeout(() => socket.close(), 5000);
    });
    socket.on("message", (m) => {
      if (!m.startsWith("burst ")) {
        echoes.push(m);
        return;
      }
      first.push(m);
      socket.send("e" + m.slice(6));
      if (first.length === 1) {
        socket.on("message", (x) => second.push(x));
        socket.setTimeout(() => {
          timer = true;
        }, 50);
      }
      if (first.length === 20) {
        socket.setTimeout(() => socket.close(), 300);
      }
    });
  });
  const bursts = [];
  const replies = [];
  for (let i = 0; i < 20; i++) {
    bursts.push("burst " + i);
    replies.push("e" + i);
  }
  check(null, {
    "burst in order": () => first.join() === bursts.join(),
    "replies in order": () => echoes.join() === replies.join(),
    "late handler from the next message": () => second.join() === bursts.slice(1).concat(replies).join(),
    "timer from a handler fired": () => timer,
  });
}
