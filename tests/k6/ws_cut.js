// k6/ws cut by the run's duration while bursts keep arriving (Volley's pump takes several
// messages per wait): every message counted in ws_msgs_received went to the handler, but
// at most the one being dispatched when the stop came (crates/js/tests/websockets.rs).
import ws from "k6/ws";
import { Counter } from "k6/metrics";

const WS = __ENV.WS || __ENV.BASE.replace(/^http/, "ws") + "/ws/echo";
const handled = new Counter("handled");

export const options = {
  scenarios: { cut: { executor: "constant-vus", vus: 2, duration: "1s", gracefulStop: "0s" } },
};

export default function () {
  ws.connect(WS, {}, function (socket) {
    socket.on("open", () => socket.send("!burst 200"));
    socket.on("message", (m) => {
      handled.add(1);
      if (m === "burst 199") socket.send("!burst 200");
    });
    // Only the run's end stops this socket (a backstop past it).
    socket.setTimeout(() => socket.close(), 10000);
  });
}
