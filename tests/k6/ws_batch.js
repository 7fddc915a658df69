// k6/ws when one read brings several events: Volley's pump (crates/js/src/modules/ws.rs,
// wsPump) hands them all to the handlers before the VU waits again. What that must keep, as
// k6 does; counts are exact (crates/js/tests/websockets.rs).
import ws from "k6/ws";
import { check } from "k6";

const WS = __ENV.WS || __ENV.BASE.replace(/^http/, "ws") + "/ws/echo";

export const options = { vus: 1, iterations: 2 };

// A lost close or timer would otherwise leave a socket open for good.
function backstop(socket) {
  socket.setTimeout(() => socket.close(), 5000);
}

export default function () {
  // Close in the third handler of ten messages: the seven after it are neither delivered nor
  // counted.
  const seen = [];
  ws.connect(WS, { tags: { part: "close" } }, function (socket) {
    socket.on("open", () => {
      socket.send("!burst 10");
      backstop(socket);
    });
    socket.on("message", (m) => {
      seen.push(m);
      if (seen.length === 3) socket.close();
    });
  });
  check(seen, { "close mid-batch: no later message": (s) => s.join() === "burst 0,burst 1,burst 2" });

  // Each handler sends two messages; the third also sets a timeout: every reply comes back
  // in order and the timer fires.
  const replies = [];
  let timer = false;
  ws.connect(WS, { tags: { part: "sends" } }, function (socket) {
    const done = () => {
      if (timer && replies.length === 10) socket.close();
    };
    socket.on("open", () => {
      socket.send("!burst 5");
      backstop(socket);
    });
    socket.on("message", (m) => {
      if (!m.startsWith("burst ")) {
        replies.push(m);
        return done();
      }
      const i = m.slice(6);
      socket.send("r" + i + "a");
      socket.send("r" + i + "b");
      if (i === "2") {
        socket.setTimeout(() => {
          timer = true;
          done();
        }, 30);
      }
    });
  });
  check(null, {
    "sends from a batch in order": () => replies.join() === "r0a,r0b,r1a,r1b,r2a,r2b,r3a,r3b,r4a,r4b",
    "timeout set in a batch fired": () => timer,
  });

  // An echo chain that never pauses for 400 ms and an interval every 20 ms: the interval
  // fires between messages, which keep flowing between its ticks.
  const ticks = [];
  let echoes = 0;
  ws.connect(WS, { tags: { part: "interval" } }, function (socket) {
    socket.on("open", () => {
      socket.send("x");
      socket.setInterval(() => ticks.push(echoes), 20);
      socket.setTimeout(() => socket.close(), 400);
    });
    socket.on("message", (m) => {
      echoes++;
      socket.send(m);
    });
  });
  check(null, {
    "interval fired between messages": () => ticks.length >= 3 && ticks[ticks.length - 1] > ticks[0] && ticks[0] > 0,
  });

  // Text and binary messages in one read reach their handlers in the order they came.
  const order = [];
  ws.connect(WS, { tags: { part: "mixed" } }, function (socket) {
    socket.on("open", () => {
      for (const m of ["a", "!binary 3", "b", "!binary 2", "c"]) socket.send(m);
      backstop(socket);
    });
    const got = (e) => {
      order.push(e);
      if (order.length === 5) socket.close();
    };
    socket.on("message", (m) => got("t:" + m));
    socket.on("binaryMessage", (b) => got("b:" + b.byteLength));
  });
  check(order, { "text and binary in order": (o) => o.join() === "t:a,b:3,t:b,b:2,t:c" });
}
