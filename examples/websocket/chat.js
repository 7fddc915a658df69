// A WebSocket chat: every VU joins one room, says a few lines, and hears everyone else.
// Runs unmodified under k6 and Volley against `volley target` (its /ws/chat broadcasts each
// message to every member of the room, the sender included):
//
//   volley target --listen 127.0.0.1:8080 &
//   volley run examples/websocket/chat.js -e BASE=http://127.0.0.1:8080
//   k6 run examples/websocket/chat.js -e BASE=http://127.0.0.1:8080
//
// Each VU opens its socket, waits until everyone is likely in (JOIN_MS), sends LINES
// messages LINE_MS apart, then closes after LEAVE_MS. With VUS members who all joined before
// the first line, each VU hears LINES × (VUS - 1) lines from the others and its own LINES.
import ws from "k6/ws";
import { check } from "k6";
import { Counter } from "k6/metrics";

const BASE = (__ENV.BASE || "http://127.0.0.1:8080").replace(/^http/, "ws");
const ROOM = __ENV.ROOM || "k6-chat";
const VUS = Number(__ENV.VUS || 5);
const LINES = 3;
const JOIN_MS = 500;
const LINE_MS = 100;
const LEAVE_MS = 1500;

export const options = {
  scenarios: {
    chat: { executor: "per-vu-iterations", vus: VUS, iterations: 1, maxDuration: "30s" },
  },
  thresholds: {
    checks: ["rate==1.0"],
    chat_lines_heard: [`count==${LINES * VUS * (VUS - 1)}`],
  },
};

const heard = new Counter("chat_lines_heard");

export default function () {
  const me = `vu${__VU}`;
  let own = 0;
  let others = 0;
  let malformed = 0;
  const res = ws.connect(`${BASE}/ws/chat?room=${ROOM}`, {}, function (socket) {
    socket.on("open", function () {
      socket.setTimeout(function () {
        let n = 0;
        socket.setInterval(function () {
          if (n < LINES) {
            socket.send(JSON.stringify({ user: me, line: n, text: `hello ${n} from ${me}` }));
            n++;
          }
        }, LINE_MS);
      }, JOIN_MS);
      socket.setTimeout(function () {
        socket.close();
      }, JOIN_MS + LEAVE_MS);
    });
    socket.on("message", function (data) {
      let msg;
      try {
        msg = JSON.parse(data);
      } catch (e) {
        malformed++;
        return;
      }
      if (msg.user === me) {
        own++;
      } else {
        others++;
        heard.add(1);
      }
    });
  });
  check(res, { "joined the room (101)": (r) => r && r.status === 101 });
  check(own, { "my own lines came back": (n) => n === LINES });
  check(others, { "heard every other member": (n) => n === LINES * (VUS - 1) });
  check(malformed, { "every line was JSON": (n) => n === 0 });
}
