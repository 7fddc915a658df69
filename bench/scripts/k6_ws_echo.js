// WebSocket echo for bench/ws.sh: each VU opens one socket to /ws/echo and, for DUR_MS, then
// closes. Two paces, the same for every tool:
// - SEND_MS unset or 0 (max throughput, closed model): send INFLIGHT (default 1) 32-byte
//   messages at open and every echo straight back (INFLIGHT messages in flight per
//   connection), as `volley ws -c VUS --inflight INFLIGHT`;
// - SEND_MS > 0 (fixed rate): send the 32-byte message every SEND_MS ms whatever the echoes
//   do, as `volley ws -c VUS -q VUS*1000/SEND_MS`.
// The same script runs under k6 and `volley run`.
import ws from "k6/ws";

const URL = __ENV.WS || "ws://127.0.0.1:18390/ws/echo";
const DUR_MS = Number(__ENV.DUR_MS || 10000);
const SEND_MS = Number(__ENV.SEND_MS || 0);
const INFLIGHT = Number(__ENV.INFLIGHT || 1);
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
      if (SEND_MS > 0) {
        socket.setInterval(function () {
          socket.send(MSG);
        }, SEND_MS);
      } else {
        for (let i = 0; i < INFLIGHT; i++) {
          socket.send(MSG);
        }
      }
      socket.setTimeout(function () {
        socket.close();
      }, DUR_MS);
    });
    if (SEND_MS === 0) {
      socket.on("message", function (m) {
        socket.send(m);
      });
    }
  });
}
