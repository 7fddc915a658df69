// Ctrl-C while each VU waits or works in a different way: every iteration cut counts as
// interrupted (k6: "0 complete, 1 interrupted"), never as complete nor as an error, and the
// run ends within the request grace (2 s), not after the 30 s gracefulStop.
import { check, group, sleep } from "k6";
import http from "k6/http";

const one = (exec) => ({
  executor: "per-vu-iterations",
  vus: 1,
  iterations: 1,
  maxDuration: "60s",
  exec,
});

export const options = {
  scenarios: {
    sleeping: one("sleeping"),
    request: one("request"),
    // Last, so that the others are waiting before it holds its worker thread.
    busy: { ...one("busy"), startTime: "1s" },
    timers: one("timers"),
    grouped: one("grouped"),
    checking: one("checking"),
    caught: one("caught"),
    async_request: one("asyncRequest"),
  },
};

export function sleeping() {
  sleep(30);
}

export function request() {
  http.get(`${__ENV.BASE}/delay/30000`);
}

export function busy() {
  for (;;) {}
}

export async function timers() {
  await new Promise((r) => setTimeout(r, 30000));
}

export function grouped() {
  group("g", () => sleep(30));
}

export function checking() {
  check(null, { slow: () => { sleep(30); return true; } });
}

// A script that swallows the interruption and keeps busy is still cut.
export function caught() {
  try {
    sleep(30);
  } catch (e) {
    for (;;) {}
  }
}

export async function asyncRequest() {
  await http.asyncRequest("GET", `${__ENV.BASE}/delay/30000`);
}
