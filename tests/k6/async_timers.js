// k6's timers (globals and k6/timers) and async functions: callbacks run in deadline order
// (ties in the order they were set), after the promise jobs; clearTimeout/clearInterval
// stop them; an iteration is over only when its timers are done. Top-level await and timers
// work in init code, an async setup()'s value is the setup data.
import { check } from "k6";
import { Counter } from "k6/metrics";
import * as timers from "k6/timers";
import timersDefault from "k6/timers";

const done = new Counter("timers_done");
const ticks = new Counter("interval_ticks");
const cleared = new Counter("cleared_fired");

// Top-level await on a timer (init code runs on the event loop, as in k6).
const initValue = await new Promise((resolve) => setTimeout(() => resolve(42), 5));

export const options = { vus: 1, iterations: 2 };

export async function setup() {
  await new Promise((resolve) => setTimeout(resolve, 5));
  return { token: "from async setup" };
}

export default async function (data) {
  const order = [];
  setTimeout(() => order.push("50"), 50);
  setTimeout(() => order.push("0a"), 0);
  timers.setTimeout((a, b) => order.push("10" + a + b), 10, "x", "y");
  setTimeout(() => order.push("0b"));
  const gone = setTimeout(() => cleared.add(1), 5);
  clearTimeout(gone);
  const goneToo = timersDefault.setInterval(() => cleared.add(1), 1);
  timersDefault.clearInterval(goneToo);
  Promise.resolve().then(() => order.push("micro"));
  order.push("sync");

  let n = 0;
  const iv = setInterval(() => {
    n++;
    ticks.add(1);
    if (n === 3) clearInterval(iv);
  }, 5);

  const t0 = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 30));
  const waited = Date.now() - t0;

  // Set last and due last: everything above has run by then, after this function returned.
  setTimeout(() => {
    check(order, { "timer order": (o) => o.join(",") === "sync,micro,0a,0b,10xy,50" });
    check(n, { "interval fired 3 times": (x) => x === 3 });
    done.add(1);
  }, 60);

  check(waited, { "await setTimeout waits": (ms) => ms >= 29 });
  check(initValue, { "top-level await in init": (v) => v === 42 });
  check(data, { "async setup data": (d) => d !== undefined && d.token === "from async setup" });
  check(timers, {
    "k6/timers exports the globals": (t) =>
      t.setTimeout === setTimeout &&
      t.clearTimeout === clearTimeout &&
      t.setInterval === setInterval &&
      t.clearInterval === clearInterval &&
      timersDefault.setTimeout === setTimeout,
  });
  check(null, {
    "a callback must be a function": () => {
      try {
        setTimeout("1 + 1", 1);
        return false;
      } catch (e) {
        return e instanceof TypeError && e.message === "setTimeout's callback isn't a callable function";
      }
    },
  });
}

// An async handleSummary may wait on timers too.
export async function handleSummary(data) {
  await new Promise((resolve) => setTimeout(resolve, 5));
  return { stdout: `ASYNC SUMMARY ${data.metrics.timers_done.values.count}\n` };
}
