// Many VUs with WebSockets at once, half on each API: every message and session is counted
// exactly (crates/js/tests/websockets.rs).
import ws from "k6/ws";
import { WebSocket } from "k6/websockets";
import exec from "k6/execution";

const WS = __ENV.WS || __ENV.BASE.replace(/^http/, "ws") + "/ws/echo";
const N = 10;

export const options = { vus: 40, iterations: 80 };

export default function () {
  if (exec.scenario.iterationInTest % 2 === 0) {
    ws.connect(WS, { tags: { api: "ws" } }, function (socket) {
      let got = 0;
      socket.on("open", () => {
        for (let i = 0; i < N; i++) socket.send("m" + i);
      });
      socket.on("message", () => {
        if (++got === N) socket.close();
      });
    });
    return;
  }
  const s = new WebSocket(WS, null, { tags: { api: "websockets" } });
  let got = 0;
  s.onopen = () => {
    for (let i = 0; i < N; i++) s.send("m" + i);
  };
  s.onmessage = () => {
    if (++got === N) s.close();
  };
}
