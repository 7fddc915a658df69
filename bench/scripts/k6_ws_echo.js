// WebSocket echo ping-pong for bench/ws.sh: each VU opens one socket to /ws/echo, sends a
// 32-byte message and sends every echo straight back, for DUR_MS, then closes. The same
// script runs under k6 and `volley run`; `volley ws -c VUS` does the same load natively.
import ws from "k6/ws";

const URL = __ENV.WS || "ws://127.0.0.1:18390/ws/echo";
const DUR_MS = Number(__ENV.DUR_MS || 10000);
const MSG = "0123456789abcdef0123456789abcdef";

export const options = {
  scenarios: {
    echo: {
      executor: "per-vu-iterations",
      vus: Number(__ENV.VUS || 1000),
      iterations: 1,
      maxDuration: "10m",
    },
  },
};

export default function () {
  ws.connect(URL, {}, function (socket) {
    socket.on("open", function () {
      socket.send(MSG);
      socket.setTimeout(function () {
        socket.close();
      }, DUR_MS);
    });
    socket.on("message", function (m) {
      socket.send(m);
    });
  });
}
